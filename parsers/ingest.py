"""One log stream -> frame parts, chunk by chunk, holding no more than a few chunks of lines at a time."""
from __future__ import annotations

import os
from collections import deque
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from itertools import accumulate
from typing import BinaryIO

import polars as pl

from diagnose.parsers import prose
from diagnose.parsers.blocks import WINDOW, Blocks, parse_block
from diagnose.parsers.extract import HEADER_RE as _HEADER_RE
from diagnose.parsers.extract import extract_chunk
from diagnose.parsers.kinds import BLOCK_HEADERS
from diagnose.parsers.lines import Chunk, ChunkStats, Dense, iter_chunks, lines_frame
from diagnose.parsers.schema import FRAMES, conform
from diagnose.parsers.stamps import settle
from diagnose.parsers.templates import (PASTE_MAX_LINES, TEMPLATES_SCHEMA, Learned, close_magnitudes, close_padding,
                                        close_time_units, learn, merge_templates)
from diagnose.parsers.thinning import THINNED_FRAMES, Sampling, Summary, Thinner, prepare


@dataclass
class LogResult:
    parts: dict[str, list[pl.DataFrame]] = field(default_factory=dict)
    blocks: Blocks = field(default_factory=Blocks)
    stats: ChunkStats = field(default_factory=ChunkStats)
    rows: dict[str, int] = field(default_factory=dict)  # rows read per frame, before any thinning
    used_lines: int = 0  # physical lines that produced a row or belong to a block
    text_lines: int = 0  # logical lines after splitting tqdm redraws
    faults: list[str] = field(default_factory=list)  # line kinds that raised on some chunk (each named once)
    ranks: list[pl.DataFrame] = field(default_factory=list)  # per chunk: the highest rank a prefix names, and where
    templates: list[pl.DataFrame] = field(default_factory=list)  # per chunk: the templates its unclaimed lines had
    learned: Learned = field(default_factory=Learned)  # the streams learned from them (parsers/templates.py)


# Chunks in flight: polars releases the GIL, so chunks' work overlaps. One more than the cores keeps them busy
# while the main thread merges the oldest (on 2 cores, 3 measured 15 s against 18 s with 2 on the 1 GB benchmark);
# at most 5, since each chunk in flight holds its bytes, its lines and their intermediate columns.
WORKERS = min(os.cpu_count() or 2, 4) + 1


@dataclass(frozen=True)
class _Parsed:
    """One chunk's result, with line numbers counted from 1 at the chunk's start."""

    lines: pl.DataFrame
    parts: dict[str, list[pl.DataFrame]]
    used: pl.Series  # distinct lines that produced a row
    headers: pl.Series  # row positions in `lines` of block headers
    stats: ChunkStats
    text_lines: int
    summaries: dict[str, list[Summary]]  # per thinned frame, one per part (parsers/thinning.py)
    faults: tuple[str, ...] = ()
    ranks: pl.DataFrame | None = None
    templates: pl.DataFrame | None = None


def _work(chunk: Chunk, source_id: int, sampling: Sampling | None = None, sentences: bool = True) -> list[_Parsed]:
    try:
        return [_work_piece(chunk.read(), source_id, sampling, continues=chunk.continues, cut=chunk.cut,
                            sentences=sentences)]
    except Dense as e:  # more rows than a block may hold (a file of blank lines): pieces of at most that many bytes
        pieces = _pieces(chunk.read(), e.limit)
        return [_work_piece(piece, source_id, sampling, continues=chunk.continues and i == 0,
                            cut=chunk.cut and i == len(pieces) - 1, dense=True, sentences=sentences)
                for i, piece in enumerate(pieces)]


def _pieces(data: bytes, size: int) -> list[bytes]:
    """The block cut at the first line end after every `size` bytes: no piece has more than size + 1 lines."""
    out, pos = [], 0
    while pos < len(data):
        end = data.find(b"\n", min(pos + size, len(data)) - 1)
        end = len(data) if end < 0 else end + 1
        out.append(data[pos:end])
        pos = end
    return out


