"""The processes evalduck starts on this machine for a project folder: its state folder (folder.py), the
folder's Prefect server (server.py, install/), the idle watcher (idle.py) and the warm starter (warm/)."""
