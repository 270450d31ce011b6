"""A golden `parse --format json` summary per sample log (reviewed by hand when written; UPDATE_GOLDEN=1 rewrites).

The summaries pin every run fact and frame size, so any parser change that moves them shows up as a diff here.
"""
from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from conftest import ROOT, SAMPLES
from diagnose.parsers import parse
from diagnose.reports.run_json import summary

GOLDEN = Path(__file__).parent / "golden"
RUNS = sorted(p.name for p in SAMPLES.iterdir() if (p / "train.log").is_file())


@pytest.mark.parametrize("run", RUNS)
def test_golden_summary(run: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)
    got = json.loads(json.dumps(summary(parse([f"sample_logs/{run}"])), default=str))
    path = GOLDEN / f"{run}.json"
    if os.environ.get("UPDATE_GOLDEN") or not path.exists():
        GOLDEN.mkdir(exist_ok=True)
        path.write_text(json.dumps(got, indent=1, sort_keys=True) + "\n")
        pytest.skip(f"wrote {path.name}")
    assert got == json.loads(path.read_text())
