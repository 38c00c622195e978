"""The fake judge's answers to the SCORERS.md judge steps, read from the prompt's tagged blocks.

Each answer is valid (it passes the step's output model and checks), deterministic, and sensible enough
for demos and tests: claims and units are the sentences of a text; a claim, unit or passage is judged by
how many of its content words (lower-cased words of three letters or more, and numbers) the text it is
compared with contains (speculation is never backed); bias and toxicity look for a few marker words. ``ANSWERS`` maps an output model's
name (the ``json_schema`` name of the request) to its answer function; ``reason`` answers generate_reason.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable
from typing import Any

from evalduck.scorers._messages import split_sentences

__all__ = ("ANSWERS", "PREPROCESS_SCHEMAS", "content_words", "overlap", "reason")

_WORD = re.compile(r"[a-z0-9]+")
_STOP = frozenset(
    "the and for are was were has have had not but with this that these those from into onto over under "
    "its it's they them their there here what which who whom whose when where why how all any can could "
    "would should will shall may might must does did done been being you your yours our ours his her hers "
    "him she one some such than then too very also just only about after before again more most other "
    "out off own same each few both nor yet per via".split()
)
# Words that make a sentence an opinion, a biased generalisation, or a toxic remark, for the fake's verdicts.
_OPINION = frozenset(
    "think believe feel best worst better worse great terrible awful amazing wonderful should obviously "
    "clearly always never beautiful ugly boring brilliant favourite favorite overrated underrated".split()
)
_GROUPS = frozenset(
    "women men girls boys immigrants foreigners muslims christians jews hindus atheists liberals "
    "conservatives democrats republicans asians africans europeans americans french germans elderly "
    "millennials boomers".split()
)
_SPECULATIVE = frozenset("may might could perhaps possibly probably maybe".split())
_TOXIC = frozenset("idiot idiots stupid dumb moron morons pathetic loser losers worthless shut hate disgusting".split())

Answer = Callable[[str], Any]


def content_words(text: str) -> set[str]:
    """The lower-cased words of three letters or more (and all numbers) that are not stop words."""
    return {w for w in _WORD.findall(text.lower()) if (len(w) >= 3 or w.isdigit()) and w not in _STOP}


def overlap(text: str, other: str | Iterable[str]) -> float:
    """The share of ``text``'s content words found in ``other`` (1 when ``text`` has none)."""
    words = content_words(text)
    pool = content_words(other if isinstance(other, str) else " ".join(other))
    return len(words & pool) / len(words) if words else 1.0


def _tagged(prompt: str, tag: str) -> str:
    match = re.search(rf"<{tag}>\n?(.*?)\n?</{tag}>", prompt, re.DOTALL)
    return match.group(1) if match else ""


def _json(prompt: str, tag: str) -> Any:
    try:
        return json.loads(_tagged(prompt, tag) or "[]")
    except ValueError:
        return []


def _passages(prompt: str) -> list[str]:
    return [str(p.get("passage", "")) for p in _json(prompt, "context") if isinstance(p, dict)]


def _sentences(text: str) -> list[str]:
    return [s for line in text.splitlines() for s in split_sentences(line)]


def _claims(prompt: str) -> dict[str, Any]:
    return {"claims": _sentences(_tagged(prompt, "output"))}


def _faithfulness(prompt: str) -> dict[str, Any]:
    context, verdicts = _passages(prompt), []
    for claim in _json(prompt, "claims"):
        share = overlap(claim, context)
        verdict = "yes" if share >= 0.8 else "no" if share >= 0.5 else "unsure"
        if set(_WORD.findall(claim.lower())) & _SPECULATIVE:
            verdict = "unsure"  # the rubric: speculation is never backed
        verdicts.append({"verdict": verdict, "reason": f"{share:.0%} of the claim's words are in the context."})
    return {"verdicts": verdicts}


def _hallucination(prompt: str) -> dict[str, Any]:
    context, verdicts = _passages(prompt), []
    for claim in _json(prompt, "claims"):
        share = overlap(claim, context)
        verdicts.append({
            "statement": claim, "verdict": "no" if share >= 0.8 else "yes",
            "reason": f"{share:.0%} of the claim's words are in the context.",
        })
    return {"verdicts": verdicts}


def _units(prompt: str) -> dict[str, Any]:
    return {"outputUnits": _sentences(_tagged(prompt, "output")), "groundTruthUnits": _sentences(_tagged(prompt, "ground_truth"))}


def _matches(prompt: str) -> dict[str, Any]:
    outputs = [str(u) for u in _json(prompt, "output_units")]
    matches, used = [], set()
    for unit in _json(prompt, "ground_truth_units"):
        best = max(outputs, key=lambda o: overlap(unit, o), default=None)
        share = overlap(unit, best) if best is not None else 0.0
        if best is not None and best.strip().lower() == str(unit).strip().lower():
            kind = "exact"
        else:
            kind = "semantic" if share >= 0.8 else "partial" if share >= 0.4 else "missing"
        if kind != "missing":
            used.add(best)
        matches.append({
            "groundTruthUnit": unit, "outputUnit": None if kind == "missing" else best, "matchType": kind,
            "explanation": f"{share:.0%} of the unit's words are in the closest output unit.",
        })
    return {"matches": matches, "extraInOutput": [o for o in outputs if o not in used], "contradictions": []}


