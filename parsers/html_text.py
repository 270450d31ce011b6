"""A web page saved to a file (a browser's "Save page as" of an issue or a run's log view, a notebook exported with
nbconvert) -> the text it shows: tags dropped, entities unescaped (`{&#39;loss&#39;: 2.48}` is `{'loss': 2.48}`),
a line break where the page breaks one (`<br>`, the end of a paragraph, a table row, a `<pre>` block), scripts and
styles left out. Read with the standard library's HTML parser, which takes broken markup as browsers do."""
from __future__ import annotations

import re
from html.parser import HTMLParser

# A page opens with its doctype or its <html> tag (after a byte-order mark, white space or an XML declaration).
_PAGE = re.compile(rb"(?:\xef\xbb\xbf)?\s*(?:<\?xml[^>]*>\s*)?(?:<!--.*?-->\s*)*<(?:!DOCTYPE\s+html|html)[\s>]",
                   re.IGNORECASE | re.DOTALL)
# Tags whose end (or, for a void tag, whose self) ends a line of the page's text.
_BREAKS = frozenset({"br", "p", "div", "pre", "tr", "li", "h1", "h2", "h3", "h4", "h5", "h6", "table", "thead",
                     "tbody", "ul", "ol", "blockquote", "section", "article", "header", "footer", "hr", "details",
                     "summary", "dt", "dd"})
_CELLS = frozenset({"td", "th"})  # a table's cells, a tab apart
_HIDDEN = frozenset({"script", "style", "noscript", "template", "head"})


def is_html(head: bytes) -> bool:
    """Whether a file's first bytes open a web page."""
    return _PAGE.match(head[:4096]) is not None


class _Text(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self.hidden = 0
        self.pre = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "pre":
            self.pre += 1
        if tag in _HIDDEN:
            self.hidden += 1
        elif tag == "br" or tag == "hr":
            self.parts.append("\n")
        elif tag in _BREAKS:
            self._line()

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in ("br", "hr"):
            self.parts.append("\n")

    def handle_endtag(self, tag: str) -> None:
        if tag == "pre":
            self.pre = max(0, self.pre - 1)
        if tag in _HIDDEN:
            self.hidden = max(0, self.hidden - 1)
        elif tag in _BREAKS:
            self._line()
        elif tag in _CELLS:
            self.parts.append("\t")

    def handle_data(self, data: str) -> None:
        # White space alone between two tags, across a line, outside a `<pre>`, is the markup's indentation (a
        # notebook's HTML output puts each `<td>` on a line of its own): a browser shows none of it.
        if not self.hidden and (self.pre or data.strip() or "\n" not in data):
            self.parts.append(data)

    def _line(self) -> None:
        if self.parts and not self.parts[-1].endswith("\n"):
            self.parts.append("\n")


def html_to_text(data: bytes) -> bytes:
    """The text a page shows, as UTF-8, one line of it a line."""
    parser = _Text()
    parser.feed(data.decode("utf-8", "replace"))
    parser.close()
    return "".join(parser.parts).encode("utf-8")
