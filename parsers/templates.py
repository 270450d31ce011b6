"""A reader that learns each log's format: line templates mined from the log itself, and the numbers in them given
roles by one vocabulary (parsers/vocabulary.py) and by their statistics.

Mining (per chunk, polars): every line that no anchored line kind claimed and that holds a digit is peeled of its
launcher and logger prefix; stamps, hex ids, paths, progress bars and the digits inside identifiers (`fp16`,
`acc5`) are masked, and every number (`3.2e-05`, `80,314`, `-0.5`) and clock duration (`0:08:01`, `00:24`) becomes
a slot. The masked text, white space folded, is the line's template: `iter 120: loss 3.2, time 350ms` and `iter
130: loss 3.1, time 352ms` share `iter #: loss #, time #ms`. Rows keep the template's hash and the slots' values.

Learning (per source, once its lines are all read): a template of at least MIN_LINES lines (MIN_LINES_PASTE in a
paste) whose slots include a counter is a progress stream. Each slot is named by the text before it (`Time`,
`data_time`, `timing_s/gen`, `tps`) and given a role: by that name (the vocabulary), else by the unit after it
(`ms/step`, `it/s`, `img/sec`), else by statistics (a slot that only grows is cumulative; `v (w)` is a value and its
running average; integers that step up are a counter, `i/n` a counter and its total, `[e][i/n]` an epoch beside).
A duration's unit comes from its suffix or name, else from agreement with the line stamps (within UNIT_AGREEMENT),
which also tell a per-step time from one printed per interval. Each role carries how it was decided.

What this gives: steps-frame rows (origin `learned`) for the training streams, one step clock per source; the
streams and their roles (RunModel.streams) and the most frequent templates no reader understood, each with a sample
line (RunModel.unread), for the report. Known line kinds keep their meaning and precedence: learning sees only the
lines no anchored kind claimed, and where a learned stream and the general `progress` kind read the same lines the
learned stream's reading stands (run_model.build).
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass, field, replace

import polars as pl

from diagnose.parsers import vocabulary as vocab
from diagnose.parsers.literals import any_of
from diagnose.parsers.prefixes import counting_labels, outer_extent, strip_outer
from diagnose.parsers.stamps import LEADING, LEADING_HINT, STAMP, STAMP_HINT
from diagnose.parsers.scalars import number, whole

MIN_LINES = 3  # a template printed fewer times is not a stream
MIN_LINES_PASTE = 2  # ... except in a paste, where two lines of one layout are all a user may have
PASTE_MAX_LINES = 400  # a source of at most this many lines is a paste
MAX_TEMPLATES = 200  # templates examined per source, most frequent first (a log has a handful that matter)
UNREAD_SHOWN = 5  # templates no reader understood, listed in the report
UNIT_AGREEMENT = 0.3  # a printed duration agrees with the stamps when within 30% of the wall time per step
PRUNE_ROWS = 8  # a template printed this often in one chunk is judged there whether it can be a stream
PRUNE_HOLD_SHARE, PRUNE_UP_SHARE = 0.5, 0.3  # ... leniently: ranks interleave there, and learning decides
MONOTONE_SHARE = 0.7  # a counter steps up (or holds) between at least 70% of consecutive lines
CUMULATIVE_SHARE = 0.9  # a cumulative time grows between at least 90% of consecutive lines
# Names too general to say per step or in all: `time: 412` that grows in step with the counter is a running total.
GENERIC_TIME = frozenset({"time", "t", "seconds", "took", "takes", "duration", "spent", "total"})
EVEN_STEPS = 0.9  # a headless stamped table's counter: one interval between 9 in 10 of its lines
NOT_TOTAL_FALLS = 0.2  # a running total never falls; a named one that falls between 1 in 5 of its lines is none
COARSE_SHARE = 0.1  # more than 1 in 10 zero differences of a total: it is printed coarser than a step lasts
# An unnamed duration that grows this many fold over a log is a total (elapsed time), not a step time slowing down:
# the slowdowns of the corpus and the zoo are 1.3-2x over a run; an elapsed time over 60 prints grows 60-fold.
TOTAL_GROWTH = 4.0
# A bare number (no name, no unit) that grows as a running total of the steps is read as the seconds since the start
# only at this many seconds a step or more: an epoch's fraction (1/300 a step) and a learning rate in warm-up
# (1e-7 a step) grow through the origin too, but far slower than any training step takes.
BARE_TOTAL_MIN_STEP_S = 0.01
# Seconds since 1970 that are a date between 2001 and 2036: a value named as a time in this range is an instant.
EPOCH_SECONDS = (1.0e9, 2.1e9)
STAMP_SCALES = (1.0, 1e-3, 1e-6, 1e-9)  # a stamp's field in seconds, ms, us or ns since the epoch
# A step is its phases and a little more (data wait, the loss, logging): a total of a step up to twice the sum of
# the phases printed beside it is that step's; one of ten steps is not (ESPnet2's trainer: forward + backward + optim
# step are 80-95% of train_time).
PHASES_SLACK = 2.0

# Placeholders in a template: \x06 a slot (a number or a clock duration; which, the template's `clocks` says); \x01 a
# stamp, \x02 a digit run inside a name, \x03 a hex id, \x04 a path, \x07 a progress bar (masked, not slots).
SLOT_MARK = "\x06"
_SLOTS = re.compile("\x06")
# (pytorch-tabnet prints its elapsed `0:01:25s`: the `s` glued to a clock is its unit)
CLOCK = r"\b[0-9]{1,3}:[0-9][0-9](?::[0-9][0-9])?(?:\.[0-9]+)?(?:s\b|\b)"
NUMBER = (r"[-+]?(?:[0-9]{1,3}(?:,[0-9]{3})+(?:\.[0-9]+)?\b|[0-9]+(?:\.[0-9]*)?(?:[eE][-+]?[0-9]+)?"
          r"|\.[0-9]+(?:[eE][-+]?[0-9]+)?)"
          r"|\b(?:nan|NaN|inf|Inf)\b")
# A duration in two or more units (MMF's `01m 25s 234ms`, Go's `1h2m3.5s`, `5h 29m`): one slot, read as a clock is (a
# template is the same whether the run is minutes or hours in: `time: #s #ms` would become `time: #m #s #ms`). The
# spaced forms are closed up first (_JOINED, on the rows that hold one) where no `/` follows: Keras's `255s
# 850ms/step` is an epoch's time and then a step's, two numbers.
COMPOUND = (r"\b[0-9]+h[0-9]+m(?:[0-9]+(?:\.[0-9]+)?s)?(?:[0-9]+ms)?\b|\b[0-9]+m[0-9]+(?:\.[0-9]+)?s(?:[0-9]+ms)?\b"
            r"|\b[0-9]+(?:\.[0-9]+)?s[0-9]+ms\b")
# Each form's parts and the character after them, in groups of their own: the replacement is all groups in order (the
# groups of the forms that did not match are empty).
_SPACED_COMPOUND = (r"\b([0-9]+h) ?([0-9]+m)(?: ?([0-9]+(?:\.[0-9]+)?s))?(?: ?([0-9]+ms))?([^/\w]|$)"
                    r"|\b([0-9]+m) ?([0-9]+(?:\.[0-9]+)?s)(?: ?([0-9]+ms))?([^/\w]|$)"
                    r"|\b([0-9]+(?:\.[0-9]+)?s) ?([0-9]+ms)([^/\w]|$)")
_JOINED = "".join(f"${{{i}}}" for i in range(1, re.compile(_SPACED_COMPOUND).groups + 1))
# The same durations with their units spelled (Ray's `Total running time: 1hr 2min 3s`, `1 min 8 sec`, `2 hours 5
# minutes`): each form with its letters, longest first, on the rows that hold one (_SPELLED_HINT).
_H, _M, _S = r"(?:hours?|hrs?|h)", r"(?:minutes?|mins?|m)", r"(?:seconds?|secs?|s)"
_SPELLED = ((rf"\b([0-9]+) ?{_H} ?([0-9]+) ?{_M} ?([0-9]+(?:\.[0-9]+)?) ?{_S}([^/\w]|$)", "${1}h${2}m${3}s${4}"),
            (rf"\b([0-9]+) ?{_H} ?([0-9]+) ?{_M}([^/\w]|$)", "${1}h${2}m${3}"),
            (rf"\b([0-9]+) ?{_M} ?([0-9]+(?:\.[0-9]+)?) ?{_S}([^/\w]|$)", "${1}m${2}s${3}"))
_SPELLED_HINT = r"[0-9] ?(?:hours?|hrs?|minutes?|mins?)\b ?[0-9]"
SLOT = f"{COMPOUND}|{CLOCK}|{NUMBER}"
# Ids that are not quantities: `0x7f3a...`, UUIDs, commit hashes and digests (a long decimal tail is a number).
_HEX = r"\b0x[0-9a-fA-F]+\b|\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b|\b[0-9a-f]{40,64}\b"
_PATH = r"(^|[\s'\"=(])(?:~|\.{1,2})?/[\w.@+-]+(?:/[\w.@+-]+)+"
# A bar's glyphs come and go as it fills (Keras prints none at first): they are white space to a template; tqdm's
# `NN%|...|` is one masked part whatever it holds.
_GLYPHS = r"[\u2580-\u259F\u2500-\u257F]+"
_TQDM_BAR = r"%\|[^|]{0,120}\|"


def _only_where(text: pl.Series, hint: str, pattern: str, repl: str, literal_hint: bool = False) -> pl.Series:
    """`replace_all(pattern, repl)` on the rows whose cheap `hint` matches: most lines hold no stamp, id, path or
    bar, and a regex pass over every line costs more than a literal test."""
    idx = text.str.contains(hint, literal=literal_hint).fill_null(False).arg_true()
    if idx.len() == 0:
        return text
    return text.scatter(idx, text.gather(idx).str.replace_all(pattern, repl))


_SPACED = any_of(("  ", "\t"))  # white space a template folds
# A number padded to a width after a bracket (`[  10/1000]`, `( 5%)` beside `[1000/1000]`, `(50%)`): the padding is
# not the layout, so the bracket and the slot close up (close_padding, on the templates once a source is read).
_PADDED = "([\\[(]) \x06"
_PADDED_AFTER = "\x06 +([|\\])])"
_RARE = "|".join((STAMP_HINT, LEADING_HINT, r"0x|[0-9a-f]{8}", "/", r"%\|", r"[^\x00-\x7f]", r"[A-Za-z_][0-9]",
                  r"[0-9]-[0-9]", r"[A-Za-z]-[0-9]",
                  r"[0-9][hms] [0-9]", _SPELLED_HINT))


def _rare_masks(body: pl.Series) -> pl.Series:
    """Stamps, ids, paths, bars, glyphs, digits in names and `1-10` ranges masked (on rows that hold one)."""
    body = _only_where(body, STAMP_HINT, STAMP, "\x01")
    body = _only_where(body, LEADING_HINT, LEADING, "\x01 ")  # a stamp only where it opens the line (stamps.py)
    body = _only_where(body, r"0x|[0-9a-f]{8}", _HEX, "\x03")
    body = _only_where(body, "/", _PATH, "${1}\x04", literal_hint=True)
    body = _only_where(body, "%|", _TQDM_BAR, "%\x07", literal_hint=True)
    body = _only_where(body, r"[^\x00-\x7f]", _GLYPHS, " ")
    for pattern, joined in _SPELLED:
        body = _only_where(body, _SPELLED_HINT, pattern, joined)
    body = _only_where(body, r"[0-9][hms] [0-9]", _SPACED_COMPOUND, _JOINED)
    # A hyphen between a word and a number is no minus sign (Tutel's `STEP-10:`), an exponent's is (`3e-5`).
    body = _only_where(body, r"[A-Za-z]-[0-9]", r"(^|[^0-9.A-Za-z])([A-Za-z]+)-([0-9])", "${1}${2} ${3}")
    # A letter after a digit is a unit, not a name (`1h2m3s`, `1e5`): the digits after it stay a number.
    body = _only_where(body, r"[A-Za-z_][0-9]", r"(^|[^0-9])([A-Za-z_])[0-9]+", "${1}${2}\x02")
    body = _only_where(body, r"[A-Za-z_]\x02[A-Za-z_]+[0-9]", r"([A-Za-z_]\x02[A-Za-z_]+)[0-9]+", "${1}\x02")
    return _only_where(body, r"[0-9]-[0-9]", r"([0-9])-([0-9])", "${1} - ${2}")


def mine(rows: pl.DataFrame) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Unclaimed lines with a digit (source, line, text) -> (rows that may belong to a stream: source, line, tid,
    vals, text, counting (its `N: ` opening counts steps: no rank); templates: source, tid, template, sample,
    clocks, n); the caller adds rank and time to the rows. Vectorised over the chunk: one pass finds the rows that
    hold anything rare
    (a stamp, an id, a path, a bar, a digit inside a name), and only those go through the masks for them."""
    extent = rows["_extent"] if "_extent" in rows.columns else outer_extent(rows["text"])
    body = strip_outer(rows["text"], extent)
    counting = counting_labels(rows["text"], rows["source"], extent)
    if counting.any():  # darknet's ` 120: 2.48, ...`: the opening number is the line's counter, not a task label
        body = body.scatter(counting.arg_true(), rows["text"].filter(counting).str.strip_chars_start())
    idx = body.str.contains(_RARE).fill_null(False).arg_true()
    if idx.len():
        body = body.scatter(idx, _rare_masks(body.gather(idx)))
    # A line that writes its decimals with a comma (`Zeit 0,816 s`, `Verlust 2,4833`, and no `2.48` beside them) has
    # its commas between digits read as points; a comma that may be a thousands separator (`1,020`) is read so only
    # on the lines of a template that some line shows to be written that way (below).
    decimal = pl.repeat(False, body.len(), eager=True)
    commas = body.str.contains(",", literal=True).fill_null(False).arg_true()
    if commas.len():
        some = body.gather(commas)
        sure = (some.str.contains(_DECIMAL_COMMA) & ~some.str.contains(_POINTED)).fill_null(False)
        if sure.any():
            decimal = decimal.scatter(commas.filter(sure), True)
            body = body.scatter(commas.filter(sure), _comma_to_point(some.filter(sure)))
    tpl = body.str.replace_all(SLOT, SLOT_MARK)
    spaced = tpl.str.contains(_SPACED).fill_null(False).arg_true()
    if spaced.len():
        tpl = tpl.scatter(spaced, tpl.gather(spaced).str.replace_all(r"[ \t]{2,}|\t", " "))
    tpl = tpl.str.strip_chars(" .;,")
    frame = (rows.with_columns(tpl.alias("template"), body.alias("_body"), counting.alias("counting"),
                               decimal.alias("_decimal"))
             .filter(pl.col("template").str.contains(SLOT_MARK, literal=True))
             .with_columns(pl.col("template").hash().alias("tid")))
    if decimal.any():
        tids = frame.filter("_decimal")["tid"].unique()
        unsure = (pl.col("tid").is_in(tids.implode()) & ~pl.col("_decimal")
                  & pl.col("_body").str.contains(r"[0-9],[0-9]"))
        frame = frame.with_columns(pl.when(unsure).then(_comma_to_point(pl.col("_body"))).otherwise(pl.col("_body"))
                                   .alias("_body"))
    # Which slots are clocks (`0:08:01`) is the same on every line of a template: kept with the template, read from
    # its first line.
    el = pl.element()
    clocks = pl.col("_body").str.extract_all(SLOT).list.eval(_is_clock(el).cast(pl.String))
    templates = (frame.group_by("source", "tid")
                 .agg(pl.col("template").first(), pl.col("text").first().alias("sample"), pl.col("_body").first(),
                      pl.len().cast(pl.UInt32).alias("n"))
                 .with_columns(clocks.list.join("").alias("clocks")).drop("_body"))
    # A copy through Python: a string taken with first() shares the chunk's whole text buffer, which would stay
    # alive with this small table until the source is read (1 GB of log, 1 GB held).
    small = pl.DataFrame(templates.select(*TEMPLATES_SCHEMA).to_dict(as_series=False), schema=TEMPLATES_SCHEMA)
    drop = _prunable(frame, small)
    if drop.height:
        frame = frame.join(drop, on=["source", "tid"], how="anti")
    out = frame.with_columns(_values(pl.col("_body")).alias("vals")).select("source", "line", "tid", "vals", "text",
                                                                            "counting")
    return out, small


