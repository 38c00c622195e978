"""Loading and validating datasets (JSONL, JSON, CSV, Parquet, or rows in memory) into DatasetItems.

The whole dataset is validated before a run starts, so a bad row fails the run before any target or judge
call is made, with an error that names the file and line (or the row's position in memory). errors.py (what
can be wrong), rows.py (row validation, DatasetItem, Dataset), files.py (reading each file format).
"""

from __future__ import annotations

from evalduck.flows.inputs.datasets.errors import DatasetError, DatasetPathError
from evalduck.flows.inputs.datasets.files import SUFFIXES, load_dataset, located_rows
from evalduck.flows.inputs.datasets.rows import Dataset, DatasetItem, dataset_from_rows

__all__ = (
    "DatasetError", "DatasetPathError", "DatasetItem", "Dataset", "load_dataset", "dataset_from_rows", "SUFFIXES",
    "located_rows",
)
