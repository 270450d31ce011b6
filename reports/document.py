"""Findings + run model -> the report document: one JSON-able dict every format renders from.

This is also the machine-readable contract (`diagnose report --format json`), versioned by SCHEMA_VERSION.
Secrets are redacted here, once, so no format can leak one; hostnames too with `redact_hosts`.
"""
from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Collection
from typing import Any

from diagnose import planner
from diagnose.doc_links import docs_for
from diagnose.engine import Diagnosis
from diagnose.findings import Change, Finding
from diagnose.parsers import fact_table
from diagnose.parsers.facts import RunFacts
from diagnose.parsers.run_model import RunModel
from diagnose.parsers.templates import UNREAD_SHOWN
from diagnose.reports.config_patch import ConfigPatch
from diagnose.reports.redactor import Redactor

SCHEMA_VERSION = 1


def change_dict(c: Change) -> dict[str, Any]:
    return {"target": c.target, "key": c.key, "before": c.before, "after": c.after}


def change_text(c: Change) -> str:
    """`zero_optimization.stage: 3 -> 1`, `unset CUDA_LAUNCH_BLOCKING`: one line for the finding's own section; the
    diff is shown once, in the recommended configuration."""
    if c.target == "env" and c.after is None:
        return f"unset {c.key}"
    name = f"--{c.key}" if c.target == "trainer_args" else c.key  # a flag beside the JSON key of the same name
    return f"{name}: {json.dumps(c.before) if c.before is not None else '(unset)'} -> {json.dumps(c.after)}"


# What the `trainer_args` target is called in each framework (diagnose/frameworks.py translated the keys).
ARGS_LABEL = {"megatron": "Megatron arguments", "dschat": "DeepSpeed-Chat step script flags",
              "hf_trainer": "Trainer arguments (TrainingArguments / command-line flags)"}


def diff_text(changes: tuple[Change, ...], r: Redactor, framework: str | None = None) -> list[dict[str, str]]:
    """Each target's changes as a unified-diff snippet in that target's own syntax."""
    out = []
    by_target: dict[str, list[Change]] = {}
    for c in changes:
        by_target.setdefault(c.target, []).append(c)
    for target, items in by_target.items():
        lines: list[str] = []
        for c in items:
            if target == "ds_config":
                *parents, leaf = c.key.split(".")
                indent = ""
                for p in parents:
                    lines.append(f' {indent}"{p}": {{')
                    indent += "  "
                if c.before is not None:
                    lines.append(f'-{indent}"{leaf}": {json.dumps(c.before)}')
                lines.append(f'+{indent}"{leaf}": {json.dumps(c.after)}')
                for _ in parents:
                    indent = indent[:-2]
                    lines.append(f" {indent}}}")
            elif target == "env":
                if c.before is not None:
                    lines.append(f"-export {c.key}={c.before}")
                if c.after is not None:
                    lines.append(f"+export {c.key}={c.after}")
            elif target == "accelerate":
                if c.before is not None:
                    lines.append(f"-{c.key}: {c.before}")
                lines.append(f"+{c.key}: {c.after}")
            else:  # trainer_args / launcher flags
                if c.before not in (None, False):
                    lines.append(f"---{c.key} {c.before}" if c.before is not True else f"---{c.key}")
                if c.after not in (None, False):
                    lines.append(f"+--{c.key} {c.after}" if c.after is not True else f"+--{c.key}")
                elif c.before not in (None, False):
                    pass
        label = {"ds_config": "DeepSpeed config (JSON)", "env": "environment (launch script)",
                 "accelerate": "accelerate config (YAML)",
                 "trainer_args": ARGS_LABEL.get(framework or "", "training script flags"),
                 "launcher": "launcher flags"}[target]
        out.append({"target": target, "label": label, "diff": r("\n".join(lines))})
    return out


def finding_dict(f: Finding, r: Redactor, framework: str | None = None) -> dict[str, Any]:
    return {
        "id": f.id, "title": r(f.title), "severity": f.severity, "confidence": f.confidence,
        "explains_slowdown": f.explains_slowdown, "summary": r(f.summary),
        "evidence": [{"text": r(e.text), "source": r(e.source), "line": e.line, "kind": e.kind} for e in f.evidence],
        "fix": None if f.fix is None else {
            "summary": r(f.fix.summary), "expected_effect": r(f.fix.expected_effect),
            "changes": [r(change_dict(c)) for c in f.fix.changes], "diffs": diff_text(f.fix.changes, r, framework),
            "changes_text": [r(change_text(c)) for c in f.fix.changes]},
        # upstream documentation of the knobs the fix changes (diagnose/doc_links.py, one table)
        "docs": list(docs_for(f, framework)),
        "data": f.data,
        # what the cause cost in this run and what the fix saves, with the arithmetic (diagnose/costs.py)
        "cost": _cost_dict(f),
    }


