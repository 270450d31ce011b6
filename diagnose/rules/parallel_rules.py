"""Model parallelism: the pipeline schedule's idle time (causes.md, pipeline parallelism)."""
from __future__ import annotations

from typing import Any

from diagnose.parsers.facts import RunFacts
from diagnose.recommend import global_batch
from diagnose.rules import Change, Ctx, Evidence, Finding, Fix, rule

# GPipe / 1F1B bubble = (p - 1) / (m + p - 1) of each step for p stages and m micro-batches (Narayanan et al. 2021,
# "Efficient Large-Scale Language Model Training on GPU Clusters", section 2.2). Above a quarter of the step the
# idle stages cost more than any communication setting can win back; m >= 4 (p - 1) keeps it under ~20%.
BUBBLE_EXPLAINS = 0.25
MICRO_BATCHES_PER_STAGE = 4


def bubble_fraction(stages: int, micro_batches: int) -> float:
    return (stages - 1) / (micro_batches + stages - 1)


def _bubble_effect(facts: RunFacts, data: dict[str, Any], changes: tuple[Change, ...]) -> str | None:
    """The bubble of the batch the changes give: micro-batches per step = global / (micro-batch x data-parallel)."""
    p, m = data.get("stages"), data.get("micro_batches")
    shape = global_batch(facts, changes)
    if not isinstance(p, int) or not isinstance(m, int) or shape is None:
        return None
    m_after = shape[1]
    if m_after == m:
        return f"The bubble stays {bubble_fraction(p, m):.0%} of the step ({m} micro-batches through {p} stages)."
    return (f"Bubble from {bubble_fraction(p, m):.0%} to {bubble_fraction(p, m_after):.0%} of the step: {m} -> "
            f"{m_after} micro-batches through {p} stages, (p-1)/(m+p-1) = {p - 1}/{m_after + p - 1}.")


@rule("pipeline-bubble", "Pipeline stages sit idle: too few micro-batches per global batch",
      detects="Pipeline parallelism with p stages and m micro-batches per global batch (global batch / (micro-batch "
              "x data-parallel size)) such that the schedule's bubble (p-1)/(m+p-1) exceeds a quarter of the step.",
      why="In each step a pipeline fills and drains: the first stage idles while the last works and the reverse. "
          "With few micro-batches most of the step is fill and drain, whatever the interconnect.",
      evidence="The parallel layout (Megatron's `using world size ... pipeline-model-parallel size`), micro and "
               "global batch (arguments or launch flags).",
      fix="More micro-batches per step (a larger global batch, or a smaller micro-batch at the same global batch), "
          "the interleaved schedule (--num-layers-per-virtual-pipeline-stage), or fewer pipeline stages.",
      drivers=("pipeline_parallel", "grad_accum_steps"), scenario="synthetic/pipeline_bubble",
      symptoms=("comm-bound",), effect=_bubble_effect)
def pipeline_bubble(ctx: Ctx) -> Finding | None:
    f = ctx.facts
    p = f.pipeline_parallel or 1
    if p < 2 or not f.train_batch_size or not f.micro_batch_per_gpu:
        return None
    dp = f.data_parallel or 1
    m = max(1, f.train_batch_size // (f.micro_batch_per_gpu * dp))
    bubble = bubble_fraction(p, m)
    if bubble < BUBBLE_EXPLAINS:
        return None
    target_m = MICRO_BATCHES_PER_STAGE * (p - 1)
    # At the same global batch, a smaller micro-batch gives more micro-batches (and takes less memory): the fix where
    # it shrinks the bubble enough. Otherwise only a larger global batch does, which changes the optimisation (the
    # learning rate and warmup are tuned for a batch size): the fix says so, with the product before and after.
    small_m = f.train_batch_size // dp
    same_batch = f.micro_batch_per_gpu > 1 and f.train_batch_size % dp == 0 and \
        bubble_fraction(p, small_m) < BUBBLE_EXPLAINS
    new_global = target_m * f.micro_batch_per_gpu * dp
    evidence = [e for e in (ctx.fact_evidence("pipeline_parallel", "pipeline stages"),
                            ctx.fact_evidence("train_batch_size", "global batch"),
                            ctx.fact_evidence("micro_batch_per_gpu", "micro-batch")) if e]
    evidence.append(Evidence(f"{m} micro-batch(es) per step through {p} stages: bubble (p-1)/(m+p-1) = "
                             f"{p - 1}/{m + p - 1} = {bubble:.0%} of each step idle", kind="metric"))
    br = ctx.metrics.breakdown
    if br is not None and br.shares.get("pipeline_p2p"):
        evidence.append(Evidence(f"pipeline send/recv waits: {br.shares['pipeline_p2p']:.0%} of the timed step",
                                 kind="metric"))
    return ctx.finding(
        severity="warning",
        confidence="high",
        explains_slowdown=True,
        summary=f"{p} pipeline stages process only {m} micro-batch(es) per step, so about {bubble:.0%} of "
                "every step is pipeline fill and drain with most stages idle.",
        evidence=tuple(evidence),
        fix=Fix(f"Feed the pipeline more micro-batches per step at the same global batch of {f.train_batch_size}: "
                f"micro-batch 1 instead of {f.micro_batch_per_gpu} gives {small_m}.",
                (Change("trainer_args", "micro-batch-size", f.micro_batch_per_gpu, 1),),
                f"Bubble from {bubble:.0%} to {bubble_fraction(p, small_m):.0%} of the step.")
        if same_batch else
        Fix(f"Feed the pipeline at least {target_m} micro-batches per step (4 per stage): a global batch of "
            f"{new_global} at micro-batch {f.micro_batch_per_gpu}, or fewer stages (more tensor or data parallel).",
            (Change("trainer_args", "global-batch-size", f.train_batch_size, new_global),),
            f"Bubble from {bubble:.0%} to {bubble_fraction(p, target_m):.0%} of the step."),
        data={"bubble_fraction": bubble, "stages": p, "micro_batches": m, **({} if same_batch else {
            "global_batch_change": f"at micro-batch {f.micro_batch_per_gpu} only a larger global batch adds "
                                   "micro-batches; a larger batch changes the optimisation, so scale the learning "
                                   "rate and warmup with it"})},
    )