def merge_templates(templates: pl.DataFrame) -> pl.DataFrame:
    """One row per source and template id (chunks' tables, or templates made one): the first text, sample and clocks,
    the counts summed."""
    return (templates.group_by("source", "tid", maintain_order=True)
            .agg(pl.col("template", "sample", "clocks").first(), pl.col("n").sum())
            .select(list(TEMPLATES_SCHEMA)))


def close_padding(rows: pl.DataFrame, templates: pl.DataFrame) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Templates that differ only by a number's padding after a bracket made one (their rows take the one's id): on
    the templates table, once per source, not on every line. An id is its template's hash, as mine() makes it."""
    fixed = templates["template"].str.replace_all(_PADDED, "${1}\x06")
    # A number padded to a width before a bar or a bracket (pytorch-tabnet's `epoch {:<3}| loss`: `epoch 10 |`, then
    # `epoch 100|`): closed up only where that makes two of a source's templates one, as the padding is then not the
    # layout (`| 850.00 ms |` keeps its spaces).
    after = fixed.str.replace_all(_PADDED_AFTER, "\x06${1}")
    both = pl.DataFrame({"source": templates["source"], "fixed": fixed, "after": after})
    merges = both.select((pl.col("fixed").n_unique().over("source", "after") > 1) & (pl.col("after") != pl.col("fixed"))
                         ).to_series()
    if merges.any():
        fixed = both.select(pl.when(merges).then(pl.col("after")).otherwise(pl.col("fixed"))).to_series()
    changed = (fixed != templates["template"]).fill_null(False)
    if not changed.any():
        return rows, templates
    old, new = templates.filter(changed)["tid"], fixed.filter(changed).hash()
    pairs = pl.DataFrame({"tid": old, "_to": new}).unique("tid")
    rows = rows.with_columns(pl.col("tid").replace(pairs["tid"], pairs["_to"]))
    return rows, merge_templates(templates.with_columns(fixed.alias("template"), fixed.hash().alias("tid")))


# A magnitude letter glued to a number (`617K`, `1.53K`, `5.24M`), then no letter or digit: nanotron's human_format
# and tqdm's unit_scale print counts and rates that way.
_MAGNITUDE = "\x06([" + "".join(vocab.MAGNITUDES) + "])(?:[^A-Za-z0-9]|$)"


def close_magnitudes(rows: pl.DataFrame, templates: pl.DataFrame) -> tuple[pl.DataFrame, pl.DataFrame]:
    """A number printed with a magnitude letter (`850`, then `1.53K` ms a step) is one slot in its base unit: the
    templates that differ only by such letters are made one and their rows' values scaled (on the templates table,
    once per source, as close_padding). A memory value's letter is its unit (`3.62G`, `980M`) and stays, as does an
    unnamed number's."""
    marked = templates.filter(pl.col("template").str.contains(_MAGNITUDE))
    if marked.height == 0:
        return rows, templates
    fixed: dict[int, tuple[str, list[float]]] = {}  # tid -> (template without the letters, each slot's factor)
    for tid, template, clocks in marked.select("tid", "template", "clocks").unique("tid").iter_rows():
        slots = _slots(template, clocks or "")
        pieces = _SLOTS.split(template)
        scale = [1.0] * len(slots)
        for s in slots:
            letter = pieces[s.index + 1][:1]
            after = pieces[s.index + 1][1:2]
            if letter in vocab.MAGNITUDES and not (after.isalnum() and after.isascii()) and s.norm \
                    and s.name_role != "mem":
                scale[s.index] = vocab.MAGNITUDES[letter]
                pieces[s.index + 1] = pieces[s.index + 1][1:]
        if any(f != 1.0 for f in scale):
            fixed[tid] = (SLOT_MARK.join(pieces), scale)
    if not fixed:
        return rows, templates
    plain = [t for t, _ in fixed.values()]
    rows, table = _moved(rows, list(fixed), plain, [f for _, f in fixed.values()])
    template = pl.col("tid").replace_strict(list(fixed), plain, default=pl.col("template"),
                                            return_dtype=pl.String)
    return rows, merge_templates(templates.with_columns(template.alias("template"),
                                                        pl.col("tid").replace(table["tid"], table["_to"])))


def _moved(rows: pl.DataFrame, tids: list[int], texts: list[str], scales: list[list[float]]
           ) -> tuple[pl.DataFrame, pl.DataFrame]:
    """The rows of templates `tids` moved to the templates `texts` (ids: the texts' hashes, as mine() makes them),
    their values scaled slot by slot. -> (the rows, the table of old id -> new id)."""
    table = pl.DataFrame({"tid": tids, "_to": pl.Series(texts, dtype=pl.String).hash(), "_scale": scales},
                         schema={"tid": pl.UInt64, "_to": pl.UInt64, "_scale": pl.List(pl.Float64)})
    rows = (rows.join(table, on="tid", how="left")
            .with_columns(pl.when(pl.col("_to").is_not_null()).then(pl.col("vals") * pl.col("_scale"))
                          .otherwise(pl.col("vals")).alias("vals"),
                          pl.coalesce("_to", "tid").alias("tid"))
            .drop("_to", "_scale"))
    return rows, table


# A unit of time glued to a number, then no letter, digit or `/` (`850.123ms`, not `850ms/step`): seconds per unit.
_GLUED_SECONDS = {"ns": 1e-9, "µs": 1e-6, "us": 1e-6, "ms": 1e-3, "s": 1.0}
_GLUED_UNITS = "|".join(_GLUED_SECONDS)
_GLUED_TIME = re.compile(rf"({_GLUED_UNITS})(?=[^A-Za-z0-9/]|$)")
_GLUED_TIME_SLOT = f"\x06(?:{_GLUED_UNITS})(?:[^A-Za-z0-9/]|$)"  # the same after a slot, as polars finds it


def close_time_units(rows: pl.DataFrame, templates: pl.DataFrame) -> tuple[pl.DataFrame, pl.DataFrame]:
    """A duration whose printed unit changes as it grows (Go's and Rust's `Duration`: `850.123ms`, then `1.234567s`,
    then `1m2.5s`) splits its lines between templates: those of a source that differ only by such units (or by a
    duration in several units in their place) are made one, in seconds, and their rows' values scaled (on the templates
    table, once per source, as close_magnitudes). A template alone keeps its unit."""
    timed = templates.filter(pl.col("template").str.contains(_GLUED_TIME_SLOT) | pl.col("clocks").str.contains("true"))
    if timed.height < 2:
        return rows, templates
    canon: dict[int, tuple[int, str, list[float], str]] = {}  # tid -> (source, text in seconds, factors, clocks)
    for source, tid, template, clocks in timed.select("source", "tid", "template", "clocks").iter_rows():
        pieces = _SLOTS.split(template)
        flags = _clock_flags(clocks or "", len(pieces) - 1)
        scale = [1.0] * (len(pieces) - 1)
        for i in range(len(pieces) - 1):
            if (m := _GLUED_TIME.match(pieces[i + 1])) is not None:
                scale[i], pieces[i + 1], flags[i] = _GLUED_SECONDS[m.group(1)], "s" + pieces[i + 1][m.end():], False
            elif flags[i] and not pieces[i + 1][:1].isalnum():  # `1m2.5s`, read in seconds
                pieces[i + 1], flags[i] = "s" + pieces[i + 1], False
        canon[tid] = (source, SLOT_MARK.join(pieces), scale, "".join("true" if f else "false" for f in flags))
    meet: dict[tuple[int, str], list[int]] = {}
    for tid, (source, text, _, _) in canon.items():
        meet.setdefault((source, text), []).append(tid)
    fixed = {tid: canon[tid] for tids in meet.values() if len(tids) > 1 for tid in tids}
    if not fixed:
        return rows, templates
    texts = [text for _, text, _, _ in fixed.values()]
    rows, table = _moved(rows, list(fixed), texts, [f for _, _, f, _ in fixed.values()])
    template = pl.col("tid").replace_strict(list(fixed), texts, default=pl.col("template"), return_dtype=pl.String)
    clocks = pl.col("tid").replace_strict(list(fixed), [c for _, _, _, c in fixed.values()],
                                          default=pl.col("clocks"), return_dtype=pl.String)
    return rows, merge_templates(templates.with_columns(template.alias("template"), clocks.alias("clocks"),
                                                        pl.col("tid").replace(table["tid"], table["_to"])))


