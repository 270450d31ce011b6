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
from typing import Any

import polars as pl

from diagnose.endings import Ending
from diagnose.metrics import OVERFLOW_STEP_CLOCKS, SPIKE_FACTOR, Metrics, steady_level
from diagnose.parsers.run_model import RunModel
from diagnose.parsers.scalars import between, number

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
RESTART_GAP = 3.0  # a step count that goes back after 3 usual intervals or more is a relaunch (startup again)
CLOCK_ORIGINS = (*OVERFLOW_STEP_CLOCKS, "ds_pipe_step", "dschat_step", "dschat_rlhf_step", "wandb_history", "learned")
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
    launch_starts: tuple[tuple[int, int], ...] = ()  # (source, line) of each launch's first step line
    clock_note: str | None = None  # why the account is not on the clock it would have used
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

    @property
    def hours_unit(self) -> str:
        return "process-hours" if self.device == "processes" else "GPU-hours"

    def gpu_hours(self, seconds: float | None) -> float | None:
        return None if seconds is None or not self.gpus else seconds * self.gpus / 3600.0


def account(model: RunModel, metrics: Metrics, end: Ending | None = None) -> Account | None:
    """The run's goodput account, or None where it has no clock at all. `end`: how the run ended, so the tail
    names what it held (the silence of a hang before its timeout)."""
    acc = _account(model, metrics)
    if acc is not None and model.facts.cpu_run:
        acc = replace(acc, device="processes")
    if acc is not None and end is not None:
        acc = _tail_named(acc, end)
    return acc


def with_endings(acc: Account, ends: tuple[Ending, ...]) -> Account:
    """The account with each launch's end named: a restart's time goes to what ended the launch before it (issue
    33: the crash's, the kill's), and a hang's silence to the tail."""
    if ends:
        acc = _tail_named(acc, ends[-1])
    part = acc.part("restarts")
    if part is None or len(ends) != len(part.pieces) + 1:
        return acc
    named = tuple(replace(p, basis=f"after launch {k + 1} {_ended(e)}: {p.basis}")
                  for k, (p, e) in enumerate(zip(part.pieces, ends)))
    return replace(acc, parts=tuple(replace(part, pieces=named) if p.name == "restarts" else p for p in acc.parts))


def _ended(end: Ending) -> str:
    """`crashed (CUDA out of memory ...)`: the ending's summary without its step, for a restart's basis."""
    head, _, rest = end.summary.partition(": ")
    return f"{head.split(' after ')[0]} ({rest})" if rest else head


def _tail_named(acc: Account, end: Ending) -> Account:
    """A hang's silence is the tail's first part: every GPU held in a collective, no step made (issue 33)."""
    tail = acc.part("tail")
    if end.how != "hung" or end.silence_s is None or tail is None or not tail.seconds:
        return acc
    hang = min(end.silence_s, tail.seconds)
    named = replace(tail, pieces=(Piece(name="hang before the timeout", seconds=hang, step=end.after_step,
                                        basis=f"from the last step line to the timeout: {end.summary}"),
                                  Piece(name="after the timeout", seconds=tail.seconds - hang,
                                        basis="the timeout to the last timestamped line: shutdown")))
    return replace(acc, parts=tuple(named if p.name == "tail" else p for p in acc.parts))


def _account(model: RunModel, metrics: Metrics) -> Account | None:
    rows = _clock_rows(model.frames["steps"])
    gpus = model.facts.world_size
    note = None
    if rows is not None and (back := _clock_goes_back(model.frames["steps"], rows)):
        # Not a relaunch: the step count carries on while the clock goes back (a clock reset, a wrapped or
        # shuffled log). Sorted by time, each jump would read as a relaunch (issue 35: 33,917 of them).
        note = (f"the step lines' clock goes back {back} time(s) while the step count carries on (a clock reset, "
                "or lines out of order): the account is on the steps' own times, not the timestamps")
        rows = None
    if rows is not None:
        return _from_timestamps(model, metrics, rows, gpus)
    if metrics.step_series is not None and metrics.step_series.height >= 3:
        return replace(_from_step_times(metrics.step_series, metrics, gpus, "the steps' printed times"),
                       clock_note=note)
    if len(metrics.timed_totals) >= 3:  # no step lines: the timers' per-step totals are the clock
        totals = pl.DataFrame({"step": range(1, len(metrics.timed_totals) + 1),
                               "step_time_s": [ms / 1000.0 for ms in metrics.timed_totals]})
        return _from_step_times(totals, metrics, gpus, "the per-step timer totals (forward + backward + step)")
    return None


