"""The layering contract in pyproject.toml ([tool.importlinter]), checked by import-linter: readers < analysis <
rendering < the pipeline < the CLI and the server, and no import cycle between sibling modules (issue 22)."""
from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

from conftest import ROOT


def _lint_imports() -> subprocess.CompletedProcess[str]:
    exe = shutil.which("lint-imports") or str(Path(sys.executable).parent / "lint-imports")
    return subprocess.run([exe, "--config", str(ROOT / "pyproject.toml")], cwd=ROOT, capture_output=True, text=True,
                          timeout=120)


def test_the_layers_hold() -> None:
    proc = _lint_imports()
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    assert "5 kept, 0 broken" in proc.stdout


def test_a_cycle_or_an_upward_import_would_be_caught(tmp_path: Path) -> None:
    """The contract is not vacuous: the same check over a copy where the server imports the CLI (the cycle this
    issue removed) and a reader imports a renderer fails on both."""
    copy = tmp_path / "tree"
    for folder in ("parsers", "diagnose", "reports"):
        shutil.copytree(ROOT / folder, copy / folder, ignore=shutil.ignore_patterns("__pycache__", "static",
                                                                                   "templates"))
    shutil.copy(ROOT / "pyproject.toml", copy / "pyproject.toml")
    serve = copy / "diagnose" / "serve.py"
    serve.write_text(serve.read_text() + "\nfrom diagnose import cli as _cli  # noqa: E402\n")
    lines = copy / "parsers" / "lines.py"
    lines.write_text(lines.read_text() + "\nfrom reports import inert as _inert  # noqa: E402\n")
    exe = shutil.which("lint-imports") or str(Path(sys.executable).parent / "lint-imports")
    proc = subprocess.run([exe, "--config", str(copy / "pyproject.toml")], cwd=copy, capture_output=True, text=True,
                          timeout=120, env={"PYTHONPATH": str(copy), "PATH": "/usr/bin:/bin"})
    assert proc.returncode != 0
    assert "readers import no analysis, rendering or front door BROKEN" in proc.stdout
    assert "no import cycles between sibling modules BROKEN" in proc.stdout
