"""Step-time shapes and precision: input pipeline, periodic stalls, slowdown over time, dtype, fp16 skips
(causes.md C4, C9, C10)."""
from __future__ import annotations

import polars as pl

from diagnose.hardware import has_tensor_cores
from diagnose.metrics import SPIKE_FACTOR, TREND_FACTOR, TREND_SIGNIFICANCE, spike_period
from diagnose.rules import Change, Ctx, Evidence, Finding, Fix, rule

INPUT_GAP_FACTOR = 1.3  # wall step 30% longer than fwd+bwd+step: time outside the engine (causes.md C4)
PRINTED_GAP_FACTOR = 2.0  # wall-clock cadence twice the trainer's printed step time: a coarser clock, a wider margin
# An untimed remainder under 0.1 s a step is what per-step Python logging and metric syncs cost a small model
# (a 3.5 ms step every 38 ms in a healthy toy DDP run); a starved pipeline or a host-bound loop costs more.
PRINTED_GAP_MIN_S = 0.1
DATA_WAIT_SHARE = 0.25  # a quarter of each step waiting for the batch (mmcv's data_time; a fed pipeline shows ~0)
STALL_SHARE = 0.1  # stalls adding >10% to the run's time are worth fixing (TF profiler's 5%/20% bands)
MATERIAL_COMPUTE_SHARE = 0.5  # matmul time at least half the step: tensor cores' 2-8x on it shows in step time
TENSOR_CORE_PARAMS = 1e8  # without timers: from ~100M parameters the matmuls are large enough to be the step
SKIP_FRACTION = 0.05  # >5% of optimizer steps skipped after warm-up wastes compute (loss scale stuck low)
LOSS_SCALE_FLOOR = 4.0  # 2^2: 14 halvings below DeepSpeed's 2^16 start; DeepSpeed's min_loss_scale default is 1


@rule("input-bound", "The input pipeline starves the GPUs",
      detects="Wall-clock step time well above the engine's own fwd+bwd+step time, a data wait that is a quarter of "
              "each step or of the run (a 20 s wait every few steps), every k-th step (k <= 16) slow with no save or "
              "evaluation at it (the loader's workers falling behind), PyTorch data-loader worker warnings, or "
              "dataloader_num_workers=0.",
      why="Time between steps spent loading, tokenising or collating data is time the GPUs sit idle; NVML "
          "utilization shows a sawtooth.",
      evidence="DeepSpeed step-line timestamps against wall_clock_breakdown timers; DataLoader warnings; the "
               "Trainer's dataloader_num_workers.",
      fix="dataloader_num_workers 4-8 per GPU, pin_memory, persistent workers, pre-tokenised / packed data.",
      drivers=(), scenario="synthetic/input_bound", costs=("data wait",))
