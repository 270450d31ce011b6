"""What a rule returns: a finding with its evidence and the exact fix. Plain frozen dataclasses."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

Severity = Literal["critical", "warning", "info"]
Confidence = Literal["high", "medium", "low"]
SEVERITY_ORDER = {"critical": 0, "warning": 1, "info": 2}
CONFIDENCE_ORDER = {"high": 0, "medium": 1, "low": 2}


@dataclass(frozen=True)
class Evidence:
    text: str  # a log line, a config value or a metric statement
    source: str | None = None  # file / URL it came from
    line: int | None = None
    kind: Literal["log", "config", "metric", "env"] = "log"


@dataclass(frozen=True)
class Change:
    target: Literal["ds_config", "accelerate", "env", "trainer_args", "launcher"]
    key: str  # JSON path (zero_optimization.stage), YAML key, variable name or flag
    before: object | None  # current value where known; None = unknown or unset
    after: object | None  # None = remove / unset
    # The framework that fills this DeepSpeed JSON key from its own arguments (diagnose/frameworks.py): an "auto"
    # in the file stays, a literal moves with the argument.
    filled_by: str | None = None


@dataclass(frozen=True)
class Fix:
    summary: str
    changes: tuple[Change, ...] = ()
    expected_effect: str = ""


@dataclass(frozen=True, kw_only=True)
class Cost:
    """What a finding's cause cost in this run, from the goodput account (diagnose/costs.py), and what its fix
    would save; `arithmetic` shows the sum."""

    measure: str  # the account measure it rests on (stalls, communication, ...)
    lost_s: float  # wall seconds of the run
    gpu_hours: float | None  # lost_s x GPUs; None with the GPU count unknown
    per_1000_steps: float | None  # GPU-hours per 1,000 steps
    share: float | None  # of the run's span
    saves_gpu_hours: float | None
    arithmetic: str
    unit: str = "GPU-hours"  # what the hours count: "process-hours" on a CPU run


@dataclass(frozen=True, kw_only=True)
class Finding:
    id: str
    title: str
    severity: Severity
    confidence: Confidence
    explains_slowdown: bool
    summary: str
    evidence: tuple[Evidence, ...] = ()
    fix: Fix | None = None
    data: dict[str, object] = field(default_factory=dict)  # numbers behind the finding, for JSON consumers
    cost: Cost | None = None  # set by the engine from the goodput account where the rule declares what it costs


def rank_key(f: Finding) -> tuple[int, int, float, int, str]:
    """Findings that explain the slowdown first (an info-level one never leads: it is context, issue 31), then by
    severity; within a severity, those with a measured cost by that cost, largest first (issue 23); then
    confidence."""
    cost = -f.cost.lost_s if f.cost is not None else 0.0
    leads = f.explains_slowdown and f.severity != "info"
    return (0 if leads else 1, SEVERITY_ORDER[f.severity], cost, CONFIDENCE_ORDER[f.confidence], f.id)


def causes_first(findings: list[Finding], symptoms: dict[str, tuple[str, ...]]) -> list[Finding]:
    """Each finding whose rule declares others as its symptoms moved just above the first of them that ranks higher:
    the cause leads what it brings about, and the rest keeps its order."""
    out = list(findings)
    for cause in [f for f in findings if symptoms.get(f.id)]:
        at = out.index(cause)
        above = [i for i, f in enumerate(out[:at]) if f.id in symptoms[cause.id]]
        if above:
            out.insert(above[0], out.pop(at))
    return out
