"""Derived metrics from the run model. Each metric is None when its inputs are missing; nothing is invented.

Step time comes from the best clock the sources offer, in order: DeepSpeed `step=` line timestamps (wall clock,
data loading included), ThroughputTimer samples/s (train_batch_size / CurrSamplesPerSec), tqdm rates, HF
train_runtime; the wall_clock_breakdown timers give the compute/communication split.
"""
from __future__ import annotations

import math
import re
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import polars as pl

from diagnose import clocks as clock_table
from diagnose import hardware, scaling
from diagnose.parsers.run_model import RunModel
from diagnose.parsers.scalars import between, number, whole
from diagnose.scaling import Scaling, StageComparison, StatedTimes

WARMUP_STEPS = 2  # DeepSpeed's ThroughputTimer skips 2 steps too (start_step); the first steps build caches
SPIKE_FACTOR = 2.0  # a step at 2x the median is a stall, not noise (HTA's idle-time analysis uses the same cut)
# Spikes recur at a period when PERIOD_SHARE of them (and PERIOD_MIN) have a partner spike p steps away, within
# PERIOD_TOLERANCE of p: save and eval intervals are exact, a data shard's boundary drifts by a step (190.7 steps a
# shard); under PERIOD_SHORTEST steps exactness is asked (at p=2 a tolerance of one step would pair any two spikes).
PERIOD_MIN = 3
# A spike period this short, with nothing printed at the spikes, is the loader's: DataLoader num_workers of 2-16 is
# what trainers set (PyTorch's guidance: a few workers per GPU), and a save or eval every few steps prints its line.
LOADER_PERIOD_MAX = 16
PERIOD_SHARE = 0.5
PERIOD_TOLERANCE = 0.01
# A stall read from a progress bar may show on two steps a step or two apart (a refresh interval straddles them, the
# HF Trainer's save follows the step it logs): spikes this close are one event when the events they make recur
# evenly at PERIOD_EVENTS_FROM steps or more (saves every 25 steps read as 24 and 26, 50 and 51, ...).
PERIOD_SAME_EVENT = 2
PERIOD_EVENTS_FROM = 10
PERIOD_SHORTEST = 2
PERIOD_NEIGHBOURS = 4  # distances to each spike's next 4 spikes: enough for two or three interleaved events
PERIOD_CANDIDATES = 12
PERIOD_EQUAL = 0.9
TREND_FACTOR = 1.3  # last quarter's median 30% above the first quarter's = progressive slowdown
# A rise that noise gives less than 1 time in 20: the one-sided Mann-Kendall test (Mann 1945, Kendall 1975), the
# standard test for a monotone trend in a series with no assumed shape or distribution. Ten step times printed every
# 10 steps of a healthy run can rise quarter by quarter by chance (a ResNet-18 on an H200: 13-26 ms of host noise).
TREND_SIGNIFICANCE = 0.05
TREND_POINTS = 256  # a longer series is tested as the medians of this many equal blocks (the test is O(n^2))
# DeepSpeed 0.18.3 stopped clearing a timer's events when they are summed (deepspeed/utils/timer.py
# `_get_elapsed_msec`; 0.18.2 still clears them), and the comms logger reads `elapsed(reset=False)` after every call:
# from then on each logged latency is the running total of that op's calls so far (read in the 0.18.0-0.19.8
# sources). Totals and averages in its tables are overstated about (calls + 1) / 2-fold, bus bandwidth understated.
COMMS_RUNNING_TOTALS_SINCE = (0, 18, 3)
IMBALANCE_FACTOR = 1.2  # a rank/GPU 20% slower than the median (nvidia-resiliency-ext straggler default)
WALL_WAIT_MAX = 1.05  # a data wait past a whole step's wall time (5% for printing's rounding) is not that step's wait
IDLE_UTIL = 10.0  # % NVML utilization below which a GPU sample counts as idle (causes.md §0.3 P-gaps: "runs of 0%")
IDLE_MIN_SAMPLES = 2  # W&B samples every 15 s by default: two idle samples = at least ~15 s idle
SAWTOOTH_SHARE = 0.2  # >= 20% of samples below 20% AND >= 20% above 80%: alternating idle/busy (P-sawtooth)
FLAT_STD = 10.0  # utilization standard deviation under 10 points: a flat plateau (P-flat-mid)


@dataclass(frozen=True)
class StepStats:
    source: str  # which clock: ds_step_ts | printed | ds_throughput | tqdm | hf_runtime
    n: int
    p50_s: float
    p90_s: float
    max_s: float
    mean_s: float
    spikes: tuple[int, ...]  # steps whose time >= SPIKE_FACTOR x p50
    spike_period: int | None  # steps between spikes when they recur regularly
    first_quarter_p50_s: float | None
    last_quarter_p50_s: float | None
    quarter_p50_s: tuple[float, ...] = ()  # medians of the four quarters of the run
    rise_p: float | None = None  # one-sided Mann-Kendall p-value of a rising step time (rising_p)


@dataclass(frozen=True)
class Breakdown:
    fwd_ms: float
    bwd_inner_ms: float | None
    bwd_allreduce_ms: float | None
    step_ms: float
    total_ms: float
    shares: dict[str, float]  # fwd / bwd / allreduce / optimizer -> fraction of the timed total
    # ZeRO-1/2's all-gather of the updated partitions, timed inside `step` (communication, not optimizer math)
    optimizer_allgather_ms: float | None = None


