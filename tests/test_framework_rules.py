"""The frameworks' own start-up rules, checked on the files `--write-config` writes, without the trainers (issue 31,
must 2; benchmarks/patched_runs.py starts the real ones). The rules are written out here from the libraries'
source, apart from the project's routing table (diagnose/frameworks.py), so that a table that forgets one fails.
"""
from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from diagnose.cli import app
from diagnose.engine import diagnose
from diagnose.parsers import parse
from diagnose.parsers.facts import dig

SAMPLES = Path(__file__).resolve().parent.parent / "sample_logs"

# transformers/integrations/deepspeed.py, HfTrainerDeepSpeedConfig.trainer_config_process: (JSON key, the
# TrainingArguments field it must equal, that field's default). A literal that differs stops the Trainer.
HF_FILLED = (
    ("train_micro_batch_size_per_gpu", "per_device_train_batch_size", 8),
    ("gradient_accumulation_steps", "gradient_accumulation_steps", 1),
    ("gradient_clipping", "max_grad_norm", 1.0),
    ("optimizer.params.lr", "learning_rate", 5e-5),
    ("optimizer.params.eps", "adam_epsilon", 1e-8),
    ("optimizer.params.weight_decay", "weight_decay", 0.0),
    ("scheduler.params.warmup_max_lr", "learning_rate", 5e-5),
    ("fp16.enabled", "fp16", False),
    ("bf16.enabled", "bf16", False),
)
# accelerate/utils/dataclasses.py, DeepSpeedPlugin._deepspeed_config_checks: YAML keys refused beside a
# deepspeed_config_file (launch.py counts mixed_precision among them when the YAML sets it).
ACCELERATE_REFUSED_TOP = ("mixed_precision", "gradient_accumulation_steps", "gradient_clipping")
ACCELERATE_REFUSED_DS = ("gradient_accumulation_steps", "gradient_clipping", "zero_stage", "offload_optimizer_device",
                         "offload_param_device", "offload_param_nvme_path", "offload_optimizer_nvme_path",
                         "zero3_save_16bit_model")


def _flags(script: str) -> dict[str, object]:
    """`--name value` and bare `--name` of a launch script (backslash continuations joined)."""
    text = script.replace("\\\n", " ")
    out: dict[str, object] = {}
    for m in re.finditer(r"--([\w-]+)(?:[ =](?!--)([^\s\\]+))?", text):
        out[m.group(1)] = True if m.group(2) is None else m.group(2)
    return out


def hf_mismatches(ds: dict, flags: dict[str, object], world: int) -> list[str]:
    """What the HF Trainer would refuse at start-up: a literal JSON value that its argument does not equal."""
    args = {name: flags.get(name, default) for _, name, default in HF_FILLED}
    for name, default in ((n, d) for _, n, d in HF_FILLED):
        value = args[name]
        if isinstance(default, bool):
            args[name] = value is True or str(value).lower() == "true"
        elif isinstance(default, (int, float)) and isinstance(value, str):
            args[name] = type(default)(float(value))
    bad = []
    for key, name, _ in HF_FILLED:
        found, value = dig(ds, key)
        if found and value != "auto" and value != args[name]:
            bad.append(f"{key}={value!r} but --{name} gives {args[name]!r}")
    found, total = dig(ds, "train_batch_size")
    product = world * int(args["per_device_train_batch_size"]) * int(args["gradient_accumulation_steps"])
    if found and total != "auto" and total != product:
        bad.append(f"train_batch_size={total} but world x micro x accumulation = {product}")
    return bad


def accelerate_refusals(config: dict) -> list[str]:
    ds = config.get("deepspeed_config") or {}
    if not ds.get("deepspeed_config_file"):
        return []
    return ([k for k in ACCELERATE_REFUSED_TOP if k in config]
            + [f"deepspeed_config.{k}" for k in ACCELERATE_REFUSED_DS if k in ds])


def _patched(tmp_path: Path, sample: str) -> tuple[Path, Path]:
    run = tmp_path / "run"
    shutil.copytree(SAMPLES / sample, run)
    out = tmp_path / "fixed"
    res = CliRunner().invoke(app, ["report", str(run), "--write-config", str(out), "-o", str(tmp_path / "r.json")])
    assert res.exit_code == 0, res.output
    fixed = tmp_path / "fixed_run"
    shutil.copytree(run, fixed)
    for p in out.iterdir():
        if p.name != "recommended.patch":
            shutil.copy(p, fixed / p.name)
    return run, fixed


def _check_hf(run: Path) -> list[str]:
    ds_path, acc_path = run / "ds_config.json", run / "accelerate.yaml"
    script = next((p for p in run.iterdir() if p.suffix == ".sh"), None)
    flags = _flags(script.read_text()) if script else {}
    facts = parse([str(run)]).facts
    bad = []
    if ds_path.exists():
        bad += hf_mismatches(json.loads(ds_path.read_text()), flags, facts.world_size or 1)
    if acc_path.exists():
        bad += accelerate_refusals(yaml.safe_load(acc_path.read_text()))
    return bad


