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


def test_help_and_version_load_nothing_of_the_analysis() -> None:
    """Start-up (issue 35): `--version` loads not even the command line's libraries, `--help` nothing of polars,
    plotly or the analysis (each command imports what it runs)."""
    import subprocess
    import sys

    def loaded(*args: str) -> set[str]:
        proc = subprocess.run([sys.executable, "-X", "importtime", "-m", "diagnose", *args], capture_output=True,
                              text=True, timeout=60)
        assert proc.returncode == 0, proc.stderr[-500:]
        return {line.split("|")[-1].strip().split(".")[0] for line in proc.stderr.splitlines() if "|" in line} | {
            line.split("|")[-1].strip() for line in proc.stderr.splitlines() if "|" in line}

    version = loaded("--version")
    assert not {"typer", "rich", "polars", "plotly"} & version
    helped = loaded("--help")
    assert "typer" in helped and not {"polars", "plotly", "diagnose.engine", "diagnose.parsers.run_model",
                                      "diagnose.metrics"} & helped
