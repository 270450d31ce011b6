"""The layering contract in pyproject.toml ([tool.importlinter]), checked by import-linter: readers < analysis <
rendering < the pipeline < the CLI and the server with every module placed, the card's folders imported only through
the package, and no import cycle between sibling modules (issue 22)."""
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
    assert "3 kept, 0 broken" in proc.stdout


def test_a_cycle_an_upward_import_a_stray_module_or_a_top_level_import_would_be_caught(tmp_path: Path) -> None:
    """The contracts are not vacuous: the same check over a copy where the server imports the CLI (the cycle this
    issue removed), a reader imports a renderer, a module sits in no layer, and a renderer imports the top-level
    `parsers` of a checkout, fails on each."""
    copy = tmp_path / "tree"
    # The symlinks are followed, so the copy holds the package as the wheel does.
    shutil.copytree(ROOT / "diagnose", copy / "diagnose", ignore=shutil.ignore_patterns("__pycache__", "static",
                                                                                       "templates"))
    shutil.copy(ROOT / "pyproject.toml", copy / "pyproject.toml")
    package = copy / "diagnose"
    serve = package / "serve.py"
    serve.write_text(serve.read_text() + "\nfrom diagnose import cli as _cli  # noqa: E402\n")
    lines = package / "parsers" / "lines.py"
    lines.write_text(lines.read_text() + "\nfrom diagnose.reports import inert as _inert  # noqa: E402\n")
    (package / "stray.py").write_text("X = 1\n")
    inert = package / "reports" / "inert.py"
    inert.write_text(inert.read_text() + "\nimport parsers.errors  # noqa: E402\n")
    exe = shutil.which("lint-imports") or str(Path(sys.executable).parent / "lint-imports")
    proc = subprocess.run([exe, "--config", str(copy / "pyproject.toml")], cwd=copy, capture_output=True, text=True,
                          timeout=120, env={"PYTHONPATH": str(copy), "PATH": "/usr/bin:/bin"})
    assert proc.returncode != 0
    assert "readers < analysis < rendering < pipeline < CLI and server BROKEN" in proc.stdout
    assert "diagnose.parsers.lines -> diagnose.reports.inert" in proc.stdout
    assert "diagnose.stray" in proc.stdout  # not in any layer
    assert "the card's folders are imported only through the package BROKEN" in proc.stdout
    assert "no import cycles between sibling modules BROKEN" in proc.stdout
