"""The report document -> the terminal (rich). Log text is printed as plain text, never as rich markup."""
from __future__ import annotations

import textwrap
from typing import Any

from rich.console import Console
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from diagnose.parsers import fact_table
from diagnose.reports.document import with_display

STYLE = {"critical": "bold red", "warning": "yellow", "info": "cyan"}


def render(doc: dict[str, Any], console: Console) -> None:
    doc = with_display(doc)
    explaining = any(f["explains_slowdown"] for f in doc["findings"])
    console.print(Panel(Text(doc["verdict"]), title="diagnose", border_style="red" if explaining else "green"),
                  soft_wrap=False)
    if doc.get("ending"):
        console.print(Text("How it ended: " + doc["ending"]["summary"]))
        for earlier in doc["ending"].get("earlier") or ():
            console.print(Text("  before it, " + earlier))
    if doc["tiles"]:
        console.print(Text("  ".join(f"{t['label']}: {t['value']}" for t in doc["tiles"]), style="dim"))
    if doc.get("time_rows"):
        t = Table(title="Where the time went: " + doc["time_caption"], title_justify="left")
        for col in ("part", "time", doc["hours_label"], "share"):
            t.add_column(col)
        for r in doc["time_rows"]:
            if r["level"] == 0 or len(doc["time_rows"]) <= 16:
                t.add_row(("  " if r["level"] else "") + r["part"], r["time"], r["gpu_hours"], r["share"],
                          style="dim" if r["level"] else None)
        console.print(t)
    for line in (doc.get("straggler_text"), doc.get("mfu_missing_text")):
        if line:
            console.print(Text(line, style="dim"))
    for s in doc.get("shift_rows", []):
        console.print(Text(f"step-time shift at step {s['step']}: {s['before']} -> {s['after']} ({s['change']}); "
                           f"{s['near']}", style="dim"))
    for i, f in enumerate(doc["findings"], 1):
        head = Text(f"{i}. ")
        head.append(f"[{f['severity']}] ", style=STYLE[f["severity"]])
        head.append(f"{f['title']} ", style="bold")
        role = ("explains the slowdown" if f["explains_slowdown"] else
                "why it stopped" if (f.get("data") or {}).get("ended") else "config to improve")
        head.append(f"({f['id']}, confidence {f['confidence']}, {role})", style="dim")
        console.print(head)
        console.print(Text("   " + f["summary"]))
        if f.get("cost"):
            c = f["cost"]
            console.print(Text(f"   cost: {c['arithmetic']}", style="magenta"))
        for e in f["evidence"][:4]:
            loc = f"{e['source']}:{e['line']}  " if e["source"] and e["line"] else (f"{e['source']}  " if e["source"] else "")
            console.print(Text(f"     {loc}{e['text']}", style="dim"), soft_wrap=True)
        if f["fix"]:
            console.print(Text(f"   fix: {f['fix']['summary']}", style="green"))
            for c in f["fix"]["changes_text"]:
                console.print(Text(f"     {c}", style="green"))
        for u in f.get("docs", [])[:2]:
            console.print(Text(f"   read more: {u}", style="dim"))
    if doc.get("recommended_diffs"):
        console.print(Text("Recommended configuration (all findings' changes, merged):", style="bold"))
        for d in doc["recommended_diffs"]:
            console.print(Text(f" {d['label']}:", style="dim"))
            for line in d["diff"].splitlines():
                style = "green" if line.startswith("+") else ("red" if line.startswith("-") else "dim")
                console.print(Text(f"   {line}", style=style))
    if doc.get("faults"):
        console.print(Text("Could not run (the report comes from the rest):", style="bold yellow"))
        for s in doc["faults"]:
            console.print(Text(f" - {s}"))
    clocks = [r for r in doc.get("stream_rows", []) if r["use"] == "step clock"]
    for r in clocks[:3]:  # a layout the tool has no kind for, learned from the log: say how it was read
        console.print(Text(f"learned layout ({r['lines']} lines): {r['template']}", style="dim"), soft_wrap=True)
        console.print(Text(f"   {r['roles']}", style="dim"), soft_wrap=True)
    if not doc["metrics"]["steps"] and doc.get("unread_rows"):
        console.print(Text("Most frequent lines nothing understood:", style="bold"))
        for r in doc["unread_rows"][:3]:
            console.print(Text(f" - {r['lines']} lines like: {r['sample']}", style="dim"), soft_wrap=True)
    if doc["next_steps"]:
        console.print(Text("Next measurement:", style="bold"))
        for s in doc["next_steps"]:
            console.print(Text(f" - {s}"))
    if doc.get("plan_rows"):
        t = Table(title="ZeRO planner: " + doc["plan_caption"].split(";")[0], title_justify="left")
        for col in ("option", "model states/GPU", "DS estimator", "traffic/GPU/step", "fits"):
            t.add_column(col)
        for r in doc["plan_rows"]:
            t.add_row(r["name"] + (" *" if r["recommended"] else ""), r["states"], r["ds"], r["comm"], r["fits"],
                      style="bold green" if r["recommended"] else None)
        console.print(t)