# A number whose comma cannot separate thousands: a leading zero (`0,816`), or other than three digits after it
# (`2,4833`, `0,85`), or more than three before it. Its line reads the comma as a decimal point unless it also writes
# one (_POINTED): a list (`[1,2]`) beside `2.48` stays a list.
_DECIMAL_COMMA = r"(?:^|[^0-9,.])(?:0,[0-9]+|[0-9]+,(?:[0-9]{1,2}|[0-9]{4,})|[0-9]{4,},[0-9]+)(?:[^0-9,]|$)"
_POINTED = r"[0-9]\.[0-9]"


def _comma_to_point(body: pl.Series | pl.Expr) -> pl.Series | pl.Expr:
    return body.str.replace_all(r"([0-9]),([0-9])", "${1}.${2}")


def _values(body: pl.Expr) -> pl.Expr:
    """A line's slots as numbers: clock durations in seconds, `80,314` without its separators."""
    el = pl.element()
    clock = el.str.strip_suffix("s").str.split(":")
    part = [clock.list.get(i, null_on_oob=True).cast(pl.Float64, strict=False) for i in range(3)]
    clock_s = pl.when(clock.list.len() == 3).then(part[0] * 3600 + part[1] * 60 + part[2]).otherwise(
        part[0] * 60 + part[1])
    units = [el.str.extract(pattern, 1).cast(pl.Float64, strict=False).fill_null(0.0) * seconds
             for pattern, seconds in _COMPOUND_UNITS]
    value = (pl.when(el.str.contains(":", literal=True)).then(clock_s)
             .when(_is_clock(el)).then(pl.sum_horizontal(units))
             .otherwise(el.str.replace_all(",", "", literal=True).cast(pl.Float64, strict=False)))
    return body.str.extract_all(SLOT).list.eval(value)


# The units of a compound duration (COMPOUND), each with its seconds: `m` not followed by `s`, which is milliseconds.
_COMPOUND_UNITS = ((r"([0-9]+)h", 3600.0), (r"([0-9]+)m(?:[^s]|$)", 60.0), (r"([0-9]+(?:\.[0-9]+)?)s", 1.0),
                   (r"([0-9]+)ms", 0.001))


def _is_clock(slot: pl.Expr) -> pl.Expr:
    """Whether a slot's text is a duration rather than a number: a clock's colon, or a compound's unit letters."""
    return slot.str.contains(r"[:hms]")


# Lines of one template judged in a chunk: its first ones show whether a slot can be a counter as well as all would
# (a counter steps up within any stretch of a log), and the noise lines of a large log are not read for numbers.
PRUNE_SAMPLE = 256


def _prunable(frame: pl.DataFrame, templates: pl.DataFrame) -> pl.DataFrame:
    """The (source, tid) of templates that cannot be a stream: printed PRUNE_ROWS times or more in this chunk with no
    slot of integers that steps up and no time named as a step's. Their count stays in `templates` (the report lists
    them as not understood); their rows are dropped here, not held until the source ends."""
    big = templates.filter((pl.col("n") >= PRUNE_ROWS) & ~pl.col("template").str.contains(_PER_STEP_TIME))
    # a one-number line of a timing role may be a field of a multi-line record (_attach_records): kept for learning,
    # and a line timed as a step's by name is one step a line (_stream's ordinal streams: Pax's `train_step() took
    # 0.85 seconds`), whatever its text says to the literal test above
    record = [tid for tid, template, clocks in big.select("tid", "template", "clocks").iter_rows()
              if _record_slot(template, clocks or "") is not None
              or any(_per_step(s) for s in _slots(template, clocks or ""))
              or _may_be_seen_and_timed(_slots(template, clocks or ""))]
    if record:
        big = big.filter(~pl.col("tid").is_in(record))
    if big.height == 0:
        return big.select("source", "tid")
    sample = (frame.join(big.select("source", "tid"), on=["source", "tid"], how="semi")
              .filter(pl.int_range(pl.len()).over("source", "tid") < PRUNE_SAMPLE))
    long = (sample.select("source", "tid", _values(pl.col("_body")).alias("vals"))
            .with_columns(pl.int_ranges(pl.col("vals").list.len()).alias("slot"))
            .explode("vals", "slot"))
    if long.height == 0:
        return big.select("source", "tid")
    # In line order, ranks interleaved (the rank is not known yet): lenient, as a prefilter; learning judges per rank.
    v = pl.col("vals")
    d = v.diff().over("source", "tid", "slot")
    stats = long.group_by("source", "tid", "slot").agg((v == v.round(0)).all().alias("integral"), v.n_unique().alias("k"),
                                             (d >= 0).mean().alias("hold"), (d > 0).mean().alias("up"),
                                             (d <= 0).mean().alias("hold_down"), (d < 0).mean().alias("down"))
    # A slot named for something else (`rank 3`, `tokens=...`) is no counter however it moves, as in _counter.
    named = []
    for tid, template in dict(zip(big["tid"], big["template"])).items():
        slots, pieces = _slots(template), _SLOTS.split(template)
        named += [(tid, s.index) for s in slots if (s.name_role not in (None, "counter", "epoch") or s.unit_role
                                                    or s.unit) and not _may_pass_name(slots, pieces, s.index)]
    if named:
        other = pl.DataFrame(named, schema={"tid": pl.UInt64, "slot": pl.Int64}, orient="row")
        stats = stats.join(other, on=["tid", "slot"], how="anti")
    # A counter that steps down is one pasted newest first (_newest_first): kept for learning as well.
    rising = (pl.col("hold") >= PRUNE_HOLD_SHARE) & (pl.col("up") >= PRUNE_UP_SHARE)
    falling = (pl.col("hold_down") >= PRUNE_HOLD_SHARE) & (pl.col("down") >= PRUNE_UP_SHARE)
    counters = stats.filter(pl.col("integral") & (pl.col("k") > 1) & (rising | falling)).select("source", "tid").unique()
    return big.select("source", "tid").join(counters, on=["source", "tid"], how="anti")


MINED_SCHEMA: dict[str, pl.DataType | type[pl.DataType]] = {
    "source": pl.UInt32, "line": pl.UInt32, "rank": pl.Int32, "ts": pl.Datetime("ms"), "tid": pl.UInt64,
    "vals": pl.List(pl.Float64)}
TEMPLATES_SCHEMA = {"source": pl.UInt32, "tid": pl.UInt64, "template": pl.String, "sample": pl.String, "clocks": pl.String,
                    "n": pl.UInt32}


# ---- learning ---------------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class SlotRole:
    """One numeric slot of a stream: the name printed before it, the role it was given, and how that was decided
    (`name`: the vocabulary; `unit`: the unit printed after it; `statistics`: how its values move; `timestamps`:
    agreement with the line stamps; `record`: a line of its own in the step's multi-line record, named by the
    vocabulary)."""

    name: str
    role: str
    how: str


@dataclass(frozen=True)
class Stream:
    """A learned progress stream of one source."""

    source: int
    template: str  # the masked layout, slots shown as `#`
    lines: int
    step_clock: bool  # its lines are the source's steps
    roles: tuple[SlotRole, ...]
    note: str = ""  # why it is not the step clock, or what its clock is
    bar: bool = False  # its lines draw a progress bar (`NN%|...|`): a bar the tqdm kind did not read


@dataclass(frozen=True)
class Unread:
    """A frequent template no reader understood: its layout, how many lines, one of them."""

    source: int
    template: str
    lines: int
    sample: str


def unread_order(u: Unread) -> tuple[int, str, str, int]:
    """Most lines first; ties in the order of their text, then source: a chunk's templates come from a hash
    grouping, and which of them are shown must not depend on its order."""
    return -u.lines, u.template, u.sample, u.source


@dataclass
class Learned:
    steps: list[pl.DataFrame] = field(default_factory=list)
    side: list[pl.DataFrame] = field(default_factory=list)  # mfu and what else the progress side frame carries
    streams: list[Stream] = field(default_factory=list)
    unread: list[Unread] = field(default_factory=list)
    lines: list[pl.DataFrame] = field(default_factory=list)  # (source, line) of every stream line


@dataclass(frozen=True)
class _Slot:
    index: int
    name: str  # as printed before it ('' when none)
    norm: str
    clock: bool
    unit: str
    name_role: str | None
    unit_role: str | None
    scale: float | None  # seconds per unit, from the unit or the name
    total_of: int | None = None  # this slot is the `n` of `i/n` for slot total_of
    avg_of: int | None = None  # this slot is the running average `(w)` of slot avg_of
    mem_scale: float | None = None  # GB per unit for a memory value


_LEVELS = frozenset({"info", "debug", "warning", "warn", "error", "critical", "trace", "notice", "i", "w", "e"})
# A name: words of any script (`损失: 2.48, 耗时: 0.85 秒`, `шаг 10`), with the separators names are printed with.
_NAME = re.compile(r"([^\W0-9][\w/().%@\x02\- ]*?)\s*$")


def display(template: str) -> str:
    """A template as people read it: slots as `#`, masked parts as `<...>`."""
    return (template.replace(SLOT_MARK, "#").replace("\x01", "<time>")
            .replace("\x02", "N").replace("\x03", "<id>").replace("\x04", "<path>").replace("\x07", "<bar>"))


