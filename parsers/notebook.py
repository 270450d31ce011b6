"""A Jupyter notebook (`.ipynb`, a Colab download) -> the text a reader of it sees: each cell's source, then its
outputs as printed (a stream's lines, a result's plain text, an error's traceback), a rich output's HTML as the page
shows it (the HF Trainer's progress table in a notebook is HTML only: parsers/html_text.py). Read as JSON, the
notebook's lines are escaped strings in lists (`"step 10 loss 2.48\\n",`): no reader would see a log in them."""
from __future__ import annotations

import json
import re
from typing import Any

from diagnose.parsers.html_text import html_to_text

# A notebook opens with one of its top-level keys (nbformat writes them sorted, `cells` first; Colab writes
# `nbformat` first).
_NOTEBOOK = re.compile(rb'(?:\xef\xbb\xbf)?\s*\{\s*"(?:cells|nbformat|nbformat_minor|metadata|worksheets)"\s*:')
# A rich output whose plain text is only its object's repr says nothing in it (`<IPython.core.display.HTML object>`).
_REPR_ONLY = re.compile(r"^<[\w.]+ object>$")


def is_notebook(head: bytes) -> bool:
    """Whether a file's first bytes open a Jupyter notebook."""
    return _NOTEBOOK.match(head[:4096]) is not None


def notebook_to_text(data: bytes) -> bytes | None:
    """The notebook's cells and outputs as UTF-8 text, one printed line a line; None where it is no notebook."""
    try:
        doc = json.loads(data.decode("utf-8", "replace"))
    except ValueError:
        return None
    if not isinstance(doc, dict) or not ("cells" in doc or "worksheets" in doc):
        return None
    # nbformat 4 has `cells`; nbformat 3 (old exports) `worksheets[].cells`, its outputs' text under `text`
    cells = doc.get("cells")
    if cells is None:
        cells = [c for w in doc.get("worksheets") or [] if isinstance(w, dict) for c in w.get("cells") or []]
    if not isinstance(cells, list):
        return None
    out: list[str] = []
    for cell in cells:
        if not isinstance(cell, dict):
            continue
        out.append(_joined(cell.get("source", cell.get("input"))))
        for output in cell.get("outputs") or []:
            if isinstance(output, dict):
                out.append(_output(output))
    return "\n".join(part.rstrip("\n") for part in out if part).encode("utf-8") + b"\n"


def _joined(text: Any) -> str:
    """nbformat stores a multi-line string as a list of its lines (each with its newline) or as one string."""
    if isinstance(text, list):
        return "".join(t for t in text if isinstance(t, str))
    return text if isinstance(text, str) else ""


def _output(output: dict[str, Any]) -> str:
    kind = output.get("output_type")
    if kind == "stream":
        return _joined(output.get("text"))
    if kind == "error":
        return "\n".join(_joined(line) for line in output.get("traceback") or []) or \
            f"{output.get('ename', '')}: {output.get('evalue', '')}"
    found = output.get("data")
    data: dict[str, Any] = found if isinstance(found, dict) else output  # nbformat 3 keeps them inline
    plain = _joined(data.get("text/plain", data.get("text")))
    html = _joined(data.get("text/html", data.get("html")))
    if html and (not plain or _REPR_ONLY.match(plain.strip())):
        return html_to_text(html.encode("utf-8")).decode("utf-8")
    return plain