def _cost_dict(f: Finding) -> dict[str, Any] | None:
    c = f.cost
    return None if c is None else dataclasses.asdict(c)


# A part lists at most this many of its stalls or restarts, the largest, in step order; one more entry counts the
# rest with their total (issue 35: a W&B run of 100k rows listed 2,018 stalls, 404 KB of a 700 KB JSON).
MAX_PIECES = 50


def _piece_dict(p: Any, account: Any, where: Callable[[int], str]) -> dict[str, Any]:
    from diagnose.goodput import PART_LABELS, Piece

    pieces = list(p.pieces)
    if len(pieces) > MAX_PIECES:
        kept = sorted(sorted(pieces, key=lambda q: -(q.seconds or 0.0))[:MAX_PIECES], key=lambda q: q.step or 0)
        rest = [q for q in pieces if q not in kept]
        seconds = sum(q.seconds or 0.0 for q in rest)
        pieces = kept + [Piece(name=f"{len(rest)} more", seconds=seconds,
                               basis=f"{len(rest)} more {p.name}, {seconds:.3g} s in all (the {MAX_PIECES} largest are "
                                     "listed)")]
    return {"name": p.name, "label": PART_LABELS.get(p.name, p.name), "seconds": p.seconds,
            "gpu_hours": account.gpu_hours(p.seconds),
            "share": None if p.seconds is None or not account.span_s else p.seconds / account.span_s,
            "basis": p.basis, "step": p.step,
            "evidence": [{"source": where(s), "line": line} for s, line in p.evidence if s >= 0],
            "pieces": [_piece_dict(q, account, where) for q in pieces]}


def goodput_dict(d: Diagnosis, where: Callable[[int], str]) -> dict[str, Any] | None:
    """Where the time went (issue 23): the account's parts with their basis and evidence, the level shifts in step
    time, the stragglers, and what MFU lacked."""
    acc = d.goodput
    cps, strag = d.change_points, d.stragglers
    out: dict[str, Any] = {
        "clock": None, "clock_note": None, "span_s": None, "gpus": None, "device": None, "steps": None, "steady_step_s": None, "goodput": None,
        "gpu_hours": None, "launches": None, "parts": [],
        "change_points": None if cps is None else {
            "pattern": cps.pattern, "trend_change": cps.trend_change, "slowdown_s": cps.slowdown_s,
            "shifts": [{"step": s.step, "before_s": s.before_s, "after_s": s.after_s, "change": s.change,
                        "steps_after": s.steps_after,
                        "events": [{"text": text, "source": where(src) if src >= 0 else None,
                                    "line": line if src >= 0 else None} for text, src, line in s.events]}
                       for s in cps.shifts]},
        "stragglers": None if strag is None else dataclasses.asdict(strag),
        "mfu_missing": list(d.metrics.mfu_missing),
    }
    if acc is not None:
        out.update(clock=acc.clock, clock_note=acc.clock_note, span_s=acc.span_s, gpus=acc.gpus, device=acc.device, steps=acc.steps,
                   steady_step_s=acc.steady_step_s, goodput=acc.goodput, launches=acc.launches,
                   gpu_hours=acc.gpu_hours(acc.span_s if acc.span_s is not None else acc.measured_s),
                   parts=[_piece_dict(p, acc, where) for p in acc.parts])
    return out


def _steps_dict(m: Any) -> dict[str, Any] | None:
    """The timed steps' statistics; where steps were read but nothing times them, their count with every time
    null (`source: "untimed"`)."""
    if m.steps is not None:
        return dict(dataclasses.asdict(m.steps))
    if not m.steps_read:
        return None
    return {"source": "untimed", "n": m.steps_read, "p50_s": None, "p90_s": None, "max_s": None, "mean_s": None,
            "spikes": [], "spike_period": None, "first_quarter_p50_s": None, "last_quarter_p50_s": None,
            "quarter_p50_s": []}