def input_bound(ctx: Ctx) -> Finding | None:
    m, f = ctx.metrics, ctx.facts
    evidence: list[Evidence] = []
    gap = None
    if m.steps is not None and m.steps.source == "ds_step_ts" and m.breakdown is not None:
        gap = m.steps.p50_s / (m.breakdown.total_ms / 1000.0) if m.breakdown.total_ms else None
        if gap is not None and gap >= INPUT_GAP_FACTOR:
            evidence.append(Evidence(f"wall-clock step {m.steps.p50_s * 1000:.0f} ms (median) vs "
                                     f"{m.breakdown.total_ms:.0f} ms inside fwd+bwd+step: {gap:.1f}x", kind="metric"))
    printed_gap = None
    if m.printed_vs_wall is not None and m.printed_vs_wall[0] > 0:
        printed, wall = m.printed_vs_wall
        printed_gap = wall / printed if wall - printed >= PRINTED_GAP_MIN_S else None
        if printed_gap is not None and printed_gap >= PRINTED_GAP_FACTOR:
            evidence.append(Evidence(f"the trainer times each step at {printed * 1000:.0f} ms (median) but its step "
                                     f"lines come every {wall * 1000:.0f} ms per step: {printed_gap:.1f}x",
                                     kind="metric"))
    if m.data_wait_share is not None and m.data_wait_share >= DATA_WAIT_SHARE:
        evidence.append(Evidence(f"data_time is {m.data_wait_share:.0%} of each step's time (median)", kind="metric"))
    stalled = m.data_stalls is not None and m.data_stalls[0] >= DATA_WAIT_SHARE and not (
        m.data_wait_share is not None and m.data_wait_share >= DATA_WAIT_SHARE)
    if stalled and m.data_stalls is not None:
        share, at, longest = m.data_stalls
        evidence.append(Evidence(f"waits for data are {share:.0%} of the time though most steps wait for none: the "
                                 f"longest {longest:.1f} s at step {at}", kind="metric"))
    loader = m.loader_period
    if loader is not None and m.steps is not None:
        evidence.append(Evidence(f"every {loader}{_nth(loader)} step takes >= {SPIKE_FACTOR:.0f}x the others (steps "
                                 f"{', '.join(map(str, m.steps.spikes[:6]))}) with no checkpoint or evaluation at "
                                 "them: the rhythm of data-loader workers that fall behind", kind="metric"))
    warn = ctx.model.frames["events"].filter(pl.col("kind") == "dataloader_warning")
    for r in warn.head(2).iter_rows(named=True):
        evidence.append(Evidence(r["detail"], ctx.model.source_name(r["source"]), r["line"]))
    if f.dataloader_num_workers == 0:
        evidence.append(ctx.fact_evidence("dataloader_num_workers", "dataloader_num_workers")
                        or Evidence("dataloader_num_workers = 0", kind="config"))
    if not evidence:
        return None
    # Allocator flushes and checkpoint stalls also happen outside the engine's timers; with them present the gap
    # alone does not point at the data pipeline.
    other = m.allocator_flushes > 0 or bool(m.stall_events)
    measured = (gap is not None and gap >= INPUT_GAP_FACTOR) or (
        printed_gap is not None and printed_gap >= PRINTED_GAP_FACTOR)
    # The data pipeline is named as the cause only where the logs show one: data-wait timers, the data loader's
    # warnings or settings, or a trainer that loads through a DataLoader of its own (the HF Trainer, Megatron).
    data_signal = (m.data_wait_share is not None or warn.height > 0 or f.dataloader_num_workers is not None
                   or f.framework in ("hf_trainer", "megatron"))
    if measured and not data_signal and loader is None:
        return _host_side_gap(ctx, gap, printed_gap, tuple(evidence), other)
    strong = (measured and not other) or stalled or loader is not None or (
        m.data_wait_share is not None and m.data_wait_share >= DATA_WAIT_SHARE)
    return ctx.finding(
        severity="warning" if strong else "info",
        confidence="high" if strong else "low",
        explains_slowdown=strong,
        summary=_input_summary(gap, printed_gap, m.data_wait_share, m.data_stalls, loader) if strong else
                "The data pipeline may not keep up (see evidence).",
        evidence=tuple(evidence),
        fix=Fix("Load data in parallel worker processes.",
                (Change("trainer_args", "dataloader_num_workers", f.dataloader_num_workers, 4),
                 Change("trainer_args", "dataloader_pin_memory", None, True)),
                "Data ready before each step; step time approaches the engine's compute time."),
        data={"wall_over_compute": gap},
    )


def _host_side_gap(ctx: Ctx, gap: float | None, printed_gap: float | None, evidence: tuple[Evidence, ...],
                   other: bool) -> Finding:
    """The step cadence well above the timed compute, with nothing in the logs that shows a data loader: time spent
    on the host outside the timed step, and the measurement that would split it."""
    ratio = gap if gap is not None and gap >= INPUT_GAP_FACTOR else printed_gap
    return ctx.finding(
        title="Steps spend time on the host outside the timed step",
        severity="warning",
        confidence="low",
        explains_slowdown=not other,
        summary=f"Each step takes {ratio:.1f}x its timed compute end to end. The logs show no data loader (no "
                "data-wait timer, loader warning or loader setting), so what fills the difference (loading or "
                "making batches, host-side Python, logging, synchronisation) is not known from them.",
        evidence=evidence,
        fix=Fix("Time the part of the loop outside forward/backward/step to split it: wrap the batch fetch in a "
                "timer (or `torch.profiler.record_function(\"data\")`) and compare it with the step time; if it is "
                "loading, use DataLoader worker processes.", (),
                "Knowing which host-side work fills the gap."),
        data={"wall_over_compute": ratio},
    )


def _nth(n: int) -> str:
    return {1: "st", 2: "nd", 3: "rd"}.get(n if n < 20 else n % 10, "th")


