"""The report document + charts -> one self-contained HTML file (plotly.js inlined once, no other host).

plotly.js is the basic partial bundle (scatter, bar, pie and the layout components; `static/plotly-basic.min.js`,
plotly.js-basic-dist-min 3.7.0 from npm, MIT, license beside it): 1.1 MB against the full bundle's 4.8 MB, which made
every report 4.9 MB, too large for many chat and tracker attachments. Every chart here is a scatter or a bar.
"""
from __future__ import annotations

from typing import Any

from jinja2 import Environment, PackageLoader, select_autoescape
from markupsafe import Markup
from functools import cache
from pathlib import Path

_ENV = Environment(loader=PackageLoader(__package__, "templates"), autoescape=select_autoescape(["html", "j2"]),
                   trim_blocks=True, lstrip_blocks=True)
PLOTLY_JS = Path(__file__).parent / "static" / "plotly-basic.min.js"
PLOT_CONFIG = {"displaylogo": False, "responsive": True, "modeBarButtonsToRemove": ["sendDataToCloud"]}


@cache
def plotlyjs() -> str:
    return _script_safe(PLOTLY_JS.read_text(encoding="utf-8"))


def _script_safe(js: str) -> str:
    # plotly.js is trusted, but a literal `</script` would end the inline block early in any case
    return js.replace("</script", "<\\/script")


DEFAULT_CHART_PX = 320  # plotly's height where a figure sets none (reports/charts.py sets every one)
FRAME_PAD_PX = 20


def render(doc: dict[str, Any], figures: list[tuple[str, Any]], chart_prefix: str = "",
           template: str = "report.html.j2") -> str:
    if template == "report.html.j2":  # a comparison arrives with its own display rows (compare_doc)
        from diagnose.reports.document import with_display

        doc = with_display(doc)
    charts = []
    for name, fig in figures:
        html = fig.to_html(include_plotlyjs=False, full_html=False, config=PLOT_CONFIG,
                           div_id=f"chart-{chart_prefix}{name}",
                           default_height="100%", default_width="100%")
        # the frame is as tall as its figure (plus its border's padding): no blank band under a short chart
        charts.append({"name": name, "html": Markup(html),
                       "frame_px": int(fig.layout.height or DEFAULT_CHART_PX) + FRAME_PAD_PX})
    return _ENV.get_template(template).render(doc=doc, charts=charts,
                                                      plotlyjs=Markup(plotlyjs()))


def combine(pages: list[tuple[str, str]], index: list[dict[str, str]] | None = None) -> str:
    """Several runs' reports -> one page: the first page's head (plotly.js once), an index of the runs linking
    their sections, and each run's <main> in turn, under a heading with the run's name."""
    from markupsafe import escape

    from diagnose.reports.document import index_hours_label

    head, _, _ = pages[0][1].partition("<main>")
    mains = []
    if index:
        rows = "".join(f'<tr><td><a href="#run-{x["n"]}">{escape(x["n"])}. {escape(x["name"])}</a></td>'
                       f'<td>{escape(x["verdict"])}</td><td>{escape(x["ended"])}</td><td>{escape(x["step"])}</td>'
                       f'<td>{escape(x["gpu_hours"])}</td>'
                       f'<td>{escape(x["goodput"])}</td></tr>' for x in index)
        mains.append('<main id="runs-index">\n<h1>Runs</h1>\n<table><tr><th>run</th><th>verdict</th><th>ended</th>'
                     f'<th>median step</th><th>{escape(index_hours_label(index))}</th><th>goodput</th></tr>{rows}'
                     '</table>\n</main>')
    for i, (name, page) in enumerate(pages, 1):
        body = page.partition("<main>")[2].rpartition("</main>")[0]
        mains.append(f'<main>\n<h1 class="run" id="run-{i}">Run {i} of {len(pages)}: {escape(name)}</h1>\n{body}'
                     "</main>")
    return head + "\n".join(mains) + "\n</body>\n</html>\n"


def upload_page(*, token_required: bool, max_upload_mb: float, github_token_lent: bool = False) -> str:
    """`diagnose serve`'s upload page; it says whose token reads a GitHub thread."""
    return _ENV.get_template("upload.html.j2").render(token_required=token_required,
                                                     max_upload_mb=f"{max_upload_mb:g}",
                                                     github_token_lent=github_token_lent)
