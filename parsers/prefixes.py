"""Outer line prefixes added by launchers, schedulers and loggers, declared as one anchored pattern.

Order follows ../shared/reference/log_formats.md §0: container timestamp, pdsh/srun host or task label, mpirun
`[job,rank]<stdout>:`, torchrun `[default3]:`, torch `[rank0]:`, then DeepSpeed's logger
`[<ts>] [<LEVEL>] [<file>.py:<line>:<func>] ` and log_dist's `[Rank N] `. Each part is optional, so the pattern
matches every line; the groups say which parts were present.
"""
from __future__ import annotations

import re

import polars as pl

# A host label is an IPv4 address or a name with a digit or a dash in it (`node-2`, `gpu017`, `ip-10-0-0-1`):
# plain words such as `wandb:` or `Warning:` are message text, not hosts.
HOST = r"(?:[0-9]{1,3}(?:\.[0-9]{1,3}){3}|[A-Za-z][A-Za-z0-9_.]*[-0-9][A-Za-z0-9_.-]*)"

# A rank label's opening, before its number: torch's `[rank3]:`, a loop's own `[rank3] `, Lightning Fabric's
# `[rank: 3] ` (one fact for the prefix's extent, the rank readers and the rank marks of parsers/extract.py).
RANK_LABEL = r"\[rank:? ?"

OUTER_PREFIX = (
    r"^(?:(?P<iso_ts>[0-9]{4}-[0-9][0-9]-[0-9][0-9]T[0-9][0-9]:[0-9][0-9]:[0-9][0-9](?:\.[0-9]+)?"
    r"(?:Z|[+-][0-9][0-9]:?[0-9][0-9])?) )?"
    r"(?:stdout: )?"
    r"(?:(?P<host>" + HOST + r"): )?"
    r"(?:[ \t]*(?P<task>[0-9]{1,5}): )?"
    r"(?:\[(?:[0-9]+,)?(?P<mpi_rank>[0-9]+)\]<std(?:out|err)>: ?)?"
    r"(?:\[[a-z_]*?(?P<tr_rank>[0-9]+)\]: ?)?"
    r"(?:" + RANK_LABEL + r"(?P<torch_rank>[0-9]+)\](?:: ?| ))?"
    r"(?:\[?(?P<ds_ts>[0-9]{4}-[0-9][0-9]-[0-9][0-9] [0-9][0-9]:[0-9][0-9]:[0-9][0-9],[0-9]{3})\] "
    r"\[(?P<level>[A-Z]+)\] \[(?P<src>[\w.]+:[0-9]+:\w+)\] )?"
    r"(?:\[(?P<hf_level>[A-Z]+)\|(?P<hf_src>[\w.]+:[0-9]+)\] "
    r"(?P<hf_ts>[0-9]{4}-[0-9][0-9]-[0-9][0-9] [0-9][0-9]:[0-9][0-9]:[0-9][0-9],[0-9]{3}) >> )?"
    r"(?:\[transformers\] )?"
    r"(?:\[Rank (?P<ds_rank>-?[0-9]+)\] )?"
)

# The launcher's part of OUTER_PREFIX alone, without groups (container timestamp, `stdout: `, pdsh host, srun task,
# mpirun, torchrun tee, torch rank): what a copy of a line gains when it is printed through a launcher. Readers that
# look at a line's start (a logger's timestamp, a shell command) skip it.
LAUNCH_PREFIX = (r"(?:[0-9]{4}-[0-9][0-9]-[0-9][0-9]T\S+ )?(?:stdout: )?(?:" + HOST + r": )?(?:[ \t]*[0-9]{1,5}: )?"
                 r"(?:\[(?:[0-9]+,)?[0-9]+\]<std(?:out|err)>: ?)?(?:\[[a-z_]*?[0-9]+\]: ?)?"
                 r"(?:" + RANK_LABEL + r"[0-9]+\](?:: ?| ))?")

