"""The sweep's summary artifact (flows/report/sweep_artifact.py): made inside a flow run on the session's Prefect
test harness and read back through the Prefect client: its key, the leaderboard's Markdown, the report's path,
a `<script>` label as text; and nothing made outside a flow run."""

from __future__ import annotations

from pathlib import Path
from uuid import UUID

import sweep_builder as sb
from prefect import flow

from evalduck.flows.report.leaderboard_text import delta_text, mean_text
from evalduck.flows.report.sweep_artifact import publish_sweep_summary, write_sweep_report_logged
from evalduck.flows.report.sweep_board import sweep_rows
from evalduck.flows.store import Store


@flow(name="sweep-artifact-test", persist_result=False)
def _publish(db: str, sweep_id: str) -> tuple[str | None, str | None]:
    store = Store(db)
    report = write_sweep_report_logged(store, sweep_id)
    made = publish_sweep_summary(store, sweep_id, report)
    return (str(made) if made else None), (str(report) if report else None)


def test_the_summary_artifact_holds_the_leaderboard_and_the_report_path(prefect_harness: None, tmp_path: Path) -> None:
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import ArtifactFilter, ArtifactFilterKey

    db = tmp_path / "evals.duckdb"
    store = sb.build(db)
    made, report = _publish(str(db), sb.SWEEP_ID)
    assert made is not None and report is not None and Path(report).is_file()
    with get_client(sync_client=True) as client:
        found = client.read_artifacts(artifact_filter=ArtifactFilter(key=ArtifactFilterKey(any_=["evalduck-tone-sweep-sweep"])))
    (artifact,) = [a for a in found if a.id == UUID(made)]
    markdown = str(artifact.data)
    assert artifact.type == "markdown" and artifact.flow_run_id is not None
    assert f"HTML report: `{Path(report).resolve()}`" in markdown and "file://" not in markdown
    assert f"evalduck --db {db.resolve()} leaderboard {sb.SWEEP_ID[:8]} --format html" in markdown
    assert "<script>" not in markdown and "&lt;script&gt;" in markdown
    for row in sweep_rows(store, sb.SWEEP_ID, sb.BASELINE):
        assert f"| {mean_text(row)} | {delta_text(row)} |" in markdown
    assert "### tone" in markdown and "### halluc" in markdown


def test_outside_a_flow_run_no_artifact_is_made(tmp_path: Path) -> None:
    store = sb.build(tmp_path / "evals.duckdb")
    assert publish_sweep_summary(store, sb.SWEEP_ID) is None
