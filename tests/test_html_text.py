"""A saved web page is read for the text it shows."""
from __future__ import annotations

import html
from pathlib import Path

from conftest import SAMPLES

from diagnose.parsers import parse
from diagnose.parsers.html_text import html_to_text, is_html

LOG = SAMPLES / "ds_zero0" / "train.log"


def test_a_log_in_a_saved_page_reads_as_the_log(tmp_path: Path) -> None:
    # a browser's "Save page as" of a log view: the lines in a <pre>, `<` and `'` escaped, scripts beside them
    text = LOG.read_text()
    page = tmp_path / "run.html"
    page.write_text("<!DOCTYPE html>\n<html><head><title>log</title><style>pre { color: red }</style>"
                    "<script>var step = 1; // iter 5: time 9.9s</script></head><body><h1>Run</h1><pre>"
                    + html.escape(text, quote=True) + "</pre></body></html>\n")
    plain, saved = parse([str(LOG)]).frames["steps"], parse([str(page)]).frames["steps"]
    assert saved.height == plain.height > 0
    assert saved["step_time_s"].to_list() == plain["step_time_s"].to_list()
    assert page.read_text().startswith("<!DOCTYPE html>")  # the input is never modified


def test_breaks_entities_and_cells(tmp_path: Path) -> None:
    # a notebook exported to HTML: HF Trainer dicts a `<br>` apart on one line of markup, quotes as `&#39;`
    lines = [f"{{'loss': {2.5 - i / 100:.4f}, 'learning_rate': 3e-05, 'epoch': {i / 60:.2f}}}" for i in range(1, 41)]
    page = "<html><body><div><pre>" + "<br>".join(html.escape(x, quote=True) for x in lines) + "</pre></div>" \
        "<table><tr><th>Step</th><th>Training Loss</th></tr><tr><td>10</td><td>2.48</td></tr></table></body></html>"
    assert html_to_text(page.encode()).decode().splitlines()[:2] == lines[:2]
    assert "Step\tTraining Loss\t\n10\t2.48\t" in html_to_text(page.encode()).decode()
    p = tmp_path / "notebook.html"
    p.write_text(page)
    steps = parse([str(p)]).frames["steps"]
    assert steps["loss"].drop_nulls().head(2).to_list() == [2.49, 2.48]


def test_only_a_page_is_a_page() -> None:
    assert is_html(b"<!DOCTYPE html><html>") and is_html(b"\xef\xbb\xbf\n<html lang=\"en\">")
    assert is_html(b"<?xml version=\"1.0\"?>\n<!-- saved -->\n<!doctype HTML>")
    assert not is_html(b"step 1 <html> loss 2.3") and not is_html(b"# Notes\n\n<details>log</details>")
