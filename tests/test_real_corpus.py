"""The labelled real logs of ../shared/corpus/real, through benchmarks/accuracy.py: every case is read (none refused)
and every run fact its truth.json names is read right. Skipped where the corpus is absent."""
from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("accuracy", ROOT / "benchmarks" / "accuracy.py")
accuracy = importlib.util.module_from_spec(_spec)
sys.modules["accuracy"] = accuracy  # dataclasses look their module up there
_spec.loader.exec_module(accuracy)  # type: ignore[union-attr]

REAL_CASES = accuracy.cases("real")


@pytest.mark.skipif(not REAL_CASES, reason="../shared/corpus/real is not beside the checkout")
@pytest.mark.parametrize("case", REAL_CASES, ids=[c[0] for c in REAL_CASES])
def test_real_case_is_read_and_its_facts_match(case: tuple[str, list[str], dict]) -> None:
    res = accuracy.evaluate(*case)
    assert res.refused is None
    assert res.facts_got == res.facts_want


@pytest.mark.parametrize("case", accuracy.cases("samples"), ids=[c[0] for c in accuracy.cases("samples")])
def test_sample_facts_match_their_labels(case: tuple[str, list[str], dict]) -> None:
    res = accuracy.evaluate(*case)
    assert res.refused is None
    assert res.facts_got == res.facts_want
