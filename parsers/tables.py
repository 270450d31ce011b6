"""Tables whose names sit on a header row: a metrics CSV (Lightning's CSVLogger `epoch,step,train_loss`), fastai's
`epoch  train_loss  valid_loss  accuracy  time` per-epoch table, Chainer's PrintReport. A row of numbers under such a
header says nothing by itself (`0,49,2.31,0.85`; and `0,100` reads as one number with a thousands separator), so
each row is given its header's names, `epoch: 0, step: 49, train_loss: 2.31, step_time: 0.85`, before templates are
mined from it (parsers/templates.py): the template reader then names and times it like any `name: value` line.

A header is a line of at least three names (letters first; `/`, `.`, `(`, `)`, `-` and digits inside; single spaces
too, where commas, tabs or runs of spaces set the columns apart; a CSV's first name may be empty: an index column, as
a printed pandas frame's is blank), or
of two names set apart by a tab, behind a `#` where it is written as a comment (NequIP's `# Epoch batch  loss`, whose
first names are one space apart where its rows' numbers are not: a row with more numbers takes them word by word);
a row, a line of as many numbers or clock durations (`01:25`) separated the same way, a CSV row's empty fields left
out. A row takes the nearest header above it in its source whose separator and width
it shares, behind the same launcher's prefix (a rank's table under its own header). Most lines start with neither,
and a literal-free anchored test turns them away at their first letter.

A bordered table (`| iter | total time (s) | loss |`, tabulate's and Ray Tune's status tables, the same drawn with
`│`) is read the same way once its borders are taken off, its columns set apart by the inner bars or, where it has
none, by runs of spaces. Its rows may hold words beside the numbers (a trial's name, its status, `host:port`): the
numbers take their columns' names and the words are left out.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

import polars as pl

from diagnose.parsers.prefixes import outer_extent

_NAME = r"(?:[A-Za-z_][\w./()%\-]*|#)"  # `#`: a count's column (spaCy's `E    #       LOSS TOK2VEC  LOSS NER`)
# A rule drawn between groups of columns, with no border at either end (ElegantRL's evaluator: `ID     Step    Time |
#    avgR   stdR ...`, its rows `0  1.00e+01      12 |   -1234.56 ...`), sets columns apart as a run of spaces does.
_RULE = r" +\| +"
# `;`: a CSV written for a locale whose decimal mark is the comma (Excel's, pandas' `sep=";", decimal=","`).
_SEP = rf"(?:[ \t]*[,;][ \t]*|\t+| {{2,}}|{_RULE})"
# A name of a CSV header, or of one whose columns are set apart by tabs or runs of spaces, may hold single spaces
# (TensorBoard's export `Wall time,Step,Value`, spaCy's `LOSS TOK2VEC`); a CSV header's first name may be empty
# (pandas' index column: `,_step,_runtime,_timestamp,train/loss`, W&B's `run.history().to_csv()`).
_SPACED_NAME = rf"{_NAME}(?: [A-Za-z_(][\w./()%\-]*)*"  # a later word may be a unit: `step time (s)`
# A header written as a comment (`# Epoch batch  loss  f_mae`: NequIP, gnuplot-style data) is a header all the same.
HEADER = (rf"^[ \t]*(?:#[ \t]*)?{_SPACED_NAME}(?:(?:\t+| {{2,}}|{_RULE}){_SPACED_NAME}){{2,}}[ \t]*$"
          rf"|^[ \t]*(?:{_SPACED_NAME})?(?:[ \t]*,[ \t]*{_SPACED_NAME}){{2,}}[ \t]*$"
          rf"|^[ \t]*{_SPACED_NAME}(?:[ \t]*;[ \t]*{_SPACED_NAME}){{2,}}[ \t]*$"
          # a Python tuple or list of names printed before its rows (`(step, loss, step_time)`)
          rf"|^[ \t]*[(\[]{_SPACED_NAME}(?:[ \t]*,[ \t]*{_SPACED_NAME}){{2,}}[)\]][ \t]*$"
          # two tab-separated columns: a notebook's table copied as text (the HF Trainer's `Step  Training Loss`)
          rf"|^[ \t]*{_SPACED_NAME}\t+{_SPACED_NAME}[ \t]*$")
# a bordered table's column rule: `|`, or the box-drawing `│`, the heavy `┃` of rich's header and the double `║`
_BAR = "[|\u2502\u2503\u2551]"
_CELL = rf"[ \t]*{_SPACED_NAME}[ \t]*"
HEADER += rf"|^[ \t]*{_BAR}{_CELL}(?:(?:{_BAR}| {{2,}}){_CELL}){{2,}}{_BAR}[ \t]*$"
# What a row may hold: digits, signs, points, exponents, clock colons, separators (`nan` and `inf` rows are rare
# enough to leave to the template reader as they are); a bordered row anything between its borders.
# A later cell may be one number in brackets, or none (DeepXDE's `1000      [2.30e-02]    [2.50e-02]    []`).
ROW_HINT = (rf"^[ \t]*[-+.\d][-+.\deE:]*(?:{_SEP}\[?[-+.\deE:]*\]?){{2,}}[ \t]*$"
            r"|^[ \t]*[(\[][-+.\d][-+.\deE:]*(?:[ \t]*,[ \t]*[-+.\deE:]+){2,}[)\]][ \t]*$"
            r"|^[ \t]*[-+.\d][-+.\deE:]*\t+[-+.\deE:]+[ \t]*$"
            rf"|^[ \t]*{_BAR}[^\d]*\d.*{_BAR}[ \t]*$")
# A cell's number, with the unit a table of timings writes beside it (`816.0 ms`, `30.1 GB`, `1.18 it/s`, `41%`)
_VALUE = re.compile(r"(?:[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?|\d{1,3}:\d\d(?::\d\d)?(?:\.\d+)?)"
                    r"(?: ?(?:ms|s|sec|min|h|%|[KMGT]i?B|it/s|s/it|[A-Za-z]+/s))?")
# Columns a header needs: three (two words apart are as likely prose), or two set apart by a tab.
MIN_COLUMNS = 3
MIN_TAB_COLUMNS = 2
# Headers kept per source and prefix: a row takes the nearest above it that fits (NequIP prints its epoch summary's
# header between the batch table's rows, which keep the batch header's names).
HEADERS_KEPT = 4


_RULE_RE = re.compile(_RULE)
_DECIMAL_COMMA = re.compile(r"^([-+]?\d+),(\d+)$")
# A CSV whose every field is quoted (`"step","loss"` / `"10","2.4833"`: Excel's, R's `write.csv`, a log platform's
# export) is read with its quotes taken off: a number's field never holds a quote or its separator.
_QUOTED_CSV = r'^[ \t]*"[^"]*"(?:[ \t]*[,;][ \t]*"[^"]*"){2,}[ \t]*$'
_TUPLE = re.compile(r"^[ \t]*[(\[]([^()\[\]]*,[^()\[\]]*)[)\]][ \t]*$")
_BORDERED = re.compile(r"^[ \t]*([|\u2502\u2503\u2551])(.*)\1[ \t]*$")


def _split(text: str, header: bool = False) -> tuple[str, list[str]]:
    """A line's separator kind and its fields: a bordered table's bars (`|`, or runs of spaces between the borders:
    `| `), `,` (CSV, empty fields kept), tab, or runs of white space (a header's runs of two or more: its names may
    hold one)."""
    bordered = _BORDERED.match(text)
    if bordered is not None:
        bar, inner = bordered.groups()
        if bar in inner:
            return "|", [f.strip() for f in inner.split(bar)]
        return "| ", re.split(r" {2,}", inner.strip())
    if header:  # a comment's mark, one space before the first name at most (a `#` column is set apart by more)
        text = re.sub(r"^[ \t]*#[ \t]?(?=[^\s#])", "", text)
    if (tup := _TUPLE.match(text)) is not None:  # a printed tuple or list: its brackets are no part of a field
        text = tup.group(1)
    if " | " in text:  # inner rules with no border: runs of spaces
        text = _RULE_RE.sub("   ", text)
    if ";" in text and text.count(";") >= MIN_COLUMNS - 1:  # its numbers' decimal mark may be the comma
        fields = [f.strip() for f in text.strip().split(";")]
        return ";", fields if header else [_DECIMAL_COMMA.sub(r"\1.\2", f) for f in fields]
    if "," in text:
        return ",", [f.strip() for f in text.strip().split(",")]
    if "\t" in text:
        return "\t", [_cell(f, header) for f in text.strip().split("\t")]
    return " ", (re.split(r" {2,}", text.strip()) if header else [_cell(f, header) for f in text.split()])


def _cell(field: str, header: bool) -> str:
    """A row's cell without the brackets of a one-number list (`[2.30e-02]`; `[]` is an empty cell)."""
    field = field.strip()
    return field[1:-1].strip() if not header and field[:1] == "[" and field[-1:] == "]" else field