@dataclass(frozen=True)
class Metrics:
    steps: StepStats | None = None
    step_series: pl.DataFrame | None = None  # step, step_time_s (rank 0 / the chosen clock)
    samples_per_sec: float | None = None
    tokens_per_sec: float | None = None
    mfu: float | None = None
    mfu_basis: str | None = None
    mfu_missing: tuple[str, ...] = ()  # the inputs MFU needed and the logs lacked
    breakdown: Breakdown | None = None
    comm_total_ms: float | None = None
    comm_busbw_gbps: float | None = None
    comm_ops: dict[str, float] = field(default_factory=dict)  # op -> total latency ms
    # The comms logger's straggler breakdown (show_straggler): the printing rank's collective time beyond the
    # fastest rank's, and (fastest + waiting) / fastest.
    comm_straggler_ms: float | None = None
    comm_straggler_ratio: float | None = None
    comm_running_totals: bool = False  # the logger's latencies are running totals (see COMMS_RUNNING_TOTALS_SINCE)
    rank_step_p50: dict[int, float] = field(default_factory=dict)  # rank -> p50 compute time (timers) seconds
    imbalance: float | None = None  # slowest rank / median rank
    node_step_p50: dict[str, float] = field(default_factory=dict)  # host -> p50 timed step seconds (pdsh prefixes)
    node_imbalance: float | None = None  # slowest node / median node
    skipped_fraction: float | None = None
    overflow_after_warmup: int = 0
    loss_scale_min: float | None = None  # the lowest fp16 loss scale an overflow / loss-scale line reached
    allocator_flushes: int = 0
    first_flush_step: int | None = None
    stall_events: tuple[tuple[str, int | None, float | None], ...] = ()  # (kind, step, stall seconds)
    # Spikes every few steps with no checkpoint or evaluation at them: the period of a DataLoader whose workers fall
    # behind (each of k workers hands over the batch it made, then the loop waits for the next round)
    loader_period: int | None = None
    utilization: dict[str, float] = field(default_factory=dict)  # from system metrics when present
    util_per_gpu: dict[int, float] = field(default_factory=dict)  # GPU index -> mean utilization %
    util_pattern: str | None = None  # flat | sawtooth | gaps | varied
    idle_windows: tuple[tuple[object, object, float], ...] = ()  # (start ts, end ts, seconds) all GPUs idle
    stalls_in_idle: tuple[tuple[str, int | None, float], ...] = ()  # (event kind, step, idle seconds) that coincide
    wall_s: float | None = None
    # The trainer's own per-step time (`dt=0.03`) against the wall clock between its step lines: (printed median s,
    # wall median s per step). A printed time far below the cadence means time goes outside the timed region.
    printed_vs_wall: tuple[float, float] | None = None
    data_wait_share: float | None = None  # median data_time / step time where the trainer times data loading
    # all data waits after the warm-up over the time they and the steps took: intermittent stalls (a 20 s wait every
    # few steps) that the median does not see; (share, the longest wait's step, its seconds)
    data_stalls: tuple[float, int, float] | None = None
    # The most memory the run allocated on one GPU, GB: DeepSpeed's MaxMemAllocated, see_memory_usage's Max_MA,
    # Megatron's `max allocated`, LLaMA-Factory's memory(GiB).
    peak_mem_gb: float | None = None
    # Every step clock the run has, the step clock first (compare's choice of one both runs share), with its series;
    # only the step clock's unless computed with all_clocks.
    clocks: dict[str, StepStats] = field(default_factory=dict)
    clock_series: dict[str, pl.DataFrame] = field(default_factory=dict)
    # Distinct steps the run printed (one rank), timed or not: what was read where no clock says how long they took.
    steps_read: int = 0
    timed_totals: tuple[float, ...] = ()  # fwd + bwd + step (+ pipeline waits) ms per timer line, in order (one rank)
    generation_share: float | None = None  # RLHF: median generation time / end-to-end step time
    scaling: Scaling | None = None  # the same training at two GPU (or node) counts, as one text shows it
    stages: StageComparison | None = None  # the same training at two ZeRO stages, as one text states it
    stated: StatedTimes | None = None  # the time a text states a step (epoch, run) takes, and a second on its line
    comm_stated: tuple[float, int, int] | None = None  # a share of time the text says communication takes, (src, line)
    training_share: float | None = None  # RLHF: median training-phase time / end-to-end step time
    # RLHF: how much of the step time's growth (last quarter's median over the first's) is generation's own growth
    generation_growth: float | None = None


def compute(model: RunModel, all_clocks: bool = False) -> Metrics:
    """`all_clocks`: also time the steps by every clock the run has (for `compare`, which needs a clock both runs
    share); a report needs only the best one."""
    f = model.facts
    steps = model.frames["steps"]
    series, source = _step_series(steps, f.train_batch_size)
    stats = _stats(series, source) if series is not None and series.height >= 3 else None
    by_clock = clocks(steps, f.train_batch_size) if all_clocks else \
        ({source: (stats, series)} if stats is not None and series is not None else {})
    sps = _samples_per_sec(steps, f.train_batch_size, stats)
    tps = sps * f.seq_len if sps and f.seq_len else None
    mfu, basis = _mfu(tps, f.model_params, f.world_size, f.gpu_name, f.precision, f.num_layers, f.hidden_size,
                      f.seq_len)
    missing = _mfu_missing(sps, f.seq_len, f.model_params, f.world_size, f.gpu_name, f.precision) \
        if mfu is None else ()
    br = _breakdown(model.frames["timers"])
    comms = model.frames["comms"]
    comm_ops = {}
    comm_total = busbw = None
    if comms.height:
        table = comms.filter(pl.col("origin") == "comms_table")
        use = table if table.height else comms.filter(pl.col("origin") != "comms_straggler")
        # the largest first, in the same order on every run (a group_by's order is not)
        agg = use.group_by("op").agg(pl.col("total_latency_ms").sum()).sort(
            ["total_latency_ms", "op"], descending=[True, False], nulls_last=True)
        comm_ops = {r["op"]: float(r["total_latency_ms"] or 0.0) for r in agg.iter_rows(named=True)}
        comm_total = sum(comm_ops.values())
        bw = use.filter(pl.col("busbw_gbps") > 0)["busbw_gbps"]
        busbw = number(bw.median()) if bw.len() else None
    straggler_ms, straggler_ratio = _comm_straggler(comms)
    running_totals = bool(comms.height) and _version(f.versions.get("deepspeed")) >= COMMS_RUNNING_TOTALS_SINCE
    if running_totals:
        busbw = None  # understated by the running totals: not a measurement to quote
    rank_p50, imbalance = _imbalance(model.frames["timers"])
    node_p50, node_imbalance = _imbalance(model.frames["timers"], "node")
    skipped_frac, overflow_late, lowest_scale = _overflow(steps, model.frames["events"])
    flush = _flushes(model.frames["events"])
    flushes = int(flush["count"].fill_null(1).sum()) if flush.height else 0
    first_flush = _step_at(steps, flush.row(0, named=True)) if flush.height else None
    system = model.frames["system"]
    util = _utilization(system)
    per_gpu, pattern, windows = _util_shape(system)
    stall_events = _stalls(model, series)
    return Metrics(steps=stats, step_series=series, samples_per_sec=sps, tokens_per_sec=tps, mfu=mfu,
                   mfu_basis=basis, mfu_missing=missing, breakdown=br, comm_total_ms=comm_total, comm_busbw_gbps=busbw, comm_ops=comm_ops,
                   comm_straggler_ms=straggler_ms, comm_straggler_ratio=straggler_ratio,
                   comm_running_totals=running_totals,
                   rank_step_p50=rank_p50, imbalance=imbalance, node_step_p50=node_p50,
                   node_imbalance=node_imbalance, skipped_fraction=skipped_frac,
                   overflow_after_warmup=overflow_late, loss_scale_min=lowest_scale, allocator_flushes=flushes,
                   first_flush_step=first_flush,
                   stall_events=stall_events, loader_period=_loader_period(stats, stall_events),
                   utilization=util, util_per_gpu=per_gpu,
                   util_pattern=pattern, idle_windows=windows, stalls_in_idle=_coincide(model, windows),
                   wall_s=_wall(steps), printed_vs_wall=_printed_vs_wall(steps),
                   data_wait_share=_data_wait_share(steps, series), data_stalls=_data_stalls(steps),
                   timed_totals=_timed_totals(model.frames["timers"]),
                   generation_share=_phase_share(steps, "generate_time_s"),
                   training_share=_phase_share(steps, "train_time_s"),
                   generation_growth=_generation_growth(steps),
                   peak_mem_gb=_peak_mem(steps, model.frames["memory"]),
                   clocks={k: st for k, (st, _) in by_clock.items()},
                   clock_series={k: ser for k, (_, ser) in by_clock.items()},
                   steps_read=_steps_read(steps), scaling=scaling.compare(model.frames["stated"], steps),
                   comm_stated=scaling.stated_comm_share(model.frames["stated"]),
                   stages=scaling.compare_stages(model.frames["stated"]),
                   stated=scaling.stated_times(model.frames["stated"]))


