"""What a newcomer trips on: a CLI that explains itself and refuses what it cannot do, and reports in plain words."""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import typer

from conftest import SAMPLES, run_cli
from diagnose.cli import app
from diagnose.rules import load_all

SEED = SAMPLES / "synthetic" / "seed_zero3_launch_blocking"
ALL_RUNS = sorted(p for p in SAMPLES.iterdir() if (p / "train.log").is_file()) + sorted(
    p for p in (SAMPLES / "synthetic").iterdir() if p.is_dir())


@pytest.mark.parametrize("command", ["report", "compare"])
@pytest.mark.parametrize("name", ["report.pdf", "report"])
def test_an_output_name_whose_suffix_names_no_format_is_refused(tmp_path: Path, command: str, name: str) -> None:
    sides = [str(SAMPLES / "ds_zero0")] * (2 if command == "compare" else 1)
    proc = run_cli(command, *sides, "-o", str(tmp_path / name))
    assert proc.returncode == 2 and ".html, .md, .json or .txt" in proc.stderr and "Traceback" not in proc.stderr
    assert not (tmp_path / name).exists()
    ok = run_cli(command, *sides, "-o", str(tmp_path / name), "--format", "md")
    assert ok.returncode == 0 and (tmp_path / name).read_text().startswith("## diagnose")


@pytest.mark.slow
def test_every_option_of_every_command_says_what_it_does_and_flags_look_like_flags() -> None:
    root = typer.main.get_command(app)
    commands = root.commands  # type: ignore[attr-defined]
    assert {"report", "compare", "serve", "plan", "parse", "rules"} <= set(commands)
    for name, cmd in commands.items():
        for param in cmd.params:
            if param.param_type_name == "option" and param.name != "help":
                assert param.help and len(param.help) > 8, f"{name} {param.opts} has no help"
        proc = run_cli(name, "--help")
        assert proc.returncode == 0 and "<bool>" not in proc.stdout, name
    assert "--force" in run_cli("report", "--help").stdout


def test_plan_reads_at_80_columns_and_marks_nothing_when_nothing_fits() -> None:
    env = {"COLUMNS": "80"}
    proc = run_cli("plan", "--params", "175e9", "--gpus", "2", "--gpu-memory", "16", "--seq-len", "4096",
                   "--micro-batch", "8", "--hidden", "12288", "--layers", "96", "--heads", "96", env=env)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert all(len(line) <= 80 for line in lines), max(lines, key=len)
    table = [line for line in lines if re.search(r"\b(ddp|zero\d)", line)]
    assert table and all(" * " not in line and "yes" not in line for line in table)
    assert "Nothing fits as configured: more GPUs" in proc.stdout
    header = next(line for line in lines if "option" in line)
    for col in ("states", "DS est.", "total", "traffic", "fits"):
        assert col in header
    fits = run_cli("plan", "--params", "1.3e9", "--gpus", "8", "--gpu-memory", "80", env=env)
    assert re.search(r"\b(ddp|zero\d\S*) \*", fits.stdout) and "* = recommended" in fits.stdout
    assert all(len(line) <= 80 for line in fits.stdout.splitlines())


def test_report_to_a_file_also_prints_the_verdict(tmp_path: Path) -> None:
    proc = run_cli("report", str(SEED), "-o", str(tmp_path / "r.html"))
    assert proc.returncode == 0 and proc.stdout.startswith("Most likely cause: CUDA_LAUNCH_BLOCKING=1")


@pytest.mark.slow
def test_seq_len_gives_tokens_and_mfu_where_the_logs_lack_it() -> None:
    log = str(SEED / "slurm-1234.out")  # the sequence length is in train.sh, not in the log
    plain = json.loads(run_cli("report", log, "-f", "json", "-o", "-").stdout)
    assert plain["metrics"]["tokens_per_sec"] is None and plain["metrics"]["mfu"] is None
    given = json.loads(run_cli("report", log, "--seq-len", "2048", "-f", "json", "-o", "-").stdout)
    assert given["metrics"]["tokens_per_sec"] == pytest.approx(given["metrics"]["samples_per_sec"] * 2048)
    assert given["metrics"]["mfu"] is not None
    # where the sources hold it (the launch script), theirs wins: it is what ran
    full = json.loads(run_cli("report", str(SEED), "-f", "json", "-o", "-").stdout)
    both = json.loads(run_cli("report", str(SEED), "--seq-len", "8", "-f", "json", "-o", "-").stdout)
    assert both["metrics"]["tokens_per_sec"] == full["metrics"]["tokens_per_sec"] is not None


