"""The report document -> GitHub-flavoured Markdown for an issue comment (always under GitHub's 65,536 characters).

Log text is escaped for Markdown and HTML outside code blocks, and fenced with a fence longer than any backtick
run inside it, so a hostile line can neither break out nor render as markup.
"""
from __future__ import annotations

import re
from typing import Any

from jinja2 import Environment, PackageLoader

GITHUB_LIMIT = 65_536
_ENV = Environment(loader=PackageLoader("reports", "templates"), autoescape=False, trim_blocks=True,
                   lstrip_blocks=True, keep_trailing_newline=True)


def md(text: Any) -> str:
    """Inline text: HTML and Markdown metacharacters neutralised, one line."""
    s = "" if text is None else str(text)
    s = s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    s = re.sub(r"([\\`*_{}\[\]#|~])", r"\\\1", s)
    return s.replace("\r", " ").replace("\n", " ")


def code(text: Any) -> str:
    """Text inside an inline code span: backticks and line breaks cannot be escaped there, so they go."""
    return ("" if text is None else str(text)).replace("`", "'").replace("\r", " ").replace("\n", " ")


def fence(text: str, lang: str = "") -> str:
    longest = max((len(m) for m in re.findall(r"`+", text)), default=0)
    ticks = "`" * max(3, longest + 1)
    return f"{ticks}{lang}\n{text}\n{ticks}"


_ENV.filters["md"] = md
_ENV.filters["fence"] = fence
_ENV.filters["code"] = code


def render(doc: dict[str, Any]) -> str:
    """Render; when too long for GitHub, drop the least important parts first and say so."""
    levels = [
        {},
        {"max_evidence": 3},
        {"max_evidence": 3, "no_sources": True},
        {"max_evidence": 2, "no_sources": True, "no_info": True},
        {"max_evidence": 1, "no_sources": True, "no_info": True, "no_details": True},
    ]
    text = ""
    for i, opts in enumerate(levels):
        text = _ENV.get_template("report.md.j2").render(doc=doc, opts=opts, cut=i > 0)
        if len(text) < GITHUB_LIMIT:
            return text
    return text[: GITHUB_LIMIT - 200] + "\n\n_(report shortened to fit a GitHub comment; the HTML report has the rest)_\n"
