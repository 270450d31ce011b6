"""Two runs -> what changed between them, what it cost, and which change explains it (`diagnose compare`).

Each side is diagnosed on its own, by the same rules as `report`; a side keeps its facts, metrics and findings, not
its frames, so two large logs are never held parsed at once. The comparison then:
  changes      every run fact, DeepSpeed config key, environment variable and version that differs;
  deltas       step time, throughput (total and per GPU), MFU, the time breakdown, comms, memory, utilization;
  scaling      where the GPU count differs: per-GPU throughput against ideal scaling, and how much of the lost time
               the communication delta accounts for;
  explained_by the changes that explain the delta, in order: the step component whose time moved most with the
               changed facts that drive it, then findings that appeared (or, for a faster candidate, went away);
  verdict      one sentence.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, replace
from typing import Any

from diagnose.engine import Diagnosis
from diagnose.findings import Finding
from diagnose import clocks
from diagnose.metrics import CLOCK_ORDER, Metrics
from diagnose.parsers.credentials import is_secret_name
from diagnose.parsers import fact_table
from diagnose.parsers.facts import DS_CONFIG_FACTS, DS_PRECISION_SECTIONS, Evidence, RunFacts

SAME_WITHIN = 0.05  # a throughput or step-time ratio within 5% of 1 is no change (run-to-run noise on one machine)
SHARE_MOVE = 0.10  # a breakdown share that moved by 10 points of the step is a change worth explaining
# What each part of the step depends on, among the facts a comparison sees change (causes.md: communication grows
# with nodes, ranks, ZeRO stage and the transport; the optimizer step with offload and ZeRO; compute with precision,
# micro-batch, activation checkpointing and the model).
COMPONENT_FACTS: dict[str, tuple[str, ...]] = {
    "allreduce": ("nodes", "world_size", "nccl_transport", "zero_stage", "overlap_comm", "backend",
                  "reduce_bucket_size", "allgather_bucket_size", "env.NCCL_IB_DISABLE", "env.NCCL_P2P_DISABLE",
                  "env.NCCL_SOCKET_IFNAME", "env.NCCL_NET", "env.NCCL_ALGO", "env.NCCL_PROTO", "grad_accum_steps"),
    "optimizer": ("offload_optimizer", "zero_stage", "optimizer", "world_size"),
    "fwd": ("precision", "micro_batch_per_gpu", "gradient_checkpointing", "model_params", "seq_len", "zero_stage",
            "offload_param", "env.CUDA_LAUNCH_BLOCKING"),
    "bwd": ("precision", "micro_batch_per_gpu", "gradient_checkpointing", "model_params", "seq_len", "zero_stage",
            "offload_param", "env.CUDA_LAUNCH_BLOCKING"),
    "pipeline_p2p": ("pipeline_parallel", "grad_accum_steps", "micro_batch_per_gpu"),
}
COMPONENT_NAMES = {"fwd": "forward", "bwd": "backward", "allreduce": "gradient all-reduce",
                   "optimizer": "optimizer step", "pipeline_p2p": "pipeline send/recv"}
# Run facts compared field by field: the fact table's `compared` role (parsers/fact_table.py).
COMPARED_FACTS = fact_table.with_role("compared")
# A DeepSpeed key that is a compared fact (the key behind zero_stage, say) is shown once, as that fact: taken from the
# readers' one key table.
SHADOWED_CONFIG = frozenset({key for key, (fact, _) in DS_CONFIG_FACTS.items() if fact in COMPARED_FACTS}
                            | {f"{section}.enabled" for section in DS_PRECISION_SECTIONS})


@dataclass(frozen=True)
class Side:
    """What a comparison keeps of one run."""

    name: str
    facts: RunFacts
    diagnosis: Diagnosis
    source_names: tuple[str, ...]  # source id -> file, for evidence

    @property
    def metrics(self) -> Metrics:
        return self.diagnosis.metrics

    def where(self, key: str) -> str | None:
        """`file:line (origin)` of a fact's value."""
        ev: Evidence | None
        if key.startswith("env."):
            ev = self.facts.env.get(key[4:])
        else:
            ev = self.facts.evidence.get(key)
        if ev is None:
            return "DeepSpeed config" if key.startswith("ds.") else None
        name = self.source_names[ev.source] if 0 <= ev.source < len(self.source_names) else None
        loc = f"{name}:{ev.line}" if name and ev.line else name
        origin = ev.origin.replace("_", " ")
        return f"{loc} ({origin})" if loc else origin


