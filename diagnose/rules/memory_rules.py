"""Memory pressure (causes.md C6)."""
from __future__ import annotations

import polars as pl

from diagnose.parsers.scalars import number_or_none
from diagnose.rules import Change, Ctx, Evidence, Finding, Fix, rule

FLUSH_CRITICAL_WARNINGS = 3  # the warning repeating across steps means it happens every few steps, not once


@rule("allocator-cache-flush", "PyTorch allocator cache flushes under memory pressure",
      detects="DeepSpeed's `N pytorch allocator cache flushes since last step` warnings (ZeRO-3).",
      why="Each flush frees and re-reserves GPU memory with device-wide synchronisation; ranks flushing at "
          "different times stall each other's collectives. Users see steps take twice as long once they start.",
      evidence="The warning lines (rank 0 prints one per step with new flushes); the step times around them.",
      fix="Lower train_micro_batch_size_per_gpu (raise gradient_accumulation_steps), enable activation "
          "checkpointing, shrink stage3_max_live_parameters / stage3_prefetch_bucket_size, set "
          "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True.",
      drivers=(), scenario="synthetic/allocator_flush")
def allocator_cache_flush(ctx: Ctx) -> Finding | None:
    ev = ctx.model.frames["events"].filter(pl.col("kind") == "allocator_flush")
    if ev.height == 0:
        return None
    m, f = ctx.metrics, ctx.facts
    evidence = [Evidence(f"{r['count']} pytorch allocator cache flushes since last step",
                         ctx.model.source_name(r["source"]), r["line"]) for r in ev.head(3).iter_rows(named=True)]
    series = m.step_series
    if series is not None and m.first_flush_step is not None and series.height > 4:
        before = number_or_none(series.filter(pl.col("step") < m.first_flush_step)["step_time_s"].median())
        after = number_or_none(series.filter(pl.col("step") >= m.first_flush_step)["step_time_s"].median())
        if before and after:
            evidence.append(Evidence(f"median step {before:.2f} s before the first flush (step {m.first_flush_step}) "
                                     f"and {after:.2f} s after", kind="metric"))
    changes = [Change("env", "PYTORCH_CUDA_ALLOC_CONF", ctx.env("PYTORCH_CUDA_ALLOC_CONF"), "expandable_segments:True")]
    if f.micro_batch_per_gpu and f.micro_batch_per_gpu > 1:
        changes.insert(0, Change("ds_config", "train_micro_batch_size_per_gpu", f.micro_batch_per_gpu,
                                 f.micro_batch_per_gpu // 2))
        changes.insert(1, Change("ds_config", "gradient_accumulation_steps", f.grad_accum_steps,
                                 (f.grad_accum_steps or 1) * 2))
    return ctx.finding(
        severity="critical" if ev.height >= FLUSH_CRITICAL_WARNINGS else "warning",
        confidence="high",
        explains_slowdown=True,
        summary=f"{m.allocator_flushes} allocator cache flushes in {ev.height} steps: the GPUs run at the edge of "
                "their memory and synchronise to free it.",
        evidence=tuple(evidence),
        fix=Fix("Reduce memory pressure (same global batch).", tuple(changes),
                "No flushes; step time back to the pre-flush level."),
        data={"flushes": m.allocator_flushes, "warnings": ev.height},
    )