_OUTER_WHOLE = re.sub(r"\?P<\w+>", "?:", OUTER_PREFIX)  # the same pattern without its names: only its extent is used


# A counter glued to its word with a hyphen opens some loops' lines (Tutel's `STEP-10: loss = ...`, `Epoch-3: ...`):
# shaped like a pdsh host (`node-2: `), it is the line's counter, not a prefix.
_COUNTER_AS_HOST = r"^(?i:step|steps|epoch|iter|iteration|batch|update)[-_][0-9]+: "


def outer_extent(text: pl.Series) -> pl.Series:
    """The length of each line's outer prefix (0 where none): one whole match (the pattern matches every line)."""
    extent = text.str.extract(_OUTER_WHOLE, 0).str.len_chars()
    counted = text.str.contains(_COUNTER_AS_HOST).fill_null(False)
    return extent.zip_with(~counted, pl.repeat(0, text.len(), dtype=extent.dtype, eager=True)) if counted.any() \
        else extent


def strip_outer(text: pl.Series, extent: pl.Series | None = None) -> pl.Series:
    """Each line without its outer prefix (`str.replace(OUTER_PREFIX, "")`): the prefix's length taken from a whole
    match and sliced off costs half of the replace, which rebuilds every string through the regex. `extent`: the
    lengths, where the caller has them (outer_extent)."""
    return text.str.slice(outer_extent(text) if extent is None else extent)


# srun -l's task label (`3: `) and a line that opens with its own counter (darknet's ` 120: 2.48, 2.58 avg loss,
# ...`) look alike. Labels repeat, as every rank prints the same lines; a counter strictly rises line after line. So
# a source's labels that rise on every line, over COUNTING_LINES lines at least, are a counter; ranks printed once
# each in order from 0 (`0: ...`, `1: ...`, `2: ...`) stay labels.
_TASK_LABEL = r"^[ \t]*([0-9]{1,5}): "
COUNTING_LINES = 3
_LABEL_EXTENT = 9  # the longest outer prefix that is a task label alone: two blanks, five digits, `: `


def counting_labels(text: pl.Series, source: pl.Series, extent: pl.Series | None = None) -> pl.Series:
    """Per line, whether its `N: ` opening is the line's counter rather than srun's task label (see above).
    `extent`: the outer prefixes' lengths (outer_extent), where the caller has them: a label is a prefix of at most
    _LABEL_EXTENT characters, so the label's pattern runs on those lines only (a pdsh host or a container stamp is
    longer, and a line with no prefix has none)."""
    if extent is None:
        idx = text.str.contains(_TASK_LABEL).fill_null(False).arg_true()
    else:
        near = ((extent > 0) & (extent <= _LABEL_EXTENT)).fill_null(False).arg_true()
        idx = near.gather(text.gather(near).str.contains(_TASK_LABEL).fill_null(False).arg_true())
    if idx.len() == 0:
        return pl.repeat(False, text.len(), eager=True)
    label = pl.repeat(None, text.len(), dtype=pl.Int64, eager=True).scatter(
        idx, text.gather(idx).str.extract(_TASK_LABEL, 1).cast(pl.Int64, strict=False))
    frame = pl.DataFrame({"source": source, "label": label}).with_row_index("_i")
    labelled = frame.filter(pl.col("label").is_not_null())
    per = (labelled.group_by("source")
           .agg((pl.col("label").diff() > 0).all().alias("rises"), pl.len().alias("n"),
                pl.col("label").first().alias("first"), pl.col("label").diff().max().alias("gap")))
    counting = per.filter(pl.col("rises") & (pl.col("n") >= COUNTING_LINES)
                          & ((pl.col("first") > 0) | (pl.col("gap") > 1)))["source"]
    if counting.len() == 0:
        return pl.repeat(False, text.len(), eager=True)
    return (label.is_not_null() & source.is_in(counting.implode())).fill_null(False)
