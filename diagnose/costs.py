"""What each finding cost, from the goodput account (issue 23): GPU-hours lost in this run and per 1,000 steps, and
what the fix would save, with the arithmetic shown. A rule names the measures its cause shows up in (Rule.costs);
a measure the logs cannot give (no timers, no clock) leaves the finding unpriced, never guessed."""
from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

from diagnose.changepoints import ChangePoints
from diagnose.findings import Cost
from diagnose.goodput import Account, Piece, per_step_hours
from diagnose.metrics import Metrics
from diagnose.stragglers import Stragglers

# NCCL over TCP sockets against the RDMA fabric it should have used: a 25 GbE NIC, the default of cloud GPU VMs
# without RDMA, against one HDR InfiniBand port (200 Gb/s, the A100 generation's; NDR is 400). Where the comms
# logger measured the bus bandwidth, that figure replaces the NIC's.
SOCKET_GBPS = 25.0
IB_GBPS = 200.0


Measure = tuple[float, float, str] | None  # (seconds lost, seconds the fix saves, the arithmetic)


@dataclass(frozen=True)
class Inputs:
    account: Account
    metrics: Metrics
    change_points: ChangePoints | None
    stragglers: Stragglers | None


def _sub(acc: Account, *names: str) -> Piece | None:
    steps = acc.part("steps")
    return next((p for p in (steps.pieces if steps else ()) for n in names if p.name == n and p.seconds), None)


def _gpus(acc: Account) -> str:
    return f"{acc.gpus} {acc.device}" if acc.gpus else f"{acc.device} (count not in the logs)"


def _stalls(x: Inputs, data: Mapping[str, object]) -> Measure:
    """The stall seconds the finding itself counted (`data["stall_s"]`, from the account's stalls it names or the
    GPUs' idle time), so its share and its price are one figure; else the account's whole stalls part."""
    part = x.account.part("stalls")
    own, count, basis = data.get("stall_s"), data.get("stall_count"), data.get("stall_basis")
    if isinstance(own, (int, float)) and isinstance(count, int):
        return (float(own), float(own), f"{count} stall(s) x {basis}, {_sec(own)} in all, x {_gpus(x.account)}")
    if part is None or not part.seconds:
        return None
    kinds = sorted({p.name for p in part.pieces})
    return (part.seconds, part.seconds,
            f"{len(part.pieces)} stall(s) ({', '.join(kinds)}) x their excess over the steady step, "
            f"{_sec(part.seconds)} in all, x {_gpus(x.account)}")


def _sec(seconds: float) -> str:
    """Seconds at three significant figures: a sub-second loss reads as itself, not as '0 s'."""
    return f"{seconds:.3g} s" if seconds < 1000 else f"{seconds:,.0f} s"


def _piece(*names: str) -> Callable[[Inputs, Mapping[str, object]], Measure]:
    def measure(x: Inputs, data: Mapping[str, object]) -> Measure:
        p = _sub(x.account, *names)
        if p is None or p.seconds is None:
            return None
        steps = x.account.part("steps")
        share = p.seconds / ((steps.seconds if steps else None) or 1.0)
        return (p.seconds, p.seconds, f"{p.name} {share:.0%} of the steady steps ({p.basis}) = {_sec(p.seconds)}, "
                                      f"x {_gpus(x.account)}")
    return measure


def _socket(x: Inputs, data: Mapping[str, object]) -> Measure:
    p = _sub(x.account, "communication")
    if p is None or p.seconds is None:
        return None
    used = x.metrics.comm_busbw_gbps or SOCKET_GBPS
    basis = "measured bus bandwidth" if x.metrics.comm_busbw_gbps else "a 25 GbE NIC"
    saved = p.seconds * max(0.0, 1.0 - used / IB_GBPS)
    return (p.seconds, saved, f"communication {_sec(p.seconds)} x (1 - {used:.0f} Gb/s ({basis}) / {IB_GBPS:.0f} "
                              f"Gb/s (one HDR InfiniBand port)) = {_sec(saved)} saved, x {_gpus(x.account)}")


def _slowdown(x: Inputs, data: Mapping[str, object]) -> Measure:
    cp = x.change_points
    if cp is None or cp.slowdown_s <= 0:
        return None
    how = (f"{len(cp.shifts)} level shift(s) up" if cp.pattern in ("shift", "staircase")
           else "a steady climb (trend)")
    return (cp.slowdown_s, cp.slowdown_s, f"{how}: the steps after them beyond the first level, "
                                          f"{_sec(cp.slowdown_s)}, x {_gpus(x.account)}")


def _stopped(x: Inputs, data: Mapping[str, object]) -> Measure:
    """What the end of the run cost that the finding can measure: the silence before a collective timed out (every
    GPU held, no step made)."""
    silence = data.get("silence_s")
    if not isinstance(silence, (int, float)) or silence <= 0:
        return None
    return (float(silence), float(silence), f"the silence from the last step line to the timeout, {_sec(silence)}, "
                                            f"x {_gpus(x.account)}")


