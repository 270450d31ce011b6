"""The output formats, in one registry: a format's name, file suffixes and media type, how it renders one run's
report, several runs' reports and a comparison. The CLI's `--format` and `-o` suffix check, the server's downloads
and the README's list come from here: adding a format is one entry.
"""
from __future__ import annotations

import json
import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from io import StringIO
from typing import Any

from rich.console import Console

Figures = Callable[[], list[tuple[str, Any]]]  # a report's charts, computed only by the formats that draw them


@dataclass(frozen=True)
class Rendered:
    """One run as the renderers take it: its name (for several runs), its document and its charts."""

    name: str
    document: dict[str, Any]
    figures: Figures
    # the charts as data (reports/chart_data.py) for the renderers that draw without plotly (Markdown's Mermaid)
    charts: Callable[[], list[Any]] = lambda: []


@dataclass(frozen=True)
class Format:
    name: str
    suffixes: tuple[str, ...]
    media_type: str
    description: str
    report: Callable[[Rendered], str]
    runs: Callable[[list[Rendered]], str]  # several runs of one directory, each in its own section
    compare: Callable[[dict[str, Any], Figures], str]


def _finite(value: object) -> object:
    """JSON has no NaN or Infinity: non-finite numbers become null (a metric that could not be measured)."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite(v) for v in value]
    return value


def strict_json(doc: object) -> str:
    return json.dumps(_finite(doc), indent=2, default=str, allow_nan=False) + "\n"


def _terminal_text(draw: Callable[[Console], None]) -> str:
    buf = StringIO()
    draw(Console(file=buf, width=110, no_color=True))
    return buf.getvalue()


def _slug(heading: str) -> str:
    """The anchor GitHub (and most Markdown renderers) give a heading: lower case, punctuation dropped, spaces to
    hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.lower()).replace(" ", "-")


def _sections(render: Callable[[Rendered], str], markdown: bool = True) -> Callable[[list[Rendered]], str]:
    """Several runs as one text: an index (run, verdict, step time, GPU-hours, goodput), then a heading per run and
    its report."""
    def join(runs: list[Rendered]) -> str:
        from diagnose.reports.document import index_hours_label, runs_index

        index = runs_index([(r.name, r.document) for r in runs])
        hours = index_hours_label(index)
        if markdown:
            head = [f"| run | verdict | ended | median step | {hours} | goodput |", "|---|---|---|---|---|---|"]
            head += [f"| [{x['n']}. `{x['name'].replace('`', '')}`](#{_slug(x['heading'])}) | "
                     f"{x['verdict'].replace('|', '/')} | {x['ended']} | {x['step']} | {x['gpu_hours']} | "
                     f"{x['goodput']} |" for x in index]
        else:
            head = [f"{x['n']}. {x['name']}: {x['verdict']} (ended: {x['ended']}, median step {x['step']}, "
                    f"{x['hours_label']} {x['gpu_hours']}, goodput {x['goodput']})" for x in index]
        text = "\n".join(head) + "\n\n" + "\n\n".join(f"# {x['heading']}\n\n" + render(r)
                                                        for x, r in zip(index, runs))
        return _over_limit_note(text, len(runs)) + text if markdown else text
    return join


def _over_limit_note(text: str, runs: int) -> str:
    """Each run's report fits a GitHub comment (reports/markdown.py cuts it to); several together may not: the
    text says so first, and how to split it."""
    from diagnose.reports.markdown import GITHUB_LIMIT

    if len(text) < GITHUB_LIMIT:
        return ""
    return (f"> **Too long for one GitHub comment:** {len(text):,} characters for {runs} runs, past the "
            f"{GITHUB_LIMIT:,} a comment holds. Post one run's section per comment (each fits), run `diagnose report "
            "RUN_FOLDER -f md` for one run, or attach this file.\n\n")


def _json_report(r: Rendered) -> str:
    return strict_json(r.document)


def _json_runs(runs: list[Rendered]) -> str:
    return strict_json({"schema_version": runs[0].document["schema_version"],
                        "runs": [{"name": r.name, **r.document} for r in runs]})


def _md_report(r: Rendered) -> str:
    from diagnose.reports import markdown, mermaid

    return markdown.render(r.document, () if r.document.get("images") else mermaid.blocks(r.charts()))


def _html_report(r: Rendered) -> str:
    from diagnose.reports import html

    return html.render(r.document, r.figures())


def _html_runs(runs: list[Rendered]) -> str:
    from diagnose.reports import html

    from diagnose.reports.document import runs_index

    return html.combine([(r.name, html.render(r.document, r.figures(), chart_prefix=f"run{i}-"))
                         for i, r in enumerate(runs)], runs_index([(r.name, r.document) for r in runs]))


def _text_report(r: Rendered) -> str:
    from diagnose.reports import terminal

    return _terminal_text(lambda console: terminal.render(r.document, console))


def _json_compare(doc: dict[str, Any], figures: Figures) -> str:
    return strict_json(doc)


def _md_compare(doc: dict[str, Any], figures: Figures) -> str:
    from diagnose.reports import compare_doc

    return compare_doc.render_markdown(doc)


def _html_compare(doc: dict[str, Any], figures: Figures) -> str:
    from diagnose.reports import compare_doc

    return compare_doc.render_html(doc, figures())


def _text_compare(doc: dict[str, Any], figures: Figures) -> str:
    from diagnose.reports import compare_doc

    return _terminal_text(lambda console: compare_doc.render_terminal(doc, console))


FORMATS: dict[str, Format] = {f.name: f for f in (
    Format("html", (".html", ".htm"), "text/html; charset=utf-8", "one self-contained page, charts inline",
           _html_report, _html_runs, _html_compare),
    Format("md", (".md", ".markdown"), "text/markdown; charset=utf-8", "Markdown that fits a GitHub comment",
           _md_report, _sections(_md_report), _md_compare),
    Format("json", (".json",), "application/json", "the machine-readable contract (versioned)",
           _json_report, _json_runs, _json_compare),
    Format("text", (".txt",), "text/plain; charset=utf-8", "the terminal summary, without colour",
           _text_report, _sections(_text_report, markdown=False), _text_compare),
)}


def by_suffix(suffix: str) -> Format | None:
    return next((f for f in FORMATS.values() if suffix.lower() in f.suffixes), None)


def suffix_list() -> str:
    """`.txt, .json, .md or .html`: the suffixes -o takes, for messages."""
    first = [f.suffixes[0] for f in FORMATS.values()]
    return ", ".join(first[:-1]) + " or " + first[-1]
