"""One run around the engine: prepare (run/prepare.py) -> execute (engine/) -> finish (run/finish.py), with
what a run changes in its process (scope.py), its progress sink, and what ``run_evals`` shows (console.py, watch.py)."""
