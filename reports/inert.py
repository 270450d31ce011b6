"""Text from inputs made inert for a terminal, Markdown and plain text: control characters shown, never obeyed.

A log line or a file name may carry ANSI/OSC escape sequences (a window title, a cleared screen, a hyperlink), BEL,
backspaces, or bidirectional overrides that make a line read differently from what it holds (CVE-2021-42574). Each
is written as its escape (`\\x1b`, `\\u202e`) so the text still shows that it was there. Newlines and tabs stay.
"""
from __future__ import annotations

import re

# C0 controls but tab and newline, DEL, C1 controls, and the Unicode bidi controls and line/paragraph separators.
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]")


def _escape(m: re.Match[str]) -> str:
    c = m.group(0)
    return f"\\x{ord(c):02x}" if ord(c) < 0x100 else f"\\u{ord(c):04x}"


def text(s: str) -> str:
    return _CONTROL.sub(_escape, s) if _CONTROL.search(s) else s
