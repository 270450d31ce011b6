"""Run model -> diagnosis: metrics, planner, every rule, ranked findings, the verdict and the next measurement."""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import polars as pl

from diagnose import changepoints, costs, endings, goodput, hardware, scaling, stragglers
from diagnose.findings import Change, Finding, causes_first, rank_key
from diagnose.metrics import PRINTED_CLOCKS, Metrics, compute
from diagnose.planner import ASSUMED_GPU_GB, MEASURED_FRACTION, Plan, plan
from diagnose.recommend import MEMORY_TIGHT, Headroom, Recommendation, settle
from diagnose.rules import Ctx, load_all
from diagnose.parsers.errors import fault
from diagnose.parsers.facts import GPU_MEMORY_RANGE_GB, RunFacts
from diagnose.parsers.run_model import RunModel

LOW_UTIL = 60.0  # % NVML utilization below which a run is "low utilization" (causes.md §0.3 P-flat-mid band)
HIGH_MEM = 85.0  # % memory allocated above which memory is "high"
LOW_MFU = 0.25  # MFU below 25% on a dense LLM is low (well-tuned runs reach 35-55%)


@dataclass(frozen=True)
class Diagnosis:
    findings: tuple[Finding, ...]
    recommendation: Recommendation
    metrics: Metrics
    plan: Plan | None
    verdict: str
    picture: str | None  # utilization/memory pattern, when system metrics exist
    next_steps: tuple[str, ...]
    # units (a rule, the planner, a line kind, a fact reader) that raised: named with the exception's first line;
    # the report comes from the rest
    faults: tuple[str, ...] = ()
    # where the time went (issue 23): the goodput account, level shifts in step time, stragglers
    goodput: goodput.Account | None = None
    change_points: changepoints.ChangePoints | None = None
    stragglers: stragglers.Stragglers | None = None
    ending: endings.Ending | None = None  # how the run ended (issue 33): its last launch
    launch_endings: tuple[endings.Ending, ...] = ()  # how each launch ended, in order (the last is `ending`)



def plan_inputs(model: RunModel, gpu_memory_gb: float | None = None,
                metrics: Metrics | None = None) -> dict[str, Any] | None:
    """The run's shape as the planner takes it (planner.plan's arguments); None where it cannot be planned."""
    f = model.facts
    mem = gpu_memory_gb or f.gpu_memory_gb or hardware.memory_gb(f.gpu_name)
    known = mem is not None
    if not f.model_params or not f.world_size or (not known and f.cpu_run):
        return None
    dp = f.data_parallel or f.world_size
    peak = metrics.peak_mem_gb if metrics is not None else None
    if peak is None and metrics is not None and mem is not None and "mem_max" in metrics.utilization:
        peak = metrics.utilization["mem_max"] / 100.0 * mem  # W&B's allocated % of the card
    current = (f.zero_stage, f.offloaded) if f.zero_stage is not None else None
    card, fraction = mem or ASSUMED_GPU_GB, MEASURED_FRACTION
    if not known:
        if peak is not None and current is not None and peak >= GPU_MEMORY_RANGE_GB[0]:
            # The GPU is not named, but it held the measured peak: plan for a card of exactly that size (a lower
            # bound, used whole), and say so.
            card, fraction = peak, 1.0
        else:
            peak = None
    # Tensor and pipeline parallelism split the weights first; ZeRO partitions each shard over the data-parallel group.
    shard = float(f.model_params) / ((f.tensor_parallel or 1) * (f.pipeline_parallel or 1))
    return {"params": shard, "gpus": dp, "gpus_per_node": f.gpus_per_node, "gpu_memory_gb": card,
            "grad_accum": f.grad_accum_steps or 1, "seq_len": f.seq_len, "micro_batch": f.micro_batch_per_gpu,
            "hidden": f.hidden_size, "layers": f.num_layers, "heads": f.num_heads,
            "activation_checkpointing": bool(f.gradient_checkpointing), "measured_peak_gb": peak, "current": current,
            "gpu_memory_known": known, "measured_fraction": fraction, "precision": f.precision}


