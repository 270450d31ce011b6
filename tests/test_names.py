"""The vocabularies as types (issue 34): each Literal alias in parsers/names.py is exactly what the code registers,
so a name spelled wrong in a signature is a type error and a name added in one place fails here."""
from __future__ import annotations

from typing import get_args

from conftest import SAMPLES
from diagnose.parsers import fact_table
from diagnose.parsers.names import ClockName, FactName, FindingId, FrameName


def test_fact_names_are_the_fact_table() -> None:
    assert set(get_args(FactName)) == {f.name for f in fact_table.FACTS}
    assert len(fact_table.FACTS) == len(fact_table.BY_NAME)  # one entry per fact


def test_finding_ids_are_the_rule_registry() -> None:
    from diagnose.rules import load_all

    assert set(get_args(FindingId)) == set(load_all())


def test_frame_names_are_the_run_models_frames() -> None:
    from diagnose.parsers import parse

    assert set(get_args(FrameName)) == set(parse([str(SAMPLES / "ds_zero0")]).frames)


def test_clock_names_are_the_clocks() -> None:
    from diagnose.clocks import CLOCKS

    assert tuple(get_args(ClockName)) == tuple(c.name for c in CLOCKS)


def test_every_run_fact_field_is_declared_or_structural() -> None:
    """RunFacts' scalar fields are the table's facts (a field added without an entry fails here); the rest are the
    structures the table does not describe (env, versions, the configs as read, the evidence)."""
    import dataclasses

    from diagnose.parsers.facts import RunFacts

    structural = {"allocated_gpus", "hostnames", "comms_logger", "flops_profiler", "horovod_nccl", "versions", "env",
                  "nccl", "hf", "accelerate", "ds_config", "ds_engine", "script_args", "flops", "evidence",
                  "framework", "set_aside", "claims", "smi"}
    fields = {f.name for f in dataclasses.fields(RunFacts)}
    declared = {f.name for f in fact_table.FACTS if not f.derived}
    assert fields - structural == declared
    assert all(isinstance(getattr(RunFacts, f.name, None), property) for f in fact_table.FACTS if f.derived)
