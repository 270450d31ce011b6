"""ZeRO stage, offload and the optimizer step (causes.md C3, C5, C7, C8)."""
from __future__ import annotations

from typing import Any

from diagnose.planner import USABLE_FRACTION
from diagnose.recommend import global_batch
from diagnose.rules import Change, Ctx, Evidence, Finding, Fix, rule
from diagnose.scaling import StageComparison, spoken
from diagnose.parsers.facts import RunFacts

OPTIMIZER_STEP_SHARE = 0.4  # optimizer step > 40% of the timed step: far above the few % of a fused GPU AdamW
#                             (DeepSpeed #6834: offload step ~10 s vs 0.2 s fwd+bwd)
OFFLOAD_EXPLAINS_SHARE = 0.3
# Per-step costs that do not grow with the batch (the optimizer step, the gradient all-reduce) above this share of
# the timed step, with a small micro-batch: each step does too little work to amortise them.
FIXED_COST_SHARE = 0.4
SMALL_TOKENS_PER_GPU = 4096  # micro-batch x sequence below ~4k tokens leaves a 1B+ model launch/comm bound
#                              (causes.md C7; HF perf docs)
BIG_MODEL_PARAMS = 1e9
# A stage stated to take at least this many times the time of a lower one (the poster's own figures, rounded as
# people round them: a 10% difference is within that, 20% is not).
STATED_STAGE_COST = 1.2


def _stage_name(stage: int) -> str:
    return "no ZeRO (plain data parallel)" if stage == 0 else f"ZeRO-{stage}"


def _setting(f: RunFacts, key: str) -> object | None:
    """The run's effective DeepSpeed setting (engine dump, JSON), truthy-normalised; None when unknown."""
    known, value = f.effective("ds_config", key)
    if not known:
        return None
    return str(value).strip("'\"").lower() in ("true", "1") if not isinstance(value, bool) else value


def _option_name(name: str) -> str:
    """The planner's option names as people write them: zero3+offload -> ZeRO-3 with offload."""
    base, _, offload = name.partition("+")
    label = "plain data parallel" if base == "ddp" else f"ZeRO-{base[-1]}"
    return label + (" with CPU offload" if offload else "")


def _stated_stages(ctx: Ctx, said: StageComparison) -> Finding:
    """The text states the same training at two stages, the higher one slower: the lower one ran, so it fits."""
    what = {"step": "a step", "epoch": "an epoch", "run": "the run"}[said.basis]
    low, high = ("plain data parallel" if said.low == 0 else f"ZeRO-{said.low}"), _stage_name(said.high)
    costs = ("ZeRO-3 gathers the parameters in every forward and backward" if said.high == 3 else
             "the gradients and optimizer states are partitioned and exchanged")
    ev = [Evidence(f"{what} takes {spoken(said.high_s)} with {high} and {spoken(said.low_s)} with {low}: "
                   f"{said.cost:.2f}x the time", kind="metric")]
    seen = dict.fromkeys(said.evidence)
    ev += [Evidence("as stated", ctx.model.source_name(src), line) for src, line in seen]
    return ctx.finding(
        title=f"{high} takes {said.cost:.1f}x the time of {low}, which fits (as stated)",
        severity="warning",
        confidence="medium",
        explains_slowdown=True,
        summary=f"The text states {what} takes {spoken(said.high_s)} with {high} against {spoken(said.low_s)} "
                f"with {low}. Each stage up adds communication ({costs}), and the {low} run shows the model fits "
                "without it.",
        evidence=tuple(ev),
        fix=Fix(f"Train with {low}; go up a stage only for memory, in the maintainers' order (no ZeRO -> gradient "
                "accumulation / activation checkpointing -> ZeRO-1 -> ZeRO-2 -> ZeRO-3 -> offload).",
                (Change("ds_config", "zero_optimization.stage", said.high, said.low),),
                f"{what[0].upper()}{what[1:]} near the {spoken(said.low_s)} stated for {low}."),
        data={"stated_stage_cost": said.cost, "stated_low_stage": said.low, "stated_high_stage": said.high},
    )



