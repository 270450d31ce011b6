"""Where the time went: a goodput account of a run from the lines it printed (issue 23).

The run's span (its first to its last timestamped line) times its GPUs is split into parts that add up to it:
startup (first line to the first step), warm-up (the leading steps above the steady level, their excess), steps (the
steady level, split where timers or data timing measured it), stalls (checkpoint saves, evaluation and other spikes,
their excess, each tied to the lines around it), restarts (the gap between launches and the steps done twice) and
the tail (last step to last line). Without timestamps the steps' own times are the clock and what lies around them
is unknown, never folded into the steps. Google's ml-goodput-measurement splits badput the same way (startup,
compilation, data loading, checkpoints, disruptions) but needs recorder calls; this reads what a run already printed
(../shared/reference/goodput_stragglers.md).
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import timedelta

import polars as pl

from diagnose.metrics import OVERFLOW_STEP_CLOCKS, SPIKE_FACTOR, Metrics
from diagnose.parsers.run_model import RunModel

# A leading step is warm-up while it runs 10% or more above the steady level: Greyhound's (ATC'25) gate between a
# slowdown and noise.
WARMUP_GATE = 1.10
WARMUP_MAX_SHARE = 0.25  # warm-up is at most the first quarter of a launch's step lines (a slow run is not warm-up)
# An interval is a stall when it holds at least one extra step's time beyond the steady level (SPIKE_FACTOR: the
# same cut as a spike in the step statistics), or half a step's where a checkpoint or evaluation line sits in it.
STALL_EXTRA_STEPS = SPIKE_FACTOR - 1.0
STALL_EXTRA_WITH_EVENT = 0.5
STALL_EVENTS = {"checkpoint_save": "checkpoint", "eval": "evaluation", "eval_result": "evaluation"}
# Lines a launch prints once as it starts: one between two step lines (by time) marks a restart even when the steps
# carry on from the checkpoint without going back.
LAUNCH_MARKERS = ("ds_version", "ds_world_info", "ds_cmd", "hf_running_training", "accelerate_env", "ds_nnodes")
CLOCK_ORIGINS = (*OVERFLOW_STEP_CLOCKS, "ds_pipe_step", "dschat_step", "dschat_rlhf_step", "wandb_history")
TIMESTAMPED_FRAMES = ("steps", "timers", "memory", "events", "facts", "env", "nccl", "comms", "progress", "system")

PART_ORDER = ("startup", "warmup", "steps", "stalls", "restarts", "tail", "unknown")
PART_LABELS = {"startup": "startup", "warmup": "warm-up / compile", "steps": "steady steps", "stalls": "stalls",
               "restarts": "restarts", "tail": "tail", "unknown": "unknown"}


@dataclass(frozen=True, kw_only=True)
class Piece:
    """One part of the account (or a sub-part of one). `seconds` None: it could not be measured."""

    name: str
    seconds: float | None
    basis: str
    evidence: tuple[tuple[int, int], ...] = ()  # (source id, line) of the lines it rests on
    step: int | None = None  # for a stall or a restart: the step it happened at
    pieces: tuple[Piece, ...] = ()


@dataclass(frozen=True, kw_only=True)
class Account:
    clock: str  # "timestamps" (line times) | "step times" (printed or derived per-step times only)
    span_s: float | None  # first to last timestamped line; None without timestamps
    gpus: int | None
    steps: int  # optimizer steps the step lines cover (distinct)
    steady_step_s: float
    parts: tuple[Piece, ...]
    launches: int = 1
    device: str = "GPUs"  # "processes" for a CPU run (RunFacts.cpu_run): what `gpus` counts

    def part(self, name: str) -> Piece | None:
        return next((p for p in self.parts if p.name == name), None)

    @property
    def measured_s(self) -> float:
        return sum(p.seconds or 0.0 for p in self.parts)

    @property
    def goodput(self) -> float | None:
        """The steady steps' share of the span; None where the span is not known."""
        steps = self.part("steps")
        if self.span_s is None or not self.span_s or steps is None or steps.seconds is None:
            return None
        return steps.seconds / self.span_s

    @property
    def restart_steps(self) -> tuple[int, ...]:
        part = self.part("restarts")
        return tuple(p.step for p in part.pieces if p.step is not None) if part else ()

    def gpu_hours(self, seconds: float | None) -> float | None:
        return None if seconds is None or not self.gpus else seconds * self.gpus / 3600.0