def _clock_rows(steps: pl.DataFrame) -> pl.DataFrame | None:
    """One rank's step lines with a timestamp and a step, of the step kind that has the most, in time order (not
    deduplicated: a step printed again after a restart is the restart's evidence)."""
    rows = steps.lazy().select("source", "line", "rank", "ts", "global_step", "step_time_s", "origin").filter(
        pl.col("origin").is_in(CLOCK_ORIGINS) & pl.col("ts").is_not_null() & pl.col("global_step").is_not_null()
    ).collect()  # the columns it returns (and the rank it picks by), not the whole frame's
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
    return rows.select("source", "line", "ts", "global_step", "step_time_s", "origin") if rows.height >= 3 else None


# A clock that goes back by more than this between two step lines of one file, the step count going on, is not the
# jitter of two threads printing (sub-second) but a reset or lines out of order.
CLOCK_BACK_S = 2.0


def _clock_goes_back(steps: pl.DataFrame, rows: pl.DataFrame) -> int:
    """How often, in file order, the clock's step lines' time goes back by more than CLOCK_BACK_S while the step
    count goes on (a relaunch sends the count back too)."""
    chosen = rows.select("source", "line")
    ordered = (steps.join(chosen, on=["source", "line"], how="semi").sort("source", "line")
               .select("source", pl.col("ts").cast(pl.Datetime("ms")), "global_step"))
    back = ordered.with_columns(
        ((pl.col("ts") - pl.col("ts").shift(1).over("source")).dt.total_milliseconds() / 1000.0).alias("dt"),
        (pl.col("global_step") - pl.col("global_step").shift(1).over("source")).alias("ds"))
    return back.filter((pl.col("dt") < -CLOCK_BACK_S) & (pl.col("ds") > 0)).height


def _ends(model: RunModel, wandb: bool) -> tuple[object, object, tuple[int, int], tuple[int, int]]:
    """The first and last timestamp the clock's own kind of source holds, and where they were printed. W&B's
    times (UTC, its own process) and a log's (the node's local time) are never mixed: a W&B clock spans the
    W&B rows, a log clock the log lines."""
    parts = []
    for name in TIMESTAMPED_FRAMES:
        frame = model.frames.get(name)
        if frame is None or "ts" not in frame.columns:
            continue
        from_wandb = pl.lit(name == "system") | (pl.col("origin").cast(pl.String).str.starts_with("wandb")
                                                 if "origin" in frame.columns else pl.lit(False))
        parts.append(frame.filter(pl.col("ts").is_not_null() & (from_wandb if wandb else ~from_wandb))
                     .select("source", "line", "ts"))
    stamped = pl.concat([p.with_columns(pl.col("source").cast(pl.Int64), pl.col("line").cast(pl.Int64),
                                        pl.col("ts").cast(pl.Datetime("ms"))) for p in parts if p.height])
    first = stamped.sort("ts", "source", "line").row(0, named=True)
    last = stamped.sort("ts", "source", "line").row(-1, named=True)
    return first["ts"], last["ts"], (first["source"], first["line"]), (last["source"], last["line"])


def _launch_marks(model: RunModel) -> pl.Series:
    facts = model.frames["facts"]
    marks = facts.filter(pl.col("origin").is_in(LAUNCH_MARKERS) & pl.col("ts").is_not_null())
    stamps: pl.Series = marks["ts"].cast(pl.Datetime("ms")).unique().sort()
    return stamps


