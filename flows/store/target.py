"""Where the results live, from the one `--db` / `EVALDUCK_DB` value: a DuckDB file, or a shared DuckLake.

`ducklake:postgres://USER@HOST:PORT/DBNAME?data_path=/shared/evals/` is the shared store: a DuckLake whose
catalog is that PostgreSQL database (libpq URI or keywords, e.g. `ducklake:postgres:dbname=evals host=db`)
and whose data files (Parquet) go under `data_path` (a folder every machine mounts at the same path, or
an object-store URL). `data_path` is only needed by the first process that creates the lake: the catalog
remembers it. Anything else is a file path, as before.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from evalduck.flows.settings import DUCKLAKE_PREFIX

__all__ = ("StoreTarget", "parse_target", "DUCKLAKE_PREFIX")

_PASSWORD = re.compile(r"(://[^:/@\s]+:)[^@\s]+@|(password\s*=\s*)\S+", re.IGNORECASE)


@dataclass(frozen=True)
class StoreTarget:
    """A results store: `path` for a DuckDB file, else `catalog` (what DuckLake attaches) and `data_path`."""

    path: Path | None = None
    catalog: str | None = None
    data_path: str | None = None

    @property
    def shared(self) -> bool:
        return self.catalog is not None

    @property
    def label(self) -> str:
        """How messages name the store: the file, or the lake's URL with any password masked."""
        if self.path is not None:
            return str(self.path)
        return DUCKLAKE_PREFIX + _PASSWORD.sub(lambda m: (m.group(1) or m.group(2)) + "***" + ("@" if m.group(1) else ""),
                                                self.catalog or "")


def parse_target(raw: str | Path) -> StoreTarget:
    """A `--db` value as a store target; a `ducklake:` value must name a PostgreSQL catalog."""
    text = str(raw)
    if not text.startswith(DUCKLAKE_PREFIX):
        return StoreTarget(path=Path(raw).expanduser().resolve())
    catalog = text[len(DUCKLAKE_PREFIX):]
    if not catalog.startswith("postgres:"):
        raise ValueError(
            f"{text}: a shared store is `ducklake:postgres://USER@HOST:PORT/DBNAME?data_path=FOLDER` (a DuckLake with "
            "a PostgreSQL catalog); other catalogs are not supported"
        )
    conninfo = catalog[len("postgres:"):]
    if conninfo.startswith("//"):  # ducklake:postgres://USER@HOST/DB: a libpq URI
        conninfo = "postgresql:" + conninfo
    data_path: str | None = None
    if "://" in conninfo:
        parts = urlsplit(conninfo)
        query = parse_qsl(parts.query, keep_blank_values=True)
        data_path = next((value for key, value in query if key == "data_path"), None)
        rest = urlencode([(key, value) for key, value in query if key != "data_path"])
        conninfo = urlunsplit(parts._replace(query=rest))
    if not conninfo.strip():
        raise ValueError(f"{text}: name the PostgreSQL database after `ducklake:postgres:`")
    if data_path is not None and not data_path.strip():
        raise ValueError(f"{text}: data_path is empty; give the folder (or object-store URL) for the Parquet files")
    return StoreTarget(catalog="postgres:" + conninfo, data_path=data_path)