def _unsaved(x: Inputs, data: Mapping[str, object]) -> Measure:
    """A stop's lost work: the steps since the last checkpoint save printed (diagnose/endings.py), which a resumed
    run does again; a fix of the cause saves them."""
    lost, since = data.get("unsaved_s"), data.get("unsaved_from")
    if not isinstance(lost, (int, float)) or lost <= 0:
        return None
    return (float(lost), float(lost), f"the steps since {since}, {_sec(lost)}, x {_gpus(x.account)}")


def _straggler(x: Inputs, data: Mapping[str, object]) -> Measure:
    s = x.stragglers
    if s is None or not x.account.steps:
        return None
    lost = s.wait_s_per_step * x.account.steps
    return (lost, lost, f"the others wait {s.wait_s_per_step:.3g} s per step for rank {s.rank} x "
                        f"{x.account.steps} steps = {_sec(lost)}, x {_gpus(x.account)}")


def _skipped(x: Inputs, data: Mapping[str, object]) -> Measure:
    frac = x.metrics.skipped_fraction
    if not frac or not x.account.steps:
        return None
    lost = frac * x.account.steps * x.account.steady_step_s
    return (lost, lost, f"{frac:.1%} of {x.account.steps} steps skipped x the steady {x.account.steady_step_s:.3g} s "
                        f"= {_sec(lost)}, x {_gpus(x.account)}")


# The measures a rule may name (Rule.costs): each -> (seconds lost, seconds the fix saves, the arithmetic).
MEASURES: dict[str, Callable[[Inputs, Mapping[str, object]], Measure]] = {
    "stalls": _stalls,
    "data wait": _piece("data wait", "outside the timers"),
    "communication": _piece("communication"),
    "socket communication": _socket,
    "optimizer": _piece("optimizer"),
    "slowdown": _slowdown,
    "straggler wait": _straggler,
    "skipped steps": _skipped,
    "stopped": _stopped,
    "unsaved work": _unsaved,
}


# How the headline names each measure ("... lost to <label>").
LABELS = {"stalls": "stalls", "data wait": "waiting for data", "communication": "exposed communication",
          "socket communication": "communication over TCP sockets", "optimizer": "the optimizer step",
          "slowdown": "the slowdown", "straggler wait": "waiting for the slowest rank",
          "skipped steps": "skipped steps",
          "stopped": "the hang before the timeout", "unsaved work": "work since the last checkpoint"}


def cost(measures: tuple[str, ...], x: Inputs, data: Mapping[str, object] | None = None) -> Cost | None:
    """The first of a rule's measures the run can give. Where the finding says how much traffic its fix leaves
    (`data["traffic_gb_per_step"]`: before, after), what the fix saves of the communication is that share, not all
    of it (ZeRO-3 -> ZeRO-1 still all-reduces the gradients). Where it says what share of the loss its fix keeps
    (`data["fix_keeps"]`: share, why), the fix saves the rest (a save every 4x the steps keeps a quarter)."""
    acc = x.account
    for name in measures:
        got = MEASURES[name](x, data or {})
        if got is None or got[0] <= 0:
            continue
        lost, saved, arithmetic = got
        hours = acc.gpu_hours(lost)
        if hours is not None:
            arithmetic += f" = {hours:.3g} {acc.hours_unit}"
        traffic = (data or {}).get("traffic_gb_per_step")
        if name in ("communication", "socket communication") and isinstance(traffic, tuple) and len(traffic) == 2 \
                and all(isinstance(v, (int, float)) for v in traffic) and traffic[0] > 0:
            kept = min(1.0, max(0.0, traffic[1] / traffic[0]))
            saved = saved * (1.0 - kept)
            saves = acc.gpu_hours(saved)
            arithmetic += (f"; the fix leaves {traffic[1]:.1f} of {traffic[0]:.1f} GB per GPU per step, so it saves "
                           f"{1.0 - kept:.0%} of that: {_sec(saved)}"
                           + (f" = {saves:.3g} {acc.hours_unit}" if saves is not None else ""))
        kept_events = (data or {}).get("fix_keeps")
        if isinstance(kept_events, tuple) and len(kept_events) == 2 and isinstance(kept_events[0], (int, float)) \
                and 0 <= kept_events[0] < 1:
            saved = saved * (1.0 - kept_events[0])
            saves = acc.gpu_hours(saved)
            arithmetic += (f"; the fix keeps {kept_events[0]:.0%} of that ({kept_events[1]}), so it saves "
                           f"{_sec(saved)}" + (f" = {saves:.3g} {acc.hours_unit}" if saves is not None else ""))
        return Cost(measure=name, lost_s=lost, gpu_hours=hours, per_1000_steps=per_step_hours(acc, lost),
                    share=lost / acc.span_s if acc.span_s else None, saves_gpu_hours=acc.gpu_hours(saved),
                    arithmetic=arithmetic, unit=acc.hours_unit)
    return None
