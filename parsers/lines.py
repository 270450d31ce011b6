"""Raw bytes -> a polars frame of physical lines, in bounded chunks.

Every chunk becomes one frame with `line` (1-based physical line number in its file) and `text`. Lines are split
on `\\n`; CRLF endings are dropped; a line that still holds `\\r` (a tqdm redraw) is split into its segments, which
share the physical line number; ANSI escape sequences are removed. Everything runs as polars expressions over the
whole chunk: there is no per-line Python.
"""
from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import BinaryIO

import polars as pl

CHUNK_BYTES = 32 * 1024 * 1024  # bounds peak memory: a chunk lives as bytes, str and one polars frame at once
ANSI = r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b[()][A-Za-z0-9]|\x1b[=>]"
# Line starts that can be glued mid-line, e.g. a DeepSpeed timer printed right after a tqdm bar without `\r`
# (log_formats.md §0). The split point becomes a `\r`, so the pieces are handled like tqdm redraws.
_GLUED_START = r"\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}\] \[|\[Rank \d+\] |\{'(?:loss|eval_loss|train_runtime)'|\[transformers\] "
_GLUE = r"([^\s\r])(" + _GLUED_START + ")"
_AFTER_BAR = r"((?:it/s|s/it)\])([^\s\r])"
# Lines that may need splitting: a `\r` redraw, an escape sequence, or a progress bar's rate, after which the next
# library line may follow without a newline (a paste that lost its `\r`). One Aho-Corasick pass over literals; the
# glue patterns then run on those few lines only, not on every line of a large log.
_MESSY = ["\r", "\x1b", "it/s]", "s/it]"]


@dataclass
class ChunkStats:
    physical_lines: int = 0
    invalid_utf8: int = 0
    bytes_read: int = 0


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


def lines_frame(data: bytes, first_line: int, stats: ChunkStats) -> pl.DataFrame:
    """Split one block into a `line`, `text` frame; `first_line` is the block's first physical line number."""
    try:
        frame = pl.read_lines(data, name="text", row_index_name="line", row_index_offset=first_line)
    except pl.exceptions.ComputeError:  # invalid UTF-8: decode leniently, count the damage, read again
        text = data.decode("utf-8", errors="replace")
        stats.invalid_utf8 += text.count("\ufffd")
        frame = pl.read_lines(text.encode(), name="text", row_index_name="line", row_index_offset=first_line)
    stats.physical_lines += frame.height
    frame = frame.with_columns(pl.col("line").cast(pl.UInt32))
    messy_mask = frame.select(pl.col("text").str.contains_any(_MESSY)).to_series()
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