def metrics_dict(d: Diagnosis) -> dict[str, Any]:
    m = d.metrics
    out: dict[str, Any] = {
        "steps": _steps_dict(m),
        "samples_per_sec": m.samples_per_sec, "tokens_per_sec": m.tokens_per_sec, "mfu": m.mfu,
        "mfu_basis": m.mfu_basis,
        "time_breakdown": None if m.breakdown is None else dataclasses.asdict(m.breakdown),
        "comm_total_ms": m.comm_total_ms, "comm_busbw_gbps": m.comm_busbw_gbps, "comm_ops": m.comm_ops,
        "comm_running_totals": m.comm_running_totals, "comm_straggler_ratio": m.comm_straggler_ratio,
        "rank_step_p50_s": {str(k): v for k, v in m.rank_step_p50.items()}, "imbalance": m.imbalance,
        "node_step_p50_s": m.node_step_p50, "node_imbalance": m.node_imbalance,
        "skipped_fraction": m.skipped_fraction, "allocator_flushes": m.allocator_flushes,
        "stall_events": [{"kind": k, "step": s, "seconds": t} for k, s, t in m.stall_events],
        "utilization": m.utilization, "utilization_picture": d.picture, "wall_s": m.wall_s,
    }
    return out


# Run facts whose evidence line the report shows beside the value: the fact table's `evidenced` role.
EVIDENCED_FACTS = fact_table.with_role("evidenced")


def common_folder(names: list[str]) -> str | None:
    """The folder every local source sits in (None for URLs, stdin, or nothing in common but the root)."""
    import os

    paths = [n for n in names if n and "://" not in n and n != "-" and not n.startswith("<")]
    if not paths:
        return None
    try:
        folder = os.path.commonpath([os.path.dirname(p) or "." for p in paths])
    except ValueError:  # absolute and relative paths mixed
        return None
    return None if folder in ("", ".", "/") else folder


def env_cited(d: Diagnosis) -> frozenset[str]:
    """The environment variables whose values a finding needs: those its evidence quotes or its fix changes."""
    names = {e.text.split("=", 1)[0] for x in d.findings for e in x.evidence if e.kind == "env"}
    changes = [*d.recommendation.changes, *(c for x in d.findings if x.fix for c in x.fix.changes)]
    return frozenset(names | {c.key for c in changes if c.target == "env"})


def run_dict(f: RunFacts, source_name: Callable[[int], str], r: Redactor,
             env_shown: Collection[str] = ()) -> dict[str, Any]:
    """The run's facts as the JSON contract names them, each evidenced fact with the line it came from. The
    environment's names all, its values only where `env_shown` names them (a report may be posted publicly: a
    value no finding needs is not the report's to quote); the others null."""
    return {
        # the fact table's `json` role (parsers/fact_table.py), each by its name
        **{name: getattr(f, name) for name in fact_table.with_role("json")},
        "env": {k: r.env(k, str(v.value)) if k in env_shown or not r.enabled else None  # all with --no-redact
                for k, v in sorted(f.env.items())},
        "versions": f.versions, "launcher": f.launcher, "backend": f.backend,
        # the training loop whose syntax the fixes use (diagnose/frameworks.py)
        "framework": f.framework,
        "hostnames": r(list(f.hostnames)),
        # topology values other sources claimed that lost to the precedence (parsers/facts.py), first line of each
        "also_claimed": {fact: [{"value": ev.value, "origin": ev.origin, "tier": ev.tier, "line": ev.line,
                                 "source": r(source_name(ev.source)) if ev.source >= 0 else None}
                                for ev in _other_claims(f, fact)]
                         for fact in ("world_size", "nodes", "gpus_per_node") if _other_claims(f, fact)},
        # values outside their physical range, not trusted (parsers/facts.py), each with its line
        "set_aside": [{"fact": fact, "value": ev.value, "why": why, "origin": ev.origin,
                       "source": r(source_name(ev.source)) if ev.source >= 0 else None, "line": ev.line}
                      for fact, ev, why in f.set_aside],
        # where each fact's value came from (the winning claim of parsers/facts.py's precedence)
        "evidence": {k: {"source": r(source_name(ev.source)) if ev.source >= 0 else None, "line": ev.line,
                         "origin": ev.origin, "tier": ev.tier}
                     for k, ev in sorted(f.evidence.items()) if k in EVIDENCED_FACTS},
    }


