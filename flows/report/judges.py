"""A judge scorer whose judge changed between two runs (its model or prompt fingerprint): how well the two judges
agree on the cells whose outputs are the same in both, said before the delta by `evalduck compare` and the HTML
report (a delta between two judges that disagree is the judges' as much as the candidates')."""

from __future__ import annotations

from evalduck.flows.report.agreement import agreement
from evalduck.flows.store import Store
from evalduck.flows.store.calibrations import run_judges

__all__ = ("changed_judges",)

_SAME_OUTPUTS = """
SELECT a.score AS score_a, b.score AS score_b FROM scores AS a
JOIN scores AS b ON b.run_id = ? AND b.scorer_id = a.scorer_id AND b.item_id = a.item_id
JOIN items AS ia ON ia.run_id = a.run_id AND ia.item_id = a.item_id
JOIN items AS ib ON ib.run_id = b.run_id AND ib.item_id = b.item_id
WHERE a.run_id = ? AND a.scorer_id = ? AND a.status = 'scored' AND b.status = 'scored'
  AND ia.output IS NOT DISTINCT FROM ib.output
"""


def changed_judges(store: Store, a: str, b: str, compared: set[str]) -> list[str]:
    """Per judge scorer whose judge model or prompt differs between the runs: how well the two judges agree on
    the cells whose outputs are the same in both (kappa and alpha with their 95% intervals), so that a delta
    is read as the judge's as much as the candidate's when they disagree."""
    judges_a = run_judges(store.run_record(a).config)
    judges_b = run_judges(store.run_record(b).config)
    lines = []
    for scorer in sorted(compared & judges_a.keys() & judges_b.keys()):
        ka, kb = judges_a[scorer], judges_b[scorer]
        if (ka["judge_model"], ka["prompt_fingerprint"]) == (kb["judge_model"], kb["prompt_fingerprint"]):
            continue
        pairs = store.sql(_SAME_OUTPUTS, [b, a, scorer]).rows
        what = (f"{scorer}: the judge changed ({ka['judge_model']} prompt {ka['prompt_fingerprint']} in A, "
                f"{kb['judge_model']} prompt {kb['prompt_fingerprint']} in B)")
        if len(pairs) < 2:
            lines.append(f"{what}; fewer than 2 cells with the same output in both runs: their agreement is unknown")
            continue
        agreed = agreement([p[1] for p in pairs], [p[0] for p in pairs], grid=[i / 10 for i in range(11)])
        lines.append(f"{what}; on the {agreed.n} cells with the same output they agree at kappa "
                     f"{_num(agreed.kappa)} {_ci(agreed.kappa_ci)}, alpha {_num(agreed.alpha)} {_ci(agreed.alpha_ci)}")
    return lines


def _num(value: float | None) -> str:
    return "–" if value is None else f"{value:.3f}"


def _ci(ci: tuple[float, float] | None) -> str:
    return f"[{_num(ci[0])}, {_num(ci[1])}]" if ci else "[no interval]"