def run_plan(model: RunModel, gpu_memory_gb: float | None = None, metrics: Metrics | None = None) -> Plan | None:
    """The planner on the run's facts; with the run's measured peak memory where the logs print it."""
    inputs = plan_inputs(model, gpu_memory_gb, metrics)
    return plan(**inputs) if inputs is not None else None


def plan_command(inputs: dict[str, Any]) -> list[str]:
    """`diagnose plan` flags that plan the same run as the report does (the report's planner and `plan` are one
    planner, told the same shape); the card as a whole where the report planned on the measured peak alone."""
    flags = ["--params", f"{inputs['params']:.12g}", "--gpus", str(inputs["gpus"])]
    named = (("gpus_per_node", "--gpus-per-node"), ("seq_len", "--seq-len"), ("micro_batch", "--micro-batch"),
             ("hidden", "--hidden"), ("layers", "--layers"), ("heads", "--heads"), ("grad_accum", "--grad-accum"),
             ("precision", "--precision"))
    flags += [x for key, flag in named if inputs.get(key) is not None for x in (flag, str(inputs[key]))]
    if inputs["gpu_memory_known"]:
        flags += ["--gpu-memory", f"{inputs['gpu_memory_gb']:g}"]
    if inputs["activation_checkpointing"]:
        flags.append("--activation-checkpointing")
    if inputs["current"] is not None:
        flags += ["--zero-stage", str(inputs["current"][0])] + (["--offload"] if inputs["current"][1] else [])
        if inputs["measured_peak_gb"] is not None:
            flags += ["--peak-memory", f"{inputs['measured_peak_gb']:.12g}"]
    return flags


def diagnose(model: RunModel, gpu_memory_gb: float | None = None, only: set[str] | None = None,
             all_clocks: bool = False) -> Diagnosis:
    """`all_clocks`: time the steps by every clock the run has, for `compare` (metrics.compute)."""
    metrics = compute(model, all_clocks)
    faults = list(model.faults)
    try:
        p = run_plan(model, gpu_memory_gb, metrics)
    except Exception as e:  # noqa: BLE001 - one unit's fault must not cost the report (the rules run without a plan)
        p, faults = None, [*faults, fault("the ZeRO planner", e)]
    # The account comes first: rules read what it measured (the stalls it attributes to checkpoints), and each
    # finding is priced from it after.
    acc = None
    try:
        acc = goodput.account(model, metrics)
    except Exception as e:  # noqa: BLE001 - the account is one unit: its fault must not cost the findings
        faults.append(fault("the goodput account", e))
    ends: tuple[endings.Ending, ...] = ()
    try:  # each launch the account found ended somehow; the restarts' time goes to what ended the launch before
        ends = endings.launch_endings(model, acc.launch_starts if acc is not None else ())
        acc = goodput.with_endings(acc, ends) if acc is not None else None
    except Exception as e:  # noqa: BLE001 - how it ended is one unit: its fault must not cost the report
        faults.append(fault("how the run ended", e))
    end = ends[-1] if ends else None
    ctx = Ctx(model, model.facts, metrics, p, account=acc, ending=end)
    findings = []
    for r in load_all().values():
        if only is not None and r.id not in only:
            continue
        try:
            if (f := r.check(replace(ctx, rule=r))) is not None:
                findings.append(f)
        except Exception as e:  # noqa: BLE001 - a rule that raises is named in the report; the others still run
            faults.append(fault(f"rule {r.id}", e))
    cps = strag = None
    try:
        cps = changepoints.find(metrics.step_series, model.frames["events"], model.frames["steps"],
                                restarts=acc.restart_steps if acc is not None else ())
        strag = stragglers.classify(model.frames["timers"]) or stragglers.from_report(model.frames["rank_extremes"])
        if acc is not None:
            findings = _priced(findings, costs.Inputs(acc, metrics, cps, strag))
    except Exception as e:  # noqa: BLE001 - pricing is one unit: its fault must not cost the findings
        faults.append(fault("the goodput account", e))
    findings.sort(key=rank_key)
    findings = causes_first(findings, {r.id: r.symptoms for r in load_all().values() if r.symptoms})
    proposed = {f.id: f.fix.changes for f in findings if f.fix is not None}
    findings, recommendation = settle(findings, model.facts, headroom(metrics, p))
    findings = _with_effects(findings, proposed, recommendation, model.facts, faults)
    picture = classify(metrics)
    return Diagnosis(tuple(findings), recommendation, metrics, p, verdict(findings, metrics, picture, end), picture,
                     next_steps(findings, metrics, model), tuple(faults), acc, cps, strag, end, ends)


