"""The Python API and the one pipeline behind every front door (issue 22): `diagnose.analyse` gives what the CLI
prints, options apply to each run of a directory alike, and the server writes every registered format."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import SAMPLES, run_cli

SEED = SAMPLES / "synthetic" / "seed_zero3_launch_blocking"


def test_analyse_findings_and_write() -> None:
    import diagnose

    a = diagnose.analyse(SEED)
    assert [f.id for f in a.findings][:1] == ["cuda-launch-blocking"]
    assert len(a.runs) == 1 and "CUDA_LAUNCH_BLOCKING" in a.verdict


@pytest.mark.slow
def test_the_cli_is_a_thin_shell_over_the_pipeline(tmp_path: Path) -> None:
    import diagnose

    a = diagnose.analyse([str(SEED)])
    for fmt in ("md", "json"):
        proc = run_cli("report", str(SEED), "--format", fmt, "-o", "-")
        assert proc.returncode == 0, proc.stderr
        assert proc.stdout == a.render(fmt), fmt
    path = a.write(tmp_path / "report.html")
    assert path.read_text().startswith("<!DOCTYPE html>") and "CUDA_LAUNCH_BLOCKING" in path.read_text()
    with pytest.raises(ValueError, match="suffix"):
        a.write(tmp_path / "report.pdf")


@pytest.mark.slow
def test_options_apply_to_every_run_of_a_directory(tmp_path: Path) -> None:
    """--seq-len used to be dropped when a folder held several runs."""
    import shutil

    import diagnose

    for name in ("ds_zero0", "ds_zero2_bf16"):
        shutil.copytree(SAMPLES / name, tmp_path / name)
    a = diagnose.analyse(tmp_path, diagnose.Options(seq_len=2048))
    assert len(a.runs) == 2
    assert [r.model.facts.seq_len for r in a.runs] == [2048, 2048]
    proc = run_cli("report", str(tmp_path), "--seq-len", "2048", "--format", "json", "-o", "-")
    assert proc.returncode == 0, proc.stderr
    runs = json.loads(proc.stdout)["runs"]
    assert len(runs) == 2 and all(r["metrics"]["tokens_per_sec"] for r in runs)  # samples/s x the sequence length
    with pytest.raises(ValueError):
        diagnose.Options(seq_len=0)


def test_the_format_registry_drives_the_cli_and_the_server() -> None:
    from diagnose.reports.formats import FORMATS, by_suffix, suffix_list

    assert set(FORMATS) == {"html", "md", "json", "text"}
    assert all(by_suffix(s) is f for f in FORMATS.values() for s in f.suffixes)
    proc = run_cli("report", str(SEED), "-o", "x.pdf")
    assert proc.returncode == 2 and suffix_list() in proc.stderr
    proc = run_cli("report", str(SEED), "--format", "pdf")
    assert proc.returncode == 2 and ", ".join(FORMATS) in proc.stderr
