"""How the run ended (issue 33), from the lines it printed: finished, crashed (which error, on which rank and host,
first), hung (a collective that timed out, after how long a silence, and which rank never reached it), killed (the
OOM killer's SIGKILL, a scheduler's time limit or cancellation, a signal to the launcher), or unknown (the log stops).

The first failure in line order is the cause; what other ranks print after it (a peer that went away, a collective
that then timed out, torchrun's own exception) is fallout, listed under it. torchrun's failure table names a "root
cause" by the first exit it saw, which in a hang is a rank that timed out waiting, not the one it waited for: a
timeout is read as such before the table is."""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Literal

import polars as pl

from diagnose.parsers.run_model import RunModel
from diagnose.parsers.scalars import between, whole
from diagnose.parsers.templates import counts_down
from diagnose.parsers.tqdm_clock import shorter_bar

How = Literal["finished", "crashed", "hung", "frozen", "killed", "unknown"]
# Exceptions the launcher raises about its workers: the workers' own lines say what failed.
LAUNCHER_EXCEPTIONS = ("torch.distributed.elastic.", "subprocess.CalledProcessError")
CRASH_KINDS = ("exception", "oom", "nccl_error")
FALLOUT_KINDS = ("comm_timeout", "peer_lost", "nccl_warn")
# An error with 3 or more step lines after it in its file did not end the run; ranks' output interleaves, so a step
# or two printed by another rank after a crash is still the crash.
STEPS_AFTER_ERROR = 3
MIN_RANK_STEPS = 3  # a rank's step lines before its last one says where its output ended
IGNORED_TRACEBACK_SPAN = 200  # lines from `Exception ignored in` to its traceback's error (deep stacks)
FAILURE_TABLE_SPAN = 8  # torchrun prints an entry's fields within the 8 lines after `Root Cause ...:`
# SIGKILL comes from the kernel's OOM killer or a scheduler enforcing memory; nothing in a training loop sends it.
SIGNALS = {9: "SIGKILL", 15: "SIGTERM", 2: "SIGINT", 6: "SIGABRT", 11: "SIGSEGV", 7: "SIGBUS"}


@dataclass(frozen=True)
class Ending:
    how: How
    summary: str  # one line, for the headline block: "crashed: RuntimeError: ... on rank 1 (localhost)"
    rank: int | None = None
    host: str | None = None
    where: tuple[int, int] | None = None  # (source, line) of the line that says it
    silence_s: float | None = None  # hung: from the last step line to the timeout
    after_step: int | None = None  # the last step printed before the end
    fallout: tuple[tuple[int, int, str], ...] = ()  # (source, line, what) printed after the cause
    error: str | None = None  # crashed: the event kind of the first error (exception | oom)
    signal: str | None = None  # killed: the signal that ended it, where the log names one (SIGKILL, SIGTERM)
    oom_gib: tuple[float | None, float | None] | None = None  # oom: (the allocation that failed, the capacity), GiB
    # a stop's unsaved work: the seconds of steps since the last checkpoint save printed (or since the launch's
    # first step where none was), and what they count from
    unsaved_s: float | None = None
    unsaved_from: str | None = None

    def as_dict(self) -> dict[str, object]:
        return {"how": self.how, "summary": self.summary, "rank": self.rank, "host": self.host,
                "line": self.where[1] if self.where else None, "silence_s": self.silence_s,
                "after_step": self.after_step, "fallout": [w for _, _, w in self.fallout],
                "oom_gib": list(self.oom_gib) if self.oom_gib else None,
                "unsaved_s": self.unsaved_s, "unsaved_from": self.unsaved_from}


@dataclass(frozen=True)
class _Table:
    """torchrun's root-cause entry."""

    rank: int | None
    host: str | None
    code: int | None
    where: tuple[int, int]


def _failure_table(ev: pl.DataFrame) -> _Table | None:
    """torchrun's root-cause entry: the rank, host and exit code printed just after `Root Cause (first observed
    failure):`."""
    roots = ev.filter(pl.col("kind") == "failure_root_cause")
    if roots.height == 0:
        return None
    src, line = roots["source"][-1], roots["line"][-1]
    near = ev.filter((pl.col("source") == src) & (pl.col("line") > line)
                     & (pl.col("line") <= line + FAILURE_TABLE_SPAN))
    def first(kind: str, col: str) -> object:
        got = near.filter(pl.col("kind") == kind)[col].drop_nulls()
        return got[0] if got.len() else None
    rank, host, code = (first("failure_rank", "failed_rank"), first("failure_host", "host"),
                        first("failure_exitcode", "code"))
    return _Table(rank if isinstance(rank, int) else None, host if isinstance(host, str) else None,
                  code if isinstance(code, int) else None, (whole(src), whole(line)))


