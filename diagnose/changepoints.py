"""Level shifts in the step-time series (issue 23): where a run got slower or faster and stayed so.

Greyhound (USENIX ATC'25) flags change points in iteration time with a gate of about 10%, to tell a slowdown from
noise (../shared/reference/goodput_stragglers.md). Here: the series is cut into at most MAX_BUCKETS buckets whose
medians ignore single spikes, and split recursively where the medians on either side differ most; a split counts when
the levels differ by SHIFT_GATE or more and most points on each side sit nearer their own level (it persists).
"""
from __future__ import annotations

import math
import statistics
from dataclasses import dataclass

import polars as pl

from diagnose.parsers.scalars import number


SHIFT_GATE = 1.10  # Greyhound's gate: a 10% change in iteration time
MAX_BUCKETS = 200  # bucket medians: robust to single spikes, and the search stays small on a million steps
MIN_SEGMENT = 3  # buckets on each side of a split
PERSIST_SHARE = 0.75  # the share of each side's buckets that must sit nearer their own side's level
STAIRCASE_SHIFTS = 2  # this many shifts upward, none down: a staircase slowdown
NEAR_EVENT_KINDS = ("checkpoint_save", "eval", "eval_result", "allocator_flush", "oom", "overflow", "loss_scale",
                    "nccl_warn", "timeout", "recompile", "dataloader_warning")


@dataclass(frozen=True, kw_only=True)
class Shift:
    step: int
    before_s: float
    after_s: float
    steps_after: int  # steps from this shift to the next one (or the end)
    events: tuple[tuple[str, int, int], ...] = ()  # (what, source id, line) printed near it

    @property
    def change(self) -> float:
        return self.after_s / self.before_s - 1.0


@dataclass(frozen=True, kw_only=True)
class ChangePoints:
    shifts: tuple[Shift, ...]
    pattern: str | None  # "staircase" | "trend" | "shift" | None
    trend_change: float | None = None  # last quarter's median over the first's, minus 1 (for "trend")
    slowdown_s: float = 0.0  # seconds the steps after upward shifts (or the trend) took beyond the first level


