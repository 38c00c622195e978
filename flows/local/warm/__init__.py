"""The warm starter: one process per project folder that has already imported Prefect, evalduck's flows and
litellm, and forks one child per `evalduck run` (and per flow run of the folder's process worker), so a run
starts in a fraction of a second instead of paying Python's imports each time.

- ``wire``: the unix socket and whose it is, its messages, the starter's status file (standard library only);
- ``caller``: what of a caller a forked child must match or take on, and the starter's scrubbed environment;
- ``client``: the thin side, used by the `evalduck` entry point and the worker's flow-run command;
- ``starter``: the preloaded process (``preload``: what it imports) and its fork loop (``loop``, ``children``);
- ``child``: what a forked child does to become the caller's process (environment, cwd, fds, Prefect's
  settings) and the judge children it asks the starter for.

Nothing here is imported by the Python API (`run_evals`).
"""
