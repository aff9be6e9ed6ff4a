"""Showing outside text to a person: review_arguments and terminal_text."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from toolwire.adapters import MAX_REVIEW_CHARS, review_arguments, terminal_text


@pytest.mark.parametrize(
    ("raw", "shown"),
    [
        ("\x1b]52;c;aGk=\x07", "\\u001b]52;c;aGk=\\u0007"),  # writes the clipboard
        ("\x1b[1A\x1b[2K", "\\u001b[1A\\u001b[2K"),  # erases the line above
        ("\x9b31m", "\\u009b31m"),  # a one-byte CSI
        ("ok\rfake", "ok\\u000dfake"),  # overwrites the line
        ("\u202eexe.txt", "\\u202eexe.txt"),  # reverses what follows
        ("a\u2028b", "a\\u2028b"),
        ("\x7f", "\\u007f"),
        ("tabs\tand\nlines", "tabs\tand\nlines"),
        ("héllo ✓ 日本", "héllo ✓ 日本"),
    ],
)
def test_terminal_text_escapes_what_acts_on_a_terminal(raw: str, shown: str) -> None:
    assert shown == terminal_text(raw)


def test_one_line_terminal_text_escapes_newlines_and_tabs() -> None:
    assert "a\\u000ab\\u0009c" == terminal_text("a\nb\tc", multiline=False)


@given(st.text())
def test_terminal_text_leaves_no_control_character(text: str) -> None:
    shown = terminal_text(text, multiline=False)
    assert not any(ord(c) < 0x20 or 0x7F <= ord(c) < 0xA0 for c in shown)


@given(st.dictionaries(st.text(max_size=20), st.text(max_size=50), max_size=8))
def test_a_review_is_the_arguments_as_json_every_key_sorted(arguments: dict[str, str]) -> None:
    shown = review_arguments(json.dumps(arguments))
    assert shown is not None
    assert arguments == json.loads(shown)  # escaped as JSON escapes: nothing lost
    assert sorted(arguments) == list(json.loads(shown))


def test_a_review_shows_a_long_first_argument_and_the_one_after_it() -> None:
    shown = review_arguments({"to": "attacker@evil", "body": "x" * 5000})
    assert shown is not None
    assert ("x" * 5000 in shown, shown.index('"body"') < shown.index('"to"')) == (True, True)


def test_a_review_too_long_to_show_in_full_is_none() -> None:
    assert review_arguments({"body": "x" * MAX_REVIEW_CHARS}) is None


@pytest.mark.parametrize(("raw", "shown"), [("not json", "not json"), ("null", "null"), ("", "")])
def test_a_review_of_text_that_is_not_an_object(raw: str, shown: str) -> None:
    assert shown == review_arguments(raw)