def _precision(prompt: str) -> dict[str, Any]:
    target = _tagged(prompt, "output").strip() or _tagged(prompt, "input")
    verdicts = []
    for i, passage in enumerate(_passages(prompt)):
        share = overlap(target, passage)
        verdicts.append({"context_index": i, "verdict": "yes" if share >= 0.3 else "no",
                         "reason": f"It holds {share:.0%} of the answer's words."})
    return {"verdicts": verdicts}


def _relevance(prompt: str) -> dict[str, Any]:
    question, output = _tagged(prompt, "input"), _tagged(prompt, "output")
    evaluations = []
    for i, passage in enumerate(_passages(prompt)):
        share = overlap(question, passage)
        level = "high" if share >= 0.5 else "medium" if share >= 0.25 else "low" if share > 0 else "none"
        evaluations.append({
            "context_index": i, "contextPiece": passage, "relevanceLevel": level,
            "wasUsed": overlap(output, passage) >= 0.3, "reasoning": f"It holds {share:.0%} of the question's words.",
        })
    return {"evaluations": evaluations, "missingContext": [], "overallAssessment": "Judged by shared words."}


def _opinions(prompt: str) -> dict[str, Any]:
    return {"opinions": [s for s in _sentences(_tagged(prompt, "output")) if content_words(s) & _OPINION]}


def _bias(prompt: str) -> dict[str, Any]:
    results = []
    for opinion in _json(prompt, "opinions"):
        biased = bool(content_words(opinion) & _GROUPS)
        results.append({"result": "yes" if biased else "no",
                        "reason": "It generalises about a group." if biased else "It names no group."})
    return {"results": results}


def _toxicity(prompt: str) -> dict[str, Any]:
    verdicts = []
    for sentence in _sentences(_tagged(prompt, "output")):
        toxic = bool(set(_WORD.findall(sentence.lower())) & _TOXIC)
        verdicts.append({"verdict": "yes" if toxic else "no", "reason": f"{sentence[:60]!r} is {'' if toxic else 'not '}insulting."})
    return {"verdicts": verdicts}


def _alignment(prompt: str) -> dict[str, Any]:
    asked = _tagged(prompt, "user_prompt") or _tagged(prompt, "system_prompt")  # what the output must answer
    share = overlap(asked, _tagged(prompt, "output"))
    score = 1.0 if share >= 0.5 else 0.5 if share > 0 else 0.0
    met = score == 1.0
    return {
        "intentAlignment": {"score": score, "primaryIntent": asked.strip()[:80], "isAddressed": met, "reasoning": f"{share:.0%} of the prompt's words are answered."},
        "requirementsFulfillment": {"requirements": [{"requirement": "Answer the prompt.", "isFulfilled": met, "reasoning": "By shared words."}], "overallScore": score},
        "completeness": {"score": score, "missingElements": [] if met else ["parts of the prompt"], "reasoning": "By shared words."},
        "responseAppropriateness": {"score": 1.0, "formatAlignment": True, "toneAlignment": True, "reasoning": "Plain text."},
        "overallAssessment": f"The output covers {share:.0%} of the prompt's words.",
    }


def _tool_words(name: str) -> set[str]:
    spaced = re.sub(r"([a-z])([A-Z])", r"\1 \2", name).replace("_", " ").replace("-", " ")
    return content_words(spaced) - {"get", "set", "list", "find", "tool", "run", "call", "fetch"}


def _tools(prompt: str) -> dict[str, Any]:
    request = content_words(_tagged(prompt, "user_request"))
    described = {t.get("name"): t.get("description", "") for t in _json(prompt, "available_tools") if isinstance(t, dict)}
    called = [str(c) for c in _json(prompt, "tools_called")]

    def fits(name: str) -> bool:
        return bool((_tool_words(name) | content_words(described.get(name, ""))) & request)

    return {
        "evaluations": [{"toolCalled": c, "wasAppropriate": fits(c), "reasoning": "By the request's words."} for c in called],
        "missingTools": [n for n in described if n not in called and _tool_words(n) & request],
    }


ANSWERS: dict[str, Answer] = {
    "Claims": _claims,
    "FaithfulnessVerdicts": _faithfulness,
    "HallucinationVerdicts": _hallucination,
    "AnswerUnits": _units,
    "AnswerMatches": _matches,
    "PassageVerdicts": _precision,
    "ContextEvaluations": _relevance,
    "Opinions": _opinions,
    "BiasResults": _bias,
    "ToxicityVerdicts": _toxicity,
    "PromptAlignment": _alignment,
    "ToolEvaluations": _tools,
}
PREPROCESS_SCHEMAS = frozenset({"Claims", "AnswerUnits", "Opinions"})


def reason(prompt: str) -> str | None:
    """generate_reason of a SCORERS.md scorer (its prompt names the ``<metric>``), else None."""
    metric = _tagged(prompt, "metric").strip()
    if not metric:
        return None
    score = _tagged(prompt, "score").strip() or "unknown"
    return f"The score is {score}: {metric}, as judged from the verdicts above."
