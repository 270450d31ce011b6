"""All findings' fixes -> one recommended configuration that is safe to paste.

Each change is checked against the run's effective configuration (the engine's printed config, the DeepSpeed JSON,
the accelerate YAML, the environment, the launch flags): a change to what the run already has is dropped, and so
is unsetting a variable that is not set. The changes are then merged in the findings' rank order, so a key gets
one value: a later finding that wants another value for it loses that change (its fix says which finding decided
the key). With memory above MEMORY_TIGHT of the GPU, or allocator cache flushes, no change may raise the
micro-batch.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from diagnose.findings import Change, Finding
from diagnose.frameworks import translate
from diagnose.parsers.facts import RunFacts

MEMORY_TIGHT = 0.85  # above 85% of the GPU a larger micro-batch risks OOM (issue 11; the allocator needs headroom)
_MICRO_BATCH_KEYS = {"train_micro_batch_size_per_gpu", "per_device_train_batch_size", "micro-batch-size"}


@dataclass(frozen=True)
class Dropped:
    finding: str
    change: Change
    why: str
    advice: bool = False  # not dropped as unsafe: no flag in this framework, so said in words instead


@dataclass(frozen=True)
class Recommendation:
    changes: tuple[Change, ...]  # one per (target, key), in finding rank order
    decided_by: dict[tuple[str, str], str]  # (target, key) -> the finding whose value the config follows
    dropped: tuple[Dropped, ...]


def settle(findings: list[Finding], facts: RunFacts, memory_tight: bool) -> tuple[list[Finding], Recommendation]:
    """-> (findings with only safe, non-conflicting changes, the merged recommendation)."""
    merged: dict[tuple[str, str], Change] = {}
    decided: dict[tuple[str, str], str] = {}
    dropped: list[Dropped] = []
    out = []
    for f in findings:
        if f.fix is None or not f.fix.changes:
            out.append(f)
            continue
        kept = []
        for ch in f.fix.changes:
            ch = _with_before(ch, facts)
            ch_here, words = translate(ch, facts.framework)
            if ch_here is None:  # no flag in this run's framework: the fix says it in words instead
                dropped.append(Dropped(f.id, ch, words, advice=True))
                continue
            ch = _with_before(ch_here, facts)
            why = _unsafe(ch, facts, memory_tight)
            slot = (ch.target, ch.key)
            if why is None and slot in merged and _norm(merged[slot].after) != _norm(ch.after):
                why = f"the recommended configuration follows {decided[slot]} for this key"
            if why is not None:
                dropped.append(Dropped(f.id, ch, why))
                continue
            kept.append(ch)
            if slot not in merged:
                merged[slot], decided[slot] = ch, f.id
        note = _note(f.id, f.fix.changes, kept, dropped)
        fix = dataclasses.replace(f.fix, changes=tuple(kept),
                                  summary=f.fix.summary + (f" ({note})" if note else ""))
        out.append(dataclasses.replace(f, fix=fix))
    return out, Recommendation(tuple(merged.values()), decided, tuple(dropped))


def _note(fid: str, before: tuple[Change, ...], kept: list[Change], dropped: list[Dropped]) -> str:
    mine = [d for d in dropped if d.finding == fid]
    if not mine or len(kept) == len(before):
        return ""
    return "; ".join(d.why if d.advice else f"{d.change.key}: {d.why}" for d in mine)


def _unsafe(ch: Change, facts: RunFacts, memory_tight: bool) -> str | None:
    if isinstance(ch.after, str) and ch.after.startswith("<"):
        return "no value computed from the run"
    if ch.target == "env" and ch.after is None and ch.key not in facts.env:
        return "not set in this run"
    known, current = facts.effective(ch.target, ch.key)
    if known and _norm(current) == _norm(ch.after):
        return "the run already has it"
    if memory_tight and ch.key in _MICRO_BATCH_KEYS and isinstance(ch.after, (int, float)) \
            and isinstance(ch.before, (int, float)) and ch.after > ch.before:
        return "memory is above 85% of the GPU or the allocator flushes its cache: a larger micro-batch risks OOM"
    return None


def _with_before(ch: Change, facts: RunFacts) -> Change:
    if ch.before is not None:
        return ch
    known, current = facts.effective(ch.target, ch.key)
    return dataclasses.replace(ch, before=current) if known else ch


def _norm(value: Any) -> str | None:
    if value is None:
        return None
    s = str(value).strip().strip("'\"").lower()
    try:
        return repr(float(s))
    except ValueError:
        return {"yes": "true", "no": "false", "on": "true", "off": "false"}.get(s, s)
