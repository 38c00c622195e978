"""Credentials in URLs (`--judge-api-base http://user:KEY@host/v1`) never reach the results file."""

from __future__ import annotations

import pytest

from evalduck.flows.store import Store
from evalduck.flows.store.redact import redact_url, redact_urls


@pytest.mark.parametrize(("given", "shown"), [
    ("http://user:probe5CANARY@127.0.0.1:18805/v1", "http://user:***@127.0.0.1:18805/v1"),
    ("https://TOKEN@host/v1", "https://***@host/v1"),
    ("http://u:p@ss@host/v1", "http://u:***@host/v1"),  # an unescaped @ in the password: up to the last one
    ("see http://a:b@c/x and https://d:e@f", "see http://a:***@c/x and https://d:***@f"),
    ("http://127.0.0.1:8000/v1", "http://127.0.0.1:8000/v1"),
    ("http://host/v1?mail=a@b", "http://host/v1?mail=a@b"),
    ("user@example.com", "user@example.com"),
])
def test_redact_url(given: str, shown: str) -> None:
    assert redact_url(given) == shown


def test_redact_urls_walks_json_like_values() -> None:
    value = {"a": ["http://u:K@h", 1, None], "b": {"c": ("https://T@h",)}, "n": 2.5}
    assert redact_urls(value) == {"a": ["http://u:***@h", 1, None], "b": {"c": ["https://***@h"]}, "n": 2.5}


def test_the_stored_run_config_has_no_credentials(store: Store) -> None:
    config = {"judge_api_base": "http://user:probe5CANARYurl@127.0.0.1:18805/v1",
              "scorers": [{"id": "answer-relevancy-scorer", "options": {"api_base": "https://TOKEN99@h/v1"}}]}
    store.start_run("r", None, "d.jsonl", "h", config)
    store.start_run("r", None, "d.jsonl", "h", config)  # a resume writes the config again
    (raw,) = store.sql("SELECT config FROM runs").rows[0]
    assert "probe5CANARYurl" not in raw and "TOKEN99" not in raw
    assert store.run_record("r").config["judge_api_base"] == "http://user:***@127.0.0.1:18805/v1"
    assert config["judge_api_base"] == "http://user:probe5CANARYurl@127.0.0.1:18805/v1"  # the caller's is intact