def _work_piece(data: bytes, source_id: int, sampling: Sampling | None, continues: bool, cut: bool,
                dense: bool = False, sentences: bool = True) -> _Parsed:
    stats = ChunkStats()
    lines = lines_frame(data, stats, continues, cut)
    del data  # the block's bytes are not held while its lines are extracted
    if dense:
        lines = lines.filter(pl.col("text") != "")
    extracted = extract_chunk(lines, source_id, sampling, sentences)
    used = extracted.pop("_lines")[0]["line"].cast(pl.UInt32)
    sampled = extracted.pop("_sampled", [None])[0]
    faults = tuple(extracted.pop("_faults")[0]["fault"].to_list())
    ranks = extracted.pop("_ranks")[0]
    templates = extracted.pop("_templates")[0]
    headers = extracted.pop("_headers")[0]["_row"]
    parts = {name: [conform(name, p)] if name in FRAMES else p for name, p in extracted.items()}
    summaries: dict[str, list[Summary]] = {}
    for name in THINNED_FRAMES:  # numbered within the chunk here, in parallel; the merge adds earlier chunks' counts
        if name in parts:
            stride = sampling.strides.get(name, 1) if sampling is not None else 1
            prepared = [prepare(name, p, stride, sampled) for p in parts[name]]
            parts[name] = [p for p, _ in prepared]
            summaries[name] = [summary for _, summary in prepared]
    # Without a header, only the first WINDOW lines can matter (to a block that began in the chunk before): the rest
    # is not held while the chunk waits to be merged (a copy: a slice would keep the whole buffer alive).
    kept = lines if headers.len() else pl.DataFrame(lines.head(WINDOW).to_dict(as_series=False), schema=lines.schema)
    return _Parsed(kept, parts, used, headers, stats, lines.height, summaries, faults, ranks, templates)


def _shift(frame: pl.DataFrame, offset: int) -> pl.DataFrame:
    return frame.with_columns(pl.col("line") + pl.lit(offset, dtype=frame.schema["line"])) if offset else frame


def ingest_log(fh: BinaryIO, source_id: int, progress: Callable[..., None] | None = None,
               thinner: Thinner | None = None) -> LogResult:
    """Chunks are extracted WORKERS at a time and merged in order; multi-line blocks are read in order afterwards.
    `progress(bytes, lines=n)` is called as each chunk is merged. With a thinner, the per-step frames go to it (bounded memory) instead of `result.parts`."""
    result = LogResult()
    pending: pl.DataFrame | None = None  # lines from a block header whose window ran past the chunk's end
    in_flight: deque[tuple[Future[list[_Parsed]], int]] = deque()
    # Used lines (absolute) of the chunks a pending block may still cover: a block's lines that also produced a row
    # are counted once.
    retained: list[pl.Series] = []
    # Candidate sentences merged so far: prose.read takes a source's first PROSE_MAX_LINES (in line order), so once
    # the merged chunks hold that many, the chunks submitted after them need not look for any.
    sentences = 0

    def drain_one() -> None:
        future, size = in_flight.popleft()
        parsed_pieces = future.result()
        for parsed in parsed_pieces:
            merge(parsed)
        if progress:  # bytes, and the lines they held (for the command line's progress display)
            progress(size, lines=sum(p.stats.physical_lines for p in parsed_pieces))

    def merge(parsed: _Parsed) -> None:
        nonlocal pending, sentences
        sentences += sum(p.height for p in parsed.parts.get("_prose", []))
        offset = result.stats.physical_lines
        result.stats.physical_lines += parsed.stats.physical_lines
        result.stats.invalid_utf8 += parsed.stats.invalid_utf8
        result.stats.cut_lines += parsed.stats.cut_lines
        result.text_lines += parsed.text_lines
        result.faults.extend(f for f in parsed.faults if f not in result.faults)
        if parsed.ranks is not None and parsed.ranks.height:
            result.ranks.append(_shift(parsed.ranks, offset))
        if parsed.templates is not None and parsed.templates.height:
            result.templates.append(parsed.templates)
        for name, parts in parsed.parts.items():
            for i, part in enumerate(parts):
                result.rows[name] = result.rows.get(name, 0) + part.height
                if thinner is not None and name in THINNED_FRAMES:
                    thinner.add(name, _shift(part, offset), parsed.summaries[name][i])
                else:
                    part = part.drop("_stream", "_occ", "_phase", strict=False)
                    result.parts.setdefault(name, []).append(_shift(part, offset))
        result.used_lines += parsed.used.len()
        if pending is not None or parsed.headers.len():
            retained.append(parsed.used + offset)
            before = set(result.blocks.lines_used)
            lines = _shift(parsed.lines, offset)
            positions = parsed.headers + (0 if pending is None else pending.height)
            if pending is not None:
                positions = pl.concat([_header_positions(pending), positions])
                lines = pl.concat([pending, lines])
            pending = _read_blocks(lines, positions, source_id, result.blocks, final=False)
            result.used_lines += _newly_used(result.blocks.lines_used - before, retained)
            if pending is None:
                retained.clear()

    with ThreadPoolExecutor(max_workers=WORKERS) as pool:
        for chunk in iter_chunks(fh, result.stats):
            sampling = thinner.sampling() if thinner is not None else None  # rows it would drop go on the worker
            in_flight.append((pool.submit(_work, chunk, source_id, sampling, sentences < prose.PROSE_MAX_LINES),
                              chunk.size))
            while len(in_flight) >= WORKERS:
                drain_one()
        while in_flight:
            drain_one()
    if pending is not None:
        before = set(result.blocks.lines_used)
        _read_blocks(pending, _header_positions(pending), source_id, result.blocks, final=True)
        result.used_lines += _newly_used(result.blocks.lines_used - before, retained)
    result.learned, fresh = _learn(result.parts, result.templates,
                                   {source_id: result.stats.physical_lines <= PASTE_MAX_LINES})
    result.templates = []
    result.used_lines += fresh.get(source_id, 0)
    if result.learned.steps:
        result.rows["steps"] = result.rows.get("steps", 0) + sum(s.height for s in result.learned.steps)
    result.used_lines = min(result.used_lines, result.stats.physical_lines)
    return result