@dataclass(frozen=True)
class FactChange:
    key: str  # a run field (zero_stage), `env.NAME`, `version.NAME`, `arg.NAME` (script flag), `ds.<config path>`
    baseline: Any
    candidate: Any
    evidence: tuple[str | None, str | None]  # where each side's value was read

    @property
    def known_both(self) -> bool:
        return self.baseline is not None and self.candidate is not None


@dataclass(frozen=True)
class Delta:
    name: str
    baseline: float | None
    candidate: float | None
    unit: str
    better: str  # "lower" | "higher": which direction is an improvement; "neither" for shares of the step

    @property
    def ratio(self) -> float | None:
        if self.baseline is None or self.candidate is None or self.baseline == 0:
            return None
        return self.candidate / self.baseline


@dataclass(frozen=True)
class Scaling:
    gpus: tuple[int, int]
    efficiency: float | None  # the larger run's per-GPU throughput over the smaller run's (1.0 = ideal scaling)
    comm_share_of_loss: float | None  # the timed all-reduce's growth over the timed step's growth


@dataclass(frozen=True)
class Explanation:
    text: str
    keys: tuple[str, ...]  # the changes it names
    finding: str | None = None  # the rule id behind it, where one is


@dataclass(frozen=True)
class Comparison:
    baseline: Side
    candidate: Side
    changes: tuple[FactChange, ...]
    deltas: tuple[Delta, ...]
    scaling: Scaling | None
    explained_by: tuple[Explanation, ...]
    verdict: str
    new_findings: tuple[Finding, ...]
    gone_findings: tuple[Finding, ...]

    def delta(self, name: str) -> Delta | None:
        return next((d for d in self.deltas if d.name == name), None)

    @property
    def step_time_ratio(self) -> float | None:
        d = self.delta("step_time_p50_s")
        return d.ratio if d else None

    @property
    def throughput_ratio(self) -> float | None:
        d = self.delta("samples_per_sec")
        return d.ratio if d else None

    @property
    def throughput_per_gpu_ratio(self) -> float | None:
        d = self.delta("samples_per_sec_per_gpu")
        return d.ratio if d else None


def compare(baseline: Side, candidate: Side) -> Comparison:
    clock = common_clock(baseline.metrics, candidate.metrics)
    if clock is not None:  # both sides shown by the clock they are compared on (their tables, charts and JSON)
        baseline, candidate = _on_clock(baseline, clock), _on_clock(candidate, clock)
    changes = fact_changes(baseline, candidate)
    deltas = metric_deltas(baseline, candidate)
    scaling = _scaling(baseline, candidate, deltas)
    ids_b = {f.id for f in baseline.diagnosis.findings}
    ids_c = {f.id for f in candidate.diagnosis.findings}
    # A finding that explains the slowdown on one side only is new there (or gone), whatever the other side noted:
    # three evaluations' info-level stalls on the baseline, a save every 25 steps' stalls as the cause on the other.
    causes_b, causes_c = _causes(baseline.diagnosis.findings), _causes(candidate.diagnosis.findings)
    new = tuple(f for f in candidate.diagnosis.findings if f.id not in ids_b or (f.id in causes_c - causes_b))
    gone = tuple(f for f in baseline.diagnosis.findings if f.id not in ids_c or (f.id in causes_b - causes_c))
    cmp = Comparison(baseline, candidate, changes, deltas, scaling, (), "", new, gone)
    cmp = replace(cmp, explained_by=explain(cmp))
    return replace(cmp, verdict=verdict(cmp))


def _on_clock(side: Side, clock: str) -> Side:
    m = side.metrics
    if m.steps is not None and m.steps.source == clock:
        return side
    metrics = replace(m, steps=m.clocks[clock], step_series=m.clock_series.get(clock, m.step_series))
    return replace(side, diagnosis=replace(side.diagnosis, metrics=metrics))


def _value(facts: RunFacts, key: str) -> Any:
    if key == "nccl_transport":
        return facts.nccl_transport
    value = getattr(facts, key)
    if value is None and key.startswith("offload_") and facts.zero_stage is not None:
        return "none"  # the ZeRO config is known and names no offload device
    return value


