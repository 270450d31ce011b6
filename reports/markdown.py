"""The report document -> GitHub-flavoured Markdown for an issue comment (always under GitHub's 65,536 characters).

Log text is escaped for Markdown and HTML outside code blocks, and fenced with a fence longer than any backtick
run inside it, so a hostile line can neither break out nor render as markup.
"""
from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from jinja2 import Environment, PackageLoader

from diagnose.reports.document import with_display
from diagnose.reports.mermaid import Block

GITHUB_LIMIT = 65_536


class Safe(str):
    """Text a filter has already made inert; the default escaper leaves it alone."""


def md(text: Any) -> Safe:
    """Inline text: HTML and Markdown metacharacters neutralised, @mentions defused, one line."""
    if isinstance(text, Safe):
        return text
    s = "" if text is None else str(text)
    s = s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    s = re.sub(r"([\\`*_{}\[\]#|~])", r"\\\1", s)
    s = _MENTION.sub("@\u200b", s)  # a zero-width space: GitHub links no user or team, the text reads the same
    s = _REFERENCE.sub("\\1\u200b", s)  # nor an issue (`#12`, `GH-12`), nor cross-references another thread by URL
    return Safe(s.replace("\r", " ").replace("\n", " "))


_MENTION = re.compile(r"@(?=[A-Za-z0-9])")
_REFERENCE = re.compile(r"(#|\bGH|\bgithub)(?=\d|-\d|\.com/[\w.-]+/[\w.-]+/(?:issues|pull|discussions)/\d)", re.I)


def code(text: Any) -> Safe:
    """Text inside an inline code span: backticks and line breaks cannot be escaped there, so they go (GitHub links
    no @mention inside code)."""
    return Safe(("" if text is None else str(text)).replace("`", "'").replace("\r", " ").replace("\n", " "))


def fence(text: str, lang: str = "") -> Safe:
    longest = max((len(m) for m in re.findall(r"`+", text)), default=0)
    ticks = "`" * max(3, longest + 1)
    return Safe(f"{ticks}{lang}\n{text}\n{ticks}")


def _finalize(value: Any) -> Any:
    """Every `{{ value }}` in the template is escaped unless a filter already made it inert (like HTML
    autoescape): a value from an input can never reach the Markdown raw."""
    if value is None or isinstance(value, (Safe, bool, int, float)):
        return value
    return md(value)


_ENV = Environment(loader=PackageLoader(__package__, "templates"), autoescape=False, trim_blocks=True,
                   lstrip_blocks=True, keep_trailing_newline=True, finalize=_finalize)


_ENV.filters["md"] = md
_ENV.filters["fence"] = fence
_ENV.filters["code"] = code
ENV = _ENV  # shared with the compare report (reports/compare_doc.py)


def render(doc: dict[str, Any], charts: Sequence[Block] = ()) -> str:
    """Render; when too long for GitHub, drop the least important parts first and say so. `charts` are Mermaid
    blocks (reports/mermaid.py), drawn where the document links no PNG images (`--images`)."""
    doc = with_display(doc)
    levels = [
        {},
        {"max_evidence": 3},
        {"max_evidence": 3, "no_charts": True},
        {"max_evidence": 3, "no_sources": True},
        {"max_evidence": 2, "no_sources": True, "no_info": True},
        {"max_evidence": 1, "no_sources": True, "no_info": True, "no_details": True},
    ]
    text = ""
    for i, opts in enumerate(levels):
        text = _ENV.get_template("report.md.j2").render(doc=doc, opts=opts, cut=i > 0, charts=charts)
        if len(text) < GITHUB_LIMIT:
            return text
    return text[: GITHUB_LIMIT - 200] + "\n\n_(report shortened to fit a GitHub comment; the HTML report has the rest)_\n"
