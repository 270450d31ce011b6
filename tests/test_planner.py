"""The ZeRO planner against the ZeRO paper's arithmetic and the seed case's published numbers."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import diagnosed, run_cli
from diagnose.planner import plan


def test_seed_case_numbers() -> None:
    p = plan(2.78e9, 16, 4, 80)
    gb = {s.name: s.model_states_gb for s in p.stages}
    # causes.md §0.1: 44.5 / 13.2 / 8.0 / 2.8 GB for DDP / ZeRO-1 / 2 / 3
    assert gb["ddp"] == pytest.approx(44.5, rel=0.1) and gb["zero1"] == pytest.approx(13.2, rel=0.1)
    assert gb["zero2"] == pytest.approx(8.0, rel=0.1) and gb["zero3"] == pytest.approx(2.8, rel=0.1)
    assert p.recommended == "ddp" and p.recommended_stage <= 1
    comm = {s.name: s.comm_gb_per_step for s in p.stages}
    assert comm["zero3"] == pytest.approx(1.5 * comm["ddp"])


def test_accumulation_multiplies_zero2_traffic_only() -> None:
    p1, p4 = plan(1e9, 8, grad_accum=1), plan(1e9, 8, grad_accum=4)
    c1 = {s.name: s.comm_gb_per_step for s in p1.stages}
    c4 = {s.name: s.comm_gb_per_step for s in p4.stages}
    assert c4["ddp"] == c1["ddp"] and c4["zero1"] == c1["zero1"]
    assert c4["zero2"] == pytest.approx(4 * c1["zero2"]) and c4["zero3"] == pytest.approx(4 * c1["zero3"])


def test_order_of_recommendation() -> None:
    assert plan(13e9, 8, gpu_memory_gb=80).recommended == "zero2"  # 208 GB under DDP; ZeRO-2 ~39 GB
    assert plan(70e9, 8, gpu_memory_gb=80).recommended in ("zero3", "zero3+offload")
    big = plan(70e9, 8, gpu_memory_gb=80)
    assert any("ZeRO-1" in s for s in big.steps) and any("ZeRO-2" in s for s in big.steps)
    eight = plan(2.78e9, 1, gpu_memory_gb=40, optimizer="adam8bit")
    assert next(s for s in eight.stages if s.name == "ddp").model_states_gb == pytest.approx(2.78 * 10, rel=0.01)


def test_activation_checkpointing_step() -> None:
    # 7B, 8 GPUs, long sequences: activations dominate; checkpointing comes before a higher stage.
    p = plan(7e9, 8, gpu_memory_gb=80, seq_len=4096, micro_batch=4, hidden=4096, layers=32, heads=32)
    assert any("activation checkpointing" in s for s in p.steps)


def test_plan_cli_json() -> None:
    proc = run_cli("plan", "--params", "2.78e9", "--gpus", "16", "--gpus-per-node", "4", "--gpu-memory", "80",
                   "--format", "json")
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["recommended"] == "ddp" and len(doc["stages"]) == 6
    assert run_cli("plan", "--params", "-1", "--gpus", "16").returncode == 2


def _sample_dirs() -> list[Path]:
    root = Path(__file__).resolve().parent.parent / "sample_logs"
    return sorted(p.parent for p in root.glob("**/*.log") if "pairs" not in p.parts and "record" not in p.parts) + \
        sorted(p for p in (root / "synthetic").iterdir() if p.is_dir())


@pytest.mark.slow
@pytest.mark.xdist_group("corpus")  # every sample, through the corpus tests' cache (conftest.diagnosed)
def test_plan_with_the_runs_shape_agrees_with_the_reports_planner_on_every_sample() -> None:
    """`diagnose plan`, given the flags that describe a sample's run, prints the report's plan of that run (issue 31,
    must 5): one planner, told what ran (stage, precision, micro-batch, accumulation, sequence length, peak)."""
    from typer.testing import CliRunner

    from diagnose import engine
    from diagnose.cli import app
    from diagnose.metrics import compute
    from diagnose.planner import MEASURED_FRACTION, as_dict

    compared = 0
    for run in dict.fromkeys(_sample_dirs()):
        model = diagnosed((str(run),))[0]
        metrics = compute(model)
        inputs = engine.plan_inputs(model, None, metrics)
        if inputs is None or inputs["measured_fraction"] != MEASURED_FRACTION:
            continue  # no plan, or one on a card known only from its measured peak (no flag says that)
        report = as_dict(engine.run_plan(model, None, metrics))
        res = CliRunner().invoke(app, ["plan", *engine.plan_command(inputs), "--format", "json"])
        assert res.exit_code == 0, (run, res.output)
        cli = json.loads(res.output)
        assert cli["recommended"] == report["recommended"], run
        assert [(s["name"], s["verdict"]) for s in cli["stages"]] == \
            [(s["name"], s["verdict"]) for s in report["stages"]], run
        assert cli["steps"] == list(report["steps"]), run
        compared += 1
    assert compared >= 4  # the samples with a plan (the CPU recordings have none)
