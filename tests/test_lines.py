"""Line handling on real text: outer prefixes, tqdm redraws and glued lines, CRLF, ANSI, bad UTF-8, long lines."""
from __future__ import annotations

import gzip
from pathlib import Path

import polars as pl
import pytest

from conftest import SAMPLES
from diagnose.parsers import parse

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


@pytest.mark.parametrize("quote", [
    lambda i, line: f"> {line}",                  # a Markdown blockquote in an issue
    lambda i, line: f"> > {line}",                # a reply quoting the quote
    lambda i, line: f"{i:6d}\t{line}",            # cat -n
    lambda i, line: f"logs/train.log:{line}",     # grep -H
])
def test_an_excerpt_quoted_by_hand_reads_as_the_log(tmp_path: Path, quote) -> None:
    # The marks a person adds when quoting a log come off before anything reads it: the line's own counter (here
    # a catboost-style `10:` that opens the line) stays the counter, and a stamp that opens the line still stamps it.
    from diagnose.engine import diagnose
    lines = [f"{10 * i}:\tlearn: 0.6428571\ttotal: {8.5 * i + 0.1 * (i % 3):.2f}s\tremaining: 1m" for i in range(1, 13)]
    m = _parse_text(tmp_path, "Here is my log:\n\n" + "\n".join(quote(i + 3, l) for i, l in enumerate(lines)) + "\n",
                    name="issue.md")
    steps = diagnose(m).metrics.steps
    assert steps is not None and steps.p50_s == pytest.approx(0.85, rel=0.02)
    assert m.frames["steps"].sort("line")["global_step"].to_list()[:3] == [10, 20, 30]
    from diagnose.parsers.lines import plain_text
    assert plain_text("> torchrun --nproc_per_node=8 train.py\n  > > x") == "torchrun --nproc_per_node=8 train.py\nx"


def test_a_loops_own_line_opening_counter_is_no_excerpt_mark(tmp_path: Path) -> None:
    # A line that opens with a number and `:` keeps it where the numbers rise as a counter does (a loop that prints
    # `{step}:` glued to its text, or a `grep -n` of some lines among many, which looks the same).
    lines = [f"{10 * i}:loss 2.48 time {0.85 + 0.01 * (i % 3):.3f}" for i in range(1, 31)]
    m = _parse_text(tmp_path, "\n".join(lines) + "\n")
    assert m.frames["steps"].sort("line")["global_step"].to_list()[:3] == [10, 20, 30]


def test_a_numbered_listing_reads_as_the_log(tmp_path: Path) -> None:
    # `grep -n '' train.log` (every line numbered, one more on each): the numbers come off. Here the TF Model
    # Garden's `TimeHistory: 8.50 seconds, ... between steps 10 and 20` (from memory), timed by its absl stamps only
    # once they open the line again: read with the numbers, the 8.5 s of ten steps were taken as one step's.
    from diagnose.engine import diagnose
    lines = []
    for i in range(1, 31):
        s = int(8.5 * i)
        lines.append(f"I0105 10:{s // 60:02d}:{s % 60:02d}.123456 140234 keras_utils.py:145] TimeHistory: "
                     f"{8.5 + 0.1 * (i % 3):.2f} seconds, 301.18 examples/second between steps {10 * i - 10} and "
                     f"{10 * i}")
        lines.append("I0105 10:00:00.000000 140234 controller.py:440] train | step: 0 | running 10 steps")
    listing = [f"{n + 1}:{line}" for n, line in enumerate(lines)]
    steps = diagnose(_parse_text(tmp_path, "\n".join(listing) + "\n")).metrics.steps
    assert steps is not None and steps.p50_s == pytest.approx(0.85, rel=0.05)
    # darknet's own `1: 1234.5, 1234.5 avg, ...` (a space after the mark) keeps its counter
    dark = [f"{i}: {2.5 - i / 100:.6f}, {2.6 - i / 100:.6f} avg, 0.001000 rate, {0.85 + 0.01 * (i % 3):.6f} seconds, "
            f"{64 * i} images" for i in range(1, 31)]
    m = _parse_text(tmp_path, "\n".join(dark) + "\n")
    assert m.frames["steps"].sort("line")["global_step"].to_list()[:3] == [1, 2, 3]