def account(model: RunModel, metrics: Metrics) -> Account | None:
    """The run's goodput account, or None where it has no clock at all."""
    acc = _account(model, metrics)
    if acc is not None and model.facts.cpu_run:
        acc = replace(acc, device="processes")
    return acc


def _account(model: RunModel, metrics: Metrics) -> Account | None:
    rows = _clock_rows(model.frames["steps"])
    gpus = model.facts.world_size
    if rows is not None:
        return _from_timestamps(model, metrics, rows, gpus)
    if metrics.step_series is not None and metrics.step_series.height >= 3:
        return _from_step_times(metrics.step_series, metrics, gpus, "the steps' printed times")
    if len(metrics.timed_totals) >= 3:  # no step lines: the timers' per-step totals are the clock
        totals = pl.DataFrame({"step": range(1, len(metrics.timed_totals) + 1),
                               "step_time_s": [ms / 1000.0 for ms in metrics.timed_totals]})
        return _from_step_times(totals, metrics, gpus, "the per-step timer totals (forward + backward + step)")
    return None


def _clock_rows(steps: pl.DataFrame) -> pl.DataFrame | None:
    """One rank's step lines with a timestamp and a step, of the step kind that has the most, in time order (not
    deduplicated: a step printed again after a restart is the restart's evidence)."""
    rows = steps.filter(pl.col("origin").is_in(CLOCK_ORIGINS) & pl.col("ts").is_not_null()
                        & pl.col("global_step").is_not_null())
    if rows.height < 3:
        return None
    origin = rows["origin"].cast(pl.String).value_counts(sort=True)["origin"][0]
    rows = rows.filter(pl.col("origin") == origin)
    first = rows["rank"].drop_nulls().min()
    if first is not None:
        rows = rows.filter(pl.col("rank") == first)
    rows = rows.unique(["source", "line"], keep="first").sort("ts", "source", "line")
    # Two lines of one step in a row (a step line printed twice by a logger with two handlers) are one.
    rows = rows.filter(pl.col("global_step") != pl.col("global_step").shift(1).fill_null(-1))
    return rows.select("source", "line", "ts", "global_step", "step_time_s") if rows.height >= 3 else None


def _ends(model: RunModel) -> tuple[object, object, tuple[int, int], tuple[int, int]]:
    """The first and last timestamp any frame holds, and where they were printed."""
    parts = [model.frames[name].select("source", "line", "ts").filter(pl.col("ts").is_not_null())
             for name in TIMESTAMPED_FRAMES if name in model.frames and "ts" in model.frames[name].columns]
    stamped = pl.concat([p.with_columns(pl.col("source").cast(pl.Int64), pl.col("line").cast(pl.Int64),
                                        pl.col("ts").cast(pl.Datetime("ms"))) for p in parts if p.height])
    first = stamped.sort("ts", "source", "line").row(0, named=True)
    last = stamped.sort("ts", "source", "line").row(-1, named=True)
    return first["ts"], last["ts"], (first["source"], first["line"]), (last["source"], last["line"])


def _launch_marks(model: RunModel) -> pl.Series:
    facts = model.frames["facts"]
    marks = facts.filter(pl.col("origin").is_in(LAUNCH_MARKERS) & pl.col("ts").is_not_null())
    return marks["ts"].cast(pl.Datetime("ms")).unique().sort()


def _intervals(rows: pl.DataFrame, marks: pl.Series) -> pl.DataFrame:
    """Each step line with the interval that ends at it: seconds, steps, the launch it belongs to."""
    rows = rows.with_columns(pl.col("ts").cast(pl.Datetime("ms")))
    prev_ts = pl.col("ts").shift(1)
    regress = pl.col("global_step") <= pl.col("global_step").shift(1)
    out = rows.with_columns(
        ((pl.col("ts") - prev_ts).dt.total_milliseconds() / 1000.0).alias("dur"),
        (pl.col("global_step") - pl.col("global_step").shift(1)).alias("n"),
        regress.fill_null(False).alias("regress"),
        pl.col("line").shift(1).alias("prev_line"), pl.col("source").shift(1).alias("prev_source"),
        prev_ts.alias("prev_ts"))
    if marks.len():
        # A launch marker strictly between two step lines starts a new launch.
        idx = marks.search_sorted(out["ts"], side="left") - marks.search_sorted(out["prev_ts"].fill_null(out["ts"]),
                                                                               side="right")
        out = out.with_columns((pl.Series(idx) > 0).alias("_marked"))
    else:
        out = out.with_columns(pl.lit(False).alias("_marked"))
    out = out.with_columns((pl.col("regress") | pl.col("_marked")).alias("restart"))
    out = out.with_columns(pl.col("restart").cast(pl.Int32).cum_sum().alias("launch"))
    # A launch's first line: the interval before it is not a step interval (startup or the restart's gap).
    first = pl.col("launch") != pl.col("launch").shift(1).fill_null(-1)
    return out.with_columns(pl.when(first).then(None).otherwise(pl.col("dur")).alias("dur"),
                            pl.when(first).then(None).otherwise(pl.col("n")).alias("n"), first.alias("first"))