HF_SAMPLES = ("hf_trainer_deepspeed", "hf_trainer_ddp_bf16", "hf_trainer_fp32_gradckpt",
              "synthetic/seed_zero3_launch_blocking")


@pytest.mark.parametrize("sample", HF_SAMPLES)
def test_hf_trainer_runs_patched_files_pass_the_trainers_checks(tmp_path: Path, sample: str) -> None:
    run, fixed = _patched(tmp_path, sample)
    assert _check_hf(run) == []  # the recorded run passed them, so the checker agrees with the real Trainer
    assert _check_hf(fixed) == []


def test_hf_trainer_precision_goes_to_the_trainer_flag_not_beside_a_deepspeed_file(tmp_path: Path) -> None:
    run = tmp_path / "run"
    shutil.copytree(SAMPLES / "hf_trainer_deepspeed", run)
    res = CliRunner().invoke(app, ["report", str(run), "--write-config", str(tmp_path / "fixed"), "-o",
                                   str(tmp_path / "r.json")])
    assert res.exit_code == 0, res.output
    # The launch command does not pass --bf16, and the recorded script parses its own arguments (it refused an added
    # --eval_steps when started: benchmarks/patched_runs.py), so the flag is said, not appended; nothing goes into
    # the accelerate YAML (accelerate refuses mixed_precision beside a deepspeed_config_file) or the JSON.
    said = " ".join(res.output.split())
    assert "add `--bf16` to the training command if its script takes the Trainer's arguments" in said
    assert not (tmp_path / "fixed" / "accelerate.yaml").exists()
    assert not (tmp_path / "fixed" / "ds_config.json").exists()


def test_a_trainer_flag_the_command_already_passes_is_changed_in_place(tmp_path: Path) -> None:
    run = tmp_path / "run"
    shutil.copytree(SAMPLES / "hf_trainer_deepspeed", run)
    script = run / "launch.sh"
    script.write_text(script.read_text().replace("--max_steps 30", "--max_steps 30 --bf16 false"))
    res = CliRunner().invoke(app, ["report", str(run), "--write-config", str(tmp_path / "fixed"), "-o",
                                   str(tmp_path / "r.json")])
    assert res.exit_code == 0, res.output
    flags = _flags((tmp_path / "fixed" / "launch.sh").read_text())
    assert str(flags.get("bf16")).lower() == "true"


def test_a_literal_the_trainer_owns_moves_with_its_flag(tmp_path: Path) -> None:
    run, fixed = _patched(tmp_path, "synthetic/seed_zero3_launch_blocking")
    ds, flags = json.loads((fixed / "ds_config.json").read_text()), _flags((fixed / "train.sh").read_text())
    assert ds["train_micro_batch_size_per_gpu"] != 4  # the recommendation changed it ...
    assert int(flags["per_device_train_batch_size"]) == ds["train_micro_batch_size_per_gpu"]  # ... and the flag too
    assert int(flags["gradient_accumulation_steps"]) == ds["gradient_accumulation_steps"]
    original = json.loads((run / "ds_config.json").read_text())
    assert ds["train_micro_batch_size_per_gpu"] * ds["gradient_accumulation_steps"] == \
        original["train_micro_batch_size_per_gpu"] * original["gradient_accumulation_steps"]


def test_the_checker_catches_what_the_trainer_refuses() -> None:
    """The same checks, on the patch the project wrote before issue 31: bf16 in the JSON and the accelerate YAML
    beside a config file, no --bf16."""
    ds = {"train_micro_batch_size_per_gpu": "auto", "bf16": {"enabled": True}}
    assert hf_mismatches(ds, {}, 2) == ["bf16.enabled=True but --bf16 gives False"]
    assert accelerate_refusals({"mixed_precision": "bf16", "deepspeed_config": {"deepspeed_config_file": "x"}}) == \
        ["mixed_precision"]
    assert hf_mismatches({"train_micro_batch_size_per_gpu": 2}, {"per_device_train_batch_size": "4"}, 1)


def test_megatron_changes_are_megatron_arguments() -> None:
    d = diagnose(parse([str(SAMPLES / "synthetic" / "pipeline_bubble")]))
    changes = d.recommendation.changes
    assert changes and all(c.target == "trainer_args" for c in changes)
    assert {c.key for c in changes} <= {"micro-batch-size", "global-batch-size", "recompute-activations"}
    bubble = next(f for f in d.findings if f.id == "pipeline-bubble")
    assert bubble.fix is not None
    # The global batch changes only with its reason, the product before and after, and the bubble of the merged
    # values: 16 -> 112 at micro-batch 1 on 4 data-parallel ranks gives 28 micro-batches, 7/35 = 20%.
    assert "16 (1 x 4 x 4 data-parallel ranks) -> 112 (1 x 28 x 4 data-parallel ranks)" in bubble.fix.summary
    assert "learning rate" in bubble.fix.summary
    assert "4 -> 28 micro-batches through 8 stages" in bubble.fix.expected_effect
    assert "7/35" in bubble.fix.expected_effect
