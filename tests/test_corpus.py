"""Every log in ../shared/corpus against facts known independently of the parser: the corpus's own FEATURES.md
line counts (counted with grep by whoever recorded it) and each run's DeepSpeed config / command line."""
from __future__ import annotations

import json
import re
from pathlib import Path

import polars as pl
import pytest

from diagnose.parsers import parse


def features(corpus: Path) -> dict[str, dict[str, int]]:
    rows = [l for l in (corpus / "FEATURES.md").read_text().splitlines() if l.startswith("| ") and ".log" in l]
    header = [h.strip() for h in (corpus / "FEATURES.md").read_text().split("\n| log |", 1)[1].split("\n")[0]
              .split("|")][:-1]
    header = ["log", *header]
    out = {}
    for row in rows:
        cells = [c.strip() for c in row.strip("|").split("|")]
        out[cells[0]] = {h: int(c) for h, c in zip(header[1:], cells[1:]) if c.isdigit()}
    return out


LOGS = ["ds_zero0", "ds_zero0_default_loglevel", "ds_zero1_torchrun", "ds_zero2_bf16", "ds_zero2_diverge",
        "ds_zero2_flops", "ds_zero3", "hf_trainer_ddp", "hf_trainer_deepspeed", "ds_fail_batch_mismatch",
        "ds_fail_fp16_unsupported"]


@pytest.mark.parametrize("name", LOGS)
def test_line_counts_match_features(corpus: Path, name: str) -> None:
    want = features(corpus)[f"{name}.log"]
    model = parse([str(corpus / f"{name}.log")])
    steps, timers, memory, events = (model.frames[k] for k in ("steps", "timers", "memory", "events"))
    assert steps.filter(pl.col("origin") == "ds_step").height == want["step= (log_dist)"]
    assert steps.filter(pl.col("origin") == "ds_throughput").height == want["RunningAvgSamplesPerSec"]
    assert timers.filter(pl.col("microstep") & pl.col("fwd").is_not_null()).height == want["fwd_microstep timers"]
    assert timers.filter(~pl.col("microstep") & pl.col("fwd").is_not_null()).height == want["fwd/bwd/step timers"]
    assert timers.filter(pl.col("optimizer_step").is_not_null()).height == want["optimizer_* timers"]
    assert memory.height == want["MA/Max_MA memory"]
    assert memory.filter(pl.col("cpu_used_gb").is_not_null()).height == want["CPU Virtual Memory"]
    assert steps.filter(pl.col("origin") == "hf_log").height == want["HF loss dict"]
    assert events.filter(pl.col("kind") == "eval_result").height == want["HF eval dict"]
    # FEATURES.md counts only unprefixed `Traceback` lines; per-rank `[rank0]: Traceback` is checked below.
    assert events.filter(pl.col("kind") == "traceback").height >= want["Traceback"]
    assert (model.facts.versions.get("deepspeed") is not None) == (want["DeepSpeed info: version"] > 0)


DS_RUNS = ["ds_zero0", "ds_zero1_torchrun", "ds_zero2_bf16", "ds_zero2_diverge", "ds_zero2_flops", "ds_zero3"]


@pytest.mark.parametrize("name", DS_RUNS)
def test_run_facts_match_config_and_command(corpus: Path, name: str) -> None:
    cfg = json.loads((corpus / f"{name}.ds_config.json").read_text())
    cmd = (corpus / f"{name}.cmd.txt").read_text()
    nprocs = int(re.search(r"(?:--num_gpus|--nproc_per_node) (\d+)", cmd).group(1))
    steps = int(re.search(r"--steps (\d+)", cmd).group(1))
    model = parse([str(corpus / f"{name}.log")])
    f = model.facts
    assert f.zero_stage == cfg["zero_optimization"]["stage"]
    assert f.world_size == nprocs
    assert f.precision == ("bf16" if cfg.get("bf16", {}).get("enabled") else "fp32")
    assert f.offload_optimizer is None and f.offload_param is None
    assert f.micro_batch_per_gpu == cfg["train_micro_batch_size_per_gpu"]
    assert f.grad_accum_steps == cfg["gradient_accumulation_steps"]
    assert f.wall_clock_breakdown is cfg.get("wall_clock_breakdown", False)
    ds_steps = model.frames["steps"].filter(pl.col("origin") == "ds_step")["global_step"]
    assert ds_steps.max() == steps
    fwd = model.frames["timers"].filter(~pl.col("microstep") & pl.col("fwd").is_not_null())
    assert fwd.height == steps


def test_env_from_launcher_echo_and_torchrun_banner(corpus: Path) -> None:
    ds = parse([str(corpus / "ds_zero0.log")]).facts
    assert ds.env["CUDA_VISIBLE_DEVICES"].value == "0,1"
    assert ds.launcher == "deepspeed" and ds.nodes == 1 and ds.gpus_per_node == 2
    tr = parse([str(corpus / "ds_zero1_torchrun.log")]).facts
    assert tr.env["OMP_NUM_THREADS"].value == "1"


def test_hf_logs_with_configs(corpus: Path) -> None:
    m = parse([str(corpus / "hf_trainer_ddp.log"), str(corpus / "hf_trainer_ddp.accelerate.yaml"),
               str(corpus / "hf_trainer_ddp.cmd.txt")])
    f = m.facts
    assert f.precision == "bf16" and f.world_size == 2 and f.launcher == "accelerate"
    assert f.hf == {"Num examples": 2048, "Num Epochs": 1, "Num update steps per epoch": 256,
                    "Instantaneous batch size per device": 4, "Total train batch size": 8,
                    "Gradient Accumulation steps": 1, "Total optimization steps": 40,
                    "Number of trainable parameters": 169728}
    assert f.env["WANDB_MODE"].value == "offline"
    loss = m.frames["steps"].filter(pl.col("origin") == "hf_log")
    assert loss["global_step"].to_list() == list(range(1, 41))
    assert loss["loss"][0] == pytest.approx(6.83) and loss["grad_norm"][0] == pytest.approx(0.8737)
    hd = parse([str(corpus / "hf_trainer_deepspeed.log"), str(corpus / "hf_trainer_deepspeed.ds_config.json")]).facts
    assert hd.zero_stage == 2 and hd.steps_per_print == float("inf")


def test_failures_are_events(corpus: Path) -> None:
    ev = parse([str(corpus / "ds_fail_batch_mismatch.log")]).frames["events"]
    exc = ev.filter(pl.col("kind") == "exception")["detail"].to_list()
    assert any(d.startswith("AssertionError: Check batch related parameters") for d in exc)
    tb = ev.filter(pl.col("kind") == "traceback")
    assert sorted(tb["rank"].to_list()) == [0, 1]
    codes = ev.filter(pl.col("kind") == "launcher_exit")["code"].drop_nulls().to_list()
    assert codes == [1]


def test_comms_table(corpus: Path) -> None:
    comms = parse([str(corpus / "ds_zero3.log")]).frames["comms"]
    ops = set(comms["op"].to_list())
    assert {"all_gather_into_tensor", "reduce_scatter_tensor", "all_reduce"} <= ops
    row = comms.filter((pl.col("op") == "broadcast") & (pl.col("msg_size") == "256.0 B"))
    assert row.height == 1 and row["count"][0] > 0 and row["msg_bytes"][0] == 256.0