def _other_claims(f: RunFacts, fact: str) -> list[Any]:
    """Claims of a topology fact whose value is not the one the run model settled on, one per value."""
    chosen = getattr(f, fact)
    seen: dict[object, Any] = {}
    for ev in f.claims.get(fact, []):
        if ev.value != chosen and ev.value not in seen:
            seen[ev.value] = ev
    return list(seen.values())


def recommended_diffs(d: Diagnosis, model: RunModel, r: Redactor, patch: ConfigPatch | None) -> list[dict[str, str]]:
    """The recommended configuration as diffs: of the user's own files where the run's sources include them (the
    exact lines `--write-config` writes: `patch`), in each target's syntax for the rest."""
    changes = d.recommendation.changes
    if patch is None or not patch.files:
        return diff_text(changes, r, model.facts.framework)
    from diagnose.reports import config_patch

    # The changed lines only, with their line numbers: the rest of the user's file is not the report's to quote.
    out = [{"target": "file", "label": f"{f.relpath} (your file: the lines that change; --write-config writes it)",
            "diff": r("".join(config_patch.unified((f,), config_patch.PUBLIC_CONTEXT)
                              .splitlines(keepends=True)[2:]).rstrip("\n"))}
           for f in patch.files]
    rest = tuple(c for c in changes if c not in patch.written)
    return out + diff_text(rest, r, model.facts.framework)


def build(model: RunModel, d: Diagnosis, *, redact_secrets: bool = True, redact_hosts: bool = False,
          patch: ConfigPatch | None = None) -> dict[str, Any]:
    """The report document. `patch`: the recommended changes in the run's own config files (the pipeline builds it
    once), for diffs of the files themselves."""
    f = model.facts
    r = Redactor(redact_secrets, tuple(f.hostnames) + tuple(f.nccl.hosts), redact_hosts,
                 common_folder([s.name for s in model.sources] + [s.name for s in model.skipped]))
    plan = None
    if d.plan is not None:
        plan = planner.as_dict(d.plan)
    doc = {
        "schema_version": SCHEMA_VERSION,
        "verdict": r(d.verdict),
        "run": run_dict(f, model.source_name, r, env_cited(d)),
        "metrics": metrics_dict(d),
        "findings": [finding_dict(x, r, f.framework) for x in d.findings],
        "goodput": goodput_dict(d, model.source_name),
        # how the run ended (issue 33): finished | crashed | hung | killed | unknown, the rank, the silence
        "ending": ending_dict(d, r),
        # every finding's changes merged into one consistent set (diagnose/recommend.py); each diff once, per file
        "recommended_changes": [r(change_dict(c)) for c in d.recommendation.changes],
        "recommended_diffs": recommended_diffs(d, model, r, patch),
        "plan": plan,
        "next_steps": list(d.next_steps),
        # units that raised (a rule, a line kind, the planner): the report comes from the rest and says so
        "faults": list(d.faults),
        "sources": [{"name": r(s.name), "kind": s.kind, "lines": s.lines, "recognised": s.recognised,
                     **({"why": s.note} if s.note else {})} for s in model.sources]
                   + [{"name": r(s.name), "kind": "skipped", "lines": 0, "recognised": 0, "why": r(s.why)}
                      for s in model.skipped],
        "unparsed_lines": model.unrecognised_lines,
        # what the template reader learned (parsers/templates.py): each stream's layout and what each number means,
        # with how that was decided; and the most frequent layouts nothing understood, one line of each
        "reading": reading_dict(model),
        # frame -> N: a long log's other ranks were sampled 1 in N (parsers/thinning.py); {} when all rows were read
        "sampled": dict(model.thinned),
    }
    out: dict[str, Any] = r(doc)  # the one pass: every string of the document, whatever field it sits in
    return out


SAMPLE_CHARS = 200  # a sample line shown for one of them, cut to this


def reading_dict(model: RunModel) -> dict[str, Any]:
    return {
        "streams": [{"source": model.source_name(st.source), "template": st.template, "lines": st.lines,
                     "step_clock": st.step_clock, "note": st.note,
                     "roles": [{"name": x.name, "role": x.role, "how": x.how} for x in st.roles]}
                    for st in model.streams],
        "unread": [{"source": model.source_name(u.source), "template": u.template[:SAMPLE_CHARS], "lines": u.lines,
                    "sample": u.sample[:SAMPLE_CHARS]} for u in model.unread[:UNREAD_SHOWN]],
    }