def _with_effects(findings: list[Finding], proposed: dict[str, tuple[Change, ...]], rec: Recommendation,
                  facts: RunFacts, faults: list[str]) -> list[Finding]:
    """Each fix's expected effect computed by its rule from the changes: its own, with the merged recommendation's
    values where another finding decided a key (so the bubble is that of the batch the patch gives)."""
    rules = load_all()
    out = []
    for f in findings:
        rule = rules.get(f.id)
        if f.fix is None or rule is None or rule.effect is None:
            out.append(f)
            continue
        try:
            words = rule.effect(facts, f.data, (*proposed.get(f.id, ()), *rec.changes))
        except Exception as e:  # noqa: BLE001 - an effect that raises keeps the rule's own words
            faults.append(fault(f"effect of {f.id}", e))
            words = None
        out.append(replace(f, fix=replace(f.fix, expected_effect=words)) if words else f)
    return out


def _priced(findings: list[Finding], inputs: costs.Inputs) -> list[Finding]:
    rules = load_all()
    out = []
    for f in findings:
        declared = rules[f.id].costs if f.id in rules else ()
        c = costs.cost(declared, inputs, f.data) if declared else None
        out.append(replace(f, cost=c) if c is not None else f)
    return out


def headroom(m: Metrics, p: Plan | None) -> Headroom:
    """Whether a change may take more GPU memory: "tight" near the card's limit, "ok" with a measured peak on a
    known card below it, "unknown" with nothing measured (recommend.py keeps such changes out of the patch)."""
    if memory_tight(m, p):
        return "tight"
    measured = "mem_max" in m.utilization or (p is not None and m.peak_mem_gb is not None and bool(p.gpu_memory_gb))
    return "ok" if measured else "unknown"


def memory_tight(m: Metrics, p: Plan | None) -> bool:
    """Memory near the card's limit (measured peak or W&B's allocated %), or the allocator already flushing."""
    if m.allocator_flushes > 0:
        return True
    if "mem_max" in m.utilization and m.utilization["mem_max"] >= MEMORY_TIGHT * 100:
        return True
    return bool(p is not None and m.peak_mem_gb is not None and m.peak_mem_gb >= MEMORY_TIGHT * p.gpu_memory_gb)


def classify(m: Metrics) -> str | None:
    u = m.utilization
    if "util_mean" not in u:
        return None
    util, mem, power = u["util_mean"], u.get("mem_mean"), u.get("power_mean")
    if util < LOW_UTIL and mem is not None and mem >= HIGH_MEM:
        if m.util_pattern == "flat":
            return (f"memory stayed at {mem:.0f}% while utilization sat flat at {util:.0f}% for the whole run: "
                    "a kernel-launch, host-side or synchronisation limit, not memory")
        return f"low utilization ({util:.0f}%, {m.util_pattern or 'varied'}) at high memory ({mem:.0f}%)"
    if util < LOW_UTIL:
        return f"low utilization ({util:.0f}%) at {'low' if (mem or 0) < 50 else 'moderate'} memory"
    if m.util_pattern == "gaps":
        idle = sum(s for _, _, s in m.idle_windows)
        return (f"utilization {util:.0f}% on average, with {len(m.idle_windows)} window(s) in which every GPU sat "
                f"idle (~{idle / 60:.0f} min in all)")
    if m.util_pattern == "sawtooth":
        return f"utilization alternating between idle and busy (sawtooth), {util:.0f}% on average"
    if power is not None and power < 40:
        return f"high utilization ({util:.0f}%) at low power ({power:.0f}% of the limit): GPUs waiting in kernels"
    return f"utilization {util:.0f}%"


