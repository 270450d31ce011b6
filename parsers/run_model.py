"""The run model: every source read into the frames of parsers/schema.py plus the merged run facts."""
from __future__ import annotations

import dataclasses
import os
import re
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import polars as pl

from diagnose.parsers import configs, flight_recorder, launch_script, wandb_offline
from diagnose.parsers import lines as lines_module
from diagnose.parsers.blocks import Blocks
from diagnose.parsers.errors import InputError, Refused, fault
from diagnose.parsers.extract import max_ranks, ranks_fact_rows
from diagnose.parsers.facts import FactInputs, RunFacts, assemble
from diagnose.parsers.ingest import ingest_batch, ingest_log
from diagnose.parsers.kinds import KINDS
from diagnose.parsers.lines import MAX_LINE_BYTES, plain_text
from diagnose.parsers.names import FrameName
from diagnose.parsers.schema import FRAMES, conform
from diagnose.parsers.html_text import is_html
from diagnose.parsers.notebook import is_notebook
from diagnose.parsers.stamps import lend_years, settle
from diagnose.parsers.templates import Learned, Stream, Unread, unread_order
from diagnose.parsers.sources import (UTF16_SNIFF_BYTES, Input, gzip_truncated, head_bytes, is_binary, is_program,
                                      open_input, read_text, utf16_encoding)
from diagnose.parsers.thinning import THINNED_FRAMES, Thinner
from diagnose.parsers.tqdm_clock import STREAM as BAR_STREAM
from diagnose.parsers.tqdm_clock import number_bars, tqdm_step_times

CONFIG_MAX_BYTES = 4 * 1024 * 1024  # configs and launch scripts are small; anything bigger is read as a log
# Frames whose rows a rule reads; `facts`, `env` and `nccl` feed RunFacts and stay for evidence.
FRAME_NAMES = tuple(FRAMES)


@dataclass(frozen=True)
class SourceInfo:
    name: str
    kind: str  # log | ds_config | accelerate_config | trainer_state | launch_script | flight_recorder | wandb_*
    lines: int = 0
    recognised: int = 0
    invalid_utf8: int = 0
    bytes: int = 0
    note: str = ""  # what the reader wants the user to know about this source (e.g. no step data)


@dataclass(frozen=True)
class Skipped:
    """An input that was not read, and why (listed in reports and on stderr; the other inputs are analysed)."""

    name: str
    why: str


@dataclass(frozen=True)
class RunModel:
    frames: dict[str, pl.DataFrame]
    facts: RunFacts
    sources: tuple[SourceInfo, ...]
    skipped: tuple[Skipped, ...] = ()  # inputs that held nothing readable
    # frame -> N where the other ranks' rows of a long log were sampled 1 in N (parsers/thinning.py)
    thinned: dict[str, int] = field(default_factory=dict)
    # readers and line kinds that raised on some input ("line kind X: ValueError: ..."); the rest was read
    faults: tuple[str, ...] = ()
    # progress streams learned from the logs' own templates (parsers/templates.py), and the most frequent templates
    # no reader understood, each with a sample line
    streams: tuple[Stream, ...] = ()
    unread: tuple[Unread, ...] = ()
    # the text of each config and launch script read (DeepSpeed JSON, accelerate YAML, scripts), by source name:
    # the recommended changes are written into these (reports/config_patch.py), never into the files themselves
    configs: dict[str, str] = field(default_factory=dict)
    # the HF Trainer's log dicts were placed one step apart: neither the steps per epoch nor `logging_steps` was in
    # the inputs, so a time between two of them is per log line, not per step (_number_hf_steps)
    hf_steps_unknown: bool = False

    def frame(self, name: FrameName) -> pl.DataFrame:
        return self.frames[name]

    @property
    def unrecognised_lines(self) -> int:
        return sum(s.lines - s.recognised for s in self.sources if s.kind == "log")

    def source_name(self, source: int) -> str:
        return self.sources[source].name if 0 <= source < len(self.sources) else "?"


@dataclass
class _Acc:
    parts: dict[str, list[pl.DataFrame]] = field(default_factory=dict)
    blocks: list[Any] = field(default_factory=list)
    ds_configs: list[tuple[int, dict[str, Any]]] = field(default_factory=list)
    accelerate: list[tuple[int, dict[str, Any]]] = field(default_factory=list)
    scripts: list[tuple[int, launch_script.LaunchScript]] = field(default_factory=list)
    embedded: list[tuple[int, launch_script.LaunchScript]] = field(default_factory=list)  # launch commands in logs
    wandb: list[tuple[int, wandb_offline.WandbRun]] = field(default_factory=list)
    sources: list[SourceInfo] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)
    thinner: Thinner = field(default_factory=Thinner)
    batch: list[_SmallLog] = field(default_factory=list)  # small logs waiting to be read together
    batch_bytes: int = 0  # their bytes, counted as they come (summing them per file was quadratic in the files)
    batch_lines: int = 0
    faults: list[str] = field(default_factory=list)  # line kinds that raised (named once each)
    reading: int | None = None  # the source id the input being read was given
    streams: list[Stream] = field(default_factory=list)
    unread: list[Unread] = field(default_factory=list)
    stream_lines: list[pl.DataFrame] = field(default_factory=list)  # (source, line) of every learned stream's lines
    configs: dict[str, str] = field(default_factory=dict)  # RunModel.configs


@dataclass(frozen=True)
class _SmallLog:
    inp: Input
    data: bytes  # what the line kinds read: a launch script's with its comments blanked
    size: int  # the file's bytes
    script: launch_script.LaunchScript | None = None  # a file that looks like a launch script
    text: str = ""  # a script's own text (its configs and the commands pasted into it are read from this)


