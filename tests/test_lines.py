"""Line handling on real text: outer prefixes, tqdm redraws and glued lines, CRLF, ANSI, bad UTF-8, long lines."""
from __future__ import annotations

import gzip
from pathlib import Path

import polars as pl
import pytest

from conftest import SAMPLES
from parsers import parse

REAL = (SAMPLES / "ds_zero0" / "train.log").read_text().splitlines()
STEP_LINE = next(l for l in REAL if "[Rank 0] step=12," in l)
TIMER_LINE = next(l for l in REAL if l.startswith("[Rank 0] time (ms) | fwd: "))


def _parse_text(tmp_path: Path, text: str | bytes, name: str = "x.log") -> object:
    p = tmp_path / name
    p.write_bytes(text if isinstance(text, bytes) else text.encode())
    return parse([str(p)])


@pytest.mark.parametrize("prefix, rank, node", [
    ("", 0, None),                                                # log_dist's own [Rank 0]
    ("10.1.2.3: ", 0, "10.1.2.3"),                                # pdsh, IP
    ("node-2: ", 0, "node-2"),                                    # pdsh, hostname
    ("gpu017: ", 0, "gpu017"),
    ("3: ", 0, None),                                             # srun --label (DeepSpeed's own [Rank 0] wins)
    ("[1,3]<stdout>:", 0, None),                                  # mpirun
    ("[default3]:", 0, None),                                     # torchrun --tee
    ("2026-11-29T22:22:43.221000000Z ", 0, None),                 # container runtime timestamp
    ("2026-11-29T22:22:43.221Z node-2: ", 0, "node-2"),
])
def test_prefixes_on_a_real_step_line(tmp_path: Path, prefix: str, rank: int, node: str | None) -> None:
    steps = _parse_text(tmp_path, prefix + STEP_LINE + "\n").frames["steps"]
    assert steps.height == 1
    row = steps.row(0, named=True)
    assert row["global_step"] == 12 and row["skipped"] == 0 and row["lr"] == pytest.approx(0.0003)
    assert row["rank"] == rank and row["node"] == node
    assert row["ts"] is not None and row["ts"].hour == int(STEP_LINE[12:14])


@pytest.mark.parametrize("prefix, rank, node", [
    ("", 0, None), ("[rank1]:", 0, None), ("5: ", 0, None), ("[1,5]<stdout>:", 0, None), ("[default5]:", 0, None),
    ("node-7: ", 0, "node-7"),
])
def test_timer_line_prefixes(tmp_path: Path, prefix: str, rank: int, node: str | None) -> None:
    timers = _parse_text(tmp_path, prefix + TIMER_LINE + "\n").frames["timers"]
    assert timers.height == 1 and timers["fwd"][0] > 0 and timers["node"][0] == node
    assert timers["rank"][0] == rank


def test_rank_from_outer_prefix_when_the_line_has_none(tmp_path: Path) -> None:
    line = "MA 0.42 GB         Max_MA 0.42 GB         CA 0.42 GB         Max_CA 0 GB "
    text = "\n".join([f"[1,3]<stdout>:{line}", f"[default5]:{line}", f"7: {line}", f"[rank2]:{line}"]) + "\n"
    assert _parse_text(tmp_path, text).frames["memory"]["rank"].to_list() == [3, 5, 7, 2]


def test_tqdm_glued_lines_from_a_real_log(tmp_path: Path) -> None:
    raw = (SAMPLES / "hf_trainer_deepspeed" / "train.log").read_bytes()
    glued = [l for l in raw.split(b"\n") if b"it/s][Rank 0] time (ms)" in l]
    assert glued, "the recorded log has timer lines glued to progress bars"
    m = _parse_text(tmp_path, b"\n".join(glued) + b"\n")
    assert m.frames["timers"].height == len(glued)
    assert m.frames["steps"].filter(pl.col("origin") == "tqdm").height == len(glued)
    # the same lines with their \r lost (a paste) still split
    flat = b"\n".join(l.replace(b"\r", b"") for l in glued) + b"\n"
    assert _parse_text(tmp_path, flat).frames["timers"].height == len(glued)


