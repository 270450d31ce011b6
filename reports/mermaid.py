"""Charts that render on GitHub: the report's charts (reports/chart_data.py) as Mermaid `xychart-beta` blocks (issue
24), written from the charts' data, never from plotly figures (issue 35).

GitHub renders a fenced `mermaid` block inline, so a report pasted into an issue keeps its charts without image
hosting (../shared/reference/github.md). Each block takes its title and axis labels from the HTML chart it stands
for, so the two read the same. A line chart's points are bucket medians over equal step ranges, at most MAX_POINTS
(xychart spaces points evenly along its x range, so the buckets must be even in x, not in points); a horizontal
stacked bar chart (one bar per part) becomes one bar per category.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass

from diagnose.reports.chart_data import Line, Parts

MAX_POINTS = 60  # a step-time line of 60 points reads as well as 600 and keeps the comment small
CHARTS = ("step-time", "breakdown", "goodput")  # the figures (reports/charts.py names) drawn in Markdown


@dataclass(frozen=True)
class Block:
    name: str
    title: str
    text: str  # the xychart-beta source, without the fence


def blocks(charts: list[Line | Parts]) -> list[Block]:
    out = []
    for chart in charts:
        if chart.name not in CHARTS:
            continue
        text = _line(chart) if isinstance(chart, Line) else _bars(chart)
        if text is not None:
            out.append(Block(chart.name, chart.title, text))
    return out


def _label(text: object) -> str:
    """Quoted text Mermaid accepts: no quotes, backticks or line breaks (the fence and the syntax stay closed)."""
    s = re.sub(r"[\"`\r\n\[\]]", " ", str(text))
    return '"' + re.sub(r"\s+", " ", s).strip()[:100] + '"'


SIGNIFICANT = 4


def _num(v: float) -> str:
    """Four significant digits in plain decimal: mermaid's chart grammar takes no exponent (`5.556e-07` breaks
    the block)."""
    if v == 0 or not math.isfinite(v):
        return "0"
    digits = max(0, SIGNIFICANT - 1 - math.floor(math.log10(abs(v))))
    text = f"{v:.{digits}f}"
    text = text.rstrip("0").rstrip(".") if "." in text else text
    return "0" if text in ("", "-0") else text


def _line(chart: Line) -> str | None:
    pts = [(float(x), float(y)) for x, y in zip(chart.x, chart.y)
           if isinstance(x, (int, float)) and isinstance(y, (int, float)) and math.isfinite(x) and math.isfinite(y)]
    if len(pts) < 2:
        return None
    lo, hi = pts[0][0], pts[-1][0]
    ys = _buckets(pts, lo, hi) if len(pts) > MAX_POINTS and hi > lo else [y for _, y in pts]
    top = max(ys)
    return "\n".join([
        "xychart-beta",
        f"    title {_label(chart.title)}",
        f"    x-axis {_label(chart.x_title)} {_num(lo)} --> {_num(hi)}",
        f"    y-axis {_label(chart.y_title)} 0 --> {_num(top * 1.1)}",
        "    line [" + ", ".join(_num(y) for y in ys) + "]",
    ])


def _buckets(pts: list[tuple[float, float]], lo: float, hi: float) -> list[float]:
    """The median of each of MAX_POINTS equal x ranges; an empty range repeats its neighbour's level."""
    width = (hi - lo) / MAX_POINTS
    groups: list[list[float]] = [[] for _ in range(MAX_POINTS)]
    for x, y in pts:
        groups[min(MAX_POINTS - 1, int((x - lo) / width))].append(y)
    out: list[float] = []
    for g in groups:
        if g:
            g.sort()
            out.append(g[len(g) // 2])
        elif out:
            out.append(out[-1])
    first = next((sorted(g)[len(g) // 2] for g in groups if g), 0.0)
    return [first] * (MAX_POINTS - len(out)) + out


def _bars(chart: Parts) -> str | None:
    """A horizontal stacked bar of parts -> the parts as categories, drawn horizontally too."""
    parts = [(k, float(v)) for k, v in chart.parts if isinstance(v, (int, float)) and math.isfinite(v)]
    if not parts:
        return None
    top = max(v for _, v in parts)
    return "\n".join([
        "xychart-beta horizontal",
        f"    title {_label(chart.title)}",
        "    x-axis [" + ", ".join(_label(k) for k, _ in parts) + "]",
        f"    y-axis {_label(chart.value_title)} 0 --> {_num(top * 1.1 if top > 0 else 1)}",
        "    bar [" + ", ".join(_num(v) for _, v in parts) + "]",
    ])