# How a role reads in a report.
ROLE_LABELS = {"counter": "step counter", "total": "total steps", "epoch": "epoch", "step_time": "step time",
               "avg_step_time": "average step time", "cum_time": "elapsed time", "eta": "time left",
               "data_time": "data wait", "iter_rate": "steps/s", "sec_per_iter": "s/step",
               "samples_per_sec": "samples/s", "tokens_per_sec": "tokens/s", "loss": "loss", "lr": "learning rate",
               "grad_norm": "gradient norm", "mem": "memory", "mfu": "MFU", "tflops": "TFLOPs",
               "generate_time": "generation time", "train_phase_time": "training phase time",
               "phase_time": "a part of the step", "epoch_time": "an epoch's time (not a step's)",
               "interval_time": "a print interval's time (shared by the steps between prints)",
               "stamp": "a wall-clock instant (it stamps the line)",
               "count": "a count (not a time)",
               "running_average": "running average of the one before"}


def reading_rows(reading: dict[str, Any]) -> tuple[list[dict[str, str]], list[dict[str, str]]]:
    """(streams, unread) as display rows: `Time: step time (by name)`."""
    streams = [{"template": st["template"], "lines": str(st["lines"]),
                "use": "step clock" if st["step_clock"] else (st["note"] or "not the step clock"),
                "roles": ", ".join(f"{x['name']}: {ROLE_LABELS.get(x['role'], x['role'])} (by {x['how']})"
                                   for x in st["roles"])}
               for st in reading.get("streams", [])]
    unread = [{"template": u["template"], "lines": str(u["lines"]), "sample": u["sample"]}
              for u in reading.get("unread", [])]
    return streams, unread


def _num(v: float | None, fmt: str, unit: str = "") -> str | None:
    return None if v is None else f"{v:{fmt}}{unit}"


def with_display(doc: dict[str, Any]) -> dict[str, Any]:
    """The document and the rows a renderer shows (tiles, the run table, the facts and plan tables): derived at
    render time, so the JSON contract carries data only."""
    return {**doc, **display(doc)}


def _step_time_text(st: dict[str, Any]) -> str | None:
    """`median 0.85 s, p90 0.9 s, max 1.2 s (60 steps)`; `60 steps read, none timed` where nothing prints a time."""
    if not st:
        return None
    if st.get("p50_s") is None:
        return f"{st['n']} steps read, none timed (no duration, rate or stamp on their lines)"
    return (f"median {st['p50_s']:.3g} s, p90 {st['p90_s']:.3g} s, max {st['max_s']:.3g} s "
            f"({st['n']} steps)")