@dataclass(frozen=True)
class _Header:
    sep: str  # as _split tells it
    names: list[str]
    blank_first: bool  # white space before the first name: pandas' blank index header may be there


def _named(line: str, header: _Header) -> str | None:
    """A row's `name: value, ...` under a header whose separator and width it shares; None where it does not."""
    sep, fields = _split(line)
    names = header.names
    if sep == header.sep == " " and len(fields) > len(names):
        # a header's names set one space apart where its numbers are not (NequIP's `# Epoch batch  loss`)
        names = [w for n in names for w in n.split()]
    if sep == header.sep == " " and header.blank_first and len(fields) == len(names) + 1 and fields[0].isdigit():
        # pandas' frame printed (`df.tail(1)`): its index column, whose name is the header's opening blank
        fields = fields[1:]
    if sep != header.sep or len(fields) != len(names):
        return None
    if sep.startswith("|"):  # a bordered row: its numbers, the words beside them left out
        pairs = [f"{n}: {v}" for n, v in zip(names, fields) if v and n and _VALUE.fullmatch(v)]
    else:
        pairs = [f"{n}: {v}" for n, v in zip(names, fields) if v and n]
        if not all(_VALUE.fullmatch(v) for v in fields if v):
            return None
    return ", ".join(pairs) if len(pairs) >= 2 else None


