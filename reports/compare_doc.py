"""A comparison -> the compare document (the JSON contract of `diagnose compare --format json`), its charts, and
Markdown / HTML / terminal renderings. Every string goes through one redactor pass, as in `report`.

Contract (schema_version 1):
  kind           "compare"
  verdict        one sentence
  baseline, candidate
                 {name, sources, run (as `report`'s run), metrics (as `report`'s metrics), findings (ids, titles)}
  changes        [{key, baseline, candidate, evidence: {baseline, candidate}}]: run fields by their `run` names
                 (zero_stage, world_size, nccl_transport, ...), env.NAME, version.NAME, ds.<config path>
  delta          {step_time_ratio (candidate p50 / baseline p50), throughput_ratio, throughput_per_gpu_ratio,
                  metrics: [{name, baseline, candidate, ratio, unit, better}]}
  scaling        {gpus: [baseline, candidate], efficiency, comm_share_of_loss} or null
  explained_by   [{text, keys, finding}]
  new_findings, gone_findings
                 findings only the candidate has / only the baseline had (as `report`'s findings)
  recommended_changes, recommended_diffs
                 the candidate's recommended configuration (as in `report`)
"""
from __future__ import annotations

from typing import Any

import plotly.graph_objects as go
from rich.console import Console
from rich.table import Table
from rich.text import Text

from diagnose.compare import Comparison, Side, clock_note
from diagnose.reports import markdown
from diagnose.reports.chart_data import downsample
from diagnose.reports.charts import new_figure, styled
from diagnose.parsers.credentials import is_secret_name
from diagnose.reports.redact import MASK
from diagnose.reports.redactor import Redactor
from diagnose.reports.document import (change_dict, common_folder, diff_text, env_cited, finding_dict,
                                       goodput_dict, metrics_dict, run_dict)

SCHEMA_VERSION = 1
DELTA_LABELS = {
    "step_time_p50_s": "step time, median", "step_time_p90_s": "step time, p90", "samples_per_sec": "samples/s",
    "samples_per_sec_per_gpu": "samples/s per GPU", "tokens_per_sec": "tokens/s",
    "tokens_per_sec_per_gpu": "tokens/s per GPU", "mfu": "MFU", "timed_step_ms": "timed step (fwd+bwd+step)",
    "fwd_ms": "forward", "bwd_ms": "backward compute", "allreduce_ms": "gradient all-reduce",
    "optimizer_ms": "optimizer step", "fwd_share": "forward share", "bwd_share": "backward share",
    "allreduce_share": "all-reduce share", "optimizer_share": "optimizer share",
    "pipeline_p2p_share": "pipeline send/recv share", "comm_busbw_gbps": "comm bus bandwidth",
    "peak_mem_gb": "peak memory per GPU", "gpu_util_mean": "GPU utilization", "rank_imbalance": "slowest rank / median",
}
SHARES = {"mfu", "fwd_share", "bwd_share", "allreduce_share", "optimizer_share", "pipeline_p2p_share"}


def _side(side: Side, r: Redactor, env_changed: frozenset[str]) -> dict[str, Any]:
    def name(i: int) -> str:
        return side.source_names[i] if 0 <= i < len(side.source_names) else "?"

    return {"name": r(side.name), "sources": r(list(side.source_names)),
            "run": run_dict(side.facts, name, r, env_cited(side.diagnosis) | env_changed),
            "metrics": metrics_dict(side.diagnosis),
            "findings": [{"id": f.id, "title": r(f.title), "severity": f.severity} for f in side.diagnosis.findings],
            "verdict": r(side.diagnosis.verdict),
            # where the time went, as in each run's own report (issue 23)
            "goodput": goodput_dict(side.diagnosis, name)}


def _show(name: str, v: float | None) -> str:
    if v is None:
        return "not in the logs"
    if name in SHARES:
        return f"{v:.0%}"
    return f"{v:,.3g}" if abs(v) < 1000 else f"{v:,.0f}"