def _learn(parts: dict[str, list[pl.DataFrame]], templates: list[pl.DataFrame],
           paste: dict[int, bool]) -> tuple[Learned, dict[int, int]]:
    """The mined rows of whole sources (popped from `parts`) -> learned streams, whose step rows join `parts` (they
    are few, one per printed step of one stream: not thinned); and per source, the lines read that no kind had: a
    stream's, and the sentences that state a quantity (parsers/prose.py)."""
    said = parts.pop("_prose", [])
    stated_lines: dict[int, int] = {}
    if said:
        stated = prose.read(pl.concat(said) if len(said) > 1 else said[0])
        if stated.height:
            parts.setdefault("stated", []).append(conform("stated", [stated]))
            read = stated.filter(pl.col("quantity") != "setting").unique(["source", "line"])
            stated_lines = {int(s): int(n) for s, n in read["source"].value_counts().iter_rows()}
    learned, fresh = _learn_streams(parts, templates, paste)
    for s, n in stated_lines.items():
        fresh[s] = fresh.get(s, 0) + n
    return learned, fresh


def _learn_streams(parts: dict[str, list[pl.DataFrame]], templates: list[pl.DataFrame],
                   paste: dict[int, bool]) -> tuple[Learned, dict[int, int]]:
    mined = parts.pop("_mined", [])
    rows = pl.concat(mined) if len(mined) > 1 else (mined[0] if mined else None)
    if rows is None or (rows.height == 0 and not templates):
        return Learned(), {}
    tpls = merge_templates(pl.concat(templates)) if templates else pl.DataFrame(schema=TEMPLATES_SCHEMA)
    rows, tpls = close_time_units(*close_magnitudes(*close_padding(rows, tpls)))
    learned = learn(settle(rows.drop("claimed")), tpls, paste)
    if learned.steps:
        parts.setdefault("steps", []).extend(conform("steps", [s]) for s in learned.steps)
    if learned.side:
        parts.setdefault("progress", []).extend(learned.side)
    fresh: dict[int, int] = {}
    if learned.lines:
        stream_lines = pl.concat(learned.lines)
        new = rows.join(stream_lines, on=["source", "line"], how="semi").filter(~pl.col("claimed"))
        fresh = {int(s): int(n) for s, n in new["source"].value_counts().iter_rows()}
    return learned, fresh


def _newly_used(block_lines: set[int], retained: list[pl.Series]) -> int:
    """Block lines that did not already produce a row."""
    if not block_lines:
        return 0
    lines = sorted(block_lines)
    return len(block_lines) - sum(int(used.is_in(lines).sum()) for used in retained)


