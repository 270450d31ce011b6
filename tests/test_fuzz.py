"""Seeded mutations of the sample logs and configs through the whole pipeline (benchmarks/fuzz.py holds the mutations
and the case): each must end as a report or as an InputError (exit 2 at the CLI), never another exception, with no raw
control character in its Markdown or terminal text, and its input byte-identical. `DIAGNOSE_FUZZ_SEEDS=2000 pytest
tests/test_fuzz.py` runs more locally; CI runs the default; `python benchmarks/fuzz.py` is the long run (docs/fuzz.md).
In-process, so a few hundred cases take seconds, not minutes of startups.
"""
from __future__ import annotations

import hashlib
import os
import resource
from pathlib import Path

import pytest

from conftest import bench

pytestmark = pytest.mark.slow  # seconds to minutes: `pytest -m "not slow"` between edits

fuzz = bench("fuzz")

SEEDS = int(os.environ.get("DIAGNOSE_FUZZ_SEEDS", "280"))


def _digest(paths: list[Path]) -> list[str]:
    return [hashlib.sha256(p.read_bytes()).hexdigest() for p in paths]


@pytest.mark.longest
def test_fuzzed_inputs_end_in_a_report_or_a_clean_input_error(tmp_path: Path) -> None:
    before = _digest(fuzz.BASES)
    outcomes = {"report": 0, "input_error": 0}
    for seed in range(SEEDS):
        outcomes[fuzz.run_case(seed, tmp_path)] += 1
    assert _digest(fuzz.BASES) == before
    assert outcomes["report"] > 0 and outcomes["input_error"] > 0, outcomes
    # the whole run's peak, in-process: bounded although some cases hold 2 MB lines and 20k NULs
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss < 1_500_000  # KiB


def test_every_mutation_class_runs() -> None:
    names = {m.__name__ for m in fuzz.MUTATIONS}
    assert {"_overflow", "_controls", "_prefixes", "_redraws", "_gzip", "_huge"} <= names
    assert SEEDS >= len(fuzz.MUTATIONS) * 10