def test_tqdm_rate_units_normalised(tmp_path: Path) -> None:
    text = "\r 10%|#         | 5/50 [00:10<01:30,  2.00s/it]\r 12%|#         | 6/50 [00:11<01:20,  4.00it/s]\n"
    steps = _parse_text(tmp_path, text).frames["steps"]
    assert steps["step_time_s"].to_list() == [2.0, 0.25]
    assert steps["global_step"].to_list() == [5, 6] and steps["line"].to_list() == [1, 1]


def test_crlf_ansi_and_line_numbers(tmp_path: Path) -> None:
    text = ("noise\r\n" + STEP_LINE + "\r\n" + "\x1b[1;34mwandb\x1b[0m: Tracking run with wandb version 0.31.0\r\n")
    m = _parse_text(tmp_path, text)
    assert m.frames["steps"]["line"].to_list() == [2]
    assert m.facts.versions["wandb"] == "0.31.0"


def test_invalid_utf8_is_counted_and_the_rest_read(tmp_path: Path) -> None:
    text = b"\xff\xfe garbage\n" + STEP_LINE.encode() + b"\n\xc3\x28 more garbage\n"
    m = _parse_text(tmp_path, text)
    assert m.frames["steps"].height == 1
    assert m.sources[0].invalid_utf8 == 3


def test_very_long_line_and_no_trailing_newline(tmp_path: Path) -> None:
    text = "x" * 5_000_000 + "\n" + STEP_LINE
    m = _parse_text(tmp_path, text)
    assert m.frames["steps"]["line"].to_list() == [2]


