"""Two support bots that answer without any model, for the shipped sweep (datasets/sweep-demo.yaml, `make
sweep-demo`): evalduck calls each as a `module:function` target, once per item, with the candidate's system
prompt as its `system_prompt` parameter.

- ``faq_bot`` finds the closest question of the demo FAQ (datasets/demo.jsonl's reference answers) and answers
  with its answer;
- ``topic_bot`` answers from a few keywords with a pointer to the help centre, as a rule-based bot would.

Both follow the system prompt's style the way a model would be asked to: a prompt that asks for brevity gets
the first sentence only, one that asks for warmth gets a thank-you and an offer of more help.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

from rapidfuzz import fuzz, process

FAQ_FILE = Path(__file__).resolve().parents[1] / "datasets" / "demo.jsonl"

TOPICS = {  # keyword -> the rule-based bot's answer
    "password": "You can reset your password from the sign-in page. See the help centre for the steps.",
    "email": "You can change your account details under Settings. See the help centre for the steps.",
    "charge": "Billing questions are handled by our billing team. Please write to billing@example.com.",
    "refund": "Refunds depend on your plan. Please write to billing@example.com.",
    "cancel": "You can manage your subscription under Settings > Billing.",
    "pay": "We accept the usual payment methods. The full list is in the help centre.",
    "ship": "Shipping times vary by destination. Track your order from your account page.",
    "order": "Track your order from your account page.",
    "crash": "Please update the app to the latest version and try again.",
    "data": "Your data is handled as described in our privacy policy.",
    "two-factor": "Two-factor authentication is under Settings > Security.",
    "locked": "Wait 15 minutes and try again, or reset your password.",
    "users": "Team plans can add users under Settings > Team.",
    "hours": "Our support team answers on weekdays.",
}
FALLBACK = "Thanks for your message. Please see the help centre, or reply to reach a person."


def _question(value: Any) -> str:
    """The item's question: its text, or the last user message of a chat."""
    if isinstance(value, list):
        users = [m.get("content", "") for m in value if isinstance(m, dict) and m.get("role") == "user"]
        return str(users[-1]) if users else ""
    return str(value)


def _styled(answer: str, system_prompt: str | None) -> str:
    prompt = (system_prompt or "").lower()
    if "short" in prompt or "brief" in prompt or "terse" in prompt:
        return answer.split(". ")[0].rstrip(".") + "."
    if "warm" in prompt or "friendly" in prompt:
        return f"Thank you so much for asking! {answer} I'm happy to help with anything else."
    return answer


@cache
def _faq() -> dict[str, str]:
    faq: dict[str, str] = {}
    for line in FAQ_FILE.read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        if row.get("groundTruth"):
            faq[_question(row["input"])] = row["groundTruth"]
    return faq


def faq_bot(question: Any, system_prompt: str | None = None) -> str:
    """The answer of the closest FAQ question (rapidfuzz's token-set ratio), in the prompt's style."""
    faq = _faq()
    match = process.extractOne(_question(question), list(faq), scorer=fuzz.token_set_ratio)
    return _styled(faq[match[0]] if match else FALLBACK, system_prompt)


def topic_bot(question: Any, system_prompt: str | None = None) -> str:
    """The answer of the first keyword the question contains, in the prompt's style."""
    text = _question(question).lower()
    answer = next((reply for keyword, reply in TOPICS.items() if keyword in text), FALLBACK)
    return _styled(answer, system_prompt)