def test_invalid_utf8_is_counted_and_the_rest_read(tmp_path: Path) -> None:
    text = b"\xff\xfe garbage\n" + STEP_LINE.encode() + b"\n\xc3\x28 more garbage\n"
    m = _parse_text(tmp_path, text)
    assert m.frames["steps"].height == 1
    assert m.sources[0].invalid_utf8 == 3


def test_very_long_line_and_no_trailing_newline(tmp_path: Path) -> None:
    text = "x" * 5_000_000 + "\n" + STEP_LINE
    m = _parse_text(tmp_path, text)
    assert m.frames["steps"]["line"].to_list() == [2]


@pytest.mark.parametrize("compressed", [False, True])
def test_over_long_line_is_cut_counted_and_the_rest_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                         compressed: bool) -> None:
    """A line past MAX_LINE_BYTES is cut there and the rest skipped up to its newline, in a file (positional reads)
    and in a stream (gzip); the lines after it are read with their own numbers."""
    from diagnose.parsers import lines as lines_module

    monkeypatch.setattr(lines_module, "MAX_LINE_BYTES", 4096)
    monkeypatch.setattr(lines_module, "CHUNK_BYTES", 1024)
    raw = (STEP_LINE + "\n" + "y" * 300_000 + "\n" + STEP_LINE.replace("step=12,", "step=13,") + "\n"
           + "z" * 3000 + "\n" + STEP_LINE.replace("step=12,", "step=14,") + "\n").encode()
    p = tmp_path / ("cut.log.gz" if compressed else "cut.log")
    p.write_bytes(gzip.compress(raw) if compressed else raw)
    m = parse([str(p)])
    steps = m.frames["steps"]
    assert steps["global_step"].to_list() == [12, 13, 14]
    assert steps["line"].to_list() == [1, 3, 5]
    assert m.sources[0].lines == 5
    assert m.sources[0].note.startswith("1 line(s) longer than")


