"""Raw bytes -> a polars frame of physical lines, in bounded chunks.

Every chunk becomes one frame with `line` (1-based physical line number within the chunk; ingest.py adds the
chunk's offset in its file) and `text`. Lines are split
on `\\n`; CRLF endings are dropped; a line that still holds `\\r` (a tqdm redraw) is split into its segments, which
share the physical line number; ANSI escape sequences are removed. Everything runs as polars expressions over the
whole chunk: there is no per-line Python.
"""
from __future__ import annotations

import io
import os
import re
import stat
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import partial
from typing import BinaryIO

import polars as pl
from diagnose.parsers.scalars import number, whole


CHUNK_BYTES = 32 * 1024 * 1024  # bounds peak memory: a chunk lives as bytes, str and one polars frame at once
ANSI = r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b[()][A-Za-z0-9]|\x1b[=>]"
# Line starts that can be glued mid-line, e.g. a DeepSpeed timer printed right after a tqdm bar without `\r`
# (log_formats.md §0). The split point becomes a `\r`, so the pieces are handled like tqdm redraws.
_GLUED_START = r"\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}\] \[|\[Rank \d+\] |\{'(?:loss|eval_loss|train_runtime)'|\[transformers\] "
_GLUE = r"([^\s\r])(" + _GLUED_START + ")"
# A progress bar's rate closes it whatever it counts (`3.33s/it]`, `1.2it/s]`, `912.35 examples/s]`, `45.1ba/s]`),
# or its postfix does (`1019.75s/it, loss=7.13, ppl=1.25e+3]`).
_AFTER_BAR = r"(\d\s?(?:[A-Za-z]+/s|s/[A-Za-z]+)(?:, [^\]\r]*)?\])([^\s\r])"
# Lines that may need splitting: a `\r` redraw, an escape sequence, or a progress bar's rate, after which the next
# library line may follow without a newline (a paste that lost its `\r`). One cheap pass (this regex measured half
# the cost of `contains_any` over the same literals); the glue patterns then run on those few lines only.
# The last: a bar's `[elapsed<remaining` (before a postfix), written to keep a literal in front for the prefilter.
_MESSY = r"[\r\x1b]|/s\]|s/[A-Za-z]+\]|<[\d?]"


_ANSI_RE = re.compile(ANSI)
_REDRAWN = re.compile(r"^.*\r(?=.)", re.S)
_BAR_GLUED = re.compile(r"^.*?\d\s?(?:[A-Za-z]+/s|s/[A-Za-z]+)(?:, [^\]\r]*)?\](?=\S)")


_MESSY_RE = re.compile(_MESSY)
# Marks a person adds when quoting an excerpt of a log, taken off before anything reads the line: a Markdown
# blockquote (`> `, nested `> > `), `cat -n`'s line number (right-aligned in six columns, then a tab), and the file
# name that `grep -H` puts first (`logs/train.log:`). A line number after it, or `grep -n`'s alone (`123:step 10`), is
# left as printed line by line, since a loop's own `{step}:` looks the same; _line_numbered takes it off where the whole
# excerpt carries one.
_EXCERPT = r"^(?:(?:[ ]{0,3}>[ \t]?)+| {1,5}\d{1,5}\t|[\w./-]+\.(?:log|txt|out|err|o\d+|e\d+):)"
_EXCERPT_RE = re.compile(_EXCERPT)
# A trainer's log has none of them: a long chunk is looked at only where its first lines have them.
EXCERPT_PROBE_ROWS = 64
EXCERPT_MAX_ROWS = 20_000
_REDRAW = b"\r\x00"  # a `\r` as lines_frame marks it: NUL never ends a real line before a newline


def plain_text(text: str) -> str:
    """A log's text as its lines read once cleaned, line numbers kept: colours removed, each line's last tqdm redraw
    kept, a progress bar glued before a line removed (for the few readers that take whole text, such as the
    launch commands a log opens with). Only the lines that need it go through the patterns."""
    lines = text.split("\n")
    for i, line in enumerate(lines):
        if _MESSY_RE.search(line):
            line = lines[i] = _BAR_GLUED.sub("", _REDRAWN.sub("", _ANSI_RE.sub("", line)))
        if (quoted := _EXCERPT_RE.match(line)) is not None:
            lines[i] = line[quoted.end():]
    return "\n".join(lines)