def find(series: pl.DataFrame | None, events: pl.DataFrame, steps: pl.DataFrame,
         restarts: tuple[int, ...] = ()) -> ChangePoints | None:
    """`series`: step, step_time_s (and ts) of one rank; `events`/`steps`: the run's frames, for what was printed
    near each shift; `restarts`: steps at which a new launch began."""
    if series is None or series.height < 2 * MIN_SEGMENT:
        return None
    n = series.height
    size = max(1, math.ceil(n / MAX_BUCKETS))
    buckets = (series.with_row_index("_i").with_columns((pl.col("_i") // size).alias("_b"))
               .group_by("_b", maintain_order=True)
               .agg(pl.col("step").first(), pl.col("step_time_s").median(), pl.len().alias("n")))
    values = [float(v) for v in buckets["step_time_s"].to_list()]
    starts = [int(s) for s in buckets["step"].to_list()]
    counts = [int(c) for c in buckets["n"].to_list()]
    cuts = _merge(values, sorted(_split(values, 0, len(values))))
    shifts = []
    bounds = [0, *cuts, len(values)]
    for i, cut in enumerate(cuts):
        before = statistics.median(values[bounds[i]:cut])
        after = statistics.median(values[cut:bounds[i + 2]])
        shifts.append(Shift(step=starts[cut], before_s=before, after_s=after,
                            steps_after=sum(counts[cut:bounds[i + 2]]) * _steps_per_row(series),
                            events=_near(starts[cut], size, series, events, steps, restarts)))
    ups = [s for s in shifts if s.change > 0]
    pattern, trend = None, None
    if len(ups) >= STAIRCASE_SHIFTS and len(ups) == len(shifts):
        # Flat treads make a staircase; treads that themselves climb are a ramp cut into pieces: a trend.
        pattern = "trend" if _ramps(values, [0, *cuts, len(values)]) else "staircase"
        if pattern == "trend":
            trend = shifts[-1].after_s / shifts[0].before_s - 1.0
    elif shifts:
        pattern = "shift"
    else:
        q = n // 4
        quarters = [number(series.slice(i * q, q)["step_time_s"].median()) for i in range(4)] if q >= 2 else []
        if quarters and all(b >= a for a, b in zip(quarters, quarters[1:])) and quarters[-1] >= SHIFT_GATE * quarters[0]:
            pattern, trend = "trend", quarters[-1] / quarters[0] - 1.0
    return ChangePoints(shifts=tuple(shifts), pattern=pattern, trend_change=trend,
                        slowdown_s=_slowdown(series, shifts, pattern))


def _steps_per_row(series: pl.DataFrame) -> int:
    gaps = series["step"].diff().drop_nulls()
    return max(1, int(number(gaps.median()))) if gaps.len() else 1


def _cost(values: list[float]) -> float:
    """Absolute deviation from the median: a spike costs its own distance only (the L1 cost of robust
    segmentation)."""
    med = statistics.median(values)
    return sum(abs(v - med) for v in values)


def _split(values: list[float], lo: int, hi: int) -> list[int]:
    """Recursive binary segmentation: the cut that lowers the L1 cost most, kept if the levels either side differ
    by the gate and the new level persists."""
    whole = _cost(values[lo:hi])
    best, best_cost = None, whole
    for cut in range(lo + MIN_SEGMENT, hi - MIN_SEGMENT + 1):
        c = _cost(values[lo:cut]) + _cost(values[cut:hi])
        if c < best_cost:
            best, best_cost = cut, c
    if best is None:
        return []
    left, right = statistics.median(values[lo:best]), statistics.median(values[best:hi])
    if min(left, right) <= 0 or max(left, right) / min(left, right) < SHIFT_GATE:
        return []
    mid = (left + right) / 2
    near_left = sum((v < mid) == (left < mid) for v in values[lo:best]) / (best - lo)
    near_right = sum((v < mid) == (right < mid) for v in values[best:hi]) / (hi - best)
    if near_left < PERSIST_SHARE or near_right < PERSIST_SHARE:
        return []
    return [*_split(values, lo, best), best, *_split(values, best, hi)]


def _merge(values: list[float], cuts: list[int]) -> list[int]:
    """Cuts whose neighbouring levels differ by less than the gate are dropped (a split inside a split can pass the
    gate against its own range yet not against its neighbour), the weakest first."""
    cuts = list(cuts)
    while cuts:
        bounds = [0, *cuts, len(values)]
        ratios = []
        for i in range(len(cuts)):
            a = statistics.median(values[bounds[i]:bounds[i + 1]])
            b = statistics.median(values[bounds[i + 1]:bounds[i + 2]])
            ratios.append(max(a, b) / min(a, b) if min(a, b) > 0 else math.inf)
        weakest = min(range(len(cuts)), key=ratios.__getitem__)
        if ratios[weakest] >= SHIFT_GATE:
            break
        cuts.pop(weakest)
    return cuts


RAMP_RISE = 1.03  # a tread whose second half runs 3% above its first half is itself climbing


def _ramps(values: list[float], bounds: list[int]) -> bool:
    rising = 0
    for a, b in zip(bounds, bounds[1:]):
        seg = values[a:b]
        half = len(seg) // 2
        if half and statistics.median(seg[half:]) >= RAMP_RISE * statistics.median(seg[:half]):
            rising += 1
    return rising * 2 > len(bounds) - 1


def _near(step: int, size: int, series: pl.DataFrame, events: pl.DataFrame, steps: pl.DataFrame,
          restarts: tuple[int, ...]) -> tuple[tuple[str, int, int], ...]:
    """Lines printed within a bucket (at least two step lines) of the shift: events, a restart, a change of
    learning rate or global batch."""
    width = max(2, size) * _steps_per_row(series)
    lo, hi = step - width, step + width
    out: list[tuple[str, int, int]] = []
    for r in restarts:
        if lo <= r <= hi:
            out.append((f"a restart at step {r}", -1, 0))
    window = series.filter((pl.col("step") >= lo) & (pl.col("step") <= hi) & pl.col("ts").is_not_null())
    if window.height and "ts" in events.columns:
        t0, t1 = window["ts"].min(), window["ts"].max()
        near = events.filter(pl.col("kind").is_in(NEAR_EVENT_KINDS) & pl.col("ts").is_not_null()
                             & (pl.col("ts") >= t0) & (pl.col("ts") <= t1))
        seen: set[str] = set()
        for e in near.iter_rows(named=True):
            if e["kind"] not in seen:
                seen.add(e["kind"])
                out.append((str(e["kind"]).replace("_", " "), int(e["source"]), int(e["line"])))
    rows = steps.filter(pl.col("global_step").is_between(lo, hi)).sort("global_step")
    for col, what in (("lr", "learning rate"), ("global_batch", "global batch")):
        vals = rows.filter(pl.col(col).is_not_null())
        before = vals.filter(pl.col("global_step") < step)[col]
        after = vals.filter(pl.col("global_step") >= step)[col]
        if before.len() and after.len():
            a, b = float(before[-1]), float(after[0])
            if a > 0 and b > 0 and max(a, b) / min(a, b) >= 1.5:
                row = vals.filter(pl.col("global_step") >= step).row(0, named=True)
                out.append((f"{what} {a:g} -> {b:g}", int(row["source"]), int(row["line"])))
    return tuple(out)


def _slowdown(series: pl.DataFrame, shifts: list[Shift], pattern: str | None) -> float:
    """Seconds beyond the run's first level spent after it rose (shifts up), or beyond the first quarter's median
    (a trend)."""
    if pattern in ("staircase", "shift") and shifts:
        base = shifts[0].before_s
        total = 0.0
        for s in shifts:
            if s.after_s > base:
                total += (s.after_s - base) * s.steps_after
        return total
    if pattern == "trend":
        q = series.height // 4
        base = number(series.slice(0, q)["step_time_s"].median())
        excess = (series["step_time_s"] - base).clip(lower_bound=0) * _steps_per_row(series)
        return float(excess.sum())
    return 0.0
