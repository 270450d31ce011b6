"""The one import package (issue 22): `diagnose.parsers` (sources -> the run model), the analysis modules here (run
model -> findings: metrics, rules, the ZeRO planner), `diagnose.reports` (rendering), and on top the pipeline that
the CLI (`diagnose.cli`), the server (`diagnose.serve`) and the Python API share. The distribution is
`diagnose-training`; in the repository parsers/ and reports/ keep their place beside this folder (see pyproject.toml).
"""
import os

__version__ = "0.1.0"  # the one place: pyproject.toml reads it (tool.hatch.version)

# Polars allocates through its own jemalloc, which by default keeps freed pages for 10 s: on a long log the chunks
# already parsed stay resident and peak RSS grows with the log (`report` on 8 GiB, 16 ranks: 1.19 GB). Returning
# them at once (decay 0) cost a third of the parse time in page faults (1 GiB: 12.0 s against 9.0 s). One arena for
# all threads: the worker threads and polars' own pool each took an arena of their own, so a page one thread freed was
# handed back to the system and another thread faulted a fresh one; with one arena the chunks reuse each other's
# pages, and freed pages may wait a second (1 GiB parse, 2 cores, four alternating pairs against the earlier
# `dirty_decay_ms:250` alone: 1.2M -> 0.7M page faults, 23.9 -> 22.5 s CPU, 13.4 -> 12.6 s wall, peak RSS 643 ->
# 663 MB; the 8 GiB report: 75.0 -> 69.6 s wall, 22.8 -> 14.2 s system CPU, peak 930 -> 963 MB, under its 1 GiB bar).
# Set before polars loads; a user's own setting wins.
os.environ.setdefault("_RJEM_MALLOC_CONF", "narenas:1,dirty_decay_ms:1000,muzzy_decay_ms:0")

# The Python API (diagnose/pipeline.py), loaded on first use so that `import diagnose` stays light:
#     import diagnose
#     a = diagnose.analyse("logs/"); a.findings; a.write("report.html")
_API = ("analyse", "Options", "Analysis", "RunAnalysis")


def __getattr__(name: str) -> object:
    if name in _API:
        from diagnose import pipeline

        return getattr(pipeline, name)
    raise AttributeError(f"module 'diagnose' has no attribute {name!r}")
