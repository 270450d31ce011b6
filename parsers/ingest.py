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
    used_lines: int = 0  # lines that matched a kind (an upper bound: tagged lines)
    text_lines: int = 0  # logical lines after splitting tqdm redraws


WORKERS = 2  # chunks in flight: polars releases the GIL, so a second chunk's regex work overlaps the first's


def _work(data: bytes, first_line: int, source_id: int) -> tuple[pl.DataFrame, dict[str, list[pl.DataFrame]],
                                                                  ChunkStats]:
    stats = ChunkStats()
    lines = lines_frame(data, first_line, stats)
    extracted = extract_chunk(lines, source_id)
    return lines, {name: [conform(name, parts)] if name in FRAMES else parts for name, parts in extracted.items()}, stats


def ingest_log(fh: BinaryIO, source_id: int, progress: Callable[[int], None] | None = None) -> LogResult:
    """Chunks are extracted two at a time and merged in order; multi-line blocks are read in order afterwards."""
    result = LogResult()
    pending: pl.DataFrame | None = None  # lines from a block header whose window ran past the chunk's end
    next_line = 1
    in_flight: deque[tuple[Future, int]] = deque()

    def drain_one() -> None:
        nonlocal pending
        future, size = in_flight.popleft()
        lines, extracted, stats = future.result()
        result.stats.physical_lines += stats.physical_lines
        result.stats.invalid_utf8 += stats.invalid_utf8
        result.text_lines += lines.height
        for name, parts in extracted.items():
            if name == "_tagged_count":
                result.used_lines += int(parts[0]["n"][0])
            else:
                result.parts.setdefault(name, []).extend(parts)
        context = lines if pending is None else pl.concat([pending, lines])
        pending = _read_blocks(context, source_id, result.blocks, final=False)
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
        _read_blocks(pending, source_id, result.blocks, final=True)
    # Block windows can re-count lines a kind already matched (a garbled `}` makes a JSON value run on), so the
    # sum is capped: "recognised" is an estimate, never more than the lines there are.
    result.used_lines = min(result.text_lines, result.used_lines + result.blocks.lines_used)
    return result


def _read_blocks(lines: pl.DataFrame, source_id: int, blocks: Blocks, final: bool) -> pl.DataFrame | None:
    headers = header_rows(lines)
    if headers.height == 0:
        return None
    positions = lines.with_row_index("_i").join(headers.select("line").unique(), on="line", how="semi")
    for idx, line in zip(positions["_i"].to_list(), positions["line"].to_list()):
        if idx + WINDOW > lines.height and not final:
            return lines.slice(idx)
        window = lines.slice(idx, WINDOW)["text"].to_list()
        for name, literal in BLOCK_HEADERS.items():
            if literal in window[0]:
                parse_block(name, window, blocks, (source_id, line))
                break
    return None
