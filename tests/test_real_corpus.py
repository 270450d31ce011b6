"""The labelled real logs of ../shared/corpus/real, through benchmarks/accuracy.py: every case is read (none refused)
and every run fact its truth.json names is read right. Skipped where the corpus is absent."""
from __future__ import annotations

import pytest

from conftest import bench

# seconds to minutes: `pytest -m "not slow"` between edits; on one test worker, which reads each case once
# (accuracy.read) for all the tests that ask for it
pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("corpus")]

accuracy = bench("accuracy")

REAL_CASES = accuracy.cases("real")


@pytest.mark.skipif(not REAL_CASES, reason="../shared/corpus/real is not beside the checkout")
@pytest.mark.parametrize("case", REAL_CASES, ids=[c[0] for c in REAL_CASES])
def test_real_case_is_read_and_no_fact_is_wrong(case: tuple[str, list[str], dict]) -> None:
    """Every case is read; a labelled fact is right or unknown, never wrong (the ratchet bounds the unknown)."""
    res = accuracy.evaluate(*case)
    assert res.refused is None
    assert {k: v for k, v in res.facts_got.items() if v is not None} == \
        {k: v for k, v in res.facts_want.items() if res.facts_got.get(k) is not None}


@pytest.mark.parametrize("case", accuracy.cases("samples"), ids=[c[0] for c in accuracy.cases("samples")])
def test_sample_facts_match_their_labels(case: tuple[str, list[str], dict]) -> None:
    res = accuracy.evaluate(*case)
    assert res.refused is None
    assert res.facts_got == res.facts_want


# The real-corpus figures may only rise (issues 11, 19, 30): raise these when benchmarks/accuracy.py reaches more.
# The first 73 cases and the 33 held back until 2026-12-02 (benchmarks/corpus_waves.json) are counted apart.
REAL_HITS_FLOOR = 45  # of 50 cases of the first 73 that expect a finding, 2026-12-01
ADDED_HITS_FLOOR = 21  # of 24 added cases that expect a finding, 2026-12-02 (9 before issue 30's reader, 12 with its
#                        first cut; goal 80%)
ADDED_FALSE_ALARMS_CEILING = 0  # of 9 healthy added cases (was 1: no-mixed-precision on b-autotrain's 4-bit QLoRA run)
ADDED_FACTS_UNKNOWN_CEILING = 9  # of 50 labelled facts of the added cases, 2026-12-02 (24 before, and 1 wrong; 19
#                                  before settings in configs and counts stated in words)
ADDED_NOT_RAISED_CEILING = 0  # ids a label rules out, raised as a cause (was 1: verl's steps slowing with its rollouts)


@pytest.mark.skipif(not REAL_CASES, reason="../shared/corpus/real is not beside the checkout")
def test_added_corpus_ratchet() -> None:
    """The 33 added cases: every one read, none of their facts wrong, hits and unknowns held where they are."""
    s = accuracy.summary(accuracy.run_set("added"))
    assert s["refused"] == []
    assert s["hits"] >= ADDED_HITS_FLOOR, s["rules"]
    assert s["false_alarms"] <= ADDED_FALSE_ALARMS_CEILING
    assert s["facts_total"] - s["facts_matched"] - s["facts_unknown"] == 0, s["facts_wrong"]
    assert s["facts_unknown"] <= ADDED_FACTS_UNKNOWN_CEILING, s["facts_wrong"]
    assert sum(len(v) for v in s["not_raised"].values()) <= ADDED_NOT_RAISED_CEILING, s["not_raised"]


@pytest.mark.skipif(not REAL_CASES, reason="../shared/corpus/real is not beside the checkout")
def test_real_corpus_ratchet() -> None:
    s = accuracy.summary(accuracy.run_set("first"))
    assert s["cases"] == 73
    assert s["refused"] == []
    assert s["hits"] >= REAL_HITS_FLOOR, s["rules"]
    assert s["false_alarms"] == 0
    assert s["not_raised"] == {}  # no id a case's label rules out is raised as its cause
    assert s["facts_total"] - s["facts_matched"] - s["facts_unknown"] == 0  # no fact read wrong
    assert s["facts_unknown"] <= 0.10 * s["facts_total"]  # issue 19: at most 10% unknown


def _cases() -> list[tuple[str, list[str], dict]]:
    return accuracy.cases("samples") + REAL_CASES


@pytest.mark.parametrize("case", _cases(), ids=[c[0] for c in _cases()])
def test_no_report_holds_a_no_op_or_conflicting_change(case: tuple[str, list[str], dict]) -> None:
    model, d = accuracy.read(tuple(case[1]))
    merged = {(c.target, c.key): c.after for c in d.recommendation.changes}
    assert len(merged) == len(d.recommendation.changes)  # one value per key
    for f in d.findings:
        for c in (f.fix.changes if f.fix else ()):
            assert merged[(c.target, c.key)] == c.after, (f.id, c)  # no finding contradicts the merged config
            known, current = model.facts.effective(c.target, c.key)
            assert not (known and str(current).lower() == str(c.after).lower()), (f.id, c)  # not a no-op
            assert not (isinstance(c.after, str) and c.after.startswith("<")), (f.id, c)  # no placeholder
            assert not (c.target == "env" and c.after is None and c.key not in model.facts.env), (f.id, c)