def build(inputs: list[Input], progress: Callable[[int], None] | None = None, refresh: bool = False,
          fetch_progress: Callable[[str, int, int | None], None] | None = None) -> RunModel:
    acc = _Acc()
    for inp in inputs:
        _read_guarded(inp, acc, progress, refresh, fetch_progress)
    _flush(acc, progress)
    if not acc.sources:
        # Exit 2 only when nothing at all was read: one input keeps its own reason, several list theirs.
        explicit = {inp.name for inp in inputs if inp.explicit}
        named = [s for s in acc.skipped if s.name in explicit] or acc.skipped
        if len(named) == 1:
            raise InputError(named[0].name, named[0].why)
        listed = "; ".join(f"{s.name} ({s.why})" for s in named[:5]) + ("; ..." if len(named) > 5 else "")
        raise InputError("inputs", f"nothing recognisable in any input: {listed}")
    for name in THINNED_FRAMES:
        acc.parts[name] = acc.thinner.take(name) + acc.parts.get(name, [])
    frames = lend_years({name: _finite(settle(conform(name, acc.parts.get(name, [])))) for name in FRAME_NAMES})
    frames["steps"] = _other_loops_bars(frames["steps"], acc)
    frames["steps"], summaries = _learned_precedence(frames["steps"], acc)
    frames["steps"], uncounted = _uncounted_progress(frames["steps"])
    if summaries.height or uncounted.height:
        frames["events"] = conform("events", [frames["events"], summaries, uncounted])
    frames["events"] = once_per_step(frames["events"])
    frames["memory"] = _attach_cpu(frames["memory"], acc.parts.get("cpu_memory", []))
    facts = assemble(FactInputs(frames["facts"], frames["env"], frames["nccl"], acc.blocks, acc.ds_configs,
                                acc.accelerate, acc.scripts, acc.wandb, acc.embedded, acc.faults,
                                frames["stated"]))
    steps, hf_steps_unknown = _number_hf_steps(frames["steps"], facts.hf.get("Num update steps per epoch"),
                                               facts.logging_steps)
    try:
        steps = tqdm_step_times(steps, frames["progress"])
    except Exception as e:  # noqa: BLE001 - a bar it cannot undo keeps its printed rates; the report still comes
        acc.faults.append(fault("tqdm clock", e))
    frames["steps"] = fill_step_times(_number_epoch_bars(steps), frames["progress"])
    facts = dataclasses.replace(facts, framework=framework_of(frames, facts, acc))
    thinned = {name: n for name, n in acc.thinner.stride.items() if n > 1} | {
        f"{name} (lowest rank)": n for name, n in acc.thinner.primary_stride.items() if n > 1}
    unread = tuple(sorted(acc.unread, key=unread_order))
    return RunModel(frames, facts, tuple(acc.sources), tuple(acc.skipped), thinned, tuple(acc.faults),
                    tuple(acc.streams), unread, dict(acc.configs), hf_steps_unknown)


def _finite(frame: pl.DataFrame) -> pl.DataFrame:
    """No infinite number in a frame, and no NaN time: `1e400` or a 40-digit count printed by a broken run is no
    measurement (a NaN loss is, and stays)."""
    cols = [c for c, t in frame.schema.items() if t in (pl.Float64, pl.Float32)]
    if not cols or frame.height == 0:
        return frame

    def bad(c: str) -> pl.Expr:
        return pl.col(c).is_infinite() | pl.col(c).is_nan() if c.endswith(("_s", "_ms")) else pl.col(c).is_infinite()

    if not frame.select(pl.any_horizontal(bad(c).any() for c in cols)).item():
        return frame
    return frame.with_columns(pl.when(bad(c)).then(None).otherwise(pl.col(c)).alias(c) for c in cols)


