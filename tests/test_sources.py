"""Inputs: stdin, directories, URLs over a loopback HTTP server, and bad input (one line, exit 2, no traceback)."""
from __future__ import annotations

import functools
import http.server
import json
import shutil
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from conftest import SAMPLES, run_cli

LOG = SAMPLES / "ds_zero0" / "train.log"


def _summary(*args: str, stdin: bytes | None = None) -> dict:
    proc = run_cli("parse", *args, "--format", "json", stdin=stdin)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def test_stdin_reads_like_a_file() -> None:
    from_file = _summary(str(LOG))
    from_stdin = _summary("-", stdin=LOG.read_bytes())
    assert from_stdin["frames"] == from_file["frames"]
    assert from_stdin["sources"][0]["name"] == "<stdin>"


def test_directory_walk_sniffs_each_file(tmp_path: Path) -> None:
    run = tmp_path / "run"
    (run / "logs").mkdir(parents=True)
    (run / "logs" / "rank0.out").write_bytes(LOG.read_bytes())
    (run / "cfg.json").write_text((SAMPLES / "ds_zero0" / "ds_config.json").read_text())
    (run / "go").write_text((SAMPLES / "ds_zero2_debug_env" / "launch.sh").read_text())  # no suffix: sniffed
    (run / "model.bin").write_bytes(bytes(range(256)) * 64)  # skipped: binary
    (run / "notes.md").write_text("read, though nothing in it is recognised")
    # No name decides: an LSF job's output, JSON lines; program source is skipped with why.
    (run / "train.o4242").write_text("".join(f"step {i} loss {3 - i / 100:.3f} time {0.5 + i / 1000:.3f}\n"
                                             for i in range(1, 6)))
    (run / "metrics.jsonl").write_text("".join(f'{{"step": {i}, "loss": {2 - i / 10}, "step_time": 0.41}}\n'
                                               for i in range(1, 6)))
    (run / "train.py").write_text("import torch\n\n\ndef main():\n    print('step 1 loss 2.0')\n")
    doc = _summary(str(run))
    kinds = {Path(s["name"]).name: s["kind"] for s in doc["sources"]}
    assert kinds == {"cfg.json": "ds_config", "go": "launch_script", "rank0.out": "log", "notes.md": "log",
                     "train.o4242": "log", "metrics.jsonl": "log"}
    skipped = {Path(s["name"]).name: s["why"] for s in doc["skipped"]}
    assert "binary" in skipped["model.bin"] and "program source" in skipped["train.py"]
    assert doc["facts"]["env"]["CUDA_LAUNCH_BLOCKING"] == "1"
    assert doc["facts"]["zero_stage"] == 0


class _Handler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture()
def http_root(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(_Handler, directory=str(tmp_path)))
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", tmp_path
    finally:
        server.shutdown()


def test_url_of_a_raw_log(http_root: tuple[str, Path]) -> None:
    base, root = http_root
    (root / "raw.log").write_bytes(LOG.read_bytes())
    doc = _summary(f"{base}/raw.log")
    assert doc["frames"] == _summary(str(LOG))["frames"]


def test_url_errors(http_root: tuple[str, Path]) -> None:
    base, _ = http_root
    proc = run_cli("parse", f"{base}/missing.log")
    assert proc.returncode == 2 and "HTTP 404" in proc.stderr and proc.stderr.count("\n") == 1
    proc = run_cli("parse", "http://127.0.0.1:9/x.log")  # nothing listens on the discard port
    assert proc.returncode == 2 and "download failed" in proc.stderr


def _write(path: Path, data: bytes | None) -> Path:
    if data is None:
        path.mkdir()
    else:
        path.write_bytes(data)
    return path


@pytest.mark.parametrize("name, data", [("t.log", b"hello\nworld\n"), ("x.json", b'{"a": 1}')])
def test_any_text_gives_a_report_of_what_was_read(tmp_path: Path, name: str, data: bytes) -> None:
    """Issue 30, must 8: printable text is never refused; the report says nothing was recognised and what to
    paste."""
    path = _write(tmp_path / name, data)
    proc = run_cli("report", str(path), "--format", "json")
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["verdict"].startswith("Not enough to tell: no step line read")
    assert doc["sources"][0]["why"].startswith("nothing recognised in ")
    assert doc["next_steps"][0].startswith("Paste the lines that print step times")


@pytest.mark.parametrize("name, data, why", [
    ("missing.log", b"", "no such file or directory"),
    ("empty", None, "directory holds no log"),
    ("b.log", b"\x00\x01\x02" * 500, "binary file"),
    ("e.log", b"", "empty"),
    ("blank.log", b"\n \n\t\n", "empty"),
])
def test_bad_input_is_one_line_and_exit_2(tmp_path: Path, name: str, data: bytes | None, why: str) -> None:
    path = tmp_path / name if name == "missing.log" else _write(tmp_path / name, data)
    proc = run_cli("parse", str(path))
    assert proc.returncode == 2
    assert proc.stderr.count("\n") == 1 and why in proc.stderr and str(path) in proc.stderr
    assert "Traceback" not in proc.stderr


def test_inputs_are_never_modified(tmp_path: Path) -> None:
    p = tmp_path / "ro.log"
    p.write_bytes(LOG.read_bytes())
    p.chmod(0o444)
    before = p.stat().st_mtime_ns, p.read_bytes()
    assert run_cli("parse", str(p), "--out", str(tmp_path / "out")).returncode == 0
    assert (p.stat().st_mtime_ns, p.read_bytes()) == before


@pytest.mark.slow
def test_a_report_saved_into_its_run_folder_is_not_read_back(tmp_path: Path) -> None:
    """`diagnose report logs/ -o logs/report.md`, run twice: the second run reads the logs, not the first report
    (its quoted evidence lines would count twice), in every format; `--force` may replace it. Named on the command
    line, a report is read like any file."""
    from conftest import SAMPLES, run_cli
    from diagnose.parsers.sources import _walk

    run = tmp_path / "run"
    shutil.copytree(SAMPLES / "ds_zero0", run)
    first = run_cli("report", str(run), "--format", "json", "-o", "-")
    for suffix in ("md", "html", "json", "txt"):
        assert run_cli("report", str(run), "-o", str(run / f"report.{suffix}")).returncode == 0
    assert run_cli("compare", str(run), str(SAMPLES / "ds_zero2_bf16"), "-o", str(run / "cmp.md")).returncode in (0, 1)
    assert sorted(p.name for p in _walk(run)) == ["ds_config.json", "launch.sh", "train.log"]
    again = run_cli("report", str(run), "-o", str(run / "report.md"), "--force")
    assert again.returncode == 0, again.stderr
    second = run_cli("report", str(run), "--format", "json", "-o", "-")
    assert json.loads(second.stdout)["sources"] == json.loads(first.stdout)["sources"]