def display(doc: dict[str, Any]) -> dict[str, Any]:
    """Preformatted values for the templates (templates never compute), from the document's data alone."""
    run, m = doc["run"], doc["metrics"]
    cpu = bool(run.get("cpu_run"))
    st = m["steps"] or {}
    util = m["utilization"]
    tiles = [
        ("median step", _num(st.get("p50_s"), ".3g", " s")), ("p90 step", _num(st.get("p90_s"), ".3g", " s")),
        ("samples/s", _num(m["samples_per_sec"], ".3g")), ("tokens/s", _num(m["tokens_per_sec"], ",.0f")),
        ("MFU", _num(None if m["mfu"] is None else m["mfu"] * 100, ".0f", "%")),
        ("GPU utilization", _num(util.get("util_mean"), ".0f", "%")), ("GPU memory", _num(util.get("mem_mean"), ".0f", "%")),
        ("processes" if cpu else "GPUs", None if run["world_size"] is None else _count(run)),
        ("ZeRO stage", None if run["zero_stage"] is None else str(run["zero_stage"])), ("precision", run["precision"]),
    ]
    out: dict[str, Any] = {"tiles": [{"label": k, "value": v} for k, v in tiles if v is not None],
                           "run_rows": run_rows(run, cpu=cpu), "step_time_text": _step_time_text(st)}
    out["stream_rows"], out["unread_rows"] = reading_rows(doc.get("reading") or {})
    plan = doc["plan"]
    if plan:
        out["plan_caption"] = (f"{plan['params'] / 1e9:.2f}B parameters on {plan['gpus']} GPUs of "
                               f"{plan['gpu_memory_gb']:.0f} GB, {plan['optimizer']}, gradient accumulation "
                               f"{plan['grad_accum']}; "
                               + ("fp32 Adam = 4 + 4 + 8 bytes per parameter" if plan.get("precision") == "fp32"
                                  else "mixed-precision Adam = 2 + 2 + 12 bytes per parameter")
                               + " (ZeRO paper); the DeepSpeed estimator adds 4 bytes of fp32 gradients.")
        out["plan_rows"] = [{"name": s["name"], "recommended": s["name"] == plan["recommended"],
                             "states": f"{s['model_states_gb']:.1f} GB", "ds": f"{s['deepspeed_estimate_gb']:.1f} GB",
                             "comm": f"{s['comm_gb_per_step'] or 0:.1f} GB",
                             "fits": s["verdict"],
                             "note": s["note"]} for s in plan["stages"]]
    # the fact table's `shown` facts in its order (parsers/fact_table.py), the hosts after the GPU; then what the
    # run's reading says of itself
    facts: list[tuple[str, str, Any]] = []
    for name in fact_table.with_role("shown"):
        value = run[name]
        if name == "model_params":
            value = f"{value:,}" if value else None
        facts.append((fact_table.label(name), name, value))
        if name == "gpu_name":
            facts.append(("hosts", "", ", ".join(run["hostnames"]) or None))
    facts += [("versions", "", ", ".join(f"{k} {v}" for k, v in sorted(run["versions"].items())) or None),
              ("unparsed lines", "", doc["unparsed_lines"]), ("sampled rows", "", _sampled(doc["sampled"]))]
    out.update(time_display(doc))
    out["facts_rows"] = [(k, v) for k, _, v in facts if v is not None]
    out["facts_table"] = [{"fact": k, "value": str(v), "from": _where(run["evidence"].get(name))}
                          for k, name, v in facts if v is not None]
    out["facts_table"] += [{"fact": f"{x['fact'].replace('_', ' ')} (set aside: {x['why']})", "value": str(x["value"]),
                            "from": _where(x)} for x in run.get("set_aside", [])]
    out["facts_table"] += [{"fact": f"{fact.replace('_', ' ')} (also claimed, lower in the precedence)",
                            "value": str(x["value"]), "from": _where(x)}
                           for fact, xs in run.get("also_claimed", {}).items() for x in xs]
    return out


def duration(seconds: float | None) -> str:
    """`3 h 12 min`, `4 min 05 s`, `12.3 s`; unknown where it could not be measured."""
    if seconds is None:
        return "unknown"
    if seconds >= 3600:
        return f"{int(seconds // 3600)} h {int(seconds % 3600 // 60):02d} min"
    if seconds >= 60:
        return f"{int(seconds // 60)} min {int(seconds % 60):02d} s"
    return f"{seconds:.3g} s"


def _hours(v: float | None) -> str:
    return "" if v is None else f"{v:.3g}"


def _share(v: float | None) -> str:
    return "" if v is None else f"{v:.0%}"


def hours_label(goodput: dict[str, Any] | None) -> str:
    """GPU-hours, or process-hours where the account counted CPU processes."""
    return "process-hours" if (goodput or {}).get("device") == "processes" else "GPU-hours"