def _last_step(steps: pl.DataFrame) -> tuple[int | None, object]:
    if steps.height == 0 or "global_step" not in steps.columns:
        return None, None
    counted = pl.col("global_step").is_not_null()
    if {"origin", "total_steps"} <= set(steps.columns):
        counted &= ~shorter_bar()  # the training's count, not an evaluation's or a save writer's bar
    rows = steps.filter(counted).sort("source", "line")
    if rows.height == 0:
        return None, None
    own = rows.filter(pl.col("source") == rows["source"][-1])
    # A paste printed newest first (parsers/templates.NEWEST_FIRST_NOTE): its counter falls down the lines, and its
    # first line is the last step reached.
    last = own.head(1) if counts_down(own["global_step"].diff()) else own.tail(1)
    return int(last["global_step"][0]), last["ts"][0]


def _last_enqueued(ev: pl.DataFrame) -> dict[int, int]:
    """Each reporting rank's last enqueued NCCL sequence number: the lowest never reached the collective the others
    wait in."""
    rows = ev.filter((pl.col("kind") == "nccl_last_work") & pl.col("rank").is_not_null())
    return {int(r): int(q) for r, q in rows.group_by("rank").agg(pl.col("value_from").last()).iter_rows()}


def _next_stamp(ev: pl.DataFrame, where: tuple[int, int]) -> object:
    """The first timestamp printed at or after a line without one (a worker's `[rank0]:` line has none; the
    launcher's next line does)."""
    later = ev.filter((pl.col("source") == where[0]) & (pl.col("line") >= where[1]) & pl.col("ts").is_not_null())
    return later["ts"][0] if later.height else None


def _summary_line(steps: pl.DataFrame) -> tuple[int, int] | None:
    """Where the trainer printed its end-of-training summary (HF Trainer's `{'train_runtime': ...}`)."""
    if "train_runtime_s" not in steps.columns:
        return None
    at = steps.filter(pl.col("train_runtime_s").is_not_null()).sort("source", "line")
    return (int(at["source"][0]), int(at["line"][0])) if at.height else None


def _fallout(ev: pl.DataFrame, after: tuple[int, int], rank: int | None) -> tuple[tuple[int, int, str], ...]:
    later = ev.filter(pl.col("kind").is_in(FALLOUT_KINDS))
    out = []
    for r in later.iter_rows(named=True):
        if (r["source"], r["line"]) <= after or (rank is not None and r["rank"] == rank):
            continue
        who = f"rank {r['rank']}" if r["rank"] is not None else "a rank"
        what = "a collective timed out" if r["kind"] == "comm_timeout" else "lost its peer"
        out.append((int(r["source"]), int(r["line"]), f"{who}: {what} (line {r['line']})"))
    return tuple(out[:8])


def _where(r: dict[str, object]) -> tuple[int, int]:
    return whole(r["source"]), whole(r["line"])


def ending(model: RunModel) -> Ending | None:
    """How the run ended, read over the whole text as one launch; None where the text holds no training at all (no
    step and no failure)."""
    ends = launch_endings(model)
    return ends[-1] if ends else None


def launch_endings(model: RunModel, starts: tuple[tuple[int, int], ...] = ()) -> tuple[Ending, ...]:
    """How each launch ended. `starts`: the (source, line) of each launch's first step line, as the goodput account
    found them; a launch's lines run to the next launch's first step line, so what a crash prints before the
    relaunch's banner ends the launch before it. Launches found in one source only are cut; otherwise the text is
    read as one launch."""
    ev, steps = model.frames["events"].sort("source", "line"), model.frames["steps"]
    world = model.facts.world_size
    if len(starts) < 2 or len({s for s, _ in starts}) > 1:
        one = _ending(ev, steps, world, final=True)
        return (one,) if one is not None else ()
    src = starts[0][0]
    out = []
    for k in range(len(starts)):
        lo = starts[k][1] if k else 0
        hi = starts[k + 1][1] if k + 1 < len(starts) else None
        final = hi is None

        def cut(frame: pl.DataFrame) -> pl.DataFrame:
            mine = (pl.col("source") == src) & (pl.col("line") >= lo)
            if hi is not None:
                mine &= pl.col("line") < hi
            return frame.filter(mine | (pl.col("source") != src) if final else mine)
        got = _ending(cut(ev), cut(steps), world, final=final)
        out.append(got if got is not None else Ending("unknown", "unknown: no step or failure printed"))
    return tuple(out)