@rule("zero-stage-too-high", "A lower ZeRO stage fits in memory",
      detects="ZeRO stage 2 or 3 (or offload) while the planner finds a lower stage whose model states fit on the "
              "GPUs with room for activations.",
      why="Each stage up adds communication: ZeRO-3 gathers parameters in every forward and backward (1.5x DDP's "
          "traffic, times the accumulation steps) and cannot skip partitioning for a model that fits; the memory "
          "it frees is unused.",
      evidence="Parameter count (logs, config or W&B), GPU count and memory, the configured stage; or a text that "
               "states the same training's time at two stages, the higher one slower.",
      fix="The stage the planner recommends, in the maintainers' order: no ZeRO -> gradient accumulation / "
          "activation checkpointing -> ZeRO-1 -> ZeRO-2 -> ZeRO-3 -> offload.",
      drivers=("zero_stage",), scenario="synthetic/seed_zero3_launch_blocking")
def zero_stage_too_high(ctx: Ctx) -> Finding | None:
    f, plan = ctx.facts, ctx.plan
    said = ctx.metrics.stages
    if said is not None and said.cost >= STATED_STAGE_COST:
        return _stated_stages(ctx, said)
    offloaded = f.offloaded
    if (f.data_parallel or f.world_size) == 1 and (f.zero_stage or 0) >= 1 and not offloaded:
        return _zero_on_one_gpu(ctx)
    if plan is None or f.zero_stage is None or plan.recommended == "none":
        return None
    if f.zero_stage <= plan.recommended_stage and not offloaded:
        return None
    # The planner has no row for every combination (ZeRO-1 with an offloaded optimizer): the stage alone then.
    current = next((s for s in plan.stages if s.stage == f.zero_stage and (s.offload is not None) == offloaded),
                   next((s for s in plan.stages if s.stage == f.zero_stage), None))
    rec = next((s for s in plan.stages if s.name == plan.recommended), None)
    if current is None or rec is None or rec.name == current.name:
        return None
    name = _stage_name(rec.stage)
    ev = [e for e in (ctx.fact_evidence("zero_stage", "zero_optimization.stage"),
                      ctx.fact_evidence("model_params", "parameters")) if e]
    ev += [Evidence(f"planner: {line}", kind="metric") for line in plan.steps]
    changes = [Change("ds_config", "zero_optimization.stage", f.zero_stage, rec.stage)]
    if plan.recommended_micro_batch is not None:
        changes += [Change("ds_config", "train_micro_batch_size_per_gpu", f.micro_batch_per_gpu,
                           plan.recommended_micro_batch),
                    Change("ds_config", "gradient_accumulation_steps", f.grad_accum_steps or 1,
                           plan.recommended_grad_accum)]
    if f.offload_optimizer not in (None, "none"):
        changes.append(Change("ds_config", "zero_optimization.offload_optimizer.device", f.offload_optimizer, "none"))
    if f.offload_param not in (None, "none"):
        changes.append(Change("ds_config", "zero_optimization.offload_param.device", f.offload_param, "none"))
    with_mb = (f" with micro-batch {plan.recommended_micro_batch} x accumulation {plan.recommended_grad_accum}"
               if plan.recommended_micro_batch is not None else "")
    if not plan.gpu_memory_known and plan.memory_basis == "measured":
        summary = (f"The logs do not name the GPU, but it held this run's measured peak of {plan.gpu_memory_gb:.1f} GB. "
                   f"On GPUs with at least {plan.gpu_memory_gb:.0f} GB, {name}{with_mb} fits within what the run "
                   f"already used (the arithmetic is below) and moves {rec.comm_gb_per_step or 0:.1f} GB per GPU per "
                   f"step against {current.comm_gb_per_step or 0:.1f} under the configured "
                   f"{_option_name(current.name)}.")
        confidence = "medium"
    elif not plan.gpu_memory_known:
        need = max(1.0, rec.model_states_gb / USABLE_FRACTION)
        summary = (f"The logs do not say how much memory the GPUs have. On GPUs with at least {need:.0f} GB, {name} "
                   f"holds the model states of {plan.params / 1e9:.2f}B parameters per replica "
                   f"({rec.model_states_gb:.1f} GB per GPU) with room for activations, and moves less data than the "
                   f"configured {_option_name(current.name)}.")
        confidence = "low"
    elif plan.memory_basis == "measured":
        summary = (f"From the run's measured peak memory, {name}{with_mb} fits on these {plan.gpu_memory_gb:.0f} GB "
                   f"GPUs (the arithmetic is below); the configured {_option_name(current.name)} moves "
                   f"{current.comm_gb_per_step or 0:.1f} GB per GPU per step against {rec.comm_gb_per_step or 0:.1f}.")
        confidence = "high"
    else:
        summary = (f"With {plan.params / 1e9:.2f}B parameters on {plan.gpus} GPUs of {plan.gpu_memory_gb:.0f} GB, "
                   f"{name} needs {rec.model_states_gb:.1f} GB of model states per GPU; the configured "
                   f"{_option_name(current.name)} "
                   "buys memory the run does not need at the price of more traffic (no peak memory in the logs: "
                   "activations are estimated).")
        confidence = "medium"
    return ctx.finding(
        title=f"{name[0].upper()}{name[1:]}{with_mb} fits: the configured {_option_name(current.name)} "
              "only adds communication",
        severity="warning" if plan.gpu_memory_known else "info",
        confidence=confidence,
        explains_slowdown=False,
        summary=summary + " Config to improve; on its own it does not explain a large slowdown.",
        evidence=tuple(ev),
        fix=Fix(f"Use {name}{with_mb}" + ("" if plan.gpu_memory_known or plan.memory_basis == "measured"
                                           else f" if the GPUs have at least "
                                           f"{max(1.0, rec.model_states_gb / USABLE_FRACTION):.0f} GB")
                + ".",
                tuple(changes), f"Per-GPU traffic from {current.comm_gb_per_step or 0:.1f} to "
                                f"{rec.comm_gb_per_step or 0:.1f} GB per optimizer step."),
        data={"recommended_stage": rec.stage, "recommended": plan.recommended,
              "memory_basis": plan.memory_basis, "gpu_memory_known": plan.gpu_memory_known},
    )


