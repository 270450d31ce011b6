"""The report's JSON is the contract (issue 22): data only, validated against docs/report.schema.json with the
jsonschema library, for every sample and for a directory of several runs."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import jsonschema
import pytest

from conftest import ROOT, SAMPLES, run_cli

SCHEMA = json.loads((ROOT / "docs" / "report.schema.json").read_text())
RUNS = sorted({p.parent for p in SAMPLES.rglob("train.log") if "wandb" not in p.parts}
              | {p for p in (SAMPLES / "synthetic").iterdir() if p.is_dir()})


def _validator() -> jsonschema.Draft202012Validator:
    jsonschema.Draft202012Validator.check_schema(SCHEMA)
    return jsonschema.Draft202012Validator(SCHEMA)


@pytest.mark.parametrize("run", RUNS, ids=[str(p.relative_to(SAMPLES)) for p in RUNS])
def test_every_sample_report_follows_the_schema(run: Path) -> None:
    import diagnose

    doc = json.loads(diagnose.analyse(run).render("json"))
    errors = [f"{list(e.path)}: {e.message[:160]}" for e in _validator().iter_errors(doc)]
    assert errors == []


def test_several_runs_and_the_cli_follow_the_schema(tmp_path: Path) -> None:
    for name in ("ds_zero0", "ds_zero2_bf16"):
        shutil.copytree(SAMPLES / name, tmp_path / name)
    proc = run_cli("report", str(tmp_path), "--format", "json", "-o", "-")
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert len(doc["runs"]) == 2
    _validator().validate(doc)


def test_display_rows_are_not_in_the_contract() -> None:
    import diagnose

    doc = diagnose.analyse(SAMPLES / "synthetic" / "seed_zero3_launch_blocking").document
    assert not {"tiles", "run_rows", "facts_rows", "facts_table", "plan_rows"} & set(doc)
    with pytest.raises(jsonschema.ValidationError):
        _validator().validate({**doc, "tiles": [{"label": "GPUs", "value": "16"}]})
    # the renderers derive them: the Markdown still shows the run table
    md = diagnose.analyse(SAMPLES / "synthetic" / "seed_zero3_launch_blocking").render("md")
    assert "| GPUs | 16 (4 nodes x 4) GPUs, NVIDIA A100-SXM4-80GB |" in md
