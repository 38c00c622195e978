"""Which way each scorer's scores are better: the one place the report, the artifacts and `show` read it.

Direction is stored per run and scorer in the table `run_scorers(run_id, scorer_id, higher_is_better)`
(schema v4, issue 13). A results file without that table, or a scorer it has no row for, is higher-is-better:
every scorer before issue 13 was.
"""

from __future__ import annotations

from evalduck.flows.report.gate import direction_label
from evalduck.flows.report.html.reader import Records

__all__ = ("scorer_directions", "direction_label")


def scorer_directions(records: Records, run_id: str) -> dict[str, bool]:
    """Each scorer id -> higher_is_better for the run; scorers absent from the mapping are higher-is-better."""
    present = records("SELECT count(*) AS n FROM duckdb_tables() WHERE database_name = current_database() "
                      "AND table_name = 'run_scorers'", [])[0]["n"]
    if not present:
        return {}
    rows = records("SELECT scorer_id, higher_is_better FROM run_scorers WHERE run_id = ?", [run_id])
    return {str(r["scorer_id"]): bool(r["higher_is_better"]) for r in rows if r["higher_is_better"] is not None}
