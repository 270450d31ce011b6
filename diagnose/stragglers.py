"""Stragglers named and classified from per-rank evidence (issue 23).

Per step (the n-th timer line of each rank is its n-th step), the slowest rank and how far it runs past the median
rank: the others wait that long. A slowest rank that stays the same rank (or host) points to hardware, thermals or a
link; one that moves points to the input: data skew, variable sequence lengths, a slow data loader
(../shared/reference/goodput_stragglers.md, after Greyhound).
"""
from __future__ import annotations

from dataclasses import dataclass

import polars as pl

from diagnose.metrics import IMBALANCE_FACTOR, TIMED_STEP_S
from diagnose.parsers.scalars import number, whole

PERSISTENT_SHARE = 0.6  # the same rank slowest in 60% of the steps or more: persistent
MIN_STEPS = 3  # steps with every rank's timers, to tell persistent from moving


@dataclass(frozen=True, kw_only=True)
class Stragglers:
    kind: str  # "persistent" | "moving"
    rank: int  # the rank slowest most often
    host: str | None
    share: float  # of the steps in which that rank was the slowest
    steps: int  # steps compared
    ranks: int
    wait_s_per_step: float  # mean of (slowest - median rank) per step: how much later the others wait
    ratio: float  # median over steps of slowest / median rank
    moving_ranks: tuple[int, ...] = ()  # the ranks that took turns being slowest (moving)
    # What the ranks were compared by: "timers" (every rank's wall_clock_breakdown lines, slowest against the median)
    # or "megatron" (Megatron's straggler report: the slowest against the fastest rank per report interval).
    basis: str = "timers"
    # The slow rank's other readings where the report has them: its clock, power, temperature, data wait.
    signals: tuple[str, ...] = ()


def classify(timers: pl.DataFrame) -> Stragglers | None:
    """From global timer lines carrying a rank: None when fewer than two ranks, too few steps, or no rank runs
    IMBALANCE_FACTOR past the median in the typical step."""
    # Lazily, so that only the columns read are copied for the filtered rows (every rank's timer lines: millions).
    per = (timers.lazy().filter(~pl.col("microstep") & pl.col("fwd").is_not_null() & pl.col("rank").is_not_null())
           .select("rank", "node", "seq", TIMED_STEP_S.alias("t")).unique(["rank", "seq"], keep="first").collect())
    if per.height == 0 or per["rank"].n_unique() < 2:
        return None
    n_ranks = per["rank"].n_unique()
    steps = (per.group_by("seq").agg(pl.len().alias("n"), pl.col("t").max().alias("slowest"),
                                     pl.col("t").median().alias("median"),
                                     pl.col("rank").sort_by("t").last().alias("rank"),
                                     pl.col("node").sort_by("t").last().alias("node"))
             .filter(pl.col("n") == n_ranks).sort("seq"))
    if steps.height < MIN_STEPS:
        return None
    ratio = number((steps["slowest"] / steps["median"]).median())
    if ratio < IMBALANCE_FACTOR:
        return None
    kind, top, share, turns = _slowest(steps["rank"])
    host = steps.filter(pl.col("rank") == top)["node"].drop_nulls()
    wait = number((steps["slowest"] - steps["median"]).mean())
    return Stragglers(kind=kind, rank=top, host=str(host[0]) if host.len() else None, share=share,
                      steps=steps.height, ranks=n_ranks, wait_s_per_step=wait, ratio=ratio, moving_ranks=turns)


def _slowest(slowest: pl.Series) -> tuple[str, int, float, tuple[int, ...]]:
    """From the slowest rank of each step (or report): persistent or moving, the rank slowest most often, its
    share of the steps, and for a moving straggler the ranks that took turns (most often first)."""
    counts = slowest.value_counts(sort=True, name="n")
    top, share = int(counts[slowest.name][0]), int(counts["n"][0]) / slowest.len()
    kind = "persistent" if share >= PERSISTENT_SHARE else "moving"
    return kind, top, share, tuple(int(r) for r in counts[slowest.name].to_list()[:8]) if kind == "moving" else ()