def _flushes(events: pl.DataFrame) -> pl.DataFrame:
    """Allocator-flush warnings, each once: the warning's tail on the line after its head (a wrapped paste) is the
    same warning."""
    flush = events.filter(pl.col("kind") == "allocator_flush")
    heads = flush.filter(pl.col("origin") != "allocator_flush_tail").select("source", (pl.col("line") + 1).alias("line"))
    tails = flush.filter(pl.col("origin") == "allocator_flush_tail").join(heads, on=["source", "line"], how="anti")
    return pl.concat([flush.filter(pl.col("origin") != "allocator_flush_tail"), tails]).sort("source", "line")


# Wall-clock seconds per step between consecutive step lines (rows sorted by step).
WALL_PER_STEP = (pl.col("ts").diff().dt.total_milliseconds() / 1000.0) / pl.col("global_step").diff()


def _one_rank(rows: pl.DataFrame) -> pl.DataFrame:
    """The lowest rank's rows where ranks are known (every rank prints the same lines); all rows otherwise."""
    first = rows["rank"].drop_nulls().min()
    return rows if first is None else rows.filter(pl.col("rank") == first)


def _step_series(steps: pl.DataFrame, train_batch: int | None) -> tuple[pl.DataFrame | None, str]:
    """-> (step, step_time_s) for one rank, from the step clock (`_ranked_clocks`' first)."""
    ranked = _ranked_clocks(steps, train_batch)
    return (ranked[0][1], ranked[0][0]) if ranked else (None, "")


def clocks(steps: pl.DataFrame, train_batch: int | None) -> dict[str, tuple[StepStats, pl.DataFrame]]:
    """Every step clock the run has -> its statistics and series, the step clock first (compare.common_clock)."""
    return {name: (_stats(series, name), series) for name, series in _ranked_clocks(steps, train_batch)
            if series.height >= 3}


# A clock that times at least this many times as many steps over the same steps as a more trusted one is the finer
# clock (a trainer's per-step line beside DeepSpeed's `steps_per_print` line): it sees single slow steps that an
# every-K-steps average hides.
FINER_CLOCK_STEPS = 2.0


def _ranked_clocks(steps: pl.DataFrame, train_batch: int | None) -> list[tuple[str, pl.DataFrame]]:
    """The run's step clocks in CLOCK_ORDER, except that the first clock that times every step and is finer than
    the most trusted one (FINER_CLOCK_STEPS over the same step numbers) leads. Every step: a line printed every k-th
    step with that one step's time (mlprof's `dt=`) is a sample, not a finer clock. The same steps: its last step
    within one print interval of the trusted clock's, so that a counter of micro-batches or of another loop is not
    taken."""
    ranked = [(name, series) for name in CLOCK_ORDER
              if (series := _CLOCKS[name](steps, train_batch)) is not None]
    if len(ranked) < 2:
        return ranked
    top = ranked[0][1]
    gap = number(top["step"].diff().median() or 1.0)
    for i, (_, series) in enumerate(ranked[1:], start=1):
        last_top, last = top["step"].max(), series["step"].max()
        every = series["step"].diff().median()
        if (series.height >= FINER_CLOCK_STEPS * top.height and every == 1 and last is not None
                and last_top is not None and abs(number(last) - number(last_top)) <= gap):
            return [ranked[i], *ranked[:i], *ranked[i + 1:]]
    return ranked


def _ds_step_clock(steps: pl.DataFrame, _: int | None) -> pl.DataFrame | None:
    """DeepSpeed's `step=N` lines' timestamps, per step (an every-K-steps print divided by the K steps it spans)."""
    ds = steps.filter((pl.col("origin") == "ds_step") & pl.col("ts").is_not_null() & (pl.col("global_step") > 0))
    if ds.height < 4:
        return None
    one = _one_rank(ds).unique("global_step", keep="first").sort("global_step")
    s = one.select(
        pl.col("global_step").alias("step"),
        WALL_PER_STEP.alias("step_time_s"),
        pl.col("ts"),
    ).filter(pl.col("step_time_s").is_not_null() & (pl.col("step_time_s") > 0))
    return s if s.height >= 3 else None


def _steps_read(steps: pl.DataFrame) -> int:
    """Distinct step numbers of the kind that printed the most (one rank); lines without a number count each."""
    rows = steps.filter(pl.col("origin") != "hf_train_runtime")
    if rows.height == 0:
        return 0
    origin = rows["origin"].cast(pl.String).value_counts(sort=True)["origin"][0]
    one = _one_rank(rows.filter(pl.col("origin") == origin))
    numbered = one["global_step"].drop_nulls()
    return int(numbered.n_unique()) + int(one["global_step"].null_count())