def _slots(template: str, clocks: str = "") -> list[_Slot]:
    """The slots of a template; `clocks`: per slot, whether its values were clock durations (`true`/`false` run
    together, as mine() keeps them)."""
    pieces = _SLOTS.split(template)
    kinds = ["clock" if c else "number" for c in _clock_flags(clocks, len(pieces) - 1)]
    slots: list[_Slot] = []
    parents = _json_parents(pieces) if _NESTED.search(template) else None
    for i, kind in enumerate(kinds):
        pre, post = pieces[i], pieces[i + 1]
        unit, unit_role, unit_scale = vocab.unit_of(post)
        if i > 0:  # the text before this slot starts with the previous slot's unit
            prev_unit = slots[-1].unit
            if prev_unit and pre.lstrip().startswith(prev_unit):
                pre = pre.lstrip()[len(prev_unit):]
            # A duration with no name before it is named by the words its bracket closes after it (`816 ms (490 ms
            # waiting for data), loss`).
            if _unnamed_duration(slots[-1]) and (closed := _BRACKET_NAME.match(pre)) is not None:
                slots[-1] = _renamed(slots[-1], closed.group(1))
                pre = pre[closed.end():]
            # A verb the vocabulary cannot place takes the words after its number's unit that say on what
            # (`waited 490ms for data, loss=`, `spent 0.49 s on data loading |`).
            if (on_what := _on_what(slots[-1], pre)) is not None:
                slots[-1] = _renamed(slots[-1], on_what[0])
                pre = pre[on_what[1]:]
            # A separator says whose words stand between two numbers: `2.58 avg loss, 0.0003 rate,` names each
            # number by the words after it (darknet), `loss 2.3, lr 0.1` by the words before.
            # So does a duration with no name before it (`| 0.017 s in data | loss 2.5`): the words up to the
            # separator are its, those after it the next number's.
            cut = max(pre.rfind(sep) for sep in _SEPARATORS)
            if cut > 0 and not slots[-1].name and (not _name(pre[cut + 1:]) or _unnamed_duration(slots[-1])) \
                    and (trail := _name(pre[:cut])):
                slots[-1] = _renamed(slots[-1], trail)
                pre = pre[cut:]
        name = _name(pre)
        # A time per step written between two numbers, the first named as no time can be (`loss 2.48 sec/batch
        # 0.816`), names the second: a loss is not printed in seconds per batch.
        if i > 0 and not name and "/" in (prev := slots[-1]).unit and prev.unit_role is not None \
                and vocab.role_of(prev.norm) in _UNTIMED_ROLES and not pre.strip(" :=|,'\"[\t#"):
            name = prev.unit
            slots[-1] = _slot(prev.index, prev.name, prev.clock, "", None, None, pieces[i], prev.total_of, prev.avg_of)
        if parents and any(parents[i]) and name:  # `"timing": {"step": 0.85}`: the step's time, not a second counter
            name = "/".join((*filter(None, parents[i]), name))
        avg_of = i - 1 if i > 0 and pre.strip() == "(" and post.lstrip().startswith(")") and not unit else None
        # `a (b): v (w)`: the bracketed word names the bracketed number (BasicSR's `time (data): 0.850 (0.017)`),
        # unless it says an average (`loss (avg): 2.3 (2.4)`) or a unit (`time (s): 0.85 (0.86)`).
        if avg_of is not None and (paired := _PAIRED_NAME.fullmatch(slots[-1].name)) is not None \
                and paired.group(2).lower() not in _AVERAGE_WORDS and not vocab.is_unit_word(paired.group(2)):
            slots[-1] = _renamed(slots[-1], paired.group(1))
            name, avg_of = paired.group(2), None
        total_of = i - 1 if i > 0 and pre.strip() == "/" else None
        slots.append(_slot(i, name, kind == "clock", unit, unit_role, unit_scale, post, total_of, avg_of))
    # A mean and its spread (`0.850 ± 0.021 s/step`): the unit after the spread is the mean's too, and the spread is
    # the mean's companion, as a running average in brackets is (not a quantity of its own).
    for i in range(1, len(slots)):
        if _SPREAD.fullmatch(pieces[i]) and not slots[i - 1].unit and slots[i].unit:
            a, b = slots[i - 1], slots[i]
            slots[i - 1] = _slot(a.index, a.name, a.clock, b.unit, b.unit_role, b.scale, "", a.total_of, a.avg_of)
            slots[i] = _slot(b.index, "", b.clock, b.unit, b.unit_role, b.scale, "", None, i - 1)
    # The last number may be named by the words after it, where none stand before it: a duration followed by a few
    # words that a bracket or the line's end closes (`(0.816 s/step, 0.490 s data)`, `(490 ms waiting for data)`).
    if slots and _unnamed_duration(slots[-1]):
        if (after := _AFTER_NAME.match(pieces[-1].lstrip()[len(slots[-1].unit):])) is not None:
            slots[-1] = _renamed(slots[-1], after.group(1))
    elif slots and (on_what := _on_what(slots[-1], pieces[-1].lstrip()[len(slots[-1].unit):])) is not None:
        slots[-1] = _renamed(slots[-1], on_what[0])
    return slots


# What a duration was spent on, after its unit: `for data`, `on input`, `waiting for the loader`.
_ON_WHAT = re.compile(r"\s*((?:waiting |waited )?(?:for|on) (?:the )?[A-Za-z][A-Za-z_]*(?: [A-Za-z_]+){0,2})\s*"
                      r"(?:[,;|)\]]|$)")


def _on_what(slot: _Slot, after: str) -> tuple[str, int] | None:
    """(The slot's name with the words after its unit that say on what its time went, where the slot is a duration
    whose name is a verb the vocabulary cannot place or a generic time, and the words give it a role; the end of
    those words in `after`), else None."""
    if not slot.name or (slot.name_role is not None and slot.norm not in GENERIC_TIME) or slot.scale is None \
            or slot.unit_role is not None or (m := _ON_WHAT.match(after)) is None:
        return None
    name = f"{slot.name} {m.group(1)}"
    role = vocab.role_of(vocab.normalise(name)[0], timed=True)
    return (name, m.end(1)) if role is not None and role != slot.name_role else None


# A JSON object or a Python dict inside another (`{"step": 10, "timing": {"step": 0.85, "data": 0.02}}`): the keys of
# the inner one are named with the outer key before them (`timing/step`), as a flattened metrics dict names them.
_NESTED = re.compile(r"""(?:["'][^"']+["']\s*:|\b\w+\s*=)\s*\{""")  # `times={'step': 0.85}` too
_OPEN_OR_CLOSE = re.compile(r"""(?:["']([^"']+)["']\s*:|\b(\w+)\s*=)\s*\{|\}""")


def _json_parents(pieces: list[str]) -> list[tuple[str, ...]]:
    """For each slot, the keys of the objects it stands inside (outermost first), read from the text before it."""
    stack: list[str] = []
    out: list[tuple[str, ...]] = []
    for piece in pieces[:-1]:
        for m in _OPEN_OR_CLOSE.finditer(piece):
            if m.group(1) is not None:
                stack.append(m.group(1))
            elif m.group(2) is not None:  # `times={...}` names its keys; `metrics={...}` leaves them as printed
                stack.append(m.group(2) if m.group(2).lower() in vocab.TIME_HEADS else "")
            elif stack:
                stack.pop()
        out.append(tuple(stack))
    return out


_SPREAD = re.compile(r"\s*(?:±|\+/-|\+-)\s*")
_PAIRED_NAME = re.compile(r"(.*?\S)\s*\(([A-Za-z][\w ]*)\)")
_AVERAGE_WORDS = frozenset({"avg", "average", "mean", "ema", "smooth", "smoothed", "running", "median", "global avg"})


def _renamed(slot: _Slot, name: str) -> _Slot:
    """A slot named by words printed elsewhere than right before it, its unit and place kept."""
    return _slot(slot.index, name, slot.clock, slot.unit, slot.unit_role, slot.scale, "", slot.total_of, slot.avg_of)


# One to three words after a number's unit, then a closing bracket, a separator or the line's end; mid-line, a
# closing bracket only (before a separator the words may be the next number's name).
_WORDS_AFTER = r"\s([A-Za-z][A-Za-z_]*(?: [A-Za-z_]+){0,2})\s*"
_AFTER_NAME = re.compile(_WORDS_AFTER + r"(?:[)\],;|]|$)")
_BRACKET_NAME = re.compile(_WORDS_AFTER + r"[)\]]")


def _generic_time(slot: _Slot) -> bool:
    """A time named by generic words only (`time`, `took`, DeepPavlov's `time_spent` under its record's `train`): as
    likely the run's elapsed time as a step's."""
    last = vocab.normalise(slot.name.replace("\x02", "").split("/")[-1])[0] if slot.name else ""
    return slot.norm in GENERIC_TIME or (bool(last) and set(last.split("_")) <= GENERIC_TIME)


def _unnamed_duration(slot: _Slot) -> bool:
    return not slot.name and slot.unit_role is None and slot.scale is not None


_SEPARATORS = (",", ";", "|", "，", "；")
# Roles whose numbers are never printed in a unit of time per step (their names keep a unit after them off)
_UNTIMED_ROLES = frozenset({"loss", "lr", "grad_norm", "counter", "epoch", "mem", "mfu", "tflops", "count",
                            "samples_per_sec", "tokens_per_sec", "iter_rate"})  # a rate's name is its unit


# A scalar printed in its repr (NumPy 2's `np.float64(2.48)`, torch's `tensor(2.4800, device='cuda:0')`, JAX's
# `Array(2.48, dtype=float32)`): the wrapper stands between the name and the number (its digits masked as \x02).
_WRAPPER = re.compile(r"(?:(?:np|numpy|jnp|torch|tf)\.(?:float|int|uint|bfloat)\x02?|tensor|Tensor|array|Array|"
                      r"DeviceArray)\($")


def _name(pre: str) -> str:
    """The name printed right before a number (`loss: `, `'grad_norm': `, `| lr `, `'loss': np.float64(`), '' when
    none."""
    # (and CJK's full-width `：`, `，`, `；`; `=>` of a Perl or Ruby hash)
    stripped = _WRAPPER.sub("", pre).rstrip(" :=|,'\"[\t#：，；>")
    m = _NAME.search(stripped) if stripped and stripped[-1:] not in "([/<" else None
    name = m.group(1).strip(" -") if m else ""
    if name.lower() in _LEVELS or name.lower().split(" ")[-1] in _LEVELS:  # `- INFO - [ 9/5000]`: no name
        return ""
    return name


def _slot(i: int, name: str, clock: bool, unit: str, unit_role: str | None, unit_scale: float | None, post: str,
          total_of: int | None, avg_of: int | None) -> _Slot:
    """A slot with the role its name says (the vocabulary), its unit's scale or the name's, its memory scale."""
    norm, name_scale = vocab.normalise(name.replace("\x02", "")) if name else ("", None)
    mem = vocab.MEM_UNITS.get(unit.lower()) if unit else None
    timed = unit_scale is not None or name_scale is not None or norm.split("_", 1)[0] in vocab.TIMED_HEADS
    name_role = (vocab.role_of(norm, timed=timed) or (vocab.phase_of(norm) if timed else None)) if norm else None
    if name and (named_unit := vocab.unit_name(name)) is not None:
        name_role, name_scale = named_unit  # `ms/batch 850.0`: the name is a unit, not `batch`
    if name_role is None and norm and (named_mem := vocab.memory_name(norm)) is not None:
        name_role, mem = vocab.role_of(named_mem[0]), named_mem[1]
    if name_role is None and unit and post[:1] != " " and (counted := vocab.count_unit(unit)) is not None:
        name_role, unit = counted, ""  # `100batch`, `1epoch`: a count, not a quantity in a unit
    if name_role == "counter" and ((name_scale is not None and name_scale < 1.0) or unit_scale is not None):
        # `batch_ms`, `iter_ms`, `batch: 0.850s`: a count's name with a unit of time is the time per count
        name_role = "step_time"
    if name_role == "count" and (unit_scale is not None or name_scale is not None):
        # `total: 0.85s`, `total_ms=850`: a name that counts, printed in a unit of time, is a time; `total` is the
        # step's (or the run's, where it grows in step with the counter: GENERIC_TIME)
        name_role = "step_time" if norm == "total" else None
    return _Slot(i, name, norm, clock, unit, name_role, unit_role,
                 unit_scale if unit_scale is not None else name_scale, total_of, avg_of, mem)


def _clock_flags(clocks: str, n: int) -> list[bool]:
    flags = re.findall("true|false", clocks or "")
    return [f == "true" for f in flags][:n] + [False] * max(0, n - len(flags))


def _lead(template: str) -> str:
    return _SLOTS.split(template, maxsplit=1)[0]


