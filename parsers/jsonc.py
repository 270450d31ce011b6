"""JSON as people write DeepSpeed configs: `//` and `/* */` comments, trailing commas, `inf`. One scanner that
both reads it (comments dropped) and says where each value sits in the text, so a change can be made in place with
the keys' order, the indentation and the comments kept (reports/config_patch.py)."""
from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any


@dataclass
class Node:
    """An object or array, or a scalar: its span in the text; an object's members by key (key start, value)."""

    start: int
    end: int
    members: dict[str, tuple[int, Node]] = field(default_factory=dict)
    is_object: bool = False


_STRING_RE = re.compile(r'"(?:[^"\\]|\\.)*"', re.S)


class JsoncError(ValueError):
    pass


class _Scanner:
    def __init__(self, text: str) -> None:
        self.t = text
        self.i = 0

    def ws(self) -> None:
        t = self.t
        while self.i < len(t):
            c = t[self.i]
            if c in " \t\r\n":
                self.i += 1
            elif t.startswith("//", self.i):
                nl = t.find("\n", self.i)
                self.i = len(t) if nl < 0 else nl + 1
            elif t.startswith("/*", self.i):
                end = t.find("*/", self.i + 2)
                if end < 0:
                    raise JsoncError("unterminated comment")
                self.i = end + 2
            else:
                return

    def value(self, depth: int = 0) -> Node:
        if depth > 100:
            raise JsoncError("nested too deeply")
        self.ws()
        if self.i >= len(self.t):
            raise JsoncError("unexpected end")
        c = self.t[self.i]
        if c == "{":
            return self.obj(depth)
        if c == "[":
            return self.arr(depth)
        start = self.i
        if c == '"':
            self.string()
        else:
            m = re.compile(r"[^\s,\]}/]+").match(self.t, self.i)
            if not m:
                raise JsoncError(f"unexpected {c!r} at {self.i}")
            self.i = m.end()
        return Node(start, self.i)

    def string(self) -> str:
        m = _STRING_RE.match(self.t, self.i)
        if not m:
            raise JsoncError(f"unterminated string at {self.i}")
        self.i = m.end()
        return str(json.loads(m.group(0)))

    def obj(self, depth: int) -> Node:
        node = Node(self.i, self.i, is_object=True)
        self.i += 1
        while True:
            self.ws()
            if self.i < len(self.t) and self.t[self.i] == "}":
                self.i += 1
                break
            if self.i >= len(self.t) or self.t[self.i] != '"':
                raise JsoncError(f"expected a key at {self.i}")
            kstart = self.i
            key = self.string()
            self.ws()
            if self.i >= len(self.t) or self.t[self.i] != ":":
                raise JsoncError(f"expected ':' at {self.i}")
            self.i += 1
            node.members[key] = (kstart, self.value(depth + 1))
            self.ws()
            if self.i < len(self.t) and self.t[self.i] == ",":
                self.i += 1
        node.end = self.i
        return node

    def arr(self, depth: int) -> Node:
        node = Node(self.i, self.i)
        self.i += 1
        while True:
            self.ws()
            if self.i < len(self.t) and self.t[self.i] == "]":
                self.i += 1
                break
            self.value(depth + 1)
            self.ws()
            if self.i < len(self.t) and self.t[self.i] == ",":
                self.i += 1
            elif self.i >= len(self.t) or self.t[self.i] != "]":
                raise JsoncError(f"expected ',' or ']' at {self.i}")
        node.end = self.i
        return node


def scan(text: str) -> Node:
    s = _Scanner(text)
    root = s.value()
    s.ws()
    if s.i != len(text):
        raise JsoncError(f"text after the value at {s.i}")
    return root


def loads(text: str) -> Any:
    """Comments and trailing commas dropped, `inf` read as Infinity; then the standard parser."""
    scan(text)  # raises on what is not JSON with comments
    return json.loads(_plain(text))


# One token pattern for both readers: a string (kept), a comment (dropped), a comma before a closing bracket
# (dropped, comments between them allowed).
_STRING = r'"(?:[^"\\]|\\.)*"'
_COMMENT = r"//[^\n]*|/\*(?:[^*]|\*(?!/))*\*/"  # a block comment ends at its first `*/`, also in a lookahead
_TOKENS = re.compile(rf"(?P<s>{_STRING})|(?P<c>{_COMMENT})|(?P<t>,(?=(?:\s|{_COMMENT})*[\]}}]))", re.S)


def _plain(text: str) -> str:
    out = _TOKENS.sub(lambda m: m.group("s") or "", text)
    return re.sub(r"(?<=[\s:\[,])(-?)inf\b", r"\1Infinity", out)
