"""`diagnose compare` on real pairs: runs recorded with the same script and one change each (sample_logs/pairs/),
and the corpus's own recorded pair. Each checks the named change, the step-time ratio against one computed here
from the logs' timestamps (independently of the parsers), and the attribution."""
from __future__ import annotations

import json
import re
import statistics
from datetime import datetime
from itertools import pairwise
from pathlib import Path

import pytest

from conftest import SAMPLES, run_cli

PAIRS = SAMPLES / "pairs"
CORPUS = Path(__file__).resolve().parent.parent.parent / "shared" / "corpus"
STEP_LINE = re.compile(r"^\[(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3})\] .*\[Rank 0\] step=(\d+),", re.MULTILINE)


def independent_step_s(log: Path) -> float:
    """Median wall seconds between rank 0's consecutive `step=` lines after the first 2 steps: read here with one
    regex over the raw text, not through diagnose's parsers."""
    stamps = [(int(step), datetime.strptime(ts, "%Y-%m-%d %H:%M:%S,%f"))
              for ts, step in STEP_LINE.findall(log.read_text(errors="replace"))]
    stamps = sorted(dict(stamps).items())
    gaps = [(b[1] - a[1]).total_seconds() / (b[0] - a[0]) for a, b in pairwise(stamps) if a[0] > 2]
    return statistics.median(gaps)


def compare_json(*args: str) -> dict:
    proc = run_cli("compare", *args, "--format", "json", "-o", "-")
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def changed(doc: dict) -> dict[str, tuple]:
    return {c["key"]: (c["baseline"], c["candidate"]) for c in doc["changes"]}


# candidate, the change, the facts that follow from it (also allowed to differ), what the explanation must name
RECORDED = [
    ("zero3", "zero_stage", (1, 3), {"overlap_comm", "contiguous_gradients", "reduce_bucket_size",
                                     "allgather_bucket_size", "prefetch_bucket_size"}, "zero_stage"),
    ("offload", "offload_optimizer", ("none", "cpu"), {"optimizer"}, "offload_optimizer"),
    ("one_rank", "world_size", (2, 1), {"data_parallel", "train_batch_size", "gpus_per_node"}, "world_size"),
    ("ga4", "grad_accum_steps", (1, 4), {"train_batch_size"}, "grad_accum_steps"),
]


@pytest.mark.skipif(not (PAIRS / "base").is_dir(), reason="sample_logs/pairs not recorded")
@pytest.mark.parametrize("name, key, values, derived, named", RECORDED, ids=[r[0] for r in RECORDED])
def test_recorded_pair_names_the_change_its_cost_and_its_cause(name: str, key: str, values: tuple, derived: set,
                                                               named: str | None) -> None:
    doc = compare_json(str(PAIRS / "base"), str(PAIRS / name))
    ch = changed(doc)
    assert ch[key] == values
    facts = {k for k in ch if not k.startswith(("version.", "ds.", "env."))}
    assert facts - derived - {key} == set(), f"more than the one change: {facts}"
    expected = independent_step_s(PAIRS / name / "train.log") / independent_step_s(PAIRS / "base" / "train.log")
    got = doc["delta"]["step_time_ratio"]
    assert got == pytest.approx(expected, rel=0.10)
    if named is not None:
        assert any(named in e["keys"] for e in doc["explained_by"]), doc["explained_by"]
    assert doc["verdict"] and len(doc["verdict"]) < 400
    if name == "one_rank":  # fewer processes: scaling efficiency of the larger run, per process
        assert doc["scaling"]["gpus"] == [2, 1] and 0 < doc["scaling"]["efficiency"] < 1.5
        assert "of ideal scaling" in doc["verdict"]
    if name == "ga4":  # 4x the samples a step: compared per sample
        assert "4x the samples" in doc["explained_by"][0]["text"]