def _first_to_stop(steps: pl.DataFrame) -> tuple[int, int, int] | None:
    """Where two or more ranks print steps (one file per rank, or rank-prefixed lines), the rank whose output ends
    first: (rank, its last step, the others' last step); None where all reach the same step."""
    if steps.height == 0 or "global_step" not in steps.columns:
        return None
    ranked = steps.lazy().select("rank", "global_step", "origin").filter(
        pl.col("rank").is_not_null() & pl.col("global_step").is_not_null()).collect()  # three columns, not all
    if ranked.height == 0:
        return None
    # one step kind (the one most lines print), and only ranks that print it often enough to have a last step
    top = ranked.group_by("origin").len().sort(["len", "origin"], descending=[True, False])["origin"][0]  # ties: a-z
    last = (ranked.filter(pl.col("origin") == top).group_by("rank")
            .agg(pl.col("global_step").max(), pl.len().alias("n")).filter(pl.col("n") >= MIN_RANK_STEPS))
    if last.height < 2:
        return None
    low, high = last["global_step"].min(), last["global_step"].max()
    behind = last.filter(pl.col("global_step") == low)["rank"].sort()
    if low == high or behind.len() != 1:
        return None
    return whole(behind[0]), whole(low), whole(high)


def _unsaved(ev: pl.DataFrame, steps: pl.DataFrame, last_ts: object) -> tuple[float | None, str | None]:
    """The seconds of training since the last checkpoint save printed before the end (or since the launch's first
    step line where none was): the work a stop throws away unless it is redone."""
    if last_ts is None or steps.height == 0:
        return None, None
    saves = ev.filter((pl.col("kind") == "checkpoint_save") & pl.col("ts").is_not_null() & (pl.col("ts") <= last_ts))
    if saves.height:
        r = saves.row(-1, named=True)
        return max(0.0, between(last_ts, r["ts"])), f"the checkpoint save at line {r['line']}"
    stamped = steps.filter(pl.col("ts").is_not_null())["ts"]
    if stamped.len() < 2:
        return None, None
    return max(0.0, between(last_ts, stamped.min())), "the launch's first step line (no checkpoint save " \
        "printed)"


def _ending(ev: pl.DataFrame, steps: pl.DataFrame, world: int | None, final: bool) -> Ending | None:
    """How one launch ended, from its events and step lines; `final`: the text's last launch (else the next launch
    began after it)."""
    after_step, last_ts = _last_step(steps)
    if ev.height == 0 and after_step is None:
        return None
    stopped = _stopped(ev, steps, world, final, after_step, last_ts)
    if stopped.how in ("crashed", "killed"):
        lost, since = _unsaved(ev, steps, last_ts)
        return replace(stopped, unsaved_s=lost, unsaved_from=since)
    return stopped


def _crashes(ev: pl.DataFrame, steps: pl.DataFrame) -> pl.DataFrame:
    """The errors that can have ended the launch, in line order: not the launcher's own exceptions about its workers,
    not the error of a traceback Python printed as `Exception ignored in ...` (the unraisable hook: nothing
    stopped), and not an error the run went on past (STEPS_AFTER_ERROR step lines or more after it in its file: a
    setup script's complaint, a caught exception)."""
    rows = ev.filter(pl.col("kind").is_in(CRASH_KINDS) & pl.col("detail").is_not_null()
                     & ~pl.any_horizontal(pl.col("detail").str.starts_with(x) for x in LAUNCHER_EXCEPTIONS))
    if rows.height == 0:
        return rows
    ignored = ev.filter(pl.col("kind") == "exception_ignored").select("source", pl.col("line").alias("_ignored"))
    if ignored.height:
        rows = (rows.sort("line").join_asof(ignored.sort("_ignored"), left_on="line", right_on="_ignored",
                                            by="source", strategy="backward", check_sortedness=False)
                # the first error after the hook's line is its traceback's last line
                .filter(pl.col("_ignored").is_null()
                        | (pl.col("line") != pl.col("line").min().over("source", "_ignored"))
                        | (pl.col("line") - pl.col("_ignored") > IGNORED_TRACEBACK_SPAN))
                .drop("_ignored").sort("source", "line"))
    if steps.height and rows.height:
        # each step line with the number of step lines from it to its file's end; an error's count is its next
        # step line's
        left = (steps.select("source", pl.col("line").alias("_next")).unique().sort("_next")
                .with_columns(pl.len().over("source").alias("_n"), pl.int_range(pl.len()).over("source").alias("_i"))
                .with_columns((pl.col("_n") - pl.col("_i")).alias("_left")).select("source", "_next", "_left"))
        rows = (rows.sort("line")
                .join_asof(left, left_on="line", right_on="_next", by="source", strategy="forward",
                           check_sortedness=False)
                .filter(pl.col("_left").fill_null(0) < STEPS_AFTER_ERROR).drop("_next", "_left").sort("source", "line"))
    return rows