HEADLINE_MAX = 200  # characters: the verdict is one sentence someone reads in a chat preview or an issue title


def _figures(m: Metrics) -> list[str]:
    parts = []
    if m.steps:
        parts.append(f"median step {m.steps.p50_s:.3g} s")
    if m.samples_per_sec:
        parts.append(f"{m.samples_per_sec:.3g} samples/s")
    if m.mfu is not None:
        parts.append(f"MFU {m.mfu:.0%}")
    if "util_mean" in m.utilization:
        parts.append(f"GPU utilization {m.utilization['util_mean']:.0f}%")
    if "mem_mean" in m.utilization:
        parts.append(f"memory {m.utilization['mem_mean']:.0f}%")
    if m.tokens_per_sec and m.mfu is None:
        parts.append(f"{m.tokens_per_sec:,.0f} tokens/s")
    if m.steps is None and m.stated is not None:  # no step line: what the text says, as it says it
        said = m.stated
        if said.basis in ("samples", "tokens"):
            parts.insert(0, f"the text states {' then '.join(f'{v:,.4g}' for v in said.seconds)} {said.basis}/s")
        else:
            what = {"step": "a step", "epoch": "an epoch", "run": "the run"}[said.basis]
            parts.insert(0, f"the text states {' then '.join(scaling.spoken(v) for v in said.seconds)} for {what}")
    return parts



def _fit(lead: str, figures: list[str], tail: str) -> str:
    """`lead (figures)tail`, dropping figures from the end until it fits HEADLINE_MAX."""
    for n in range(len(figures), -1, -1):
        text = lead + (f" ({', '.join(figures[:n])})" if n else "") + tail
        if len(text) <= HEADLINE_MAX:
            return text
    return (lead + tail)[: HEADLINE_MAX - 1] + "…"


def _loss(cause: Finding) -> str:
    """`; about 0.4 GPU-hours (37% of the run) lost to <measure>`: the headline cause's own measured loss, or
    nothing (issue 31: another finding's cost beside this cause's title would read as its price)."""
    c = cause.cost
    if c is None or (c.share is not None and c.share < LOSS_SHOWN):
        return ""
    amount = f"about {c.gpu_hours:.2g} {c.unit}" if c.gpu_hours is not None else f"about {c.lost_s / 60:.2g} min"
    share = f" ({c.share:.0%} of the run)" if c.share is not None else ""  # no span without line timestamps
    return f"; {amount}{share} lost to {costs.LABELS[c.measure]}"


LOSS_SHOWN = 0.01  # a measured loss under 1% of the run is not worth the headline's space


def _more(causes: int, tuning: int) -> str:
    words = []
    if causes:
        words.append(f"{causes} more cause{'s' if causes > 1 else ''}")
    if tuning:
        words.append(f"{tuning} config change{'s' if tuning > 1 else ''} worth making")
    return f"; {' and '.join(words)} below." if words else "."


# Endings the headline names when no cause of a slowdown is found
STOPPED_LEADS = ("crashed", "hung", "frozen", "killed")
# The headline's words for them (rule ids stay out of the headline: `killed` is one)
STOPPED_WORDS = {"crashed": "crashed", "hung": "hung", "frozen": "froze", "killed": "was stopped from outside"}