@dataclass
class ChunkStats:
    physical_lines: int = 0
    invalid_utf8: int = 0
    bytes_read: int = 0
    cut_lines: int = 0  # lines longer than MAX_LINE_BYTES: their first MAX_LINE_BYTES were read, the rest skipped


# The longest line a log prints is a config dump or a tensor repr, tens of KB; a line past 1 MiB is data (a base64
# blob, a dumped array, a file with no newlines), not something a line kind reads. It is cut there, counted, and the
# rest is skipped without being held: memory stays bounded by the chunk size whatever the line length.
MAX_LINE_BYTES = 1 << 20
_SCAN = 1 << 16  # bytes per positional read while looking for a line end


@dataclass(frozen=True)
class Chunk:
    """One block of the input that ends on a line boundary; `read` is called on the worker that parses it.

    `continues`: the block starts inside a physical line (the block before ended at a tqdm `\r` redraw, so a file of
    redraws with no newline is still read in bounded blocks). `cut`: its last line was cut at MAX_LINE_BYTES and the
    rest of that line was skipped."""

    read: Callable[[], bytes]
    size: int
    continues: bool = False
    cut: bool = False


def iter_chunks(fh: BinaryIO, stats: ChunkStats, chunk_bytes: int | None = None) -> Iterator[Chunk]:
    """A regular file is cut at line ends found with small positional reads, and each worker reads its own block
    (the main thread copying 1 GB through `read` cost 5 s of a 16 s parse); streams are read here, in order."""
    chunk_bytes = chunk_bytes or CHUNK_BYTES
    fd = _regular_fd(fh)
    if fd is None:
        yield from iter_byte_chunks(fh, stats, chunk_bytes)
        return
    pos, size = fh.tell(), os.fstat(fd).st_size
    continues = False
    while pos < size:
        end, resume, how = _boundary(fd, min(pos + chunk_bytes, size), size)
        stats.bytes_read += resume - pos
        yield Chunk(partial(os.pread, fd, end - pos, pos), end - pos, continues, how == "cut")
        continues, pos = how == "redraw", resume


def _const(data: bytes) -> Callable[[], bytes]:
    return lambda: data


def _regular_fd(fh: BinaryIO) -> int | None:
    if not isinstance(fh, io.BufferedReader) or not hasattr(os, "pread"):
        return None
    try:
        fd = fh.fileno()
        return fd if stat.S_ISREG(os.fstat(fd).st_mode) else None
    except (OSError, ValueError):
        return None


def _boundary(fd: int, end: int, size: int) -> tuple[int, int, str]:
    """Where a block that should end near `end` ends, and where the next one starts: just past the first newline
    within MAX_LINE_BYTES ("newline"); else just past a `\r` redraw there ("redraw": the next block continues the
    physical line); else at `end`, the over-long line cut and skipped up to its newline ("cut")."""
    redraw = -1
    scan = end
    while scan < size and scan - end < MAX_LINE_BYTES:
        window = os.pread(fd, min(_SCAN, end + MAX_LINE_BYTES - scan), scan)
        if (nl := window.find(b"\n")) >= 0:
            return scan + nl + 1, scan + nl + 1, "newline"
        if redraw < 0 and (cr := window.find(b"\r")) >= 0:
            redraw = scan + cr + 1
        scan += len(window)
    if scan >= size:
        return size, size, "newline"
    if redraw >= 0:
        return redraw, redraw, "redraw"
    while scan < size:
        window = os.pread(fd, _SCAN, scan)
        if (nl := window.find(b"\n")) >= 0:
            return end, scan + nl + 1, "cut"
        scan += len(window)
    return end, size, "cut"