@pytest.mark.skipif(not (PAIRS / "base").is_dir(), reason="sample_logs/pairs not recorded")
def test_a_slow_rank_shows_as_a_straggler_the_baseline_lacks() -> None:
    doc = compare_json(str(PAIRS / "base"), str(PAIRS / "slow_rank"))
    assert "world_size" not in changed(doc) and "zero_stage" not in changed(doc)
    expected = independent_step_s(PAIRS / "slow_rank" / "train.log") / independent_step_s(PAIRS / "base" / "train.log")
    assert doc["delta"]["step_time_ratio"] == pytest.approx(expected, rel=0.10)
    assert doc["delta"]["step_time_ratio"] > 1.2
    assert "slower" in doc["verdict"]
    assert any(e["finding"] == "straggler" or "all-reduce" in e["text"] for e in doc["explained_by"])


@pytest.mark.skipif(not (CORPUS / "ds_zero3.log").is_file(), reason="../shared/corpus is not beside the checkout")
def test_corpus_pair_zero0_against_zero3() -> None:
    """The corpus's recordings of the same script at ZeRO-0 and ZeRO-3 (single files, with their configs)."""
    doc = compare_json(str(CORPUS / "ds_zero0.log"), str(CORPUS / "ds_zero3.log"),
                       "--baseline", str(CORPUS / "ds_zero0.ds_config.json"),
                       "--candidate", str(CORPUS / "ds_zero3.ds_config.json"))
    assert changed(doc)["zero_stage"] == (0, 3)
    expected = independent_step_s(CORPUS / "ds_zero3.log") / independent_step_s(CORPUS / "ds_zero0.log")
    assert doc["delta"]["step_time_ratio"] == pytest.approx(expected, rel=0.10)
    assert doc["delta"]["step_time_ratio"] > 1.0
    assert any("zero_stage" in e["keys"] for e in doc["explained_by"])
    assert doc["verdict"].startswith("The candidate is") and "slower" in doc["verdict"]


@pytest.mark.slow
def test_compare_reports_in_every_format(tmp_path: Path) -> None:
    base, cand = str(SAMPLES / "ds_zero0"), str(SAMPLES / "ds_zero3_offload")
    md = run_cli("compare", base, cand, "-o", str(tmp_path / "c.md"))
    assert md.returncode == 0, md.stderr
    text = (tmp_path / "c.md").read_text()
    assert len(text) < 65_536 and "### What changed" in text and "| `zero_stage` | 0 | 3 |" in text
    assert "### What it cost" in text and "step time, median" in text
    html = run_cli("compare", base, cand, "-o", str(tmp_path / "c.html"))
    assert html.returncode == 0, html.stderr
    page = (tmp_path / "c.html").read_text()
    assert 'data-chart="step-time"' in page and 'data-chart="breakdown"' in page and "Content-Security-Policy" in page
    assert "http://" not in page.split("<script>")[0] and 'src="http' not in page
    txt = run_cli("compare", base, cand, "-f", "text", "-o", "-")
    assert txt.returncode == 0 and "What changed" in txt.stdout and "zero_stage" in txt.stdout
    # Both goodput accounts side by side in every text format; CPU runs count process-hours, not GPU-hours.
    assert "Where the time went" in txt.stdout and "steady steps" in txt.stdout and "process-hours" in txt.stdout
    assert "| part | baseline | candidate |" in text and "| process-hours |" in text and "GPU-hours" not in text
    doc = json.loads(run_cli("compare", base, cand, "-f", "json", "-o", "-").stdout)
    assert doc["schema_version"] == 1 and doc["kind"] == "compare"
    assert set(doc) >= {"baseline", "candidate", "changes", "delta", "scaling", "explained_by", "verdict"}
    assert set(doc["baseline"]) >= {"run", "metrics"} and doc["baseline"]["run"]["zero_stage"] == 0
    assert set(doc["delta"]) >= {"step_time_ratio", "throughput_ratio", "throughput_per_gpu_ratio"}
    assert doc["delta"]["step_time_ratio"] == pytest.approx(
        doc["candidate"]["metrics"]["steps"]["p50_s"] / doc["baseline"]["metrics"]["steps"]["p50_s"])