def _input_summary(gap: float | None, printed_gap: float | None, data_share: float | None,
                   stalls: tuple[float, int, float] | None = None, loader: int | None = None) -> str:
    if data_share is not None and data_share >= DATA_WAIT_SHARE:
        return f"Each step waits {data_share:.0%} of its time for the next batch: the data pipeline cannot keep up."
    if loader is not None:
        return (f"Every {loader}{_nth(loader)} step waits for its batch: the loader's workers make batches slower "
                "than the GPUs use them, so after each round of prefetched batches the loop stops for the next.")
    if stalls is not None and stalls[0] >= DATA_WAIT_SHARE:
        return (f"Some steps wait long for their batch ({stalls[2]:.1f} s at step {stalls[1]}), {stalls[0]:.0%} of "
                "the time in all: the loader's workers fall behind now and then (slow samples, too few workers).")
    ratio = gap if gap is not None and gap >= INPUT_GAP_FACTOR else printed_gap
    return (f"Each step takes {ratio:.1f}x its timed compute end to end; the difference is spent outside the model "
            "(data loading, host work, logging).")


@rule("periodic-stalls", "Periodic stalls at checkpoints, evaluation or logging",
      detects="Step-time spikes (>= 2x the median) that recur at a regular step interval or coincide with "
              "checkpoint saves / evaluations, or pauses between step lines at recurring saves / evaluations that "
              "the lines' timestamps show.",
      why="Saving a checkpoint (ZeRO-3 gathering 16-bit weights to rank 0) or evaluating pauses training on every "
          "GPU; wandb.watch and frequent logging add host syncs.",
      evidence="Step times from the logs, checkpoint/eval lines with their steps, W&B utilization gaps.",
      fix="Save and evaluate less often, save sharded ZeRO checkpoints (no 16-bit gather), WANDB_WATCH=false.",
      drivers=(), scenario="ds_zero3_ckpt", costs=("stalls",))
def periodic_stalls(ctx: Ctx) -> Finding | None:
    m = ctx.metrics
    if m.stalls_in_idle:
        return _stalls_from_utilization(ctx)
    if m.steps is not None and m.steps.spikes and (f := _stalls_from_spikes(ctx)) is not None:
        return f
    return _stalls_from_account(ctx)


def _share(ctx: Ctx, seconds: float) -> tuple[float | None, str]:
    """Stall seconds as a share, and of what: of the run's span in the goodput account (what the finding's cost
    divides by), or, without line timestamps, of the timed steps (the steps' own times, stalls included)."""
    acc = ctx.account
    if acc is not None and acc.span_s:
        return seconds / acc.span_s, "of the run"
    if acc is not None and acc.measured_s:
        return seconds / acc.measured_s, "of the timed steps"
    return None, ""


def _account_stalls(ctx: Ctx, kinds: list[str], steps: set[int] | None) -> tuple[float, int]:
    """(seconds, count) of the goodput account's stalls this finding names: the pauses at the named kinds of event
    and the spikes at the given steps (or every spike where no step is given). The account is the one place that
    measures a stall's seconds; the finding's share and its cost both come from these."""
    acc = ctx.account
    part = acc.part("stalls") if acc is not None else None
    if part is None:
        return 0.0, 0
    mine = [p for p in part.pieces if p.seconds and (
        STALL_KINDS.get(p.name) in kinds or (p.name == "spike" and (steps is None or p.step in steps)))]
    return sum(p.seconds or 0.0 for p in mine), len(mine)


def _stalls_from_spikes(ctx: Ctx) -> Finding | None:
    m = ctx.metrics
    stats = m.steps
    assert stats is not None
    saves = {step for kind, step, _ in m.stall_events if step is not None}
    aligned = [s for s in stats.spikes if s in saves or (s - 1) in saves]
    if not aligned and (stats.spike_period is None or m.loader_period is not None):
        return None  # a loader's rhythm is input-bound's
    kinds = sorted({k for k, step, _ in m.stall_events if step is not None and (step in aligned or step + 1 in aligned)})
    near = {s + d for s in aligned for d in (0, 1)} if aligned else None
    seconds, count = _account_stalls(ctx, kinds, near)
    if not count:
        return None  # spikes the account does not measure as time lost (CPU noise around a save)
    ev = [Evidence(f"steps {', '.join(map(str, stats.spikes[:8]))} took >= {SPIKE_FACTOR:.0f}x the median "
                   f"{stats.p50_s * 1000:.0f} ms" + (f" (every {stats.spike_period} steps)" if stats.spike_period else ""),
                   kind="metric")]
    ev += [Evidence(f"{k} at step {s}" + (f", next step {t:.2f} s" if t else ""), kind="metric")
           for k, s, t in m.stall_events[:4]]
    return _stalls(ctx, kinds, seconds, count, ev, "high" if aligned else "medium")


