"""Content similarity (SCORERS.md 2.2) equals Mastra's: string-similarity's compareTwoStrings, in
JavaScript's terms (UTF-16 code units, JavaScript's whitespace)."""

from __future__ import annotations

import json
import random
import shutil
import subprocess
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evalduck.scorers import ConfigError, ScorerInputError, create_content_similarity_scorer
from evalduck.scorers.prebuilt._js_text import JS_WHITESPACE
from evalduck.scorers.prebuilt.content_similarity import dice

# Whitespace JavaScript has and Python lacks (U+FEFF), Python has and JavaScript lacks (U+001C-U+001F,
# U+0085), letters, a character outside the BMP (two code units) and a lone surrogate.
ALPHABET = list(JS_WHITESPACE) + ["\x1c", "\x1f", "\x85"] + list("abAB.é東😀") + ["\ud83d"]


def reference_dice(first: str, second: str) -> float:
    """Mastra's compareTwoStrings written from SCORERS.md 2.2, step by step, on lists of code units."""
    def units(text: str) -> list[int]:
        data = text.encode("utf-16-le", "surrogatepass")
        return [data[i] | data[i + 1] << 8 for i in range(0, len(data), 2)]

    a = [u for u in units(first) if chr(u) not in JS_WHITESPACE]
    b = [u for u in units(second) if chr(u) not in JS_WHITESPACE]
    if a == b:
        return 1.0
    if len(a) < 2 or len(b) < 2:
        return 0.0
    bag: dict[tuple[int, int], int] = {}
    for i in range(len(a) - 1):
        bag[(a[i], a[i + 1])] = bag.get((a[i], a[i + 1]), 0) + 1
    matches = 0
    for i in range(len(b) - 1):
        if bag.get((b[i], b[i + 1]), 0) > 0:
            bag[(b[i], b[i + 1])] -= 1
            matches += 1
    return 2 * matches / (len(a) + len(b) - 2)


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=ALPHABET, max_size=12), st.text(alphabet=ALPHABET, max_size=12))
def test_equals_the_algorithm_on_random_pairs(first: str, second: str) -> None:
    assert dice(first, second) == reference_dice(first, second)


# Mastra's scorer as it runs in JavaScript: toLowerCase, /\s+/g -> ' ' and trim, then compareTwoStrings.
MASTRA_JS = r"""
const compare = (a, b) => {
  a = a.replace(/\s+/g, ''); b = b.replace(/\s+/g, '');
  if (a === b) return 1;
  if (a.length < 2 || b.length < 2) return 0;
  const bag = new Map();
  for (let i = 0; i < a.length - 1; i++) { const g = a.substring(i, i + 2); bag.set(g, (bag.get(g) || 0) + 1); }
  let matches = 0;
  for (let i = 0; i < b.length - 1; i++) {
    const g = b.substring(i, i + 2), n = bag.get(g) || 0;
    if (n > 0) { bag.set(g, n - 1); matches++; }
  }
  return (2.0 * matches) / (a.length + b.length - 2);
};
const prep = (t) => t.toLowerCase().replace(/\s+/g, ' ').trim();
const pairs = JSON.parse(require('fs').readFileSync(0, 'utf8'));
console.log(JSON.stringify(pairs.map(([x, y]) => [prep(x), prep(y), compare(prep(x), prep(y))])));
"""


@pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed")
def test_equals_mastra_run_in_node() -> None:
    rng = random.Random(13)
    letters = [c for c in ALPHABET if c != "\ud83d"]  # JSON between the two runtimes: whole characters
    pairs = [["".join(rng.choices(letters, k=rng.randint(0, 14))) for _ in range(2)] for _ in range(400)]
    pairs += [["The quick brown fox jumps over the lazy dog.", "A quick brown fox jumped over a lazy dog."]]
    out = subprocess.run(["node", "-e", MASTRA_JS], input=json.dumps(pairs), capture_output=True, text=True,
                         check=True, timeout=60).stdout
    scorer = create_content_similarity_scorer()
    for (reference, output), (js_reference, js_output, js_score) in zip(pairs, json.loads(out), strict=True):
        result = scorer.run(input="q", output=output, ground_truth=reference)
        assert result.preprocess_step_result == {"processedInput": js_reference, "processedOutput": js_output}
        assert result.score == js_score, (reference, output)


def test_mastras_documented_example() -> None:
    result = create_content_similarity_scorer().run(
        input="The quick brown fox jumps over the lazy dog.", output="A quick brown fox jumped over a lazy dog.")
    assert result.score == 0.7761194029850746


@pytest.mark.parametrize(
    ("reference", "output", "score"),
    [
        ("", "", 1.0),  # equal, empty texts
        ("a", "a", 1.0),
        ("a", "b", 0.0),  # under two units
        ("ab", "abab", 2 * 1 / (2 + 4 - 2)),  # bigrams ab | ab, ba, ab: one match
        ("aaaa", "aa", 2 * 1 / (4 + 2 - 2)),  # the multiset: aa x3 | aa x1
        ("night", "nacht", 2 * 1 / (5 + 5 - 2)),  # ht only
        ("😀", "😀x", 2 * 1 / (2 + 3 - 2)),  # the emoji's two units are one bigram
        ("😀ab", "ab", 2 * 1 / (4 + 2 - 2)),  # one text with a character outside the BMP, one without
        ("a b\u00a0c", "abc", 1.0),  # whitespace (JavaScript's) deleted
    ],
)
def test_hand_computed(step_result: Any, reference: str, output: str, score: float) -> None:
    scorer = create_content_similarity_scorer(ignore_case=False, ignore_whitespace=False)
    texts = {"processedInput": reference, "processedOutput": output}
    assert step_result(scorer, "generate_score", {"preprocess": texts}) == score


def test_options_change_the_stored_texts() -> None:
    run = {"input": "q", "output": " Hello\u3000 World ", "ground_truth": "hello world"}
    default = create_content_similarity_scorer().run(**run)
    assert default.preprocess_step_result == {"processedInput": "hello world", "processedOutput": "hello world"}
    assert default.score == 1.0
    kept = create_content_similarity_scorer({"ignoreCase": False}).run(**run)  # partial options merge
    assert kept.preprocess_step_result == {"processedInput": "hello world", "processedOutput": "Hello World"}
    assert kept.score < 1.0
    raw = create_content_similarity_scorer(ignore_whitespace=False).run(**run)
    assert raw.preprocess_step_result["processedOutput"] == " hello\u3000 world " and raw.score == 1.0


def test_reference_is_ground_truth_even_empty_else_the_input() -> None:
    scorer = create_content_similarity_scorer()
    assert scorer.run(input="abc", output="abc", ground_truth="").score == 0.0
    assert scorer.run(input=[{"role": "user", "content": "abc"}], output="abc").score == 1.0
    with pytest.raises(ScorerInputError, match="content-similarity-scorer needs `ground_truth` or `input`"):
        scorer.run(output="abc")


@pytest.mark.parametrize(
    ("options", "fragment"),
    [({"ignore_case": "yes"}, "`ignore_case`"), ({"ignoreWhitespace": 1}, "`ignoreWhitespace`"), ({"scale": 2}, "unknown option `scale`")],
)
def test_bad_options(options: dict[str, Any], fragment: str) -> None:
    with pytest.raises(ConfigError, match=fragment):
        create_content_similarity_scorer(options)