def _zero_on_one_gpu(ctx: Ctx) -> Finding:
    """Conclusive from two facts: ZeRO partitions over the data-parallel group, and here that group is one GPU."""
    f = ctx.facts
    ev = [e for e in (ctx.fact_evidence("zero_stage", "zero_optimization.stage"),
                      ctx.fact_evidence("world_size", "world size")) if e]
    return ctx.finding(
        title=f"ZeRO-{f.zero_stage} on a single GPU partitions nothing",
        severity="warning",
        confidence="high",
        explains_slowdown=False,
        summary=f"ZeRO-{f.zero_stage} divides model states over the data-parallel GPUs; with one GPU it "
                "saves no memory and still pays its bookkeeping (and, at stage 3, the parameter "
                "fetches). Config to improve; on its own it does not explain a large slowdown.",
        evidence=tuple(ev),
        fix=Fix("Use no ZeRO on one GPU (or offload, if the states do not fit).",
                (Change("ds_config", "zero_optimization.stage", f.zero_stage, 0),),
                "No partitioning overhead."),
        data={"recommended_stage": 0},
    )


@rule("offload-bottleneck", "CPU/NVMe offload makes the optimizer step the bottleneck",
      detects="offload_optimizer / offload_param to cpu or nvme, weighted by the optimizer step's share of the "
              "timed step.",
      why="The optimizer step then runs on the CPU (DeepSpeedCPUAdam) and parameters cross PCIe every step; "
          "users report step() going from 0.1 s to 10 s.",
      evidence="The DeepSpeed config or engine dump (offload device), `Adam Optimizer #0 is created with AVX...` "
               "lines, `step` timers against fwd+bwd.",
      fix="Drop the offload when the planner says the states fit on the GPUs; otherwise pin memory, make sure "
          "DeepSpeedCPUAdam is used, and amortise the step with more gradient accumulation.",
      drivers=("offload_optimizer", "offload_param"), scenario="ds_zero3_offload", costs=("optimizer",))
