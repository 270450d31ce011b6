"""Advice you can apply (issue 20): fixes in the run's own framework, a cause only where its mechanism shows, one
planner that agrees with itself, findings whose changes match their titles, compare on one clock, CPU runs."""
from __future__ import annotations

import itertools
import re
import shutil
from pathlib import Path

import pytest

from conftest import SAMPLES
from diagnose.compare import Side, clock_note, compare
from diagnose.engine import diagnose
from diagnose.findings import Change
from diagnose.frameworks import KNOBS, translate
from diagnose.planner import ACTIVATION_RESERVE_FRACTION, USABLE_FRACTION, activations_gb, plan
from diagnose.parsers import parse


# ---- the framework's own syntax -----------------------------------------------------------------------------

@pytest.mark.parametrize("sample,framework", [("ds_zero3_offload", "custom"), ("hf_trainer_ddp_bf16", "hf_trainer"),
                                              ("synthetic/pipeline_bubble", "megatron"),
                                              ("synthetic/rlhf_generation", "dschat")])
def test_the_framework_is_read_from_what_the_run_printed(sample: str, framework: str) -> None:
    assert parse([str(SAMPLES / sample)]).facts.framework == framework


def test_a_custom_script_gets_words_and_the_pytorch_api_not_trainer_flags() -> None:
    """ds_zero3_offload makes its batches with torch.randint: no Trainer flag may reach its recommended config. A
    custom loop that waits for data is told the PyTorch API in words, with no flag to change."""
    d = diagnose(parse([str(SAMPLES / "ds_zero3_offload")]))
    assert all(c.target != "trainer_args" for c in d.recommendation.changes)
    assert d.findings[0].id == "offload-bottleneck"  # its per-step clock: no time outside the timed step
    loop = diagnose(parse([str(SAMPLES / "synthetic" / "input_bound")]))
    first = loop.findings[0]
    assert first.id == "input-bound" and not first.fix.changes and "DataLoader(..., num_workers=4" in first.fix.summary
    assert all(c.target != "trainer_args" for c in loop.recommendation.changes)


def test_an_hf_trainer_run_gets_trainer_flags() -> None:
    d = diagnose(parse([str(SAMPLES / "hf_trainer_ddp_bf16")]))
    keys = {(c.target, c.key) for c in d.recommendation.changes}
    assert ("trainer_args", "dataloader_num_workers") in keys


def test_megatron_gets_megatron_argument_names() -> None:
    ch, words = translate(Change("trainer_args", "dataloader_num_workers", 0, 4), "megatron")
    assert ch is not None and ch.key == "num-workers" and words == ""
    ch, words = translate(Change("trainer_args", "optim", None, "adamw_torch_fused"), "megatron")
    assert ch is None and "Megatron has no flag" in words and "fused=True" in words
    ch, words = translate(Change("trainer_args", "dataloader_num_workers", 0, 4), "custom")
    assert ch is None and "DataLoader(" in words and "num_workers=4" in words
    ch, words = translate(Change("ds_config", "zero_optimization.stage", 3, 1), "custom")
    assert ch is not None and ch.key == "zero_optimization.stage"  # not a training-loop knob: the same everywhere


def test_every_knob_a_rule_asks_for_is_in_the_table() -> None:
    import inspect

    from diagnose.rules import load_all

    asked = set()
    for r in load_all().values():
        asked |= set(re.findall(r'Change\("trainer_args", "([^"]+)"', inspect.getsource(inspect.getmodule(r.check))))
    assert asked <= set(KNOBS), asked - set(KNOBS)


# ---- one planner --------------------------------------------------------------------------------------------

ORDER = ("ddp", "zero1", "zero2", "zero3", "zero2+offload", "zero3+offload")
GRID = list(itertools.product((1.25e8, 1.3e9, 7e9, 7e10), (1, 8, 64), (24.0, 40.0, 80.0),
                              ((None, None, None, None), (2048, 4, 4096, 32))))


