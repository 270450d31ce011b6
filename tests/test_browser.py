"""The HTML report in a real headless Chromium (Debian's, driven by Playwright): it loads with no console errors,
draws every chart, shows the verdict, and requests nothing from the network."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from conftest import SAMPLES, run_cli

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
NO_CHROMIUM = "Debian's chromium is not installed (tests/install_chromium.py installs it as root)"
pytestmark = [pytest.mark.skipif(CHROMIUM is None, reason=NO_CHROMIUM), pytest.mark.slow]  # seconds a page


@pytest.mark.parametrize("run", ["synthetic/seed_zero3_launch_blocking", "ds_zero1_ga2_torchrun", "two runs",
                                 "compare"])
def test_report_renders_in_chromium(tmp_path: Path, run: str) -> None:
    playwright = pytest.importorskip("playwright.sync_api")
    out = tmp_path / "report.html"
    source = SAMPLES / run
    if run == "two runs":  # a folder of two runs: one page, a section each, every chart drawn
        source = tmp_path / "runs"
        for name in ("ds_zero0", "ds_zero2_bf16"):
            shutil.copytree(SAMPLES / name, source / name)
    if run == "compare":  # `diagnose compare`'s page: both runs' step times overlaid, the breakdowns side by side
        done = run_cli("compare", str(SAMPLES / "ds_zero0"), str(SAMPLES / "ds_zero3_offload"), "-o", str(out))
    else:
        done = run_cli("report", str(source), "-o", str(out))
    assert done.returncode == 0, done.stderr
    if run == "two runs":
        page_html = out.read_text()
        assert page_html.count('<h1 class="run" id="run-') == 2
        # the index at the top links each run's section (issue 23)
        assert 'id="runs-index"' in page_html and page_html.count('<a href="#run-') == 2
    expected_charts = out.read_text().count('class="chart')
    assert expected_charts >= 2
    errors: list[str] = []
    requests: list[str] = []
    with playwright.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=[
            "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
            "--disable-sync", "--no-first-run"])
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
            page.on("pageerror", lambda e: errors.append(str(e)))
            page.on("request", lambda r: requests.append(r.url))
            page.goto(out.as_uri(), timeout=30_000)
            page.wait_for_selector(".js-plotly-plot .main-svg", timeout=30_000)
            drawn = page.evaluate("() => [...document.querySelectorAll('.js-plotly-plot')]"
                                  ".filter(d => d.data && d.data.length && d.querySelector('.main-svg')).length")
            verdict = page.locator("#verdict").first
            assert verdict.is_visible() and verdict.inner_text().strip()
            if run == "two runs":  # issue 31, must 6: the index is as tall as its table, no blank screen after it
                gap = page.evaluate("() => document.querySelector('#run-1').getBoundingClientRect().top - "
                                    "document.querySelector('#runs-index table').getBoundingClientRect().bottom")
                assert 0 <= gap < 120, gap
            if run.startswith("synthetic/seed"):
                diffs = " ".join(page.locator("#recommended ~ pre.diff").all_inner_texts())
                assert "-export CUDA_LAUNCH_BLOCKING=1" in diffs and '+    "stage": 1,' in diffs  # a patch of the run's own ds_config.json
            if run == "compare":
                assert "zero_stage" in page.locator("#changes").inner_text()
                assert page.locator("#explained li").count() >= 1
            page.screenshot(path=str(tmp_path / "report.png"), full_page=True)
        finally:
            browser.close()
    assert errors == []
    assert drawn == expected_charts
    assert [u for u in requests if not u.startswith(("file:", "data:", "blob:", "about:"))] == []


CHART_LAYOUT = """() => [...document.querySelectorAll('.js-plotly-plot')].map(gd => {
  const L = gd._fullLayout, texts = sel => [...gd.querySelectorAll(sel)].map(t => t.getBoundingClientRect())
    .filter(r => r.width > 0);
  const overlaps = rects => rects.some((a, i) => rects.slice(i + 1).some(b =>
    a.left < b.right - 1 && b.left < a.right - 1 && a.top < b.bottom - 1 && b.top < a.bottom - 1));
  const legend = texts('.legend .bg'), titles = texts('.xtitle, .ytitle, .gtitle');
  const frame = gd.parentElement.closest('[data-chart]').getBoundingClientRect();
  return {name: gd.parentElement.closest('[data-chart]').dataset.chart, title: L.title.text || '',
          legendOverTitle: legend.some(a => titles.some(b => overlaps([a, b]))),
          blankBelow: frame.bottom - gd.getBoundingClientRect().bottom,
          x: (L.xaxis.title || {}).text || '', y: (L.yaxis.title || {}).text || '', traces: gd.data.length,
          legend: L.showlegend, ymin: L.yaxis.range ? L.yaxis.range[0] : null, ytype: L.yaxis.type,
          xOverlap: overlaps(texts('.xtick text')), yOverlap: overlaps(texts('.ytick text'))};
})"""


@pytest.mark.parametrize("run", ["synthetic/seed_zero3_launch_blocking", "synthetic/checkpoint_stalls"])
def test_every_chart_says_what_it_shows_at_two_widths(tmp_path: Path, run: str) -> None:
    """Axis titles on both axes, a legend exactly where there are several series, plain titles (no internal clock
    names), quantities from zero, and no tick labels on top of each other at 1366 and 700 px."""
    playwright = pytest.importorskip("playwright.sync_api")
    out = tmp_path / "report.html"
    assert run_cli("report", str(SAMPLES / run), "-o", str(out)).returncode == 0
    with playwright.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox", "--disable-gpu"])
        try:
            for width in (1366, 700):
                page = browser.new_page(viewport={"width": width, "height": 900})
                page.goto(out.as_uri(), timeout=30_000)
                page.wait_for_selector(".js-plotly-plot .main-svg", timeout=30_000)
                page.wait_for_timeout(300)
                charts = page.evaluate(CHART_LAYOUT)
                assert len(charts) >= 3
                for c in charts:
                    assert c["title"] and c["x"] and c["y"], c
                    assert not any(w in c["title"] for w in ("ds_step_ts", "ThroughputTimer", "tqdm", "see_memory"))
                    assert c["legend"] == (c["traces"] > 1), c
                    if c["ytype"] == "linear":
                        assert c["ymin"] is not None and c["ymin"] <= 0, c
                    assert not c["xOverlap"] and not c["yOverlap"], (width, c)
                    assert not c["legendOverTitle"], (width, c)  # issue 31, must 6
                    assert c["blankBelow"] < 30, (width, c)  # the frame as tall as its figure
                page.close()
        finally:
            browser.close()
