from __future__ import annotations

import functools
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SAMPLES = ROOT / "sample_logs"
CORPUS = ROOT.parent / "shared" / "corpus"


@functools.cache
def analysed(path: Path):  # type: ignore[no-untyped-def]  # -> diagnose.pipeline.Analysis
    """Each sample read and diagnosed once per test run, whichever tests ask (issue 34): the analysis is frozen data,
    and the renderers only read it."""
    import diagnose

    return diagnose.analyse(Path(path))


def run_cli(*args: str, stdin: bytes | None = None, timeout: float = 120,
            env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run([sys.executable, "-m", "diagnose", *args], input=stdin, capture_output=True,
                          timeout=timeout, cwd=ROOT, env={**os.environ, **env} if env else None)
    return subprocess.CompletedProcess(proc.args, proc.returncode, proc.stdout.decode("utf-8", "replace"),
                                       proc.stderr.decode("utf-8", "replace"))


@pytest.fixture(scope="session")
def corpus() -> Path:
    if not CORPUS.is_dir():
        pytest.skip("../shared/corpus is not beside the checkout")
    return CORPUS
