"""One text, two settings: how the same training scaled from fewer GPUs (or nodes) to more, from what the thread
states (parsers/prose.py's `stated` frame) and from step lines pasted under each setting.

Per-step times compare as weak scaling (data parallelism keeps each GPU's batch, so the ideal step time does not
change with the GPU count): efficiency = t_small / t_large. Epoch and whole-run times compare as strong scaling (the
same data split over more GPUs): efficiency = (T_small x n_small) / (T_large x n_large).
"""
from __future__ import annotations

from dataclasses import dataclass

import polars as pl

from diagnose.parsers.prose import PROSE_WINDOW

MIN_SEGMENT_STEPS = 2  # step lines under one setting that make its per-step time


@dataclass(frozen=True)
class Scaling:
    unit: str  # "GPUs" | "nodes"
    small: int
    large: int
    small_s: float
    large_s: float
    basis: str  # "step" | "epoch" | "run"
    evidence: tuple[tuple[int, int], ...]  # (source, line) of the sentences and step lines it rests on

    @property
    def efficiency(self) -> float:
        if self.basis == "step":
            return self.small_s / self.large_s
        return (self.small_s * self.small) / (self.large_s * self.large)

    @property
    def speedup(self) -> float:
        """How much faster the larger setting trains (the same work per unit of time)."""
        return self.efficiency * self.large / self.small


def compare(stated: pl.DataFrame, steps: pl.DataFrame) -> Scaling | None:
    """The scaling the text shows, or None: stated durations first (the poster's own figures), else step lines."""
    if stated.height == 0:
        return None
    for quantity, basis in (("step_time", "step"), ("epoch_time", "epoch"), ("total_time", "run")):
        rows = stated.filter((pl.col("quantity") == quantity) & pl.col("value").is_not_null())
        if (found := _two(rows, basis)) is not None:
            return found
    return _from_steps(stated.filter(pl.col("quantity") == "setting"), steps)


def _two(rows: pl.DataFrame, basis: str) -> Scaling | None:
    """The fewest and the most GPUs (else nodes) the rows give a time for: the first time stated for each count."""
    for col, unit in (("gpus", "GPUs"), ("nodes", "nodes")):
        have = rows.filter(pl.col(col).is_not_null() & (pl.col(col) > 0))
        per = have.group_by(col, maintain_order=True).agg(pl.col("value").first(), pl.col("source").first(),
                                                          pl.col("line").first()).sort(col)
        if per.height >= 2:
            lo, hi = per.row(0, named=True), per.row(-1, named=True)
            if lo["value"] > 0 and hi["value"] > 0:
                return Scaling(unit, int(lo[col]), int(hi[col]), float(lo["value"]), float(hi["value"]), basis,
                               ((int(lo["source"]), int(lo["line"])), (int(hi["source"]), int(hi["line"]))))
    return None


def _from_steps(settings: pl.DataFrame, steps: pl.DataFrame) -> Scaling | None:
    """Step lines pasted under two settings (`on one GPU the speed is:` ... `with 8 GPUs:` ...): each setting's
    median step time, where its first step line comes within PROSE_WINDOW lines of it."""
    timed = steps.filter(pl.col("step_time_s").is_not_null() & (pl.col("step_time_s") > 0))
    if settings.height < 2 or timed.height < 2 * MIN_SEGMENT_STEPS:
        return None
    marks = settings.select(pl.col("source").cast(pl.Int64), pl.col("line").cast(pl.Int64).alias("set_line"),
                            "gpus", "nodes").sort("set_line")
    placed = timed.select(pl.col("source").cast(pl.Int64), pl.col("line").cast(pl.Int64), "step_time_s").sort(
        "line").join_asof(marks, left_on="line", right_on="set_line", by="source", strategy="backward",
                        check_sortedness=False)
    placed = placed.filter(pl.col("set_line").is_not_null())
    seg = placed.group_by("source", "set_line").agg(
        pl.col("step_time_s").median().alias("value"), pl.len().alias("n"), pl.col("line").min().alias("first"),
        pl.col("gpus").first(), pl.col("nodes").first()).sort("source", "set_line")  # in the order stated (_two)
    seg = seg.filter((pl.col("n") >= MIN_SEGMENT_STEPS) & (pl.col("first") - pl.col("set_line") <= PROSE_WINDOW))
    found = _two(seg.rename({"set_line": "line"}).select("source", "line", "value", "gpus", "nodes"), "step")
    if found is None:
        return None
    firsts = {(s, line): f for s, line, f in seg.select("source", "set_line", "first").iter_rows()}
    return Scaling(found.unit, found.small, found.large, found.small_s, found.large_s, found.basis,
                   found.evidence + tuple((s, firsts[(s, line)]) for s, line in found.evidence))