def build(cmp: Comparison, *, redact_secrets: bool = True, redact_hosts: bool = False) -> dict[str, Any]:
    hosts = tuple(cmp.baseline.facts.hostnames) + tuple(cmp.candidate.facts.hostnames) \
        + tuple(cmp.baseline.facts.nccl.hosts) + tuple(cmp.candidate.facts.nccl.hosts)
    r = Redactor(redact_secrets, hosts, redact_hosts,
                 common_folder(list(cmp.baseline.source_names) + list(cmp.candidate.source_names)))
    rec = cmp.candidate.diagnosis.recommendation
    env_changed = frozenset(ch.key[4:] for ch in cmp.changes if ch.key.startswith("env."))  # the table shows them
    doc: dict[str, Any] = {
        "schema_version": SCHEMA_VERSION,
        "kind": "compare",
        "verdict": cmp.verdict,
        "baseline": _side(cmp.baseline, r, env_changed),
        "candidate": _side(cmp.candidate, r, env_changed),
        "changes": [{"key": ch.key, "baseline": _env_value(ch.key, ch.baseline, r),
                     "candidate": _env_value(ch.key, ch.candidate, r),
                     "evidence": {"baseline": ch.evidence[0], "candidate": ch.evidence[1]}} for ch in cmp.changes],
        "delta": {
            "step_time_ratio": cmp.step_time_ratio, "throughput_ratio": cmp.throughput_ratio,
            # which step clock both sides' times come from, or why there is no step-time ratio
            "clock": clock_note(cmp.baseline, cmp.candidate),
            "throughput_per_gpu_ratio": cmp.throughput_per_gpu_ratio,
            "metrics": [{"name": d.name, "baseline": d.baseline, "candidate": d.candidate, "ratio": d.ratio,
                         "unit": d.unit, "better": d.better} for d in cmp.deltas],
        },
        "scaling": None if cmp.scaling is None else {
            "gpus": list(cmp.scaling.gpus), "efficiency": cmp.scaling.efficiency,
            "comm_share_of_loss": cmp.scaling.comm_share_of_loss},
        "explained_by": [{"text": e.text, "keys": list(e.keys), "finding": e.finding} for e in cmp.explained_by],
        "new_findings": [finding_dict(f, r) for f in cmp.new_findings],
        "gone_findings": [finding_dict(f, r) for f in cmp.gone_findings],
        "recommended_changes": [change_dict(c) for c in rec.changes],
        "recommended_diffs": diff_text(rec.changes, r, cmp.candidate.facts.framework),
    }
    out: dict[str, Any] = r(doc)
    return out


def _env_value(key: str, value: Any, r: Redactor) -> Any:
    """A changed fact's value as a public output may show it: a credential's (by its name: `arg.password`,
    `env.HF_TOKEN`, `ds.wandb.api_key`) never, whatever it looks like; an env value as the redactor shows it."""
    if value is None:
        return None
    if is_secret_name(key.rsplit(".", 1)[-1]):
        return MASK
    return r.env(key[4:], str(value)) if key.startswith("env.") else value