def learn(rows: pl.DataFrame, templates: pl.DataFrame, paste: dict[int, bool]) -> Learned:
    """Mined rows of whole sources -> their streams' step rows and what the report says of them. `paste`: per source,
    whether it is short enough to count two lines of one layout as a stream."""
    out = Learned()
    if rows.height == 0 and templates.height == 0:
        return out
    one = templates.unique("tid", keep="first", maintain_order=True)  # the first line's, run after run
    names = dict(zip(one["tid"].to_list(), one["template"].to_list()))
    clocks = dict(zip(one["tid"].to_list(), one["clocks"].to_list()))
    # Each source's own line as its sample: small files read as one batch share their templates' ids.
    first = templates.unique(["source", "tid"], keep="first", maintain_order=True)
    samples = {(s, t): line for s, t, line in first.select("source", "tid", "sample").iter_rows()}
    counts = rows.group_by("source", "tid").len().sort("len", "tid", descending=[True, False])
    # Sources whose every template was dropped while mining still list those as not understood.
    bare = (templates.filter(~pl.col("source").is_in(counts["source"].unique().implode()))
            .select("source", "tid").unique("source").with_columns(pl.lit(0, pl.UInt32).alias("len")))
    counts = pl.concat([counts.with_columns(pl.col("len").cast(pl.UInt32)), bare])
    pruned: dict[int, list[tuple[int, int]]] = {}
    for src, tid, n in templates.filter(pl.col("n") >= PRUNE_ROWS).select("source", "tid", "n").iter_rows():
        pruned.setdefault(int(src), []).append((tid, int(n)))
    for (source,), per_source in counts.partition_by("source", as_dict=True, maintain_order=True).items():
        floor = MIN_LINES_PASTE if paste.get(int(source), False) else MIN_LINES
        cand = per_source.filter(pl.col("len") >= floor).head(MAX_TEMPLATES)
        own = rows.filter((pl.col("source") == source) & pl.col("tid").is_in(cand["tid"].implode()))
        found: list[tuple[Stream, pl.DataFrame, pl.DataFrame | None]] = []
        unread: list[Unread] = []
        groups = own.partition_by("tid", as_dict=True) if own.height else {}
        records: list[tuple[_Slot, int, pl.DataFrame]] = []
        every: set[int] = set()  # template ids of records that must be printed for most of the clock's steps
        tids: dict[int, int] = {}  # id(stream) -> its template id
        for tid, n in cand.select("tid", "len").iter_rows():
            template = names.get(tid, "")
            sub = groups[(tid,)].sort("line")
            newest_first = _newest_first(sub, template, clocks.get(tid) or "")
            got = _stream(int(source), template, sub.reverse() if newest_first else sub, n, clocks.get(tid) or "")
            if got is not None and newest_first:
                got = (replace(got[0], note="; ".join(filter(None, (got[0].note, NEWEST_FIRST_NOTE)))), *got[1:])
            if got is None:
                unread.append(Unread(int(source), display(template), n, samples.get((source, tid), "")))
                if (slot := _record_slot(template, clocks.get(tid) or "")) is not None:
                    records.append((slot, tid, groups[(tid,)]))
                elif slots := _record_slots(template, clocks.get(tid) or ""):
                    # a line of several timings printed after each step's (DeepSpeed-Chat's `End-to-End => Latency:
                    # 0.85s, TFLOPs: .., Samples/sec: ..`): a record only where it is printed for most steps
                    records.extend((slot, tid, groups[(tid,)]) for slot in slots)
                    every.add(tid)
            else:
                found.append(got)
                tids[id(got[0])] = tid
        # Templates whose rows were dropped as no stream while mining (parsers/templates._prunable) are unread too.
        kept = set(per_source["tid"].to_list())
        for tid, n in pruned.get(int(source), []):
            if tid not in kept:
                unread.append(Unread(int(source), display(names.get(tid, "")), n, samples.get((source, tid), "")))
        # One step clock per source: the training stream with the most lines (a timed one before an untimed one, one
        # whose counter is named as a step's before one found by its statistics: a worker's `loaded shard 0003 ...
        # in 0.45s` beside `step 10 loss 2.48 (0.850s/it)`).
        train = [f for f in found if f[0].step_clock]
        train.sort(key=lambda f: (f[0].note != "", not _named_counter(f[0]), -f[0].lines))
        # A timing line numbered by its place alone (no counter: MindSpore's `epoch time: ... ms, per step time: ...
        # ms` after its `epoch: 1 step: 10, loss is ...`) beside a stream that counts is that stream's record.
        counted = [f for f in train if _counts(f[0])]
        loose = [(f, slots) for f in train if not _counts(f[0])
                 and (slots := _record_slots(names.get(tids[id(f[0])], ""), clocks.get(tids[id(f[0])]) or ""))]
        if counted and loose:
            extra = [(slot, tids[id(f[0])], groups[(tids[id(f[0])],)]) for f, slots in loose for slot in slots]
            stream, steps, attached = _attach_records(counted[0][0], counted[0][1], records + extra, every)
            moved = {tids[id(f[0])] for f, _ in loose}
            if moved <= {tid for tid, _ in attached}:
                train = [f for f in train if tids[id(f[0])] not in moved]
                found = [f for f in found if tids[id(f[0])] not in moved]
                train.remove(counted[0])
                train.insert(0, (stream, steps, counted[0][2]))
                records = []
                shown = {display(names.get(tid, "")) for tid, _ in attached}
                out.lines.extend(lines for _, lines in attached)
        if train and records:
            stream, steps, attached = _attach_records(train[0][0], train[0][1], records, every)
            train[0] = (stream, steps, train[0][2])
            shown = {display(names.get(tid, "")) for tid, _ in attached}
            unread = [u for u in unread if u.template not in shown]
            out.lines.extend(lines for _, lines in attached)
        for j, (stream, steps, side) in enumerate(train):
            if j == 0:
                out.steps.append(steps)
                if side is not None and side.height:
                    out.side.append(side)
            else:
                stream = replace(stream, step_clock=False, note="another stream of this source is its step clock")
            out.streams.append(stream)
            out.lines.append(steps.select("source", "line"))
        for stream, steps, _ in found:
            if not stream.step_clock:
                out.streams.append(stream)
                out.lines.append(steps.select("source", "line"))
        out.unread.extend(sorted(unread, key=unread_order)[:UNREAD_SHOWN])
    return out


def _named_counter(stream: Stream) -> bool:
    return any(r.role == "counter" and r.how == "name" for r in stream.roles)


NEWEST_FIRST_NOTE = "printed newest first (a log view's order): read from its last line up"
NEWEST_FIRST_SHARE = CUMULATIVE_SHARE  # the counter falls between at least this share of consecutive lines


# A count of what is left (`remaining steps: 590`, `iters left`, `steps to go`) falls in a log printed oldest first.
_COUNTDOWN_WORDS = frozenset({"remaining", "left", "eta", "to"})


def counts_down(diffs: pl.Series) -> bool:
    """Whether a counter's line-to-line differences fall between NEWEST_FIRST_SHARE of its lines (nulls left out)."""
    d = diffs.drop_nulls()
    return d.len() >= 2 and number((d < 0).mean()) >= NEWEST_FIRST_SHARE


def _newest_first(sub: pl.DataFrame, template: str, clocks: str) -> bool:
    """A stream pasted newest first (Grafana's, Kibana's and `logcli`'s default order): its counter, named or the `i` of
    `i/n`, falls from line to line, and its stamps, where it has them, do not rise."""
    slots = _slots(template, clocks)
    numerators = {s.total_of for s in slots if s.total_of is not None}
    counters = [s.index for s in slots if (s.name_role in ("counter", "epoch") or s.index in numerators)
                and not _COUNTDOWN_WORDS.intersection(s.norm.split("_"))]
    # the finest first: an epoch holds over most lines (`Epoch 2, Step 590` before `Epoch 2, Step 580`)
    counters.sort(key=lambda i: slots[i].name_role == "epoch")
    if not counters or sub.height < MIN_LINES_PASTE + 1:
        return False
    if not counts_down(sub.select(pl.col("vals").list.get(counters[0], null_on_oob=True).diff().over("rank"))
                       .to_series()):
        return False
    stamps = sub.select(pl.col("ts").cast(pl.Int64).diff().over("rank").alias("d"))["d"].drop_nulls()
    return stamps.len() == 0 or number((stamps <= 0).mean()) >= NEWEST_FIRST_SHARE


def _stats(frame: pl.DataFrame, col: str) -> dict[str, float]:
    s = frame[col]
    d = frame.select(pl.col(col).diff().over("rank"))[col].drop_nulls()
    nonnull = s.drop_nulls()
    return {
        "integral": float(nonnull.len() > 0 and bool((nonnull == nonnull.round(0)).all())),
        "constant": float(nonnull.n_unique() <= 1),
        "up_or_hold": number((d >= 0).mean()) if d.len() else 0.0,
        "up": number((d > 0).mean()) if d.len() else 0.0,
        "median": number(nonnull.median()) if nonnull.len() else math.nan,
        "max": number(nonnull.max()) if nonnull.len() else math.nan,
    }


_TIMING_ROLES = {"step_time", "avg_step_time", "cum_time", "iter_rate", "sec_per_iter", "samples_per_sec",
                 "tokens_per_sec", "data_time", "generate_time", "train_phase_time", "interval_time"}
_TRAINING_ROLES = _TIMING_ROLES | {"loss", "lr", "grad_norm", "tflops", "mfu"}
_CLOCK_ROLES = frozenset({"step_time", "avg_step_time", "sec_per_iter", "iter_rate", "cum_time",  # they time a step
                          "interval_time"})


