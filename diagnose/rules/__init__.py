"""The rule registry. A rule is a small pure function (Ctx) -> Finding | None, registered with its docs in the
fixed shape `diagnose rules ID` prints: what it detects / why it slows training / the evidence it needs / the fix.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from diagnose.endings import Ending
from diagnose.findings import Change, Evidence, Finding, Fix
from diagnose.goodput import Account
from diagnose.metrics import Metrics
from diagnose.planner import Plan
from diagnose.parsers.facts import RunFacts
from diagnose.parsers.names import FindingId
from diagnose.parsers.run_model import RunModel


@dataclass(frozen=True)
class Ctx:
    model: RunModel
    facts: RunFacts
    metrics: Metrics
    plan: Plan | None
    rule: Rule | None = None  # the rule being run (engine.diagnose sets it): findings take its id and title
    account: Account | None = None  # where the time went (diagnose/goodput.py), where a clock allows one
    ending: Ending | None = None  # how the run ended (diagnose/endings.py)

    def finding(self, **fields: Any) -> Finding:
        """A finding of the running rule: its id, and its title unless the finding words it otherwise."""
        assert self.rule is not None, "a finding is made while a rule runs"
        return Finding(id=self.rule.id, **{"title": self.rule.title, **fields})

    def env(self, name: str) -> str | None:
        ev = self.facts.env.get(name)
        return str(ev.value) if ev is not None else None

    def env_evidence(self, name: str) -> Evidence:
        ev = self.facts.env[name]
        return Evidence(f"{name}={ev.value} ({ev.origin.replace('_', ' ')})",
                        self.model.source_name(ev.source), ev.line, "env")

    def fact_evidence(self, fact: str, label: str | None = None) -> Evidence | None:
        ev = self.facts.evidence.get(fact)
        if ev is None:
            return None
        return Evidence(f"{label or fact} = {ev.value} ({ev.origin.replace('_', ' ')})",
                        self.model.source_name(ev.source) if ev.source >= 0 else None, ev.line, "config")

    @property
    def gpu_run(self) -> bool:
        """False for CPU runs (gloo, DeepSpeed's CPU accelerator): GPU-only advice does not apply to them."""
        return not self.facts.cpu_run


@dataclass(frozen=True, kw_only=True)
class Rule:
    """A rule, self-contained: its id and title, its docs in the fixed shape (`diagnose rules ID`), the facts whose
    change brings it about (compare's attribution: a finding that appears next to a change of one of these is that
    change's consequence; () when no config fact does), and the sample scenario it fires on (tests/test_rules.py)."""

    id: FindingId
    title: str
    detects: str
    why: str
    evidence: str
    fix: str
    drivers: tuple[str, ...]
    scenario: str
    check: Callable[[Ctx], Finding | None]
    # What the rule's cause cost, as measures of the goodput account (diagnose/goodput.py MEASURES); () where the logs
    # cannot price it (a switch left on has no run without it to compare against).
    costs: tuple[str, ...] = ()
    # Rules whose findings this rule's cause brings about (the bubble makes pipeline stages wait on send/recv, which
    # comm-bound sees as communication): where both fire, this one ranks above them (issue 31).
    symptoms: tuple[FindingId, ...] = ()
    # The expected effect of the fix, computed from the changes as the recommendation merged them (its own where
    # another finding did not decide the key): (facts, the finding's data, the changes) -> words; None keeps the
    # rule's own words (issue 31).
    effect: Callable[[RunFacts, dict[str, Any], tuple[Change, ...]], str | None] | None = None


REGISTRY: dict[str, Rule] = {}


def rule(id: FindingId, title: str, *, detects: str, why: str, evidence: str, fix: str, drivers: tuple[str, ...],
         scenario: str, costs: tuple[str, ...] = (), symptoms: tuple[FindingId, ...] = (),
         effect: Callable[[RunFacts, dict[str, Any], tuple[Change, ...]], str | None] | None = None,
         ) -> Callable[[Any], Any]:
    def register(fn: Callable[[Ctx], Finding | None]) -> Callable[[Ctx], Finding | None]:
        assert id not in REGISTRY, id
        REGISTRY[id] = Rule(id=id, title=title, detects=detects, why=why, evidence=evidence, fix=fix,
                            drivers=drivers, scenario=scenario, check=fn, costs=costs, symptoms=symptoms,
                            effect=effect)
        return fn
    return register


def load_all() -> dict[str, Rule]:
    from diagnose.rules import (  # noqa: F401
        ending_rules, env_rules, memory_rules, network_rules, parallel_rules, timing_rules, zero_rules)

    return REGISTRY


__all__ = ["Change", "Ctx", "Evidence", "Finding", "Fix", "REGISTRY", "Rule", "load_all", "rule"]