def offload_bottleneck(ctx: Ctx) -> Finding | None:
    f = ctx.facts
    device = f.offload_optimizer if f.offload_optimizer not in (None, "none") else f.offload_param
    if device in (None, "none"):
        return None
    br, st = ctx.metrics.breakdown, ctx.metrics.steps
    share = br.shares.get("optimizer", 0.0) if br else None
    # Offloaded work also runs outside the engine's timers (CPU Adam, PCIe copies): a wall-clock step far above the
    # timed one counts too.
    gap = st.p50_s / (br.total_ms / 1000.0) if br and st and st.source == "ds_step_ts" and br.total_ms else None
    # Evidence before blame: the optimizer step's measured share. DeepSpeed's `step` timer holds the CPU Adam step
    # and the parameter copies back, so a wall-clock gap beyond the timers is not the offload (input-bound looks
    # at it).
    explains = share is not None and share >= OFFLOAD_EXPLAINS_SHARE
    ev = [e for e in (ctx.fact_evidence("offload_optimizer", "offload_optimizer.device"),) if e]
    if br is not None:
        ev.append(Evidence(f"optimizer step {br.step_ms:.1f} ms of {br.total_ms:.1f} ms timed per step "
                           f"({share:.0%}); fwd {br.fwd_ms:.1f} ms", kind="metric"))
    del gap, st
    fits = ctx.plan is not None and any(s.fits and s.offload is None for s in ctx.plan.stages)
    pinned = _setting(f, "zero_optimization.offload_optimizer.pin_memory")
    if fits and f.offload_optimizer not in (None, "none"):
        changes: tuple[Change, ...] = (Change("ds_config", "zero_optimization.offload_optimizer.device",
                                              f.offload_optimizer, "none"),)
        advice = "Keep optimizer state on the GPU when it fits."
    elif pinned:
        changes = ()
        advice = ("The offload buffers are already pinned: amortise the CPU step over more gradient accumulation, "
                  "or move to GPUs where the states fit.")
    else:
        changes = (Change("ds_config", "zero_optimization.offload_optimizer.pin_memory", pinned, True),)
        advice = "Pin the offload buffers and amortise the step over more accumulation."
    tail = (f" and its step takes {share:.0%} of the timed step" if share is not None else
            "; the logs have no timers, so its cost is not measured (add \"wall_clock_breakdown\": true)")
    return ctx.finding(
        title=f"Optimizer state offloaded to {device}",
        severity="warning",
        confidence="high" if share is not None else "medium",
        explains_slowdown=explains,
        summary=f"The optimizer runs offloaded to {device}" + tail + ".",
        evidence=tuple(ev),
        fix=Fix(advice, changes, "The optimizer step back to GPU speed (tens of ms)."),
        data={"optimizer_share": share},
    )


@rule("slow-optimizer-step", "The optimizer step takes a large share of each step",
      detects="The `step` timer (less ZeRO's optimizer_allgather, where timed) above 40% of fwd+bwd+step without "
              "offload.",
      why="A fused GPU AdamW costs a few percent of a step; more points to an unfused or foreign optimizer, "
          "fp32 master copies on a slow path, or gradient clipping/norm syncs.",
      evidence="wall_clock_breakdown timers (and optimizer_* sub-timers for ZeRO-1/2).",
      fix="Use a fused optimizer (DeepSpeed FusedAdam, `optim=adamw_torch_fused`), check clipping, and for ZeRO "
          "check optimizer_allgather against optimizer_step.",
      drivers=(), scenario="synthetic/slow_optimizer_step", costs=("optimizer",))