def _stream(source: int, template: str, sub: pl.DataFrame, n: int,
            clocks: str = "") -> tuple[Stream, pl.DataFrame, pl.DataFrame | None] | None:
    slots = _slots(template, clocks)
    if not slots:
        return None
    width = sub["vals"].list.len().max()
    if width is None or whole(width) < len(slots):  # a garbled group: the template and its values disagree
        return None
    wide = sub.with_columns(pl.col("vals").list.get(i, null_on_oob=True).alias(f"s{i}") for i in range(len(slots)))
    stats = [_stats(wide, f"s{i}") for i in range(len(slots))]
    pieces = _SLOTS.split(template)
    slots = _per_counted_steps(_name_passed_on(slots, stats, pieces), stats, pieces)
    roles: dict[int, tuple[str, str]] = {}  # slot -> (role, how)
    # Totals of `i/n` (constant, at least the counter) and running averages of `v (w)`.
    totals = {s.total_of: s.index for s in slots if s.total_of is not None and stats[s.index]["constant"]
              and stats[s.index]["max"] >= stats[s.total_of]["max"]}
    for s in slots:
        if s.avg_of is not None:
            roles[s.index] = ("running_average", "statistics")
        elif s.index in totals.values():
            roles[s.index] = ("total", "statistics")
    counter = _counter(slots, stats, totals, roles)
    ordinal = False
    if counter is None:
        # No counter, but a time named as a step's (`load_data_time: 0.0001, train_step_time: 0.665`), or a step's
        # time beside a count of what was seen that grows on every line (`[samples 2560] loss 2.48 time 0.850s`):
        # each line is one step, numbered in line order.
        if not any(_per_step(s) for s in slots) and not _seen_and_timed(slots, stats):
            return None
        ordinal = True
        counter = len(slots)
        # A print that closes an `n/n` (Keras' `10/10 - 8s - 816ms/step` at each epoch's end) stands for n steps.
        every = next((stats[t]["max"] for t in totals if stats[totals[t]]["max"] == stats[t]["max"]
                      and stats[t]["constant"]), 1.0)
        wide = wide.with_columns((pl.int_range(1, pl.len() + 1).over("rank") * every).cast(pl.Float64)
                                 .alias(f"s{counter}"))
    else:
        roles[counter] = ("counter", "name" if slots[counter].name_role in ("counter", "epoch") else "statistics")
    for s in slots:
        if s.index in roles:
            continue
        if s.name_role is not None and s.name_role != "counter":
            roles[s.index] = (s.name_role, "name")
        elif s.unit_role is not None:
            roles[s.index] = (s.unit_role, "unit")
        elif s.clock or (s.scale is not None and s.unit):
            # an unnamed duration: cumulative when it only grows, a countdown (eta) when it only falls
            st = stats[s.index]
            if st["up"] >= CUMULATIVE_SHARE and (ordinal or n < 3 or _total_like(wide, f"s{s.index}", f"s{counter}")):
                roles[s.index] = ("cum_time", "statistics")
            elif st["up_or_hold"] <= 1 - CUMULATIVE_SHARE:
                roles[s.index] = ("eta", "statistics")
    # A time named like a per-step one that only grows, in step with the counter, is the run's elapsed time
    # (`time: 0.5s ... time: 412s`); one that grows while the steps slow down is not.
    # In a paste too short to tell a climb from a total, the stamps tell: a total grows as they do (flair's `time
    # (sec): 8.16 ... 16.66 ... 25.50` beside stamps 8.5 s apart), a step's time does not.
    for i, (role, how) in list(roles.items()):
        if role in ("step_time", "avg_step_time") and _generic_time(slots[i]) and not ordinal \
                and stats[i]["up"] >= CUMULATIVE_SHARE \
                and ((n >= 5 and _through_origin(wide, f"s{i}", f"s{counter}"))
                     or _grows_with_stamps(wide, f"s{i}", slots[i].scale or 1.0)):
            roles[i] = ("cum_time", "statistics" if n >= 5 else "timestamps")
    # One named for a part of the work (`env-time`, `pth-time`) that only grows in step with the counter is that
    # part's running total: not the step's clock, and kept among the series not understood (the stamps time the steps).
    # Three lines do: a step's own time that doubles and triples over them is no likelier.
    for i, (role, how) in list(roles.items()):
        if role == "step_time" and how == "name" and vocab.qualified_time(slots[i].norm) and not ordinal \
                and stats[i]["up"] >= CUMULATIVE_SHARE and _through_origin(wide, f"s{i}", f"s{counter}"):
            del roles[i]
    # An unnamed duration that neither only grows nor only falls (`| 850.00 ms |`, darknet's `0.816 seconds`) times
    # the step where nothing named does.
    if not any(r in _CLOCK_ROLES for r, _ in roles.values()):
        for s in slots:
            if s.index not in roles and not s.clock and s.unit and s.scale is not None and s.name_role is None \
                    and s.unit_role is None:
                roles[s.index] = ("step_time", "unit")
    # Where only parts of a step are timed, and named by their part alone (`fwd+bwd 850000 µs | input 510000 µs`),
    # the longest is the step's time: they are the step's work.
    if not any(r in _CLOCK_ROLES for r, _ in roles.values()):
        parts = [s for s in slots if roles.get(s.index, ("", ""))[0] == "phase_time" and vocab.role_of(s.norm) is None]
        if parts:
            longest = max(parts, key=lambda s: _nan_low(stats[s.index]["median"] * (s.scale or 1.0)))
            roles[longest.index] = ("step_time", "unit")
    # A bare number beside the counter that grows as a running total of its steps, in fractions (GPT-2 fine-tuning
    # scripts' `[100 | 85.12] loss=2.34 avg=2.45`: seconds since the start), times the steps where nothing else
    # does, stamps included. A count is whole; a fraction of an epoch or a warm-up's learning rate grows far slower.
    if not ordinal and not any(r in _CLOCK_ROLES for r, _ in roles.values()) and wide["ts"].null_count() == wide.height:
        for s in slots:
            if s.index not in roles and not s.name and not s.unit and not s.clock and not stats[s.index]["integral"] \
                    and stats[s.index]["up"] >= CUMULATIVE_SHARE and _bare_total(wide, f"s{s.index}", f"s{counter}"):
                roles[s.index] = ("cum_time", "statistics")
                break
    # A "time" that is a wall-clock instant (MLPerf's `"time_ms": 1736071208123`): epoch seconds, not a duration. It
    # stamps the line where nothing else does, and the stamps then time the steps.
    # A field named as a stamp (zap's and structlog's `"ts":1767607208.160`) is one in whatever unit puts it in the
    # epoch range (seconds, ms, us, ns), and one in no such unit is no stamp.
    # A duration with no unit that is epoch milliseconds, microseconds or nanoseconds (pino's `"time":1767607208160`)
    # is a stamp too: no step lasts the decades that reading it as seconds would make.
    for i, (role, _) in list(roles.items()):
        stamp_like = role == "stamp" or (role in vocab.DURATION_ROLES and not slots[i].unit)
        scales = STAMP_SCALES if stamp_like and slots[i].scale is None else (slots[i].scale or 1.0,)
        scale = next((k for k in scales if EPOCH_SECONDS[0] <= stats[i]["median"] * k <= EPOCH_SECONDS[1]), None)
        if role == "stamp" and scale is None:
            del roles[i]
        elif (role in vocab.DURATION_ROLES or role == "stamp") and scale is not None:
            roles[i] = ("stamp", "statistics" if role != "stamp" else "name")
            if wide["ts"].null_count() == wide.height:
                ms = (pl.col(f"s{i}") * scale * 1000).cast(pl.Int64, strict=False)
                wide = wide.with_columns(pl.from_epoch(ms, time_unit="ms").cast(pl.Datetime("ms")).alias("ts"))
    lead = _lead(template)
    # An evaluation says so before its numbers, or right after its counter (RecBole's `epoch 10 evaluating [time:
    # 0.12s, ...]` beside `epoch 10 training [...]`): the words there, less the next number's own name (GCN's
    # `Epoch: 0010 train_loss= ... val_loss= ...` is a training line).
    after = "" if ordinal or counter + 1 >= len(slots) else pieces[counter + 1]
    if after and slots[counter + 1].name and (cut := after.rfind(slots[counter + 1].name)) >= 0:
        after = after[:cut]
    is_eval = bool(vocab.EVAL_WORDS.search(display(lead))) or bool(vocab.EVAL_WORDS.search(display(after)))
    has_ts = wide["ts"].null_count() < wide.height
    # A loop that counts epochs only (nnU-Net's `Epoch 10`, then its lines) steps by them: an epoch's time is its
    # step's, and a line that prints the epoch alone heads its record as `[batch=N]:` does.
    by_epoch = not ordinal and slots[counter].name_role == "epoch"
    if by_epoch:
        roles.update({i: ("step_time", how) for i, (r, how) in roles.items() if r == "epoch_time"})
    training = any(r in _TRAINING_ROLES for r, _ in roles.values()) or \
        (not ordinal and slots[counter].name_role == "counter") or (by_epoch and len(slots) == 1)
    # Stamped lines of bare numbers whose counter steps by one print interval throughout (a custom logger's headless
    # TSV, `<time>\t10\t2.4833`): a loop's progress though nothing is named; the stamps time its steps. A monitor's
    # samples count nothing, or not so evenly.
    if not training and has_ts and not ordinal and not any(s.name or s.unit for s in slots) \
            and _even_steps(wide, f"s{counter}"):
        training = True
    if not training:
        return None
    rank = pl.col("rank")
    c = pl.col(f"s{counter}")
    total = totals.get(counter)
    # A counter that starts again (per epoch) continues from where it was: + its total, else + the last maximum.
    reset = (c < c.shift(1).over(rank)).fill_null(False).cum_sum().over(rank)
    if total is not None:
        offset = reset * pl.col(f"s{total}")
    else:
        offset = (pl.when(c.shift(1).over(rank) > c).then(c.shift(1).over(rank)).otherwise(0)).cum_sum().over(rank)
    frame = wide.with_columns((c + offset).cast(pl.Int64, strict=False).alias("global_step"))
    _choose_step_time(slots, stats, roles, frame, has_ts)
    if not has_ts:  # with stamps, they tell a step's time from a print's (_unit_by_stamps)
        _interval_by_rate(slots, roles, frame)
    shown = tuple(SlotRole(display(slots[i].name) or f"#{i + 1}", r, how) for i, (r, how) in sorted(roles.items()))
    step_time, how = _step_time(slots, stats, roles, frame, has_ts)
    if how:
        shown = tuple(SlotRole(r.name, r.role, how if r.role in ("step_time", "avg_step_time", "sec_per_iter")
                               and how == "timestamps" else r.how) for r in shown)
    cols = [pl.col("source"), pl.col("line"), pl.col("rank"), pl.col("ts"), pl.lit("learned").alias("origin"),
            pl.col("global_step"), (pl.lit(None, pl.Float64) if step_time is None else step_time).alias("step_time_s")]
    if total is not None:
        cols.append(pl.col(f"s{total}").cast(pl.Int64, strict=False).alias("total_steps"))
    taken: set[str] = set()
    scale = _data_scale(slots, roles)
    # a part's loss (`loss_cls`, `s0.loss_cls`) fills the loss column only where no total (`loss`) is printed beside it
    for i, (role, _) in sorted(roles.items(), key=lambda r: (vocab.loss_of_a_part(slots[r[0]].norm), r[0])):
        column = vocab.ROLE_COLUMNS.get(role)  # type: ignore[call-overload]  # a role name read back as str
        if column is None or column in taken:
            continue
        taken.add(column)
        v = pl.col(f"s{i}")
        if role == "mem":
            per = slots[i].mem_scale or (1 / 1024 if stats[i]["median"] > 1000 else 1.0)
            v = v * per
        elif role in ("data_time", "generate_time", "train_phase_time"):
            v = v * (slots[i].scale or scale)
        cols.append(v.alias(column))
    steps = frame.select(cols)
    note = "" if step_time is not None and how else "no step time printed: steps counted, their time unknown"
    if has_ts and not how:
        note = "step time from the line stamps"
    side = None
    mfu = [i for i, (r, _) in roles.items() if r == "mfu"]
    if mfu:
        m = pl.col(f"s{mfu[0]}")
        side = frame.select("source", "line", "rank", pl.lit(None, pl.String).alias("node"), "ts",
                            pl.when(m > 1).then(m / 100.0).otherwise(m).alias("mfu"),
                            pl.lit("learned").alias("origin"))
    stream = Stream(source, display(template), n, not is_eval, shown,
                    "an evaluation or test pass, not training steps" if is_eval else note, bar="\x07" in template)
    return stream, steps, side


# A record printed over several lines (Composer's `[batch=N/M]:` then `\t Train throughput/batches_per_sec: v`, OLMo's
# `[step=N/M]` then `    throughput/device/tokens_per_second=v`): a line of one number whose name gives it a timing
# role, printed once per line of the step clock and within RECORD_SPAN lines after one, belongs to that step.
RECORD_SPAN = 40
RECORD_ROLES = frozenset({"step_time", "sec_per_iter", "iter_rate", "samples_per_sec", "tokens_per_sec", "data_time",
                          "avg_step_time",  # the interval's mean (OpenSeq2Seq's `*** Avg time per step: 0.850s`)
                          "cum_time", "epoch_time",  # an epoch's time: where the clock counts epochs
                          "generate_time", "train_phase_time"})  # an RL step's phases (NeMo-RL's `Timing:` record)
RECORD_MATCHED = 0.8  # at least this share of a record template's lines must fall within a step's record


def _even_steps(frame: pl.DataFrame, counter: str) -> bool:
    """Whether the counter rises by one same interval between at least EVEN_STEPS of its lines (per rank)."""
    steps = frame.select(pl.col(counter).diff().over("rank").drop_nulls()).to_series()
    if steps.len() < MIN_LINES - 1 or not (steps > 0).all():
        return False
    return number(steps.value_counts(sort=True)["count"][0]) >= EVEN_STEPS * steps.len()


def _counts(stream: Stream) -> bool:
    """Whether a stream's steps are numbered by a counter it prints (not by its lines' order)."""
    return any(r.role == "counter" for r in stream.roles)


def _record_slots(template: str, clocks: str = "") -> list[_Slot]:
    """The slots of a timing line that may be a step's record: those whose name or unit says a timing role."""
    return [s for s in _slots(template, clocks) if (s.name_role or s.unit_role) in RECORD_ROLES]


def _record_slot(template: str, clocks: str = "") -> _Slot | None:
    """The one slot of a template that may be a field of a multi-line record: its name or unit says a timing role. A
    running average printed beside it (Coqui TTS's `| > loader_time: 0.49  (0.47)`) is its own, not a second field."""
    slots = [s for s in _slots(template, clocks) if s.avg_of is None]
    if len(slots) != 1:
        return None
    role = slots[0].name_role or slots[0].unit_role
    return slots[0] if role in RECORD_ROLES else None