@dataclass(frozen=True)
class StageComparison:
    """The same training at two ZeRO stages, as one text states it (`2.3 s with ZeRO-3, 1.1 s with ZeRO-2`)."""

    low: int  # the lower stage (0: no ZeRO)
    high: int
    low_s: float
    high_s: float
    basis: str  # "step" | "epoch" | "run"
    evidence: tuple[tuple[int, int], ...]  # (source, line) of the sentences or table rows

    @property
    def cost(self) -> float:
        """How many times the lower stage's time the higher stage takes."""
        return self.high_s / self.low_s


def compare_stages(stated: pl.DataFrame) -> StageComparison | None:
    """The lowest and the highest ZeRO stage the text states a time for, at one setting: the first time stated for
    each stage, per step first, then per epoch, then for the run."""
    if stated.height == 0:
        return None
    for quantity, basis in (("step_time", "step"), ("epoch_time", "epoch"), ("total_time", "run")):
        rows = stated.filter((pl.col("quantity") == quantity) & pl.col("value").is_not_null()
                             & (pl.col("value") > 0) & pl.col("zero_stage").is_not_null())
        per = rows.group_by("zero_stage", maintain_order=True).agg(
            pl.col("value", "source", "line", "gpus").first()).sort("zero_stage")
        if per.height < 2:
            continue
        lo, hi = per.row(0, named=True), per.row(-1, named=True)
        if lo["gpus"] is not None and hi["gpus"] is not None and lo["gpus"] != hi["gpus"]:
            continue  # two settings at once: not one training at two stages
        return StageComparison(int(lo["zero_stage"]), int(hi["zero_stage"]), float(lo["value"]), float(hi["value"]),
                               basis, ((int(lo["source"]), int(lo["line"])), (int(hi["source"]), int(hi["line"]))))
    return None


@dataclass(frozen=True)
class StatedTimes:
    """The first time a text states, and a second on the same line (a before and after: `went from 0.8 s to 1.6 s
    a step`, `0.8 s vs 1.6 s`), with no step line to time the run."""

    basis: str  # "step" | "epoch" | "run", or "samples" | "tokens" for a throughput stated alone
    seconds: tuple[float, ...]  # (per second for a throughput)
    source: int
    line: int


def stated_times(stated: pl.DataFrame) -> StatedTimes | None:
    """What a text states a step (else an epoch, else the run) takes, as it states it first; else the throughput it
    states."""
    for quantity, basis in (("step_time", "step"), ("epoch_time", "epoch"), ("total_time", "run"),
                            ("samples_per_sec", "samples"), ("tokens_per_sec", "tokens")):
        rows = stated.filter((pl.col("quantity") == quantity) & (pl.col("value") > 0))
        if rows.height:
            src, line = int(rows["source"][0]), int(rows["line"][0])
            same = rows.filter((pl.col("source") == src) & (pl.col("line") == line))["value"].head(2).to_list()
            return StatedTimes(basis, tuple(float(v) for v in same), src, line)
    return None


def spoken(seconds: float) -> str:
    """A stated time said back as people state it: seconds, minutes past five, hours past three (`5 h`, `6.5 h`)."""
    if seconds >= 3 * 3600:
        return f"{seconds / 3600:.3g} h"
    return f"{seconds / 60:.3g} min" if seconds >= 300 else f"{seconds:.3g} s"


def stated_comm_share(stated: pl.DataFrame) -> tuple[float, int, int] | None:
    """The largest share of time the text says goes to communication, with its (source, line)."""
    rows = stated.filter(pl.col("quantity") == "comm_share").sort("value", descending=True)
    if rows.height == 0:
        return None
    r = rows.row(0, named=True)
    return float(r["value"]), int(r["source"]), int(r["line"])
