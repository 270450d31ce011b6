"""Launch scripts: exports, inline `VAR=1 cmd` prefixes, #SBATCH, and deepspeed / torchrun / accelerate / srun flags."""
from __future__ import annotations

from conftest import SAMPLES
from diagnose.parsers.launch_script import looks_like_script, parse_script

SBATCH = """#!/bin/bash
#SBATCH --nodes=4
#SBATCH --ntasks-per-node=1
#SBATCH --gres=gpu:4
export NCCL_DEBUG=INFO NCCL_IB_DISABLE=1   # left over from a smoke test
export MASTER_ADDR=$(scontrol show hostnames | head -n 1)
GPUS=4
CUDA_LAUNCH_BLOCKING=1 srun --nodes 4 torchrun --nnodes 4 --nproc_per_node $GPUS \\
    train.py --deepspeed ds_config.json --per_device_train_batch_size 8 \\
    --gradient_accumulation_steps 4 --bf16 --gradient_checkpointing
"""


def test_sbatch_with_srun_torchrun() -> None:
    s = parse_script(SBATCH)
    assert s.sbatch["nodes"].value == "4" and s.sbatch["gres"].value == "gpu:4"
    assert {k: v.value for k, v in s.env.items() if k.startswith(("NCCL", "CUDA"))} == {
        "NCCL_DEBUG": "INFO", "NCCL_IB_DISABLE": "1", "CUDA_LAUNCH_BLOCKING": "1"}
    assert s.env["CUDA_LAUNCH_BLOCKING"].line == 8 and s.env["NCCL_IB_DISABLE"].line == 5
    assert s.launcher == "torchrun"
    assert s.launcher_flags["torchrun.nproc_per_node"].value == "4"  # $GPUS expanded from the script
    assert s.launcher_flags["srun.nodes"].value == "4"
    assert s.script_args["per_device_train_batch_size"].value == "8"
    assert s.script_args["gradient_accumulation_steps"].value == "4"
    assert s.script_args["bf16"].value == "true" and s.script_args["gradient_checkpointing"].value == "true"


def test_accelerate_and_deepspeed_lines() -> None:
    s = parse_script("accelerate launch --num_processes 16 --num_machines 4 --mixed_precision bf16 train.py --lr 1e-4\n")
    assert s.launcher == "accelerate"
    assert s.launcher_flags["accelerate.num_machines"].value == "4"
    assert s.script_args["lr"].value == "1e-4"
    s = parse_script("env TORCH_DISTRIBUTED_DEBUG=DETAIL deepspeed --num_gpus=8 --num_nodes=2 train.py --deepspeed_config ds.json\n")
    assert s.env["TORCH_DISTRIBUTED_DEBUG"].value == "DETAIL"
    assert s.launcher_flags["deepspeed.num_gpus"].value == "8" and s.launcher_flags["deepspeed.num_nodes"].value == "2"


def test_recorded_launch_script() -> None:
    text = (SAMPLES / "ds_zero2_debug_env" / "launch.sh").read_text()
    assert looks_like_script(text)
    s = parse_script(text)
    assert s.env["CUDA_LAUNCH_BLOCKING"].value == "1" and s.launcher == "deepspeed"
    assert s.launcher_flags["deepspeed.num_gpus"].value == "2"


def test_logs_are_not_scripts() -> None:
    assert not looks_like_script((SAMPLES / "ds_zero0" / "train.log").read_text())
    assert not looks_like_script("deepspeed install path ........... ['/x']\ndeepspeed info ... 0.19.8\n")
