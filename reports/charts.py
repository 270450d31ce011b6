"""Run model + diagnosis -> plotly figures (each only when its data exists), every series at most MAX_POINTS."""
from __future__ import annotations

import re

import plotly.graph_objects as go
import plotly.io as pio
import polars as pl

from diagnose.engine import Diagnosis
from diagnose.parsers.run_model import RunModel
from diagnose.parsers.scalars import number
from diagnose.reports import chart_data
from diagnose.reports.chart_data import MAX_POINTS, downsample

# Every chart: a plain title, both axes titled with their unit, quantities from zero (a 2% wobble looks like one),
# legends below in the order the series are drawn, labels kept apart (automargin) at any width.
LAYOUT = dict(height=320, margin=dict(l=60, r=20, t=50, b=40),
              font=dict(family="system-ui, -apple-system, Segoe UI, sans-serif", size=12),
              # at the foot of the chart's box, below the x-axis title (paper coordinates put it over the title)
              legend=dict(orientation="h", x=0, xanchor="left", yref="container", y=0, yanchor="bottom",
                          traceorder="normal"))
AXIS = dict(automargin=True)
VALUE_AXIS = dict(automargin=True, rangemode="tozero")


TEMPLATE = "plotly_white"


def new_figure(data: object = None) -> go.Figure:
    """A figure in the house template, set as plotly sets its own default: the registered template object, which
    plotly validated once, is not validated again for each figure (that was 9 ms of a chart's 11, issue 35 must 5).
    Built with the template `none` first, so that plotly's default is not copied only to be replaced. The figure's
    JSON is the same as with `template="plotly_white"` (tests/test_reports.py)."""
    fig = go.Figure(data, layout={"template": "none"})
    fig.layout._validate = False
    try:
        fig.layout.template = pio.templates[TEMPLATE]
    finally:
        fig.layout._validate = True
    return fig


def styled(fig: go.Figure, title: str, x: str, y: str, height: int | None = None) -> go.Figure:
    """The house style: a title, both axes titled (with units), values from zero."""
    layout = {**LAYOUT, **({"height": height} if height else {})}
    fig.update_layout(title=title, xaxis=dict(title=x, **AXIS), yaxis=dict(title=y, **VALUE_AXIS), **layout)
    fig.update_layout(showlegend=len(fig.data) > 1)
    return fig


def safe(label: object) -> str:
    """Chart text from a log: no markup characters (plotly renders some HTML in labels)."""
    return re.sub(r"[<>&\"']", "", str(label))[:80]


def _stacked(chart: chart_data.Parts, bar: str) -> go.Figure:
    """One horizontal bar of the chart's parts, stacked in order."""
    fig = new_figure([go.Bar(y=[bar], x=[v], name=k, orientation="h") for k, v in chart.parts])
    fig.update_layout(barmode="stack")
    fig = styled(fig, chart.title, chart.value_title, bar, height=220)
    fig.update_yaxes(showticklabels=False)
    return fig