def _display(doc: dict[str, Any]) -> dict[str, Any]:
    """The document plus preformatted rows for the templates (templates never compute); not part of the contract."""
    rows = []
    for d in doc["delta"]["metrics"]:
        ratio = d["ratio"]
        worse = ratio is not None and ((ratio > 1.05) if d["better"] == "lower" else
                                       (ratio < 0.95) if d["better"] == "higher" else False)
        unit = "" if d["name"] in SHARES else f" {d['unit']}" if d["unit"] else ""
        rows.append({"label": DELTA_LABELS.get(d["name"], d["name"]),
                     "baseline": _show(d["name"], d["baseline"]) + (unit if d["baseline"] is not None else ""),
                     "candidate": _show(d["name"], d["candidate"]) + (unit if d["candidate"] is not None else ""),
                     "ratio": "" if ratio is None else f"{ratio:.2f}x", "worse": worse})
    changes = [{"key": c["key"], "baseline": _plain(c["baseline"]), "candidate": _plain(c["candidate"]),
                "where": " / ".join(w or "-" for w in (c["evidence"]["baseline"], c["evidence"]["candidate"]))}
               for c in doc["changes"]]
    s = doc["scaling"]
    scaling = None
    if s is not None:
        parts = [f"{s['gpus'][0]} -> {s['gpus'][1]} processes"]
        if s["efficiency"] is not None:
            parts.append(f"scaling efficiency {s['efficiency']:.0%} (per-GPU throughput against the baseline's; "
                         "100% is ideal)")
        if s["comm_share_of_loss"] is not None:
            parts.append(f"the all-reduce's growth is {s['comm_share_of_loss']:.0%} of the timed step's growth")
        scaling = "; ".join(parts)
    return {**doc, "delta_rows": rows, "change_rows": changes, "scaling_text": scaling,
            "time_rows": _time_rows(doc["baseline"].get("goodput"), doc["candidate"].get("goodput"))}


def _time_rows(b: dict[str, Any] | None, c: dict[str, Any] | None) -> list[dict[str, str]]:
    """The two goodput accounts side by side, part by part."""
    from diagnose.reports.document import duration, hours_label

    if not (b and b.get("parts")) and not (c and c.get("parts")):
        return []

    def cell(g: dict[str, Any] | None, name: str) -> str:
        part = next((p for p in (g or {}).get("parts", []) if p["name"] == name), None)
        if part is None:
            return "not measured"
        share = f", {part['share']:.0%}" if part["share"] is not None else ""
        return duration(part["seconds"]) + share
    names = [p["name"] for p in ((b or {}).get("parts") or (c or {}).get("parts") or [])]
    labels = {p["name"]: p["label"] for g in (b, c) for p in (g or {}).get("parts", [])}
    rows = [{"part": labels[n], "baseline": cell(b, n), "candidate": cell(c, n)} for n in names]
    hours = {hours_label(b), hours_label(c)}
    for label, key in (("goodput", "goodput"), (" / ".join(sorted(hours)), "gpu_hours")):
        vals = [(g or {}).get(key) for g in (b, c)]
        rows.append({"part": label, "baseline": "" if vals[0] is None else
                     (f"{vals[0]:.0%}" if key == "goodput" else f"{vals[0]:.3g}"),
                     "candidate": "" if vals[1] is None else (f"{vals[1]:.0%}" if key == "goodput" else f"{vals[1]:.3g}")})
    return rows


def _plain(v: Any) -> str:
    if v is None:
        return "not in the logs"
    if isinstance(v, bool):
        return "true" if v else "false"
    return str(v)


