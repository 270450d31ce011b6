"""Why the run stopped (issue 33): a collective that timed out, a rank that crashed, a process killed from outside.
Each fires on what the run printed about its own end (diagnose/endings.py), never on a line of advice."""
from __future__ import annotations

from diagnose.endings import Ending
from diagnose.rules import Ctx, Evidence, Finding, Fix, rule

FLIGHT_RECORDER = ("TORCH_NCCL_TRACE_BUFFER_SIZE=2000 TORCH_NCCL_DUMP_ON_TIMEOUT=1 (a Flight Recorder dump of each "
                   "rank's last collectives at the next timeout)")


# What to do about a crash, by what the first error was (endings.py's `error`): the next measurement where the log
# cannot decide.
CRASH_FIXES = {
    "exception": "Fix the first error{who}; the later errors on other ranks follow from it. For a CUDA error, rerun "
                 "with CUDA_LAUNCH_BLOCKING=1 once to see the failing kernel (then remove it: it serialises every "
                 "launch).",
    "nccl_error": "NCCL failed below torch{who}: rerun once with NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,NET to see "
                  "which call failed (a network interface, InfiniBand, shared memory in a container: --shm-size); "
                  "`NCCL_SOCKET_IFNAME` names the interface where the host has several.",
    "peer_lost": "Find the peer that went away: its own rank's log, the host's `dmesg -T` (the OOM killer, a Xid "
                 "GPU error) and the scheduler's node state; rerun with NCCL_DEBUG=WARN to name the peer's address.",
}


def _said(end: Ending, tail: str = ".") -> str:
    """The ending's line as the finding's sentence."""
    return end.summary[0].upper() + end.summary[1:] + tail


def _lost(end: Ending) -> dict[str, object]:
    """The stop's unsaved work, for its cost (costs.py's "unsaved work")."""
    return {"unsaved_s": end.unsaved_s, "unsaved_from": end.unsaved_from}


def _evidence(ctx: Ctx, end: Ending) -> tuple[Evidence, ...]:
    where = end.where
    ev = [Evidence(end.summary, ctx.model.source_name(where[0]) if where else None, where[1] if where else None,
                   "log")]
    ev += [Evidence(f"fallout: {what}", ctx.model.source_name(src), line, "log") for src, line, what in end.fallout[:4]]
    return tuple(ev)


@rule("nccl-timeout-hang", "The run hung in a collective until it timed out",
      detects="A collective that timed out (NCCL's watchdog `Watchdog caught collective operation timeout`, gloo's "
              "`Timed out waiting ...ms`) before any rank crashed: the ranks that timed out waited for one that never "
              "reached the collective.",
      why="Every GPU is held for the whole timeout (10 to 30 minutes by default) without a step; the rank that "
          "never arrived is stuck elsewhere (a data loader, a filesystem, a Python deadlock, a different code path).",
      evidence="The timeout line, the last step line before it (their timestamps give the silence), the ranks that "
               "report the timeout.",
      fix="Look at the rank that never reached the collective: `py-spy dump --pid <pid>` while it hangs; next time "
          "run with " + FLIGHT_RECORDER + " and NCCL_DEBUG=INFO.",
      drivers=(), scenario="fault_hang", costs=("stopped",))
def nccl_timeout_hang(ctx: Ctx) -> Finding | None:
    end = ctx.ending
    if end is None or end.how != "hung":
        return None
    who = f"rank {end.rank}" if end.rank is not None else "the rank that never reached the collective"
    return ctx.finding(
        severity="critical", confidence="high" if end.rank is not None else "medium", explains_slowdown=True,
        summary=_said(end),
        evidence=_evidence(ctx, end),
        fix=Fix(f"Find where {who} is stuck: `py-spy dump --pid <its pid>` while it hangs, or its own log's last "
                "lines; next time run with " + FLIGHT_RECORDER + " and NCCL_DEBUG=INFO.", (),
                "The next hang names the collective and the rank that missed it."),
        data={"silence_s": end.silence_s, "rank": end.rank, "ended": end.how},
    )


@rule("rank-crash", "A rank crashed and took the run down",
      detects="The first exception a worker printed (its traceback's last line, on its rank) or a non-zero exit in "
              "torchrun's failure table, before any other rank failed.",
      why="One rank's error stops every rank: the others lose their peer in the next collective and exit too, so "
          "the logs fill with their errors, which are fallout, not the cause.",
      evidence="The worker's exception line with its rank prefix, torchrun's `Root Cause (first observed failure)` "
               "table, the other ranks' later errors.",
      fix="Fix the error on the rank that failed first; its traceback is in that rank's output.",
      drivers=(), scenario="fault_raise", costs=("unsaved work",))
def rank_crash(ctx: Ctx) -> Finding | None:
    end = ctx.ending
    if end is None or end.how != "crashed" or end.error == "oom":
        return None
    who = f" (rank {end.rank})" if end.rank is not None else ""
    return ctx.finding(
        # a crash stops the run, it does not slow its steps: the headline says how it ended beside the cause of
        # any slowdown (a benchmark that crashes at shutdown was still fast)
        severity="critical", confidence="high" if end.rank is not None else "medium", explains_slowdown=False,
        summary=_said(end, f"; {len(end.fallout)} later error(s) on other ranks are its fallout." if end.fallout
                      else "."),
        evidence=_evidence(ctx, end),
        fix=Fix(CRASH_FIXES.get(end.error or "", CRASH_FIXES["exception"]).format(who=who), (),
                "The run goes past the step it stopped at."),
        data={"rank": end.rank, "ended": end.how, **_lost(end)},
    )


