"""Re-record the sample logs in sample_logs/ by running real DeepSpeed / accelerate / HF Trainer jobs.

Needs torch, deepspeed, accelerate, transformers and wandb (the `record` extra; see sample_logs/README.md). Runs on
the CPU (DeepSpeed's CPU accelerator over gloo) when no GPU is present. Each scenario writes
`sample_logs/<name>/`: `train.log` (the launcher's stdout and stderr, unedited), `launch.sh` (the exact command,
with the environment it set), the DeepSpeed config and/or accelerate config it used, and `versions.txt`.

    python sample_logs/record/record.py --python /path/to/venv/bin/python [--only NAME ...]

With `--gpu`, the one-GPU runs of sample_logs/gpu/ instead (torch, torchvision, transformers and accelerate; no
DeepSpeed), each launched with torchrun over NCCL after `nvidia-smi`.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
SAMPLES = HERE.parent
WORK = Path("/tmp/diagnose-rec")

COMMS = {"enabled": True, "verbose": False, "prof_all": True, "debug": False}
ADAMW = {"type": "AdamW", "params": {"lr": 3e-4, "betas": [0.9, 0.95], "eps": 1e-8, "weight_decay": 0.01}}
WARMUP = {"type": "WarmupLR", "params": {"warmup_min_lr": 0, "warmup_max_lr": 3e-4, "warmup_num_steps": 10}}


def ds_config(stage: int, **extra: object) -> dict:
    cfg: dict = {
        "train_micro_batch_size_per_gpu": 4,
        "gradient_accumulation_steps": 1,
        "steps_per_print": 1,
        "wall_clock_breakdown": True,
        "optimizer": ADAMW,
        "scheduler": WARMUP,
        "gradient_clipping": 1.0,
        "zero_optimization": {"stage": stage},
        "comms_logger": COMMS,
    }
    for key, value in extra.items():
        if isinstance(value, dict) and isinstance(cfg.get(key), dict):
            cfg[key] = {**cfg[key], **value}
        else:
            cfg[key] = value
    return cfg


@dataclass(frozen=True)
class Scenario:
    name: str
    what: str
    launcher: str  # deepspeed | torchrun | accelerate
    args: tuple[str, ...]
    ds_config: dict | None = None
    accelerate_yaml: str | None = None
    env: dict[str, str] = field(default_factory=dict)
    procs: int = 2
    script: str | None = None  # a torchrun scenario's own script (default: train_ds.py with its DeepSpeed config)
    nvidia_smi: bool = False  # the launch script runs nvidia-smi before the job, as cluster job scripts often do


ACCEL_DDP = """compute_environment: LOCAL_MACHINE
distributed_type: MULTI_GPU
downcast_bf16: 'no'
gpu_ids: all
machine_rank: 0
main_training_function: main
mixed_precision: {precision}
num_machines: 1
num_processes: 2
rdzv_backend: static
same_network: true
use_cpu: false
"""

ACCEL_DS = """compute_environment: LOCAL_MACHINE
deepspeed_config:
  deepspeed_config_file: {ds_config}
  zero3_init_flag: false