# A reading of the slow rank that names its cause, from the report's other metrics: (column, phrase, which end is
# the bad one). The slowest rank also running the lowest clock or power, or the highest temperature, points to the
# GPU (throttling, a power cap); the longest get_batch wait points to the input.
_SIGNALS: tuple[tuple[str, str, str, str], ...] = (
    ("clock", "_mhz", "min", "the lowest GPU clock"),
    ("power", "_w", "min", "the lowest power draw"),
    ("temp", "_c", "max", "the highest temperature"),
    ("data_rtt", "_ms", "max", "the longest get_batch wait (DRtt)"),
)
_UNITS = {"_ms": "ms", "_w": "W", "_c": "C", "_pct": "%", "_mhz": "MHz", "_tf": "TFLOP/s"}
SIGNAL_SHARE = 0.5  # the slow rank holds the bad end of a metric in half the reports or more: named as a signal


def from_report(extremes: pl.DataFrame) -> Stragglers | None:
    """From Megatron's straggler report: per report interval the rank with the longest round trip (MxRtt) is the
    slowest and the others wait up to (max - min) Rtt for it. None below MIN_STEPS reports or when the median
    interval's max/min is under IMBALANCE_FACTOR (max over min is the wider spread of the two the timers give,
    so the gate errs towards naming a straggler)."""
    rows = extremes.filter(pl.col("rtt_max_ms").is_not_null() & (pl.col("rtt_min_ms") > 0)
                           & pl.col("rtt_max_rank").is_not_null())
    if rows.height < MIN_STEPS:
        return None
    ratio = number((rows["rtt_max_ms"] / rows["rtt_min_ms"]).median())
    if ratio < IMBALANCE_FACTOR:
        return None
    kind, top, share, turns = _slowest(rows["rtt_max_rank"])
    ranks = pl.concat([rows["rtt_max_rank"], rows["rtt_min_rank"].drop_nulls()]).n_unique()
    wait = number(((rows["rtt_max_ms"] - rows["rtt_min_ms"]) / 1000).mean())
    return Stragglers(kind=kind, rank=top, host=None, share=share, steps=rows.height, ranks=ranks,
                      wait_s_per_step=wait, ratio=ratio, basis="megatron",
                      signals=_signals(rows, top) + _bottom(extremes, top), moving_ranks=turns)


def _signals(rows: pl.DataFrame, rank: int) -> tuple[str, ...]:
    out = []
    for stem, unit, end, phrase in _SIGNALS:
        col, other = f"{stem}_{end}{unit}", f"{stem}_{'max' if end == 'min' else 'min'}{unit}"
        at = f"{stem}_{end}_rank"
        if col not in rows.columns or rows[at].null_count() == rows.height:
            continue
        held = rows.filter(pl.col(at) == rank)
        if held.height < SIGNAL_SHARE * rows.height:
            continue
        unit_text = _UNITS[unit]
        out.append(f"rank {rank} has {phrase} in {held.height} of {rows.height} reports "
                   f"(median {number(held[col].median()):.4g} {unit_text} against {number(held[other].median()):.4g} "
                   "on the other "
                   "end)")
    return tuple(out)


def _bottom(extremes: pl.DataFrame, rank: int) -> tuple[str, ...]:
    """`--straggler-minmax-count N`'s lines: how often the slow rank is among the N lowest-throughput ranks."""
    lists = extremes["low_etpt_ranks"].drop_nulls()
    if lists.len() == 0:
        return ()
    ranks = lists.str.extract_all(r"/(\d+)").list.eval(pl.element().str.strip_prefix("/").cast(pl.Int64))
    held = int(ranks.list.contains(rank).sum())
    if held < SIGNAL_SHARE * lists.len():
        return ()
    return (f"rank {rank} is among the {whole(ranks.list.len().max())} lowest-throughput ranks in {held} of "
            f"{lists.len()} `Bottom` lines",)