def _intervals(rows: pl.DataFrame, marks: pl.Series) -> pl.DataFrame:
    """Each step line with the interval that ends at it: seconds, steps, the launch it belongs to.

    A new launch begins at a launch banner between two step lines, or where the step count goes back after a gap
    of RESTART_GAP usual intervals (a relaunch loads the model again). A count that goes back without such a gap is
    a counter that restarts each epoch, or two pastes joined: the interval counts as the usual number of steps."""
    rows = rows.with_columns(pl.col("ts").cast(pl.Datetime("ms")))
    prev_ts = pl.col("ts").shift(1)
    out = rows.with_columns(
        ((pl.col("ts") - prev_ts).dt.total_milliseconds() / 1000.0).alias("dur"),
        (pl.col("global_step") - pl.col("global_step").shift(1)).alias("n"),
        (pl.col("global_step") <= pl.col("global_step").shift(1)).fill_null(False).alias("regress"),
        pl.col("line").shift(1).alias("prev_line"), prev_ts.alias("prev_ts"))
    if marks.len():
        # A launch marker strictly between two step lines.
        idx = marks.search_sorted(out["ts"], side="left") - marks.search_sorted(out["prev_ts"].fill_null(out["ts"]),
                                                                               side="right")
        out = out.with_columns((pl.Series(idx) > 0).alias("_marked"))
    else:
        out = out.with_columns(pl.lit(False).alias("_marked"))
    usual = out.filter(~pl.col("regress") & (pl.col("n") > 0) & ~pl.col("_marked"))
    usual_s = number(usual["dur"].median() or 0.0)
    usual_n = int(number(usual["n"].median() or 1))
    relaunch = pl.col("regress") & (pl.col("dur") >= RESTART_GAP * usual_s)
    out = out.with_columns((relaunch | pl.col("_marked")).alias("restart"))
    out = out.with_columns(pl.col("restart").cast(pl.Int32).cum_sum().alias("launch"),
                           pl.when(pl.col("regress") & ~pl.col("restart")).then(usual_n).otherwise(pl.col("n"))
                           .alias("n"))
    # A launch's first line: the interval before it is not a step interval (startup or the restart's gap).
    first = pl.col("launch") != pl.col("launch").shift(1).fill_null(-1)
    return out.with_columns(pl.when(first).then(None).otherwise(pl.col("dur")).alias("dur"),
                            pl.when(first).then(None).otherwise(pl.col("n")).alias("n"), first.alias("first"))


def _training_launches(rows: pl.DataFrame, marks: pl.Series) -> pl.DataFrame:
    """The intervals of the launches that trained: a launch of one step line (DeepSpeed's `step=0` as an engine is
    built, before the next engine's banner) did no step, and its time belongs to the startup or the restart's
    gap around it."""
    iv = _intervals(rows, marks)
    sizes = iv.group_by("launch").len()
    lone = sizes.filter(pl.col("len") < 2)["launch"]
    if lone.len() == 0 or lone.len() == sizes.height:
        return iv
    kept = rows.filter(~iv["launch"].is_in(lone.implode()))
    return _intervals(kept, marks)


def _first_interval(head: dict[str, Any]) -> tuple[float | None, int]:
    """The time and steps of a launch's first logged interval where the line prints its own step time (Megatron's
    elapsed time per iteration averages over the logging interval): else unknown. `head`: the launch's first step
    line (`per0`, `step0`) and its usual interval in steps (`every`)."""
    every = int(head["every"]) if head["every"] is not None else 1
    per = head["per0"]
    if per is None or per <= 0:
        return None, every
    n = min(every, max(1, int(head["step0"])))
    return per * n, n


