"""Agreement statistics (flows/report/agreement.py) against the libraries that define them: scikit-learn's
weighted kappa, the krippendorff package's alpha, scipy's Spearman; and their edges."""

from __future__ import annotations

import random
from pathlib import Path

import krippendorff
import pytest
from scipy.stats import spearmanr
from sklearn.metrics import cohen_kappa_score

from evalduck.flows.report.agreement import agreement, snap


def _pairs(n: int, seed: int, noise: float) -> tuple[list[float], list[float]]:
    rng = random.Random(seed)
    human = [rng.choice((0.0, 0.25, 0.5, 0.75, 1.0)) for _ in range(n)]
    judge = [min(1.0, max(0.0, h + rng.gauss(0, noise))) for h in human]
    return judge, human


@pytest.mark.parametrize(("seed", "noise"), [(1, 0.05), (2, 0.3), (3, 1.0)])
def test_each_statistic_matches_its_library(seed: int, noise: float) -> None:
    judge, human = _pairs(120, seed, noise)
    got = agreement(judge, human)
    grid = got.grid
    assert grid == [0.0, 0.25, 0.5, 0.75, 1.0]
    assert got.kappa == pytest.approx(cohen_kappa_score(snap(judge, grid), snap(human, grid), weights="quadratic",
                                                        labels=list(range(len(grid)))))
    assert got.alpha == pytest.approx(krippendorff.alpha(reliability_data=[judge, human],
                                                         level_of_measurement="interval"))
    assert got.spearman == pytest.approx(spearmanr(judge, human).statistic)
    assert got.mae == pytest.approx(sum(abs(j - h) for j, h in zip(judge, human, strict=True)) / 120)
    assert got.bias == pytest.approx(sum(judge) / 120 - sum(human) / 120)
    for name in ("kappa", "alpha", "spearman", "mae", "bias"):
        low, high = getattr(got, f"{name}_ci")
        assert low <= getattr(got, name) <= high, name
    assert sum(map(sum, got.confusion)) == 120


def test_perfect_chance_and_a_known_confusion_matrix() -> None:
    perfect = agreement([0.0, 1.0, 1.0, 0.0], [0.0, 1.0, 1.0, 0.0])
    assert (perfect.kappa, perfect.alpha, perfect.spearman, perfect.mae) == (1.0, 1.0, 1.0, 0.0)
    assert perfect.confusion == [[2, 0], [0, 2]]
    # A judge that answers yes to everything: its kappa is 0 whatever the labels (it has one category).
    always = agreement([1.0] * 6, [0.0, 1.0, 0.0, 1.0, 1.0, 0.0])
    assert always.kappa == pytest.approx(cohen_kappa_score([1] * 6, [0, 1, 0, 1, 1, 0], weights="quadratic"))
    assert always.confusion == [[0, 3], [0, 3]] and always.bias == 0.5
    # A judge that reads "yes" the wrong way round: kappa -1, as issue 26's small judge did on hallucination.
    inverted = agreement([1.0, 1.0, 0.0, 0.0], [0.0, 0.0, 1.0, 1.0])
    assert inverted.kappa == pytest.approx(-1.0) and inverted.kappa_ci is not None and inverted.kappa_ci[1] <= 0


def test_ties_a_single_category_and_no_pairs() -> None:
    one = agreement([1.0, 1.0, 1.0], [1.0, 1.0, 1.0])
    assert one.kappa is None and one.alpha is None and one.spearman is None and one.kappa_ci is None
    assert one.mae == 0.0 and one.confusion == [[3]]
    tied = agreement([0.5, 0.5, 1.0, 0.0], [0.0, 0.5, 1.0, 0.5])
    assert tied.spearman == pytest.approx(spearmanr([0.5, 0.5, 1.0, 0.0], [0.0, 0.5, 1.0, 0.5]).statistic)
    with pytest.raises(ValueError, match="nothing to measure agreement on"):
        agreement([], [])
    with pytest.raises(ValueError, match="3 judge scores for 2 labels"):
        agreement([1.0, 0.0, 1.0], [1.0, 0.0])



def test_the_prediction_powered_mean_corrects_the_judge_by_its_error_on_the_labels() -> None:
    from evalduck.flows.report.agreement import human_scale_mean

    scores = [1.0, 1.0, 0.5, 1.0, 0.0, 1.0, 0.5, 1.0]
    labelled = [(1.0, 0.5), (1.0, 1.0), (0.5, 0.0)]  # the judge scores 1/3 high on average there
    got = human_scale_mean(scores, labelled)
    assert got is not None and got.judge_mean == pytest.approx(0.75) and got.mean == pytest.approx(0.75 - 1 / 3)
    low, high = got.ci
    assert low < got.mean < high and (got.n_cells, got.n_labelled) == (8, 3)
    assert human_scale_mean(scores, labelled[:1]) is None  # one label: no variance of the error, no interval


def test_category_labels_become_the_scores_they_are_given(tmp_path: Path) -> None:
    from evalduck.flows.inputs.labels import load_labels

    path = tmp_path / "verdicts.csv"
    path.write_text("id,label\na,yes\nb,No\nc,0.5\n")
    labels = load_labels(path)
    assert not labels.numeric
    scored = labels.scored({"yes": 1.0, "no": 0.0})
    assert scored.numeric and [lab.value for lab in scored.labels] == [1.0, 0.0, 0.5]
