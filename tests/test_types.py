"""The package type-checks strictly (issue 34): mypy --strict over diagnose/, as pyproject.toml configures it, so a
fact name, a clock or a finding id spelled wrong against parsers/names.py, or a polars scalar used as a number
unchecked (parsers/scalars.py), fails here."""
from __future__ import annotations

import subprocess
import sys

from conftest import ROOT


def test_mypy_strict_passes_on_the_package() -> None:
    proc = subprocess.run([sys.executable, "-m", "mypy", "--no-error-summary"], cwd=ROOT, capture_output=True,
                          text=True, timeout=900)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