def figures(cmp: Comparison) -> list[tuple[str, go.Figure]]:
    out: list[tuple[str, go.Figure]] = []
    series = [(side, label, color) for side, label, color in
              ((cmp.baseline, "baseline", "#3366cc"), (cmp.candidate, "candidate", "#dc3912"))
              if side.metrics.step_series is not None and side.metrics.step_series.height]
    if series:
        fig = new_figure()
        for side, label, color in series:
            assert side.metrics.step_series is not None  # the list above holds only sides with one
            s = downsample(side.metrics.step_series, "step", "step_time_s")
            fig.add_trace(go.Scatter(x=s["step"].to_list(), y=s["step_time_s"].to_list(), mode="lines",
                                     name=f"{label} step time", line={"color": color}))
        out.append(("step-time", styled(fig, "Time per training step, both runs", "step", "seconds per step")))
        tb = [(side, label, color, side.facts.train_batch_size) for side, label, color in series]
        if all(batch for *_, batch in tb):
            fig = new_figure()
            for side, label, color, batch in tb:
                assert side.metrics.step_series is not None  # as above
                s = downsample(side.metrics.step_series, "step", "step_time_s")
                fig.add_trace(go.Scatter(x=s["step"].to_list(), y=[batch / t for t in s["step_time_s"].to_list()],
                                         mode="lines", name=f"{label} samples/s", line={"color": color}))
            out.append(("throughput", styled(fig, "Throughput per step, both runs (train batch / step time)",
                                             "step", "samples per second")))
    parts = (("forward", "fwd_ms"), ("backward", "bwd_inner_ms"), ("all-reduce", "bwd_allreduce_ms"),
             ("optimizer step", "step_ms"))
    brs = [(label, side.metrics.breakdown) for side, label in ((cmp.baseline, "baseline"), (cmp.candidate, "candidate"))]
    if any(b is not None for _, b in brs):
        fig = new_figure([go.Bar(y=[label for label, b in brs if b is not None],
                                 x=[getattr(b, attr) or 0.0 for _, b in brs if b is not None], name=name,
                                 orientation="h") for name, attr in parts])
        fig.update_layout(barmode="stack")
        out.append(("breakdown", styled(fig, "Where a step's time goes, side by side (median of the timers)",
                                        "milliseconds", "run", height=260)))
    return out


def render_markdown(doc: dict[str, Any]) -> str:
    doc = _display(doc)
    text = markdown.ENV.get_template("compare.md.j2").render(doc=doc)
    if len(text) >= markdown.GITHUB_LIMIT:
        text = markdown.ENV.get_template("compare.md.j2").render(doc=doc, short=True)
    return text[: markdown.GITHUB_LIMIT - 1]


def render_html(doc: dict[str, Any], figs: list[tuple[str, go.Figure]]) -> str:
    from diagnose.reports import html

    return html.render(_display(doc), figs, template="compare.html.j2")


def render_terminal(doc: dict[str, Any], console: Console) -> None:
    doc = _display(doc)
    console.print(Text(doc["verdict"], style="bold"))
    console.print(Text(f"baseline:  {doc['baseline']['name']}\ncandidate: {doc['candidate']['name']}", style="dim"))
    if doc["change_rows"]:
        _table(console, "What changed", ("key", "baseline", "candidate"),
               [[Text(c["key"]), Text(c["baseline"]), Text(c["candidate"])] for c in doc["change_rows"]])
    _table(console, "What it cost", ("metric", "baseline", "candidate", "ratio"),
           [[r["label"], r["baseline"], r["candidate"], r["ratio"]] for r in doc["delta_rows"]],
           styles=["red" if r["worse"] else None for r in doc["delta_rows"]])
    if doc["scaling_text"]:
        console.print(Text("Scaling: " + doc["scaling_text"]))
    if doc["time_rows"]:
        _table(console, "Where the time went", ("part", "baseline", "candidate"),
               [[Text(r["part"]), Text(r["baseline"]), Text(r["candidate"])] for r in doc["time_rows"]])
    if doc["explained_by"]:
        console.print(Text("Explained by:", style="bold"))
        for e in doc["explained_by"]:
            console.print(Text(f" - {e['text']}"))
    if doc["recommended_diffs"]:
        console.print(Text("Recommended for the candidate:", style="bold"))
        for d in doc["recommended_diffs"]:
            console.print(Text(f" {d['label']}:", style="dim"))
            for line in d["diff"].splitlines():
                console.print(Text(f"   {line}", style="green" if line.startswith("+") else
                                   "red" if line.startswith("-") else "dim"))


def _table(console: Console, title: str, columns: tuple[str, ...], rows: list[list[Any]],
           styles: list[str | None] | None = None) -> None:
    t = Table(title=title, title_justify="left")
    for col in columns:
        t.add_column(col)
    for i, row in enumerate(rows):
        t.add_row(*row, style=styles[i] if styles else None)
    console.print(t)
