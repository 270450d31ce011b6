"""The README's excerpts are the code's output: `docs/excerpts.py --check` regenerates each and compares."""
from __future__ import annotations

import subprocess
import sys

from conftest import ROOT


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