def test_carriage_return_redraws_without_newlines_are_read_in_bounded_chunks(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A file of tqdm redraws with no newline at all (a `> out.log` of a progress bar) is one physical line: it is
    cut into chunks at its redraws, every redraw read, all on line 1."""
    from diagnose.parsers import lines as lines_module
    from diagnose.parsers.ingest import ingest_log
    from diagnose.parsers.lines import ChunkStats, iter_chunks

    monkeypatch.setattr(lines_module, "MAX_LINE_BYTES", 2048)
    monkeypatch.setattr(lines_module, "CHUNK_BYTES", 1024)
    bars = "".join(f"\r{n // 20:3d}%|#         | {n}/2000 [00:{n % 60:02d}<01:00,  2.50it/s]" for n in range(1, 501))
    p = tmp_path / "bar.log"
    p.write_text(bars)
    with open(p, "rb") as fh:
        chunks = list(iter_chunks(fh, ChunkStats()))
    assert len(chunks) > 10 and max(c.size for c in chunks) < 1024 + 2048
    assert not chunks[0].continues and all(c.continues for c in chunks[1:])
    for opener in (lambda: open(p, "rb"), lambda: gzip.open(gz, "rb")):
        gz = tmp_path / "bar.log.gz"
        gz.write_bytes(gzip.compress(bars.encode()))
        with opener() as fh:
            result = ingest_log(fh, 0)
        steps = pl.concat(result.parts["steps"])
        assert steps["global_step"].to_list() == list(range(1, 501))
        assert set(steps["line"].to_list()) == {1} and result.stats.physical_lines == 1


def test_dense_chunks_are_parsed_in_pieces(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Blank lines by the million (a chunk of many more rows than a log has) are parsed in bounded pieces, with
    the same rows and line numbers as in one."""
    from diagnose.parsers import lines as lines_module

    text = ("\n" * 5000 + STEP_LINE + "\n") * 3 + "\n" * 7000 + TIMER_LINE + "\n"
    whole = _parse_text(tmp_path, text)
    monkeypatch.setattr(lines_module, "MAX_CHUNK_ROWS", 1000)
    pieces = _parse_text(tmp_path, text)
    for name in ("steps", "timers"):
        assert pieces.frames[name]["line"].to_list() == whole.frames[name]["line"].to_list(), name
    assert pieces.frames["steps"]["line"].to_list() == [5001, 10002, 15003]
    assert pieces.sources[0].lines == whole.sources[0].lines == 22004


def test_primary_stream_is_sampled_past_its_budget(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Millions of distinct steps (or redraws) are sampled systematically once one row per step outgrows the budget;
    the report says so."""
    from diagnose.parsers import thinning as thinning_module

    monkeypatch.setattr(thinning_module, "PRIMARY_BUDGET_ROWS", 100)
    text = "".join(f"\r{n // 10:3d}%|#         | {n}/1000 [00:{n % 60:02d}<01:00,  2.50it/s]" for n in range(1, 1001))
    m = _parse_text(tmp_path, text + "\n")
    steps = m.frames["steps"]
    assert m.thinned == {"steps (lowest rank)": 16}
    assert steps.height <= 100 and steps["global_step"].diff().drop_nulls().unique().to_list() == [16]


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
    from diagnose.parsers import lines as lines_module

    log = SAMPLES / "ds_zero3_ckpt" / "train.log"
    whole = parse([str(log)])
    monkeypatch.setattr(lines_module, "CHUNK_BYTES", 4096)
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
    from diagnose.parsers.ingest import ingest_log

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

    from diagnose.parsers import extract as extract_module

    monkeypatch.setattr(extract_module, "KINDS", tuple(dataclasses.replace(k, layout=None)
                                                        for k in extract_module.KINDS))
    monkeypatch.setattr(extract_module, "_sample_shapes", lambda rows, after: [])


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
    from diagnose.parsers import extract as extract_module

    real = (SAMPLES / log / "train.log").read_text()
    texts = {"real": real, "damaged": _damaged(real.splitlines())}
    # Rows of the hot kinds handed to the regex paths, per text: none for the real log, some for the damaged one.
    handed: dict[str, int] = {}
    general, by_shape = extract_module._general, extract_module._timers_by_shape

    def spy_general(kind, rows):  # type: ignore[no-untyped-def]
        if kind.layout is not None:
            handed[current] = handed.get(current, 0) + rows.height
        return general(kind, rows)

    def spy_shape(rows):  # type: ignore[no-untyped-def]
        handed[current] = handed.get(current, 0) + rows.height
        return by_shape(rows)

    monkeypatch.setattr(extract_module, "_general", spy_general)
    monkeypatch.setattr(extract_module, "_timers_by_shape", spy_shape)
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


def _sample_lines() -> pl.Series:
    """Every line of every sample file (logs, configs, scripts), with the prefixes the line tests name, as text."""
    texts = [p.read_bytes().decode("utf-8", errors="replace") for p in sorted(SAMPLES.rglob("*"))
             if p.is_file() and p.suffix != ".gz"]
    lines = [line for text in texts for line in text.splitlines()]
    edges = ["node-2: [Rank 3] step=1, skipped=0", "[Rank 3]x step=1", "[Rank 12345678901] step=1",
             "[Rank x] then [Rank 4] step=2", "10.0.0.1: 2: [rank5]: [Rank 5] é loss 3", "ランク [Rank 6] 損失 1", ""]
    return pl.Series("text", [*lines, *edges])


def test_the_cheap_prefix_and_rank_passes_read_every_sample_line_as_their_plain_patterns_do() -> None:
    # strip_outer slices off a whole match's length instead of replacing the named pattern, ds_rank casts a whole
    # match's digits instead of a capture group: the same answers on real text, a non-ASCII tail and odd ranks.
    import re

    from diagnose.parsers.extract import ds_rank
    from diagnose.parsers.prefixes import OUTER_PREFIX, strip_outer

    text = _sample_lines()
    assert text.len() > 10_000
    assert strip_outer(text).to_list() == text.str.replace(OUTER_PREFIX, "").to_list()
    plain = [int(m.group(1)) if (m := re.search(r"\[Rank ([0-9]{1,9})\] ", line)) else None for line in text]
    assert ds_rank(text).to_list() == plain
    assert plain.count(None) < len(plain) and plain[-7:] == [3, None, None, 4, 5, 6, None]