def _stalls_from_account(ctx: Ctx) -> Finding | None:
    """Pauses between step lines that the goodput account measured by the lines' timestamps and placed at a
    checkpoint save or an evaluation, recurring at a period: the pause can fall outside every step's printed time
    (Megatron's elapsed time per iteration leaves the save out)."""
    acc = ctx.account
    part = acc.part("stalls") if acc is not None else None
    if acc is None or part is None:
        return None
    pieces = sorted((p for p in part.pieces if p.name in STALL_KINDS and p.step is not None and p.seconds),
                    key=lambda p: p.step or 0)
    steps = [p.step for p in pieces if p.step is not None]
    period = spike_period(steps, [p.seconds or 0.0 for p in pieces])
    if period is None:
        return None
    kinds = sorted({STALL_KINDS[p.name] for p in pieces})
    extra = sum(p.seconds or 0.0 for p in pieces)
    ev = [Evidence(f"{len(pieces)} pauses at a {' or '.join(kinds)} every {period} steps (steps "
                   f"{', '.join(map(str, steps[:8]))}), {extra:.3g} s beyond the steady {acc.steady_step_s:.3g} s "
                   "a step, measured by the lines' timestamps", kind="metric")]
    return _stalls(ctx, kinds, extra, len(pieces), ev, "high")


STALL_KINDS = {"checkpoint": "checkpoint", "evaluation": "eval"}  # the account's stall names -> stall event kinds


def _fewer(changes: list[Change]) -> tuple[float, str] | None:
    """What share of the stall time a fix that saves / evaluates LESS_OFTEN times less often keeps."""
    if any(c.key in ("save_steps", "eval_steps") for c in changes):
        return 1.0 / LESS_OFTEN, f"one event in {LESS_OFTEN}"
    return None


def _stall_effect(seconds: float, changes: list[Change]) -> str:
    """The expected effect, from the change: the stall seconds times the share of the events the fix keeps."""
    fewer = _fewer(changes)
    if fewer is None:
        return ("Each save skips gathering the 16-bit weights to rank 0 (save them once at the end with "
                "`zero_to_fp32.py`)." if changes else "Less of the periodic work between steps.")
    keep, why = fewer
    return f"Stall time {seconds:.3g} s -> {seconds * keep:.3g} s ({why})."


def _stalls(ctx: Ctx, kinds: list[str], seconds: float, count: int, ev: list[Evidence],
            confidence: str) -> Finding:
    what = " and ".join(kinds)
    share, of = _share(ctx, seconds)
    changes = _less_often(ctx, kinds)
    explains = share is not None and share >= STALL_SHARE
    return ctx.finding(
        title=f"Training stalls at each {what}" if kinds else "Training stalls at a recurring step",
        severity="warning" if explains else "info",
        confidence=confidence,
        explains_slowdown=explains,
        summary=f"Steps stall periodically{' at ' + what if kinds else ''}: {count} stall(s), {seconds:.3g} s "
                "beyond the steady step in all" + (f", {share:.0%} {of}." if share is not None else "."),
        evidence=tuple(ev),
        fix=Fix("Do the periodic work less often, or asynchronously.", tuple(changes),
                _stall_effect(seconds, changes)),
        data={"stall_share": share, "stall_s": seconds, "stall_count": count,
              "stall_basis": "their excess over the steady step", "fix_keeps": _fewer(changes)},
    )


LESS_OFTEN = 4  # save / evaluate 4x less often: the stall time falls to a quarter