def fact_changes(b: Side, c: Side) -> tuple[FactChange, ...]:
    out = []
    for key in COMPARED_FACTS:
        vb, vc = _value(b.facts, key), _value(c.facts, key)
        if vb != vc and (vb is not None or vc is not None):
            out.append(FactChange(key, vb, vc, (b.where(key), c.where(key))))
    for name in sorted(set(b.facts.env) | set(c.facts.env)):
        eb, ec = b.facts.env.get(name), c.facts.env.get(name)
        vb, vc = (None if eb is None else str(eb.value)), (None if ec is None else str(ec.value))
        if vb != vc:
            out.append(FactChange(f"env.{name}", vb, vc, (b.where(f"env.{name}"), c.where(f"env.{name}"))))
    for name in sorted(set(b.facts.versions) | set(c.facts.versions)):
        vb, vc = b.facts.versions.get(name), c.facts.versions.get(name)
        if vb != vc:
            out.append(FactChange(f"version.{name}", vb, vc, (None, None)))
    for name in sorted(set(b.facts.script_args) | set(c.facts.script_args)):  # the training script's own flags
        vb, vc = b.facts.script_args.get(name), c.facts.script_args.get(name)
        if vb != vc and not ("/" in str(vb) and "/" in str(vc)):  # two paths (a config's location) are no change
            out.append(FactChange(f"arg.{name}", vb, vc, ("launch script", "launch script")))
    flat_b, flat_c = _flatten(b.facts.ds_config), _flatten(c.facts.ds_config)
    for key in sorted(set(flat_b) | set(flat_c)):
        vb, vc = flat_b.get(key), flat_c.get(key)
        if vb != vc and key not in SHADOWED_CONFIG and (flat_b and flat_c):
            out.append(FactChange(f"ds.{key}", vb, vc, (b.where(f"ds.{key}"), c.where(f"ds.{key}"))))
    return tuple(out)


