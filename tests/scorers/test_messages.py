"""The text a scorer reads from an input or output given as a string or as chat messages, and the named
error for any other shape."""

from __future__ import annotations

import pytest

from evalduck.scorers._messages import check_text_field, input_text, output_text, plain_text, split_sentences

CHAT_IN = [
    {"role": "system", "content": "You are helpful."},
    {"role": "user", "content": "Where is my order?"},
    {"role": "user", "content": "Hello?"},
]
CHAT_OUT = [
    {"role": "assistant", "content": "It shipped today."},
    {"role": "tool", "content": "{}"},
    {"role": "assistant", "content": "It arrives Friday."},
]


def test_input_text_is_first_user_message() -> None:
    assert input_text(CHAT_IN) == "Where is my order?"
    assert input_text("plain") == "plain"
    assert input_text(None) == ""


def test_output_text_is_assistant_text() -> None:
    assert output_text(CHAT_OUT) == "It shipped today.\nIt arrives Friday."
    assert output_text({"role": "assistant", "content": "one"}) == "one"
    assert output_text("") == ""


def test_plain_text_of_messages() -> None:
    assert plain_text([{"role": "assistant", "content": "a"}, {"role": "user", "content": "b"}]) == "a\nb"


@pytest.mark.parametrize(
    ("value", "fragment"),
    [
        (42, "must be a string or a list of chat messages, got int"),
        ([{"role": "user", "content": 3}], "`output[0]`.content must be a string, got int"),
        ([{"content": "x"}], "`output[0]`.role must be a string"),
        (["just a string"], "`output[0]` must be a chat message"),
        ([{"role": "user", "content": [{"type": "text", "text": "x"}]}], "content must be a string, got list"),
    ],
)
def test_bad_fields_are_named(value: object, fragment: str) -> None:
    with pytest.raises(ValueError) as info:
        check_text_field(value, "output")
    assert fragment in str(info.value)


@pytest.mark.parametrize(
    ("text", "sentences"),
    [
        ("One. Two! Three? four", ["One.", "Two!", "Three?", "four"]),
        ("No punctuation at all", ["No punctuation at all"]),
        ("  ", []),
        ("Wait... what?!  Yes.", ["Wait...", "what?!", "Yes."]),
        ("e.g. this", ["e.g.", "this"]),  # a simple rule: abbreviations split too
    ],
)
def test_split_sentences_drops_only_whitespace(text: str, sentences: list[str]) -> None:
    assert split_sentences(text) == sentences
    assert " ".join(split_sentences(text)).split() == text.split()


def test_one_message_is_a_field_too() -> None:
    check_text_field({"role": "user", "content": "q"}, "input")
    with pytest.raises(ValueError, match=r"^`input`.role must be a string, got None$"):
        check_text_field({"content": "q"}, "input")