def render_parse(doc: dict[str, Any], console: Console) -> None:
    """`diagnose parse`'s text: the sources, the frames, and every run fact of the table that the reading settled
    (parsers/fact_table.py, in its order), names as the JSON spells them."""
    f = doc["facts"]
    console.print("[bold]Sources[/bold]")
    for s in doc["sources"]:
        extra = f", {s['lines']} lines, {s['recognised']} recognised" if s["kind"] == "log" else ""
        console.print(f"  {s['name']} ({s['kind']}{extra})", markup=False)
    console.print("[bold]Frames[/bold]  " + ", ".join(f"{k}={v}" for k, v in doc["frames"].items()))
    console.print(f"[bold]Unparsed lines[/bold]  {doc['unparsed_lines']}")
    console.print("[bold]Run facts[/bold]")
    for fact in fact_table.FACTS:
        if f.get(fact.name) is not None:
            console.print(f"  {fact.name:<20} {f[fact.name]}", markup=False)
    if f["versions"]:
        console.print("  versions             " + ", ".join(f"{k} {v}" for k, v in f["versions"].items()),
                      markup=False)
    if f["env"]:
        console.print("  env                  " + " ".join(f"{k}={v}" for k, v in f["env"].items()), markup=False)


def render_plan(p: Any, params: float, gpus: int, optimizer: str, console: Console) -> None:
    """`diagnose plan`'s text: the stages' table (short headers: it fits 80 columns, a pipe, a narrow terminal),
    a legend of what each column is, and the steps."""
    card = f"{p.gpu_memory_gb:.0f} GB" + ("" if p.gpu_memory_known else " (assumed: pass --gpu-memory)")
    t = Table(title=f"{params / 1e9:.2f}B parameters, {gpus} GPUs x {card}, {optimizer}, {p.precision}",
              title_justify="left")
    for col in ("option", "states", "DS est.", "activ.", "total", "traffic", "fits"):
        t.add_column(col, justify="right" if col != "option" else "left")
    for s in p.stages:
        chosen = s.name == p.recommended
        # chosen without fitting as it is: with activation checkpointing
        fits = "with ckpt" if chosen and not s.fits else s.verdict
        name = s.name + (" *" if chosen else "") + (" (now)" if s.name == p.current_stage else "")
        t.add_row(name, f"{s.model_states_gb:.1f}", f"{s.deepspeed_estimate_gb:.1f}",
                  "-" if s.activations_gb is None else f"{s.activations_gb:.1f}",
                  "-" if s.total_gb is None else f"{s.total_gb:.1f}", f"{s.comm_gb_per_step or 0:.1f}", fits,
                  style="bold green" if chosen else None)
    console.print(t)
    legend = (("* = recommended. " if p.recommended in {s.name for s in p.stages} else "")
              + "GB per GPU: model states (Adam, ZeRO paper), DeepSpeed's estimator, activations, "
              "total; traffic: GB sent per GPU per optimizer step."
              + (" fits unknown: the model states fit, the activations are not known (--seq-len, --micro-batch, "
                 "--hidden and --layers give them)." if any(s.verdict == "unknown" for s in p.stages) else ""))
    if p.recommended not in {s.name for s in p.stages}:
        legend += ("\nNothing fits as configured: more GPUs (ZeRO-3 divides model states by the GPU count), a "
                   "smaller micro-batch or activation checkpointing, CPU offload, or an 8-bit optimizer would.")
    for paragraph in legend.split("\n"):  # wrapped to the terminal (80 columns in a pipe)
        console.print("\n".join(textwrap.wrap(paragraph, width=min(console.width, 100))), markup=False)
    for i, line in enumerate(p.steps, 1):
        console.print("\n".join(textwrap.wrap(f"{i}. {line}", width=min(console.width, 100),
                                               subsequent_indent="   ")), markup=False)
