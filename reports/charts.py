"""Run model + diagnosis -> plotly figures (each only when its data exists), every series at most MAX_POINTS."""
from __future__ import annotations

import re

import plotly.graph_objects as go
import polars as pl

from diagnose.engine import Diagnosis
from parsers.run_model import RunModel

MAX_POINTS = 5000
LAYOUT = dict(template="plotly_white", height=320, margin=dict(l=60, r=20, t=50, b=40),
              font=dict(family="system-ui, -apple-system, Segoe UI, sans-serif", size=12),
              legend=dict(orientation="h", y=-0.2))


def safe(label: object) -> str:
    """Chart text from a log: no markup characters (plotly renders some HTML in labels)."""
    return re.sub(r"[<>&\"']", "", str(label))[:80]


def downsample(frame: pl.DataFrame, x: str, y: str, max_points: int = MAX_POINTS) -> pl.DataFrame:
    """Min/max per bucket: keeps every spike while bounding the points sent to the browser."""
    frame = frame.filter(pl.col(y).is_not_null()).sort(x)
    if frame.height <= max_points:
        return frame
    buckets = max_points // 2
    b = frame.with_columns((pl.int_range(pl.len()) * buckets // pl.len()).alias("_b"))
    lo = b.sort(y).group_by("_b", maintain_order=True).first()
    hi = b.sort(y).group_by("_b", maintain_order=True).last()
    return pl.concat([lo, hi]).unique(subset=[x]).sort(x).drop("_b")


def figures(model: RunModel, d: Diagnosis) -> list[tuple[str, go.Figure]]:
    out: list[tuple[str, go.Figure]] = []
    m = d.metrics
    if m.step_series is not None and m.step_series.height:
        s = downsample(m.step_series, "step", "step_time_s")
        fig = go.Figure(go.Scatter(x=s["step"].to_list(), y=s["step_time_s"].to_list(), mode="lines",
                                   name="step time", line=dict(color="#3366cc")))
        if m.steps and m.steps.spikes:
            spk = m.step_series.filter(pl.col("step").is_in(list(m.steps.spikes)))
            fig.add_trace(go.Scatter(x=spk["step"].to_list(), y=spk["step_time_s"].to_list(), mode="markers",
                                     name="spikes (>= 2x median)", marker=dict(color="#dc3912", size=8)))
        if m.steps:
            fig.add_hline(y=m.steps.p50_s, line_dash="dot", line_color="#888", annotation_text="median")
        fig.update_layout(title=f"Step time per step ({m.steps.source if m.steps else ''})", xaxis_title="step",
                          yaxis_title="seconds", **LAYOUT)
        out.append(("step-time", fig))
    if m.rank_step_p50:
        ranks = sorted(m.rank_step_p50)
        fig = go.Figure(go.Bar(x=[str(r) for r in ranks], y=[m.rank_step_p50[r] * 1000 for r in ranks],
                               marker_color="#3366cc"))
        fig.update_layout(title="Median timed step per rank", xaxis_title="rank", yaxis_title="ms", **LAYOUT)
        out.append(("ranks", fig))
    if m.breakdown:
        b = m.breakdown
        parts = {"forward": b.fwd_ms, "backward": b.bwd_inner_ms or 0.0, "allreduce": b.bwd_allreduce_ms or 0.0,
                 "optimizer step": b.step_ms}
        fig = go.Figure([go.Bar(y=["step"], x=[v], name=k, orientation="h") for k, v in parts.items()])
        fig.update_layout(barmode="stack", title="Where a step's time goes (median, wall_clock_breakdown)",
                          xaxis_title="ms", **{**LAYOUT, "height": 220})
        out.append(("breakdown", fig))
    steps = model.frames["steps"]
    tp = steps.filter(pl.col("origin") == "ds_throughput").select("global_step", "samples_per_sec")
    loss = steps.filter(pl.col("loss").is_not_null() & pl.col("global_step").is_not_null()).select("global_step",
                                                                                                   "loss")
    if tp.height or loss.height:
        fig = go.Figure()
        if tp.height:
            t = downsample(tp, "global_step", "samples_per_sec")
            fig.add_trace(go.Scatter(x=t["global_step"].to_list(), y=t["samples_per_sec"].to_list(), name="samples/s"))
        if loss.height:
            lo = downsample(loss.unique("global_step", keep="first"), "global_step", "loss")
            fig.add_trace(go.Scatter(x=lo["global_step"].to_list(), y=lo["loss"].to_list(), name="loss",
                                     yaxis="y2" if tp.height else "y"))
            if tp.height:
                fig.update_layout(yaxis2=dict(overlaying="y", side="right", title="loss"))
        fig.update_layout(title="Throughput and loss over steps", xaxis_title="step", **LAYOUT)
        out.append(("throughput", fig))
    if m.comm_ops:
        ops = sorted(m.comm_ops.items(), key=lambda kv: -kv[1])
        fig = go.Figure(go.Bar(x=[safe(k) for k, _ in ops], y=[v for _, v in ops], marker_color="#ff9900"))
        title = "Comms logger: total latency per collective"
        if m.comm_running_totals:  # see diagnose.metrics.COMMS_RUNNING_TOTALS_SINCE
            title += " (this DeepSpeed logs running totals: overstated, compare ops only)"
        fig.update_layout(title=title, yaxis_title="ms", **LAYOUT)
        out.append(("comms", fig))
    mem = model.frames["memory"]
    if mem.height:
        mm = mem.with_row_index("i")
        fig = go.Figure([go.Scatter(x=mm["i"].to_list(), y=mm[c].to_list(), name=n, mode="lines")
                         for c, n in (("ma_gb", "allocated"), ("ca_gb", "reserved"), ("max_ma_gb", "max allocated"))])
        fig.update_layout(title="Memory (see_memory_usage)", xaxis_title="sample", yaxis_title="GB", **LAYOUT)
        out.append(("memory", fig))
    elif steps.filter(pl.col("mem_alloc_gb").is_not_null()).height:
        mm = steps.filter(pl.col("mem_alloc_gb").is_not_null())
        fig = go.Figure([go.Scatter(x=mm["global_step"].to_list(), y=mm[c].to_list(), name=n) for c, n in
                         (("mem_alloc_gb", "MemAllocated"), ("max_mem_alloc_gb", "MaxMemAllocated"))])
        fig.update_layout(title="Memory over steps (ThroughputTimer)", xaxis_title="step", yaxis_title="GB", **LAYOUT)
        out.append(("memory", fig))
    system = model.frames["system"]
    for metric, title in (("gpu", "GPU utilization per GPU (%)"), ("memoryAllocated", "GPU memory allocated per GPU (%)")):
        sm = system.filter(pl.col("metric") == metric)
        if sm.height:
            fig = go.Figure()
            for (gpu,), part in sm.partition_by("gpu", as_dict=True).items():
                p = downsample(part.with_columns(pl.col("ts").cast(pl.Int64)), "ts", "value",
                               MAX_POINTS // max(1, sm["gpu"].n_unique()))
                fig.add_trace(go.Scatter(x=p["ts"].cast(pl.Datetime("ms")).to_list(), y=p["value"].to_list(),
                                         name=f"GPU {gpu}", mode="lines"))
            fig.update_layout(title=title, yaxis_title="%", **LAYOUT)
            out.append((f"system-{metric}", fig))
    return out
