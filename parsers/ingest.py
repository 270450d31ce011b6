"""One log stream -> frame parts, chunk by chunk, holding no more than a chunk of lines at a time."""
from __future__ import annotations

from collections.abc import Callable
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


def ingest_log(fh: BinaryIO, source_id: int, progress: Callable[[int], None] | None = None) -> LogResult:
    result = LogResult()
    pending: pl.DataFrame | None = None  # lines from a block header whose window ran past the chunk's end
    next_line = 1
    for data in iter_byte_chunks(fh, result.stats):
        lines = lines_frame(data, next_line, result.stats)
        next_line = result.stats.physical_lines + 1
        result.text_lines += lines.height
        for name, parts in extract_chunk(lines, source_id).items():
            if name == "_tagged_count":
                result.used_lines += int(parts[0]["n"][0])
            elif name in FRAMES:  # to the final schema now: one compact, sorted part per chunk
                result.parts.setdefault(name, []).append(conform(name, parts))
            else:
                result.parts.setdefault(name, []).extend(parts)
        context = lines if pending is None else pl.concat([pending, lines])
        pending = _read_blocks(context, source_id, result.blocks, final=False)
        if progress:
            progress(len(data))
    if pending is not None:
        _read_blocks(pending, source_id, result.blocks, final=True)
    result.used_lines += result.blocks.lines_used
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
