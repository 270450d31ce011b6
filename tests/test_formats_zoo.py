"""The format zoo (issue 30, must 9): ../shared/tools/formats_zoo.py renders logs from the progress-line layouts of
../shared/reference/formats (each taken from a library's own printing code) with known step times, runs `diagnose
report` on each and checks what it read. No layout has a line kind of its own: the template reader learns them.
The tool runs in this process, and so does each `diagnose report` it starts (conftest.run_cli: 43 interpreter
start-ups are most of its time as children). Skipped where ../shared is not beside the checkout."""
from __future__ import annotations

import contextlib
import importlib.util
import io
import re
import subprocess
import sys
import types
from pathlib import Path

import pytest

from conftest import run_cli

pytestmark = pytest.mark.slow  # seconds to minutes: `pytest -m "not slow"` between edits

ROOT = Path(__file__).resolve().parents[1]
ZOO = ROOT.parent / "shared" / "tools" / "formats_zoo.py"
LAYOUTS = ROOT.parent / "shared" / "reference" / "formats"
DIAGNOSE = Path(sys.executable).with_name("diagnose")
# Checks that cannot pass, and why (each stays named here until it does).
KNOWN_MISSES = {
    # `{'loss': ..., 'epoch': 0.02, 'throughput': ...}` with a stamp every logging_steps and no step counter: how
    # many steps lie between two prints is not in the lines (LLaMA-Factory's tqdm bar, which says it, is not in
    # the rendered log), so the stamps give seconds per print, not per step.
    "llamafactory healthy",
}


@pytest.mark.skipif(not ZOO.is_file() or not LAYOUTS.is_dir(), reason="../shared/tools is not beside the checkout")
def test_every_layout_is_read_with_its_step_time_and_cause() -> None:
    spec = importlib.util.spec_from_file_location("formats_zoo", ZOO)
    assert spec is not None and spec.loader is not None
    zoo = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(zoo)

    def run(cmd: list[str], **_: object) -> subprocess.CompletedProcess[str]:
        assert cmd[0] == str(DIAGNOSE), cmd  # the tool starts nothing but diagnose
        return run_cli(*cmd[1:])

    zoo.subprocess = types.SimpleNamespace(run=run)  # type: ignore[attr-defined]
    printed, argv = io.StringIO(), sys.argv
    sys.argv = [str(ZOO), str(DIAGNOSE), str(LAYOUTS)]
    try:
        with contextlib.redirect_stdout(printed), contextlib.suppress(SystemExit):
            zoo.main()
    finally:
        sys.argv = argv
    lines = printed.getvalue().strip().splitlines()
    summary = lines[-1]
    m = re.match(r"format zoo: (\d+)/(\d+) checks pass", summary)
    assert m, printed.getvalue()
    misses = {" ".join(line.split(":")[0].split()[:2]) for line in lines[:-1]}
    assert misses <= KNOWN_MISSES, "\n".join(lines)
    passed, checks = int(m.group(1)), int(m.group(2))
    assert checks >= 40 and passed == checks - len(misses)