def named_rows(rows: pl.DataFrame, lines: pl.DataFrame | None = None, extent: pl.Series | None = None
               ) -> pl.DataFrame:
    """`rows` (text, line, source where several sources share the frame) with each table row's text rewritten as
    `name: value, ...` from its header (see above); other lines as they were. `lines`: where the headers are looked
    for (every line of the chunk; a header holds no digit more often than not), `rows` where not given. `extent`:
    the rows' outer prefix lengths (prefixes.outer_extent), the table read past them; the headers' are measured
    only where a row stands behind a prefix."""
    if extent is None:
        extent = pl.repeat(0, rows.height, dtype=pl.UInt32, eager=True)
    extent = extent.fill_null(0)
    text = _unquoted(rows["text"], extent)
    # A table behind a launcher's prefix (torchrun's `[default0]:`, srun's `0: `) is read behind it, each prefix's
    # rows under that prefix's header: the rows are tested past the prefix, and the headers looked for behind a
    # prefix only where such rows are.
    ridx = text.str.slice(extent).str.contains(ROW_HINT).fill_null(False).arg_true()
    if ridx.len() == 0:
        return rows
    given = lines is not None
    lines = rows if lines is None else lines
    head_extent = pl.repeat(0, lines.height, dtype=pl.UInt32, eager=True)
    if bool((extent.gather(ridx) > 0).any()):
        head_extent = outer_extent(lines["text"]).fill_null(0).cast(pl.UInt32)
    heads = _unquoted(lines["text"], head_extent) if given else text
    hidx = heads.str.slice(head_extent).str.contains(HEADER).fill_null(False).arg_true()
    if hidx.len() == 0:
        return rows
    keys = ["source", "line"] if "source" in rows.columns else ["line"]
    events = pl.concat([
        lines[hidx].select(*keys).with_columns(heads.gather(hidx).alias("text"), pl.lit(-1, pl.Int64).alias("_row"),
                                               head_extent.gather(hidx).cast(pl.UInt32).alias("_extent")),
        rows[ridx].select(*keys).with_columns(text.gather(ridx).alias("text"), ridx.cast(pl.Int64).alias("_row"),
                                              extent.gather(ridx).cast(pl.UInt32).alias("_extent")),
    ]).sort(keys)
    source = events["source"].to_list() if "source" in events.columns else [None] * events.height
    current: dict[object, list[_Header]] = {}  # per source and prefix, the nearest first
    out: list[str] = []
    at: list[int] = []
    for src, whole, cut, i in zip(source, events["text"].to_list(), events["_extent"].to_list(),
                                  events["_row"].to_list()):
        prefix, line = whole[:cut], whole[cut:]
        key = (src, prefix.rstrip())
        if i < 0:
            sep, names = _split(line, header=True)
            if len(names) >= (MIN_TAB_COLUMNS if sep == "\t" else MIN_COLUMNS):
                # pandas' blank index header: white space first, or taken into the prefix before it
                kept = current.setdefault(key, [])
                kept.insert(0, _Header(sep, names, line[:1] in (" ", "\t") or prefix[-1:] in (" ", "\t")))
                del kept[HEADERS_KEPT:]
            continue
        named = next((n for h in current.get(key, []) if (n := _named(line, h)) is not None), None)
        if named is not None:
            out.append(prefix + named)
            at.append(i)
    if not at:
        return rows
    return rows.with_columns(rows["text"].scatter(at, out))


def _unquoted(text: pl.Series, extent: pl.Series) -> pl.Series:
    """The lines with a quoted CSV's quotes taken off (_QUOTED_CSV, past the line's prefix); the others as they are."""
    at = text.str.slice(extent).str.contains(_QUOTED_CSV).fill_null(False).arg_true()
    return text.scatter(at, text.gather(at).str.replace_all('"', "", literal=True)) if at.len() else text