@rule("killed", "The run was killed from outside",
      detects="A process ended by SIGKILL (exit -9 in torchrun's failure table: the kernel's OOM killer or a "
              "scheduler's memory limit), a scheduler's `CANCELLED ... DUE TO TIME LIMIT / PREEMPTION`, or a signal "
              "the launcher received (`timeout`, a cancel, Ctrl-C).",
      why="Nothing in the training loop failed: the machine or the scheduler stopped it, so the work since the last "
          "checkpoint is lost and the fix is outside the code.",
      evidence="torchrun's failure table (exitcode, signal, rank, host), Slurm's CANCELLED line, the launcher's "
               "`Received ... death signal`.",
      fix="SIGKILL: check `dmesg` / `journalctl -k` for the OOM killer and the host's memory per process (data "
          "loader workers, pinned memory); a time limit: checkpoint more often or ask for more time.",
      drivers=(), scenario="fault_kill", costs=("unsaved work",))
def killed(ctx: Ctx) -> Finding | None:
    end = ctx.ending
    if end is None or end.how != "killed":
        return None
    sigkill = end.signal == "SIGKILL"
    fix = ("Look for the kernel's OOM killer on that host (`dmesg -T | grep -i -E 'killed process|out of memory'`) and "
           "lower the host memory each rank uses (fewer data loader workers, no pinned-memory copies of the dataset)."
           if sigkill else "Checkpoint often enough that a stop loses little, and resume from the last checkpoint; "
           "ask the scheduler for a longer limit if the run needs it.")
    return ctx.finding(
        # SIGKILL is a failure (the OOM killer); a time limit or a signal from outside is how the job was run
        severity="critical" if sigkill else "info", confidence="high", explains_slowdown=False,
        summary=_said(end),
        evidence=_evidence(ctx, end),
        fix=Fix(fix, (), "The run ends on its own."),
        data={"rank": end.rank, "ended": end.how, **_lost(end)},
    )


@rule("frozen-process", "A process froze outside communication",
      detects="A collective timeout where every rank that reports its NCCL work says `last enqueued NCCL work: -1`: "
              "no rank ever enqueued a collective, so none is waiting for a slow peer.",
      why="The processes hold their GPUs without working or talking: a stalled filesystem (a checkpoint or dataset "
          "read on a hung mount), a hung data loader worker, or a deadlock before the first collective, not the "
          "network.",
      evidence="ProcessGroupNCCL's `Timeout at NCCL work: N, last enqueued NCCL work: -1, last completed NCCL work: "
               "-1` on each rank that timed out.",
      fix="`py-spy dump --pid <pid>` of each rank while it hangs shows where it waits; check the mounts it reads "
          "(`ls` the dataset and checkpoint paths on that node) and run the loader with num_workers=0 once.",
      drivers=(), scenario="synthetic/frozen_process", costs=("stopped",))
def frozen_process(ctx: Ctx) -> Finding | None:
    end = ctx.ending
    if end is None or end.how != "frozen":
        return None
    return ctx.finding(
        severity="critical", confidence="medium", explains_slowdown=True,
        summary=_said(end),
        evidence=_evidence(ctx, end),
        fix=Fix("Dump the stuck processes' stacks (`py-spy dump --pid <pid>` on each rank) and check the filesystems "
                "they read; rerun the data loader with num_workers=0 once to rule it out.", (),
                "The dump names the call each rank is stuck in."),
        data={"silence_s": end.silence_s, "ended": end.how},
    )


@rule("out-of-memory", "A rank ran out of GPU memory",
      detects="CUDA's out-of-memory error as the first failure of the run (`torch.OutOfMemoryError: CUDA out of "
              "memory. Tried to allocate X GiB. GPU N has a total capacity of Y GiB ...`), with the allocation that "
              "failed and the capacity.",
      why="The step's peak (parameters, gradients, optimizer states and activations per GPU) is above the card; the "
          "run stops, and every restart at the same shape stops again.",
      evidence="The OOM line with its rank; the run's shape (ZeRO stage, micro-batch, checkpointing) for the planner.",
      fix="The planner's cheapest change that fits (a higher ZeRO stage, activation checkpointing, a smaller "
          "micro-batch with more accumulation); PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True where the free "
          "memory is fragmented.",
      drivers=("zero_stage", "micro_batch_per_gpu", "gradient_checkpointing"), scenario="synthetic/out_of_memory",
      costs=("unsaved work",))
def out_of_memory(ctx: Ctx) -> Finding | None:
    end = ctx.ending
    if end is None or end.how != "crashed" or end.error != "oom":
        return None
    tried, cap = end.oom_gib or (None, None)
    sizes = (f": it asked for {tried:.3g} GiB on a {cap:.3g} GiB GPU" if tried is not None and cap is not None
             else "")
    plan = ctx.plan
    planned = (f" The planner's choice for this shape is {plan.recommended} ({plan.steps[0]})."
               if plan is not None and plan.steps else
               f" The planner's choice for this shape is {plan.recommended}." if plan is not None else "")
    who = f"Rank {end.rank}" if end.rank is not None else "A rank"
    return ctx.finding(
        severity="critical", confidence="high", explains_slowdown=False,
        summary=f"{who} ran out of GPU memory{' after step ' + str(end.after_step) if end.after_step else ''}"
                f"{sizes}.{planned}",
        evidence=_evidence(ctx, end),
        fix=Fix("Lower the per-GPU peak: the planner's table below gives the stage and micro-batch that fit; "
                "activation checkpointing trades recompute for activations; set "
                "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True where the error reports much memory reserved "
                "but unallocated.", (), "The step fits on the card."),
        data={"rank": end.rank, "tried_gib": tried, "capacity_gib": cap, "ended": end.how, **_lost(end)},
    )