def _ds_throughput_clock(steps: pl.DataFrame, train_batch: int | None) -> pl.DataFrame | None:
    tp = steps.filter((pl.col("origin") == "ds_throughput") & (pl.col("samples_per_sec") > 0))
    if tp.height >= 4 and not train_batch and tp["ts"].null_count() == 0:
        # No batch size to turn samples/s into seconds: the lines' own stamps over the steps between them.
        one = _one_rank(tp).unique("global_step", keep="first").sort("global_step")
        s = one.select(pl.col("global_step").alias("step"), WALL_PER_STEP.alias("step_time_s"), "ts").filter(
            pl.col("step_time_s").is_not_null() & (pl.col("step_time_s") > 0))
        return s if s.height >= 3 else None
    if tp.height < 3 or not train_batch:
        return None
    return tp.unique("global_step", keep="first").sort("global_step").select(
        pl.col("global_step").alias("step"), (train_batch / pl.col("samples_per_sec")).alias("step_time_s"),
        pl.col("ts"))


# A bar that ran for less than this share of the longest-running bar's time is a preprocessing pass (a dataset's
# `map` over 25,000 examples in a second), whatever its total.
BAR_TIME_SHARE = 0.1


def _tqdm_clock(steps: pl.DataFrame, _: int | None) -> pl.DataFrame | None:
    """The training bar: of the bars that ran for a while (BAR_TIME_SHARE of the longest), the one with the largest
    total (the training loop's, not an evaluation's)."""
    tq = steps.filter((pl.col("origin") == "tqdm") & pl.col("step_time_s").is_not_null())
    if tq.height < 3:
        return None
    # each bar's running time: its per-step times over the steps between its readings
    ran = (tq.sort("global_step").group_by("total_steps")
           .agg((pl.col("step_time_s") * pl.col("global_step").diff().fill_null(pl.col("global_step").first()))
                .sum().alias("_t")))
    longest = ran["_t"].max()
    if longest is not None and number(longest) > 0:
        ran = ran.filter(pl.col("_t") >= BAR_TIME_SHARE * number(longest))
    total = ran["total_steps"].max()
    train = tq.filter(pl.col("total_steps") == total).unique("global_step", keep="last").sort("global_step")
    return train.select(pl.col("global_step").alias("step"), "step_time_s", "ts")


def _wandb_clock(steps: pl.DataFrame, _: int | None) -> pl.DataFrame | None:
    """A W&B history is a step clock too: each row's `_timestamp` over its step (`train/global_step` or `_step`)."""
    wb = steps.filter((pl.col("origin") == "wandb_history") & pl.col("ts").is_not_null()
                      & pl.col("global_step").is_not_null())
    if wb.height < 4:
        return None
    s = wb.unique("global_step", keep="first").sort("global_step").select(
        pl.col("global_step").alias("step"), WALL_PER_STEP.alias("step_time_s"), "ts"
    ).filter(pl.col("step_time_s").is_not_null() & (pl.col("step_time_s") > 0))
    return s if s.height >= 3 else None


# Kinds whose lines print the time of each step (or of each logged interval, per step) directly.
PRINTED_CLOCKS = ("megatron_iter", "ds_pipe_step", "dschat_rlhf_step", "dschat_step", "progress", "hf_log", "learned")


def _printed_series(steps: pl.DataFrame) -> pl.DataFrame | None:
    """Step times the trainer printed (Megatron's elapsed time per iteration, `time 350ms`, `dt: 0.4s`, ...), or
    timestamp differences between counter lines; one rank, one kind (the one with the most rows)."""
    rows = steps.filter(pl.col("origin").is_in(PRINTED_CLOCKS)
                        & (pl.col("step_time_s").is_not_null()
                           | (pl.col("ts").is_not_null() & pl.col("global_step").is_not_null())))
    if rows.height < 3:
        return None
    origin = rows["origin"].cast(pl.String).value_counts(sort=True)["origin"][0]
    rows = rows.filter(pl.col("origin") == origin)
    rows = _one_rank(rows)
    if rows["step_time_s"].null_count() == rows.height:  # counters with timestamps only
        rows = rows.unique("global_step", keep="first").sort("global_step").with_columns(
            WALL_PER_STEP.alias("step_time_s"))
    out = rows.filter(pl.col("step_time_s").is_not_null() & (pl.col("step_time_s") > 0))
    if out["global_step"].null_count() == 0:
        out = out.unique("global_step", keep="first").sort("global_step")
    else:
        out = out.with_columns(pl.int_range(1, pl.len() + 1, dtype=pl.Int64).alias("global_step"))
    out = out.select(pl.col("global_step").alias("step"), "step_time_s", "ts")
    return out if out.height >= 3 else None


def _printed_vs_wall(steps: pl.DataFrame) -> tuple[float, float] | None:
    """Median printed step time against the median wall-clock time per step between the same lines (one rank)."""
    rows = steps.filter(pl.col("origin").is_in(PRINTED_CLOCKS) & pl.col("step_time_s").is_not_null()
                        & pl.col("ts").is_not_null() & pl.col("global_step").is_not_null())
    if rows.height < 4:
        return None
    rows = _one_rank(rows)
    rows = rows.unique("global_step", keep="first").sort("global_step").with_columns(
        WALL_PER_STEP.alias("_wall"))
    wall = rows["_wall"].drop_nulls().filter(rows["_wall"].drop_nulls() > 0)
    if wall.len() < 3:
        return None
    return number(rows["step_time_s"].median()), number(wall.median())


def _timed_totals(timers: pl.DataFrame) -> tuple[float, ...]:
    glob = timers.filter(~pl.col("microstep") & pl.col("fwd").is_not_null())
    if glob.height == 0:
        return ()
    glob = _one_rank(glob)
    total = pl.col("fwd") + pl.col("bwd").fill_null(0) + pl.col("step").fill_null(0) + pl.col("pipe_comm").fill_null(0)
    return tuple(float(v) for v in glob.select(total)["fwd"].to_list())


def _generation_growth(steps: pl.DataFrame) -> float | None:
    """(generation's last-quarter median - its first's) / (the step's last-quarter median - its first's): near 1
    where the steps grew because the rollouts did (answers get longer as the policy learns)."""
    rows = steps.filter(pl.col("generate_time_s").is_not_null() & (pl.col("step_time_s") > 0)).sort("global_step")
    q = rows.height // 4
    if q < 2:
        return None
    first, last = rows.head(q), rows.tail(q)
    grew = number(last["step_time_s"].median()) - number(first["step_time_s"].median())
    if grew <= 0:
        return None
    gen = last["generate_time_s"].median(), first["generate_time_s"].median()
    return (number(gen[0]) - number(gen[1])) / grew


