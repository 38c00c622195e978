"""Judge requests in a child process: the run's side (process.py) and the child's (child.py)."""
