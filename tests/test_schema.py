"""The report's JSON is the contract (issue 22): data only, validated against docs/report.schema.json with the
jsonschema library, for every sample and for a directory of several runs."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import jsonschema
import pytest

from conftest import ROOT, SAMPLES, analysed, run_cli
from diagnose import analyse

SCHEMA = json.loads((ROOT / "docs" / "report.schema.json").read_text())
RUNS = sorted({p.parent for p in SAMPLES.rglob("train.log") if "wandb" not in p.parts}
              | {p for p in (SAMPLES / "synthetic").iterdir() if p.is_dir()})


def _validator() -> jsonschema.Draft202012Validator:
    jsonschema.Draft202012Validator.check_schema(SCHEMA)
    return jsonschema.Draft202012Validator(SCHEMA)


@pytest.mark.parametrize("run", RUNS, ids=[str(p.relative_to(SAMPLES)) for p in RUNS])
def test_every_sample_report_follows_the_schema(run: Path) -> None:
    doc = json.loads(analysed(run).render("json"))
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
    doc = analysed(SAMPLES / "synthetic" / "seed_zero3_launch_blocking").document
    assert not {"tiles", "run_rows", "facts_rows", "facts_table", "plan_rows"} & set(doc)
    with pytest.raises(jsonschema.ValidationError):
        _validator().validate({**doc, "tiles": [{"label": "GPUs", "value": "16"}]})
    # the renderers derive them: the Markdown still shows the run table
    md = analysed(SAMPLES / "synthetic" / "seed_zero3_launch_blocking").render("md")
    assert "| GPUs | 16 (4 nodes x 4) GPUs, NVIDIA A100-SXM4-80GB |" in md


def test_the_run_block_is_the_fact_tables_json_facts() -> None:
    """The run block's scalar facts are generated from parsers/fact_table.py (issue 34): the schema names each fact
    the table gives the `json` role, required, with a type that holds the fact's, and no other fact."""
    from diagnose.parsers import fact_table

    run = SCHEMA["$defs"]["report"]["properties"]["run"]
    props = run["properties"]
    json_facts = set(fact_table.with_role("json"))
    table_facts = {f.name for f in fact_table.FACTS}
    assert json_facts <= set(props) and json_facts <= set(run["required"])
    assert not (set(props) & table_facts) - json_facts  # a fact in the schema that the report does not write

    def types(spec: dict) -> set[str]:
        spec = SCHEMA["$defs"][spec["$ref"].rsplit("/", 1)[-1]] if "$ref" in spec else spec
        if "enum" in spec:
            return {type(v).__name__ for v in spec["enum"] if v is not None}
        kinds = spec["type"] if isinstance(spec["type"], list) else [spec["type"]]
        return {{"integer": "int", "number": "float", "string": "str", "boolean": "bool"}.get(k, k) for k in kinds}
    for name in json_facts:
        want = fact_table.BY_NAME[name].type
        assert want in types(props[name]) or (want == "int" and "float" in types(props[name])), name


def test_a_record_role_follows_the_schema(tmp_path: Path) -> None:
    # a step read from a multi-line record (Composer's console): its rate's `how` is `record`
    lines = []
    for s in range(1, 11):
        lines += [f"[batch={s}/100]:", f"\t Train time/batch: {s - 1}", "\t Train throughput/batches_per_sec: 1.25"]
    (tmp_path / "train.log").write_text("\n".join(lines) + "\n")
    doc = json.loads(analyse(str(tmp_path / "train.log")).render("json"))
    _validator().validate(doc)
    roles = [r for s in doc["reading"]["streams"] for r in s["roles"]]
    assert {"name": "Train throughput/batches_per_sec", "role": "iter_rate", "how": "record"} in roles