def _attach_records(stream: Stream, steps: pl.DataFrame, records: list[tuple[_Slot, int, pl.DataFrame]],
                    every: set[int] | frozenset[int] = frozenset()
                    ) -> tuple[Stream, pl.DataFrame, list[tuple[int, pl.DataFrame]]]:
    """The step clock's rows with the values of the record lines printed after each of its lines (RECORD_SPAN):
    a rate or a time fills the step time where the clock line printed none, a throughput its column. The records
    of `every` (template ids) count only where they fall on RECORD_MATCHED of the clock's lines. -> (the stream
    with those roles added, its rows, the (template id, source and line) of each record line read)."""
    clock = steps.select(pl.col("line").alias("_at")).unique().sort("_at")
    roles, attached = list(stream.roles), []
    by_epoch = any(r.role == "counter" and vocab.role_of(vocab.normalise(r.name)[0]) == "epoch" for r in roles)
    timed_before = steps["step_time_s"].is_not_null().any()
    for slot, tid, rows in records:
        role = slot.name_role or slot.unit_role
        if role == "epoch_time":
            if not by_epoch:
                continue
            role = "step_time"
        values = (rows.select("source", "line", pl.col("vals").list.get(slot.index, null_on_oob=True).alias("_v"))
                  .sort("line"))
        # A record printed before its clock line (TensorFlow's `global_step/sec: v` before `loss = ..., step = N`)
        # belongs to the next one; one printed after, to the one before. One a step at most: a template printed more
        # often leaves most of its lines unmatched (a micro-batch's).
        ahead = values.height > 0 and clock.height > 0 and values["line"][0] < clock["_at"][0]
        near = (values.join_asof(clock, left_on="line", right_on="_at", strategy="forward" if ahead else "backward")
                .filter((pl.col("line").cast(pl.Int64) - pl.col("_at").cast(pl.Int64)).abs() <= RECORD_SPAN)
                .unique("_at", keep="first"))
        if near.height < RECORD_MATCHED * (max(values.height, clock.height) if tid in every else values.height):
            continue
        v = pl.col("_v") * (slot.scale or 1.0)
        # a running total (Stable-Baselines3's `|    time_elapsed    | 17 |`): its growth over the steps between
        # records
        grown = (pl.col("_v").diff() * (slot.scale or 1.0) / pl.col("global_step").diff()).over("rank")
        timing: dict[str, tuple[str | None, pl.Expr]] = {
            "cum_time": ("step_time_s", pl.when(grown > 0).then(grown)),
            "iter_rate": ("step_time_s", pl.when(pl.col("_v") > 0).then(1.0 / pl.col("_v"))),
            "step_time": ("step_time_s", v), "sec_per_iter": ("step_time_s", v), "avg_step_time": ("step_time_s", v),
            "data_time": ("data_time_s", v)}
        other = vocab.ROLE_COLUMNS.get(role) if role in vocab.ROLE_COLUMNS else None
        column, value = timing.get(role or "", (other, pl.col("_v")))
        if column is None:
            continue
        steps = steps.join(near.select(pl.col("_at").cast(steps.schema["line"]).alias("line"), "_v"), on="line",
                           how="left")
        # a time by a generic name that only grows in step with the counter is the run's elapsed time, as on a line
        # (Spinning Up's table row `|  Time |  85.1 |`)
        if role in ("step_time", "avg_step_time") and slot.norm in GENERIC_TIME:
            grew = steps.select((pl.col("_v").drop_nulls().diff() > 0).mean()).item()
            if grew is not None and grew >= CUMULATIVE_SHARE and near.height >= 5 \
                    and _through_origin(steps.filter(pl.col("_v").is_not_null()), "_v", "global_step"):
                role = "cum_time"
                column, value = "step_time_s", timing[role][1]
        before = pl.col(column) if column in steps.columns else pl.lit(None, pl.Float64)
        if role == "iter_rate" and column in steps.columns and _per_print(steps):
            before = pl.lit(None, pl.Float64)  # the clock line's duration is its interval's: the rate is a step's
            roles = [SlotRole(r.name, "interval_time", r.how) if r.role in ("step_time", "avg_step_time") else r
                     for r in roles]
        steps = steps.with_columns(pl.coalesce(before, value).alias(column)).drop("_v")
        roles.append(SlotRole(display(slot.name) or "#1", role or "", "record"))
        attached.append((tid, near.select("source", "line")))
    if not attached:
        return stream, steps, attached
    # the clock line printed no step time (its note said so, or that the stamps time it): the record's does now
    note = "" if not timed_before and steps["step_time_s"].is_not_null().any() else stream.note
    return replace(stream, roles=tuple(roles), note=note), steps, attached


def _per_print(steps: pl.DataFrame) -> bool:
    """Whether the step times beside a record's rate (`_v`, iterations a second) are each print interval's
    (TensorFlow's `step = 200 (85.3 sec)` beside `global_step/sec: 1.17`, 100 steps apart): _interval_product."""
    return _interval_product(steps, pl.col("step_time_s"), pl.col("_v"), pl.col("global_step").diff())


def _interval_product(frame: pl.DataFrame, seconds: pl.Expr, rate: pl.Expr, every: pl.Expr) -> bool:
    """Whether durations times a rate of steps are the steps between prints (`every`), not 1: their medians agree
    within UNIT_AGREEMENT, where more than one step lies between prints."""
    p, steps = frame.select((seconds * rate).median().alias("p"), every.median().alias("every")).row(0)
    return p is not None and steps is not None and steps > 1 and abs(p - steps) <= UNIT_AGREEMENT * steps


def _total_like(frame: pl.DataFrame, value: str, counter: str) -> bool:
    """Whether an unnamed duration that grows is a running total: it runs through the origin with the counter
    (_through_origin), or it grows TOTAL_GROWTH-fold over the lines (a resumed run's elapsed time restarts from zero
    while its counter does not). A step's time that climbs 1.8x (llm.c's `| 850.00 ms |` slowing down) is neither."""
    v = frame[value].drop_nulls()
    if v.len() < 2:
        return False
    first, last = number(v.head(1).item()), number(v.tail(1).item())
    return _through_origin(frame, value, counter) or (first > 0 and last >= TOTAL_GROWTH * first) or first == 0


def _bare_total(frame: pl.DataFrame, value: str, counter: str) -> bool:
    """Whether a bare number is a running total of seconds: through the origin with the counter, at
    BARE_TOTAL_MIN_STEP_S or more a step."""
    rate = _origin_rate(frame, value, counter)
    return rate is not None and rate >= BARE_TOTAL_MIN_STEP_S


def _through_origin(frame: pl.DataFrame, value: str, counter: str) -> bool:
    """Whether a growing value is a running total of the counter's steps (_origin_rate)."""
    return _origin_rate(frame, value, counter) is not None


def _origin_rate(frame: pl.DataFrame, value: str, counter: str) -> float | None:
    """A growing value's median growth per step where it is a running total of the counter's steps: at the first
    and the last line it is within 2x of (steps so far) x that growth; else None. A per-step time that climbs (a
    slowdown) starts far above that line; a cumulative time starts near it, however late in the run the log
    begins."""
    rows = frame.filter(pl.col(counter) > 0).select(value, counter)
    d = rows.select((pl.col(value).diff() / pl.col(counter).diff()).alias("r")).filter(pl.col("r") > 0)["r"]
    if rows.height < 3 or d.len() < 2:
        return None
    rate = number(d.median())
    ends = (rows.row(0), rows.row(rows.height - 1))
    through = all(rate > 0 and c > 0 and 0.5 <= v / (c * rate) <= 2.0
                  for v, c in ends if v is not None and c is not None)
    return rate if through else None


def _grows_with_stamps(frame: pl.DataFrame, value: str, scale: float) -> bool:
    """Whether a value grows by as much as the line stamps between its lines (UNIT_AGREEMENT): a running total of
    wall time, whatever the number of lines."""
    if frame["ts"].null_count() == frame.height:
        return False
    d = (frame.sort("rank", "line").select(
        (pl.col(value).diff().over("rank") * scale).alias("v"),
        (pl.col("ts").diff().over("rank").dt.total_milliseconds() / 1000.0).alias("t"))
        .filter((pl.col("t") > 0) & pl.col("v").is_not_null()))
    if d.height < 2:
        return False
    ratio = number((d["v"] / d["t"]).median())
    return abs(ratio - 1.0) <= UNIT_AGREEMENT


# A duration whose name says it is a step's (`train_step_time`, `iter_time`, `Time/step`): the only kind of line that
# is read as one step per line without a counter (a benchmark's `duration: 1.4 sec` is not a training step).
_PER_STEP = re.compile(r"step|iter|batch")
_PER_STEP_TIME = r"(?i)(?:step|iter|batch)\w*[ _/]?time|time/(?:step|it)|timing"


# Quantities that are never whole numbers stepping up with the steps: such a value under one of their names is a
# counter the name stands before (below).
_FRACTIONAL_ROLES = frozenset({"loss", "lr", "grad_norm"})


def _name_passed_on(slots: list[_Slot], stats: list[dict[str, float]], pieces: list[str]) -> list[_Slot]:
    """A name over two numbers with only a space between (Python's print of several values: NVIDIA's Tacotron 2
    `Train loss {iteration} {loss:.6f}`): where the first is whole and steps up as a counter does and the second is
    bare and fractional, the name is the second's and the first a bare counter."""
    out = list(slots)
    for a, b in zip(slots, slots[1:]):
        first = stats[a.index]
        if _may_pass_name(slots, pieces, a.index) and first["integral"] and not first["constant"] \
                and first["up_or_hold"] >= MONOTONE_SHARE and first["up"] >= 0.5 and not stats[b.index]["integral"]:
            out[a.index], out[b.index] = _renamed(a, ""), _renamed(b, a.name)
    return out


# What a duration after a count of steps may be named (`took`, `steps`, nothing): not a total or a countdown.
_PER_WINDOW = frozenset({None, "step_time", "avg_step_time", "sec_per_iter", "counter"})
_AVERAGED = re.compile(r"\b(?:avg|average|averaged|mean)\b", re.IGNORECASE)
_COUNTED_STEPS = re.compile(r"\s*(?:steps?|iters?|iterations?|batches|updates)\b", re.IGNORECASE)
_STEPS_AFTER_SLASH = re.compile(r"\s?(?:its?|steps?|iters?|iterations?|batch(?:es)?|updates?)\b", re.IGNORECASE)


# The text between a progress fraction's numbers (`Completed 10 of 600 steps in 8.2s`, `10/600 steps in`): the count
# after it is the run's, not the steps the duration covers (`time/10 steps=8.5s` names no fraction).
_OF_TOTAL = re.compile(r"\s*(?:of|/)\s*")


def _per_counted_steps(slots: list[_Slot], stats: list[dict[str, float]], pieces: list[str]) -> list[_Slot]:
    """A duration printed right after a count of the steps it covers (`last 10 steps took 8.5s`, `time/10
    steps=8.50s`): that count is a constant whole number before a word for steps, and the duration's unit is divided
    by it, so that the slot reads per step whatever its name says."""
    out = list(slots)
    for a, b in zip(slots, slots[1:]):
        # a duration over a count of steps, as a unit (`Time: 8.5s/10it`): per step once divided by the count
        per = stats[b.index]
        if a.scale is not None and not a.clock and pieces[a.index + 1].rstrip().endswith("/") \
                and per["constant"] and per["integral"] and per["median"] > 1 \
                and _STEPS_AFTER_SLASH.match(pieces[b.index + 1]):
            out[a.index] = replace(a, scale=a.scale / per["median"])
            continue
        st = stats[a.index]
        # (an average over the last N steps is one step's already: `avg step time over last 10 steps: 850 ms`)
        if st["constant"] and st["integral"] and st["median"] > 1 and _COUNTED_STEPS.match(pieces[a.index + 1]) \
                and not _AVERAGED.search(pieces[a.index]) and not (a.index and _OF_TOTAL.fullmatch(pieces[a.index])) \
                and not a.unit and b.scale is not None and not b.clock and b.name_role in _PER_WINDOW \
                and not (b.unit_role == "step_time" or b.unit_role == "sec_per_iter"):  # `0.850 s/step`: a step's
            out[b.index] = replace(b, scale=b.scale / st["median"])
    return out


def _may_pass_name(slots: list[_Slot], pieces: list[str], i: int) -> bool:
    """Whether slot i's name may be the next slot's (_name_passed_on), by the template alone."""
    a, b = slots[i], slots[i + 1] if i + 1 < len(slots) else None
    return b is not None and a.name_role in _FRACTIONAL_ROLES and not a.unit and not b.name and not b.unit \
        and not pieces[b.index].strip()