def verdict(findings: list[Finding], m: Metrics, picture: str | None, end: endings.Ending | None = None) -> str:
    """One plain sentence of at most HEADLINE_MAX characters: the cause by its title, the run's key figures, and
    how many more findings follow (rule ids belong to the findings, not the headline)."""
    explaining = [f for f in findings if f.explains_slowdown and f.severity != "info"]
    tuning = [f for f in findings if not f.explains_slowdown and f.severity == "warning"]
    figures = _figures(m)
    if explaining:
        return _fit(f"Most likely cause: {explaining[0].title}", figures,
                    _loss(explaining[0]) + _more(len(explaining) - 1, len(tuning)))
    if end is not None and end.how in STOPPED_LEADS and any(f.severity == "critical" for f in findings):
        when = f" after step {end.after_step}" if end.after_step is not None else ""
        return _fit(f"The run {STOPPED_WORDS[end.how]}{when}; no cause of a slowdown found", figures,
                    _more(0, len(tuning)))
    if tuning:
        return _fit("No cause of a slowdown found", figures, _more(0, len(tuning)))
    if picture and ("low utilization" in picture or (m.mfu is not None and m.mfu < LOW_MFU)):
        return _fit("Utilization is low and no rule explains it", figures, "; see the next measurement.")
    if m.steps is None and not picture:
        # Nothing times the run: "no problem" would be a claim the text cannot back.
        read = f"{m.steps_read} steps read, none timed" if m.steps_read else "no step line read"
        return _fit(f"Not enough to tell: {read}", figures, "; see the next measurement.")
    return _fit("No problem found", figures, ".")


def _hf_dicts_time_the_steps(model: RunModel) -> bool:
    """The printed clock is the HF Trainer's log dicts placed one step apart (no other kind prints step times)."""
    if not model.hf_steps_unknown:
        return False
    printed = model.frames["steps"].filter(pl.col("origin").is_in(PRINTED_CLOCKS))["origin"].cast(pl.String).unique()
    return printed.to_list() == ["hf_log"]


def next_steps(findings: list[Finding], m: Metrics, model: RunModel) -> tuple[str, ...]:
    """What to measure next when the evidence runs out: the exact switch for each missing signal."""
    f = model.facts
    out = []
    if m.steps is None and not any(x.explains_slowdown for x in findings):
        out.append("Paste the lines that print step times (the trainer's progress lines, with their timestamps), "
                   "or the whole log: no line read here says how long a step took.")
    if m.steps is not None and m.steps.source == "printed" and _hf_dicts_time_the_steps(model):
        out.append("Give the run's logging_steps (the trainer's arguments or YAML, or the `--logging_steps` of its "
                   "launch command) or paste its progress bar: the HF Trainer's log dicts print no step, so the "
                   "step times above are the time between two of them, not per step.")
    if m.breakdown is None and f.zero_stage is not None:
        out.append('Add "wall_clock_breakdown": true to the DeepSpeed config: per-step fwd / bwd / allreduce / '
                   "optimizer timers.")
    if not m.comm_ops and (f.world_size or 1) > 1 and f.zero_stage is not None:
        out.append('Add "comms_logger": {"enabled": true, "prof_all": true} and call deepspeed.comm.log_summary() '
                   "at the end: bandwidth per collective.")
    if (f.nodes or 1) > 1 and f.nccl.network is None:
        out.append("Run with NCCL_DEBUG=INFO: shows whether NCCL uses InfiniBand/RoCE or TCP sockets.")
    if not any(x.explains_slowdown for x in findings) and (f.backend == "gloo" or f.accelerator == "cpu"):
        out.append("Profile a few steps on the CPU: `py-spy record --native -o profile.svg -- python train.py`, or "
                   "torch.profiler with `activities=[ProfilerActivity.CPU]`, and check the thread settings "
                   "(OMP_NUM_THREADS, torch.get_num_threads()) of each process.")
    elif not any(x.explains_slowdown for x in findings):
        out.append("Profile a few steps: `nsys profile -t cuda,nvtx,osrt -s none --capture-range=cudaProfilerApi "
                   "python train.py` then `nsys analyze`, or torch.profiler with a tensorboard trace, and check "
                   "the launch script and environment for CUDA_LAUNCH_BLOCKING and debug variables.")
    return tuple(out)
