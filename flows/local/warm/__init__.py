"""The warm starter: one process per project folder that has already imported Prefect, evalduck's flows and
litellm, and forks one child per `evalduck run` (and per flow run of the folder's process worker), so a run
starts in a fraction of a second instead of paying Python's imports each time.

- ``wire``: the unix socket, its messages and the checks both ends agree on (standard library only);
- ``client``: the thin side, used by the `evalduck` entry point and the worker's flow-run command;
- ``starter``: the preloaded process and its fork loop;
- ``child``: what a forked child does to become the caller's process (environment, cwd, fds, Prefect's
  settings) and the judge children it asks the starter for.

Nothing here is imported by the Python API (`run_evals`).
"""