def _less_often(ctx: Ctx, kinds: list[str]) -> list[Change]:
    """save_steps / eval_steps LESS_OFTEN times the interval the run used (read from the events' steps)."""
    changes = []
    for kind, key in (("checkpoint", "save_steps"), ("eval", "eval_steps")):
        if kind not in kinds:
            continue
        steps = sorted({s for k, s, _ in ctx.metrics.stall_events if k == kind and s})
        gaps = [b - a for a, b in zip(steps, steps[1:]) if b > a]
        if gaps:
            interval = sorted(gaps)[len(gaps) // 2]
            changes.append(Change("trainer_args", key, interval, interval * LESS_OFTEN))
    if "checkpoint" in kinds and ctx.facts.zero_stage == 3:
        changes.append(Change("ds_config", "zero_optimization.stage3_gather_16bit_weights_on_model_save", None, False))
    return changes


def _stalls_from_utilization(ctx: Ctx) -> Finding:
    """W&B utilization samples and log timestamps on one clock: idle GPUs exactly when the run saved or evaluated.
    The time lost is the account's measure of those pauses where it has them (the idle minutes are counted between
    W&B's samples, a coarser clock); the idle minutes otherwise."""
    m = ctx.metrics
    kinds = sorted({k for k, _, _ in m.stalls_in_idle})
    idle = sum(s for _, _, s in m.stalls_in_idle)
    steps = [s for _, s, _ in m.stalls_in_idle if s is not None]
    seconds, count = _account_stalls(ctx, kinds, set())
    basis = "their excess over the steady step"
    if not count:
        seconds, count, basis = idle, len(m.stalls_in_idle), "the GPUs' idle time (utilization under 10% on every GPU)"
    share, of = _share(ctx, seconds)
    what = " and ".join(f"each {k}" for k in kinds)
    text = (f"utilization fell below 10% on every GPU for ~{idle / len(m.stalls_in_idle) / 60:.1f} min at {what}"
            + (f" (steps {', '.join(map(str, steps[:6]))})" if steps else ""))
    changes = _less_often(ctx, kinds)
    explains = share is None or share >= STALL_SHARE
    lost = f": {count} pause(s), {seconds:.3g} s beyond the steady step in all" if basis.startswith("their") else ""
    return ctx.finding(
        title=f"GPUs sit idle at {what}",
        severity="warning" if explains else "info",
        confidence="high",
        explains_slowdown=explains,
        summary=text[0].upper() + text[1:] + lost + (f", {share:.0%} {of}." if share is not None else "."),
        evidence=(Evidence(text + " (W&B system metrics against log timestamps)", kind="metric"),),
        fix=Fix("Do the periodic work less often, or asynchronously.", tuple(changes),
                _stall_effect(seconds, changes)),
        data={"stall_share": share, "stall_s": seconds, "stall_count": count, "stall_basis": basis,
              "fix_keeps": _fewer(changes)},
    )


@rule("progressive-slowdown", "Steps get slower as training goes on",
      detects="The last quarter's median step time 30% above the first quarter's (after warm-up), every quarter slower "
              "than the one before; in a log too short for quarters (fewer than 8 steps after the warm-up), every "
              "step (or timer) line longer than the last and 1.5x in all.",
      why="Growing step time points to a leak: wandb.watch histograms, accumulating Python objects or CUDA "
          "caching fragmentation, a filling disk, or thermal throttling.",
      evidence="Step times over the run from any clock (DeepSpeed, HF, tqdm, W&B).",
      fix="WANDB_WATCH=false, free per-step references (loss.item() not loss), PYTORCH_CUDA_ALLOC_CONF="
          "expandable_segments:True; watch GPU clocks and temperature.",
      drivers=(), scenario="synthetic/progressive_slowdown", costs=("slowdown",))
def progressive_slowdown(ctx: Ctx) -> Finding | None:
    s = ctx.metrics.steps
    if s is None or s.first_quarter_p50_s is None or s.last_quarter_p50_s is None:
        return _short_run_slowdown(ctx)
    ratio = s.last_quarter_p50_s / s.first_quarter_p50_s if s.first_quarter_p50_s else 0
    q = s.quarter_p50_s
    # A trend rises through the run; one jump between two flat halves is a step change (flushes, a slow node).
    rising = len(q) == 4 and all(b > a * 1.03 for a, b in zip(q, q[1:]))
    # ... and a rise the step times hold as a whole, not four medians of a few noisy samples ordered by chance
    significant = s.rise_p is not None and s.rise_p <= TREND_SIGNIFICANCE
    if ratio < TREND_FACTOR or not rising or not significant:
        return None
    grown = ctx.metrics.generation_growth
    if grown is not None and grown >= ROLLOUT_GROWTH:
        return ctx.finding(
            title="RL steps get longer as the rollouts do",
            severity="info",
            confidence="medium",
            explains_slowdown=False,
            summary=f"Median step time grew from {s.first_quarter_p50_s:.2f} s to {s.last_quarter_p50_s:.2f} s "
                    f"({ratio:.1f}x), {min(grown, 1.0):.0%} of it in generation: the answers grow longer as the "
                    "policy trains, a change of workload, not a leak.",
            evidence=(Evidence(f"first-quarter median {s.first_quarter_p50_s:.3f} s, last-quarter median "
                               f"{s.last_quarter_p50_s:.3f} s; generation's growth is {grown:.0%} of the step's",
                               kind="metric"),),
            fix=Fix("Nothing accumulates; if the step must stay short, cap the response length.", (),
                    "Step time that follows the answers' length."),
            data={"ratio": ratio, "generation_growth": grown},
        )
    changes = [Change("env", "WANDB_WATCH", ctx.env("WANDB_WATCH"), "false")] if ctx.env("WANDB_WATCH") not in (
        None, "false") else []
    return ctx.finding(
        severity="warning",
        confidence="medium",
        explains_slowdown=True,
        summary=f"Median step time grew from {s.first_quarter_p50_s:.2f} s (first quarter) to "
                f"{s.last_quarter_p50_s:.2f} s (last quarter): {ratio:.1f}x.",
        evidence=(Evidence(f"first-quarter median {s.first_quarter_p50_s:.3f} s, last-quarter median "
                           f"{s.last_quarter_p50_s:.3f} s over {s.n} steps ({s.source})", kind="metric"),),
        fix=Fix("Look for what accumulates per step.", tuple(changes),
                "Flat step time over the run."),
        data={"ratio": ratio},
    )


# Half of a slowing RL step's growth in generation: the rollouts grew (longer answers), not something per step.
ROLLOUT_GROWTH = 0.5
SHORT_RUN_MAX = 8  # fewer samples than this: too few for quarters, read as a sequence
SHORT_TREND_FACTOR = 1.5  # in a handful of steps, growth by half or more, every step longer than the last


def _short_run_slowdown(ctx: Ctx) -> Finding | None:
    """A handful of step times (or timed steps) each longer than the one before and growing by half or more."""
    m = ctx.metrics
    series = m.step_series["step_time_s"].to_list() if m.step_series is not None else []
    what = "step time"
    if len(series) < 3 and len(m.timed_totals) >= 3:
        series, what = [t / 1000.0 for t in m.timed_totals], "timed step (fwd + bwd + optimizer)"
    # Called where the steps are too few for quarters (fewer than 8 after the warm-up), so the series is read
    # whole: one with a few more entries than SHORT_RUN_MAX (the warm-up included) is no less a sequence.
    if len(series) < 3 or len(series) >= 2 * SHORT_RUN_MAX:
        return None
    monotone = all(b > a for a, b in zip(series, series[1:]))
    # ... or a rise that holds: every step of the later half slower by half than the slowest of the first quarter
    # (tqdm's averaged rate climbs step by step after a jump; the steps it averages jump once and stay).
    head, tail = series[:max(1, len(series) // 4)], series[len(series) // 2:]
    sustained = min(tail) >= SHORT_TREND_FACTOR * max(head)
    if not (monotone or sustained):
        return None
    low, high = (series[0], series[-1]) if monotone else (max(head), min(tail))
    ratio = high / low if low > 0 else 0.0
    if ratio < SHORT_TREND_FACTOR:
        return None
    seq = ", ".join(f"{v:.2f}" for v in series)
    return ctx.finding(
        severity="warning",
        confidence="medium",
        explains_slowdown=True,
        summary=(f"Every {what} the log shows is longer than the one before: {seq} s, {ratio:.1f}x over "
                 f"{len(series)} samples." if monotone else
                 f"The later {what}s the log shows are all at least {ratio:.1f}x the first ones: {seq} s."),
        evidence=(Evidence(f"{what}s in order: {seq} s", kind="metric"),),
        fix=Fix("Look for what accumulates per step (gradients or tensors kept across steps, growing "
                "inputs, wandb.watch, fragmentation); watch GPU clocks and temperature.", (),
                "Flat step time over the run."),
        data={"ratio": ratio},
    )


@rule("no-mixed-precision", "Training in fp32 on GPUs with bf16/fp16 tensor cores",
      detects="No bf16/fp16 in the DeepSpeed config, accelerate mixed_precision 'no', no --bf16/--fp16.",
      why="fp32 matmuls run at a fraction of tensor-core throughput (A100: 19.5 vs 312 TFLOP/s) and double "
          "memory traffic.",
      evidence="DeepSpeed config / engine dump (bf16, fp16 sections), accelerate YAML or state, Trainer flags.",
      fix='"bf16": {"enabled": true} (A100/H100), fp16 with dynamic loss scaling on V100.',
      drivers=("precision",), scenario="hf_trainer_fp32_gradckpt")
def no_mixed_precision(ctx: Ctx) -> Finding | None:
    f = ctx.facts
    if f.precision != "fp32":
        return None
    gpu = ctx.gpu_run
    ev = [e for e in (ctx.fact_evidence("precision", "precision"),) if e]
    # Evidence before blame: fp32 costs time only where matmuls are a material share of the step.
    br, st = ctx.metrics.breakdown, ctx.metrics.steps
    compute_ms = (br.fwd_ms + (br.bwd_inner_ms or 0.0)) if br is not None else None
    wall_ms = st.p50_s * 1000 if st is not None else (br.total_ms if br is not None else None)
    share = compute_ms / wall_ms if compute_ms is not None and wall_ms else None
    big = (f.model_params or 0) >= TENSOR_CORE_PARAMS
    if share is not None:
        ev.append(Evidence(f"forward + backward compute {compute_ms:.1f} ms of a {wall_ms:.1f} ms step ({share:.0%})",
                           kind="metric"))
    material = (share >= MATERIAL_COMPUTE_SHARE) if share is not None else big
    cores = has_tensor_cores(f.gpu_name)
    gpu = gpu and material and cores is not False
    changes = [Change("ds_config", "bf16.enabled", False, True)] if f.zero_stage is not None or f.ds_config else []
    if f.launcher == "accelerate" or f.accelerate:
        changes.append(Change("accelerate", "mixed_precision", "no", "bf16"))
    why_not = (" (a CPU run here, where bf16 speed depends on the CPU)." if not ctx.gpu_run else
               f"; the {f.gpu_name} has no tensor cores, so half precision buys no matmul speed there." if
               cores is False else
               f"; compute is only {share:.0%} of the step here, so precision is not what slows it." if share is not None
               else "; with no timers and no parameter count in the logs, whether it matters is not measured "
                    "(wall_clock_breakdown would show the compute share).")
    return ctx.finding(
        title="Training in fp32",
        severity="warning" if gpu else "info",
        confidence="high",
        explains_slowdown=gpu,
        summary="The run trains in fp32" + ("; tensor cores run bf16/fp16 several times faster." if gpu else
                                            why_not),
        evidence=tuple(ev),
        fix=Fix("Train in bf16.", tuple(changes), "Up to 2-8x faster matmuls on A100/H100.")
 if ctx.gpu_run else None,
    )  # tensor-core advice has no place in a CPU run's recommended config


@rule("fp16-overflow-skips", "fp16 overflows keep skipping optimizer steps",
      detects="More than 5% of optimizer steps skipped after the loss-scale warm-up (DeepSpeed's `skipped=` counter, "
              "Megatron's `number of skipped iterations`, or overflow messages once per step over the steps the log "
              "shows), or the loss scale driven down to its floor (<= 4).",
      why="A skipped step does all the work of a step and updates nothing; a loss scale stuck near 1 means the "
          "model is barely training. A cascade of overflows during the first ~32 steps is the loss scale finding "
          "its level, and 1-2% skipped later on is normal.",
      evidence="`step=N, skipped=K` lines, Megatron iteration lines, OVERFLOW / loss-scale lines with the scale.",
      fix="bf16 instead of fp16 where the GPU supports it; otherwise lower the learning rate, clip gradients, "
          "raise fp16.loss_scale_window / hysteresis.",
      drivers=(), scenario="synthetic/fp16_overflow", costs=("skipped steps",))
def fp16_overflow_skips(ctx: Ctx) -> Finding | None:
    m = ctx.metrics
    frac = m.skipped_fraction
    floor = m.loss_scale_min is not None and m.loss_scale_min <= LOSS_SCALE_FLOOR
    if not floor and (frac is None or frac < SKIP_FRACTION):
        return None
    over = ctx.model.frames["events"].filter(pl.col("kind").is_in(["overflow", "loss_scale"]))
    ev = [Evidence(f"skipped steps after the warm-up: {frac:.0%} of optimizer steps", kind="metric")] \
        if frac is not None else []
    if floor:
        ev.append(Evidence(f"loss scale driven down to {m.loss_scale_min:g}", kind="metric"))
    ev += [Evidence(r["detail"] or "OVERFLOW", ctx.model.source_name(r["source"]), r["line"])
           for r in over.tail(2).iter_rows(named=True)]
    what = (f"{frac:.0%} of optimizer steps were skipped for fp16 overflow" if frac is not None and frac >= SKIP_FRACTION
            else "fp16 overflows keep recurring")
    changes = (Change("ds_config", "fp16.enabled", True, False), Change("ds_config", "bf16.enabled", None, True))
    return ctx.finding(
        severity="critical" if floor else "warning",
        confidence="high",
        explains_slowdown=True,
        summary=what + (f" and the loss scale fell to {m.loss_scale_min:g}: the model is barely "
                        "training." if floor else "."),
        evidence=tuple(ev),
        fix=Fix("Switch to bf16 (A100/H100); on fp16-only GPUs lower the learning rate and clip gradients.",
                changes, "Every step updates the weights."),
        data={"skipped_fraction": frac, "loss_scale_min": m.loss_scale_min},
    )


# RLHF: generation past half of the end-to-end step. With DeepSpeed-Chat's hybrid engine this is the expected shape
# (its authors report generation as the largest share even then); without it the actor generates through the ZeRO
# training engine, which DeepSpeed-Chat's docs put at up to ~10x slower generation.
GENERATION_SHARE = 0.5


@rule("rlhf-generation-bound", "RLHF steps are dominated by generation",
      detects="RL step lines (DeepSpeed-Chat's `E2E latency | Generate time | Training time`, verl's "
              "`timing_s/gen ... timing_s/update_actor ... timing_s/step`) where generation takes more than half of "
              "the end-to-end step, or is its largest phase (above training and above the rest together).",
      why="Each PPO / GRPO step first generates answers with the actor; through the training engine (ZeRO-partitioned "
          "weights, no inference kernels) generation is many times slower than the training that follows, and even "
          "through an inference engine it is the step's critical path while the training GPUs wait.",
      evidence="The step lines' generation and training times; the launch command's --enable_hybrid_engine.",
      fix="DeepSpeed-Chat: --enable_hybrid_engine (inference kernels and one weight layout for generation), with "
          "--inference_tp_size and --tp_gather_partition_size for large actors; shorter --max_answer_seq_len. "
          "An inference-engine rollout (verl, OpenRLHF): more of the GPU's memory for its KV cache, the smallest "
          "rollout tensor parallelism that fits, a cap on the response length, asynchronous rollout.",
      drivers=(), scenario="synthetic/rlhf_generation")
def rlhf_generation_bound(ctx: Ctx) -> Finding | None:
    share, train = ctx.metrics.generation_share, ctx.metrics.training_share
    if share is None:
        return None
    largest = train is not None and share > train and share > 1.0 - share - train
    if share < GENERATION_SHARE and not largest:
        return None
    if not ctx.model.frames["steps"].filter(pl.col("origin") == "dschat_rlhf_step").height:
        return _rollout_bound(ctx, share, train)
    hybrid = ctx.facts.hybrid_engine
    ev = [Evidence(f"generation is {share:.0%} of the end-to-end RLHF step (median)", kind="metric")]
    if hybrid:
        ev += [e for e in (ctx.fact_evidence("hybrid_engine", "--enable_hybrid_engine"),) if e]
        return ctx.finding(
            severity="info",
            confidence="medium",
            explains_slowdown=False,
            summary=f"Generation takes {share:.0%} of each RLHF step with the hybrid engine on: the usual "
                    "shape of PPO training, not a fault.",
            evidence=tuple(ev),
            fix=Fix("If the step must get faster: shorter answers (--max_answer_seq_len) or tensor "
                    "parallelism for generation (--inference_tp_size).", (),
                    "Shorter generation time per step."),
            data={"generation_share": share},
        )
    return ctx.finding(
        severity="warning",
        confidence="medium" if hybrid is None else "high",
        explains_slowdown=True,
        summary=f"Generation takes {share:.0%} of each RLHF step, and nothing shows the hybrid engine "
                "on: the actor generates through the training engine.",
        evidence=tuple(ev),
        fix=Fix("Enable DeepSpeed-Chat's hybrid engine for generation.",
                (Change("trainer_args", "enable_hybrid_engine", hybrid, True),),
                "Generation several times faster; the step approaches its training time."),
        data={"generation_share": share},
    )


def _rollout_bound(ctx: Ctx, share: float, train: float | None) -> Finding:
    """Generation by an inference engine of the trainer's own (verl's vLLM / SGLang rollout): the hybrid engine is
    not the fix; the rollout's batching, parallelism and answer length are."""
    vs = f", against {train:.0%} for the training phase" if train is not None else ""
    return ctx.finding(
        severity="warning",
        confidence="medium",
        explains_slowdown=True,
        summary=f"Generation (the rollout) takes {share:.0%} of each RL step{vs}: the largest phase, on the step's "
                "critical path while the training GPUs wait.",
        evidence=(Evidence(f"generation is {share:.0%} of the end-to-end RL step (median){vs}", kind="metric"),),
        fix=Fix("Make the rollout faster: give the inference engine more memory for its KV cache (verl: "
                "actor_rollout_ref.rollout.gpu_memory_utilization), the smallest rollout tensor parallelism that "
                "fits, a cap on the response length (data.max_response_length), or overlap rollout with training "
                "(asynchronous rollout).", (), "Shorter generation time per step."),
        data={"generation_share": share, "training_share": train},
    )
