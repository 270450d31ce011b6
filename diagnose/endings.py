"""How the run ended (issue 33), from the lines it printed: finished, crashed (which error, on which rank and host,
first), hung (a collective that timed out, after how long a silence, and which rank never reached it), killed (the
OOM killer's SIGKILL, a scheduler's time limit or cancellation, a signal to the launcher), or unknown (the log stops).

The first failure in line order is the cause; what other ranks print after it (a peer that went away, a collective
that then timed out, torchrun's own exception) is fallout, listed under it. torchrun's failure table names a "root
cause" by the first exit it saw, which in a hang is a rank that timed out waiting, not the one it waited for: a
timeout is read as such before the table is."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import polars as pl

from diagnose.parsers.run_model import RunModel

How = Literal["finished", "crashed", "hung", "frozen", "killed", "unknown"]
# Exceptions the launcher raises about its workers: the workers' own lines say what failed.
LAUNCHER_EXCEPTIONS = ("torch.distributed.elastic.", "subprocess.CalledProcessError")
CRASH_KINDS = ("exception", "oom")
FALLOUT_KINDS = ("comm_timeout", "peer_lost", "nccl_warn")
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

    def as_dict(self) -> dict[str, object]:
        return {"how": self.how, "summary": self.summary, "rank": self.rank, "host": self.host,
                "line": self.where[1] if self.where else None, "silence_s": self.silence_s,
                "after_step": self.after_step, "fallout": [w for _, _, w in self.fallout],
                "oom_gib": list(self.oom_gib) if self.oom_gib else None}


def _failure_table(ev: pl.DataFrame) -> dict[str, object] | None:
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
    return {"rank": first("failure_rank", "failed_rank"), "host": first("failure_host", "host"),
            "code": first("failure_exitcode", "code"), "where": (int(src), int(line))}


def _last_step(model: RunModel) -> tuple[int | None, object]:
    steps = model.frames["steps"]
    if steps.height == 0 or "global_step" not in steps.columns:
        return None, None
    last = steps.filter(pl.col("global_step").is_not_null()).sort("source", "line").tail(1)
    if last.height == 0:
        return None, None
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


def _finished(model: RunModel) -> bool:
    """The trainer printed its end-of-training summary (HF Trainer's `{'train_runtime': ...}`)."""
    steps = model.frames["steps"]
    return "train_runtime_s" in steps.columns and steps["train_runtime_s"].drop_nulls().len() > 0


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
    return int(r["source"]), int(r["line"])  # type: ignore[call-overload]


def ending(model: RunModel) -> Ending | None:
    """How the run's last launch ended; None where the text holds no training at all (no step and no failure)."""
    ev = model.frames["events"].sort("source", "line")
    after_step, last_ts = _last_step(model)
    if ev.height == 0 and after_step is None:
        return None
    table = _failure_table(ev) if ev.height else None
    on = f" after step {after_step}" if after_step is not None else ""

    cancelled = ev.filter(pl.col("kind") == "job_cancelled")
    if cancelled.height:
        r = cancelled.row(0, named=True)
        why = (r["detail"] or "").lower() or "by the scheduler"
        return Ending("killed", f"killed: the scheduler cancelled the job ({why}){on}", where=_where(r),
                      after_step=after_step)

    crashes = ev.filter(pl.col("kind").is_in(CRASH_KINDS) & pl.col("detail").is_not_null()
                        & ~pl.any_horizontal(pl.col("detail").str.starts_with(x) for x in LAUNCHER_EXCEPTIONS))
    timeouts = ev.filter(pl.col("kind") == "comm_timeout")
    if timeouts.height == 0:  # Flight Recorder dumps are written at a timeout (TORCH_NCCL_DUMP_ON_TIMEOUT=1)
        dumped = ev.filter((pl.col("kind") == "nccl_last_work") & (pl.col("origin") == "flight_recorder"))
        seqs = _last_enqueued(dumped)
        top = max(seqs.values()) if seqs else None
        timeouts = dumped.filter(pl.col("value_from") == top) if top is not None else timeouts
    first_crash = crashes.row(0, named=True) if crashes.height else None
    first_timeout = timeouts.row(0, named=True) if timeouts.height else None
    host = table["host"] if table else None

    if first_timeout is not None and (first_crash is None or _where(first_timeout) < _where(first_crash)):
        waited = sorted({r for r in timeouts["rank"].to_list() if r is not None})
        world = model.facts.world_size
        never = [r for r in range(world) if r not in waited] if world and waited and world <= 64 else []
        silence = None
        at = first_timeout["ts"] or _next_stamp(ev, _where(first_timeout))
        if last_ts is not None and at is not None:
            silence = max(0.0, (at - last_ts).total_seconds())
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
        who = (f"rank{'s' if len(waited) > 1 else ''} {', '.join(map(str, waited))} timed out waiting in a "
               f"collective" if waited else "a collective timed out")
        culprit = f"; rank{'s' if len(never) > 1 else ''} {', '.join(map(str, never))} never reached it" \
            if never else ""
        quiet = f" after {silence:.0f} s without a step line" if silence is not None else ""
        return Ending("hung", f"hung{on}: {who}{quiet}{culprit}", rank=never[0] if len(never) == 1 else None,
                      host=None, where=_where(first_timeout), silence_s=silence, after_step=after_step,
                      fallout=_fallout(ev, _where(first_timeout), None))

    code = table["code"] if table else None
    if isinstance(code, int) and code < 0:
        sig = SIGNALS.get(-code, f"signal {-code}")
        rank = table["rank"] if table else None  # type: ignore[index]
        by = " (the kernel's OOM killer or the scheduler: nothing in a training loop sends it)" if -code == 9 else ""
        where = f" on rank {rank}" + (f" ({host})" if host else "") if rank is not None else ""
        return Ending("killed", f"killed{on}: {sig}{where}{by}", rank=rank if isinstance(rank, int) else None,
                      signal=sig,
                      host=host if isinstance(host, str) else None,
                      where=table["where"],  # type: ignore[index,arg-type]
                      after_step=after_step, fallout=_fallout(ev, (0, 0), rank if isinstance(rank, int) else None))

    if first_crash is not None:
        rank = first_crash["rank"]
        if rank is None and table and isinstance(table["rank"], int):
            rank = table["rank"]
        where = f" on rank {rank}" + (f" ({host})" if host and table and table["rank"] == rank else "") \
            if rank is not None else ""
        oom = (first_crash["value_from"], first_crash["value_to"]) if first_crash["kind"] == "oom" else None
        what = first_crash["detail"][:160]
        if oom is not None:
            sizes = f" (tried to allocate {oom[0]:.3g} GiB of {oom[1]:.3g} GiB)" if None not in oom else ""
            what = f"CUDA out of memory{sizes}"
        return Ending("crashed", f"crashed{on}: {what}{where}", rank=rank,
                      host=host if table and table["rank"] == rank else None, where=_where(first_crash),
                      after_step=after_step, fallout=_fallout(ev, _where(first_crash), rank),
                      error=str(first_crash["kind"]), oom_gib=oom)

    signals = ev.filter((pl.col("kind") == "signal_received") & (pl.col("code").is_not_null()
                                                                  | pl.col("detail").is_not_null()))
    if signals.height:
        r = signals.row(0, named=True)
        sig = r["detail"] or SIGNALS.get(r["code"] or 0, f"signal {r['code']}")
        sig = SIGNALS.get(int(sig), sig) if str(sig).isdigit() else sig
        return Ending("killed", f"stopped from outside{on}: the launcher received {sig} (a time limit, `timeout`, "
                                "a cancel or Ctrl-C)", where=_where(r), after_step=after_step, signal=str(sig))

    if isinstance(code, int) and code > 0:
        return Ending("crashed", f"crashed{on}: exit code {code} on rank {table['rank']}",  # type: ignore[index]
                      where=table["where"],  # type: ignore[index,arg-type]
                      rank=table["rank"] if isinstance(table["rank"], int) else None,  # type: ignore[index]
                      after_step=after_step)

    if _finished(model):
        return Ending("finished", f"finished{on}: the trainer printed its end-of-training summary",
                      after_step=after_step)
    ok = ev.filter((pl.col("kind") == "launcher_exit") & pl.col("code").is_null())
    exits = ev.filter(pl.col("kind") == "launcher_exit")
    if exits.height and exits["code"].drop_nulls().len() and (exits["code"].drop_nulls() == 0).all():
        return Ending("finished", f"finished{on}: every process exited with code 0", after_step=after_step)
    if ok.height and exits["code"].drop_nulls().len() == 0:
        return Ending("finished", f"finished{on}: the launcher reports a clean exit", after_step=after_step)
    return Ending("unknown", f"unknown: the log stops{on} with no exit, error or signal printed",
                  after_step=after_step)


__all__ = ["Ending", "How", "ending"]