def _first_interval(launch: pl.DataFrame) -> tuple[float | None, int]:
    """The time and steps of a launch's first logged interval where the line prints its own step time (Megatron's
    elapsed time per iteration averages over the logging interval): else unknown."""
    steps = launch["n"].drop_nulls()
    every = int(steps.median()) if steps.len() else 1  # type: ignore[arg-type]
    row = launch.row(0, named=True)
    per = row["step_time_s"]
    if per is None or per <= 0:
        return None, every
    n = min(every, max(1, int(row["global_step"])))
    return per * n, n


def _from_timestamps(model: RunModel, metrics: Metrics, rows: pl.DataFrame, gpus: int | None) -> Account | None:
    t0, t_end, first_at, last_at = _ends(model)
    iv = _intervals(rows, _launch_marks(model))
    body = iv.filter(pl.col("dur").is_not_null() & (pl.col("n") > 0) & (pl.col("dur") >= 0))
    if body.height < 2:
        return None
    per_step = body["dur"] / body["n"]
    level = float(per_step.median())  # type: ignore[arg-type]
    if level <= 0:
        return None
    launches = iv.partition_by("launch", maintain_order=True)
    events = model.frames["events"].filter(pl.col("kind").is_in(list(STALL_EVENTS)))
    warm_s = steps_s = 0.0
    stalls: list[Piece] = []
    restarts: list[Piece] = []
    startup_s = 0.0
    prev_end_ts, prev_max_step = None, None
    prev_launch_lines: list[tuple[int, int]] = []
    n_steps = int(body["n"].sum())
    for k, launch in enumerate(launches):
        head = launch.row(0, named=True)
        first_s, first_n = _first_interval(launch)
        start_ts = head["ts"]
        first_step_from = int(head["global_step"]) - first_n
        if first_s is not None:
            start_ts = head["ts"] - timedelta(seconds=first_s)
            steps_s += min(first_s, first_n * level)
            warm_s += max(0.0, first_s - first_n * level)
            n_steps += first_n
        lead = (start_ts - (t0 if k == 0 else prev_end_ts)).total_seconds()
        if k == 0:
            startup_s = max(0.0, lead)
        else:
            redone = max(0, (prev_max_step or 0) - first_step_from)
            redo_s = min(redone * level, steps_s)
            steps_s -= redo_s  # those steps' time was spent, but their work was thrown away
            restarts.append(Piece(name="restart", seconds=max(0.0, lead) + redo_s, step=first_step_from,
                                  basis=f"{max(0.0, lead):.0f} s between the last step line before it and the next "
                                        f"launch's first step, plus {redone} step(s) done twice x the steady "
                                        f"{level:.3g} s",
                                  evidence=(*prev_launch_lines[-1:], (head["source"], head["line"]))))
        w, s, st = _launch_body(launch, level, events)
        warm_s += w
        steps_s += s
        stalls.extend(st)
        prev_end_ts = launch["ts"][-1]
        prev_max_step = int(launch["global_step"].max())  # type: ignore[arg-type]
        tail_row = launch.row(-1, named=True)
        prev_launch_lines = [(tail_row["source"], tail_row["line"])]
    tail_s = max(0.0, (t_end - prev_end_ts).total_seconds())
    span = (t_end - t0).total_seconds()
    stall_s = sum(p.seconds or 0.0 for p in stalls)
    restart_s = sum(p.seconds or 0.0 for p in restarts)
    parts = [
        Piece(name="startup", seconds=startup_s, evidence=(first_at, (rows["source"][0], rows["line"][0])),
              basis="the first timestamped line to the start of the first step"),
        Piece(name="warmup", seconds=warm_s,
              basis=f"the leading steps' time above the steady {level:.3g} s/step (>= {WARMUP_GATE - 1:.0%} above "
                    f"it)"),
        Piece(name="steps", seconds=steps_s, pieces=_inside_steps(steps_s, level, metrics),
              basis=f"{n_steps} steps at the steady level; the spread of ordinary steps around it included"),
        Piece(name="stalls", seconds=stall_s, pieces=tuple(stalls),
              basis="intervals at least one step's time above the steady level (half a step's with a checkpoint or "
                    "evaluation line in them): their excess"),
        Piece(name="restarts", seconds=restart_s, pieces=tuple(restarts),
              basis="a step count that goes back, or a launch banner between two step lines"),
        Piece(name="tail", seconds=tail_s, evidence=(prev_launch_lines[-1], last_at),
              basis="the last step line to the last timestamped line"),
    ]
    return Account(clock="timestamps", span_s=span, gpus=gpus, steps=n_steps, steady_step_s=level,
                   parts=tuple(parts), launches=len(launches))