def iter_byte_chunks(fh: BinaryIO, stats: ChunkStats, chunk_bytes: int = CHUNK_BYTES) -> Iterator[Chunk]:
    """Blocks of a stream that end on a line boundary (the last one may lack its newline), with the same bounds as
    a file's: a line longer than MAX_LINE_BYTES is cut and skipped to its newline, a `\r` redraw may end a block."""
    carry = b""
    skipping = continues = False
    while block := fh.read(chunk_bytes):
        stats.bytes_read += len(block)
        if skipping:  # the rest of a line that was cut
            nl = block.find(b"\n")
            if nl < 0:
                continue
            block, skipping = block[nl + 1 :], False
        data = carry + block
        cut = data.rfind(b"\n")
        if cut >= 0:
            yield Chunk(_const(data[: cut + 1]), cut + 1, continues)
            carry, continues = data[cut + 1 :], False
        else:
            carry = data
        if len(carry) > MAX_LINE_BYTES:
            redraw = carry.rfind(b"\r")
            if redraw >= 0:
                yield Chunk(_const(carry[: redraw + 1]), redraw + 1, continues)
                carry, continues = carry[redraw + 1 :], True
            if len(carry) > MAX_LINE_BYTES:
                yield Chunk(_const(carry[:MAX_LINE_BYTES]), MAX_LINE_BYTES, continues, cut=True)
                carry, skipping, continues = b"", True, False
    if carry:
        yield Chunk(_const(carry), len(carry), continues)


# Rows per block, whatever its bytes: a block of short lines (a file of newlines: 32M rows in 32 MB, 20 bytes of
# frame each) is parsed in pieces instead (ingest.py). A real log's 32 MB holds ~300k lines.
MAX_CHUNK_ROWS = 1_000_000
_REDRAW_ROW_BYTES = 4096  # a real log's lines average ~100 bytes


class Dense(Exception):
    """A block with more than `limit` (MAX_CHUNK_ROWS) lines: parse it in pieces of at most that many bytes."""

    def __init__(self, limit: int) -> None:
        super().__init__(f"more than {limit} lines in one block")
        self.limit = limit


def _read_rows(data: bytes, stats: ChunkStats, n_rows: int | None = None) -> pl.DataFrame:
    try:
        return pl.read_lines(data, name="text", n_rows=n_rows)
    except pl.exceptions.ComputeError:  # invalid UTF-8: decode leniently, count the damage, read again
        text = data.decode("utf-8", errors="replace")
        stats.invalid_utf8 += text.count("\ufffd")
        return pl.read_lines(text.encode(), name="text", n_rows=n_rows)


# One repeated character class: a nested group `\r(?:[ \t]*\r)+` held 1.2 GB of backtracking state on 10 MB of `\r`.
# The blanks after the last `\r` of a run go too: a redraw's leading blanks carry nothing.
_CR_RUNS = re.compile(rb"\r[\r \t]+")