def _learned_precedence(steps: pl.DataFrame, acc: _Acc) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Where a learned stream reads a source's steps, the general `progress` kind gives way: its rows on the
    stream's lines go (the stream read them whole), and its rows elsewhere in that source are lines that do not
    advance with the stream (totals, `Overall training speed`, summaries): events, not steps."""
    clocked = {s.source for s in acc.streams if s.step_clock}
    if not acc.stream_lines or not clocked:
        return steps, pl.DataFrame()
    steps = _given_way(steps)
    lines = pl.concat(acc.stream_lines).unique()
    progress = (pl.col("origin") == "progress") & pl.col("source").is_in(sorted(clocked))
    on_stream = steps.join(lines.with_columns(pl.lit(True).alias("_on")), on=["source", "line"], how="left")
    summaries = on_stream.filter(progress & pl.col("_on").is_null())
    kept = on_stream.filter(~progress).drop("_on")
    return kept, _summary_events(summaries)


def _summary_events(rows: pl.DataFrame) -> pl.DataFrame:
    """Progress rows that are no steps, as `summary` events (their duration kept as the event's value)."""
    return rows.select("source", "line", "rank", "node", "ts", pl.lit("summary").alias("kind"),
                       pl.col("step_time_s").alias("value_from"), pl.lit("progress").alias("origin"))


MIN_COUNTED = 3  # the general progress kind's rows with a counter that make a source's lines a counted stream


def _uncounted_progress(steps: pl.DataFrame) -> tuple[pl.DataFrame, pl.DataFrame]:
    """The general `progress` kind's rows with no counter, in a source where MIN_COUNTED of its rows count steps: a
    line that does not advance with the stream (tf_cnn_benchmarks' `total images/sec: 300.18` after its
    `80<TAB>images/sec: 37.5 ...` lines) is a summary, an event, not a step (issue 30, must 4)."""
    progress = pl.col("origin") == "progress"
    counted = (steps.filter(progress & pl.col("global_step").is_not_null()).group_by("source").len()
               .filter(pl.col("len") >= MIN_COUNTED)["source"])
    if counted.len() == 0:
        return steps, pl.DataFrame()
    loose = progress & pl.col("global_step").is_null() & pl.col("source").is_in(counted.implode())
    events = _summary_events(steps.filter(loose))
    return (steps.filter(~loose) if events.height else steps), events


def _other_loops_bars(steps: pl.DataFrame, acc: _Acc) -> pl.DataFrame:
    """A learned step clock that draws a progress bar, in a source where the tqdm kind read more bar lines: the
    trainer's `it/s` bar is the training's, and the learned one another loop's (the datasets library's `Map: ...
    examples/s` bars before and between epochs). Its rows go and it is no step clock."""
    learned = [s for s in acc.streams if s.step_clock and s.bar]
    if not learned:
        return steps
    bars = steps.filter(pl.col("origin") == "tqdm").group_by("source").agg(pl.col("line").n_unique().alias("n"))
    counts = {int(src): int(n) for src, n in bars.iter_rows()}
    other = {s.source for s in learned if counts.get(s.source, 0) > s.lines}
    if not other:
        return steps
    acc.streams[:] = [dataclasses.replace(s, step_clock=False, note="a progress bar of another loop: the trainer's "
                                          "bar is this source's step clock")
                      if s.step_clock and s.bar and s.source in other else s for s in acc.streams]
    return steps.filter(~((pl.col("origin") == "learned") & pl.col("source").is_in(sorted(other))))


_GIVES_WAY = [k.name for k in KINDS if k.gives_way]


def _given_way(steps: pl.DataFrame) -> pl.DataFrame:
    """Rows of a kind that gives way (kinds.LineKind.gives_way) on a line the learned step clock read: the clock's
    row stands (it read the line whole: jaxline's `global_step: 10` before the log dict the HF kind reads)."""
    kinds = pl.col("origin").is_in(_GIVES_WAY)
    if not _GIVES_WAY or not steps.select(kinds.any()).item():
        return steps
    learned = steps.filter(pl.col("origin") == "learned").select("source", "line").unique()
    return steps.join(learned.with_columns(pl.lit(True).alias("_by")), on=["source", "line"], how="left").filter(
        ~(kinds & pl.col("_by").fill_null(False))).drop("_by")


def _take_learned(learned: Learned, acc: _Acc, renumber: dict[int, int] | None = None) -> None:
    """A log's (or a batch's) learned streams into the model, with the source ids the model gave them."""
    import dataclasses as dc

    def new(source: int) -> int | None:
        return source if renumber is None else renumber.get(source)

    acc.streams.extend(dc.replace(s, source=n) for s in learned.streams if (n := new(s.source)) is not None)
    acc.unread.extend(dc.replace(u, source=n) for u in learned.unread if (n := new(u.source)) is not None)
    for lines in learned.lines:
        if renumber is not None:
            lines = lines.filter(pl.col("source").is_in(list(renumber))).with_columns(
                pl.col("source").replace_strict(renumber, return_dtype=pl.UInt32))
        acc.stream_lines.append(lines)


def _read_guarded(inp: Input, acc: _Acc, progress: Callable[[int], None] | None, refresh: bool = False,
                  fetch_progress: Callable[[str, int, int | None], None] | None = None, batch: bool = True) -> None:
    """Read one input; an unreadable one is listed as skipped with why, and the rows it left are dropped."""
    acc.reading = None
    if inp.skip:
        acc.skipped.append(Skipped(inp.name, inp.skip))
        return
    try:
        if inp.path is not None and inp.path.is_dir() and wandb_offline.is_legacy_run_dir(inp.path):
            run = wandb_offline.read_legacy(inp.path)
            _add_wandb_run(inp.name, run, _next_id(acc, progress), acc, progress, 0)
        elif inp.wandb is not None:
            from diagnose.parsers import wandb_api

            run = wandb_api.fetch(inp.wandb, refresh=refresh, progress=fetch_progress)  # type: ignore[arg-type]  # a ref
            _add_wandb_run(inp.name, run, _next_id(acc, progress), acc, progress, 0)
        else:
            _read_one(inp, acc, progress, batch)
    except InputError as e:
        acc.skipped.append(Skipped(inp.name, e.why))
    except OSError as e:
        acc.skipped.append(Skipped(inp.name, e.strerror or str(e)))
    except RecursionError:
        acc.skipped.append(Skipped(inp.name, "nested too deeply to read"))
    except Refused as e:
        acc.skipped.append(Skipped(inp.name, str(e)))
    except (ValueError, TypeError, OverflowError, KeyError, pl.exceptions.PolarsError) as e:
        # Malformed content the readers did not expect (wrong JSON types, absurd numbers): that input is
        # unreadable, not the program broken; named with the error so a real bug still shows.
        acc.skipped.append(Skipped(inp.name, f"malformed ({type(e).__name__}: {str(e).splitlines()[0][:120]})"))
    if acc.reading is not None and len(acc.sources) <= acc.reading:  # skipped: rows its log pass left go
        acc.thinner.drop_source(acc.reading)


def _read_one(inp: Input, acc: _Acc, progress: Callable[[int], None] | None, batch: bool = True) -> None:
    path = inp.path
    assert path is not None
    if not path.is_file():
        raise InputError(inp.name, "not a regular file (a FIFO, socket or device in a directory): not opened")
    head = head_bytes(path)
    if wandb_offline.is_wandb_file(head):
        _read_wandb(inp, path, _next_id(acc, progress), acc, progress)
        return
    if flight_recorder.is_dump(path, head):
        try:
            rows = flight_recorder.read(path, _next_id(acc, progress))
        except ValueError as e:
            raise InputError(inp.name, f"Flight Recorder dump not read: {e}") from None
        acc.parts.setdefault("events", []).append(rows)
        acc.sources.append(SourceInfo(inp.name, "flight_recorder", lines=1, recognised=1, bytes=path.stat().st_size))
        return
    if is_binary(head):
        raise InputError(inp.name, "binary file, not a log, config or launch script")
    if not inp.explicit and is_program(head, path):
        raise InputError(inp.name, "program source, not a log, config or launch script (name it to read it)")
    size = path.stat().st_size
    if wandb_offline.sniff_panel_csv(head[:4096].decode("utf-8", "replace")):
        run = wandb_offline.read_panel_csv(path)
        _add_wandb_run(inp.name, run, _next_id(acc, progress), acc, None, size, "wandb_panel_csv")
        return
    script: launch_script.LaunchScript | None = None
    if size <= CONFIG_MAX_BYTES:
        raw: bytes | None = path.read_bytes()
        if raw is not None and (raw[:2] == b"\x1f\x8b" or utf16_encoding(raw[:UTF16_SNIFF_BYTES]) or is_html(raw)
                                or is_notebook(raw)):
            # gzip (decompressed as a capped stream), UTF-16, a web page or a notebook: read as the text they hold
            raw = None
        text = read_text(path) if raw is None else raw.decode("utf-8", "replace")
        sniffed = _sniff_small(inp, text)
        if sniffed is None and raw is not None and batch and _batchable(raw):
            _add_to_batch(acc, _SmallLog(inp, raw, len(raw)), progress)
            return
        if sniffed is not None and sniffed[0] == "launch_script":
            script = launch_script.parse_script(text)
            # Its lines read with the small logs' batch (a chunk of its own costs the line kinds' fixed cost).
            if batch and raw is not None and _batchable(raw):
                _add_to_batch(acc, _SmallLog(inp, _blank_comments(text).encode(), len(raw), script, text), progress)
                return
        source_id = _next_id(acc, progress)
        if script is None and sniffed is not None:
            _record_config(sniffed, source_id, acc)
            acc.sources.append(SourceInfo(inp.name, sniffed[0], bytes=size))
            if sniffed[0] in CONFIG_KINDS and _given(inp):
                acc.configs.setdefault(inp.name, text)
            return
    else:
        source_id = _next_id(acc, progress)
    # The launch command a log opens with (`+ srun ...` traces, `export NCCL_DEBUG=...`, `$ torchrun ...`): its
    # settings are read too, and so is a config pasted whole (into a log, or a script's heredoc). They sit at the
    # top, so the head is enough. Python's patterns over it take a third of a second on a long log's head: they run
    # on a thread of their own while the chunks are read, not after.
    opening = _OPENING.submit(_opening, path)
    if script is not None:
        # A script's comments say what it meant (`# a checkpoint saved every 10 steps`), not what ran: they are
        # blanked (line numbers kept) before its lines go through the line kinds.
        import io

        result = ingest_log(io.BytesIO(_blank_comments(text).encode()), source_id, progress, acc.thinner)
        truncated = False
    else:
        with open_input(path) as fh:
            result = ingest_log(fh, source_id, progress, acc.thinner)
            truncated = gzip_truncated(fh)
    # No file is judged by its kind alone: a launch script's settings are launcher facts and the log lines pasted
    # into it (an issue body: prose, the script, then its output) are log lines, read like any log's.
    is_script = _is_script(script, path, result.rows)
    if script is not None and is_script:
        acc.scripts.append((source_id, script))
        if _given(inp):
            acc.configs.setdefault(inp.name, text)
    notes = (["truncated gzip: read what it holds"] if truncated else []) + (
        ["a NUL-padded tail (what a crashed node leaves) ignored"] if _nul_tail(path) else []) + (
        [f"{result.stats.cut_lines} line(s) longer than {MAX_LINE_BYTES >> 20} MiB cut there (the rest skipped)"]
        if result.stats.cut_lines else [])
    info = SourceInfo(inp.name, "launch_script" if is_script else "log", lines=result.stats.physical_lines,
                      recognised=result.used_lines, invalid_utf8=result.stats.invalid_utf8, bytes=size,
                      note="; ".join(notes))
    acc.faults.extend(f for f in result.faults if f not in acc.faults)
    if not is_script and result.used_lines == 0 and not any(result.rows.values()) and not result.ranks:
        # Text that no reader understood still gets a report of what could be read (nothing, and the layouts it
        # holds); only an empty input is refused.
        if result.text_lines == 0 or _blank(path):
            raise InputError(inp.name, "empty: no text to read")
        cut = f", {result.stats.cut_lines} over {MAX_LINE_BYTES >> 20} MiB cut" if result.stats.cut_lines else ""
        notes.append(f"nothing recognised in {max(result.text_lines, result.stats.physical_lines)} lines{cut}")
        info = dataclasses.replace(info, note="; ".join(notes))
    acc.sources.append(info)
    _take_learned(result.learned, acc)
    for name, parts in result.parts.items():
        acc.parts.setdefault(name, []).extend(parts)
    if result.ranks:
        acc.parts.setdefault("facts", []).append(ranks_fact_rows(max_ranks(result.ranks)))
    acc.blocks.append((source_id, result.blocks))
    _comms_from_table(result.blocks, source_id, acc)
    _take_embedded(opening.result(), source_id, acc, commands=not is_script)


_OPENING = ThreadPoolExecutor(max_workers=1, thread_name_prefix="opening")
Embedded = tuple[str | None, list[tuple[int, str, Any]]]  # launch_script.embedded_script, configs.embedded_configs


def _opening(path: Path) -> Embedded:
    with open_input(path) as fh:
        return _carried(plain_text(fh.read(EMBEDDED_SCRIPT_BYTES).decode("utf-8", "replace")))


def _carried(text: str) -> Embedded:
    return launch_script.embedded_script(text), configs.embedded_configs(text)


def _embedded(text: str, source_id: int, acc: _Acc, commands: bool = True) -> None:
    """What a text carries besides its lines: the launch commands in a log, and configs pasted whole into it."""
    _take_embedded(_carried(text), source_id, acc, commands)


def _take_embedded(found: Embedded, source_id: int, acc: _Acc, commands: bool) -> None:
    script, pasted = found
    if commands and script is not None:
        acc.embedded.append((source_id, launch_script.parse_script(script)))
    for _, kind, data in pasted:
        _record_config((kind, data), source_id, acc)


EMBEDDED_SCRIPT_BYTES = 4 * 1024 * 1024


def _blank(path: Path) -> bool:
    """Whether a file (gzip read through) holds nothing but white space: read until its first other byte."""
    with open_input(path) as fh:
        while block := fh.read(1 << 20):
            if block.strip():
                return False
    return True


def _blank_comments(text: str) -> str:
    return re.sub(r"(?m)^[ \t]*#[^\n]*", "", text)


def _nul_tail(path: Path) -> bool:
    with open(path, "rb") as fh:
        head = fh.read(UTF16_SNIFF_BYTES)
        # a gzip trailer's size field often ends in a zero byte, UTF-16 text in one: not a crashed tail
        if head[:2] == b"\x1f\x8b" or utf16_encoding(head):
            return False
        fh.seek(0, 2)
        if fh.tell() == 0:
            return False
        fh.seek(-1, 2)
        return fh.read(1) == b"\x00"


def _has_shebang(path: Path) -> bool:
    """`#!/bin/bash` or `#SBATCH` at the top: a script, whatever lines of it a log kind also matches (a comment
    that says "checkpoint saved every 10 steps")."""
    head = head_bytes(path, 4096)
    return head.startswith(b"#!") or b"\n#SBATCH" in b"\n" + head


def _is_script(script: launch_script.LaunchScript | None, path: Path | None, rows: dict[str, int]) -> bool:
    """A file that looks like a script (`script`) is one with a shebang or `#SBATCH` at the top, or when its shell
    lines outnumber the lines a log kind read (`rows`: per frame; environment variables aside, which both see): a
    log that opens with `export NCCL_DEBUG=info` / `srun ...` is a log."""
    if script is None:
        return False
    if path is not None and _has_shebang(path):
        return True
    log_rows = sum(n for name, n in rows.items() if name != "env")
    return len(script.commands) + len(script.env) + len(script.sbatch) > log_rows


def _read_wandb(inp: Input, path: Path, source_id: int, acc: _Acc, progress: Callable[[int], None] | None) -> None:
    """An offline run's transaction log: history, system metrics, config, and the console output as a log."""
    try:
        run = wandb_offline.read(path)
    except ValueError as e:
        raise InputError(inp.name, str(e)) from None
    name = inp.name + (" (truncated)" if run.truncated else "")
    _add_wandb_run(name, run, source_id, acc, progress, path.stat().st_size)


def _add_wandb_run(name: str, run: wandb_offline.WandbRun, source_id: int, acc: _Acc,
                   progress: Callable[[int], None] | None, size: int, kind: str = "wandb_run") -> None:
    """Offline or fetched, a W&B run lands in the same frames: history -> steps, stats -> system, console -> log."""
    import io

    console = "\n".join(run.output).encode()
    result = ingest_log(io.BytesIO(console), source_id, progress, acc.thinner)
    lines = len(run.history) + len(run.stats) + result.stats.physical_lines
    note = "" if len(run.history) or len(run.stats) or result.used_lines else \
        "no step data: only the run's metadata, summary and config"
    acc.sources.append(SourceInfo(name, kind, lines=lines,
                                  recognised=len(run.history) + len(run.stats) + result.used_lines, bytes=size,
                                  note=note))
    _take_learned(result.learned, acc)
    for frame, parts in result.parts.items():
        acc.parts.setdefault(frame, []).extend(parts)
    if result.ranks:
        acc.parts.setdefault("facts", []).append(ranks_fact_rows(max_ranks(result.ranks)))
    acc.blocks.append((source_id, result.blocks))
    acc.parts.setdefault("steps", []).append(wandb_offline.steps_frame(run.history, source_id))
    acc.parts.setdefault("system", []).append(wandb_offline.system_frame(run.stats, source_id))
    acc.wandb.append((source_id, run))


def _sniff_small(inp: Input, text: str) -> tuple[str, Any] | None:
    """A config or launch script -> (kind, its data); None when the file is a log after all."""
    stripped = text.lstrip()
    if stripped.startswith("{"):
        # JSON that is no config we know (`metrics.json`, JSON lines) is read line by line like any text: its
        # `"name": value` pairs are what the template reader learns from.
        return configs.sniff_json(stripped)
    if (py_cfg := configs.sniff_python_dict(text)) is not None:
        return "ds_config", py_cfg
    if (yaml_cfg := configs.sniff_yaml(text)) is not None:
        return "accelerate_config", yaml_cfg
    if launch_script.looks_like_script(text):
        return "launch_script", None  # or a log that opens with its launch command: _read_one decides by majority
    return None


def _record_config(sniffed: tuple[str, Any], source_id: int, acc: _Acc) -> None:
    kind, data = sniffed
    if kind == "ds_config":
        acc.ds_configs.append((source_id, data))
    elif kind == "accelerate_config":
        acc.accelerate.append((source_id, data))
    else:
        acc.parts.setdefault("steps", []).append(configs.trainer_state_steps(data, source_id))


# The sources whose text the run model keeps for the recommended changes (RunModel.configs).
CONFIG_KINDS = ("ds_config", "accelerate_config", "launch_script")


def _given(inp: Input) -> bool:
    """A file the user gave, whose corrected version a report may show as theirs: one named (an upload, a path) or
    a file on this machine; not a piece of a thread or a URL's download."""
    return inp.explicit or os.path.isfile(inp.name)
# Logs up to this size are read together, many to one chunk, up to BATCH_BYTES at a time (3,000 logs of 2 KB: 85 s
# one by one, each paying the line kinds' fixed cost of ~13 ms a chunk).
SMALL_LOG_BYTES = 256 * 1024
BATCH_BYTES = 16 * 1024 * 1024


# A batch is read when it reaches BATCH_BYTES or half of lines.MAX_CHUNK_ROWS lines, and a file of more than a quarter
# of them is read alone (in pieces where dense), so a batch stays under MAX_CHUNK_ROWS. Lines are counted per batch,
# not per file: a file of one short line (`step 1 loss 2.5`) is batched too (read alone, 100,000 of them took
# minutes, each a chunk of its own).


def _add_to_batch(acc: _Acc, small: _SmallLog, progress: Callable[[int], None] | None) -> None:
    acc.batch.append(small)
    acc.batch_bytes += len(small.data)
    acc.batch_lines += small.data.count(b"\n") + 1
    if acc.batch_bytes >= BATCH_BYTES or acc.batch_lines >= lines_module.MAX_CHUNK_ROWS // 2:
        _flush(acc, progress)


def _batchable(raw: bytes) -> bool:
    """A small plain log that reads the same alone or in a batch: valid UTF-8 (damage is counted per file), no
    NUL-padded tail (noted per file)."""
    if len(raw) > SMALL_LOG_BYTES or raw.endswith(b"\x00") or raw.count(b"\n") > lines_module.MAX_CHUNK_ROWS // 4:
        return False
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def _next_id(acc: _Acc, progress: Callable[[int], None] | None) -> int:
    """The source id for the input being read: the waiting small logs take theirs first, in input order."""
    _flush(acc, progress)
    acc.reading = len(acc.sources)
    return acc.reading


def _flush(acc: _Acc, progress: Callable[[int], None] | None) -> None:
    """Read the waiting small logs as one batch; each keeps its own source entry, or is skipped like a log read
    alone when nothing in it is recognisable."""
    batch, acc.batch, acc.batch_bytes, acc.batch_lines = acc.batch, [], 0, 0
    if not batch:
        return
    first = len(acc.sources)
    try:
        result = ingest_batch([s.data for s in batch], first)
    except pl.exceptions.PolarsError:
        for small in batch:  # one odd file must not cost the others: each is read alone, as it would be unbatched
            _read_guarded(small.inp, acc, progress, batch=False)
        return
    final: dict[int, int] = {}
    acc.faults.extend(f for f in result.faults if f not in acc.faults)
    for i, small in enumerate(batch):
        named_ranks = result.ranks is not None and (result.ranks["source"] == first + i).any()
        is_script = _is_script(small.script, small.inp.path, result.rows[i])
        unread = not is_script and result.used[i] == 0 and not any(result.rows[i].values()) and not named_ranks
        if unread and not small.data.strip():
            acc.skipped.append(Skipped(small.inp.name, "empty: no text to read"))
            continue
        final[first + i] = len(acc.sources)
        if small.script is not None and is_script:
            acc.scripts.append((final[first + i], small.script))
            if _given(small.inp):
                acc.configs.setdefault(small.inp.name, small.text)
        acc.sources.append(SourceInfo(small.inp.name, "launch_script" if is_script else "log", lines=result.lines[i],
                                      recognised=result.used[i], bytes=small.size,
                                      note=f"nothing recognised in {result.lines[i]} lines" if unread else ""))
        acc.blocks.append((final[first + i], result.blocks[i]))
        _comms_from_table(result.blocks[i], final[first + i], acc)
        _embedded(plain_text(small.text or small.data.decode("utf-8")), final[first + i], acc,
                  commands=not is_script)
    renumber = pl.col("source").replace_strict(final, return_dtype=pl.UInt32)
    _take_learned(result.learned, acc, final)
    if result.ranks is not None and result.ranks.height:
        kept = result.ranks.filter(pl.col("source").is_in(list(final)))
        if kept.height:
            acc.parts.setdefault("facts", []).append(ranks_fact_rows(kept.with_columns(renumber)))
    for name, parts in result.parts.items():
        for part in parts:
            part = part.with_columns(renumber) if part.height else part
            if name in THINNED_FRAMES:
                acc.thinner.add(name, part)
            else:
                acc.parts.setdefault(name, []).append(part)
    if progress:
        progress(sum(len(s.data) for s in batch))


def _comms_from_table(blocks: Blocks, source_id: int, acc: _Acc) -> None:
    for rows, origin in ((blocks.comms, "comms_table"), (blocks.comms_straggler, "comms_straggler")):
        if rows:
            where = blocks.where.get(origin, (source_id, 0))
            frame = pl.DataFrame(rows).with_columns(
                pl.lit(source_id, dtype=pl.UInt32).alias("source"), pl.lit(where[1], dtype=pl.UInt32).alias("line"),
                pl.lit(origin).alias("origin"))
            acc.parts.setdefault("comms", []).append(frame)


def _number_epoch_bars(steps: pl.DataFrame) -> pl.DataFrame:
    """A tqdm bar described `Epoch N` counts within its epoch (Lightning draws one per epoch): its steps are
    numbered on from the epochs before, each a bar's total, counted from the first epoch the source shows. Its step
    times were read per bar already (tqdm_clock: each epoch's bar restarts its clock)."""
    if "epoch" not in steps.columns or steps.height == 0:
        return steps
    per_epoch = (pl.col("origin") == "tqdm") & pl.col("epoch").is_not_null() & pl.col("total_steps").is_not_null()
    stream = ["source", "rank", "node"]
    first = pl.col("epoch").filter(per_epoch).min().over(stream)
    before = ((pl.col("epoch") - first) * pl.col("total_steps")).cast(pl.Int64, strict=False)
    steps = steps.with_columns(pl.when(per_epoch).then(pl.col("global_step") + before)
                               .otherwise(pl.col("global_step")).alias("global_step"))
    return _number_restarted_bars(steps)


# A training bar that ends and a bar of the same length that starts again are the next epoch's (ultralytics'
# `1/2 ... 300/300` then `2/2 ... 10/300`, llama-recipes' `Training Epoch: 2/3, step 10/300`), where no `Epoch N`
# says so: the last count shown at least this share of the total, the next bar's first count at most the other
# share of it (a paste printed every N steps shows neither end exactly). A count that falls back elsewhere (a run
# relaunched from a checkpoint) is left as printed.
BAR_END_SHARE = 0.9
BAR_START_SHARE = 0.1


def _number_restarted_bars(steps: pl.DataFrame) -> pl.DataFrame:
    """Each epoch's bar numbered on from the bars before it, where no epoch is printed (_number_epoch_bars). The
    bars are the tqdm clock's (number_bars: the longest bar of each stream, a count that falls back starts one)."""
    if "epoch" not in steps.columns or steps.height == 0:
        return steps
    unmarked = (pl.col("origin") == "tqdm") & pl.col("epoch").is_null() & pl.col("global_step").is_not_null()
    rows = steps.lazy().with_row_index("_i").filter(unmarked).select(
        "_i", "source", "rank", "node", "origin", "line", "global_step", "total_steps").collect()
    if rows.height == 0:
        return steps
    rows = number_bars(rows)
    bars = (rows.group_by(*BAR_STREAM, "_bar")
            .agg(pl.col("global_step").first().alias("_first"), pl.col("global_step").max().alias("_last"),
                 pl.col("total_steps").first().alias("_total"))
            .sort(*BAR_STREAM, "_bar"))
    ended = pl.col("_last").shift(1).over(BAR_STREAM) >= BAR_END_SHARE * pl.col("_total").shift(1).over(BAR_STREAM)
    started = pl.col("_first") <= BAR_START_SHARE * pl.col("_total")
    carried = pl.when(ended & started).then(pl.col("_total").shift(1).over(BAR_STREAM)).otherwise(0).fill_null(0)
    bars = bars.with_columns(carried.cum_sum().over(BAR_STREAM).alias("_before")).filter(pl.col("_before") > 0)
    if bars.height == 0:
        return steps
    moved = rows.join(bars.select(*BAR_STREAM, "_bar", "_before"), on=[*BAR_STREAM, "_bar"])
    numbered = steps["global_step"].scatter(moved["_i"], moved["global_step"] + moved["_before"])
    return steps.with_columns(numbered)


def _number_hf_steps(steps: pl.DataFrame, steps_per_epoch: int | None,
                     logging_steps: int | None) -> tuple[pl.DataFrame, bool]:
    """HF loss dicts carry no step: epoch x update-steps-per-epoch gives it, else the dict's ordinal, in steps where
    the run's `logging_steps` is known (a dict every 5 steps is 5 steps' time, not one's). -> (the steps, whether
    dicts were placed one step apart for want of either)."""
    unplaced = (pl.col("origin") == "hf_log") & pl.col("global_step").is_null()
    ordinal = (pl.int_range(1, pl.len() + 1).over("source", "rank", "origin")).cast(pl.Int64) * (logging_steps or 1)
    by_epoch = (pl.col("epoch") * steps_per_epoch).round().cast(pl.Int64, strict=False) if steps_per_epoch else ordinal
    unknown = not steps_per_epoch and not logging_steps and bool(steps.select(unplaced.any()).item())
    return steps.with_columns(pl.when(unplaced).then(by_epoch).otherwise(pl.col("global_step"))
                              .alias("global_step")), unknown


# Line kinds (steps and facts origins) that only a framework's own training loop prints.
_FRAMEWORK_KINDS = (
    ("megatron", {"megatron_iter", "megatron_world", "megatron_dp", "megatron_tp", "megatron_pp", "megatron_memory",
                  "megatron_arg"}),
    ("dschat", {"dschat_step", "dschat_rlhf_step"}),
    ("hf_trainer", {"hf_log", "hf_train_runtime", "hf_running_training", "hf_block_value", "eval_result"}),
    ("lightning", {"lightning_member"}),
)
_HF_TRAINER_ARGS = {"per_device_train_batch_size", "gradient_accumulation_steps", "dataloader_num_workers", "output_dir"}


def framework_of(frames: dict[str, pl.DataFrame], facts: RunFacts, acc: _Acc) -> str | None:
    """The training loop the run uses, from what it printed: Megatron, DeepSpeed-Chat, the HF Trainer (and the
    trainers built on it, which print its log dicts), Lightning; `custom` for a log of anything else; None when no
    log, W&B run or script was read."""
    seen = set(frames["steps"]["origin"].unique().cast(pl.String).to_list()) | \
        set(frames["facts"]["origin"].unique().cast(pl.String).to_list())
    for name, kinds in _FRAMEWORK_KINDS:
        if seen & kinds:
            return name
    wandb_cfg = {k for _, run in acc.wandb for k in getattr(run, "config", {})}
    if _HF_TRAINER_ARGS & (set(facts.script_args) | wandb_cfg) or (frames["facts"]["key"] == "repr.args").any():
        return "hf_trainer"
    if any(s.kind in ("log", "wandb_run", "launch_script") for s in acc.sources):
        return "custom"
    return None


COARSE_SHARE = 0.1  # more than 1 in 10 cumulative differences of zero: the printed time is coarser than a step


def fill_step_times(steps: pl.DataFrame, progress: pl.DataFrame) -> pl.DataFrame:
    """Step times where a trainer prints only a cumulative training time or a running average: the difference of
    consecutive cumulative times over the steps between them (per source and rank, in line order; a repeated step,
    such as an evaluation line, gives no difference), else the running average as printed."""
    # tqdm's elapsed column is read by parsers/tqdm_clock.py, with the bar's rates
    timed = progress.filter((pl.col("origin") != "tqdm")
                            & (pl.col("cum_time_s").is_not_null() | pl.col("avg_step_time_s").is_not_null()))
    if steps.height == 0 or timed.height == 0:
        return steps
    key = ["source", "rank"]
    steps = steps.join(timed.select("source", "line", "cum_time_s", "avg_step_time_s").unique(["source", "line"]),
                       on=["source", "line"], how="left")
    cum = (steps.with_row_index("_i").filter(pl.col("cum_time_s").is_not_null() & pl.col("global_step").is_not_null())
           .sort("source", "line", maintain_order=True)
           .with_columns(pl.col("cum_time_s").diff().over(key).alias("_dt"), pl.col("global_step").diff().over(key)
                         .alias("_ds"))
           .with_columns((pl.col("_dt") / pl.col("_ds")).alias("_d")))
    # A time printed coarser than a step lasts (`elapsed=0.6s` for 24 ms steps) gives zero differences: there the
    # mean rate over the stream stands for each step (its level is right, its shape is not in the log).
    coarse = ((pl.col("_dt") <= 0) & (pl.col("_ds") > 0)).mean().over(key) > COARSE_SHARE
    rate = ((pl.col("cum_time_s").max() - pl.col("cum_time_s").min())
            / (pl.col("global_step").max() - pl.col("global_step").min())).over(key)
    cum = (cum.with_columns(pl.when(coarse).then(rate).otherwise(pl.col("_d")).alias("_d"))
           .filter(pl.col("_d").is_finite() & (pl.col("_d") > 0) & (pl.col("_ds") > 0)).select("_i", "_d"))
    out = steps.with_row_index("_i").join(cum, on="_i", how="left")
    return out.with_columns(pl.coalesce("step_time_s", "_d", "avg_step_time_s").alias("step_time_s")) \
        .drop("_i", "_d", "cum_time_s", "avg_step_time_s")


# Messages that every rank prints for the same step: counted once per step, not once per rank.
PER_STEP_EVENTS = ("overflow", "loss_scale", "allocator_flush")


def once_per_step(events: pl.DataFrame) -> pl.DataFrame:
    """Collapse a step's copies of a per-rank message. Copies are the same message (kind, values, text with the
    rank taken out) printed in a row by different ranks; a rank printing it again starts the next step's copy."""
    if events.height == 0:
        return events
    is_per_step = pl.col("kind").is_in(PER_STEP_EVENTS)
    rank = pl.coalesce(pl.col("rank"), pl.col("detail").str.extract(r"[Rr]ank (\d+)").cast(pl.Int32, strict=False))
    key = pl.concat_str(pl.col("kind"), pl.col("value_from").cast(pl.String), pl.col("value_to").cast(pl.String),
                        pl.col("count").cast(pl.String),
                        pl.col("detail").str.replace_all(r"[Rr]ank \d+", ""), separator="|", ignore_nulls=True)
    ev = events.with_row_index("_i").with_columns(rank.alias("_rank"), key.alias("_key"))
    per = ev.filter(is_per_step).sort("source", "line")
    per = per.with_columns((pl.col("_key") != pl.col("_key").shift()).fill_null(True).cum_sum().alias("_block"))
    per = per.with_columns(pl.int_range(pl.len()).over("_block", "_rank").alias("_nth"))
    keep = pl.concat([
        per.filter(pl.col("_rank").is_null()),  # no rank known: nothing to collapse
        per.filter(pl.col("_rank").is_not_null()).unique(["_block", "_nth"], keep="first"),
    ])["_i"]
    out = ev.filter(~is_per_step | pl.col("_i").is_in(keep.implode()))
    return out.drop("_i", "_rank", "_key")


def _attach_cpu(memory: pl.DataFrame, cpu_parts: list[pl.DataFrame]) -> pl.DataFrame:
    """`CPU Virtual Memory:` follows its MA line; join on the next physical line of the same source."""
    if not cpu_parts or memory.height == 0:
        return memory
    cpu = pl.concat(cpu_parts).select(
        "source", (pl.col("line") - 1).cast(pl.UInt32).alias("line"), "cpu_used_gb", "cpu_percent"
    ).unique(subset=["source", "line"], keep="first")
    return memory.drop("cpu_used_gb", "cpu_percent").join(cpu, on=["source", "line"], how="left").select(
        memory.columns)