def _flatten(cfg: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in cfg.items():
        key = f"{prefix}{k}"
        if isinstance(v, dict):
            out.update(_flatten(v, key + "."))
        else:
            out[key] = json.dumps(v) if isinstance(v, list) else v
    return out


def _per_gpu(value: float | None, facts: RunFacts) -> float | None:
    return value / facts.world_size if value is not None and facts.world_size else None


def common_clock(mb: Metrics, mc: Metrics) -> str | None:
    """The step clock both runs have that stands highest in both runs' rankings (each run's own step clock first,
    metrics.clocks; ties by CLOCK_ORDER): a time per step from per-step lines on one side and from every-K-steps
    lines on the other is not the same measurement. None: no clock in common."""
    rank_b, rank_c = list(mb.clocks), list(mc.clocks)
    shared = [name for name in rank_b if name in mc.clocks]
    return min(shared, key=lambda n: (rank_b.index(n) + rank_c.index(n), CLOCK_ORDER.index(n)), default=None)


def clock_note(b: Side, c: Side) -> str:
    """Which clock the step times come from, or why there is no step-time ratio."""
    clock = common_clock(b.metrics, c.metrics)
    if clock is not None:
        return f"step times on both sides from the same clock: {clocks.label(clock)}"
    if not b.metrics.clocks or not c.metrics.clocks:
        return "no step-time ratio: " + ("neither run" if not b.metrics.clocks and not c.metrics.clocks else
                                         "the baseline" if not b.metrics.clocks else "the candidate") \
            + " printed a step clock"
    return ("no step-time ratio: the runs share no step clock (baseline: "
            + ", ".join(clocks.label(k) for k in b.metrics.clocks) + "; candidate: "
            + ", ".join(clocks.label(k) for k in c.metrics.clocks) + ")")




def metric_deltas(b: Side, c: Side) -> tuple[Delta, ...]:
    mb, mc = b.metrics, c.metrics

    def share(m: Metrics, part: str) -> float | None:
        return None if m.breakdown is None else m.breakdown.shares.get(part)

    def ms(m: Metrics, part: str) -> float | None:
        br = m.breakdown
        if br is None:
            return None
        return {"fwd": br.fwd_ms, "bwd": br.bwd_inner_ms, "allreduce": br.bwd_allreduce_ms, "optimizer": br.step_ms,
                "total": br.total_ms}.get(part)

    clock = common_clock(mb, mc)
    sb, sc = (mb.clocks[clock], mc.clocks[clock]) if clock else (None, None)
    b50, b90 = (sb.p50_s, sb.p90_s) if sb else (None, None)
    c50, c90 = (sc.p50_s, sc.p90_s) if sc else (None, None)
    rows = [
        Delta("step_time_p50_s", b50, c50, "s", "lower"),
        Delta("step_time_p90_s", b90, c90, "s", "lower"),
        Delta("samples_per_sec", mb.samples_per_sec, mc.samples_per_sec, "samples/s", "higher"),
        Delta("samples_per_sec_per_gpu", _per_gpu(mb.samples_per_sec, b.facts),
              _per_gpu(mc.samples_per_sec, c.facts), "samples/s", "higher"),
        Delta("tokens_per_sec", mb.tokens_per_sec, mc.tokens_per_sec, "tokens/s", "higher"),
        Delta("tokens_per_sec_per_gpu", _per_gpu(mb.tokens_per_sec, b.facts), _per_gpu(mc.tokens_per_sec, c.facts),
              "tokens/s", "higher"),
        Delta("mfu", mb.mfu, mc.mfu, "", "higher"),
        Delta("timed_step_ms", ms(mb, "total"), ms(mc, "total"), "ms", "lower"),
    ]
    for part in ("fwd", "bwd", "allreduce", "optimizer"):
        rows.append(Delta(f"{part}_ms", ms(mb, part), ms(mc, part), "ms", "lower"))
    for part in ("fwd", "bwd", "allreduce", "optimizer", "pipeline_p2p"):
        rows.append(Delta(f"{part}_share", share(mb, part), share(mc, part), "", "neither"))
    rows += [
        Delta("comm_busbw_gbps", mb.comm_busbw_gbps, mc.comm_busbw_gbps, "Gbps", "higher"),
        Delta("peak_mem_gb", mb.peak_mem_gb, mc.peak_mem_gb, "GB", "lower"),
        Delta("gpu_util_mean", mb.utilization.get("util_mean"), mc.utilization.get("util_mean"), "%", "higher"),
        Delta("rank_imbalance", mb.imbalance, mc.imbalance, "", "lower"),
    ]
    return tuple(d for d in rows if d.baseline is not None or d.candidate is not None)


def _scaling(b: Side, c: Side, deltas: tuple[Delta, ...]) -> Scaling | None:
    gb, gc = b.facts.world_size, c.facts.world_size
    if not gb or not gc or gb == gc:
        return None
    per_gpu = next((d.ratio for d in deltas if d.name == "samples_per_sec_per_gpu"), None)
    if per_gpu is not None and gc < gb:
        per_gpu = 1.0 / per_gpu if per_gpu else None  # always the larger run's per-GPU rate over the smaller's
    mb, mc = b.metrics.breakdown, c.metrics.breakdown
    comm = None
    if mb is not None and mc is not None and mc.total_ms > mb.total_ms:
        grew = (mc.bwd_allreduce_ms or 0.0) - (mb.bwd_allreduce_ms or 0.0)
        comm = max(0.0, min(1.0, grew / (mc.total_ms - mb.total_ms)))
    return Scaling((gb, gc), per_gpu, comm)


def _fmt(v: Any) -> str:
    if isinstance(v, bool):
        return "on" if v else "off"
    if v is None:
        return "unset"
    if isinstance(v, float):
        return f"{v:g}"
    return str(v)


def _causes(findings: tuple[Finding, ...]) -> set[str]:
    return {f.id for f in findings if f.explains_slowdown and f.severity != "info"}


def _flag_toggled(ch: FactChange) -> bool:
    """A script flag passed on one side only, both launch commands read: the other side runs the script's default
    (the HF Trainer's `--bf16` dropped is fp32)."""
    return ch.key.startswith("arg.") and (ch.baseline is None) != (ch.candidate is None) and all(ch.evidence)


def change_text(ch: FactChange) -> str:
    if _flag_toggled(ch):
        flag = "--" + ch.key.removeprefix("arg.")
        return f"{flag} dropped" if ch.candidate is None else f"{flag} added"
    name = fact_table.label(ch.key) if ch.key in fact_table.BY_NAME else ch.key
    if is_secret_name(ch.key.rsplit(".", 1)[-1]):  # a changed password is named, its values never shown
        return f"{name} changed"
    text = f"{name} {_fmt(ch.baseline)} -> {_fmt(ch.candidate)}"
    if ch.key == "nccl_transport" and ch.candidate == "socket":
        text = "NCCL over TCP sockets" if ch.baseline is None else text + " (TCP sockets)"
    return text


def _slower(cmp: Comparison) -> bool | None:
    """True when the candidate does less work per second; None when the logs give no comparable rate."""
    ratio = _rate_ratio(cmp)
    if ratio is None:
        return None
    if abs(ratio - 1.0) <= SAME_WITHIN:
        return None
    return ratio < 1.0


def _rate_ratio(cmp: Comparison) -> float | None:
    """Candidate work per second over the baseline's: samples/s where both have it (a step's work differs with
    accumulation and batch size), else the inverse step-time ratio."""
    tp = cmp.throughput_ratio
    if tp is not None:
        return tp
    st = cmp.step_time_ratio
    return None if not st else 1.0 / st


COMPONENT_MS = {"fwd": "fwd_ms", "bwd": "bwd_inner_ms", "allreduce": "bwd_allreduce_ms", "optimizer": "step_ms"}
MIN_PART_OF_DELTA = 0.15  # a component that moved by less than 15% of the timed step's change is not named
# Parts whose growth factors lie within 1.5x of each other grew together: the change slowed the whole step (more
# work per step, a slower device or process), not one part of it.
UNIFORM_SPREAD = 1.5


def explain(cmp: Comparison) -> tuple[Explanation, ...]:
    """The changes that explain the delta, most first: the parts of the step whose time moved with it (tied to the
    changed facts that drive them), then findings that appeared with a slower candidate (or went away with a faster
    one), then a straggler that appeared; what changed, when nothing singles a cause out."""
    changed = {ch.key: ch for ch in cmp.changes if ch.known_both or ch.key.startswith("env.")
               or ch.key == "nccl_transport" or _flag_toggled(ch)}
    slower = _slower(cmp)
    out: list[Explanation] = _batch(cmp, changed)
    if slower is not None:
        out += _components(cmp, changed, slower)
    findings = cmp.new_findings if slower in (True, None) else cmp.gone_findings
    untied: list[Explanation] = []
    for f in findings:
        if not f.explains_slowdown or f.severity == "info":
            continue
        keys = tuple(k for k in _drivers(f.id) if k in changed)
        verb = "appeared" if f in cmp.new_findings else "went away"
        why = ", ".join(change_text(changed[k]) for k in keys)
        e = Explanation(f"{f.title} ({f.id}) {verb}" + (f" with {why}" if why else ""), keys, f.id)
        (out if keys else untied).append(e)
    imb = cmp.delta("rank_imbalance")
    if imb is not None and imb.ratio is not None and slower and imb.candidate is not None and imb.candidate >= 1.2 \
            and imb.ratio >= 1.15 and not any(e.finding == "straggler" for e in out + untied):
        out.append(Explanation(f"the slowest rank went from {imb.baseline:.2f}x to {imb.candidate:.2f}x the median "
                               "rank's timed step (a straggler)", ()))
    out += untied  # findings no change accounts for come after those that one does
    if not out and slower is not None:
        keys = tuple(k for k in changed if not k.startswith(("version.", "ds.")))[:3]
        if keys:
            out.append(Explanation("no component or rule singles out a cause; what changed: "
                                   + ", ".join(change_text(changed[k]) for k in keys), keys))
    return tuple(out)


BATCH_FACTS = ("grad_accum_steps", "micro_batch_per_gpu", "world_size", "data_parallel")


def _batch(cmp: Comparison, changed: dict[str, FactChange]) -> list[Explanation]:
    """A step that carries a different number of samples: its time is compared per sample."""
    tb = changed.get("train_batch_size")
    st = cmp.delta("step_time_p50_s")
    if tb is None or not tb.baseline or not tb.candidate or st is None or st.ratio is None:
        return []
    carries = tb.candidate / tb.baseline
    keys = tuple(k for k in BATCH_FACTS if k in changed) + ("train_batch_size",)
    why = ", ".join(change_text(changed[k]) for k in keys[:-1])
    per_sample = st.ratio / carries
    return [Explanation(f"a step carries {carries:.2g}x the samples ({why or change_text(tb)}): its median time is "
                        f"{st.ratio:.2g}x, so the time per sample is {per_sample:.2g}x", keys)]


def _components(cmp: Comparison, changed: dict[str, FactChange], slower: bool) -> list[Explanation]:
    """Parts of the timed step that moved with the delta, by how much of it they carry."""
    mb, mc = cmp.baseline.metrics.breakdown, cmp.candidate.metrics.breakdown
    if mb is None or mc is None:
        return []
    total = mc.total_ms - mb.total_ms
    if total == 0 or (total > 0) != slower:
        return []
    moved = []
    for part, attr in COMPONENT_MS.items():
        vb, vc = getattr(mb, attr) or 0.0, getattr(mc, attr) or 0.0
        if (vc - vb) / total >= MIN_PART_OF_DELTA:
            moved.append(((vc - vb) / total, part, vb, vc))
    factors = [getattr(mc, a) / getattr(mb, a) for a in COMPONENT_MS.values()
               if getattr(mb, a) and getattr(mc, a) is not None]
    if len(factors) >= 3 and max(factors) / min(factors) < UNIFORM_SPREAD:
        keys = tuple(k for k in changed if not k.startswith(("version.", "ds.")))
        why = ", ".join(change_text(changed[k]) for k in keys)
        factor = mc.total_ms / mb.total_ms
        text = (f"every part of the step took about {factor:.2g}x as long (forward, backward, all-reduce and "
                f"optimizer alike)")
        return [Explanation(text + (f" with {why}" if why else ""), keys)]
    out = []
    for i, (part_of, part, vb, vc) in enumerate(sorted(moved, reverse=True)):
        keys = tuple(k for k in COMPONENT_FACTS.get(part, ()) if k in changed)
        if not keys and i > 0:
            continue
        why = ", ".join(change_text(changed[k]) for k in keys)
        sb, sc = mb.shares.get(part, 0.0), mc.shares.get(part, 0.0)
        if abs(sc - sb) >= SHARE_MOVE:
            text = f"{COMPONENT_NAMES[part]} went from {sb:.0%} to {sc:.0%} of the step"
        else:
            text = (f"{COMPONENT_NAMES[part]} took {vb:.3g} -> {vc:.3g} ms ({part_of:.0%} of the timed step's "
                    f"{'growth' if slower else 'saving'})")
        out.append(Explanation(text + (f" when {why}" if why else ""), keys))
    return out


def verdict(cmp: Comparison) -> str:
    ratio = _rate_ratio(cmp)
    st = cmp.delta("step_time_p50_s")
    tp = cmp.delta("samples_per_sec")
    figures = []
    if tp is not None and tp.ratio is not None:
        figures.append(f"{tp.baseline:.3g} -> {tp.candidate:.3g} samples/s")
    if st is not None and st.ratio is not None:
        figures.append(f"median step {st.baseline:.3g} s -> {st.candidate:.3g} s")
    fig = f" ({'; '.join(figures)})" if figures else ""
    known = [ch for ch in cmp.changes if ch.known_both and not ch.key.startswith(("version.", "ds."))]
    named = ", ".join(change_text(ch) for ch in known[:3])
    if ratio is None:
        return f"No comparable step time or throughput in both runs; what changed: {named or 'nothing the logs show'}."
    if abs(ratio - 1.0) <= SAME_WITHIN:
        return f"No meaningful difference in throughput{fig}" + (f" despite {named}." if named else ".")
    how = f"{1 / ratio:.2g}x slower" if ratio < 1 else f"{ratio:.2g}x faster"
    text = f"The candidate is {how}{fig}"
    sc = cmp.scaling
    if sc is not None and sc.efficiency is not None:
        text += (f"; {max(sc.gpus)} processes reach {sc.efficiency:.0%} of ideal scaling over {min(sc.gpus)} "
                 "(per-process throughput)")
    if cmp.explained_by:
        text += f": {cmp.explained_by[0].text}."
    elif named:
        text += f" after {named}."
    else:
        text += "; the logs show no change that explains it."
    return text


def _drivers(rule_id: str) -> tuple[str, ...]:
    """The facts whose change brings a rule's finding about: declared with the rule (diagnose/rules)."""
    from diagnose.rules import load_all

    found = load_all().get(rule_id)
    return found.drivers if found is not None else ()