def lines_frame(data: bytes, stats: ChunkStats, continues: bool = False, cut: bool = False) -> pl.DataFrame:
    """Split one block into a `line`, `text` frame, lines numbered from 1 (from 0 when the block continues the line
    the block before ended in: ingest.py's offset then gives it that line's number). Lines longer than MAX_LINE_BYTES
    are cut there and counted."""
    first = 0 if continues else 1
    frame = _read_rows(data, stats, MAX_CHUNK_ROWS + 1)
    if frame.height > MAX_CHUNK_ROWS:
        raise Dense(MAX_CHUNK_ROWS)
    # A block of long rows holding a `\r` (a file of tqdm redraws; `in` is memchr-fast, counting is not) is read again
    # with each redraw as a row of its own, not one giant row to split afterwards (30 MB of redraws held 450 MB that
    # way): each `\r` is marked and broken, and the marked rows keep the physical line number they share. A log with
    # a few bars among its lines takes the cheaper path below, which splits only the rows that hold a `\r`.
    redraws = continues or (frame.height > 0 and len(data) // frame.height > _REDRAW_ROW_BYTES and b"\r" in data)
    if redraws:  # the same bytes: their damage was counted on the first read
        # A run of carriage returns with nothing but blanks between them redraws nothing: one, not a row each
        # (10 MB of `\r` made 10 million empty rows and 0.8 GB).
        data = _CR_RUNS.sub(b"\r", data)
        frame = _read_rows(data.replace(b"\r\n", b"\n").replace(b"\r", _REDRAW + b"\n"), ChunkStats())
        marked = pl.col("text").str.ends_with(_REDRAW.decode())
        frame = (frame.with_columns(marked.alias("_redraw"))
                 .with_columns((first + (~pl.col("_redraw")).cum_sum().shift(1, fill_value=0)).alias("line"),
                               pl.col("text").str.strip_suffix(_REDRAW.decode()))
                 .filter(~pl.col("_redraw") | (pl.col("text").str.strip_chars() != "")))
        lines = whole(frame["line"].max() or 0) - first + 1 if frame.height else 0
        frame = frame.select(pl.col("line").cast(pl.UInt32), "text")
    else:
        lines = frame.height
        frame = frame.select(pl.int_range(first, first + pl.len(), dtype=pl.UInt32).alias("line"), "text")
    stats.physical_lines += lines - (1 - first if lines else 0)
    messy_mask = frame.select(pl.col("text").str.contains(_MESSY)).to_series()
    at = messy_mask.arg_true()
    if at.len():
        cleaned = (frame["text"].gather(at).str.replace_all(ANSI, "").str.replace_all(_AFTER_BAR, "$1\r$2")
                   .str.replace_all(_GLUE, "$1\r$2"))
        whole_rows = ~cleaned.str.contains("\r", literal=True) & (cleaned.str.strip_chars() != "")
        if whole_rows.all():  # one row each (a bar's line that ends the line, a coloured line): in place, no sort
            frame = frame.with_columns(frame["text"].scatter(at, cleaned))
        else:
            messy = (
                frame.filter(messy_mask).with_columns(cleaned.alias("text"))
                .with_columns(pl.col("text").str.split("\r"))
                .explode("text")
                .filter(pl.col("text").str.strip_chars() != "")
            )
            frame = pl.concat([frame.filter(~messy_mask), messy]).sort("line", maintain_order=True)
    frame = _line_numbered(_unquoted(frame))
    long = frame.select(pl.col("text").str.len_bytes() > MAX_LINE_BYTES).to_series()
    if cut or long.any():
        last_long = bool(long[-1]) if frame.height else False
        stats.cut_lines += int(long.sum()) + (1 if cut and not last_long else 0)
        frame = frame.with_columns(pl.when(long).then(pl.col("text").str.slice(0, MAX_LINE_BYTES))
                                   .otherwise(pl.col("text")).alias("text"))
    return frame.select("line", "text")


# A line number on every line of an excerpt (`grep -n '' train.log`, `grep -n -C 20`, an editor's numbered copy: `123:`
# on a matching line, `124-` on a context line): at least this share of its lines open with one, the numbers rise by
# one from line to line (but at a few gaps), and some line has no space after the mark. A loop's own counter glued to
# its text (`10:loss 2.48`) rises by its print interval, and darknet's `1: 1234.5, ...` has the space; a `grep -n
# pattern` of a few lines among many rises as a counter does and stays as printed.
_GREP_N = r"^(\d{1,9})[:-]"
GREP_N_SHARE = 0.9


def _line_numbered(frame: pl.DataFrame) -> pl.DataFrame:
    """The lines without `grep -n`'s line numbers, where the chunk carries them (see _GREP_N)."""
    text = frame["text"]
    probe = text.head(EXCERPT_PROBE_ROWS)
    if probe.len() < 2 or number(probe.str.contains(_GREP_N).mean()) < GREP_N_SHARE:
        return frame
    numbers = text.str.extract(_GREP_N, 1).cast(pl.Int64)
    marked = numbers.is_not_null()
    rising = numbers.drop_nulls().diff().drop_nulls()
    spaced = not text.filter(marked).str.contains(r"^\d{1,9}[:-]\S").any()
    if number(marked.mean()) < GREP_N_SHARE or (rising <= 0).any() or number((rising == 1).mean()) < GREP_N_SHARE \
            or spaced:
        return frame
    return frame.with_columns(text.str.replace(_GREP_N, ""))


def _unquoted(frame: pl.DataFrame) -> pl.DataFrame:
    """The lines without the marks of a quoted excerpt (_EXCERPT), where the chunk is short or opens with them."""
    text = frame["text"]
    if text.len() > EXCERPT_MAX_ROWS and not text.head(EXCERPT_PROBE_ROWS).str.contains(_EXCERPT).any():
        return frame
    at = text.str.contains(_EXCERPT).fill_null(False).arg_true()
    if at.len() == 0:
        return frame
    return frame.with_columns(text.scatter(at, text.gather(at).str.replace(_EXCERPT, "")))
