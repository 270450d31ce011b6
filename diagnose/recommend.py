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
import re
from dataclasses import dataclass
from typing import Any

from diagnose.findings import Change, Finding
from diagnose.frameworks import translate
from parsers.facts import RunFacts

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
    known, current = effective(facts, ch.target, ch.key)
    if known and _norm(current) == _norm(ch.after):
        return "the run already has it"
    if memory_tight and ch.key in _MICRO_BATCH_KEYS and isinstance(ch.after, (int, float)) \
            and isinstance(ch.before, (int, float)) and ch.after > ch.before:
        return "memory is above 85% of the GPU or the allocator flushes its cache: a larger micro-batch risks OOM"
    return None


def _with_before(ch: Change, facts: RunFacts) -> Change:
    if ch.before is not None:
        return ch
    known, current = effective(facts, ch.target, ch.key)
    return dataclasses.replace(ch, before=current) if known else ch


# DeepSpeed config keys whose effective value is a run fact (what the engine printed beats the JSON).
_DS_FACTS = {
    "zero_optimization.stage": "zero_stage", "train_micro_batch_size_per_gpu": "micro_batch_per_gpu",
    "gradient_accumulation_steps": "grad_accum_steps", "train_batch_size": "train_batch_size",
    "zero_optimization.overlap_comm": "overlap_comm", "zero_optimization.contiguous_gradients": "contiguous_gradients",
    "zero_optimization.offload_optimizer.device": "offload_optimizer",
    "zero_optimization.offload_param.device": "offload_param",
}
_TRAINER_FACTS = {"dataloader_num_workers": "dataloader_num_workers", "gradient_checkpointing": "gradient_checkpointing",
                  "per_device_train_batch_size": "micro_batch_per_gpu", "micro-batch-size": "micro_batch_per_gpu",
                  "global-batch-size": "train_batch_size"}


def effective(facts: RunFacts, target: str, key: str) -> tuple[bool, Any]:
    """-> (known, value) of a config key as this run had it."""
    if target == "env":
        ev = facts.env.get(key)
        return (ev is not None, ev.value if ev is not None else None)
    if target == "accelerate":
        if key == "mixed_precision" and facts.precision:
            return True, {"fp32": "no"}.get(facts.precision, facts.precision)
        return (key in facts.accelerate, facts.accelerate.get(key))
    if target == "trainer_args":
        if key in facts.script_args:
            return True, facts.script_args[key]
        fact = _TRAINER_FACTS.get(key)
        value = getattr(facts, fact) if fact else None
        return (value is not None, value)
    if target == "ds_config":
        if key in ("bf16.enabled", "fp16.enabled") and facts.precision:
            return True, facts.precision == key.split(".")[0]
        fact = _DS_FACTS.get(key)
        if fact and getattr(facts, fact) is not None:
            value = getattr(facts, fact)
            return True, "none" if fact.startswith("offload") and value in (None, "none") else value
        found, value = _dig(facts.ds_config, key)
        if found:
            return True, value
        return _engine_value(facts.ds_engine, key)
    return False, None


def _dig(cfg: dict[str, Any], key: str) -> tuple[bool, Any]:
    node: Any = cfg
    for part in key.split("."):
        if not isinstance(node, dict) or part not in node:
            return False, None
        node = node[part]
    return True, node


def _engine_value(engine: dict[str, Any], key: str) -> tuple[bool, Any]:
    """The engine's printed config: flat keys, and ZeRO's settings as one repr string (`zero_config ...
    offload_optimizer=DeepSpeedZeroOffloadOptimizerConfig(device='cpu', ..., pin_memory=True, ...)`)."""
    parts = key.split(".")
    if len(parts) == 1 and key in engine:
        return True, engine[key]
    if parts[0] != "zero_optimization" or "zero_config" not in engine:
        return False, None
    text = str(engine["zero_config"])
    if len(parts) == 3:
        m = re.search(re.escape(parts[1]) + r"=\w+\((.*?)\)", text)
        if not m:
            return False, None
        text = m.group(1)
    m = re.search(r"(?:^|[\s(,])" + re.escape(parts[-1]) + r"=([^,\s)]+)", text)
    return (True, m.group(1).strip("'\"")) if m else (False, None)


def _norm(value: Any) -> str | None:
    if value is None:
        return None
    s = str(value).strip().strip("'\"").lower()
    try:
        return repr(float(s))
    except ValueError:
        return {"yes": "true", "no": "false", "on": "true", "off": "false"}.get(s, s)