def _phase_share(steps: pl.DataFrame, phase: str) -> float | None:
    """An RL step's phase (generation, training) over the end-to-end step: the median of its per-step share."""
    rows = steps.filter(pl.col(phase).is_not_null() & (pl.col("step_time_s") > 0))
    if rows.height < 3:
        return None
    return number((rows[phase] / rows["step_time_s"]).median())


# see_memory_usage labels that are printed inside training steps (the rest are initialisation: partitions created,
# optimizer states initialised, ZeRO-3's offload set up).
_STEP_MEMORY_LABEL = r"(?i)forward|backward|\bstep\b|iteration|train"


def _peak_mem(steps: pl.DataFrame, memory: pl.DataFrame) -> float | None:
    """The training peak: DeepSpeed's per-step MaxMemAllocated, and memory lines printed after a source's first
    step line. Memory printed before any step (initialisation) is not the training peak; in a source without step
    lines only lines labelled as part of a step count."""
    first = steps.group_by("source").agg(pl.col("line").min().alias("_first"))
    mem = memory.join(first, on="source", how="left").filter(
        pl.when(pl.col("_first").is_not_null()).then(pl.col("line") > pl.col("_first"))
        .otherwise(pl.col("label").fill_null("").str.contains(_STEP_MEMORY_LABEL)))
    values = [number(v) for v in (steps["max_mem_alloc_gb"].max(), mem["max_ma_gb"].max()) if v is not None]
    return max(values) if values else None


def _data_stalls(steps: pl.DataFrame) -> tuple[float, int, float] | None:
    """The data waits' share of the time. A trainer that prints a wait longer than its step time keeps the wait out
    of the step (`load_data_time: 19.6, train_step_time: 0.69`): the two add up; otherwise the step holds the wait
    (PyTorch's ProgressMeter: `Time` is the whole iteration, `Data` a part of it)."""
    rows = steps.filter(pl.col("data_time_s").is_not_null() & (pl.col("step_time_s") > 0)).sort("global_step")
    if rows.height > WARMUP_STEPS + 3:
        rows = rows.slice(WARMUP_STEPS)
    # Only where every step is printed: a line every 50 iterations is one iteration's wait, and the one at an
    # epoch's first batch (the workers starting) would stand for fifty.
    if rows.height < 3 or rows["global_step"].diff().drop_nulls().median() != 1:
        return None
    data, step = rows["data_time_s"], rows["step_time_s"]
    outside = bool((data > step).any())
    total = float(step.sum()) + (float(data.sum()) if outside else 0.0)
    if not total:
        return None
    worst = rows.row(int(data.arg_max() or 0), named=True)
    return float(data.sum()) / total, int(worst["global_step"] or 0), float(worst["data_time_s"])


def _data_wait_share(steps: pl.DataFrame, series: pl.DataFrame | None) -> float | None:
    rows = steps.filter(pl.col("data_time_s").is_not_null() & (pl.col("step_time_s") > 0))
    if rows.height:
        return number((rows["data_time_s"] / rows["step_time_s"]).median())
    if series is None:
        return None
    # A trainer that prints its data wait but not its step time (`data 0.490s, speed 301.2 ex/s`): the wait against
    # the step clock's time at the same step (the lines' timestamps, a cumulative time, a rate), which is a whole
    # step's wall time, so a wait longer than it is not one step's (a sum over the print interval): no share.
    waits = steps.filter(pl.col("data_time_s").is_not_null() & pl.col("global_step").is_not_null()) \
        .select(pl.col("global_step").alias("step"), "data_time_s").unique("step", keep="first")
    both = waits.join(series.select("step", "step_time_s"), on="step").filter(pl.col("step_time_s") > 0)
    if both.height < 3:
        return None
    share = number((both["data_time_s"] / both["step_time_s"]).median())
    return share if share <= WALL_WAIT_MAX else None


def steady_level(times: pl.Series) -> float:
    """The steady step time: the median of the steps that are not stalls against the lower quartile. When every
    second step stalls (nanoGPT evaluating and saving every 2 iterations) the plain median is itself a stalled step;
    elsewhere the two agree. The statistics, the goodput account and the costs all take the steady level from here."""
    t = times.drop_nulls()
    if t.len() == 0:
        return 0.0
    base = number(t.quantile(0.25, "lower"))
    calm = t.filter(t < SPIKE_FACTOR * base) if base > 0 else t
    return number((calm if calm.len() else t).median())


def _stats(series: pl.DataFrame, source: str) -> StepStats:
    body = series.filter(pl.col("step") > WARMUP_STEPS) if series.height > WARMUP_STEPS + 3 else series
    if body["step_time_s"].drop_nulls().len() < 3:  # counted from below zero, or by some other count: all of it
        body = series
    t = body["step_time_s"]
    p50 = number(t.median())
    # Against the lower quartile: when every second step stalls (nanoGPT evaluating and saving every 2 iterations)
    # the median is itself a stalled step.
    base = number(t.quantile(0.25, "lower"))
    # A stall also stands out from the steps beside it: in a run whose steps slow down steadily (a ramp), the late
    # steps are long but their neighbours are as long, and none of them is a stall.
    x = pl.col("step_time_s")
    beside = pl.min_horizontal(x.shift(1), x.shift(-1)).fill_null(x.shift(1).fill_null(x.shift(-1)))
    spikes = body.filter((x >= SPIKE_FACTOR * base) & (x >= SPIKE_FACTOR * beside).fill_null(True))["step"].to_list()
    period = spike_period(spikes, body.filter(pl.col("step").is_in(spikes))["step_time_s"].to_list() if spikes else [])
    quarters: tuple[float, ...] = ()
    if body.height >= 8:
        q = body.height // 4
        quarters = tuple(number(body.slice(i * q, q)["step_time_s"].median()) for i in range(4))
    return StepStats(source, body.height, p50, number(t.quantile(0.9)), number(t.max()), number(t.mean()),
                     tuple(int(s) for s in spikes), period, quarters[0] if quarters else None,
                     quarters[-1] if quarters else None, quarters, rising_p(t) if quarters else None)


