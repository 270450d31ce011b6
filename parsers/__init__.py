"""Sources (logs, configs, launch scripts, URLs) -> one typed run model (polars frames + run facts)."""
from __future__ import annotations

from collections.abc import Callable

from diagnose.parsers.errors import InputError
from diagnose.parsers.run_model import RunModel, build
from diagnose.parsers.sources import resolve, temp_dir

__all__ = ["InputError", "RunModel", "parse"]


def parse(sources: list[str], progress: Callable[[int], None] | None = None, refresh: bool = False,
          fetch_progress: Callable[[str, int, int | None], None] | None = None) -> RunModel:
    """Read every source into one run model. Raises InputError for input that cannot be read at all.

    `progress` is told the bytes of each log chunk read; `fetch_progress` what a W&B download is at (what, done,
    total or None). `refresh` refetches W&B runs instead of reading them from the local cache."""
    from pathlib import Path

    with temp_dir() as tmp:
        return build(resolve(sources, Path(tmp)), progress, refresh, fetch_progress)
