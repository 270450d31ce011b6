"""Malformed, hostile and oversized input: one line and exit 2 (never a traceback, never exit 3), bounded time and
memory, inputs untouched; output paths that cannot be written are exit 2 too."""
from __future__ import annotations

import gzip
import json
import time
from pathlib import Path

import pytest

from conftest import SAMPLES, run_cli

LOG = SAMPLES / "ds_zero0" / "train.log"


def _one_line_exit_2(proc, *words: str) -> None:
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr and proc.stderr.count("\n") == 1
    for w in words:
        assert w in proc.stderr


BILLION_LAUGHS = "a: &a [x, x, x, x, x, x, x, x, x]\n" + "".join(
    f"{chr(98 + i)}: &{chr(98 + i)} [{', '.join(['*' + chr(97 + i)] * 9)}]\n" for i in range(8)) + \
    "distributed_type: MULTI_GPU\nnum_processes: *i\ncompute_environment: LOCAL_MACHINE\n"


@pytest.mark.parametrize("name, data, why", [
    ("bomb.yaml", BILLION_LAUGHS, "through its aliases: refused"),
    ("deep.json", '{"train_batch_size": 1, "x": ' + "[" * 100_000 + "]" * 100_000 + "}", "nested too deeply"),
    ("deep.yaml", "distributed_type: MULTI_GPU\nnum_processes: 1\nx: " + "[" * 200 + "]" * 200 + "\n", "nested"),
])
def test_config_bombs_are_refused_quickly(tmp_path: Path, name: str, data: str, why: str) -> None:
    p = tmp_path / name
    p.write_text(data)
    start = time.monotonic()
    proc = run_cli("report", str(p))
    assert time.monotonic() - start < 30
    _one_line_exit_2(proc, why)


def test_gzip_bomb_is_refused_within_its_cap(tmp_path: Path) -> None:
    bomb = tmp_path / "train.log.gz"
    with gzip.open(bomb, "wb", compresslevel=9) as gz:
        block = b"\n" * (1 << 20)
        for _ in range(300):  # 300 MiB of newlines in ~300 KB
            gz.write(block)
    start = time.monotonic()
    proc = run_cli("parse", str(bomb))
    assert time.monotonic() - start < 60
    _one_line_exit_2(proc, "compression bomb")
    # refused as it streams, once past the ratio's floor: not after inflating its whole 300 MiB
    assert "expands more than 200x (64 MiB from" in proc.stderr