@pytest.mark.parametrize("params,gpus,mem,shape", GRID)
def test_planner_properties_over_a_grid(params: float, gpus: int, mem: float, shape: tuple) -> None:
    seq, mb, hidden, layers = shape
    p = plan(params, gpus, gpu_memory_gb=mem, seq_len=seq, micro_batch=mb, hidden=hidden, layers=layers)
    by = {s.name: s for s in p.stages}
    # a stage needing less memory fits wherever one needing more does
    for a, b in itertools.permutations(p.stages, 2):
        if a.fits and (b.total_gb or b.model_states_gb) <= (a.total_gb or a.model_states_gb):
            assert b.fits, (a.name, b.name)
    # the recommendation is the first option that fits (activation checkpointing counts first), in the
    # maintainers' order
    budget = mem * USABLE_FRACTION
    ckpt = activations_gb(seq, mb, hidden, layers, None, True)
    first = next((n for n in ORDER if by[n].fits
                  or (ckpt is not None and n in ORDER[:4] and by[n].model_states_gb + ckpt <= budget)), "none")
    # ... except that where DDP fits only with checkpointing, ZeRO-1 with the same checkpointing holds less at the
    # same traffic, and is preferred (issue 31)
    if first == "ddp" and not by["ddp"].fits and by["zero1"].model_states_gb < by["ddp"].model_states_gb:
        first = "zero1"
    assert p.recommended == first
    reserve = mem * ACTIVATION_RESERVE_FRACTION  # activations unknown: a share of the card is kept for them
    assert all(s.fits == ((s.total_gb if s.total_gb is not None else s.model_states_gb + reserve) <= budget)
               for s in p.stages)
    if shape[0] is None and p.recommended != "none":  # activations unknown: the advice says so
        assert any("not included" in step for step in p.steps) or "offload" in p.recommended


@pytest.mark.parametrize("peak", [10.0, 40.0, 73.4, 79.0])
def test_the_measured_plan_marks_the_stage_that_ran_as_fitting(peak: float) -> None:
    p = plan(2.78e9, 16, gpu_memory_gb=80.0, micro_batch=4, grad_accum=4, seq_len=2048, measured_peak_gb=peak,
             current=(3, False))
    by = {s.name: s for s in p.stages}
    assert by["zero3"].fits  # its peak proves it
    fitting = [s for s in p.stages if s.fits or s.fits_micro_batch]
    for s in p.stages:  # a stage with no more model states than one that fits (at some micro-batch) fits there too
        if any(s.model_states_gb <= f.model_states_gb for f in fitting if f.fits):
            assert s.fits or s.fits_micro_batch or s.model_states_gb + (s.activations_gb or 0) > 0.9 * 80


def test_plan_and_report_use_one_usable_fraction() -> None:
    from diagnose import planner

    assert planner.MEASURED_FRACTION == planner.USABLE_FRACTION == 0.9


# ---- consistent findings ------------------------------------------------------------------------------------

def test_accumulation_finding_says_why_its_changes_raise_accumulation() -> None:
    d = diagnose(parse([str(SAMPLES / "synthetic" / "seed_zero3_launch_blocking")]))
    f = next(x for x in d.findings if x.id == "grad-accum-zero-traffic")
    raised = [c for c in f.fix.changes if c.key == "gradient_accumulation_steps" and c.after > c.before]
    assert raised and "no traffic" in f.fix.summary and "ZeRO-1" in f.fix.summary


# ---- compare on one clock -----------------------------------------------------------------------------------

def _side(path: Path) -> Side:
    from diagnose.cli import _side as side  # the CLI's own reader of one side

    return side([str(path)], "side", False, None)


