"""One log stream -> frame parts, chunk by chunk, holding no more than a chunk of lines at a time."""
from __future__ import annotations

from collections import deque
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import BinaryIO

import polars as pl

from parsers.blocks import WINDOW, Blocks, parse_block
from parsers.extract import extract_chunk, header_rows
from parsers.kinds import BLOCK_HEADERS
from parsers.lines import ChunkStats, iter_byte_chunks, lines_frame
from parsers.schema import FRAMES, conform


@dataclass
class LogResult:
    parts: dict[str, list[pl.DataFrame]] = field(default_factory=dict)
    blocks: Blocks = field(default_factory=Blocks)
    stats: ChunkStats = field(default_factory=ChunkStats)
    used_lines: int = 0  # physical lines that produced a row or belong to a block
    text_lines: int = 0  # logical lines after splitting tqdm redraws


# Chunks in flight: polars releases the GIL, so chunks' regex work overlaps; a third keeps both cores busy while
# the main thread merges the oldest (15 s against 18 s with two on the 1 GB benchmark).
WORKERS = 3


def _work(data: bytes, first_line: int, source_id: int) -> tuple[pl.DataFrame, dict[str, list[pl.DataFrame]],
                                                                  ChunkStats]:
    stats = ChunkStats()
    lines = lines_frame(data, first_line, stats)
    extracted = extract_chunk(lines, source_id)
    return lines, {name: [conform(name, parts)] if name in FRAMES else parts for name, parts in extracted.items()}, stats


def ingest_log(fh: BinaryIO, source_id: int, progress: Callable[[int], None] | None = None) -> LogResult:
    """Chunks are extracted WORKERS at a time and merged in order; multi-line blocks are read in order afterwards."""
    result = LogResult()
    pending: pl.DataFrame | None = None  # lines from a block header whose window ran past the chunk's end
    next_line = 1
    in_flight: deque[tuple[Future, int]] = deque()
    # Lines counted in the previous chunk: a block deferred from it (its window ran on) may cover some of them.
    counted_prev = pl.Series("line", [], dtype=pl.UInt32)

    def drain_one() -> None:
        nonlocal pending, counted_prev
        future, size = in_flight.popleft()
        lines, extracted, stats = future.result()
        result.stats.physical_lines += stats.physical_lines
        result.stats.invalid_utf8 += stats.invalid_utf8
        result.text_lines += lines.height
        used = extracted.pop("_lines")[0]["line"]
        for name, parts in extracted.items():
            result.parts.setdefault(name, []).extend(parts)
        context = lines if pending is None else pl.concat([pending, lines])
        before = set(result.blocks.lines_used)
        pending = _read_blocks(context, source_id, result.blocks, final=False)
        block_lines = pl.Series("line", sorted(result.blocks.lines_used - before), dtype=pl.UInt32)
        both = pl.concat([counted_prev, used.cast(pl.UInt32), block_lines]).unique()
        result.used_lines += both.len() - counted_prev.n_unique()
        counted_prev = pl.concat([used.cast(pl.UInt32), block_lines]).unique()
        if progress:
            progress(size)

    with ThreadPoolExecutor(max_workers=WORKERS) as pool:
        for data in iter_byte_chunks(fh, result.stats):
            in_flight.append((pool.submit(_work, data, next_line, source_id), len(data)))
            next_line += data.count(b"\n") + (0 if data.endswith(b"\n") else 1)
            while len(in_flight) >= WORKERS:
                drain_one()
        while in_flight:
            drain_one()
    if pending is not None:
        before = set(result.blocks.lines_used)
        _read_blocks(pending, source_id, result.blocks, final=True)
        tail = pl.Series("line", sorted(result.blocks.lines_used - before), dtype=pl.UInt32)
        result.used_lines += pl.concat([counted_prev, tail]).n_unique() - counted_prev.n_unique()
    result.used_lines = min(result.used_lines, result.stats.physical_lines)
    return result


def _read_blocks(lines: pl.DataFrame, source_id: int, blocks: Blocks, final: bool) -> pl.DataFrame | None:
    headers = header_rows(lines)
    if headers.height == 0:
        return None
    positions = lines.with_row_index("_i").join(headers.select("line").unique(), on="line", how="semi")
    for idx, line in zip(positions["_i"].to_list(), positions["line"].to_list()):
        if idx + WINDOW > lines.height and not final:
            return lines.slice(idx)
        window = lines.slice(idx, WINDOW)
        texts = window["text"].to_list()
        for name, literal in BLOCK_HEADERS.items():
            if literal in texts[0]:
                parse_block(name, texts, window["line"].to_list(), blocks, (source_id, line))
                break
    return None