def _header_positions(lines: pl.DataFrame) -> pl.Series:
    return lines.select(pl.arg_where(pl.col("text").str.contains(_HEADER_RE))).to_series()


def _read_blocks(lines: pl.DataFrame, positions: pl.Series, source_id: int, blocks: Blocks,
                 final: bool) -> pl.DataFrame | None:
    for idx in positions.to_list():
        if idx + WINDOW > lines.height and not final:
            return lines.slice(idx)
        window = lines.slice(idx, WINDOW)
        texts = window["text"].to_list()
        for name, literal in BLOCK_HEADERS.items():
            if literal in texts[0]:
                parse_block(name, texts, window["line"].to_list(), blocks, (source_id, window["line"][0]))
                break
    return None


@dataclass(frozen=True)
class BatchResult:
    """Many small logs read as one chunk: their parts (rows carry each file's own source id) and, per file, its
    physical lines, the lines that produced a row and its rows per frame."""

    parts: dict[str, list[pl.DataFrame]]
    lines: tuple[int, ...]
    used: tuple[int, ...]
    rows: tuple[dict[str, int], ...]
    blocks: tuple[Blocks, ...]
    faults: tuple[str, ...] = ()
    ranks: pl.DataFrame | None = None  # per file (source): the highest rank a prefix names, and where
    learned: Learned = field(default_factory=Learned)  # streams learned from the files' lines


def ingest_batch(texts: list[bytes], first_source: int) -> BatchResult:
    """Small logs (valid UTF-8) joined into one chunk: the line kinds' fixed cost (~13 ms a chunk) is paid once for
    the batch instead of once per file. File i gets source id first_source + i and its own line numbers; multi-line
    blocks are read within each file."""
    counts = [t.count(b"\n") + (1 if t and not t.endswith(b"\n") else 0) for t in texts]
    data = b"".join(t if not t or t.endswith(b"\n") else t + b"\n" for t in texts)
    starts = pl.Series("start", [0, *accumulate(counts)][:-1], dtype=pl.UInt32)
    stats = ChunkStats()
    lines = lines_frame(data, stats) if data else pl.DataFrame(schema={"line": pl.UInt32, "text": pl.String})
    # Files with no lines own no start: the last file starting at or before a line is its file.
    file = starts.search_sorted(lines["line"] - 1, side="right").cast(pl.Int64) - 1
    lines = lines.with_columns((pl.lit(first_source, pl.Int64) + file).cast(pl.UInt32).alias("source"),
                               (pl.col("line") - starts.gather(file)).alias("line")).select("source", "line", "text")
    extracted = extract_chunk(lines, None)
    used_lines = extracted.pop("_lines")[0]
    faults = tuple(dict.fromkeys(extracted.pop("_faults")[0]["fault"].to_list()))
    ranks = extracted.pop("_ranks")[0]
    templates = extracted.pop("_templates")
    headers = extracted.pop("_headers")[0]["_row"]
    learned, fresh = _learn(extracted, templates, {first_source + i: n <= PASTE_MAX_LINES for i, n in enumerate(counts)})
    used_by = {int(s): int(n) for s, n in used_lines["source"].value_counts().iter_rows()}
    for s, n in fresh.items():
        used_by[s] = used_by.get(s, 0) + n
    blocks = [Blocks() for _ in texts]
    for source in lines["source"].gather(headers).unique().to_list():
        own = lines.filter(pl.col("source") == source)
        found = blocks[source - first_source]
        _read_blocks(own, _header_positions(own), source, found, final=True)
        rows_used = used_lines.filter(pl.col("source") == source)["line"]
        used_by[source] = used_by.get(source, 0) + _newly_used(set(found.lines_used), [rows_used])
    parts = {name: [conform(name, p)] if name in FRAMES else p for name, p in extracted.items()}
    rows: list[dict[str, int]] = [{} for _ in texts]
    for name, frame_parts in parts.items():
        for part in frame_parts:
            for s, n in part["source"].value_counts().iter_rows():
                rows[int(s) - first_source][name] = rows[int(s) - first_source].get(name, 0) + int(n)
    # as for one log (ingest_log): a line two readers count is one line
    used = tuple(min(used_by.get(first_source + i, 0), n) for i, n in enumerate(counts))
    return BatchResult(parts, tuple(counts), used,
                       tuple(rows), tuple(blocks), faults, ranks, learned)