def _stopped(ev: pl.DataFrame, steps: pl.DataFrame, world: int | None, final: bool, after_step: int | None,
             last_ts: object) -> Ending:
    table = _failure_table(ev) if ev.height else None
    on = f" after step {after_step}" if after_step is not None else ""

    cancelled = ev.filter(pl.col("kind") == "job_cancelled")
    if cancelled.height:
        r = cancelled.row(0, named=True)
        why = r["detail"] or "by the scheduler"
        why = why.lower() if why.isupper() else why  # Slurm shouts (`DUE TO TIME LIMIT`); LSF does not
        return Ending("killed", f"killed: the scheduler cancelled the job ({why}){on}", where=_where(r),
                      after_step=after_step)
    host_oom = ev.filter(pl.col("kind") == "host_oom")
    if host_oom.height:
        r = host_oom.row(0, named=True)
        return Ending("killed", f"killed{on}: the host's out-of-memory killer ended a process (SIGKILL; host memory, "
                                "not GPU memory)", where=_where(r), after_step=after_step, signal="SIGKILL")

    crashes = _crashes(ev, steps)
    timeouts = ev.filter(pl.col("kind") == "comm_timeout")
    if timeouts.height == 0:  # Flight Recorder dumps are written at a timeout (TORCH_NCCL_DUMP_ON_TIMEOUT=1)
        dumped = ev.filter((pl.col("kind") == "nccl_last_work") & (pl.col("origin") == "flight_recorder"))
        seqs = _last_enqueued(dumped)
        top = max(seqs.values()) if seqs else None
        timeouts = dumped.filter(pl.col("value_from") == top) if top is not None else timeouts
    first_crash = crashes.row(0, named=True) if crashes.height else None
    first_timeout = timeouts.row(0, named=True) if timeouts.height else None
    host = table.host if table else None

    if first_timeout is not None and (first_crash is None or _where(first_timeout) < _where(first_crash)):
        waited = sorted({r for r in timeouts["rank"].to_list() if r is not None})
        never = [r for r in range(world) if r not in waited] if world and waited and world <= 64 else []
        silence = None
        at = first_timeout["ts"] or _next_stamp(ev, _where(first_timeout))
        if last_ts is not None and at is not None:
            silence = max(0.0, between(at, last_ts))
        seqs = _last_enqueued(ev)
        if seqs and max(seqs.values()) < 0:
            return Ending("frozen", f"frozen{on}: no rank enqueued any collective before the timeout (last enqueued "
                                    "-1 on every rank reporting): a process stuck outside communication (a stalled "
                                    "filesystem or a hung data loader is likelier than the network)",
                          where=_where(first_timeout), silence_s=silence, after_step=after_step)
        if seqs and len(set(seqs.values())) > 1:
            low = min(seqs.values())
            behind = sorted(r for r, q in seqs.items() if q == low)
            never = behind if len(behind) < len(seqs) else never
        elif not never and (first := _first_to_stop(steps)) is not None:
            never = [first[0]]
        who = (f"rank{'s' if len(waited) > 1 else ''} {', '.join(map(str, waited))} timed out waiting in a "
               f"collective" if waited else "a collective timed out")
        culprit = f"; rank{'s' if len(never) > 1 else ''} {', '.join(map(str, never))} never reached it" \
            if never else ""
        quiet = f" after {silence:.0f} s without a step line" if silence is not None else ""
        return Ending("hung", f"hung{on}: {who}{quiet}{culprit}", rank=never[0] if len(never) == 1 else None,
                      host=None, where=_where(first_timeout), silence_s=silence, after_step=after_step,
                      fallout=_fallout(ev, _where(first_timeout), None))

    code = table.code if table else None
    if table is not None and code is not None and code < 0:
        sig = SIGNALS.get(-code, f"signal {-code}")
        rank = table.rank
        by = " (the kernel's OOM killer or the scheduler: nothing in a training loop sends it)" if -code == 9 else ""
        where = f" on rank {rank}" + (f" ({host})" if host else "") if rank is not None else ""
        return Ending("killed", f"killed{on}: {sig}{where}{by}", rank=rank, signal=sig, host=host, where=table.where,
                      after_step=after_step, fallout=_fallout(ev, (0, 0), rank))

    signals = ev.filter((pl.col("kind") == "signal_received") & (pl.col("code").is_not_null()
                                                                  | pl.col("detail").is_not_null()))
    if first_crash is not None and signals.height and _where(signals.row(0, named=True)) < _where(first_crash):
        first_crash = None  # Ctrl-C or a signal to the launcher first: the workers' errors after it are its fallout
    summary_at = _summary_line(steps)
    if first_crash is not None and summary_at is not None and summary_at < _where(first_crash):
        return Ending("finished", f"finished{on}: the trainer printed its end-of-training summary; the script failed "
                                  f"after it ({first_crash['detail'][:120]})", after_step=after_step,
                      where=_where(first_crash))
    if first_crash is not None:
        rank = first_crash["rank"]
        if rank is None and table and table.rank is not None:
            rank = table.rank
        where = f" on rank {rank}" + (f" ({host})" if host and table and table.rank == rank else "") \
            if rank is not None else ""
        oom = (first_crash["value_from"], first_crash["value_to"]) if first_crash["kind"] == "oom" else None
        what = first_crash["detail"][:160]
        if oom is not None:
            sizes = f" (tried to allocate {oom[0]:.3g} GiB of {oom[1]:.3g} GiB)" if None not in oom else ""
            what = f"CUDA out of memory{sizes}"
        return Ending("crashed", f"crashed{on}: {what}{where}", rank=rank,
                      host=host if table and table.rank == rank else None,
                      where=_where(first_crash),
                      after_step=after_step, fallout=_fallout(ev, _where(first_crash), rank),
                      error=str(first_crash["kind"]), oom_gib=oom)

    if signals.height:
        r = signals.row(0, named=True)
        sig = r["detail"] or SIGNALS.get(r["code"] or 0, f"signal {r['code']}")
        sig = SIGNALS.get(int(sig), sig) if str(sig).isdigit() else sig
        return Ending("killed", f"stopped from outside{on}: the launcher received {sig} (a time limit, `timeout`, "
                                "a cancel or Ctrl-C)", where=_where(r), after_step=after_step, signal=str(sig))

    if table is not None and code is not None and code > 0:
        return Ending("crashed", f"crashed{on}: exit code {code} on rank {table.rank}", where=table.where,
                      rank=table.rank, after_step=after_step)

    if summary_at is not None:
        return Ending("finished", f"finished{on}: the trainer printed its end-of-training summary",
                      after_step=after_step)
    ok = ev.filter((pl.col("kind") == "launcher_exit") & pl.col("code").is_null())
    exits = ev.filter(pl.col("kind") == "launcher_exit")
    if exits.height and exits["code"].drop_nulls().len() and (exits["code"].drop_nulls() == 0).all():
        return Ending("finished", f"finished{on}: every process exited with code 0", after_step=after_step)
    if ok.height and exits["code"].drop_nulls().len() == 0:
        return Ending("finished", f"finished{on}: the launcher reports a clean exit", after_step=after_step)
    lost = ev.filter(pl.col("kind") == "peer_lost")
    if lost.height:  # no rank failed first, none exited cleanly: a peer or its host went away (a node that vanished)
        r = lost.row(0, named=True)
        who = f"rank {r['rank']}" if r["rank"] is not None else "a rank"
        return Ending("crashed", f"crashed{on}: {who} lost its peer ({(r['detail'] or '')[:120]}); no rank printed "
                                 "an error first, so the peer's process or host went away (its own log or the "
                                 "host's says why)", where=_where(r), after_step=after_step, error="peer_lost",
                      fallout=_fallout(ev, _where(r), r["rank"]))

    first = _first_to_stop(steps)
    ahead = (f"; rank {first[0]}'s output ends first (step {first[1]}; the others reach step {first[2]})"
             if first else "")
    if not final:
        return Ending("unknown", f"unknown: relaunched{on} with no exit, error or signal printed before it{ahead}",
                      after_step=after_step, rank=first[0] if first else None)
    return Ending("unknown", f"unknown: the log stops{on} with no exit, error or signal printed{ahead}",
                  after_step=after_step, rank=first[0] if first else None)


__all__ = ["Ending", "How", "ending", "launch_endings"]
