"""Sources (logs, configs, launch scripts, URLs) -> one typed run model (polars frames + run facts)."""
from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from diagnose.parsers.errors import InputError

if TYPE_CHECKING:
    from diagnose.parsers.run_model import RunModel

__all__ = ["InputError", "RunModel", "parse"]


def __getattr__(name: str) -> object:
    """`RunModel` on first use: importing the package (for InputError, say) loads no polars (issue 35)."""
    if name == "RunModel":
        from diagnose.parsers.run_model import RunModel

        return RunModel
    raise AttributeError(f"module 'diagnose.parsers' has no attribute {name!r}")


def parse(sources: list[str], progress: Callable[[int], None] | None = None, refresh: bool = False,
          fetch_progress: Callable[[str, int, int | None], None] | None = None) -> RunModel:
    """Read every source into one run model. Raises InputError for input that cannot be read at all.

    `progress` is told the bytes of each log chunk read; `fetch_progress` what a W&B download is at (what, done,
    total or None). `refresh` refetches W&B runs instead of reading them from the local cache."""
    from pathlib import Path

    from diagnose.parsers import github
    from diagnose.parsers.run_model import build
    from diagnose.parsers.sources import resolve, temp_dir

    with temp_dir() as tmp:
        # A GitHub thread is read through its API, every piece of the posts it names into this one model (the
        # pipeline keeps a thread's runs apart: parsers/threads.py).
        inputs = []
        for src in sources:
            if (ref := github.parse_thread_url(src)) is not None:
                thread = github.fetch(ref)
                inputs += [p.input for p in github.pieces(thread, github.selected(thread), Path(tmp)).pieces]
            else:
                inputs += resolve([src], Path(tmp))
        return build(inputs, progress, refresh, fetch_progress)
