"""Launch scripts: exports, inline `VAR=1 cmd` prefixes, #SBATCH, and deepspeed / torchrun / accelerate / srun flags."""
from __future__ import annotations

from pathlib import Path

import pytest

from conftest import SAMPLES
from diagnose.parsers import parse
from diagnose.parsers.launch_script import commands_of, looks_like_script, parse_script

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


@pytest.mark.parametrize("command, micro, world", [
    # tf_cnn_benchmarks as pasted into a Horovod thread: one plain python command, and the same under mpirun
    ("python3 tf_cnn_benchmarks.py --data_format=NCHW --batch_size=64 --model=resnet50 --variable_update=horovod",
     64, None),
    ("mpirun -np 4 -bind-to none -map-by slot python3 tf_cnn_benchmarks.py --batch_size=64 --model=resnet50", 64, 4),
    ("python -u train.py --batch_size 32 --lr 3e-4", 32, None),
])
def test_a_command_saved_alone_is_a_launch_script(tmp_path: Path, command: str, micro: int, world: int | None
                                                  ) -> None:
    assert looks_like_script(command + "\n")
    p = tmp_path / "command.txt"
    p.write_text(command + "\n")
    m = parse([str(p)])
    assert [s.kind for s in m.sources] == ["launch_script"]
    assert m.facts.micro_batch_per_gpu == micro and m.facts.world_size == world


def test_a_log_that_echoes_its_command_first_stays_a_log() -> None:
    assert not looks_like_script("[2026-01-05 10:00:00] python train.py --lr 3e-4\n[2026-01-05 10:00:01] step 1\n")


def test_separators_inside_quotes_stay_in_their_command() -> None:
    """build-nanogpt's train.sh: the launch inside `bash -c "(...); cleanup"`, continued over three lines."""
    s = parse_script('#!/usr/bin/env bash\nnohup bash -c \\\n    "(torchrun --standalone --nproc_per_node=2 '
                     'train_gpt2.py $ckpt $epochs); \\\n    runpodctl remove pod $RUNPOD_POD_ID" > "$log" 2>&1 & disown\n')
    assert s.launcher == "torchrun"
    assert {k: v.value for k, v in s.launcher_flags.items()} == {"torchrun.standalone": "true",
                                                                 "torchrun.nproc_per_node": "2"}
    assert commands_of('A=1 && run "x; y" ; b || c') == ["A=1", 'run "x; y"', "b", "c"]


@pytest.mark.parametrize("name, stage, offload", [
    ("examples/deepspeed/ds_z3_config.json", 3, None), ("configs/zero3_offload_nopin.json", 3, "cpu"),
    ("ds_config_zero2.json", 2, None), ("ds_z3_nvme_offload.json", 3, "nvme"), ("gemma3_config.json", None, None),
])
def test_a_deepspeed_config_named_for_its_stage(tmp_path: Path, name: str, stage: int | None,
                                                offload: str | None) -> None:
    script = tmp_path / "run.sh"
    script.write_text(f"#!/bin/bash\ndeepspeed --num_gpus 8 train.py --deepspeed {name} --bf16\n")
    facts = parse([str(script)]).facts
    assert (facts.zero_stage, facts.offload_optimizer) == (stage, offload)
    if stage is not None:
        assert facts.evidence["zero_stage"].origin == "config_file_name" and facts.evidence["zero_stage"].line == 2


def test_the_config_itself_beats_its_name(tmp_path: Path) -> None:
    (tmp_path / "ds_z3.json").write_text('{"zero_optimization": {"stage": 2}, "train_micro_batch_size_per_gpu": 4}')
    (tmp_path / "run.sh").write_text("#!/bin/bash\ndeepspeed train.py --deepspeed ds_z3.json\n")
    assert parse([str(tmp_path)]).facts.zero_stage == 2


def test_a_script_pasted_above_its_log_with_a_command_continued_over_lines(tmp_path: Path) -> None:
    """build-nanogpt's train.sh pasted into the log it wrote: `nohup bash -c \\` then `"(torchrun ...); cleanup"`
    on the next line; the embedded command is read as one, with the line it starts on."""
    log = tmp_path / "train.log"
    log.write_text("train.sh:\n#!/usr/bin/env bash\nnohup bash -c \\\n"
                   '    "(torchrun --standalone --nproc_per_node=2 train_gpt2.py $ckpt); \\\n'
                   '    runpodctl remove pod $RUNPOD_POD_ID" > "$log_file" 2>&1 & disown\n\n'
                   + "".join(f"step {i:5d} | loss: 3.2 | dt: 400.00ms | tok/sec: 662857.74\n" for i in range(8)))
    facts = parse([str(log)]).facts
    assert (facts.world_size, facts.nodes, facts.launcher) == (2, 1, "torchrun")
    assert facts.evidence["gpus_per_node"].line == 3