def _from_timestamps(model: RunModel, metrics: Metrics, rows: pl.DataFrame, gpus: int | None) -> Account | None:
    t0, t_end, first_at, last_at = _ends(model, wandb=rows["origin"][0] == "wandb_history")
    iv = _training_launches(rows, _launch_marks(model))
    body = iv.filter(pl.col("dur").is_not_null() & (pl.col("n") > 0) & (pl.col("dur") >= 0))
    if body.height < 2:
        return None
    per_step = body["dur"] / body["n"]
    level = steady_level(per_step)
    if level <= 0:
        return None
    iv = _with_events(iv, model.frames["events"].filter(pl.col("kind").is_in(list(STALL_EVENTS))))
    warm_by, steady_by, stalls = _body(iv, level)
    # Each launch's figures in one pass (issue 35: a log of 30,000 launches took a polars call per launch): its
    # first and last step lines, its usual interval, its warm-up and steady seconds.
    heads = iv.group_by("launch", maintain_order=True).agg(
        pl.col("source").first().alias("src0"), pl.col("line").first().alias("line0"),
        pl.col("ts").first().alias("ts0"), pl.col("global_step").first().alias("step0"),
        pl.col("step_time_s").first().alias("per0"), pl.col("n").drop_nulls().median().alias("every"),
        pl.col("source").last().alias("src1"), pl.col("line").last().alias("line1"),
        pl.col("ts").last().alias("ts1"), pl.col("global_step").max().alias("top"))
    warm_s = steps_s = 0.0
    restarts: list[Piece] = []
    startup_s = 0.0
    prev_end_ts, prev_max_step = None, None
    prev_launch_lines: list[tuple[int, int]] = []
    n_steps = int(body["n"].sum())
    for k, head in enumerate(heads.iter_rows(named=True)):
        first_s, first_n = _first_interval(head)
        if first_s is not None:  # a log cut at its start holds less than the first printed interval
            first_s = min(first_s, between(head["ts0"], t0 if k == 0 else prev_end_ts))
        start_ts = head["ts0"]
        first_step_from = int(head["step0"]) - first_n
        if first_s is not None:
            start_ts = head["ts0"] - timedelta(seconds=first_s)
            steps_s += min(first_s, first_n * level)
            warm_s += max(0.0, first_s - first_n * level)
            n_steps += first_n
        lead = between(start_ts, t0 if k == 0 else prev_end_ts)
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
                                  evidence=(*prev_launch_lines[-1:], (head["src0"], head["line0"]))))
        warm_s += warm_by.get(head["launch"], 0.0)
        steps_s += steady_by.get(head["launch"], 0.0)
        prev_end_ts = head["ts1"]
        prev_max_step = int(head["top"])
        prev_launch_lines = [(head["src1"], head["line1"])]
    tail_s = max(0.0, between(t_end, prev_end_ts))
    span = between(t_end, t0)
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
                   parts=tuple(parts), launches=heads.height,
                   launch_starts=tuple(zip(heads["src0"].cast(pl.Int64).to_list(),
                                           heads["line0"].cast(pl.Int64).to_list())))


def _with_events(iv: pl.DataFrame, events: pl.DataFrame) -> pl.DataFrame:
    """Each interval with the first stall event (checkpoint, evaluation) printed inside it and up to three of their
    lines: an event in a source that has step lines belongs to the first step line at or after it there; one in
    another source (a rank's own log, an eval file) to the first step line at or after its time."""
    rows = iv.select(pl.col("source").cast(pl.Int64), pl.col("line").cast(pl.Int64), pl.col("ts"))
    ev = events.select(pl.col("source").cast(pl.Int64).alias("ev_source"), pl.col("line").cast(pl.Int64).alias("ev_line"),
                       pl.col("ts").cast(pl.Datetime("ms")), "kind")
    clocked = set(rows["source"].unique().to_list())
    by_line = ev.filter(pl.col("ev_source").is_in(clocked)).sort("ev_line").join_asof(
        rows.sort("line").select(pl.col("source").alias("ev_source"), pl.col("line")),
        left_on="ev_line", right_on="line", by="ev_source", strategy="forward", check_sortedness=False,
        coalesce=False).with_columns(pl.col("ev_source").alias("source"))
    by_time = ev.filter(~pl.col("ev_source").is_in(clocked) & pl.col("ts").is_not_null()).sort("ts").join_asof(
        rows.sort("ts").rename({"ts": "row_ts"}), left_on="ts", right_on="row_ts", strategy="forward",
        check_sortedness=False)
    placed = pl.concat([by_line.select("source", "line", "kind", "ev_source", "ev_line"),
                        by_time.select("source", "line", "kind", "ev_source", "ev_line")]).drop_nulls("line")
    grouped = placed.sort("ev_source", "ev_line").group_by("source", "line").agg(
        pl.col("kind").first().alias("ev_kind"),
        pl.struct("ev_source", "ev_line").head(3).alias("ev_lines"))
    return iv.with_columns(pl.col("source").cast(pl.Int64), pl.col("line").cast(pl.Int64)).join(
        grouped, on=["source", "line"], how="left")


