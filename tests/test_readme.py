"""The README's excerpts are the code's output: `docs/excerpts.py --check` regenerates each and compares."""
from __future__ import annotations

import subprocess
import sys

import pytest

from conftest import ROOT


@pytest.mark.slow
def test_readme_excerpts_match_what_the_code_prints() -> None:
    done = subprocess.run([sys.executable, str(ROOT / "docs" / "excerpts.py"), "--check"], cwd=ROOT,
                          capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_developer_notes_name_the_tests_that_need_the_shared_corpus() -> None:
    text = (ROOT / "docs" / "development.md").read_text()
    assert "docs/development.md" in (ROOT / "README.md").read_text()
    for name in ("test_real_corpus.py", "test_corpus.py", "test_compare.py"):
        assert name in text
    assert "../shared/corpus is not beside the checkout" in text


def test_ci_runs_the_readmes_test_command_verbatim() -> None:
    """The README's second command is what CI runs, browser install included (issue 32, must 8)."""
    import re

    blocks = re.findall(r"^```\n(python3 -m venv .*?)\n```", (ROOT / "README.md").read_text(), re.M)
    tests = [b for b in blocks if "pytest" in b]
    assert len(tests) == 1 and "tests/install_chromium.py" in tests[0]
    assert tests[0] in (ROOT / ".ci" / "run").read_text().splitlines()
