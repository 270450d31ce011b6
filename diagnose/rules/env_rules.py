"""Debug switches left in the launch environment (causes.md C1)."""
from __future__ import annotations

import polars as pl

from diagnose.rules import Change, Ctx, Evidence, Finding, Fix, rule

TRUTHY = {"1", "true", "yes", "on"}


@rule("cuda-launch-blocking", "CUDA_LAUNCH_BLOCKING=1 makes every kernel launch synchronous",
      detects="CUDA_LAUNCH_BLOCKING set to 1 in the launch script, the launcher's environment or a printed env dump.",
      why="Every kernel launch waits for the GPU to finish, so the CPU can never run ahead and communication "
          "cannot overlap compute. Runs are uniformly 1.5-5x slower, with GPU utilization flat at 30-70% and "
          "memory unaffected: the dashboard looks like a data-loader or launch-bound run.",
      evidence="The variable in a launch script, sbatch file, `cmd =` line or `os.environ` dump; no library prints it.",
      fix="Remove `export CUDA_LAUNCH_BLOCKING=1` (it is a debugging aid) and consider a guard that refuses to "
          "train with it set.",
      drivers=("env.CUDA_LAUNCH_BLOCKING",), scenario="ds_zero2_debug_env")
def cuda_launch_blocking(ctx: Ctx) -> Finding | None:
    value = ctx.env("CUDA_LAUNCH_BLOCKING")
    if value is None or value.strip().lower() not in TRUTHY:
        return None
    if not ctx.gpu_run:
        # No CUDA kernels run on the CPU: the variable costs nothing here, and would on the GPUs this job moves to.
        return ctx.finding(
            title="CUDA_LAUNCH_BLOCKING=1 is set (no effect on the CPU)",
            severity="info",
            confidence="high",
            explains_slowdown=False,
            summary="CUDA_LAUNCH_BLOCKING=1 is set, but this run trains on the CPU, where no CUDA kernel is launched: "
                    "it costs nothing here. On GPUs it would serialise every kernel launch (1.5-5x).",
            evidence=(ctx.env_evidence("CUDA_LAUNCH_BLOCKING"),),
            fix=Fix("Unset CUDA_LAUNCH_BLOCKING before running on GPUs.",
                    (Change("env", "CUDA_LAUNCH_BLOCKING", value, None),), "No effect on the CPU; kernels launch "
                    "asynchronously on GPUs."),
        )
    return ctx.finding(
        severity="critical",
        confidence="high",
        explains_slowdown=True,
        summary="CUDA_LAUNCH_BLOCKING=1 is set for this run: every CUDA kernel launch blocks until it finishes, which "
                "serialises the whole step and typically costs 1.5-5x in step time.",
        evidence=(ctx.env_evidence("CUDA_LAUNCH_BLOCKING"),),
        fix=Fix("Unset CUDA_LAUNCH_BLOCKING in the launch script.",
                (Change("env", "CUDA_LAUNCH_BLOCKING", value, None),),
                "Kernels launch asynchronously again; expect step time to drop to what the hardware allows "
                "(often by half or more)."),
    )


_DEBUG_ENV = {
    "TORCH_DISTRIBUTED_DEBUG": ({"detail", "info"}, True,
                                "wraps every process group in a checking wrapper that validates each collective"),
    "NCCL_BLOCKING_WAIT": (TRUTHY, True, "makes the host block on every collective instead of polling"),
    "TORCH_NCCL_BLOCKING_WAIT": (TRUTHY, True, "makes the host block on every collective instead of polling"),
    "NCCL_DEBUG": ({"trace"}, True, "logs every NCCL call (TRACE)"),
    "TORCH_SHOW_CPP_STACKTRACES": (TRUTHY, False, "adds C++ stack capture to errors"),
    "TORCH_CPP_LOG_LEVEL": ({"info"}, False, "raises c10d logging"),
}


