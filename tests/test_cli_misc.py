"""Small CLI contracts: help, the schema, usage errors."""
from __future__ import annotations

from conftest import run_cli


def test_schema_and_help() -> None:
    proc = run_cli("parse", "--schema")
    assert proc.returncode == 0 and proc.stdout.startswith("steps: source, line, rank, node, ts, origin")
    helped = run_cli("--help")
    assert helped.returncode == 0 and all(c in helped.stdout for c in ("parse", "report", "plan", "rules"))


def test_usage_errors_exit_2() -> None:
    assert run_cli("parse").returncode == 2
    assert run_cli("report").returncode == 2
    assert run_cli("nonsense").returncode == 2