def rising_p(times: pl.Series) -> float:
    """The one-sided Mann-Kendall p-value that the series rises: how often noise alone orders its values at least
    this much in the rising direction (S, the sum of sign(x_j - x_i) over pairs i < j, against its variance under no
    trend, corrected for tied values, which printed step times have many of). A long series is tested as the
    medians of TREND_POINTS equal blocks."""
    t = times.drop_nulls()
    if t.len() > TREND_POINTS:
        block = pl.int_range(pl.len()) * TREND_POINTS // pl.len()
        t = pl.DataFrame({"t": t}).group_by(block.alias("b"), maintain_order=True).agg(pl.col("t").median())["t"]
    x = t.to_list()
    n = len(x)
    if n < 3:
        return 1.0
    s = sum((b > a) - (b < a) for i, a in enumerate(x) for b in x[i + 1:])
    ties = Counter(x).values()
    var = (n * (n - 1) * (2 * n + 5) - sum(c * (c - 1) * (2 * c + 5) for c in ties)) / 18
    if var <= 0 or s <= 0:
        return 1.0
    z = (s - 1) / math.sqrt(var)  # continuity correction
    return 0.5 * math.erfc(z / math.sqrt(2))


def spike_period(spikes: list[int], times: list[float]) -> int | None:
    """The interval at which stalls recur, or None. Evenly spaced spikes are periodic; so is a distance p at which
    half the spikes (or the spikes that hold half their time) have another spike, within PERIOD_TOLERANCE of p,
    PERIOD_MIN of them in a row and more than PERIOD_MIN on it (three spikes at nearly equal distances among others
    happen by chance): a run prints other spikes too (one slow step among 29 evaluations), and two
    periodic events interleave (nanoGPT's evaluation every 250 steps and its data-shard boundary every ~190.7). Of
    such distances the one whose spikes hold the most time is named (the costly event, not the frequent one), the
    shortest of near-equals (not a multiple of it)."""
    if len(spikes) < PERIOD_MIN:  # two spikes always look "regular"
        return None
    gaps = [b - a for a, b in zip(spikes, spikes[1:])]
    if max(gaps) - min(gaps) <= max(1, 0.1 * min(gaps)):
        return int(round(sum(gaps) / len(gaps)))
    events = [s for s, gap in zip(spikes, [PERIOD_SAME_EVENT + 1, *gaps]) if gap > PERIOD_SAME_EVENT]
    apart = [b - a for a, b in zip(events, events[1:])]
    if len(events) >= PERIOD_MIN and min(apart) >= PERIOD_EVENTS_FROM \
            and max(apart) - min(apart) <= max(PERIOD_SAME_EVENT, 0.1 * min(apart)):
        return int(round(sum(apart) / len(apart)))
    at = set(spikes)
    weight = dict(zip(spikes, times)) if len(times) == len(spikes) else dict.fromkeys(spikes, 1.0)
    total = sum(weight.values())
    candidates = Counter(b - a for i, a in enumerate(spikes) for b in spikes[i + 1:i + 1 + PERIOD_NEIGHBOURS])
    eligible: dict[int, float] = {}
    for p, _ in candidates.most_common(PERIOD_CANDIDATES):
        if p < PERIOD_SHORTEST:
            continue
        tol = round(PERIOD_TOLERANCE * p)
        near = range(p - tol, p + tol + 1)
        on = [s for s in spikes if any(s + d in at or s - d in at for d in near)]
        # and one run of PERIOD_MIN in a row: two pairs of spikes the same distance apart are not yet a period
        chained = any(any(s + d in at and any(s + d + e in at for e in near) for d in near) for s in on)
        held = sum(weight[s] for s in on)
        if chained and len(on) > PERIOD_MIN and (len(on) >= PERIOD_SHARE * len(spikes) or held >= PERIOD_SHARE * total):
            eligible[p] = held
    if not eligible:
        return None
    # a multiple of the period pairs a few more spikes by chance (its tolerance is wider): the shortest that holds
    # nearly as much
    most = max(eligible.values())
    return min(p for p, held in eligible.items() if held >= PERIOD_EQUAL * most)


def _samples_per_sec(steps: pl.DataFrame, train_batch: int | None, stats: StepStats | None) -> float | None:
    tp = steps.filter((pl.col("origin").is_in(["ds_throughput", "ds_throughput_v07", "ds_throughput_v05"]))
                      & (pl.col("samples_per_sec") > 0))
    if tp.height:
        return number(tp["samples_per_sec"].median())
    rt = steps.filter(pl.col("origin").is_in(["hf_train_runtime", "trainer_state_runtime"])
                      & (pl.col("samples_per_sec") > 0))
    if rt.height:
        return float(rt["samples_per_sec"][0])
    if stats and train_batch:
        return train_batch / stats.p50_s
    return None


def _mfu(tps: float | None, params: int | None, gpus: int | None, gpu: str | None, precision: str | None,
         layers: int | None = None, hidden: int | None = None, seq: int | None = None) -> tuple[float | None, str | None]:
    """PaLM's MFU (Chowdhery et al. 2022, appendix B): tokens/s x (6N + 12 L H Q T) over the GPUs' peak, where
    H x Q is the model width; without the shape only the 6N term is counted (an underestimate for long T)."""
    peak = hardware.peak_tflops(gpu, precision)
    if not (tps and params and gpus and peak):
        return None, None
    per_token = 6 * params
    basis = "6N"
    if layers and hidden and seq:
        per_token += 12 * layers * hidden * seq
        basis = "6N + 12LHQT"
    return tps * per_token / (gpus * peak * 1e12), f"{basis} x tokens/s over {gpus} x {peak:.0f} TFLOP/s ({precision})"


def _mfu_missing(sps: float | None, seq: int | None, params: int | None, gpus: int | None, gpu: str | None,
                 precision: str | None) -> tuple[str, ...]:
    """What MFU needed and the logs did not give, in words (issue 23)."""
    out = []
    if not sps:
        out.append("samples per second (or a step time and the global batch)")
    if not seq:
        out.append("the sequence length (--seq-len)")
    if not params:
        out.append("the parameter count")
    if not gpus:
        out.append("the GPU count")
    if not gpu or hardware.gpu_model(gpu) is None:
        out.append("the GPU model" if not gpu else f"a peak-FLOPs figure for {gpu}")
    elif not precision:
        out.append("the precision (bf16 / fp16 / fp32)")
    elif hardware.peak_tflops(gpu, precision) is None:
        out.append(f"a {precision} peak for {gpu}")
    return tuple(out)