def test_gzip_and_truncated_log(tmp_path: Path) -> None:
    raw = (SAMPLES / "ds_zero0" / "train.log").read_bytes()
    cut = raw[: len(raw) // 2]
    cut = cut[: cut.rfind(b"\n") - 20]  # ends mid-line, as a killed job's log does
    p = tmp_path / "killed.log.gz"
    p.write_bytes(gzip.compress(cut))
    m = parse([str(p)])
    full = parse([str(SAMPLES / "ds_zero0" / "train.log")])
    assert 0 < m.frames["steps"].height < full.frames["steps"].height
    assert m.facts.zero_stage == 0 and m.unrecognised_lines >= 0


def test_chunk_boundaries_do_not_lose_blocks_or_lines(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import parsers.lines

    log = SAMPLES / "ds_zero3_ckpt" / "train.log"
    whole = parse([str(log)])
    monkeypatch.setattr(parsers.lines, "CHUNK_BYTES", 4096)
    small = parse([str(log)])
    gz = tmp_path / "train.log.gz"  # a stream: read in order by the main thread, not by positional reads
    gz.write_bytes(gzip.compress(log.read_bytes()))
    small_stream = parse([str(gz)])
    for cut in (small, small_stream):
        for name in ("steps", "timers", "events", "comms", "facts"):
            assert cut.frames[name].height == whole.frames[name].height, name
        assert cut.facts.ds_engine == whole.facts.ds_engine and cut.facts.ds_config == whole.facts.ds_config
        assert cut.sources[0].recognised == whole.sources[0].recognised
        assert cut.sources[0].lines == whole.sources[0].lines
    # Recognised lines are those that produced a row or belong to a block (the config dump's lines do both), once.
    from parsers.ingest import ingest_log

    for path in (log, gz):
        with (gzip.open(path, "rb") if path.suffix == ".gz" else open(path, "rb")) as fh:
            result = ingest_log(fh, 0)
        rows = {line for parts in result.parts.values() for p in parts if "line" in p.columns
                for line in p["line"].to_list()}
        assert result.blocks.lines_used - rows and rows & result.blocks.lines_used
        assert result.used_lines == len(rows | result.blocks.lines_used) == whole.sources[0].recognised


def test_garbled_log_gives_what_can_be_read(tmp_path: Path) -> None:
    """A real log with lines cut short, doubled and shuffled (seeded), as a damaged paste or disk leaves them."""
    import random

    from conftest import run_cli

    rng = random.Random(1)
    out = []
    for line in (SAMPLES / "ds_zero3_ckpt" / "train.log").read_text().splitlines():
        r = rng.random()
        if r < 0.2:
            line = line[: rng.randint(0, len(line))]
        elif r < 0.3:
            line = line + line[::-1]
        elif r < 0.35:
            line = "".join(rng.sample(line, len(line)))
        out.append(line)
    p = tmp_path / "garbled.log"
    p.write_text("\n".join(out))
    m = parse([str(p)])
    assert m.facts.zero_stage == 3 and m.frames["timers"].height > 0 and m.unrecognised_lines > 0
    proc = run_cli("report", str(p), "--format", "md")
    assert proc.returncode == 0, proc.stderr


def _regex_only(monkeypatch: pytest.MonkeyPatch) -> None:
    """Turn off the split-and-check fast paths, leaving every line kind to its regex path."""
    import dataclasses

    import parsers.extract

    monkeypatch.setattr(parsers.extract, "KINDS", tuple(dataclasses.replace(k, layout=None)
                                                        for k in parsers.extract.KINDS))
    monkeypatch.setattr(parsers.extract, "_sample_shapes", lambda rows, after: [])


def _damaged(lines: list[str]) -> str:
    """Hot lines in shapes the fast paths must hand back: odd spacing, a missing field, a word for a number,
    an extra field, a prefix with the separator in it."""
    out = []
    for i, line in enumerate(lines):
        if " | " in line or ", skipped=" in line or "/micro_step=" in line:
            variant = i % 6
            if variant == 1:
                line = line.replace(" | ", " |  ", 1).replace(", ", ",", 1)
            elif variant == 2:
                line = line.rsplit(" | ", 1)[0].rsplit(", ", 1)[0]
            elif variant == 3:
                line = line.replace(": ", ": x", 1).replace("=", "=x", 1) if "time (ms)" in line else line + ", x=1"
            elif variant == 4:
                line = "a | b, c/d " + line
        out.append(line)
    return "\n".join(out) + "\n"


@pytest.mark.parametrize("log", ["ds_zero0", "ds_zero2_ga4_overlap_off", "ds_zero1_ga2_torchrun", "ds_zero3_offload"])
def test_fast_paths_read_exactly_what_the_regex_path_reads(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                           log: str) -> None:
    """The layouts and sampled timer shapes are an optimisation: frames must not change by a value, on real logs
    (old and new timer names, microsteps, several ranks) and on the same lines damaged."""
    import parsers.extract

    real = (SAMPLES / log / "train.log").read_text()
    texts = {"real": real, "damaged": _damaged(real.splitlines())}
    # Rows of the hot kinds handed to the regex paths, per text: none for the real log, some for the damaged one.
    handed: dict[str, int] = {}
    general, by_shape = parsers.extract._general, parsers.extract._timers_by_shape

    def spy_general(kind, rows):  # type: ignore[no-untyped-def]
        if kind.layout is not None:
            handed[current] = handed.get(current, 0) + rows.height
        return general(kind, rows)

    def spy_shape(rows):  # type: ignore[no-untyped-def]
        handed[current] = handed.get(current, 0) + rows.height
        return by_shape(rows)

    monkeypatch.setattr(parsers.extract, "_general", spy_general)
    monkeypatch.setattr(parsers.extract, "_timers_by_shape", spy_shape)
    fast = {}
    for current, text in texts.items():
        fast[current] = _parse_text(tmp_path, text, f"{current}.log")
    assert handed.get("real", 0) == 0 and handed["damaged"] > 0
    _regex_only(monkeypatch)
    for name, text in texts.items():
        slow = _parse_text(tmp_path, text, f"{name}.log")
        for frame in ("steps", "timers"):
            a, b = fast[name].frames[frame], slow.frames[frame]
            assert a.height > 0 and a.equals(b), (name, frame)
    assert fast["real"].frames["timers"]["fwd"].drop_nulls().len() > 0
