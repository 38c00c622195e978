"""What a run is given, loaded and checked: datasets, targets and scorer specs (no Prefect)."""
