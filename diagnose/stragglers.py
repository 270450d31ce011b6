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


def classify(timers: pl.DataFrame) -> Stragglers | None:
    """From global timer lines carrying a rank: None when fewer than two ranks, too few steps, or no rank runs
    IMBALANCE_FACTOR past the median in the typical step."""
    rows = timers.filter(~pl.col("microstep") & pl.col("fwd").is_not_null() & pl.col("rank").is_not_null())
    if rows.height == 0 or rows["rank"].n_unique() < 2:
        return None
    per = rows.select("rank", "node", "seq", TIMED_STEP_S.alias("t")).unique(["rank", "seq"], keep="first")
    n_ranks = per["rank"].n_unique()
    steps = (per.group_by("seq").agg(pl.len().alias("n"), pl.col("t").max().alias("slowest"),
                                     pl.col("t").median().alias("median"),
                                     pl.col("rank").sort_by("t").last().alias("rank"),
                                     pl.col("node").sort_by("t").last().alias("node"))
             .filter(pl.col("n") == n_ranks).sort("seq"))
    if steps.height < MIN_STEPS:
        return None
    ratio = float((steps["slowest"] / steps["median"]).median())  # type: ignore[arg-type]
    if ratio < IMBALANCE_FACTOR:
        return None
    counts = steps["rank"].value_counts(sort=True)
    top, top_n = int(counts["rank"][0]), int(counts["count"][0])
    share = top_n / steps.height
    host = steps.filter(pl.col("rank") == top)["node"].drop_nulls()
    wait = float((steps["slowest"] - steps["median"]).mean())  # type: ignore[arg-type]
    kind = "persistent" if share >= PERSISTENT_SHARE else "moving"
    turns = tuple(int(r) for r in counts["rank"].to_list()[:8]) if kind == "moving" else ()
    return Stragglers(kind=kind, rank=top, host=str(host[0]) if host.len() else None, share=share,
                      steps=steps.height, ranks=n_ranks, wait_s_per_step=wait, ratio=ratio, moving_ranks=turns)