def test_gzip_absolute_cap_whatever_the_ratio(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from diagnose.parsers import sources as sources_module
    from diagnose.parsers import InputError, parse

    p = tmp_path / "train.log.gz"
    p.write_bytes(gzip.compress(LOG.read_bytes()))
    assert parse([str(p)]).frames["steps"].height > 0
    monkeypatch.setattr(sources_module, "GZIP_ABSOLUTE_CAP", len(LOG.read_bytes()) // 2)
    with pytest.raises(InputError, match="expands past"):
        parse([str(p)])


def test_truncated_and_corrupt_gzip(tmp_path: Path) -> None:
    whole = gzip.compress(LOG.read_bytes())
    cut = tmp_path / "cut.log.gz"
    cut.write_bytes(whole[: len(whole) // 2])
    proc = run_cli("parse", str(cut), "--format", "json")
    assert proc.returncode == 0, proc.stderr
    src = json.loads(proc.stdout)["sources"][0]
    assert src["recognised"] > 0 and "truncated gzip" in src["note"]
    bad = tmp_path / "bad.log.gz"
    bad.write_bytes(whole[:10] + b"\xff" * 200)
    _one_line_exit_2(run_cli("parse", str(bad)), str(bad))


def test_nul_padded_tail_is_read_with_a_note(tmp_path: Path) -> None:
    p = tmp_path / "crashed.log"
    p.write_bytes(LOG.read_bytes()[:3000] + b"\x00" * 5000)
    proc = run_cli("parse", str(p), "--format", "json")
    assert proc.returncode == 0, proc.stderr
    assert "NUL-padded tail" in json.loads(proc.stdout)["sources"][0]["note"]


def test_a_hole_of_nuls_between_runs_is_read_through(tmp_path: Path) -> None:
    # A node crashed mid-write and the job started again, appending to the same file: a block of zeros sits between
    # the two runs' lines, inside the first block read. The whole file was refused as binary.
    from diagnose.parsers import parse
    from diagnose.parsers.sources import is_binary
    text = LOG.read_bytes()
    cut = text.index(b"\n", len(text) // 4) + 1
    p = tmp_path / "restarted.log"
    p.write_bytes(text[:cut - 20] + b"\x00" * 4096 + b"\n" + text[cut:])
    whole, holed = parse([str(LOG)]).frames["steps"], parse([str(p)]).frames["steps"]
    assert holed.height >= whole.height - 1 and holed["global_step"].max() == whole["global_step"].max()
    # a binary file's NULs are scattered, not one run
    assert is_binary(bytes(range(256)) * 64) and is_binary(b"PK\x03\x04\x14\x00\x00\x00" + b"\x00ab" * 400)
    assert not is_binary(b"step 1\n" + b"\x00" * 1024 + b"step 2\n")


@pytest.mark.parametrize("name, data", [
    ("trainer_state.json", '{"log_history": [{"step": 1e40, "loss": NaN}, {"step": Infinity, "loss": 1}]}'),
    ("trainer_state2.json", '{"log_history": [{"step": "ten", "loss": [1]}, 5, null]}'),
])
def test_absurd_numbers_and_wrong_types_are_exit_2_or_read(tmp_path: Path, name: str, data: str) -> None:
    p = tmp_path / name
    p.write_text(data)
    proc = run_cli("report", str(p), "--format", "json")
    assert proc.returncode in (0, 2) and "Traceback" not in proc.stderr
    if proc.returncode == 0:
        assert "NaN" not in proc.stdout and "Infinity" not in proc.stdout  # strict JSON


def test_legacy_wandb_files_of_the_wrong_type(tmp_path: Path) -> None:
    files = tmp_path / "run-20260101_000000-bad00001" / "files"
    files.mkdir(parents=True)
    (files / "wandb-summary.json").write_text("[1, 2, 3]")
    (files / "wandb-metadata.json").write_text('"just a string"')
    _one_line_exit_2(run_cli("report", str(files.parent)), "not a mapping")


def test_output_path_problems_are_exit_2(tmp_path: Path) -> None:
    (tmp_path / "a_dir").mkdir()
    _one_line_exit_2(run_cli("report", str(LOG), "-o", str(tmp_path / "a_dir"), "--force"), "a_dir")
    (tmp_path / "file").write_text("x")
    _one_line_exit_2(run_cli("report", str(LOG), "-o", str(tmp_path / "file" / "report.md")), "cannot write")


def test_final_link_refuses_a_file_that_appeared(tmp_path: Path) -> None:
    import typer

    from diagnose.cli import _write_atomic

    target = tmp_path / "report.md"
    target.write_text("someone else's")
    with pytest.raises(typer.Exit) as e:
        _write_atomic(target, "ours", force=False)
    assert e.value.exit_code == 2 and target.read_text() == "someone else's"
    assert [p.name for p in tmp_path.iterdir()] == ["report.md"]  # no temporary file left behind


def test_dash_o_writes_to_stdout_and_json_is_strict() -> None:
    proc = run_cli("report", str(LOG), "-o", "-", "--format", "json")
    assert proc.returncode == 0
    json.loads(proc.stdout, parse_constant=lambda c: pytest.fail(f"non-strict JSON constant {c}"))
    text = run_cli("report", str(LOG), "-o", "-")
    assert text.returncode == 0 and "diagnose" in text.stdout


def test_fifos_are_streams_or_skipped(tmp_path: Path) -> None:
    import os
    import subprocess
    import sys

    from conftest import ROOT

    run = tmp_path / "run"
    run.mkdir()
    (run / "train.log").write_bytes(LOG.read_bytes())
    os.mkfifo(run / "pipe.log")  # in a directory: listed as skipped, never opened (it would block)
    proc = run_cli("parse", str(run), "--format", "json", timeout=60, process=True)  # a FIFO may block: a timeout
    assert proc.returncode == 0, proc.stderr
    assert [s["name"].endswith("pipe.log") for s in json.loads(proc.stdout)["skipped"]] == [True]
    # named explicitly, with a writer: read as a stream
    fifo = tmp_path / "explicit.log"
    os.mkfifo(fifo)
    reader = subprocess.Popen([sys.executable, "-m", "diagnose", "parse", str(fifo), "--format", "json"],
                              cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    with open(fifo, "wb") as w:
        w.write(LOG.read_bytes())
    out, err = reader.communicate(timeout=60)
    assert reader.returncode == 0, err
    assert json.loads(out)["sources"][0]["recognised"] > 0


def test_an_output_never_replaces_an_input_nor_creates_folders(tmp_path: Path) -> None:
    log = tmp_path / "train.md"  # a name a report could have: read as a log, and the -o target
    log.write_bytes(LOG.read_bytes())
    before = log.read_bytes()
    for args in (["report", str(log), "-o", str(log), "--force"], ["report", str(tmp_path), "-o", str(log), "--force"]):
        _one_line_exit_2(run_cli(*args), "is one of the inputs")
    assert log.read_bytes() == before
    missing = tmp_path / "no" / "such" / "report.md"
    _one_line_exit_2(run_cli("report", str(log), "-o", str(missing)), "does not exist")
    assert not (tmp_path / "no").exists()


@pytest.mark.slow
def test_parse_out_follows_the_output_rules(tmp_path: Path) -> None:
    a_file = tmp_path / "frames"
    a_file.write_text("x")
    _one_line_exit_2(run_cli("parse", str(LOG), "--out", str(a_file)), "a file, not a folder")
    folder = tmp_path / "parsed"
    assert run_cli("parse", str(LOG), "--out", str(folder)).returncode == 0
    facts = (folder / "facts.json").read_text()
    _one_line_exit_2(run_cli("parse", str(LOG), "--out", str(folder)), "--force")
    assert (folder / "facts.json").read_text() == facts
    assert run_cli("parse", str(LOG), "--out", str(folder), "--force").returncode == 0
    _one_line_exit_2(run_cli("parse", str(LOG), "--out", str(tmp_path / "x" / "y")), "does not exist")


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="no /dev/full")
def test_a_full_disk_and_a_closed_pipe_are_one_line_and_exit_2() -> None:
    import subprocess
    import sys

    with open("/dev/full", "w") as full:
        proc = subprocess.run([sys.executable, "-m", "diagnose", "report", str(LOG), "-o", "-", "--format", "json"],
                              stdout=full, stderr=subprocess.PIPE, text=True, timeout=120)
    _one_line_exit_2(proc, "cannot write the output", "No space left")
    proc = subprocess.Popen([sys.executable, "-m", "diagnose", "report", str(SAMPLES / "ds_zero0"), "-o", "-",
                             "--format", "html"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()  # the reader went away (`| head`)
    err = proc.stderr.read()
    assert proc.wait(timeout=120) == 2 and err.count("\n") == 1 and "Broken pipe" in err, err


def test_numbers_past_64_bits_are_set_aside_not_fatal(tmp_path: Path) -> None:
    p = tmp_path / "nccl.log"
    p.write_text("node-0:235:680 [3] NCCL INFO comm 0x5647 rank 3 nRanks 4 nNodes 1 localRanks 99999999999999999999 "
                 "localRank 3 MNNVL 0\n" + LOG.read_text())
    proc = run_cli("report", str(p), "--format", "json", "-o", "-")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["faults"] == []


@pytest.mark.slow
def test_control_characters_from_inputs_are_shown_not_obeyed(tmp_path: Path) -> None:
    """A file name and an env value carrying an OSC window title, a screen clear and a right-to-left override."""
    name = tmp_path / "run\x1b]0;pwned\x07\u202e.log"
    name.write_text("export NCCL_SOCKET_IFNAME='eth0\x1b[2J\x1b[H'\n" + LOG.read_text())
    for fmt in ("text", "md"):
        proc = run_cli("report", str(tmp_path), "--format", fmt, "-o", "-")
        assert proc.returncode == 0, proc.stderr
        for raw in ("\x1b", "\x07", "\u202e"):
            assert raw not in proc.stdout and raw not in proc.stderr, (fmt, raw)
        assert "\\x1b" in proc.stdout  # shown as its escape
    missing = run_cli("report", str(tmp_path / "gone\x1b[2J.log"))
    _one_line_exit_2(missing, "\\x1b[2J")
    assert "\x1b" not in missing.stderr


def test_an_output_is_never_written_over_a_fifo_or_a_device(tmp_path: Path) -> None:
    import os
    import stat

    fifo = tmp_path / "out.md"
    os.mkfifo(fifo)
    for target in (fifo, Path("/dev/null")):
        r = run_cli("report", str(SAMPLES / "ds_zero0"), "-o", str(target), "-f", "md", "--force",
                    process=True)  # opening a FIFO to write blocks: a child can be stopped at the timeout
        assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1, r.stderr
        assert "regular file only" in r.stderr
    assert stat.S_ISFIFO(os.stat(fifo).st_mode) and stat.S_ISCHR(os.stat("/dev/null").st_mode)


def test_a_bad_or_busy_port_is_one_line_and_exit_2() -> None:
    import socket

    r = run_cli("serve", "--port", "99999")
    assert r.returncode == 2 and r.stderr.strip().splitlines() == ["diagnose: error: --port 99999: a TCP port is "
                                                                    "1-65535"]
    with socket.create_server(("127.0.0.1", 0)) as busy:
        port = busy.getsockname()[1]
        r = run_cli("serve", "--port", str(port))
    assert r.returncode == 2 and "cannot listen on 127.0.0.1" in r.stderr and "Traceback" not in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize("name, lines", [
    ("year0.log", [f"[0000-01-01 10:00:0{i},000] [INFO] [logging.py:96:log_dist] [Rank 0] step={i}, skipped=0, "
                   "lr=[1e-4], mom=[[0.9, 0.999]]" for i in range(1, 6)]),
    ("huge.log", [f"step {i} loss 2.5 time {'9' * 40 if i % 2 else '1e400'}" for i in range(1, 6)]),
])
def test_impossible_stamps_and_numbers_give_a_report(tmp_path: Path, name: str, lines: list[str]) -> None:
    log = tmp_path / name
    log.write_text("\n".join(lines) + "\n")
    r = run_cli("report", str(log), "-f", "json", "-o", "-")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["metrics"]["steps"]["p50_s"] is None  # no step time out of them


def test_the_tools_own_messages_are_not_redacted() -> None:
    r = run_cli("serve", "--token", "")
    assert r.returncode == 2 and "--token is empty" in r.stderr and "[REDACTED]" not in r.stderr


def test_runs_of_carriage_returns_are_one_redraw(tmp_path: Path) -> None:
    """10 MB of `\\r` made 10 million empty rows (0.8 GB, 100 MB: 6.6 GB); a run of them redraws nothing. Real
    redraws between them stay rows of their own."""
    from diagnose.parsers.lines import ChunkStats, lines_frame

    assert lines_frame(b"\r" * 10_000_000, ChunkStats()).height <= 1
    bars = b"".join(b"\r \r\r %3d%%|##| %d/100 [00:01<00:10, 1.50s/it]" % (i, i) for i in range(1, 101)) + b"\n"
    frame = lines_frame(b"x" * 5000 + bars, ChunkStats())
    assert frame.height == 101 and frame["text"][-1].endswith("100/100 [00:01<00:10, 1.50s/it]")
    log = tmp_path / "cr.log"
    log.write_bytes(b"\r" * 20_000_000)
    r = run_cli("report", str(log), "-f", "json", "-o", str(tmp_path / "out.json"))
    assert r.returncode == 2 and "empty" in r.stderr


@pytest.mark.parametrize("encoding, mark", [("utf-16-le", b"\xff\xfe"), ("utf-16-be", b"\xfe\xff"),
                                            ("utf-16-le", b""), ("utf-16-be", b"")])
@pytest.mark.parametrize("streamed", [False, True])
def test_a_utf16_log_is_read_as_its_text(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, encoding: str, mark: bytes,
                                         streamed: bool) -> None:
    # Windows PowerShell 5's `python train.py > train.log` writes UTF-16 with a byte-order mark: a NUL beside every
    # ASCII character, which read as a binary file and was refused. Small files are read whole, large ones streamed.
    from diagnose.parsers import parse
    from diagnose.parsers import run_model
    if streamed:
        monkeypatch.setattr(run_model, "CONFIG_MAX_BYTES", 1024)
    text = LOG.read_text()
    p = tmp_path / "train.log"
    data = mark + text.replace("\n", "\r\n").encode(encoding)
    p.write_bytes(data)
    got, want = parse([str(p)]), parse([str(LOG)])
    assert got.frames["steps"]["global_step"].to_list() == want.frames["steps"]["global_step"].to_list()
    assert got.frames["steps"].height > 10
    assert [s.kind for s in got.sources] == [s.kind for s in want.sources]
    assert p.read_bytes() == data  # read, never rewritten
