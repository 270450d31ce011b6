"""Polars scalars as Python numbers, checked: `Series.min()`, `.max()`, `.item()` and a row's values are typed as any
literal polars can hold (a date, a string, a list), so arithmetic on them is checked here once instead of cast at
every use."""
from __future__ import annotations

from datetime import datetime, timedelta


def number(value: object) -> float:
    """A numeric scalar as a float; anything else is a bug in the caller's column choice."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    raise TypeError(f"not a number: {value!r}")


def number_or_none(value: object) -> float | None:
    return None if value is None else number(value)


def whole(value: object) -> int:
    """An integer scalar (a step, a count)."""
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    raise TypeError(f"not a whole number: {value!r}")


def stamp(value: object) -> datetime:
    if isinstance(value, datetime):
        return value
    raise TypeError(f"not a timestamp: {value!r}")


def seconds(value: object) -> float:
    """A duration scalar (polars gives timedelta for Duration columns) in seconds."""
    if isinstance(value, timedelta):
        return value.total_seconds()
    return number(value)


def between(later: object, earlier: object) -> float:
    """Seconds from one timestamp scalar to another."""
    return (stamp(later) - stamp(earlier)).total_seconds()


__all__ = ["between", "number", "number_or_none", "seconds", "stamp", "whole"]