@pytest.mark.slow
def test_compare_needs_two_sides_and_known_formats(tmp_path: Path) -> None:
    one = run_cli("compare", str(SAMPLES / "ds_zero0"))
    assert one.returncode == 2 and "BASELINE and a CANDIDATE" in one.stderr and "Traceback" not in one.stderr
    bad = run_cli("compare", str(SAMPLES / "ds_zero0"), str(SAMPLES / "ds_zero0"), "-f", "pdf")
    assert bad.returncode == 2 and "--format" in bad.stderr
    missing = run_cli("compare", str(SAMPLES / "ds_zero0"), str(tmp_path / "nope.log"))
    assert missing.returncode == 2 and "nope.log" in missing.stderr
    several = run_cli("compare", str(SAMPLES / "synthetic"), str(SAMPLES / "ds_zero0"))
    assert several.returncode == 2 and "runs" in several.stderr


def test_the_same_run_twice_changes_nothing() -> None:
    doc = compare_json(str(SAMPLES / "ds_zero2_bf16"), str(SAMPLES / "ds_zero2_bf16"))
    assert doc["changes"] == [] and doc["delta"]["step_time_ratio"] == pytest.approx(1.0)
    assert doc["verdict"].startswith("No meaningful difference")
    assert doc["explained_by"] == []


@pytest.mark.slow
def test_secrets_in_either_side_are_redacted(tmp_path: Path) -> None:
    token = "hf_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789"
    for side in ("a", "b"):
        d = tmp_path / side
        d.mkdir()
        for f in (SAMPLES / "ds_zero0").iterdir():
            (d / f.name).write_bytes(f.read_bytes())
    script = tmp_path / "b" / "launch.sh"
    script.write_text(script.read_text() + f"\nexport HF_TOKEN={token}\n")
    for fmt in ("json", "md", "html", "text"):
        proc = run_cli("compare", str(tmp_path / "a"), str(tmp_path / "b"), "-f", fmt, "-o", "-")
        assert proc.returncode == 0, proc.stderr
        assert token not in proc.stdout and "HF_TOKEN" in proc.stdout


@pytest.mark.slow
def test_compare_never_prints_a_changed_credential(tmp_path: Path) -> None:
    """A token, key or password flag that differs between the runs is named as changed, its values never shown, in
    every format: values that look like no known secret shape (`hunter2hunter2`) included."""
    import shutil

    secrets = {"a": ("hf_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789", "hunter2hunter2", "tr0ub4dor"),
               "b": ("hf_ZyXwVuTsRqPoNmLkJiHgFeDcBa9876543210", "correcthorse99", "s3cr3tst0re")}
    for side, (tok, pw, store) in secrets.items():
        shutil.copytree(SAMPLES / "ds_zero0", tmp_path / side)
        script = tmp_path / side / "launch.sh"
        script.write_text(script.read_text().replace(
            "--steps 40", f"--steps 40 --hub_token {tok} --password {pw} --storepass {store}"))
    for fmt in ("md", "json", "text", "html"):
        out = run_cli("compare", str(tmp_path / "a"), str(tmp_path / "b"), "-f", fmt, "-o", "-")
        assert out.returncode == 0, out.stderr
        assert not any(v in out.stdout for vals in secrets.values() for v in vals), fmt
        assert "password" in out.stdout and "hub_token" in out.stdout
    doc = json.loads(run_cli("compare", str(tmp_path / "a"), str(tmp_path / "b"), "-f", "json", "-o", "-").stdout)
    changed = {c["key"]: (c["baseline"], c["candidate"]) for c in doc["changes"]}
    assert changed["arg.password"] == ("[REDACTED]", "[REDACTED]") and "arg.storepass" in changed