@pytest.mark.parametrize("run", ALL_RUNS, ids=lambda p: str(p.relative_to(SAMPLES)))
def test_the_headline_is_a_short_plain_sentence(run: Path) -> None:
    doc = json.loads(run_cli("report", str(run), "-f", "json", "-o", "-").stdout)
    verdict = doc["verdict"]
    assert len(verdict) <= 200, verdict
    ids = set(load_all())
    assert not any(re.search(rf"(?<![\w-]){re.escape(i)}(?![\w-])", verdict) for i in ids), verdict


@pytest.mark.slow
def test_unknowns_are_words_cpu_runs_are_cpu_runs_and_paths_are_relative(tmp_path: Path) -> None:
    cpu = run_cli("report", str((SAMPLES / "ds_zero0").resolve()), "-f", "md", "-o", "-").stdout
    assert "| processes | 2 processes on the CPU (gloo) |" in cpu
    assert "GPUs" not in cpu.split("### Findings")[0]
    assert '"enabled": true' not in cpu  # no bf16 tensor-core advice in a CPU run's recommended config
    assert str(SAMPLES.resolve()) not in cpu and "`train.log" in cpu  # relative to the sources' folder
    sparse = run_cli("report", str(SAMPLES / "ds_zero0_default_loglevel" / "train.log"), "-f", "md", "-o", "-").stdout
    table = sparse.split("### Findings")[0]
    assert "?" not in table.replace("training-run report", "") and "not in the logs" in table
    assert "backend: ?" not in sparse and "launcher: ?" not in sparse
    gpu = run_cli("report", str(SAMPLES / "synthetic" / "multinode_socket"), "-f", "md", "-o", "-").stdout
    assert re.search(r"\| GPUs \| \d+ \(2 nodes x \d+\) GPUs", gpu), gpu.split("### Findings")[0]



def test_version() -> None:
    proc = run_cli("--version")
    assert proc.returncode == 0 and re.fullmatch(r"diagnose \d+\.\d+\.\d+\n", proc.stdout), proc.stdout


def test_a_wandb_run_folder_is_one_run() -> None:
    """The README's own example: an offline run directory (its files/ and logs/ folders are parts of it)."""
    run_dir = next((SAMPLES / "hf_trainer_ddp_bf16" / "wandb").glob("offline-run-*"))
    proc = run_cli("report", str(run_dir), "--format", "json", "-o", "-")
    assert proc.returncode == 0 and "runs found" not in proc.stderr, proc.stderr
    doc = json.loads(proc.stdout)
    assert "runs" not in doc and [s["kind"] for s in doc["sources"]] == ["wandb_run"]
    assert "median step" in doc["verdict"]  # its history gives the step clock


def test_progress_reports_bytes_and_lines_as_chunks_are_read(tmp_path: Path, monkeypatch) -> None:
    from diagnose.parsers import lines as lines_module
    from diagnose.parsers.ingest import ingest_log

    log = SAMPLES / "ds_zero0" / "train.log"
    monkeypatch.setattr(lines_module, "CHUNK_BYTES", 4096)
    calls: list[tuple[int, int]] = []
    with open(log, "rb") as fh:
        result = ingest_log(fh, 0, progress=lambda n, lines=0: calls.append((n, lines)))
    assert len(calls) > 3
    assert sum(n for n, _ in calls) == log.stat().st_size
    assert sum(lines for _, lines in calls) == result.stats.physical_lines == log.read_bytes().count(b"\n")