def time_display(doc: dict[str, Any]) -> dict[str, Any]:
    """Rows of the 'Where the time went' section: the account's parts (and the steps' and stalls' pieces), the
    level shifts, the stragglers, per-finding costs, what MFU lacked."""
    g = doc.get("goodput") or {}
    out: dict[str, Any] = {}
    if g.get("parts"):
        span = g["span_s"]
        device = g.get("device") or "GPUs"
        gpus = f"{g['gpus']} {device}" if g["gpus"] else f"{device}: count not in the logs"
        out["hours_label"] = hours_label(g)
        clock = ("line timestamps" if g["clock"] == "timestamps" else
                 "the steps' own times (no line timestamps: what lies around the steps is unknown)")
        out["time_caption"] = (f"{duration(span) if span is not None else duration(sum(p['seconds'] or 0 for p in g['parts']))} "
                               f"{'from the first to the last line' if span is not None else 'of measured steps'} x "
                               f"{gpus}" + (f" = {g['gpu_hours']:.3g} {out['hours_label']}" if g["gpu_hours"] is not None
                                            else "")
                               + f"; clock: {clock}"
                               + (f"; goodput {g['goodput']:.0%}" if g["goodput"] is not None else "")
                               + (f"; {g['launches']} launches" if (g["launches"] or 1) > 1 else ""))
        rows = []
        for p in g["parts"]:
            rows.append({"part": p["label"], "time": duration(p["seconds"]), "gpu_hours": _hours(p["gpu_hours"]),
                         "share": _share(p["share"]), "basis": p["basis"], "level": 0,
                         "where": ", ".join(f"{e['source']}:{e['line']}" for e in p["evidence"][:2])})
            for q in p["pieces"][:12]:
                label = q["label"] + (f" at step {q['step']}" if q["step"] is not None else "")
                rows.append({"part": label, "time": duration(q["seconds"]), "gpu_hours": _hours(q["gpu_hours"]),
                             "share": _share(q["share"]), "basis": q["basis"], "level": 1,
                             "where": ", ".join(f"{e['source']}:{e['line']}" for e in q["evidence"][:3])})
        out["time_rows"] = rows
        out["time_bars"] = [{"label": p["label"], "seconds": p["seconds"]} for p in g["parts"]
                            if p["seconds"]]
    cps = g.get("change_points")
    if cps and (cps["shifts"] or cps["pattern"]):
        out["shift_rows"] = [{"step": s["step"], "before": f"{s['before_s']:.3g} s", "after": f"{s['after_s']:.3g} s",
                              "change": f"{s['change']:+.0%}",
                              "near": "; ".join(e["text"] + (f" ({e['source']}:{e['line']})" if e["source"] else "")
                                                for e in s["events"]) or "nothing printed near it"}
                             for s in cps["shifts"]]
        pattern = {"staircase": "a staircase of slowdowns", "trend": "a steady climb (trend)",
                   "shift": "level shift(s)"}.get(cps["pattern"] or "", "")
        if cps["pattern"] == "trend" and cps["trend_change"] is not None:
            pattern += f", {cps['trend_change']:+.0%} over the run"
        out["shift_caption"] = pattern
    s = g.get("stragglers")
    if s and s["basis"] == "megatron":
        where = f"rank {s['rank']}"
        head = (f"Persistent straggler: {where} had the longest round trip in {s['share']:.0%} of {s['steps']} "
                "straggler reports" if s["kind"] == "persistent" else
                f"Moving straggler: the longest round trip changes rank between reports (ranks "
                f"{', '.join(str(r) for r in s['moving_ranks'])}; {where} most often, {s['share']:.0%} of "
                f"{s['steps']})")
        out["straggler_text"] = (f"{head}, {s['ratio']:.2f}x the fastest rank (Megatron's straggler report); the "
                                 f"fastest waits up to {s['wait_s_per_step']:.3g} s per iteration. "
                                 + "".join(f"{x[0].upper()}{x[1:]}. " for x in s["signals"])
                                 + ("The same rank every time points to its GPU, its thermals or its link."
                                    if s["kind"] == "persistent" else
                                    "A rank that moves points to the input: data skew, sequence lengths, the data "
                                    "loader."))
    elif s:
        where = f"rank {s['rank']}" + (f" on {s['host']}" if s["host"] else "")
        if s["kind"] == "persistent":
            out["straggler_text"] = (f"Persistent straggler: {where} was the slowest of {s['ranks']} ranks in "
                                     f"{s['share']:.0%} of {s['steps']} steps, {s['ratio']:.2f}x the median rank; the "
                                     f"others wait {s['wait_s_per_step']:.3g} s per step. The same rank every time "
                                     "points to its GPU, its thermals or its link.")
        else:
            out["straggler_text"] = (f"Moving straggler: the slowest rank changes from step to step (ranks "
                                     f"{', '.join(str(r) for r in s['moving_ranks'])}; {where} most often, "
                                     f"{s['share']:.0%}), {s['ratio']:.2f}x the median rank; the others wait "
                                     f"{s['wait_s_per_step']:.3g} s per step. A rank that moves points to the input: "
                                     "data skew, sequence lengths, the data loader.")
    if g.get("mfu_missing"):
        out["mfu_missing_text"] = "MFU not computed: the logs lack " + ", ".join(g["mfu_missing"]) + "."
    out["cost_rows"] = [{"id": f["id"], "title": f["title"], "lost": duration(f["cost"]["lost_s"]),
                         "gpu_hours": _hours(f["cost"]["gpu_hours"]), "share": _share(f["cost"]["share"]),
                         "per_1000": _hours(f["cost"]["per_1000_steps"]),
                         "saves": _hours(f["cost"]["saves_gpu_hours"]), "arithmetic": f["cost"]["arithmetic"]}
                        for f in doc["findings"] if f.get("cost")]
    return out


