"""Invariants every recommended change keeps (issue 31, must 1), held over the bundled samples and over a grid of
run shapes: the global batch (micro-batch x accumulation x data-parallel size) is the run's unless a finding says why
it changes; a change that needs memory headroom is in the patch only with a measured peak on a known GPU; a change
to the value the run already has is not made."""
from __future__ import annotations

import itertools

import pytest

from conftest import SAMPLES
from conftest import diagnosed as read_once
from diagnose.findings import Change, Finding, Fix
from diagnose.parsers.facts import RunFacts
from diagnose.recommend import _needs_headroom, global_batch, settle

# One test worker runs this module, so that its module-scoped fixture is built once (pytest-xdist's loadgroup), on
# the worker whose cache holds every sample's reading already (conftest.diagnosed).
pytestmark = pytest.mark.xdist_group("corpus")

RUNS = sorted(str(p.parent.relative_to(SAMPLES)) for p in SAMPLES.rglob("*.log") if "wandb" not in p.parts
              and p.parent.name != "files")


@pytest.fixture(scope="module")
def diagnosed() -> dict[str, tuple]:
    out = {}
    for run in dict.fromkeys(RUNS):
        out[run] = read_once((str(SAMPLES / run),))
    return out


@pytest.mark.slow
def test_the_samples_cover_runs_with_batch_changes(diagnosed: dict[str, tuple]) -> None:
    asked = [run for run, (_, d) in diagnosed.items() for f in d.findings if f.fix
             for c in f.fix.changes + tuple(x.change for x in d.recommendation.dropped if x.finding == f.id)
             if c.key in ("train_micro_batch_size_per_gpu", "gradient_accumulation_steps")]
    assert len(set(asked)) >= 3, asked


@pytest.mark.parametrize("run", list(dict.fromkeys(RUNS)))
@pytest.mark.slow
def test_each_samples_recommendation_keeps_the_invariants(diagnosed: dict[str, tuple], run: str) -> None:
    model, d = diagnosed[run]
    facts = model.facts
    changes = list(d.recommendation.changes)
    before, after = global_batch(facts), global_batch(facts, changes)
    meant = any(f.data.get("global_batch_change") for f in d.findings)
    if before is not None and not meant:
        assert after is not None and before[0] * before[1] * before[2] == after[0] * after[1] * after[2], changes
    assert not any(c.key in ("train_batch_size", "global-batch-size") for c in changes) or meant
    if d.metrics.peak_mem_gb is None and "mem_max" not in d.metrics.utilization:
        assert not [c for c in changes if _needs_headroom(c, facts)], changes
    for c in changes:
        known, current = facts.effective(c.target, c.key)
        assert not (known and str(current).lower() == str(c.after).lower()), c


def _finding(fid: str, *changes: Change) -> Finding:
    return Finding(id=fid, title=fid, severity="warning", confidence="medium", explains_slowdown=True,
                   summary="", fix=Fix("change it", changes))


GRID = list(itertools.product([1, 2, 4], [1, 4, 16], [1, 8], ["tight", "ok", "unknown"]))


@pytest.mark.parametrize("micro,accum,dp,headroom", GRID)
def test_the_global_batch_holds_over_a_grid(micro: int, accum: int, dp: int, headroom: str) -> None:
    """Pairs that keep the product, a pair whose larger micro-batch cannot be made, accumulation alone, a global
    batch asked for: whatever is kept, the product is the run's."""
    facts = RunFacts(world_size=dp, data_parallel=dp, micro_batch_per_gpu=micro, grad_accum_steps=accum)
    mb, ga = "train_micro_batch_size_per_gpu", "gradient_accumulation_steps"
    fixes = [
        _finding("pair", Change("ds_config", mb, micro, micro * 2), Change("ds_config", ga, accum, max(1, accum // 2))),
        _finding("alone", Change("ds_config", ga, accum, accum * 2)),
        _finding("global", Change("trainer_args", "global-batch-size", micro * accum * dp, micro * accum * dp * 7)),
    ]
    out, rec = settle(fixes, facts, headroom)  # type: ignore[arg-type]
    shape = global_batch(facts, list(rec.changes))
    assert shape is not None and shape[0] * shape[1] * shape[2] == micro * accum * dp
    assert not any(c.key == "global-batch-size" for c in rec.changes)
    if headroom != "ok":  # a larger micro-batch needs room that is measured
        assert not any(c.key == mb and c.after > micro for c in rec.changes)
    for f in out:  # every change left out is said, with its reason
        left = [c for c in next(x for x in fixes if x.id == f.id).fix.changes if c not in f.fix.changes]
        assert all(any(d.change.key == c.key and d.finding == f.id for d in rec.dropped) for c in left)


def test_a_finding_that_means_to_change_the_global_batch_keeps_it() -> None:
    facts = RunFacts(world_size=8, data_parallel=8, micro_batch_per_gpu=4, grad_accum_steps=4)
    f = _finding("more", Change("ds_config", "gradient_accumulation_steps", 4, 8))
    f = Finding(**{**f.__dict__, "data": {"global_batch_change": "the loss needs a larger batch"}})
    _, rec = settle([f], facts, "ok")
    assert [c.after for c in rec.changes] == [8]


def test_unknown_headroom_turns_memory_changes_into_advice() -> None:
    facts = RunFacts(world_size=8, data_parallel=8, micro_batch_per_gpu=4, grad_accum_steps=1, zero_stage=3)
    f = _finding("room", Change("ds_config", "zero_optimization.offload_optimizer.device", "cpu", "none"),
                 Change("ds_config", "zero_optimization.stage", 3, 1))
    out, rec = settle([f], facts, "unknown")
    assert rec.changes == () and all(d.advice and "try it by hand" in d.why for d in rec.dropped)
    _, rec = settle([f], facts, "ok")
    assert len(rec.changes) == 2