def _body(iv: pl.DataFrame, level: float) -> tuple[dict[int, float], dict[int, float], list[Piece]]:
    """Every launch's step intervals (launch, global_step, dur, n; and ev_kind, ev_lines, source, line where lines
    are known) -> (warm-up excess by launch, steady seconds by launch, stalls). A launch's leading intervals above the
    gate are warm-up; later ones at least a step's time above the level (half a step's with a checkpoint or
    evaluation in them) are stalls; each keeps its steady share in the steps."""
    iv = iv.filter(pl.col("dur").is_not_null() & (pl.col("n") > 0) & (pl.col("dur") >= 0))
    if iv.height == 0:
        return {}, {}, []
    if "ev_kind" not in iv.columns:
        iv = iv.with_columns(pl.lit(None, pl.String).alias("ev_kind"))
    limit = (pl.len().over("launch") * WARMUP_MAX_SHARE).cast(pl.Int64).clip(lower_bound=1)
    leading = ((pl.col("dur") >= WARMUP_GATE * level * pl.col("n")).cast(pl.Int8).cum_min().over("launch")
               .cast(pl.Boolean))
    excess = pl.col("dur") - pl.col("n") * level
    iv = iv.with_columns(excess.alias("excess"),
                         (leading & (pl.int_range(pl.len()).over("launch") < limit)).alias("warm"))
    iv = iv.with_columns((~pl.col("warm") & (
        (pl.col("excess") >= STALL_EXTRA_STEPS * level)
        | (pl.col("ev_kind").is_not_null() & (pl.col("excess") >= STALL_EXTRA_WITH_EVENT * level)))).alias("stall"))
    sums = iv.group_by("launch", maintain_order=True).agg(
        pl.col("excess").filter(pl.col("warm")).clip(lower_bound=0).sum().alias("warm"),
        pl.col("excess").filter(pl.col("stall")).sum().alias("stalled"), pl.col("dur").sum().alias("dur"))
    warm = dict(zip(sums["launch"].to_list(), sums["warm"].to_list()))
    steady = {k: d - w - st for k, w, st, d in sums.select("launch", "warm", "stalled", "dur").iter_rows()}
    stalls = []
    for row in iv.filter(pl.col("stall")).iter_rows(named=True):
        where = ((row["source"], row["line"]),) if "line" in row else ()
        near = tuple((e["ev_source"], e["ev_line"]) for e in (row.get("ev_lines") or ()))
        stalls.append(Piece(name=STALL_EVENTS.get(row["ev_kind"] or "", "spike"), seconds=float(row["excess"]),
                            step=int(row["global_step"]), evidence=where + near,
                            basis=f"{row['dur']:.1f} s for {row['n']} step(s) against the steady {level:.3g} s/step"))
    return warm, steady, stalls


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
    level = steady_level(s["step_time_s"])
    warm_by, steady_by, stalls = _body(pl.DataFrame({"launch": 0, "global_step": s["step"], "dur": dur, "n": n}),
                                       level)
    warm_s, steps_s = warm_by.get(0, 0.0), steady_by.get(0, 0.0)
    stall_s = sum(p.seconds or 0.0 for p in stalls)
    unknown = "not in the logs without line timestamps"
    parts = (Piece(name="startup", seconds=None, basis=unknown),
             Piece(name="warmup", seconds=warm_s, basis=f"the leading steps' time above the steady {level:.3g} s/step"),
             Piece(name="steps", seconds=steps_s, pieces=_inside_steps(steps_s, level, m),
                   basis=f"{int(n.sum())} steps at the steady level, from {clock}"),
             Piece(name="stalls", seconds=stall_s, pieces=tuple(stalls),
                   basis="steps at least one step's time above the steady level: their excess"),
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
