"""The report document -> the terminal (rich). Log text is printed as plain text, never as rich markup."""
from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

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
