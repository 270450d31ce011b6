"""Run model + diagnosis -> plotly figures (each only when its data exists), every series at most MAX_POINTS."""
from __future__ import annotations

import re

import plotly.graph_objects as go
import polars as pl

from diagnose import clocks
from diagnose.engine import Diagnosis
from diagnose.parsers.run_model import RunModel
from diagnose.parsers.scalars import number

MAX_POINTS = 5000
# Every chart: a plain title, both axes titled with their unit, quantities from zero (a 2% wobble looks like one),
# legends below in the order the series are drawn, labels kept apart (automargin) at any width.
LAYOUT = dict(template="plotly_white", height=320, margin=dict(l=60, r=20, t=50, b=40),
              font=dict(family="system-ui, -apple-system, Segoe UI, sans-serif", size=12),
              # at the foot of the chart's box, below the x-axis title (paper coordinates put it over the title)
              legend=dict(orientation="h", x=0, xanchor="left", yref="container", y=0, yanchor="bottom",
                          traceorder="normal"))
AXIS = dict(automargin=True)
VALUE_AXIS = dict(automargin=True, rangemode="tozero")


def styled(fig: go.Figure, title: str, x: str, y: str, height: int | None = None) -> go.Figure:
    """The house style: a title, both axes titled (with units), values from zero."""
    layout = {**LAYOUT, **({"height": height} if height else {})}
    fig.update_layout(title=title, xaxis=dict(title=x, **AXIS), yaxis=dict(title=y, **VALUE_AXIS), **layout)
    fig.update_layout(showlegend=len(fig.data) > 1)
    return fig


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
                                     name="spikes (2x the usual step or more)", marker=dict(color="#dc3912", size=8)))
        if m.steps:
            fig.add_hline(y=m.steps.p50_s, line_dash="dot", line_color="#888",
                          annotation_text=f"median {m.steps.p50_s:.3g} s (range {number(s['step_time_s'].min()):.3g}"
                                          f"-{number(s['step_time_s'].max()):.3g} s)",
                          annotation_position="top left")
        clock = clocks.chart_label(m.steps.source) if m.steps and m.steps.source in clocks.BY_NAME else ""
        out.append(("step-time", styled(fig, "Time per training step" + (f" ({clock})" if clock else ""),
                                        "step", "seconds per step")))
    acc = d.goodput
    if acc is not None and any(p.seconds for p in acc.parts):
        from diagnose.goodput import PART_LABELS

        known = [(PART_LABELS[p.name], p.seconds) for p in acc.parts if p.seconds]
        unit, scale = ((("process-hours" if acc.device == "processes" else "GPU-hours"), acc.gpus / 3600.0)
                       if acc.gpus else ("seconds", 1.0))
        fig = go.Figure([go.Bar(y=["run"], x=[v * scale], name=k, orientation="h") for k, v in known])
        fig.update_layout(barmode="stack")
        fig = styled(fig, "Where the time went (goodput account)", unit, "run", height=220)
        fig.update_yaxes(showticklabels=False)
        out.append(("goodput", fig))
    if m.rank_step_p50:
        ranks = sorted(m.rank_step_p50)
        fig = go.Figure(go.Bar(x=[str(r) for r in ranks], y=[m.rank_step_p50[r] * 1000 for r in ranks],
                               marker_color="#3366cc", name="median timed step"))
        out.append(("ranks", styled(fig, "Median timed step per rank (a slow rank stands out)", "rank",
                                    "milliseconds")))
    if m.breakdown:
        b = m.breakdown
        parts = {"forward": b.fwd_ms, "backward": b.bwd_inner_ms or 0.0, "gradient all-reduce": b.bwd_allreduce_ms or 0.0,
                 "optimizer step": b.step_ms}
        fig = go.Figure([go.Bar(y=["median step"], x=[v], name=k, orientation="h") for k, v in parts.items()])
        fig.update_layout(barmode="stack")
        fig = styled(fig, "Where a step's time goes (median of the timers)", "milliseconds", "median step",
                     height=220)
        fig.update_yaxes(showticklabels=False)
        out.append(("breakdown", fig))
    steps = model.frames["steps"]
    tp = steps.filter(pl.col("origin") == "ds_throughput").select("global_step", "samples_per_sec")
    loss = steps.filter(pl.col("loss").is_not_null() & pl.col("global_step").is_not_null()).select("global_step",
                                                                                                   "loss")
    if tp.height:
        t = downsample(tp, "global_step", "samples_per_sec")
        fig = go.Figure(go.Scatter(x=t["global_step"].to_list(), y=t["samples_per_sec"].to_list(), name="samples/s",
                                   mode="lines"))
        out.append(("throughput", styled(fig, "Training throughput", "step", "samples per second")))
    if loss.height:
        lo = downsample(loss.unique("global_step", keep="first"), "global_step", "loss")
        fig = go.Figure(go.Scatter(x=lo["global_step"].to_list(), y=lo["loss"].to_list(), name="loss", mode="lines",
                                   line=dict(color="#6639ba")))
        out.append(("loss", styled(fig, "Training loss", "step", "loss")))
    if m.comm_ops:
        ops = sorted(m.comm_ops.items(), key=lambda kv: -kv[1])
        fig = go.Figure(go.Bar(x=[safe(k) for k, _ in ops], y=[v for _, v in ops], marker_color="#ff9900",
                               name="total latency"))
        title = "Time in each collective (comms logger)"
        if m.comm_running_totals:  # see diagnose.metrics.COMMS_RUNNING_TOTALS_SINCE
            title += ": this DeepSpeed logs running totals, so compare ops, not values"
        out.append(("comms", styled(fig, title, "collective", "milliseconds, total")))
    mem = model.frames["memory"]
    if mem.height:
        mm = mem.with_row_index("i")
        fig = go.Figure([go.Scatter(x=mm["i"].to_list(), y=mm[c].to_list(), name=n, mode="lines")
                         for c, n in (("ma_gb", "allocated"), ("ca_gb", "reserved"), ("max_ma_gb", "max allocated"))])
        out.append(("memory", styled(fig, "GPU memory at each memory report", "report (in order)", "GB")))
    elif steps.filter(pl.col("mem_alloc_gb").is_not_null()).height:
        mm = steps.filter(pl.col("mem_alloc_gb").is_not_null())
        fig = go.Figure([go.Scatter(x=mm["global_step"].to_list(), y=mm[c].to_list(), name=n) for c, n in
                         (("mem_alloc_gb", "allocated"), ("max_mem_alloc_gb", "max allocated"))])
        out.append(("memory", styled(fig, "GPU memory over steps", "step", "GB")))
    system = model.frames["system"]
    for metric, title, unit in (("gpu", "GPU utilization per GPU (W&B)", "utilization, %"),
                                ("memoryAllocated", "GPU memory allocated per GPU (W&B)", "memory allocated, %")):
        sm = system.filter(pl.col("metric") == metric)
        if sm.height:
            fig = go.Figure()
            for (gpu,), part in sorted(sm.partition_by("gpu", as_dict=True).items(), key=lambda kv: kv[0][0] or 0):
                p = downsample(part.with_columns(pl.col("ts").cast(pl.Int64)), "ts", "value",
                               MAX_POINTS // max(1, sm["gpu"].n_unique()))
                fig.add_trace(go.Scatter(x=p["ts"].cast(pl.Datetime("ms")).to_list(), y=p["value"].to_list(),
                                         name=f"GPU {gpu}", mode="lines"))
            fig = styled(fig, title, "time", unit)
            fig.update_yaxes(range=[0, 105])
            out.append((f"system-{metric}", fig))
    return out