def test_compare_takes_both_step_times_from_one_clock(tmp_path: Path) -> None:
    """The candidate lost its DeepSpeed step lines (printed only every few steps elsewhere): both sides' times come
    from the clock they share, and the same run compares as the same speed."""
    cand = tmp_path / "cand"
    shutil.copytree(SAMPLES / "pairs" / "base", cand)
    log = cand / "train.log"
    log.write_text("".join(line for line in log.read_text().splitlines(keepends=True) if ", skipped=" not in line))
    b, c = _side(SAMPLES / "pairs" / "base"), _side(cand)
    assert "ds_step_ts" in b.metrics.clocks and "ds_step_ts" not in c.metrics.clocks
    cmp = compare(b, c)
    assert "from the same clock" in clock_note(b, c)
    assert cmp.step_time_ratio == pytest.approx(1.0, abs=0.1)


def test_compare_without_a_common_clock_gives_no_ratio_and_says_why(tmp_path: Path) -> None:
    cand = tmp_path / "cand"
    cand.mkdir()
    (cand / "train.log").write_text("Running training\n")
    (cand / "train.log").write_text("NCCL INFO Using network Socket\n")
    b, c = _side(SAMPLES / "pairs" / "base"), _side(cand)
    assert compare(b, c).step_time_ratio is None
    assert clock_note(b, c).startswith("no step-time ratio")


# ---- where to read more -------------------------------------------------------------------------------------

def test_each_finding_links_the_docs_of_what_it_changes() -> None:
    from diagnose.doc_links import CUDA_ENV, HF_ARGS, NCCL_ENV, docs_for

    d = diagnose(parse([str(SAMPLES / "synthetic" / "seed_zero3_launch_blocking")]))
    assert CUDA_ENV in docs_for(d.findings[0], "custom")
    hf = diagnose(parse([str(SAMPLES / "hf_trainer_ddp_bf16")]))
    flagged = next(f for f in hf.findings if f.fix and any(c.target == "trainer_args" for c in f.fix.changes))
    assert HF_ARGS in docs_for(flagged, "hf_trainer")
    sock = diagnose(parse([str(SAMPLES / "synthetic" / "multinode_socket")]))
    assert NCCL_ENV in docs_for(next(f for f in sock.findings if f.id == "nccl-socket-transport"), None)


# ---- the corrected files, written ---------------------------------------------------------------------------

def test_write_config_writes_files_and_a_patch_that_applies(tmp_path: Path) -> None:
    import subprocess

    from diagnose.cli import app
    from typer.testing import CliRunner

    run = tmp_path / "run"
    shutil.copytree(SAMPLES / "synthetic" / "seed_zero3_launch_blocking", run)
    before = {p.name: p.read_bytes() for p in run.iterdir() if p.is_file()}
    out = tmp_path / "fixed"
    res = CliRunner().invoke(app, ["report", str(run), "--write-config", str(out), "-o", str(tmp_path / "r.json")])
    assert res.exit_code == 0, res.output
    assert {p.name: p.read_bytes() for p in run.iterdir() if p.is_file()} == before  # originals untouched
    patch = (out / "recommended.patch").read_text()
    check = subprocess.run(["git", "apply", "--check", str(out / "recommended.patch")], cwd=run,
                           capture_output=True, text=True)
    assert check.returncode == 0, check.stderr
    # The project's own readers read the written files back: every recommended value in place, nothing else moved.
    d = diagnose(parse([str(run)]))
    fixed_run = tmp_path / "fixed_run"
    shutil.copytree(run, fixed_run)
    for p in out.iterdir():
        if p.name != "recommended.patch":
            shutil.copy(p, fixed_run / p.name)
    f0, f1 = parse([str(run)]).facts, parse([str(fixed_run)]).facts
    rec = {(c.target, c.key): c.after for c in d.recommendation.changes}
    assert f1.ds_config["zero_optimization"]["stage"] == rec[("ds_config", "zero_optimization.stage")]
    assert f1.ds_config["train_micro_batch_size_per_gpu"] == rec[("ds_config", "train_micro_batch_size_per_gpu")]
    assert "CUDA_LAUNCH_BLOCKING" not in f1.env and "CUDA_LAUNCH_BLOCKING" in f0.env
    changed = {k for k in set(f0.ds_config) | set(f1.ds_config) if f0.ds_config.get(k) != f1.ds_config.get(k)}
    assert changed == {"zero_optimization", "train_micro_batch_size_per_gpu", "gradient_accumulation_steps"}
    # The Trainer's flags move with the JSON's literals (the HF Trainer stops a run where they disagree): the
    # flags' line in train.sh holds the same micro-batch and accumulation as ds_config.json.
    assert f1.script_args["per_device_train_batch_size"] == str(rec[("ds_config", "train_micro_batch_size_per_gpu")])
    assert f1.script_args["gradient_accumulation_steps"] == str(rec[("ds_config", "gradient_accumulation_steps")])
    # Three JSON values, one export line and the flags' line, nothing else.
    assert patch.count("\n-") - patch.count("\n---") == 5
    again = CliRunner().invoke(app, ["report", str(run), "--write-config", str(out)])
    assert again.exit_code == 2 and "--force" in again.output