def slow_optimizer_step(ctx: Ctx) -> Finding | None:
    br, f = ctx.metrics.breakdown, ctx.facts
    if br is None or f.offload_optimizer not in (None, "none"):
        return None
    # ZeRO-1/2 time the all-gather of the updated partitions inside `step`: that part is communication, not the
    # optimizer's own work, and counts against it only where it is not timed apart.
    share = (br.step_ms - (br.optimizer_allgather_ms or 0.0)) / br.total_ms
    if share < OPTIMIZER_STEP_SHARE:
        return None
    return ctx.finding(
        severity="warning",
        confidence="medium",
        explains_slowdown=ctx.gpu_run,
        summary=f"The optimizer step takes {share:.0%} of the timed step ({br.step_ms:.1f} ms).",
        evidence=(Evidence(f"step {br.step_ms:.1f} ms vs fwd {br.fwd_ms:.1f} ms + bwd "
                           f"{(br.bwd_inner_ms or 0) + (br.bwd_allreduce_ms or 0):.1f} ms (medians)", kind="metric"),),
        fix=Fix("Use a fused optimizer.", (Change("trainer_args", "optim", f.optimizer, "adamw_torch_fused"),),
                "Optimizer step down to a few percent of the step."),
        data={"optimizer_share": share},
    )


@rule("activation-checkpointing-unneeded", "Activation checkpointing is on although memory allows without it",
      detects="gradient_checkpointing / DeepSpeed activation checkpointing enabled while the planner's memory "
              "estimate (or the measured memory) leaves room for full activations.",
      why="Checkpointing recomputes the forward pass during backward: about a third more compute per step.",
      evidence="Trainer arguments / launch script / DeepSpeed config; model shape for the activation estimate.",
      fix="Turn it off, or use the freed memory for a larger micro-batch; keep it if memory is the constraint.",
      drivers=("gradient_checkpointing",), scenario="hf_trainer_fp32_gradckpt")
def activation_checkpointing_unneeded(ctx: Ctx) -> Finding | None:
    f, plan = ctx.facts, ctx.plan
    if not f.gradient_checkpointing:
        return None
    fits = None
    if plan is not None:
        rec = next((s for s in plan.stages if s.name == plan.recommended), None)
        fits = rec is not None and rec.fits and not plan.activation_checkpointing
    if fits is False:
        return None
    ev = [e for e in (ctx.fact_evidence("gradient_checkpointing", "gradient_checkpointing"),) if e]
    return ctx.finding(
        title="Activation checkpointing is on",
        severity="info",
        confidence="medium" if fits else "low",
        explains_slowdown=False,
        summary="Activation checkpointing recomputes the forward pass in backward (~33% more compute)"
                + ("; the memory estimate says the activations fit without it." if fits else
                   "; check whether memory really needs it."),
        evidence=tuple(ev),
        fix=Fix("Disable gradient checkpointing if memory allows.",
                (Change("trainer_args", "gradient_checkpointing", True, False),),
                "About 25% shorter steps when memory allows."),
    )


def _micro_batch_effect(facts: RunFacts, data: dict[str, Any], changes: tuple[Change, ...]) -> str | None:
    """What a larger micro-batch at the same global batch changes: the work per kernel, and under ZeRO-2/3 (which
    reduce gradients in every micro-step) the reductions per optimizer step; ZeRO-0/1 and DDP reduce once a step."""
    before, after = global_batch(facts), global_batch(facts, changes)
    if before is None or after is None or after[0] == before[0]:
        return None
    work = f"{after[0] / before[0]:g}x the samples per kernel launch (micro-batch {before[0]} -> {after[0]})"
    if (facts.zero_stage or 0) >= 2 and after[1] != before[1]:
        return (f"{work}; gradient reductions per optimizer step from {before[1]} to {after[1]} (ZeRO-"
                f"{facts.zero_stage} reduces in every micro-step).")
    return f"{work}; the same gradient traffic per optimizer step (reduced once a step)."


@rule("small-micro-batch", "Too little work per GPU per step",
      detects="micro-batch x sequence length below ~4k tokens per GPU for a 1B+ model, or, the length unknown, a "
              "micro-batch of 1 with many accumulation steps.",
      why="Small kernels leave the GPU launch- and communication-bound: utilization looks busy-but-slow and MFU "
          "stays low while memory has headroom.",
      evidence="train_micro_batch_size_per_gpu (config, HF block, launch flags), sequence length, parameters.",
      fix="Raise the micro-batch and lower gradient accumulation to keep the global batch; pack sequences.",
      drivers=("micro_batch_per_gpu",), scenario="synthetic/small_micro_batch", effect=_micro_batch_effect)
