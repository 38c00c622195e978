"""ReportData and its charts into one self-contained HTML page: the template, stylesheet and script are package
data (templates/), inlined; the page's Content-Security-Policy lets it load nothing at all."""

from __future__ import annotations

import base64
import gzip
import json
import re
from datetime import datetime
from functools import cache
from importlib import resources
from typing import Any

import jinja2
import markupsafe

from evalduck.flows.report.html.charts import deltas_svg, histograms_svg, trend_svg
from evalduck.flows.report.html.data import ReportData
from evalduck.flows.report.html.direction import direction_label
from evalduck.flows.report.text import visible, visible_rule

__all__ = ("render_html",)


@cache
def _environment() -> jinja2.Environment:
    env = jinja2.Environment(loader=jinja2.PackageLoader("evalduck.flows.report.html", "templates"), finalize=_shown,
                             autoescape=True, undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True)
    env.globals.update(when=_when, seconds=_seconds, usd=_usd, num=_num, signed=_signed, interval=_interval,
                       direction=direction_label, short_hashes=_short_hashes)
    return env


def _shown(value: Any) -> Any:
    r"""Every text the template writes, with control and bidi characters written as escapes, as the CLI shows
    them (flows/report/text.py): an id `rtl\u202egnp.exe` must not read `exe.png`. Markup (`| safe`: the page's own
    style, script, data and charts) is the page's, not a user's, and passes as is."""
    return visible(value) if isinstance(value, str) and not isinstance(value, markupsafe.Markup) else value


@cache
def _asset(name: str) -> str:
    return (resources.files("evalduck.flows.report.html") / "templates" / name).read_text(encoding="utf-8")


def _when(value: datetime | None) -> str:
    return "–" if value is None else value.astimezone().strftime("%Y-%m-%d %H:%M:%S %Z")


def _seconds(value: float | None) -> str:
    if value is None:
        return "–"
    minutes, seconds = divmod(value, 60)
    return f"{int(minutes)} min {seconds:.1f} s" if minutes else f"{seconds:.1f} s"


def _usd(value: float | None) -> str:
    return "–" if value is None else f"${value:.4f}"


def _num(value: float | None) -> str:
    return "–" if value is None else f"{value:.3f}"


def _signed(value: float | None) -> str:
    return "–" if value is None else f"{value:+.3f}"


def _interval(low: float | None, high: float | None, signed: bool = False) -> str:
    if low is None or high is None:
        return "–"
    f = _signed if signed else _num
    return f"[{f(low)}, {f(high)}]"


_HASH = re.compile(r"\b([0-9a-f]{12})[0-9a-f]{52}\b")


def _short_hashes(text: str) -> str:
    """The store's notes with each 64-digit dataset hash cut to 12 digits: two full hashes per scorer row made
    the comparison table's other columns a few letters wide."""
    return _HASH.sub(r"\1…", text)


def _script_json(value: dict[str, Any]) -> str:
    """JSON safe inside a <script> element: no `<` can close it or open a comment."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str).replace("<", "\\u003c")


def _packed(text: str) -> str:
    """The item table's JSON gzipped and in base64 (the page unpacks it with DecompressionStream): about a
    tenth of its size (docs/benchmarks-history.md, 'HTML report')."""
    return base64.b64encode(gzip.compress(text.encode("utf-8"), compresslevel=6, mtime=0)).decode("ascii")


def _moved_verdict(c: Any) -> str:
    delta = c.row.get("mean_delta")
    if delta is None or abs(delta) <= 1e-9:
        return "no change"
    return "better" if (delta > 0) == c.higher_is_better else "worse"


def render_html(data: ReportData) -> str:
    """The report page: the charts drawn now as SVG, the template filled, nothing fetched when it opens."""
    charts = {
        "histograms": histograms_svg({s.stats.scorer_id: s.scores for s in data.scorers}),
        "trend": trend_svg(data.trend, {s.stats.scorer_id: f"{s.stats.scorer_id} ({direction_label(False)})"
                                        for s in data.scorers if not s.higher_is_better}),
        "deltas": deltas_svg([{"scorer": c.row["scorer_id"], "delta": c.row.get("mean_delta"),
                               "low": c.row.get("ci_low"), "high": c.row.get("ci_high"), "better": _moved_verdict(c)}
                              for c in data.comparison]),
    }
    by_cell = {(t.run_id, t.scorer_id): t for t in data.trend}
    payload = {
        "run": data.header.run.run_id,
        "scorers": data.scorer_ids,
        "measures": {s.stats.scorer_id: s.measures for s in data.scorers},
        "visible": visible_rule(),
        "moved": [{"scorer": c.row["scorer_id"], "direction": direction_label(c.higher_is_better),
                   "items": [m.model_dump(mode="json") for m in c.moved]} for c in data.comparison],
    }
    return _environment().get_template("report.html.j2").render(
        h=data.header, scorers=data.scorers, trend_runs=data.trend_runs,
        trend_scorers=sorted({t.scorer_id for t in data.trend}),
        trend_cell=lambda run_id, scorer: by_cell.get((run_id, scorer)),
        against=data.against, comparison=data.comparison, skipped=data.skipped, charts=charts, generated_at=data.generated_at,
        item_scorers=data.scorer_ids, noise=data.noise, judge_changes=data.judge_changes,
        css=_asset("report.css"), js=_asset("report.js"), data_json=_script_json(payload), items_packed=_packed(data.items_json),
    )
