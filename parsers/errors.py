"""The one error type that parsers raise for bad input: the CLI turns it into a one-line message and exit code 2."""
from __future__ import annotations


class Refused(ValueError):
    """Input refused by a bound (alias expansion, nesting, size): the message says which."""


class InputError(Exception):
    """Input that cannot be read at all (missing, unreadable, binary, nothing recognisable)."""

    def __init__(self, source: str, why: str) -> None:
        super().__init__(f"{source}: {why}")
        self.source = source
        self.why = why


def fault(unit: str, e: BaseException) -> str:
    """How a unit that raised (a line kind, a fact reader, a rule, the planner) is named in the report: the unit and
    the exception's first line. Its fault stays local: the rest of the report still comes."""
    first = (str(e).strip().splitlines() or [""])[0][:160]
    return f"{unit}: {type(e).__name__}" + (f": {first}" if first else "")
