"""The one import package (issue 22): `diagnose.parsers` (sources -> the run model), the analysis modules here (run
model -> findings: metrics, rules, the ZeRO planner), `diagnose.reports` (rendering), and on top the pipeline that
the CLI (`diagnose.cli`), the server (`diagnose.serve`) and the Python API share. The distribution is
`diagnose-training`; in the repository parsers/ and reports/ keep their place beside this folder (see pyproject.toml).
"""
import os

__version__ = "0.1.0"  # the one place: pyproject.toml reads it (tool.hatch.version)

# Polars allocates through its own jemalloc, which by default keeps freed pages for 10 s: on a long log the chunks
# already parsed stay resident and peak RSS grows with the log (`report` on 8 GiB, 16 ranks: 1.19 GB). Returning
# them at once (decay 0) cost a third of the parse time in page faults (1 GiB: 12.0 s against 9.0 s); after 250 ms
# costs about a tenth (10.1 s) and keeps most of the saving (658 MB against 898 MB). Set before polars loads; a
# user's own setting wins.
os.environ.setdefault("_RJEM_MALLOC_CONF", "dirty_decay_ms:250,muzzy_decay_ms:0")

# The Python API (diagnose/pipeline.py), loaded on first use so that `import diagnose` stays light:
#     import diagnose
#     a = diagnose.analyse("logs/"); a.findings; a.write("report.html")
_API = ("analyse", "Options", "Analysis", "RunAnalysis")


def __getattr__(name: str) -> object:
    if name in _API:
        from diagnose import pipeline

        return getattr(pipeline, name)
    raise AttributeError(f"module 'diagnose' has no attribute {name!r}")
