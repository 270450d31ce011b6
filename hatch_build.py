"""Build-time mapping of the card's folders under the one import package (issue 22).

The repository keeps `parsers/`, `diagnose/` and `reports/` side by side (the design card); the wheel holds one
top-level package, `diagnose`, with `diagnose/parsers/` and `diagnose/reports/`. In a checkout the same names resolve
through the symlinks `diagnose/parsers` and `diagnose/reports`, which an editable install uses as they are, so only the
standard wheel copies the folders (a forced include in pyproject.toml would also be copied into site-packages by an
editable install, a stale second copy beside the checkout).
"""
from __future__ import annotations

from typing import Any

from hatchling.builders.hooks.plugin.interface import BuildHookInterface

MAPPED = {"parsers": "diagnose/parsers", "reports": "diagnose/reports"}


class MapFolders(BuildHookInterface):
    def initialize(self, version: str, build_data: dict[str, Any]) -> None:
        if self.target_name == "wheel" and version == "standard":
            build_data["force_include"].update(MAPPED)
