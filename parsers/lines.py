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

CHUNK_BYTES = 32 * 1024 * 1024  # bounds peak memory: a chunk lives as bytes, str and one polars frame at once
ANSI = r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b[()][A-Za-z0-9]|\x1b[=>]"
# Line starts that can be glued mid-line, e.g. a DeepSpeed timer printed right after a tqdm bar without `\r`
# (log_formats.md §0). The split point becomes a `\r`, so the pieces are handled like tqdm redraws.
_GLUED_START = r"\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}\] \[|\[Rank \d+\] |\{'(?:loss|eval_loss|train_runtime)'|\[transformers\] "
_GLUE = r"([^\s\r])(" + _GLUED_START + ")"
# A progress bar's rate closes it whatever it counts (`3.33s/it]`, `1.2it/s]`, `912.35 examples/s]`, `45.1ba/s]`).
_AFTER_BAR = r"(\d\s?(?:[A-Za-z]+/s|s/[A-Za-z]+)\])([^\s\r])"
# Lines that may need splitting: a `\r` redraw, an escape sequence, or a progress bar's rate, after which the next
# library line may follow without a newline (a paste that lost its `\r`). One cheap pass (this regex measured half
# the cost of `contains_any` over the same literals); the glue patterns then run on those few lines only.
_MESSY = r"[\r\x1b]|/s\]|s/[A-Za-z]+\]"


_ANSI_RE = re.compile(ANSI)
_REDRAWN = re.compile(r"^.*\r(?=.)", re.S)
_BAR_GLUED = re.compile(r"^.*?\d\s?(?:[A-Za-z]+/s|s/[A-Za-z]+)\](?=\S)")


_MESSY_RE = re.compile(_MESSY)


def plain_text(text: str) -> str:
    """A log's text as its lines read once cleaned, line numbers kept: colours removed, each line's last tqdm redraw
    kept, a progress bar glued before a line removed (for the few readers that take whole text, such as the
    launch commands a log opens with). Only the lines that need it go through the patterns."""
    lines = text.split("\n")
    for i, line in enumerate(lines):
        if _MESSY_RE.search(line):
            lines[i] = _BAR_GLUED.sub("", _REDRAWN.sub("", _ANSI_RE.sub("", line)))
    return "\n".join(lines)


@dataclass
class ChunkStats:
    physical_lines: int = 0
    invalid_utf8: int = 0
    bytes_read: int = 0


@dataclass(frozen=True)
class Chunk:
    """One block of the input that ends on a line boundary; `read` is called on the worker that parses it."""

    read: Callable[[], bytes]
    size: int


def iter_chunks(fh: BinaryIO, stats: ChunkStats, chunk_bytes: int | None = None) -> Iterator[Chunk]:
    """A regular file is cut at line ends found with small positional reads, and each worker reads its own block
    (the main thread copying 1 GB through `read` cost 5 s of a 16 s parse); streams are read here, in order."""
    chunk_bytes = chunk_bytes or CHUNK_BYTES
    fd = _regular_fd(fh)
    if fd is None:
        for data in iter_byte_chunks(fh, stats, chunk_bytes):
            yield Chunk(_const(data), len(data))
        return
    pos, size = fh.tell(), os.fstat(fd).st_size
    while pos < size:
        end = _line_end(fd, min(pos + chunk_bytes, size), size)
        stats.bytes_read += end - pos
        yield Chunk(partial(os.pread, fd, end - pos, pos), end - pos)
        pos = end


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


def _line_end(fd: int, end: int, size: int) -> int:
    """The offset just past the first newline at or after `end` (or the file's size)."""
    while end < size:
        window = os.pread(fd, 1 << 16, end)
        cut = window.find(b"\n")
        if cut >= 0:
            return end + cut + 1
        end += len(window)
    return size


def iter_byte_chunks(fh: BinaryIO, stats: ChunkStats, chunk_bytes: int = CHUNK_BYTES) -> Iterator[bytes]:
    """Yield blocks of the input that end on a line boundary (the last one may lack its newline)."""
    carry = b""
    while True:
        block = fh.read(chunk_bytes)
        if not block:
            break
        stats.bytes_read += len(block)
        data = carry + block
        cut = data.rfind(b"\n")
        if cut < 0:
            carry = data
            continue
        carry = data[cut + 1 :]
        yield data[: cut + 1]
    if carry:
        yield carry


def lines_frame(data: bytes, stats: ChunkStats) -> pl.DataFrame:
    """Split one block into a `line`, `text` frame, lines numbered from 1."""
    try:
        frame = pl.read_lines(data, name="text", row_index_name="line", row_index_offset=1)
    except pl.exceptions.ComputeError:  # invalid UTF-8: decode leniently, count the damage, read again
        text = data.decode("utf-8", errors="replace")
        stats.invalid_utf8 += text.count("\ufffd")
        frame = pl.read_lines(text.encode(), name="text", row_index_name="line", row_index_offset=1)
    stats.physical_lines += frame.height
    frame = frame.with_columns(pl.col("line").cast(pl.UInt32))
    messy_mask = frame.select(pl.col("text").str.contains(_MESSY)).to_series()
    if messy_mask.any():
        plain = frame.filter(~messy_mask)
        messy = (
            frame.filter(messy_mask)
            .with_columns(pl.col("text").str.replace_all(ANSI, "").str.replace_all(_AFTER_BAR, "$1\r$2")
                          .str.replace_all(_GLUE, "$1\r$2"))
            .with_columns(pl.col("text").str.split("\r"))
            .explode("text")
            .filter(pl.col("text").str.strip_chars() != "")
        )
        frame = pl.concat([plain, messy]).sort("line", maintain_order=True)
    return frame.select("line", "text")