def small_micro_batch(ctx: Ctx) -> Finding | None:
    f = ctx.facts
    if not f.micro_batch_per_gpu:
        return None
    tokens = f.micro_batch_per_gpu * (f.seq_len or 0)
    # the tokens decide where the sequence length is known (one sequence of 16k tokens is no small micro-batch);
    # else a micro-batch of 1 under many accumulation steps
    small = tokens < SMALL_TOKENS_PER_GPU if f.seq_len else (
        f.micro_batch_per_gpu == 1 and (f.grad_accum_steps or 1) >= 8)
    br = ctx.metrics.breakdown
    fixed = (br.shares.get("optimizer", 0.0) + br.shares.get("allreduce", 0.0)) if br is not None else None
    if small and fixed is not None and fixed >= FIXED_COST_SHARE and ctx.gpu_run:
        return _fixed_costs_dominate(ctx, tokens, fixed)
    if not f.model_params or f.model_params < BIG_MODEL_PARAMS or not small:
        return None
    ga = f.grad_accum_steps or 1
    new_mb = f.micro_batch_per_gpu * 2
    changes = [Change("ds_config", "train_micro_batch_size_per_gpu", f.micro_batch_per_gpu, new_mb)]
    if ga > 1:
        changes.append(Change("ds_config", "gradient_accumulation_steps", ga, max(1, ga // 2)))
    return ctx.finding(
        severity="warning",
        confidence="medium",
        explains_slowdown=False,
        summary=f"Micro-batch {f.micro_batch_per_gpu}" + (f" x {f.seq_len} tokens = {tokens} tokens" if f.seq_len
                                                          else "") + " per GPU is small for a "
                f"{f.model_params / 1e9:.1f}B model.",
        evidence=tuple(e for e in (
ctx.fact_evidence("micro_batch_per_gpu", "train_micro_batch_size_per_gpu"),) if e),
        fix=Fix("Double the micro-batch and halve gradient accumulation (same global batch).", tuple(changes),
                _micro_batch_effect(f, {}, tuple(changes)) or ""),
    )



def _fixed_costs_dominate(ctx: Ctx, tokens: int, fixed: float) -> Finding:
    """Measured: the optimizer step and the all-reduce, which cost the same at any batch size, take much of it."""
    f, br = ctx.facts, ctx.metrics.breakdown
    assert br is not None
    ev = [e for e in (ctx.fact_evidence("micro_batch_per_gpu", "micro-batch"),) if e]
    ev.append(Evidence(f"optimizer step {br.step_ms:.1f} ms + gradient all-reduce {br.bwd_allreduce_ms or 0:.1f} ms "
                       f"= {fixed:.0%} of the {br.total_ms:.1f} ms timed step (median)", kind="metric"))
    size = f"{tokens} tokens" if tokens else f"micro-batch {f.micro_batch_per_gpu}"
    new_mb = f.micro_batch_per_gpu * 4 if f.micro_batch_per_gpu else None
    changes = (Change("ds_config", "train_micro_batch_size_per_gpu", f.micro_batch_per_gpu, new_mb),) \
        if f.zero_stage is not None else (Change("trainer_args", "micro-batch-size", f.micro_batch_per_gpu, new_mb),)
    return ctx.finding(
        severity="warning",
        confidence="medium",
        explains_slowdown=True,
        summary=f"Each GPU computes only {size} per micro-step, while the per-step costs that do not "
                f"shrink with the batch (optimizer step, gradient all-reduce) take {fixed:.0%} of the "
                "step.",
        evidence=tuple(ev),
        fix=Fix("Give each GPU more work per step: a larger micro-batch (memory permitting) with fewer "
                "accumulation steps or a larger global batch.", changes,
                "The fixed per-step costs spread over more samples."),
        data={"fixed_cost_share": fixed, "tokens_per_gpu": tokens},
    )