@rule("debug-switches", "Debugging switches left on",
      detects="TORCH_DISTRIBUTED_DEBUG=DETAIL/INFO, NCCL_BLOCKING_WAIT=1, NCCL_DEBUG=TRACE, autograd anomaly "
              "detection or an active profiler in the run.",
      why="Each adds synchronisation or bookkeeping to every step: DETAIL validates every collective, blocking "
          "waits stall the host, anomaly detection slows backward by ~50%, a profiler records every op.",
      evidence="The variables in the environment (launch script, env dumps); torch's `Anomaly Detection has been "
                "enabled` warning; profiler log lines.",
      fix="Unset the variables and remove `torch.autograd.set_detect_anomaly(True)` / profiler contexts from "
          "production runs.",
      drivers=("env.TORCH_DISTRIBUTED_DEBUG", "env.NCCL_DEBUG", "env.TORCH_SHOW_CPP_STACKTRACES"), scenario="ds_zero2_debug_env")
def debug_switches(ctx: Ctx) -> Finding | None:
    evidence: list[Evidence] = []
    changes: list[Change] = []
    slows = False
    for name, (bad, costly, what) in _DEBUG_ENV.items():
        value = ctx.env(name)
        if value is not None and value.strip().lower() in bad:
            evidence.append(ctx.env_evidence(name))
            changes.append(Change("env", name, value, None))
            slows = slows or costly
    ev = ctx.model.frames["events"].filter(pl.col("kind").is_in(["anomaly_detection", "profiler"]))
    for row in ev.head(3).iter_rows(named=True):
        evidence.append(Evidence(row["detail"] or row["kind"], ctx.model.source_name(row["source"]), row["line"]))
        slows = True
    if not evidence:
        return None
    names = ", ".join(c.key for c in changes) or "anomaly detection / profiler"
    return ctx.finding(
        severity="warning",
        confidence="high" if changes else "medium",
        explains_slowdown=slows,
        summary=f"Debug settings are active ({names}); they add synchronisation or bookkeeping to every step.",
        evidence=tuple(evidence),
        fix=Fix("Unset the debug variables; drop set_detect_anomaly / profiler from the training loop.",
                tuple(changes), "Removes per-collective validation and host blocking; typically 5-50%."),
    )


@rule("no-gpu", "Training runs on the CPU although a GPU run was meant",
      detects="The job's own output says it found no GPU (HF Trainer's `Using cpu_amp half precision backend`, "
              "bitsandbytes `compiled without GPU support`, `CUDA is not available`, Lightning `GPU available: "
              "False`) and nothing says the CPU was chosen on purpose (DS_ACCELERATOR=cpu, an empty "
              "CUDA_VISIBLE_DEVICES, accelerate `use_cpu: true`).",
      why="A CPU trains a transformer one to three orders of magnitude slower than a GPU; every other setting is "
          "beside the point until the GPU is used.",
      evidence="The job's device lines; the environment and configs for a deliberate CPU run.",
      fix="Install a CUDA build of PyTorch (and bitsandbytes) that matches the driver, and expose the GPUs to the "
          "job (CUDA_VISIBLE_DEVICES, `docker run --gpus all`, the scheduler's GPU request); check with "
          "`python -c 'import torch; print(torch.cuda.is_available())'`.",
      drivers=(), scenario="synthetic/no_gpu")
def no_gpu(ctx: Ctx) -> Finding | None:
    lines = ctx.model.frames["events"].filter(pl.col("kind") == "no_gpu")
    if lines.height == 0 or _cpu_on_purpose(ctx):
        return None
    evidence = tuple(Evidence(r["detail"], ctx.model.source_name(r["source"]), r["line"])
                     for r in lines.unique("detail", keep="first", maintain_order=True).head(3).iter_rows(named=True))
    return ctx.finding(
        title="Training runs on the CPU",
        severity="critical",
        confidence="high",
        explains_slowdown=True,
        summary="The job found no usable GPU and trains on the CPU, orders of magnitude slower.",
        evidence=evidence,
        fix=Fix("Make a CUDA build of PyTorch see the GPUs, then rerun; torch.cuda.is_available() must "
                "print True inside the job's environment.", (),
                "Training on the GPU: typically 10-1000x faster steps."),
    )


def _cpu_on_purpose(ctx: Ctx) -> bool:
    f = ctx.facts
    visible = ctx.env("CUDA_VISIBLE_DEVICES")
    return ((ctx.env("DS_ACCELERATOR") or "").lower() == "cpu" or (visible is not None and visible.strip() in ("", "-1"))
            or str(f.accelerate.get("use_cpu", "")).lower() == "true")
