"""The charts both renderers draw, as data (issue 35): a line of points or a set of parts, with the title and axis
titles. reports/charts.py makes plotly figures of them for the HTML; reports/mermaid.py writes them as Mermaid
blocks for the Markdown, without building a figure (a figure's styling cost ~10 ms, so a 36-run Markdown report
took as long as the HTML). One place decides each chart's numbers and words, so the two read the same."""
from __future__ import annotations

from dataclasses import dataclass

import polars as pl

from diagnose import clocks
from diagnose.engine import Diagnosis
from diagnose.parsers.run_model import RunModel

MAX_POINTS = 5000  # points of a line sent to the browser (min and max of each bucket: every spike kept)


@dataclass(frozen=True)
class Line:
    name: str  # the chart's id (reports/charts.py names)
    title: str
    x_title: str
    y_title: str
    x: tuple[float, ...]
    y: tuple[float, ...]


@dataclass(frozen=True)
class Parts:
    """One horizontal stacked bar: each part's value, in order."""

    name: str
    title: str
    value_title: str
    parts: tuple[tuple[str, float], ...]


def downsample(frame: pl.DataFrame, x: str, y: str, max_points: int = MAX_POINTS) -> pl.DataFrame:
    """Min/max per bucket: keeps every spike while bounding the points sent to the browser."""
    frame = frame.filter(pl.col(y).is_not_null()).sort(x)
    if frame.height <= max_points:
        return frame
    buckets = max_points // 2
    b = frame.with_columns((pl.int_range(pl.len()) * buckets // pl.len()).alias("_b"))
    lo = b.sort(y).group_by("_b", maintain_order=True).first()
    hi = b.sort(y).group_by("_b", maintain_order=True).last()
    return pl.concat([lo, hi]).unique(subset=[x]).sort(x).drop("_b")


def step_time(d: Diagnosis) -> Line | None:
    m = d.metrics
    if m.step_series is None or not m.step_series.height:
        return None
    s = downsample(m.step_series, "step", "step_time_s")
    clock = clocks.chart_label(m.steps.source) if m.steps and m.steps.source in clocks.BY_NAME else ""
    return Line("step-time", "Time per training step" + (f" ({clock})" if clock else ""), "step", "seconds per step",
                tuple(s["step"].cast(pl.Float64).to_list()), tuple(s["step_time_s"].to_list()))


def goodput(d: Diagnosis) -> Parts | None:
    from diagnose.goodput import PART_LABELS

    acc = d.goodput
    if acc is None or not any(p.seconds for p in acc.parts):
        return None
    unit, scale = ((("process-hours" if acc.device == "processes" else "GPU-hours"), acc.gpus / 3600.0)
                   if acc.gpus else ("seconds", 1.0))
    return Parts("goodput", "Where the time went (goodput account)", unit,
                 tuple((PART_LABELS[p.name], p.seconds * scale) for p in acc.parts if p.seconds))


def breakdown(d: Diagnosis) -> Parts | None:
    b = d.metrics.breakdown
    if not b:
        return None
    return Parts("breakdown", "Where a step's time goes (median of the timers)", "milliseconds",
                 (("forward", b.fwd_ms), ("backward", b.bwd_inner_ms or 0.0),
                  ("gradient all-reduce", b.bwd_allreduce_ms or 0.0), ("optimizer step", b.step_ms)))


def drawn_in_markdown(model: RunModel, d: Diagnosis) -> list[Line | Parts]:
    """The charts a Markdown report draws (as Mermaid), in the HTML's order."""
    return [c for c in (step_time(d), goodput(d), breakdown(d)) if c is not None]


__all__ = ["Line", "MAX_POINTS", "Parts", "breakdown", "downsample", "drawn_in_markdown", "goodput", "step_time"]