def figures(model: RunModel, d: Diagnosis) -> list[tuple[str, go.Figure]]:
    out: list[tuple[str, go.Figure]] = []
    m = d.metrics
    line = chart_data.step_time(d)
    if line is not None and m.step_series is not None:
        fig = new_figure(go.Scatter(x=list(line.x), y=list(line.y), mode="lines", name="step time",
                                    line=dict(color="#3366cc")))
        if m.steps and m.steps.spikes:
            spk = m.step_series.filter(pl.col("step").is_in(list(m.steps.spikes)))
            fig.add_trace(go.Scatter(x=spk["step"].to_list(), y=spk["step_time_s"].to_list(), mode="markers",
                                     name="spikes (2x the usual step or more)", marker=dict(color="#dc3912", size=8)))
        if m.steps:
            fig.add_hline(y=m.steps.p50_s, line_dash="dot", line_color="#888",
                          annotation_text=f"median {m.steps.p50_s:.3g} s (range {number(min(line.y)):.3g}"
                                          f"-{number(max(line.y)):.3g} s)",
                          annotation_position="top left")
        out.append((line.name, styled(fig, line.title, line.x_title, line.y_title)))
    account = chart_data.goodput(d)
    if account is not None:
        out.append((account.name, _stacked(account, "run")))
    if m.rank_step_p50:
        ranks = sorted(m.rank_step_p50)
        fig = new_figure(go.Bar(x=[str(r) for r in ranks], y=[m.rank_step_p50[r] * 1000 for r in ranks],
                                marker_color="#3366cc", name="median timed step"))
        out.append(("ranks", styled(fig, "Median timed step per rank (a slow rank stands out)", "rank",
                                    "milliseconds")))
    step = chart_data.breakdown(d)
    if step is not None:
        out.append((step.name, _stacked(step, "median step")))
    steps = model.frames["steps"]
    tp = steps.filter(pl.col("origin") == "ds_throughput").select("global_step", "samples_per_sec")
    loss = steps.filter(pl.col("loss").is_not_null() & pl.col("global_step").is_not_null()).select("global_step",
                                                                                                   "loss")
    if tp.height:
        t = downsample(tp, "global_step", "samples_per_sec")
        fig = new_figure(go.Scatter(x=t["global_step"].to_list(), y=t["samples_per_sec"].to_list(), name="samples/s",
                                    mode="lines"))
        out.append(("throughput", styled(fig, "Training throughput", "step", "samples per second")))
    if loss.height:
        lo = downsample(loss.unique("global_step", keep="first"), "global_step", "loss")
        fig = new_figure(go.Scatter(x=lo["global_step"].to_list(), y=lo["loss"].to_list(), name="loss", mode="lines",
                                    line=dict(color="#6639ba")))
        out.append(("loss", styled(fig, "Training loss", "step", "loss")))
    if m.comm_ops:
        ops = sorted(m.comm_ops.items(), key=lambda kv: -kv[1])
        fig = new_figure(go.Bar(x=[safe(k) for k, _ in ops], y=[v for _, v in ops], marker_color="#ff9900",
                                name="total latency"))
        title = "Time in each collective (comms logger)"
        if m.comm_running_totals:  # see diagnose.metrics.COMMS_RUNNING_TOTALS_SINCE
            title += ": this DeepSpeed logs running totals, so compare ops, not values"
        out.append(("comms", styled(fig, title, "collective", "milliseconds, total")))
    mem = model.frames["memory"]
    if mem.height:
        mm = mem.with_row_index("i")
        fig = new_figure([go.Scatter(x=mm["i"].to_list(), y=mm[c].to_list(), name=n, mode="lines")
                          for c, n in (("ma_gb", "allocated"), ("ca_gb", "reserved"), ("max_ma_gb", "max allocated"))])
        out.append(("memory", styled(fig, "GPU memory at each memory report", "report (in order)", "GB")))
    elif steps.filter(pl.col("mem_alloc_gb").is_not_null()).height:
        mm = steps.filter(pl.col("mem_alloc_gb").is_not_null())
        fig = new_figure([go.Scatter(x=mm["global_step"].to_list(), y=mm[c].to_list(), name=n) for c, n in
                          (("mem_alloc_gb", "allocated"), ("max_mem_alloc_gb", "max allocated"))])
        out.append(("memory", styled(fig, "GPU memory over steps", "step", "GB")))
    system = model.frames["system"]
    for metric, title, unit in (("gpu", "GPU utilization per GPU (W&B)", "utilization, %"),
                                ("memoryAllocated", "GPU memory allocated per GPU (W&B)", "memory allocated, %")):
        sm = system.filter(pl.col("metric") == metric)
        if sm.height:
            fig = new_figure()
            for (gpu,), part in sorted(sm.partition_by("gpu", as_dict=True).items(), key=lambda kv: kv[0][0] or 0):
                p = downsample(part.with_columns(pl.col("ts").cast(pl.Int64)), "ts", "value",
                               MAX_POINTS // max(1, sm["gpu"].n_unique()))
                fig.add_trace(go.Scatter(x=p["ts"].cast(pl.Datetime("ms")).to_list(), y=p["value"].to_list(),
                                         name=f"GPU {gpu}", mode="lines"))
            fig = styled(fig, title, "time", unit)
            fig.update_yaxes(range=[0, 105])
            out.append((f"system-{metric}", fig))
    return out