JSONC = """{
  // tuned by hand
  "train_micro_batch_size_per_gpu": 4,
  "zero_optimization": {
    "stage": 3, /* was 2 */
    "overlap_comm": true,
  },
}
"""


def test_json_with_comments_and_trailing_commas_round_trips() -> None:
    from diagnose.parsers import jsonc
    from diagnose.reports.config_patch import set_json

    out = set_json(JSONC, ["zero_optimization", "stage"], 1)
    assert out == JSONC.replace('"stage": 3,', '"stage": 1,')
    added = set_json(out, ["zero_optimization", "reduce_bucket_size"], 50000000)
    assert jsonc.loads(added)["zero_optimization"] == {"stage": 1, "overlap_comm": True, "reduce_bucket_size": 50000000}
    assert "// tuned by hand" in added and "/* was 2 */" in added
    # a comma followed by a block comment is kept when a later block comment precedes a closing bracket
    assert jsonc.loads('{"a": 1, /* x */ "b": {"c": 2, /* y */ }}') == {"a": 1, "b": {"c": 2}}
    nested = set_json(JSONC, ["bf16", "enabled"], True)
    assert jsonc.loads(nested)["bf16"] == {"enabled": True}


def test_yaml_with_anchors_and_quotes_round_trips() -> None:
    from diagnose.reports.config_patch import set_yaml

    text = ("# accelerate config\ncompute_environment: LOCAL_MACHINE\ndefaults: &d\n  gpu_ids: all\n"
            "machine: *d\nmixed_precision: 'no'  # fp32 on purpose?\nnum_processes: 8\n")
    out = set_yaml(text, ["mixed_precision"], "bf16")
    assert out.startswith("# accelerate config\n") and "defaults: &d\n" in out and "machine: *d\n" in out
    assert "mixed_precision: 'bf16'" in out and "# fp32 on purpose?" in out  # quoting and the comment kept
    assert [line for line in out.splitlines() if "mixed_precision" not in line] == \
        [line for line in text.splitlines() if "mixed_precision" not in line]


def test_a_script_with_continuations_changes_only_its_lines() -> None:
    from diagnose.reports.config_patch import set_env, set_flag

    script = ("#!/bin/bash\nexport NCCL_P2P_DISABLE=1\ntorchrun --nproc_per_node 8 train.py \\\n"
              "    --per_device_train_batch_size 4 \\\n    --gradient_checkpointing > out.log 2>&1\n")
    out = set_flag(set_env(script, "NCCL_P2P_DISABLE", None), "dataloader_num_workers", 4)
    assert out == ("#!/bin/bash\ntorchrun --nproc_per_node 8 train.py \\\n    --per_device_train_batch_size 4 \\\n"
                   "    --gradient_checkpointing --dataloader_num_workers 4 > out.log 2>&1\n")
    assert set_flag(script, "gradient_checkpointing", False) == script.replace(" --gradient_checkpointing", "")
    assert set_flag(script, "per_device_train_batch_size", 2) == script.replace("batch_size 4", "batch_size 2")
