"""Showing outside text to a person: a call's arguments for review, and any untrusted
text on a terminal. One function each (DESIGN.md, principle 8): the gateway's approval
question, the command line's, a console's and a log viewer's all use these, so a fix made
here is made everywhere.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from toolwire._exports import publish

__all__ = ["MAX_REVIEW_CHARS", "review_arguments", "terminal_text"]

#: The longest review of a call's arguments shown to a person; a call whose arguments do
#: not fit is not asked about (a prefix could hide the argument that matters).
MAX_REVIEW_CHARS = 16_000

# Characters that act on a terminal or change what it shows: C0 controls (ESC starts the
# sequences that write the clipboard or erase lines; CR and BS overwrite), DEL, C1
# controls (0x9b is a one-byte CSI), the line and paragraph separators, and the bidi
# controls that reorder what is shown ("Trojan source").
_UNSAFE = [
    *range(0x20),
    0x7F,
    *range(0x80, 0xA0),
    0x2028,
    0x2029,
    *range(0x202A, 0x202F),
    *range(0x2066, 0x206A),
    0x200E,
    0x200F,
    0x061C,
]
_ESCAPED = {c: f"\\u{c:04x}" for c in _UNSAFE}
_ESCAPED_LINE = dict(_ESCAPED)
_ESCAPED_BLOCK = {c: e for c, e in _ESCAPED.items() if c not in (0x0A, 0x09)}


def terminal_text(text: str, *, multiline: bool = True) -> str:
    """``text`` as it may be printed to a terminal: every control character that could act
    on it (write the clipboard, move the cursor, erase lines, reorder what is shown) is
    written as ``\\uXXXX``. ``multiline`` keeps newlines and tabs; without it a value is
    one line (a newline in a log field or a name cannot print a fake record).

    The escapes are JSON's, so JSON text stays valid JSON."""
    return text.translate(_ESCAPED_BLOCK if multiline else _ESCAPED_LINE)


def review_arguments(arguments: str | Mapping[str, Any]) -> str | None:
    """A call's arguments as a person is asked to approve them: every argument, keys
    sorted (the model chooses the order it sends them in, so a long value first cannot
    push another out of view), indented, nothing cut, control characters escaped
    (:func:`terminal_text`). ``arguments`` is the JSON text or the object.

    None when the review would be longer than :data:`MAX_REVIEW_CHARS`: such a call is
    too long to show in full, and is not asked about (deny it and say why)."""
    value: Any = arguments
    if isinstance(arguments, str):
        try:
            value = json.loads(arguments, strict=False)  # raw controls are shown escaped
        except ValueError:
            value = None
    if isinstance(arguments, str) and value is None and arguments.strip() != "null":
        shown = arguments  # not JSON: shown as it came
    else:
        shown = json.dumps(value, indent=2, sort_keys=True, ensure_ascii=False, default=str)
    if len(shown) > MAX_REVIEW_CHARS:
        return None
    return terminal_text(shown)


publish(globals())