def _breakdown(timers: pl.DataFrame) -> Breakdown | None:
    """Medians of the global timers; the `*_microstep` timers where those are absent or all zero (DeepSpeed 0.9.x
    prints the global line as zeros). Pipeline point-to-point waits count in the timed total."""
    glob = timers.filter(~pl.col("microstep") & pl.col("fwd").is_not_null())
    if glob.height == 0 or not ((glob["fwd"].fill_null(0) + glob["bwd"].fill_null(0)) > 0).any():
        glob = timers.filter(pl.col("microstep") & pl.col("fwd").is_not_null())
    if glob.height == 0:
        return None
    glob = glob.filter(pl.col("seq") >= WARMUP_STEPS) if glob.height > WARMUP_STEPS + 2 else glob
    cols = ("fwd", "bwd", "bwd_inner", "bwd_allreduce", "step", "pipe_comm")
    m = glob.select(pl.col(c).median() for c in cols).row(0, named=True)
    fwd, bwd, step, pipe = m["fwd"] or 0.0, m["bwd"] or 0.0, m["step"] or 0.0, m["pipe_comm"] or 0.0
    allreduce = m["bwd_allreduce"]
    inner = m["bwd_inner"] if m["bwd_inner"] is not None else (bwd - allreduce if allreduce is not None else bwd)
    total = fwd + bwd + step + pipe
    if total <= 0:
        return None
    shares = {"fwd": fwd / total, "bwd": (inner or 0.0) / total, "allreduce": (allreduce or 0.0) / total,
              "optimizer": step / total}
    if pipe:
        shares["pipeline_p2p"] = pipe / total
    gather = timers["optimizer_allgather"].drop_nulls()
    gather_ms = number(gather.median()) if gather.len() else None
    return Breakdown(fwd, inner, allreduce, step, total, shares,
                     gather_ms if gather_ms is not None and 0 <= gather_ms <= step else None)


def _version(text: str | None) -> tuple[int, ...]:
    """`0.19.8` / `0.18.3+abc` -> (0, 19, 8); unknown -> ()."""
    parts = re.findall(r"\d+", (text or "").split("+")[0])[:3]
    return tuple(int(p) for p in parts)


def _comm_straggler(comms: pl.DataFrame) -> tuple[float | None, float | None]:
    rows = comms.filter(pl.col("origin") == "comms_straggler")
    if not rows.height:
        return None, None
    fastest = float(rows["total_latency_ms"].sum())
    waited = float(rows["total_straggler_ms"].sum())
    return waited, ((fastest + waited) / fastest if fastest > 0 else None)


# A rank's timed step from its global timer line, seconds (forward + backward + optimizer step).
TIMED_STEP_S = (pl.col("fwd") + pl.col("bwd").fill_null(0) + pl.col("step").fill_null(0)) / 1000.0


def _imbalance(timers: pl.DataFrame, by: str = "rank") -> tuple[dict[Any, float], float | None]:
    """Median timed step per rank (or per node) and the slowest one's ratio to the median."""
    glob = timers.filter(~pl.col("microstep") & pl.col("fwd").is_not_null() & pl.col(by).is_not_null())
    if glob.height == 0 or glob[by].n_unique() < 2:
        return {}, None
    per = glob.group_by(by).agg(TIMED_STEP_S.median().alias("p50")).sort(by)
    out = {(int(k) if by == "rank" else str(k)): float(v) for k, v in per.iter_rows()}
    med = number(per["p50"].median())
    return out, (max(out.values()) / med if med > 0 else None)