def ending_dict(d: Diagnosis, r: Redactor) -> dict[str, Any] | None:
    """How the run ended, log text redacted (an error message may carry a path, a host or a token)."""
    if d.ending is None:
        return None
    out = d.ending.as_dict()
    out["summary"] = r(str(out["summary"]))
    out["host"] = r(out["host"]) if isinstance(out["host"], str) else None
    out["fallout"] = [r(str(x)) for x in d.ending.fallout]
    # a relaunched run: how each launch before the last ended ("launch 1: crashed ..."), in order
    out["earlier"] = [f"launch {k}: {r(e.summary)}" for k, e in enumerate(d.launch_endings[:-1], 1)]
    return out


def runs_index(runs: list[tuple[str, dict[str, Any]]]) -> list[dict[str, str]]:
    """The index at the top of a several-runs report (issue 23): each run's verdict, step time, GPU-hours and
    goodput share, for the renderers to link to its section."""
    rows = []
    for i, (name, doc) in enumerate(runs, 1):
        g = doc.get("goodput") or {}
        st = doc["metrics"]["steps"] or {}
        rows.append({"n": str(i), "name": name, "verdict": doc["verdict"],
                     "ended": (doc.get("ending") or {}).get("how") or UNKNOWN,
                     "step": _num(st.get("p50_s"), ".3g", " s") or UNKNOWN,
                     "gpu_hours": _hours(g.get("gpu_hours")) or UNKNOWN, "hours_label": hours_label(g),
                     "goodput": _share(g.get("goodput")) or UNKNOWN,
                     "heading": f"Run {i} of {len(runs)}: `{name.replace('`', '')}`"})
    return rows


def index_hours_label(index: list[dict[str, str]]) -> str:
    """The index's hours column: GPU-hours, process-hours (CPU runs), or both names when the runs differ."""
    labels = sorted({x["hours_label"] for x in index})
    return labels[0] if len(labels) == 1 else "GPU- / process-hours"


def _sampled(sampled: dict[str, int]) -> str | None:
    if not sampled:
        return None
    kept = ", ".join(f"{name} 1 in {n}" for name, n in sorted(sampled.items()))
    return f"a long log: the lowest rank's rows all kept, the other ranks' sampled ({kept}) for their medians"


UNKNOWN = "not in the logs"


def _count(run: dict[str, Any]) -> str:
    n, nodes, per = run["world_size"], run["nodes"], run["gpus_per_node"]
    layout = f" ({nodes} nodes x {per})" if nodes and per and nodes > 1 else ""
    return f"{n}{layout}"


def run_rows(run: dict[str, Any], *, cpu: bool) -> list[tuple[str, str]]:
    """The run table's rows in words: an unknown is said as such, never `?`. `cpu`: the run's RunFacts.cpu_run."""
    if run["world_size"] is None:
        # the device may be known where the count is not (a pasted nvidia-smi table, `GPU 0: NVIDIA ...`)
        workers = f"{run['gpu_name']}: count {UNKNOWN}" if run["gpu_name"] and not cpu else UNKNOWN
    elif cpu:
        workers = f"{run['world_size']} processes on the CPU ({run['backend']})"
    else:
        workers = f"{_count(run)} GPUs" + (f", {run['gpu_name']}" if run["gpu_name"] else "")
    zero = UNKNOWN if run["zero_stage"] is None else f"stage {run['zero_stage']}" + "".join(
        f", {what} offload to {run[key]}" for key, what in (("offload_optimizer", "optimizer"),
                                                            ("offload_param", "parameter"))
        if run[key] and run[key] != "none")
    mb, ga = run["micro_batch_per_gpu"], run["grad_accum_steps"]
    batch = UNKNOWN if mb is None and ga is None else \
        f"micro-batch {mb if mb is not None else UNKNOWN}, accumulation {ga if ga is not None else UNKNOWN}"
    return [("processes" if cpu else "GPUs", workers),
            ("model", f"{run['model_params'] / 1e9:.2f}B parameters" if run["model_params"] else UNKNOWN),
            ("ZeRO", zero), ("precision", run["precision"] or UNKNOWN), ("batch", batch)]


def _where(ev: dict[str, Any] | None) -> str:
    if not ev:
        return ""
    loc = f"{ev['source']}:{ev['line']}" if ev["source"] and ev["line"] else (ev["source"] or "")
    return f"{loc} ({ev['origin'].replace('_', ' ')})" if loc else ev["origin"].replace("_", " ")