def _launch_body(launch: pl.DataFrame, level: float, events: pl.DataFrame) -> tuple[float, float, list[Piece]]:
    """One launch's step intervals -> (warm-up excess, steady seconds, stalls)."""
    iv = launch.filter(pl.col("dur").is_not_null() & (pl.col("n") > 0) & (pl.col("dur") >= 0))
    if iv.height == 0:
        return 0.0, 0.0, []
    iv = iv.with_columns((pl.col("dur") - pl.col("n") * level).alias("excess"))
    above = pl.col("dur") >= WARMUP_GATE * level * pl.col("n")
    limit = max(1, int(iv.height * WARMUP_MAX_SHARE))
    iv = iv.with_row_index("_i").with_columns(
        (above.cast(pl.Int8).cum_min().cast(pl.Boolean) & (pl.col("_i") < limit)).alias("warm"))
    warm = iv.filter(pl.col("warm"))
    rest = iv.filter(~pl.col("warm"))
    candidates = rest.filter(pl.col("excess") >= STALL_EXTRA_WITH_EVENT * level)
    stalls: list[Piece] = []
    stalled_rows: set[int] = set()
    for row in candidates.iter_rows(named=True):
        near = events.filter(((pl.col("source") == row["source"]) & (pl.col("line") > (row["prev_line"] or 0))
                              & (pl.col("line") <= row["line"]))
                             | ((pl.col("source") != row["source"]) & pl.col("ts").is_not_null()
                                & (pl.col("ts") > row["prev_ts"]) & (pl.col("ts") <= row["ts"])))
        if near.height == 0 and row["excess"] < STALL_EXTRA_STEPS * level:
            continue
        kind = STALL_EVENTS.get(str(near["kind"][0]), "spike") if near.height else "spike"
        stalled_rows.add(row["_i"])
        stalls.append(Piece(name=kind, seconds=float(row["excess"]), step=int(row["global_step"]),
                            basis=f"{row['dur']:.1f} s for {row['n']} step(s) against the steady {level:.3g} s/step",
                            evidence=((row["source"], row["line"]),
                                      *((int(e["source"]), int(e["line"])) for e in near.head(3).iter_rows(named=True)))))
    steady = rest.filter(~pl.col("_i").is_in(list(stalled_rows)))
    warm_excess = float(warm["excess"].clip(lower_bound=0).sum())
    steady_s = (float(steady["dur"].sum()) + float((warm["dur"] - warm["excess"].clip(lower_bound=0)).sum())
                + sum(level * int(n) for n in rest.filter(pl.col("_i").is_in(list(stalled_rows)))["n"].to_list()))
    return warm_excess, steady_s, stalls


