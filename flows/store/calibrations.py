"""The `calibrations` table: a judge's measured agreement with human labels, one row per (scorer id, scorer
version, judge model, prompt fingerprint), the newest measurement replacing the one before; and the lookup
the gate makes for a run's judge scorers."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import duckdb

from evalduck.flows.store.store import Store
from evalduck.flows.store.upsert import utcnow

__all__ = ("CALIBRATION_KEY", "save_calibration", "find_calibration", "others_for", "run_judges")

CALIBRATION_KEY = ("scorer_id", "scorer_version", "judge_model", "prompt_fingerprint")
_STATS = ("kappa", "alpha", "spearman", "mae", "bias")


def save_calibration(store: Store, key: Mapping[str, str], stats: Mapping[str, Any], *, labels: str | None,
                     run_id: str | None) -> None:
    """Store one measurement (``Agreement.model_dump()``) under ``key`` (CALIBRATION_KEY's fields), replacing
    an earlier one of the same key, in one transaction."""
    row: dict[str, Any] = {**{k: key[k] for k in CALIBRATION_KEY}, "labels": labels, "run_id": run_id,
                           "n": stats["n"], "grid": json.dumps(stats["grid"]),
                           "confusion": json.dumps(stats["confusion"]), "created_at": utcnow()}
    for name in _STATS:
        ci = stats.get(f"{name}_ci")
        row.update({name: stats.get(name), f"{name}_low": ci[0] if ci else None, f"{name}_high": ci[1] if ci else None})
    match = " AND ".join(f"{k} = ?" for k in CALIBRATION_KEY)

    def body(con: duckdb.DuckDBPyConnection) -> None:
        con.execute(f"DELETE FROM calibrations WHERE {match}", [key[k] for k in CALIBRATION_KEY])
        con.execute(f"INSERT INTO calibrations ({', '.join(row)}) VALUES ({', '.join('?' * len(row))})", list(row.values()))

    store.write(body)


def find_calibration(store: Store, key: Mapping[str, str | None]) -> dict[str, Any] | None:
    """The calibration stored for exactly this key, or None."""
    if any(key.get(k) is None for k in CALIBRATION_KEY):
        return None
    found = store.sql(f"SELECT * FROM calibrations WHERE {' AND '.join(f'{k} = ?' for k in CALIBRATION_KEY)}",
                      [key[k] for k in CALIBRATION_KEY]).records()
    return found[0] if found else None


def others_for(store: Store, scorer_id: str) -> list[dict[str, Any]]:
    """The calibrations stored for a scorer under any key, newest first: what a refusal names."""
    return store.sql("SELECT * FROM calibrations WHERE scorer_id = ? ORDER BY created_at DESC",
                     [scorer_id]).records()


def run_judges(config: Any) -> dict[str, dict[str, str | None]]:
    """A run's judge scorers as its config recorded them at its start: scorer id -> its calibration key."""
    ran = (config or {}).get("run_scorers") or [] if isinstance(config, Mapping) else []
    return {s["id"]: {"scorer_id": s["id"], "scorer_version": s.get("version"), "judge_model": s.get("judge_model"),
                      "prompt_fingerprint": s.get("prompt_fingerprint")}
            for s in ran if isinstance(s, Mapping) and "prompt_fingerprint" in s}