def _overflow(steps: pl.DataFrame, events: pl.DataFrame) -> tuple[float | None, int, float | None]:
    """-> (skipped fraction after the loss-scale warm-up, overflows after it, lowest loss scale reached).

    The fraction comes from the best counter a log has: DeepSpeed's cumulative `skipped=` (over the second half of
    the run), Megatron's per-interval `number of skipped iterations` (after the leading intervals of the warm-up
    cascade), else overflow messages (once per step, parsers/run_model.once_per_step) over the steps the log shows
    from the first late overflow on."""
    over = events.filter(pl.col("kind") == "overflow")
    scales = events.filter(pl.col("kind").is_in(["overflow", "loss_scale"]))["value_to"].drop_nulls()
    lowest = number(scales.min()) if scales.len() else None
    counted = steps.filter(pl.col("global_step").is_not_null() & pl.col("origin").is_in(OVERFLOW_STEP_CLOCKS))
    at = counted.select("source", "line", pl.col("global_step").alias("global_step_at")).sort("line")
    over_steps = over.sort("source", "line").join_asof(at.sort("source", "line"), on="line", by="source",
                                                      strategy="backward", check_sortedness=False) \
        if counted.height else \
        over.with_columns(pl.lit(None, pl.Int64).alias("global_step_at"))
    warm = pl.col("global_step_at").is_not_null() & (pl.col("global_step_at") <= FP16_WARMUP_STEPS)
    late_rows = over_steps.filter(~warm) if counted.height else over_steps.slice(FP16_WARMUP_OVERFLOWS)
    late = late_rows.height
    ds = steps.filter((pl.col("origin") == "ds_step") & pl.col("skipped").is_not_null()).sort("global_step")
    if ds.height >= 4:
        # The rate over the second half of the run: the fp16 loss-scale warm-up at the start skips steps by design.
        mid, last = ds.row(ds.height // 2, named=True), ds.row(-1, named=True)
        span = (last["global_step"] or 0) - (mid["global_step"] or 0)
        if span > 0:
            return float(last["skipped"] - mid["skipped"]) / span, late, lowest
    if ds.height and (ds["global_step"][-1] or 0) > 2 * FP16_WARMUP_STEPS:
        # A paste cut to a few lines: the last cumulative counter over the run, the warm-up's skips allowed for.
        last = ds.row(-1, named=True)
        return (float(max(0, last["skipped"] - FP16_WARMUP_STEPS)) / (last["global_step"] - FP16_WARMUP_STEPS),
                late, lowest)
    meg = steps.filter((pl.col("origin") == "megatron_iter") & pl.col("skipped_iters").is_not_null()).sort("global_step")
    if meg.height >= 2:
        interval = meg["global_step"].diff().drop_nulls()
        step = int(number(interval.median())) if interval.len() else 1
        cascade = meg.with_columns((pl.col("skipped_iters") == 0).cum_max().alias("_past"))
        after = cascade.filter(pl.col("_past"))
        if after.height:
            return float(after["skipped_iters"].sum()) / (after.height * max(step, 1)), late, lowest
    if late and counted.height:
        first = late_rows["global_step_at"].drop_nulls().min()
        window = counted.filter(pl.col("global_step") >= first)["global_step"].n_unique() if first is not None else 0
        if window:
            return min(1.0, late / window), late, lowest
    return None, late, lowest


# Step lines an event (an overflow, a checkpoint save) can be placed after: the lines that count optimizer steps.
OVERFLOW_STEP_CLOCKS = ("ds_step", "ds_throughput", "tqdm", "hf_log", "megatron_iter", "progress")
FP16_WARMUP_STEPS = 32  # DeepSpeed starts the loss scale at 2^16 (2^32 before 0.3): the halvings end by ~step 32
FP16_WARMUP_OVERFLOWS = 20  # without step numbers: 2^16 down to ~2^0 is 16 halvings; a few more for hysteresis


def _step_at(steps: pl.DataFrame, row: dict[str, Any]) -> int | None:
    """The optimizer step at the time (or line) of an event: the last step line before it."""
    ds = steps.filter((pl.col("source") == row["source"]) & pl.col("global_step").is_not_null()
                      & (pl.col("line") <= row["line"]) & pl.col("origin").is_in(OVERFLOW_STEP_CLOCKS))
    return whole(ds["global_step"].max()) if ds.height else None


def _loader_period(stats: StepStats | None, events: tuple[tuple[str, int | None, float | None], ...]) -> int | None:
    if stats is None or stats.spike_period is None or stats.spike_period > LOADER_PERIOD_MAX:
        return None
    at = {step for _, step, _ in events}
    if None in at or any(s in at or s - 1 in at for s in stats.spikes):  # a save whose step is unknown may be it
        return None
    return stats.spike_period


def _stalls(model: RunModel, series: pl.DataFrame | None) -> tuple[tuple[str, int | None, float | None], ...]:
    """Checkpoint saves and evals, with the step they happened at and how long the step after them took."""
    ev = model.frames["events"].filter(pl.col("kind").is_in(["checkpoint_save", "eval", "eval_result"]))
    if ev.height == 0:
        return ()
    out = []
    steps = model.frames["steps"]
    seen: set[tuple[str, int | None]] = set()
    for row in ev.iter_rows(named=True):
        step = _step_at(steps, row)
        key = ("checkpoint" if row["kind"] == "checkpoint_save" else "eval", step)
        if key in seen:
            continue
        seen.add(key)
        stall = None
        if series is not None and step is not None:
            nxt = series.filter(pl.col("step") == step + 1)
            if nxt.height:
                stall = float(nxt["step_time_s"][0])
        if row["kind"] == "eval_result" and row["value_from"] is not None:
            stall = float(row["value_from"])
        out.append((key[0], step, stall))
    return tuple(out)


def _util_shape(system: pl.DataFrame) -> tuple[dict[int, float], str | None, tuple[tuple[datetime, datetime, float], ...]]:
    """Per-GPU means, the utilization pattern, and the windows in which every GPU was idle (one clock: the
    samples' own timestamps)."""
    util = system.filter((pl.col("metric") == "gpu") & pl.col("gpu").is_not_null() & pl.col("ts").is_not_null())
    if util.height < 4:
        return {}, None, ()
    per_gpu = {int(g): float(v)
               for g, v in util.group_by("gpu").agg(pl.col("value").mean()).sort("gpu").iter_rows()}
    v = util["value"]
    low, high = number((v < 20).mean()), number((v > 80).mean())
    by_ts = util.group_by("ts").agg(pl.col("value").max().alias("busiest")).sort("ts")
    idle = by_ts.with_columns((pl.col("busiest") < IDLE_UTIL).alias("idle"))
    idle = idle.with_columns((pl.col("idle") != pl.col("idle").shift(1)).fill_null(True).cum_sum().alias("run"))
    runs = idle.filter(pl.col("idle")).group_by("run").agg(pl.col("ts").min().alias("start"),
                                                            pl.col("ts").max().alias("end"), pl.len().alias("n"))
    windows = tuple((r["start"], r["end"], max(15.0, (r["end"] - r["start"]).total_seconds()))
                    for r in runs.sort("start").iter_rows(named=True) if r["n"] >= IDLE_MIN_SAMPLES)
    if windows and low < SAWTOOTH_SHARE * 2:
        pattern = "gaps"
    elif low >= SAWTOOTH_SHARE and high >= SAWTOOTH_SHARE:
        pattern = "sawtooth"
    elif number(v.std() or 0.0) < FLAT_STD:
        pattern = "flat"
    else:
        pattern = "varied"
    return per_gpu, pattern, windows


def _coincide(model: RunModel, windows: tuple[tuple[datetime, datetime, float], ...]) -> tuple[tuple[str, int | None, float], ...]:
    """Checkpoint saves and evals whose log timestamp falls in (or within a sample of) an all-GPUs-idle window."""
    if not windows:
        return ()
    ev = model.frames["events"].filter(pl.col("kind").is_in(["checkpoint_save", "eval"]) & pl.col("ts").is_not_null())
    out, seen = [], set()
    slack = 20.0  # one W&B sample period (15 s) plus clock skew between the log and the monitor
    for row in ev.iter_rows(named=True):
        for start, end, secs in windows:
            if (start - row["ts"]).total_seconds() <= slack and (row["ts"] - end).total_seconds() <= slack:
                key = (row["kind"], start)
                if key not in seen:
                    seen.add(key)
                    out.append(("checkpoint" if row["kind"] == "checkpoint_save" else "eval",
                                _step_at(model.frames["steps"], row), secs))
                break
    return tuple(out)


def _utilization(system: pl.DataFrame) -> dict[str, float]:
    if system.height == 0:
        return {}
    out: dict[str, float] = {}
    for metric, name in (("gpu", "util"), ("memoryAllocated", "mem"), ("powerPercent", "power")):
        v = system.filter(pl.col("metric") == metric)["value"]
        if v.len():
            out[f"{name}_mean"] = number(v.mean())
            out[f"{name}_p10"] = number(v.quantile(0.1))
            out[f"{name}_max"] = number(v.max())
    return out


def _wall(steps: pl.DataFrame) -> float | None:
    ts = steps["ts"].drop_nulls()
    if ts.len() < 2:
        rt = steps.filter(pl.col("train_runtime_s").is_not_null())["train_runtime_s"]
        return float(rt[0]) if rt.len() else None
    return between(ts.max(), ts.min())


# Each step clock's series, by its name in diagnose/clocks.py (whose order is the precedence).
_CLOCKS = {"ds_step_ts": _ds_step_clock, "printed": lambda steps, _: _printed_series(steps),
           "ds_throughput": _ds_throughput_clock, "tqdm": _tqdm_clock, "wandb_history": _wandb_clock}
CLOCK_ORDER = clock_table.ORDER
assert set(_CLOCKS) == set(CLOCK_ORDER), "a clock declared in diagnose/clocks.py without its series here"