def _inside_steps(steps_s: float, level: float, m: Metrics) -> tuple[Piece, ...]:
    """The steady steps split by what the timers (or the trainer's data timing) measured, scaled to the steady
    level; the rest of the step is named as such, not spread over the measured parts."""
    br = m.breakdown
    out: list[Piece] = []
    if br is not None and br.total_ms > 0:
        per = level * 1000.0
        comm_ms = (br.bwd_allreduce_ms or 0.0) + (br.optimizer_allgather_ms or 0.0) + \
            br.shares.get("pipeline_p2p", 0.0) * br.total_ms
        opt_ms = br.step_ms - (br.optimizer_allgather_ms or 0.0)
        compute_ms = br.fwd_ms + (br.bwd_inner_ms or 0.0)
        timed = comm_ms + opt_ms + compute_ms
        scale = min(1.0, per / timed) if timed > 0 else 1.0  # timers above the wall step (rank skew): shares only
        named = (("compute", compute_ms), ("communication", comm_ms), ("optimizer", opt_ms))
        for name, ms in named:
            out.append(Piece(name=name, seconds=steps_s * ms * scale / per,
                             basis=f"{ms:.0f} ms of the timed {timed:.0f} ms step (median timers), at "
                                   f"{per:.0f} ms per step"))
        rest = steps_s - sum(p.seconds or 0.0 for p in out)
        out.append(Piece(name="outside the timers", seconds=max(0.0, rest),
                         basis="the wall-clock step beyond forward, backward and the optimizer step: data loading, "
                               "host work, logging"))
    elif m.data_wait_share is not None:
        wait = steps_s * m.data_wait_share
        out = [Piece(name="data wait", seconds=wait, basis=f"the trainer's data time, {m.data_wait_share:.0%} of "
                                                           "the median step"),
               Piece(name="rest of the step", seconds=steps_s - wait, basis="not broken down by the logs")]
    return tuple(out)


def _from_step_times(s: pl.DataFrame, m: Metrics, gpus: int | None, clock: str) -> Account:
    """No timestamps: the step series' own times are the clock; what lies around the steps is unknown."""
    n = s["step"].diff().fill_null(1).clip(lower_bound=1)
    dur = s["step_time_s"] * n
    level = float(s["step_time_s"].median())  # type: ignore[arg-type]
    frame = pl.DataFrame({"step": s["step"], "dur": dur, "n": n})
    iv = frame.with_columns((pl.col("dur") - pl.col("n") * level).alias("excess"), pl.int_range(pl.len()).alias("_i"))
    limit = max(1, int(iv.height * WARMUP_MAX_SHARE))
    above = (pl.col("dur") >= WARMUP_GATE * level * pl.col("n")).cast(pl.Int8).cum_min().cast(pl.Boolean)
    iv = iv.with_columns((above & (pl.col("_i") < limit)).alias("warm"))
    warm = iv.filter(pl.col("warm"))
    rest = iv.filter(~pl.col("warm"))
    spikes = rest.filter(pl.col("excess") >= STALL_EXTRA_STEPS * level)
    stalls = tuple(Piece(name="spike", seconds=float(r["excess"]), step=int(r["step"]),
                         basis=f"{r['dur']:.1f} s against the steady {level:.3g} s/step")
                   for r in spikes.iter_rows(named=True))
    warm_s = float(warm["excess"].clip(lower_bound=0).sum())
    stall_s = sum(p.seconds or 0.0 for p in stalls)
    steps_s = float(dur.sum()) - warm_s - stall_s
    unknown = "not in the logs without line timestamps"
    parts = (Piece(name="startup", seconds=None, basis=unknown),
             Piece(name="warmup", seconds=warm_s, basis=f"the leading steps' time above the steady {level:.3g} s/step"),
             Piece(name="steps", seconds=steps_s, pieces=_inside_steps(steps_s, level, m),
                   basis=f"{int(n.sum())} steps at the steady level, from {clock}"),
             Piece(name="stalls", seconds=stall_s, pieces=stalls, basis="steps at least one step's time above the "
                                                                        "steady level: their excess"),
             Piece(name="restarts", seconds=None, basis=unknown),
             Piece(name="tail", seconds=None, basis=unknown))
    return Account(clock="step times", span_s=None, gpus=gpus, steps=int(n.sum()), steady_step_s=level, parts=parts)


def per_step_hours(acc: Account, seconds: float) -> float | None:
    """GPU-hours per 1,000 steps of a loss of `seconds` over this run's steps."""
    hours = acc.gpu_hours(seconds)
    return None if hours is None or not acc.steps else hours * 1000.0 / acc.steps


def check_sum(acc: Account) -> float | None:
    """|parts - span| / span: the account's own consistency (must stay within 2%)."""
    if acc.span_s is None or not acc.span_s:
        return None
    return abs(acc.measured_s - acc.span_s) / acc.span_s


__all__ = ["Account", "Piece", "account", "check_sum", "per_step_hours", "PART_ORDER", "PART_LABELS"]