def _seen_and_timed(slots: list[_Slot], stats: list[dict[str, float]]) -> bool:
    """A count of samples or tokens seen that grows on every line, beside a time named or printed as a step's."""
    grows = any(s.name_role == "count" and stats[s.index]["integral"] and stats[s.index]["up"] >= CUMULATIVE_SHARE
                for s in slots)
    return grows and _may_be_seen_and_timed(slots)


def _may_be_seen_and_timed(slots: list[_Slot]) -> bool:
    """_seen_and_timed by the template alone (what pruning may tell before the numbers are read)."""
    return any(s.name_role == "count" for s in slots) and any("step_time" in (s.name_role, s.unit_role) for s in slots)


def _per_step(slot: _Slot) -> bool:
    """A duration named as a step's, or printed in a unit per step (`816ms/step`)."""
    return (slot.name_role == "step_time" and bool(_PER_STEP.search(slot.norm))) or \
        (slot.unit_role == "step_time" and bool(_PER_STEP.search(slot.unit)))


def _counter(slots: list[_Slot], stats: list[dict[str, float]], totals: dict[int, int],
             roles: dict[int, tuple[str, str]]) -> int | None:
    """The slot that counts steps: integers that step up (per rank), named as a counter if one is, else the `i` of
    an `i/n`, else an unnamed one; never a slot named for something else (consumed samples, a loss)."""
    ok = [s for s in slots if s.index not in roles and stats[s.index]["integral"] and not stats[s.index]["constant"]
          and stats[s.index]["up_or_hold"] >= MONOTONE_SHARE and stats[s.index]["up"] >= 0.5 and not s.clock]
    named = [s for s in ok if s.name_role == "counter"]
    if named:
        # `iter 16 step 1`: prefer the optimizer step over a micro-batch counter when both are named
        return next((s.index for s in named if "step" in s.norm), named[0].index)
    paired = [s for s in ok if s.index in totals]
    if paired:
        return paired[0].index
    loose = [s for s in ok if s.name_role is None and s.unit_role is None and not s.unit]
    if loose:
        return loose[0].index
    # A loop that counts only epochs (`epoch: 10, loss: ..., time delta: ...`) steps by its epoch.
    epochs = [s for s in ok if s.name_role == "epoch"]
    return epochs[0].index if epochs else None


def _data_scale(slots: list[_Slot], roles: dict[int, tuple[str, str]]) -> float:
    """Seconds per unit for a data time printed bare: that of the step time beside it, else seconds."""
    for i, (role, _) in roles.items():
        if role == "step_time" and (scale := slots[i].scale) is not None:
            return scale
    return 1.0


def _wall_per_step(frame: pl.DataFrame) -> tuple[float | None, float | None]:
    """(median wall seconds per step between stamped lines, median steps between prints) for one rank."""
    rows = frame.filter(pl.col("ts").is_not_null())
    if rows.height < 3:
        return None, None
    first = rows["rank"].drop_nulls().min()
    if first is not None:
        rows = rows.filter(pl.col("rank") == first)
    d = rows.select((pl.col("ts").diff().dt.total_milliseconds() / 1000.0).alias("dt"),
                    pl.col("global_step").diff().alias("ds")).filter((pl.col("ds") > 0) & (pl.col("dt") >= 0))
    if d.height < 2:
        return None, None
    wall = number((d["dt"] / d["ds"]).median())
    return (wall if wall > 0 else None), number(d["ds"].median())


def _step_time(slots: list[_Slot], stats: list[dict[str, float]], roles: dict[int, tuple[str, str]],
               frame: pl.DataFrame, has_ts: bool) -> tuple[pl.Expr | None, str]:
    """The per-step time expression and how it was found ('' when none: the stamps may still time the steps)."""
    by_role: dict[str, int] = {}
    for i, (role, _) in sorted(roles.items()):
        by_role.setdefault(role, i)
    wall, every = _wall_per_step(frame) if has_ts else (None, None)
    for role in ("step_time", "sec_per_iter", "avg_step_time"):
        if role in by_role:
            i = by_role[role]
            scale, how = _unit_by_stamps(slots[i], stats[i]["median"], wall, every)
            return pl.col(f"s{i}") * scale, how
    # a print interval's time over the steps it holds, before a rate (often printed rounded)
    if "interval_time" in by_role:
        i = by_role["interval_time"]
        steps = pl.col("global_step").diff().over("rank")
        return pl.when(steps > 0).then(pl.col(f"s{i}") * (slots[i].scale or 1.0) / steps), roles[i][1]
    if "iter_rate" in by_role:
        i = by_role["iter_rate"]
        return 1.0 / pl.col(f"s{i}"), roles[i][1]
    if "cum_time" in by_role:
        # the first total that grows (fairseq's `train_wall` is the interval's, reset at each print; its `wall` grows)
        # and runs through the origin with the steps, where one does (a per-print time grows too in a slowdown)
        totals = [j for j, (role, _) in sorted(roles.items()) if role == "cum_time"]
        growing = [j for j in totals if stats[j]["up"] >= CUMULATIVE_SHARE]
        i = next((j for j in growing if _total_like(frame, f"s{j}", "global_step")),
                 growing[0] if growing else by_role["cum_time"])
        scale = slots[i].scale or 1.0
        v, c = pl.col(f"s{i}"), pl.col("global_step")
        d = v.diff().over("rank") * scale / c.diff().over("rank")
        # A total printed coarser than a step lasts (`elapsed=0.6s` for 24 ms steps) gives zero differences: there
        # the stream's mean rate stands for each step (its level is right; its shape is not in the log).
        zeros = frame.select(((v.diff().over("rank") <= 0) & (c.diff().over("rank") > 0)).mean()).item()
        if zeros is not None and zeros > COARSE_SHARE:
            rate = ((v.max() - v.min()) * scale / (c.max() - c.min())).over("rank")
            return pl.when(c.diff().over("rank") > 0).then(rate), "statistics"
        return pl.when(d > 0).then(d), "statistics"
    return None, ""


def _interval_by_rate(slots: list[_Slot], roles: dict[int, tuple[str, str]], frame: pl.DataFrame) -> None:
    """A duration printed beside a rate of steps, where their product is the counter's step between prints and not
    1, is the print interval's (keras-rl's `600/600: episode: 59, duration: 8.500s, episode steps: 10, steps per
    second: 1`): it becomes `interval_time`, divided by the steps it holds, as a record's does (_interval_product). The
    duration, not the rate, times the step: a rate is often printed rounded. Rewrites `roles`."""
    times = [i for i, (r, _) in sorted(roles.items()) if r in ("step_time", "avg_step_time")]
    rates = [i for i, (r, _) in sorted(roles.items()) if r == "iter_rate"]
    if len(times) != 1 or not rates:
        return
    i, rate = times[0], rates[0]
    if _interval_product(frame, pl.col(f"s{i}") * (slots[i].scale or 1.0), pl.col(f"s{rate}"),
                         pl.col("global_step").diff().over("rank")):
        roles[i] = ("interval_time", "statistics")


def _choose_step_time(slots: list[_Slot], stats: list[dict[str, float]], roles: dict[int, tuple[str, str]],
                      frame: pl.DataFrame, has_ts: bool) -> None:
    """Of several durations that claim the step's time (ESPnet's `iter_time`, `forward_time`, `backward_time` and
    `train_time`; `fwd 0.3 s ... 0.85 s`), the step's is the one that agrees with the line stamps, else the largest:
    a step's phases are parts of it. The others become `phase_time`. A total by name that does not grow (ESPnet's
    per-step `train_time`) is a candidate where the stamps confirm it or, without stamps, where it is at least the
    largest phase and at most PHASES_SLACK times their sum (an interval's total is many steps' worth). Where no
    duration claims the step, such a total is the step's if the stamps confirm it per step or per print. Rewrites
    `roles`."""
    cands = [i for i, (r, _) in sorted(roles.items()) if r == "step_time"]
    flat = [i for i, (r, how) in sorted(roles.items())
            if r == "cum_time" and how == "name"
            and (stats[i]["up"] < CUMULATIVE_SHARE or not _total_like(frame, f"s{i}", "global_step"))]
    # A total by name that falls between many of its lines (`wall 0.816s`, `elapsed 0.85s` on every line) is none.
    # Where nothing else times the step and no stamps can decide, it is the step's time, as a duration named on a
    # step's line is: its differences would time nothing. One that only grows stays a total, offset or not.
    if not cands and not has_ts and len(flat) == 1 and 1 - stats[flat[0]]["up_or_hold"] >= NOT_TOTAL_FALLS \
            and not any(r in _CLOCK_ROLES for i, (r, _) in roles.items() if i not in flat):
        roles[flat[0]] = ("step_time", "statistics")
        return
    # One duration has none to be chosen against, except a total by name that is no running total where nothing
    # else times the step (fairseq2's `Elapsed Time: 8.5s` a print beside its growing `Wall Time`): the stamps decide.
    if len(cands) + len(flat) < (1 if not cands and has_ts else 2):
        return
    wall, every = _wall_per_step(frame) if has_ts else (None, None)
    chosen, how = None, ""
    if wall is not None:
        # a printed unit (or seconds) per step first, then per print interval, then another unit, over all of them
        tries = [(False, False), (False, True), (True, False), (True, True)]
        for other_unit, per_print in tries:
            chosen = next((i for i in cands + flat
                           if _agrees(slots[i], stats[i]["median"], wall, every, other_unit, per_print)), None)
            if chosen is not None:
                how = "timestamps"
                break
    if chosen is None and not cands:
        return  # a total the stamps do not confirm stays a total
    if chosen is None:
        # Without stamps a flat total is the step's where it holds the phases and not many steps' worth of them (the
        # phases named as such, `forward_time`, among them).
        phases = [i for i, (r, _) in sorted(roles.items()) if r == "phase_time"]
        seconds = {i: _nan_low(stats[i]["median"] * (slots[i].scale or 1.0)) for i in cands + flat + phases}
        parts = sum(max(seconds[i], 0.0) for i in cands + phases)
        whole = [i for i in flat if max(seconds[i] for i in cands + phases) <= seconds[i] <= PHASES_SLACK * parts]
        chosen = max(whole or cands, key=lambda i: seconds[i])
        how = roles[chosen][1]
    for i in cands:
        if i != chosen:
            roles[i] = ("phase_time", roles[i][1])
    roles[chosen] = ("step_time", how)


def _nan_low(v: float) -> float:
    return -math.inf if math.isnan(v) else v


def _agrees(slot: _Slot, median: float, wall: float, every: float | None, other_unit: bool, per_print: bool) -> bool:
    """Whether a printed duration agrees with the stamps' wall time per step (UNIT_AGREEMENT): in its printed unit
    (seconds where none) or, with `other_unit`, in ms where none is printed (of several durations on a line, one in
    minutes among others in seconds would be odd, and a phase's seconds read as minutes can match); per step, or
    with `per_print` as a total over the steps between prints."""
    if not median or math.isnan(median):
        return False
    if other_unit:
        if slot.scale is not None:
            return False
        scales = [1e-3]
    else:
        scales = [slot.scale or 1.0]
    if per_print and not (every and every > 1):
        return False
    p = 1.0 / every if per_print and every else 1.0
    return any(abs(median * s * p - wall) <= UNIT_AGREEMENT * wall for s in scales)


def _unit_by_stamps(slot: _Slot, median: float, wall: float | None, every: float | None) -> tuple[float, str]:
    """Seconds per printed unit of a step duration, and whether a printed interval total is divided out: the unit
    printed, else the one that agrees with the stamps, else seconds."""
    if wall is None or not median or math.isnan(median):
        return (slot.scale or 1.0), "unit" if slot.scale is not None else "name"
    scales = [slot.scale] if slot.scale is not None else [1.0, 1e-3, 60.0]
    per = [1.0] + ([1.0 / every] if every and every > 1 else [])
    for s in scales:
        for p in per:
            if abs(median * s * p - wall) <= UNIT_AGREEMENT * wall:
                return s * p, "timestamps" if (p != 1.0 or slot.scale is None) else "unit"
    return (slot.scale or 1.0), "unit" if slot.scale is not None else "name"
