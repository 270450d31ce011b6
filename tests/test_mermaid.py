"""Charts that render on GitHub (issue 24, must 4): the Markdown report draws its step-time, goodput and breakdown
charts as Mermaid xychart-beta blocks with the HTML charts' titles and axis labels and a bounded number of points."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

import diagnose
from conftest import SAMPLES, analysed
from diagnose.reports import chart_data, charts, mermaid
from diagnose.reports.chart_data import Line, Parts

BLOCK = re.compile(r"```mermaid\n(xychart-beta.*?)\n```", re.S)


def test_the_markdown_report_draws_the_html_charts_as_mermaid() -> None:
    a = diagnose.analyse(SAMPLES / "ds_zero0")
    md = a.render("md")
    drawn = BLOCK.findall(md)
    figs = dict(charts.figures(a.runs[0].model, a.runs[0].diagnosis))
    assert len(drawn) == 3 and "![" not in md
    titles = [re.search(r'title "(.*)"', b).group(1) for b in drawn]  # type: ignore[union-attr]
    assert titles == [figs[n].layout.title.text for n in ("step-time", "goodput", "breakdown")]
    step = drawn[0]
    assert 'x-axis "step" 2 --> 40' in step and f'y-axis "{figs["step-time"].layout.yaxis.title.text}"' in step
    values = re.search(r"line \[(.*)\]", step).group(1).split(", ")  # type: ignore[union-attr]
    assert len(values) == len(figs["step-time"].data[0].y) == 39 and all(float(v) >= 0 for v in values)
    breakdown = drawn[2]
    assert breakdown.startswith("xychart-beta horizontal") and '"forward"' in breakdown and '"milliseconds"' in breakdown


def test_a_long_series_is_bucketed_to_the_bound_and_keeps_its_level_shift() -> None:
    xs = list(range(1, 100_001))
    ys = [1.0 if x <= 50_000 else 2.0 for x in xs]
    line = Line("step-time", "Time per training step", "step", "seconds per step", tuple(map(float, xs)), tuple(ys))
    (block,) = mermaid.blocks([line])
    values = [float(v) for v in re.search(r"line \[(.*)\]", block.text).group(1).split(", ")]  # type: ignore[union-attr]
    assert len(values) == mermaid.MAX_POINTS
    assert values[: mermaid.MAX_POINTS // 2 - 1] == [1.0] * (mermaid.MAX_POINTS // 2 - 1) and values[-1] == 2.0
    assert 'x-axis "step" 1 --> 100000' in block.text  # plain decimal: mermaid takes no exponent


def test_labels_from_logs_cannot_break_the_block() -> None:
    parts = Parts("breakdown", "Where a step's time goes", "milliseconds", (('fwd"] \n```\n@evil', 3.0),))
    (block,) = mermaid.blocks([parts])
    assert "```" not in block.text and "\n@evil" not in block.text and block.text.count('"') % 2 == 0


def test_png_images_replace_the_mermaid_blocks(tmp_path: Path) -> None:
    a = diagnose.analyse(SAMPLES / "ds_zero0")
    a.runs[0].document["images"] = [{"name": "step-time", "title": "Time per training step", "path": "x.png"}]
    md = a.render("md")
    assert "```mermaid" not in md and "![Time per training step](x.png)" in md


@pytest.mark.parametrize("value,shown", [(5.556e-07, "0.0000005556"), (1234.5, "1234"), (0.1, "0.1"),
                                         (-0.00042, "-0.00042"), (3.0, "3"), (2.5e9, "2500000000"), (0.0, "0")])
def test_chart_numbers_are_plain_decimals(value: float, shown: str) -> None:
    """Mermaid's xychart grammar has no exponent: `5.556e-07` made 8 of 98 sample charts fail to render (issue 31)."""
    from diagnose.reports.mermaid import _num

    assert _num(value) == shown


@pytest.mark.slow
def test_no_sample_chart_writes_an_exponent() -> None:
    from diagnose.engine import diagnose
    from diagnose.parsers import parse

    blocks = []
    for run in sorted({p.parent for p in SAMPLES.rglob("*.log") if "wandb" not in p.parts}):
        model = parse([str(run)])
        blocks += mermaid.blocks(chart_data.drawn_in_markdown(model, diagnose(model)))
    assert len(blocks) >= 40
    numbers = re.compile(r"(?<![\w.])-?\d[\d.]*[eE][-+]?\d+")
    assert not [b.text for b in blocks if numbers.search(b.text)]


RENDER_ALL = """async (blocks) => {
  mermaid.initialize({startOnLoad: false, securityLevel: 'strict'});
  const out = [];
  for (let i = 0; i < blocks.length; i++) {
    try {
      const {svg} = await mermaid.render('chart' + i, blocks[i]);
      out.push(svg.includes('<svg') ? '' : 'no svg');
    } catch (e) { out.push(String(e && e.message || e).split('\\n')[0] || 'error'); }
  }
  return out;
}"""


def _render_in_chromium(blocks: list[str]) -> list[str]:
    """Each block through the real mermaid library in headless Chromium -> '' where it rendered, else its error."""
    import shutil

    from install_chromium import MERMAID_JS

    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None or not MERMAID_JS.is_file():
        pytest.skip("needs Debian's chromium and mermaid's bundle (tests/install_chromium.py fetches both)")
    playwright = pytest.importorskip("playwright.sync_api")
    with playwright.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium, args=["--no-sandbox", "--disable-gpu"])
        try:
            page = browser.new_page()
            page.set_content("<!doctype html><html><body></body></html>")
            page.add_script_tag(path=str(MERMAID_JS))
            return page.evaluate(RENDER_ALL, blocks)
        finally:
            browser.close()


@pytest.mark.slow
def test_every_sample_chart_renders_with_the_real_mermaid() -> None:
    """Issue 31, must 6: every Mermaid block of every sample's Markdown report goes through mermaid 11's own parser
    and renderer (the library GitHub draws them with), and a block it refuses fails the test; the control is the
    exponent form that once broke 8 of 98 charts, which the same renderer must refuse."""
    texts = []
    for run in sorted({p.parent for p in SAMPLES.rglob("*.log") if "wandb" not in p.parts}):
        md = analysed(run).render("md")
        texts += [(run.name, b) for b in re.findall(r"```mermaid\n(.*?)\n```", md, re.S)]
    assert len(texts) >= 40
    control = 'xychart-beta\n  title "t"\n  x-axis "step" 1 --> 3\n  y-axis "s"\n  line [5.556e-07, 1, 2]'
    results = _render_in_chromium([t for _, t in texts] + [control])
    assert results[-1], "mermaid accepted an exponent: the control no longer tells a refused block"
    failed = [(name, error, text.splitlines()[:3]) for (name, text), error in zip(texts, results) if error]
    assert failed == []


def test_markdown_builds_no_plotly_figure(monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 35: the Markdown's charts come from the charts' data, not from plotly figures (a 36-run Markdown report
    took as long as the HTML)."""
    a = diagnose.analyse(SAMPLES / "ds_zero0")

    def refuse(*_: object) -> None:
        raise AssertionError("the Markdown built plotly figures")
    monkeypatch.setattr(charts, "figures", refuse)
    assert len(BLOCK.findall(a.render("md"))) == 3
