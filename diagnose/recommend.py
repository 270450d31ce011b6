"""All findings' fixes -> one recommended configuration that is safe to paste.

Each change is checked against the run's effective configuration (the engine's printed config, the DeepSpeed JSON,
the accelerate YAML, the environment, the launch flags): a change to what the run already has is dropped, and so
is unsetting a variable that is not set. The changes are then merged in the findings' rank order, so a key gets
one value: a later finding that wants another value for it loses that change (its fix says which finding decided
the key). With memory above MEMORY_TIGHT of the GPU, or allocator cache flushes, no change may raise the
micro-batch; with no peak memory measured on a known GPU, a change that needs room (a larger micro-batch,
recomputation off, a lower ZeRO stage, offload off) is advice in words, not in the patch (issue 31). Last, the
merged changes keep the run's global batch (micro-batch x accumulation x data-parallel size): a pair that would
not is left out whole, its product before and after said, unless a finding states why the batch changes.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, Literal

from diagnose.findings import Change, Finding
from diagnose.frameworks import route, translate
from diagnose.parsers.facts import RunFacts

MEMORY_TIGHT = 0.85  # above 85% of the GPU a larger micro-batch risks OOM (issue 11; the allocator needs headroom)
_MICRO_BATCH_KEYS = {"train_micro_batch_size_per_gpu", "per_device_train_batch_size", "micro-batch-size"}
_ACCUM_KEYS = {"gradient_accumulation_steps"}
_GLOBAL_BATCH_KEYS = {"train_batch_size", "global-batch-size"}
_CHECKPOINTING_KEYS = {"gradient_checkpointing", "recompute-activations", "checkpoint-activations"}
_OFFLOAD_KEYS = {"zero_optimization.offload_optimizer.device", "zero_optimization.offload_param.device"}

# How much memory a change may take: "tight" (the measured peak is near the card, or the allocator flushes), "ok"
# (a peak measured, with room, on a known card), "unknown" (nothing measured: a change that needs room is advice).
Headroom = Literal["tight", "ok", "unknown"]


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


def settle(findings: list[Finding], facts: RunFacts, headroom: Headroom) -> tuple[list[Finding], Recommendation]:
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
            why = _unsafe(ch, facts, headroom)
            if why is not None:
                dropped.append(Dropped(f.id, ch, why))
                continue
            routed, words = route(ch, facts)  # the knob in the files the run's framework reads (frameworks.py)
            if not routed:
                if words:
                    dropped.append(Dropped(f.id, ch, words, advice=True))
                continue
            if headroom == "unknown" and _needs_headroom(ch, facts):
                said = _said(_with_before(routed[0], facts))
                dropped.append(Dropped(f.id, ch, f"{said}: try it by hand, watching memory (this run measured no peak "
                                                 "memory on a known GPU, so it is not in the patch)", advice=True))
                continue
            for ch in (_with_before(r, facts) for r in routed):
                slot = (ch.target, ch.key)
                if slot in merged and _norm(merged[slot].after) != _norm(ch.after):
                    dropped.append(Dropped(f.id, ch, f"the recommended configuration follows {decided[slot]} for "
                                                     "this key"))
                    continue
                kept.append(ch)
                if slot not in merged:
                    merged[slot], decided[slot] = ch, f.id
        note = _note(f.id, dropped)
        fix = dataclasses.replace(f.fix, changes=tuple(kept),
                                  summary=f.fix.summary + (f" ({note})" if note else ""))
        out.append(dataclasses.replace(f, fix=fix))
    out, merged_changes = _keep_global_batch(out, list(merged.values()), facts, dropped)
    return out, Recommendation(tuple(merged_changes), decided, tuple(dropped))


def global_batch(facts: RunFacts, changes: list[Change] | tuple[Change, ...] = ()) -> tuple[int, int, int] | None:
    """(micro-batch, accumulation, data-parallel size) with `changes` applied (the last change of a key counts);
    None where one is unknown. In Megatron the accumulation is no setting: it follows from the global batch
    (--global-batch-size / (--micro-batch-size x data-parallel size)), and a micro-batch that does not divide it
    is refused by Megatron (None here)."""
    micro, accum = facts.micro_batch_per_gpu, facts.grad_accum_steps or 1
    dp = facts.data_parallel or facts.world_size
    glob = facts.train_batch_size
    for ch in changes:
        if ch.key in _MICRO_BATCH_KEYS and isinstance(ch.after, int):
            micro = ch.after
        elif ch.key in _ACCUM_KEYS and isinstance(ch.after, int):
            accum = ch.after
        elif ch.key in _GLOBAL_BATCH_KEYS and isinstance(ch.after, int):
            glob = ch.after
    if not micro or not dp:
        return None
    if facts.framework == "megatron" and glob:
        return (micro, glob // (micro * dp), dp) if glob % (micro * dp) == 0 else None
    return micro, accum, dp


def _keep_global_batch(findings: list[Finding], merged: list[Change], facts: RunFacts,
                       dropped: list[Dropped]) -> tuple[list[Finding], list[Change]]:
    """The micro-batch and the accumulation move together or not at all: where the merged changes would change the
    global batch (one of a pair dropped, or a finding asking for another global batch), the batch-shape changes go,
    and each finding's fix says why, with the product before and after. A finding that means to change the global
    batch says so in `data["global_batch_change"]` (its reason) and keeps it."""
    shape = [c for c in merged if c.key in _MICRO_BATCH_KEYS | _ACCUM_KEYS | _GLOBAL_BATCH_KEYS]
    if not shape:
        return findings, merged
    before, after = global_batch(facts), global_batch(facts, merged)
    asked = [c for c in merged if c.key in _GLOBAL_BATCH_KEYS]
    meant = any(f.data.get("global_batch_change") for f in findings if f.fix and any(c in shape for c in f.fix.changes))
    if meant and before is not None and after is not None and _product(before) != _product(after):
        return [_batch_said(f, before, after) for f in findings], merged
    if meant or (before is not None and after is not None and _product(before) == _product(after) and not asked):
        return findings, merged
    if before is not None and after is not None:
        why = (f"the recommendation would make the global batch {_shown(after)} instead of the run's "
               f"{_shown(before)}: the micro-batch and accumulation change together or not at all")
    else:
        why = "the global batch it would give cannot be checked (the micro-batch or data-parallel size is unknown)"
    out = []
    for f in findings:
        if f.fix is None or not any(c in shape for c in f.fix.changes):
            out.append(f)
            continue
        mine = [c for c in f.fix.changes if c in shape]
        for c in mine:
            dropped.append(Dropped(f.id, c, why))
        fix = dataclasses.replace(f.fix, changes=tuple(c for c in f.fix.changes if c not in shape),
                                  summary=f.fix.summary + f" ({', '.join(dict.fromkeys(c.key for c in mine))}: {why})")
        out.append(dataclasses.replace(f, fix=fix))
    return out, [c for c in merged if c not in shape]


def _batch_said(f: Finding, before: tuple[int, int, int], after: tuple[int, int, int]) -> Finding:
    """A fix that means to change the global batch says by how much and why (its `global_batch_change`)."""
    why = f.data.get("global_batch_change")
    if f.fix is None or not why:
        return f
    said = f"global batch {_shown(before)} -> {_shown(after)}: {why}"
    return dataclasses.replace(f, fix=dataclasses.replace(f.fix, summary=f"{f.fix.summary} ({said})"))


def _product(shape: tuple[int, int, int]) -> int:
    return shape[0] * shape[1] * shape[2]


def _shown(shape: tuple[int, int, int]) -> str:
    return f"{_product(shape)} ({shape[0]} x {shape[1]} x {shape[2]} data-parallel ranks)"


def _needs_headroom(ch: Change, facts: RunFacts) -> bool:
    """A change that takes GPU memory the run may not have: a larger micro-batch, recomputation off, a lower ZeRO
    stage (on more than one data-parallel rank: alone, every stage holds the same), offload off."""
    grows = isinstance(ch.after, (int, float)) and isinstance(ch.before, (int, float)) and ch.after > ch.before
    if ch.key in _MICRO_BATCH_KEYS:
        return grows or ch.before is None
    if ch.key in _CHECKPOINTING_KEYS:
        return ch.after in (False, "false", None)
    if ch.key == "zero_optimization.stage":
        alone = (facts.data_parallel or facts.world_size) == 1
        return not alone and isinstance(ch.after, int) and (not isinstance(ch.before, int) or ch.after < ch.before)
    if ch.key in _OFFLOAD_KEYS:
        return str(ch.after).lower() == "none" and str(ch.before).lower() not in ("none", "")
    return False


def _said(ch: Change) -> str:
    return f"{ch.key} {ch.before} -> {ch.after}" if ch.before is not None else f"{ch.key} = {ch.after}"


def _note(fid: str, dropped: list[Dropped]) -> str:
    mine = [d for d in dropped if d.finding == fid]
    if not mine:
        return ""
    return "; ".join(d.why if d.advice else f"{d.change.key}: {d.why}" for d in mine)


def _unsafe(ch: Change, facts: RunFacts, headroom: Headroom) -> str | None:
    if isinstance(ch.after, str) and ch.after.startswith("<"):
        return "no value computed from the run"
    if ch.target == "env" and ch.after is None and ch.key not in facts.env:
        return "not set in this run"
    known, current = facts.effective(ch.target, ch.key)
    if known and _norm(current) == _norm(ch.after):
        return "the run already has it"
    if headroom == "tight" and ch.key in _MICRO_BATCH_KEYS and isinstance(ch.after, (int, float)) \
            and isinstance(ch.before, (int, float)) and ch.after > ch.before:
        return "memory is above 85% of the GPU or the allocator flushes its cache: a larger micro-batch risks OOM"
    return None


def _with_before(ch: Change, facts: RunFacts) -> Change:
    if ch.before is not None:
        return ch
    known, current = facts.effective(ch.target, ch.key)
    if known and isinstance(current, str) and isinstance(ch.after, (int, float)) and not isinstance(ch.after, bool):
        current = _number(current)  # a flag's value as the script wrote it, read as the number it sets
    return dataclasses.replace(ch, before=current) if known else ch


def _number(text: str) -> Any:
    try:
        value = float(text)
    except ValueError:
        return text
    return int(value) if value.is_integer() and "." not in text and "e" not in text.lower() else value


def _norm(value: Any) -> str | None:
    if value is None:
        return None
    s = str(value).strip().strip("'\"").lower()
    try:
        return repr(float(s))
    except ValueError:
        return {"yes": "true", "no": "false", "on": "true", "off": "false"}.get(s, s)