distributed_type: DEEPSPEED
downcast_bf16: 'no'
machine_rank: 0
main_training_function: main
num_machines: 1
num_processes: 2
rdzv_backend: static
same_network: true
use_cpu: false
"""

HF_DS_CONFIG = {
    "train_micro_batch_size_per_gpu": "auto",
    "gradient_accumulation_steps": "auto",
    "train_batch_size": "auto",
    "gradient_clipping": "auto",
    "wall_clock_breakdown": True,
    "log_level": "info",
    "zero_optimization": {"stage": 2, "overlap_comm": True, "contiguous_gradients": True},
}

SCENARIOS: tuple[Scenario, ...] = (
    Scenario("ds_zero0", "ZeRO-0 (plain data parallel), INFO logging, timers and comms logger: a healthy run",
             "deepspeed", ("--steps", "40", "--ds_log_level", "info"), ds_config(0)),
    Scenario("ds_zero1_straggler", "ZeRO-1 with rank 1 sleeping 40 ms before each backward (a straggler the other "
             "rank waits for in the all-reduce); comms summary with the straggler breakdown",
             "deepspeed", ("--steps", "20", "--ds_log_level", "info", "--show_straggler", "--slow_rank", "1",
                           "--slow_ms", "40"), ds_config(1)),
    Scenario("ds_zero0_default_loglevel", "ZeRO-0 at DeepSpeed's default WARNING worker log level",
             "deepspeed", ("--steps", "30"), ds_config(0)),
    Scenario("ds_zero1_ga2_torchrun", "ZeRO-1, gradient accumulation 2, memory_breakdown, launched with torchrun",
             "torchrun", ("--steps", "20", "--ds_log_level", "info"),
             ds_config(1, gradient_accumulation_steps=2, steps_per_print=5, memory_breakdown=True)),
    Scenario("ds_zero2_bf16", "ZeRO-2 with bf16, overlap_comm on: healthy ZeRO-2",
             "deepspeed", ("--steps", "40", "--ds_log_level", "info"),
             ds_config(2, bf16={"enabled": True}, zero_optimization={"overlap_comm": True, "contiguous_gradients": True})),
    Scenario("ds_zero2_ga4_overlap_off", "ZeRO-2, gradient accumulation 4, overlap_comm false",
             "deepspeed", ("--steps", "15", "--ds_log_level", "info"),
             ds_config(2, gradient_accumulation_steps=4, zero_optimization={"overlap_comm": False})),
    Scenario("ds_zero3_ckpt", "ZeRO-3, a checkpoint saved every 10 steps",
             "deepspeed", ("--steps", "30", "--ds_log_level", "info", "--save_dir", str(WORK / "ckpt_zero3"),
                           "--save_every", "10"), ds_config(3)),
    Scenario("ds_zero3_offload", "ZeRO-3 with the optimizer offloaded to the CPU (DeepSpeedCPUAdam)",
             "deepspeed", ("--steps", "20", "--ds_log_level", "info"),
             ds_config(3, zero_optimization={"offload_optimizer": {"device": "cpu", "pin_memory": True}},
                       steps_per_print=5)),
    Scenario("ds_zero2_flops", "ZeRO-2 with the flops profiler at step 5",
             "deepspeed", ("--steps", "15", "--ds_log_level", "info"),
             ds_config(2, flops_profiler={"enabled": True, "profile_step": 5, "module_depth": -1, "top_modules": 1,
                                          "detailed": True}, steps_per_print=5)),
    Scenario("ds_zero2_debug_env", "ZeRO-2 launched with CUDA_LAUNCH_BLOCKING=1, TORCH_DISTRIBUTED_DEBUG=DETAIL and "
             "NCCL_DEBUG=INFO exported in the launch script; the script prints its environment",
             "deepspeed", ("--steps", "20", "--ds_log_level", "info", "--print_env"), ds_config(2),
             env={"CUDA_LAUNCH_BLOCKING": "1", "TORCH_DISTRIBUTED_DEBUG": "DETAIL", "NCCL_DEBUG": "INFO"}),
    Scenario("hf_trainer_ddp_bf16", "HF Trainer under accelerate (DDP, bf16), eval every 20 steps, W&B offline",
             "accelerate", ("--max_steps", "40", "--bf16", "--report_to", "wandb", "--run_name", "hf-ddp-bf16"),
             accelerate_yaml=ACCEL_DDP.format(precision="bf16"),
             env={"WANDB_MODE": "offline", "WANDB_PROJECT": "diagnose-samples"}),
    Scenario("hf_trainer_fp32_gradckpt", "HF Trainer under accelerate (DDP), fp32, gradient checkpointing on, "
             "a checkpoint every 15 steps",
             "accelerate", ("--max_steps", "30", "--gradient_checkpointing", "--save_steps", "15"),
             accelerate_yaml=ACCEL_DDP.format(precision="'no'")),
    Scenario("hf_trainer_deepspeed", "HF Trainer + DeepSpeed ZeRO-2 through accelerate, 'auto' values",
             "accelerate", ("--max_steps", "30",), ds_config=HF_DS_CONFIG,
             accelerate_yaml=ACCEL_DS.format(ds_config="ds_config.json")),
)


# Pairs for `diagnose compare` (sample_logs/pairs/): one baseline and candidates that each change one thing, same
# script, steps and logging.
PAIR_ARGS = ("--steps", "30", "--ds_log_level", "info", "--show_straggler")
PAIRS: tuple[Scenario, ...] = (
    Scenario("pairs/base", "baseline: ZeRO-1, 2 ranks, accumulation 1", "deepspeed", PAIR_ARGS, ds_config(1)),
    Scenario("pairs/zero3", "the baseline with ZeRO-3", "deepspeed", PAIR_ARGS, ds_config(3)),
    Scenario("pairs/offload", "the baseline with the optimizer offloaded to the CPU", "deepspeed", PAIR_ARGS,
             ds_config(1, zero_optimization={"offload_optimizer": {"device": "cpu"}})),
    Scenario("pairs/one_rank", "the baseline on 1 rank", "deepspeed", PAIR_ARGS, ds_config(1), procs=1),
    Scenario("pairs/slow_rank", "the baseline with rank 1 sleeping 40 ms before each backward", "deepspeed",
             (*PAIR_ARGS, "--slow_rank", "1", "--slow_ms", "40"), ds_config(1)),
    Scenario("pairs/ga4", "the baseline with gradient accumulation 4", "deepspeed", PAIR_ARGS,
             ds_config(1, gradient_accumulation_steps=4)),
)


# GPU runs (sample_logs/gpu/, `--gpu`): one GPU, one process under torchrun over NCCL, each pair a healthy run and
# the same run with one fault we diagnose. GPT-2 small's shape (124M parameters, random weights, nothing
# downloaded) under the HF Trainer, and a ResNet-18 in pytorch/examples' ImageNet loop (train_loop.py).
GPT2_SMALL = ("--n_layer", "12", "--n_embd", "768", "--seq_len", "512", "--batch", "8", "--eval_steps", "100")
HF_GPU = ("--max_steps", "300", *GPT2_SMALL)
LOOP_ENV = {"NCCL_DEBUG": "INFO"}
BAR_LOOP = ("--epochs", "3", "--steps", "200", "--workers", "8", "--amp", "--bar", "tqdm")
GPU_SCENARIOS: tuple[Scenario, ...] = (
    Scenario("gpu/hf_bf16", "HF Trainer, GPT-2 small shape, bf16, one GPU: a healthy run", "torchrun",
             (*HF_GPU, "--bf16"), procs=1, script="train_hf.py", nvidia_smi=True),
    Scenario("gpu/hf_launch_blocking", "the healthy HF run with CUDA_LAUNCH_BLOCKING=1 left in the launch script",
             "torchrun", (*HF_GPU, "--bf16"), env={"CUDA_LAUNCH_BLOCKING": "1"}, procs=1, script="train_hf.py",
             nvidia_smi=True),
    Scenario("gpu/hf_fp32", "the healthy HF run without --bf16: fp32 on a GPU with bf16 tensor cores", "torchrun",
             HF_GPU, procs=1, script="train_hf.py", nvidia_smi=True),
    Scenario("gpu/hf_ckpt_every_25", "the healthy HF run saving a full checkpoint (weights and optimizer) every 25 "
             "steps", "torchrun", (*HF_GPU, "--bf16", "--save_steps", "25", "--save_total_limit", "2"), procs=1,
             script="train_hf.py", nvidia_smi=True),
    Scenario("gpu/loop_healthy", "ImageNet-style loop, ResNet-18, bf16 autocast, 8 loader workers: a healthy run",
             "torchrun", ("--steps", "500", "--workers", "8", "--amp"), env=LOOP_ENV, procs=1,
             script="train_loop.py", nvidia_smi=True),
    Scenario("gpu/loop_input_bound", "the same loop with 3 ms of CPU decoding a sample and 1 loader worker",
             "torchrun", ("--steps", "60", "--workers", "1", "--decode-ms", "3", "--amp"), env=LOOP_ENV, procs=1,
             script="train_loop.py", nvidia_smi=True),
    Scenario("gpu/bar_healthy", "the healthy loop drawing a tqdm bar per epoch, its loss as the postfix: 3 epochs",
             "torchrun", BAR_LOOP, env=LOOP_ENV, procs=1, script="train_loop.py", nvidia_smi=True),
    Scenario("gpu/bar_ckpt_every_50", "the same loop saving the model and the optimizer every 50 steps", "torchrun",
             (*BAR_LOOP, "--save-every", "50"), env=LOOP_ENV, procs=1, script="train_loop.py", nvidia_smi=True),
    Scenario("gpu/bar_lightning_ckpt_every_50", "the saving loop with its bar drawn as Lightning's TQDMProgressBar "
             "draws it (one bar reset every epoch, smoothing 0)", "torchrun",
             (*BAR_LOOP, "--save-every", "50", "--bar", "lightning"), env=LOOP_ENV, procs=1, script="train_loop.py",
             nvidia_smi=True),
    Scenario("gpu/loop_oom", "the healthy loop whose 35th batch is 20000 images: CUDA out of memory", "torchrun",
             ("--steps", "60", "--workers", "4", "--amp", "--oom-at", "35", "--oom-batch", "20000"), env=LOOP_ENV,
             procs=1, script="train_loop.py", nvidia_smi=True),
)


def command(sc: Scenario, py: Path, run_dir: Path) -> list[str]:
    bindir = py.parent
    if sc.script is not None:
        out = ["--output_dir", str(run_dir / "out")] if sc.script == "train_hf.py" else []
        return [str(bindir / "torchrun"), "--nproc_per_node", str(sc.procs), str(WORK / sc.script), *out, *sc.args]
    script = str(WORK / ("train_hf.py" if sc.launcher == "accelerate" else "train_ds.py"))
    if sc.launcher == "deepspeed":
        return [str(bindir / "deepspeed"), "--num_gpus", str(sc.procs), script, "--deepspeed_config",
                str(run_dir / "ds_config.json"), *sc.args]
    if sc.launcher == "torchrun":
        return [str(bindir / "torchrun"), "--nproc_per_node", str(sc.procs), script, "--deepspeed_config",
                str(run_dir / "ds_config.json"), *sc.args]
    extra = ["--deepspeed", str(run_dir / "ds_config.json")] if sc.ds_config else []
    return [str(bindir / "accelerate"), "launch", "--config_file", str(run_dir / "accelerate.yaml"), script,
            "--output_dir", str(run_dir / "out"), *extra, *sc.args]


def launch_script(sc: Scenario, cmd: list[str]) -> str:
    lines = ["#!/usr/bin/env bash", f"# {sc.what}", "set -euo pipefail"]
    lines += [f"export {k}={v}" for k, v in sc.env.items()]
    if sc.nvidia_smi:
        lines.append("nvidia-smi")
    lines.append(" ".join(Path(c).name if i == 0 else c for i, c in enumerate(cmd)))
    return "\n".join(lines) + "\n"


def record(sc: Scenario, py: Path) -> None:
    run_dir = WORK / sc.name
    shutil.rmtree(run_dir, ignore_errors=True)
    run_dir.mkdir(parents=True)
    out_dir = SAMPLES / sc.name
    shutil.rmtree(out_dir, ignore_errors=True)
    out_dir.mkdir(parents=True)
    if sc.ds_config is not None:
        text = json.dumps(sc.ds_config, indent=2) + "\n"
        (run_dir / "ds_config.json").write_text(text)
        (out_dir / "ds_config.json").write_text(text)
    if sc.accelerate_yaml is not None:
        yaml = sc.accelerate_yaml.replace("ds_config.json", str(run_dir / "ds_config.json"))
        (run_dir / "accelerate.yaml").write_text(yaml)
        (out_dir / "accelerate.yaml").write_text(yaml)
    cmd = command(sc, py, run_dir)
    (out_dir / "launch.sh").write_text(launch_script(sc, cmd))
    env = {**os.environ, "PYTHONUNBUFFERED": "1", "HF_HUB_OFFLINE": "1", "WANDB_DIR": str(run_dir),
           "PATH": f"{py.parent}:{os.environ['PATH']}", **sc.env}
    if not _has_gpu(py):
        env["DS_ACCELERATOR"] = "cpu"
    t0 = time.time()
    with open(out_dir / "train.log", "wb") as log:
        if sc.nvidia_smi:
            subprocess.call(["nvidia-smi"], stdout=log, stderr=subprocess.STDOUT)
            log.flush()
        rc = subprocess.call(cmd, cwd=WORK, env=env, stdout=log, stderr=subprocess.STDOUT)
    print(f"{sc.name}: exit {rc} in {time.time() - t0:.0f}s", flush=True)
    states = sorted((run_dir / "out").glob("checkpoint-*/trainer_state.json"), key=lambda p: int(p.parent.name[11:]))
    if states:
        shutil.copy(states[-1], out_dir / "trainer_state.json")
    wandb_dirs = sorted((run_dir / "wandb").glob("offline-run-*")) if (run_dir / "wandb").exists() else []
    for wdir in wandb_dirs:
        shutil.copytree(wdir, out_dir / "wandb" / wdir.name)


def _has_gpu(py: Path) -> bool:
    out = subprocess.run([str(py), "-c", "import torch; print(torch.cuda.is_available())"], capture_output=True,
                         text=True)
    return out.stdout.strip() == "True"


def versions(py: Path, modules: str = "torch, deepspeed, accelerate, transformers, wandb") -> str:
    code = (f"import platform, {modules};"
            "print('python', platform.python_version());"
            f"[print(m.__name__, m.__version__) for m in ({modules})]")
    out = subprocess.run([str(py), "-c", code], capture_output=True, text=True).stdout
    return "".join(line for line in out.splitlines(keepends=True) if not line.startswith("["))  # drop DS warnings


def gpu_versions(py: Path) -> str:
    smi = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version,memory.total", "--format=csv,noheader"],
                         capture_output=True, text=True).stdout
    return versions(py, "torch, torchvision, accelerate, transformers") + "".join(f"gpu {g}\n" for g in
                                                                              smi.splitlines())


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--python", type=Path, default=Path(sys.executable))
    ap.add_argument("--only", nargs="*", default=None)
    ap.add_argument("--gpu", action="store_true", help="record the GPU runs (sample_logs/gpu/) instead")
    args = ap.parse_args()
    WORK.mkdir(parents=True, exist_ok=True)
    for script in ("train_ds.py", "train_hf.py", "train_loop.py"):
        shutil.copy(HERE / script, WORK / script)
    if args.gpu:
        (SAMPLES / "gpu").mkdir(exist_ok=True)
        (SAMPLES / "gpu" / "versions.txt").write_text(gpu_versions(args.python))
    else:
        (SAMPLES / "versions.txt").write_text(versions(args.python))
    for sc in GPU_SCENARIOS if args.gpu else (*SCENARIOS, *PAIRS):
        if args.only is None or sc.name in args.only:
            record(sc, args.python)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
