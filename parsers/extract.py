"""Apply the declared line kinds to one chunk of lines, as polars expressions over the whole chunk."""
from __future__ import annotations

import re
from collections.abc import Callable

import polars as pl

from diagnose.parsers import prose, tables
from diagnose.parsers.errors import fault
from diagnose.parsers.kinds import (ANCHORS, BLOCK_HEADERS, DEEPSPEED_STRATEGY, DEEPSPEED_STRATEGY_RE,
                                    EXCEPTION_REFINEMENTS, KINDS, OOM_SIZES, SETTING_HINT, SETTING_PREFILTER,
                                    SETTING_RE, TIMER_FAMILIES, LineKind)
from diagnose.parsers.literals import any_of
from diagnose.parsers.prefixes import HOST, LAUNCH_PREFIX, OUTER_PREFIX, RANK_LABEL, outer_extent
from diagnose.parsers.schema import schema
from diagnose.parsers.stamps import LEADING_HINT, RELATIVE, find_stamp, has_stamp, leading_stamp
from diagnose.parsers.templates import MINED_SCHEMA, TEMPLATES_SCHEMA, mine
from diagnose.parsers.thinning import THINNED_ANCHORS, Sampling, sample_lines
from diagnose.parsers.vocabulary import NAMES, TIMED_ONLY, names_alternation

# No capture group: a bare literal alternation runs on the regex crate's Aho-Corasick prefilter alone, 2.5x faster
# than the same alternation wrapped in a group.
ANCHOR_RE = any_of(ANCHORS)
FALLBACK_KINDS = tuple(k for k in KINDS if not k.anchors and k.prefilter)
FALLBACK_RE = "|".join(f"(?:{k.prefilter})" for k in FALLBACK_KINDS)
HEADER_RE = any_of(BLOCK_HEADERS.values())
# Environment variables seen anywhere: `export X=1`, `X=1 cmd`, launcher echoes, `os.environ[X]=1` dumps.
ENV_NAMES = (r"(?:NCCL|CUDA|TORCH|PYTORCH|OMP|DS|ACCELERATE|WANDB|HF|TRANSFORMERS|MASTER|WORLD|LOCAL|NVIDIA|FI|UCX|"
             r"TOKENIZERS|CUBLAS|KMP|MKL|GLOO|NVTE|XLA|DEEPSPEED|SLURM|TF|MLFLOW)_[A-Z0-9_]*")
ENV_RE = (r"(?:^|[\s;'\"(\[])(?:export\s+|os\.environ\[['\"]?)?(?P<key>" + ENV_NAMES
          + r")['\"]?\]?=(?P<value>\"[^\"]*\"|'[^']*'|[^\s;'\")\]]*)")
ENV_HINT = ENV_NAMES + r"['\"]?\]?="  # the cheap pre-filter: a candidate name followed by `=`
# What the environment, settings and block passes look for, as one pre-filter: most lines hold none of it.
RARE_RE = "|".join(f"(?:{p})" for p in (ENV_HINT, SETTING_PREFILTER, HEADER_RE))
# A line that suggests a setting is advice, not the run's environment (issue 33, must 3): PyTorch's "For debugging
# consider passing CUDA_LAUNCH_BLOCKING=1" under a CUDA error, "Compile with TORCH_USE_CUDA_DSA", tokenizers' "set
# the environment variable TOKENIZERS_PARALLELISM=(true | false)", NCCL's "... may be caused by ...".
ADVICE_RE = (r"(?i)\b(?:consider|for debugging|try (?:setting|passing|running|using|to set)|you (?:can|could|may|might|"
             r"should|need to)|please (?:set|use|try|pass)|may be caused by|compile with|to (?:enable|disable|avoid|"
             r"silence|suppress)|set the environment variable|explicitly set|suggest|recommend|hint:|"
             r"for (?:more )?(?:details|information))\b")

TIMER_NAMES = ("fwd", "bwd", "bwd_inner", "bwd_allreduce", "step", "optimizer_allgather", "optimizer_gradients",
               "optimizer_step", "init_optimizer_state", "pipe_comm", "data")
NUMBER_AFTER_COLON = r": [-+]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][-+]?[0-9]+)?"

BASE_COLUMNS = ("source", "line", "rank", "node", "ts")


# The outer prefixes of prefixes.py, taken apart with a few cheap patterns (one big pattern with many optional groups
# costs six times as much on a large log). Whole-match extraction (group 0) lets the regex crate skip its capture
# engines, 2-3x cheaper per line; the rarer prefixes are looked for only on the rows that still lack a value.
_RANK_DS = "[Rank "
_RANK_DS_WHOLE = r"\[Rank [0-9]{1,9}\] "  # nine digits at most: any rank fits an Int32
# srun -l's `3: ` task label only at the start of a line: `iter 120: loss` and `step 2: train loss` are not ranks.
_RANK_OUTER = (r"^(?:(?:\S+ )?(?:\S+: )?(?:" + RANK_LABEL + r"(?P<torch>[0-9]+)\](?::| )|\[[a-z_]*?(?P<tee>[0-9]+)\]:|"
               r"\[(?:[0-9]+,)?(?P<mpi>[0-9]+)\]<std(?:out|err)>:)|\s*(?P<task>[0-9]{1,5}): )")
_RANK_OUTER_HINT = (r"^(?:(?:\S+ )?(?:\S+: )?(?:" + RANK_LABEL + r"[0-9]|\[[a-z_]*?[0-9]+\]:|\[[0-9,]+\]<std)"
                    r"|\s*[0-9]{1,5}: )")
_HOST = r"^(?:[0-9]{4}-[0-9][0-9]-[0-9][0-9]T\S+ )?(?:stdout: )?" + HOST + r": "
_TS = r"[0-9]{4}-[0-9][0-9]-[0-9][0-9] [0-9][0-9]:[0-9][0-9]:[0-9][0-9],[0-9]{3}(?:\] \[| >> )"
# Other loggers' stamps at the start of a line: ISO (`2026-01-02T10:00:00.123`), Python logging without DeepSpeed's
# brackets (`2021-09-20 18:58:59,564 INFO`), loguru (`2022-07-02 07:42:09.937 |`), hydra (`[2023-05-15 14:14:38,305]`).
_ISO = r"^\[?[0-9]{4}-[0-9][0-9]-[0-9][0-9][T ][0-9][0-9]:[0-9][0-9]:[0-9][0-9](?:[.,][0-9]{1,6})?"
_LAUNCHED_ISO_HINT = r"^\S{1,40}:\s?\[?20[0-9][0-9]-[0-9][0-9]-[0-9][0-9][T ][0-9][0-9]:"


def _fill(values: pl.Series, need: pl.Series, compute: Callable[[pl.Series], pl.Series]) -> pl.Series:
    """Fill `values` where `need` holds with `compute` run on those rows' text only."""
    idx = need.arg_true()
    if idx.len() == 0:
        return values
    return values.scatter(idx, compute(idx))


def ds_rank(text: pl.Series) -> pl.Series:
    """The rank DeepSpeed's `[Rank N] ` names (null where none): a whole match (no capture group, so the regex crate's
    fast engines) and casts of short slices, a sixth cheaper than a literal find and two slices."""
    return text.str.extract(_RANK_DS_WHOLE, 0).str.slice(len(_RANK_DS)).str.head(-2).cast(pl.Int32, strict=False)


def host_of(text: pl.Series) -> pl.Series:
    """The host a launcher's prefix names (pdsh's `node-2: `), null where none."""
    host = text.str.extract(_HOST, 0).str.strip_suffix(": ")
    # A container timestamp or accelerate's `stdout: ` may precede the host: keep the last word.
    return _fill(host, host.str.contains(" ", literal=True).fill_null(False),
                 lambda idx: host.gather(idx).str.extract(r"[^ ]+$", 0))


def with_prefix(frame: pl.DataFrame, source_id: int | None, node: bool = True,
                literal_rank: pl.Series | None = None) -> pl.DataFrame:
    """Add source (unless the lines carry theirs: source_id None), rank, node and ts (from outer prefixes) to a
    frame holding `text`. `node` False: the host is not looked for (the template reader needs rank and time).
    `literal_rank`: ds_rank of the frame's lines, where the caller has it already."""
    text = frame["text"]
    rank = ds_rank(text) if literal_rank is None else literal_rank

    def outer_rank(idx: pl.Series) -> pl.Series:
        groups = text.gather(idx).str.extract_groups(_RANK_OUTER).struct
        return pl.select(pl.coalesce(*(groups.field(g).cast(pl.Int32, strict=False)
                                       for g in ("torch", "tee", "mpi", "task")))).to_series()

    literal = rank
    rank = _fill(rank, _where(rank.is_null(), lambda idx: text.gather(idx).str.contains(_RANK_OUTER_HINT)),
                 outer_rank)
    # The rank a prefix names as a global rank (DeepSpeed's `[Rank N]`, torch's `[rankN]:`, Open MPI's
    # `[1,N]<stdout>`), not srun's task label or torchrun's local `[defaultN]:`: the lower bound of the world size.
    mark = _fill(literal, _where(literal.is_null() & rank.is_not_null(),
                                 lambda idx: text.gather(idx).str.contains(_OTHER_MARKS)),
                 lambda idx: rank.gather(idx))
    if node:
        host = host_of(text)
    else:
        host = pl.repeat(None, text.len(), dtype=pl.String, eager=True)
    # DeepSpeed's stamp is followed by `] [` or ` >> `: a literal test (a few ns a line) keeps the pattern, which
    # has no literal to skip to, off the lines without one (the benchmark's timer lines, half of its lines).
    ts = pl.repeat(None, text.len(), dtype=pl.Datetime("ms"), eager=True)
    ts = _fill(ts, text.str.contains(_TS_AFTER).fill_null(False),
               lambda idx: text.gather(idx).str.extract(_TS, 0).str.slice(0, 23)
               .str.to_datetime("%Y-%m-%d %H:%M:%S,%3f", strict=False, time_unit="ms"))
    # Every other stamp has a clock time (`HH:MM`) or is epoch seconds: the other lines skip the patterns below.
    # The hint runs on the rows still without a stamp only (a regex without a literal to skip to costs a scan).
    ts = _fill(ts, _where(ts.is_null(), lambda idx: _any_stamp_hint(text.gather(idx))),
               lambda idx: _other_stamps(text.gather(idx)))
    source = pl.col("source") if source_id is None else pl.lit(source_id, dtype=pl.UInt32)
    return frame.with_columns(source.alias("source"), rank.alias("rank"),
                              host.alias("node"), ts.alias("ts"), mark.alias("_mark"))


_TS_AFTER = any_of(("] [", " >> "))
_OTHER_MARKS = any_of(("[rank", "]<std"))


# A clock time or epoch seconds: what every stamp but DeepSpeed's (read first, on every line) holds. The clock's
# colon and digit are found as literals first (an unanchored pattern costs a regex step per byte of a long line);
# epoch seconds, or logging's relativeCreated before a level (stamps.RELATIVE), stand at the line's start, behind
# at most two prefix words (an anchored test of a few bytes).
_CLOCK_COLON = any_of(f":{d}" for d in range(10))
_CLOCK_TIME = r"[0-9]:[0-9][0-9]"
_EPOCH_LEAD = (r"^(?:\s*\S{1,40}: |\[[a-z_]*[0-9]+\]:){0,2}"  # torchrun's tee `[default0]:` has no space
               r"\[?(?:1[0-9]{9}|" + RELATIVE + ")")


def _any_stamp_hint(text: pl.Series) -> pl.Series:
    clock = _where(text.str.contains(_CLOCK_COLON).fill_null(False),
                   lambda idx: text.gather(idx).str.contains(_CLOCK_TIME))
    return _where(~clock, lambda idx: text.gather(idx).str.contains(_EPOCH_LEAD)) | clock


def _other_stamps(text: pl.Series) -> pl.Series:
    """The stamps of lines DeepSpeed's `[YYYY-MM-DD HH:MM:SS,mmm]` did not match, in order of how common they are."""
    ts = pl.repeat(None, text.len(), dtype=pl.Datetime("ms"), eager=True)
    ts = _fill(ts, (text.str.starts_with("20") | text.str.starts_with("[20")),
               lambda idx: text.gather(idx).str.extract(_ISO, 0).str.strip_prefix("[")
               .str.replace("T", " ", literal=True).str.replace(",", ".", literal=True)
               .str.to_datetime("%Y-%m-%d %H:%M:%S%.f", strict=False, time_unit="ms"))
    # The same stamps behind a launcher's prefix (`0: 2021-09-20 18:58:49,564 INFO ...`).
    ts = _fill(ts, _where(ts.is_null(), lambda idx: text.gather(idx).str.contains(_LAUNCHED_ISO_HINT)),
               lambda idx: text.gather(idx).str.replace(r"^" + LAUNCH_PREFIX, "").str.extract(_ISO, 0)
               .str.strip_prefix("[")
               .str.replace("T", " ", literal=True).str.replace(",", ".", literal=True)
               .str.to_datetime("%Y-%m-%d %H:%M:%S%.f", strict=False, time_unit="ms"))
    # Any other stamp, wherever it stands (`55:  [2026-06-24 15:09:29.610181] iteration ...`, `02/09/2022 12:13:25 -
    # INFO -`, detectron2's `[08/22 10:15:03 d2.utils.events]:`): parsers/stamps.py.
    ts = _fill(ts, _where(ts.is_null(), lambda idx: has_stamp(text.gather(idx))),
               lambda idx: find_stamp(text.gather(idx)))
    # A stamp that opens the line once a launcher's prefix is peeled: a clock time alone, glog's, epoch seconds.
    ts = _fill(ts, _where(ts.is_null(), lambda idx: text.gather(idx).str.contains(_LEADING_BEHIND_HINT)),
               lambda idx: leading_stamp(_peeled(text.gather(idx))))
    return ts


# stamps.LEADING_HINT behind up to two prefix words (`host: `, `3: `): anchored and bounded, a few bytes per line.
# torch's `[rank7]:[E1120 09:10:31.693254 ...]` and torchrun's tee `[default0]:I0105 ...` have no space after theirs.
_LEADING_BEHIND_HINT = r"^(?:\s*\S{1,40}: |\[[a-z_]*[0-9]+\]:){0,2}" + LEADING_HINT.removeprefix("^")


def _peeled(text: pl.Series) -> pl.Series:
    """The lines without a launcher's prefix, peeled only where one may stand (an anchored test of a few bytes)."""
    return _fill(text, text.str.contains(r"^\s*\S{1,40}: |^\[[a-z_]*[0-9]+\]:").fill_null(False),
                 lambda idx: text.gather(idx).str.replace(r"^" + LAUNCH_PREFIX, ""))


def _where(mask: pl.Series, test: Callable[[pl.Series], pl.Series]) -> pl.Series:
    """`mask` narrowed by `test`, which is run on the masked rows only (given their positions)."""
    idx = mask.arg_true()
    if idx.len() == 0:
        return mask
    return pl.repeat(False, mask.len(), eager=True).scatter(idx, test(idx).fill_null(False))


def _cast(expr: pl.Expr, dtype: pl.DataType | type[pl.DataType]) -> pl.Expr:
    if dtype == pl.String:
        return expr
    return expr.str.replace_all(",", "").cast(dtype, strict=False)


NUMBER = r"[-+]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][-+]?[0-9]+)?|nan|inf"


_UNIT_GIB = {"KB": 1e3 / 2**30, "KiB": 2**-20, "MB": 1e6 / 2**30, "MiB": 2**-10, "GB": 1e9 / 2**30, "GiB": 1.0,
             "TB": 1e12 / 2**30, "TiB": 2**10.0}


def _oom_sized(rows: pl.DataFrame) -> pl.DataFrame:
    """Out-of-memory rows with the allocation that failed and the GPU's capacity, in GiB (value_from, value_to)."""
    if "kind" not in rows.columns or not rows.select((pl.col("kind") == "oom").any()).item():
        return rows
    gib = None
    for pattern in OOM_SIZES:
        g = pl.col("detail").str.extract_groups(pattern)
        size = (g.struct.field("a").cast(pl.Float64, strict=False)
                * g.struct.field("au").replace_strict(_UNIT_GIB, default=None, return_dtype=pl.Float64))
        cap = (g.struct.field("c").cast(pl.Float64, strict=False)
               * g.struct.field("cu").replace_strict(_UNIT_GIB, default=None, return_dtype=pl.Float64))
        gib = (size, cap) if gib is None else (pl.coalesce(gib[0], size), pl.coalesce(gib[1], cap))
    assert gib is not None
    is_oom = pl.col("kind") == "oom"
    missing = [pl.lit(None, pl.Float64).alias(c) for c in ("value_from", "value_to") if c not in rows.columns]
    return rows.with_columns(missing).with_columns(
        value_from=pl.when(is_oom).then(gib[0]).otherwise(pl.col("value_from")),
        value_to=pl.when(is_oom).then(gib[1]).otherwise(pl.col("value_to")))


def _refined(rows: pl.DataFrame) -> pl.DataFrame:
    """Exception rows whose message says a collective timed out or its peer went away take that kind."""
    kind = pl.col("kind")
    for name, pattern in EXCEPTION_REFINEMENTS:
        kind = pl.when(pl.col("detail").str.contains(pattern)).then(pl.lit(name)).otherwise(kind)
    return rows.with_columns(kind.alias("kind"))


def _tail(anchor: str) -> pl.Expr:
    return pl.col("text").str.slice(pl.col("text").str.find(anchor, literal=True) + len(anchor))


def apply_kind(kind: LineKind, rows: pl.DataFrame) -> pl.DataFrame:
    """Rows already known to carry one of the kind's anchors -> typed rows of this kind (may be empty)."""
    if kind.frame == "timers":
        return timers_wide(rows.with_columns(pl.lit(kind.name).alias("origin")), kind.after)
    read = []
    if kind.layout is not None:
        fast, rows = _by_layout(kind, rows)
        read.append(fast)
    if rows.height or not read:
        read.append(_general(kind, rows))
    read = [part for part in read if part.height] or read[:1]
    out = pl.concat([part.select(read[0].columns) for part in read]).sort("_row") if len(read) > 1 else read[0]
    consts = [pl.lit(v).alias(k) for k, v in kind.constants.items() if k != "key_prefix"]
    if "key_prefix" in kind.constants:
        consts.append((pl.lit(kind.constants["key_prefix"]) + pl.col("key")).alias("key"))
    keep = [*BASE_COLUMNS, *kind.fields]
    out = out.with_columns(*consts, pl.lit(kind.name).alias("origin"))
    extra = [c for c in kind.constants if c != "key_prefix"] + (["key"] if "key_prefix" in kind.constants else [])
    return out.select(list(dict.fromkeys([*keep, *extra, "origin"])))


def _by_layout(kind: LineKind, rows: pl.DataFrame) -> tuple[pl.DataFrame, pl.DataFrame]:
    """-> (rows read by the kind's layout, typed; rows left for the general path)."""
    lay = kind.layout
    assert lay is not None
    text = pl.col("text")
    for other in lay.also:
        text = text.str.replace_all(other, lay.sep, literal=True)
    n = len(lay.fields)
    # At most n + 1 pieces, the last holding the rest of the line (null where the line has n pieces or fewer): the
    # pieces as a struct's fields cost a fifth less than a list column and its gets.
    pieces = text.str.splitn(lay.sep, n + 1)
    rows = rows.with_columns(pieces.alias("_p"))
    piece = pl.col("_p").struct.field
    values, checks = [], [piece(f"field_{n - 1}").is_not_null()]
    if not kind.min_numbers:
        checks.append(piece(f"field_{n}").is_null())
    for i, (label, name) in enumerate(lay.fields):
        part = piece(f"field_{i}")
        if i == 0:
            value = part.str.slice(part.str.find(label, literal=True) + len(label))
        else:
            checks.append(part.str.starts_with(label))
            value = part.str.slice(len(label))
        if lay.strip:
            value = value.str.strip_chars(lay.strip)
        values.append(value.cast(kind.fields[name], strict=False).alias(name))
        checks.append(pl.col(name).is_not_null())
    rows = rows.with_columns(values).with_columns(pl.all_horizontal(checks).fill_null(False).alias("_ok")).drop("_p")
    return (rows.filter(pl.col("_ok")).drop("_ok"),
            rows.filter(~pl.col("_ok")).drop("_ok", *(name for _, name in lay.fields)))


def _field(pattern: str | tuple[str, ...]) -> pl.Expr:
    pats = (pattern,) if isinstance(pattern, str) else pattern
    found = [pl.col("text").str.extract(p, 1) for p in pats]
    return found[0] if len(found) == 1 else pl.coalesce(found)


def every_match(rows: pl.DataFrame, pattern: str) -> pl.DataFrame:
    """A row per match of `pattern` in each row's `text`, its named groups as columns (rows with none dropped)."""
    return (rows.with_columns(pl.col("text").str.extract_all(pattern).alias("_m")).explode("_m")
            .filter(pl.col("_m").is_not_null())
            .with_columns(pl.col("_m").str.extract_groups(pattern).alias("_g")).drop("_m").unnest("_g"))


def _general(kind: LineKind, rows: pl.DataFrame) -> pl.DataFrame:
    if kind.numbers:
        n = len(kind.numbers)
        nums = rows.with_columns(_tail(kind.after).str.extract_all(NUMBER).alias("_n"))
        ok = (pl.col("_n").list.len() >= kind.min_numbers) if kind.min_numbers else (pl.col("_n").list.len() == n)
        out = nums.filter(ok).with_columns(
            pl.col("_n").list.get(i, null_on_oob=True).alias(name) for i, name in enumerate(kind.numbers))
    elif kind.pattern and kind.every:  # each match a row
        out = every_match(rows, kind.pattern)
    elif kind.pattern:
        out = rows.with_columns(pl.col("text").str.extract_groups(kind.pattern).alias("_g")).unnest("_g")
    else:
        out = rows.with_columns(_field(pat).alias(name) for name, pat in kind.field_patterns.items())
    if kind.required:
        out = out.filter(pl.col(kind.required).is_not_null())
    if kind.required_any:
        out = out.filter(pl.any_horizontal(pl.all_horizontal(pl.col(c).is_not_null() for c in group)
                                           for group in kind.required_any))
    return out.with_columns(_cast(pl.col(n), t).alias(n) for n, t in kind.fields.items())


TIMER_SEP = " | "
TIMER_HEAD = "time (ms)"  # the text before the first separator of a timer line
_SHAPE_SAMPLE = 256  # timer lines read the slow way to learn a chunk's shapes
_MAX_SHAPES = 4  # shapes tried on the fast path; lines of any other shape take the slow one


def timers_wide(rows: pl.DataFrame, after: str) -> pl.DataFrame:
    """`time (ms) | a: 1 | b_microstep: 2 | ...` lines -> one column per known timer, plus the microstep flag.

    A line's names (its numbers removed) are its shape; each distinct shape, of which a log has a handful, maps
    its numbers to columns by position. Old names (forward, backward) map to the new (fwd, bwd). The shapes seen
    in a sample are tried first, each on a split of the line checked name by name (callgrind: 78M instructions
    against 186M for the timer lines of a 4 MB chunk taken apart by regexes); lines of other shapes take the
    regex path."""
    shapes = _sample_shapes(rows, after)
    # The pieces as a struct's fields (a fifth cheaper than a list column and its gets), one more than the longest
    # shape has: that one, holding the rest of the line, is null where a line has no more pieces than its shape.
    width = max((len(names) for names in shapes), default=0) + 2
    split = rows.select(*BASE_COLUMNS, "origin", "_row", pl.col("text").str.splitn(TIMER_SEP, width).alias("_p"))
    piece = pl.col("_p").struct.field
    # Each line goes to the sampled shape that its piece count and first name point to, and is then checked name
    # by name; anything else takes the regex path.
    sid = pl.lit(None, pl.Int8)
    for j, names in reversed(list(enumerate(shapes))):
        fits = piece(f"field_{len(names)}").is_not_null() & piece(f"field_{len(names) + 1}").is_null()
        sid = pl.when(fits & piece("field_1").str.starts_with(names[0] + ": ")).then(pl.lit(j, pl.Int8)).otherwise(sid)
    parts, slow = [], []
    for (j,), part in split.with_columns(sid.alias("_sid")).partition_by("_sid", as_dict=True).items():
        if j is None:
            slow.append(part["_row"])
            continue
        names = shapes[j]
        part = part.with_columns(piece(f"field_{i}").alias(f"_s{i}") for i in range(len(names) + 1)).drop("_p")
        part = part.with_columns(pl.col(f"_s{i + 1}").str.slice(len(raw) + 2).cast(pl.Float64, strict=False)
                                 .alias(f"_v{i}") for i, raw in enumerate(names))
        ok = pl.all_horizontal(pl.col("_s0").str.ends_with(TIMER_HEAD),
                               *(pl.col(f"_s{i + 1}").str.starts_with(raw + ": ") for i, raw in enumerate(names)),
                               *(pl.col(f"_v{i}").is_not_null() for i in range(len(names)))).fill_null(False)
        part = part.with_columns(ok.alias("_ok"))
        microstep = pl.lit(any(n.endswith("_microstep") for n in names)).alias("microstep")
        parts.append(part.filter(pl.col("_ok")).select(
            *BASE_COLUMNS, microstep,
            *(_sum([pl.col(f"_v{i}") for i in idx]).alias(name) for name, idx in _timer_columns(names)),
            "origin", "_row"))
        slow.append(part.filter(~pl.col("_ok"))["_row"])
    rest = rows.join(pl.concat(slow).to_frame(), on="_row", how="semi") if slow else rows.clear()
    if rest.height:
        parts.extend(_timers_by_shape(rest.with_columns(_tail(after).alias("body"))))
    out = pl.concat(parts, how="diagonal") if len(parts) > 1 else parts[0]
    if len(parts) > 1:
        out = out.sort("_row")
    out = out.select(*BASE_COLUMNS, "microstep",
                     *[pl.col(n) if n in out.columns else pl.lit(None, pl.Float64).alias(n) for n in TIMER_NAMES],
                     "origin")
    # Families that time backward compute and the all-reduce apart: bwd is their sum, as DeepSpeed's bwd is.
    return out.with_columns(pl.coalesce("bwd", pl.col("bwd_inner") + pl.col("bwd_allreduce").fill_null(0.0))
                            .alias("bwd"))


def _sum(values: list[pl.Expr]) -> pl.Expr:
    return values[0] if len(values) == 1 else pl.sum_horizontal(values)


def _timer_columns(raw_names: tuple[str, ...] | list[str]) -> list[tuple[str, list[int]]]:
    """Schema columns of a shape's names, each with the positions it sums (kinds.TIMER_FAMILIES)."""
    names = [n.removesuffix("_microstep") for n in raw_names]
    family = next(f for f in TIMER_FAMILIES if f.marker is None or f.marker in names)
    out = []
    for column, alternatives in family.columns.items():
        for alt in alternatives:
            idx = [i for i, n in enumerate(names) if n in alt]
            if idx:
                out.append((column, idx))
                break
    return out


def _shape_names(shape: str) -> list[str]:
    return [n.strip().rstrip(":") for n in shape.split("|") if n.strip()]


def _sample_shapes(rows: pl.DataFrame, after: str) -> list[tuple[str, ...]]:
    """The most common shapes among some of the rows, as tuples of plain names."""
    # Consecutive lines and an odd stride: shapes printed in turn (each rank's microstep and step lines) would all
    # fall on one parity under an even stride, and the other shape would take the regex path on every line.
    half = _SHAPE_SAMPLE // 2
    step = max(1, rows.height // half) | 1
    sample = pl.concat([rows.head(half), rows.gather_every(step).head(half)]).select(
        _tail(after).str.replace_all(NUMBER_AFTER_COLON, ":").alias("_shape"))
    counts = sample["_shape"].value_counts(sort=True)
    shapes = [tuple(_shape_names(shape)) for shape in counts["_shape"].to_list()]
    return [names for names in shapes if names and all(_NAME.fullmatch(n) for n in names)][:_MAX_SHAPES]


_NAME = re.compile(r"\w+")


def _timers_by_shape(rows: pl.DataFrame) -> list[pl.DataFrame]:
    rows = rows.with_columns(pl.col("body").str.replace_all(NUMBER_AFTER_COLON, ":").alias("_shape"),
                             pl.col("body").str.extract_all(NUMBER_AFTER_COLON).alias("_n"))
    parts = []
    for (shape,), part in rows.partition_by("_shape", as_dict=True).items():
        def value(i: int) -> pl.Expr:
            return pl.col("_n").list.get(i, null_on_oob=True).str.strip_chars(": ").cast(pl.Float64, strict=False)

        cols = [_sum([value(i) for i in idx]).alias(name)
                for name, idx in _timer_columns(_shape_names(shape))]
        parts.append(part.select(*BASE_COLUMNS, pl.lit("_microstep:" in shape).alias("microstep"), *cols,
                                 "origin", "_row"))
    return parts


def _hms_seconds(column: str) -> pl.Expr:
    """`H:MM:SS[.ffffff]` or `MM:SS` (tqdm's elapsed column) -> seconds, read from the right."""
    parts = pl.col(column).str.split(":").list.reverse()
    part = [parts.list.get(i, null_on_oob=True).cast(pl.Float64, strict=False) for i in range(3)]
    seconds = sum((pl.when(parts.list.len() > i).then(part[i]).otherwise(0.0) * scale
                   for i, scale in enumerate((1.0, 60.0, 3600.0))), pl.lit(0.0))
    return pl.when(pl.col(column).is_not_null()).then(seconds)


_UNIT_S = {"ms": 1e-3, "msec": 1e-3, "s": 1.0, "sec": 1.0, "secs": 1.0, "seconds": 1.0, "min": 60.0, "mins": 60.0,
           "minutes": 60.0}


def duration_s(column: str) -> pl.Expr:
    """A printed duration (`467422ms`, `3.2 s`, `1.5min`, `0:10:02`, a bare number of seconds) -> seconds."""
    text = pl.col(column).str.strip_chars()
    number = text.str.extract(r"^(" + NUMBER + ")", 1).cast(pl.Float64, strict=False)
    unit = text.str.extract(r"([a-z]+)$", 1).replace_strict(_UNIT_S, default=1.0, return_dtype=pl.Float64)
    return (pl.when(text.str.contains(":")).then(_hms_seconds(column)).otherwise(number * unit))


def _memory_gb(column: str) -> pl.Expr:
    """`61.3GB` / `39.34 GiB` / `5120MiB` -> GB (of 2**30 bytes, as DeepSpeed and PyTorch print them)."""
    text = pl.col(column)
    number = text.str.extract(r"^(" + NUMBER + ")", 1).cast(pl.Float64, strict=False)
    return pl.when(text.str.contains(r"M(?:i)?B$")).then(number / 1024.0).otherwise(number)


# Names the progress reader already has a column for (its own fields read them); the rest are kept in `other`.
_KNOWN_NAMES = ("step|iter|iteration|batch|epoch|global_step|time|dt|step_time|iter_time|batch_time|loss|"
                "data_time|train_time|training_time|total_time|elapsed_time|time_elapsed|wall_time|elapsed|step_avg|"
                "avg_step_time|step_time_avg|avg_iter_time|iter_time_avg|time_avg|avg_time|mfu|tflops|mem|memory|"
                "max_mem|peak_mem|tok/sec|tok/s|tokens/sec|tokens/s|samples/sec|samples/s|lr|train_loss|val_loss|eta")


def _other_named(column: str) -> pl.Expr:
    """`name: 1.2` / `name=1.2` pairs of a progress line that no column reads, as `name=value;...` (null if none)."""
    pairs = pl.col(column).str.extract_all(r"\b[A-Za-z_][\w/()]*\s*[:=]\s*" + NUMBER)
    norm = pairs.list.eval(pl.element().str.replace(r"\s*[:=]\s*", "="))
    unknown = norm.list.eval(pl.element().filter(~pl.element().str.to_lowercase()
                                                 .str.contains(r"^(?:" + _KNOWN_NAMES + r")=")))
    joined = unknown.list.join(";")
    return pl.when(joined.str.len_chars() > 0).then(joined).otherwise(None).alias(column)


# A data wait a bar's postfix names (`set_postfix(loss=2.47, data=0.51)`: `..., 1.18it/s, loss=2.467, data=0.510s]`),
# by the vocabulary's names; a word that is a wait only with a unit of time (`load`, `io`) needs its unit.
_WAITS = names_alternation(n for n in NAMES["data_time"] if n not in TIMED_ONLY)
_TIMED_WAITS = names_alternation(n for n in NAMES["data_time"] if n in TIMED_ONLY)
_POSTFIX_UNIT = "|".join(sorted(_UNIT_S, key=len, reverse=True))  # the units duration_s reads
_POSTFIX_DATA = (rf"(?:^|,\s*)(?i:(?:{_WAITS})=({NUMBER})\s*({_POSTFIX_UNIT})?"
                 rf"|(?:{_TIMED_WAITS})=({NUMBER})\s*({_POSTFIX_UNIT}))\s*(?:,|$)")


def _postfix_data_s(column: str) -> pl.Expr:
    """The seconds of the data wait a bar's postfix names (null where it names none)."""
    g = pl.col(column).str.extract_groups(_POSTFIX_DATA)
    value = pl.coalesce(g.struct.field("1"), g.struct.field("3")).cast(pl.Float64, strict=False)
    unit = pl.coalesce(g.struct.field("2"), g.struct.field("4")).str.to_lowercase()
    return value * unit.replace_strict(_UNIT_S, default=1.0, return_dtype=pl.Float64)


# Columns computed from a kind's own fields, where the printed unit differs from the schema's.
DERIVED: dict[str, list[pl.Expr]] = {
    "tqdm": [pl.when(pl.col("unit") == "s/it").then(pl.col("rate"))
             .otherwise(1.0 / pl.col("rate")).alias("step_time_s"),
             _hms_seconds("elapsed").alias("cum_time_s"),  # the bar's elapsed time: parsers/tqdm_clock.py
             _postfix_data_s("postfix").alias("data_time_s")],
    "hf_train_runtime": [(1.0 / pl.col("steps_per_sec")).alias("step_time_s")],
    "hf_log": [pl.coalesce("step_time_s", 1.0 / pl.col("iter_per_s")).alias("step_time_s")],
    "megatron_iter": [(pl.col("step_time_ms") / 1000.0).alias("step_time_s")],
    # a duration per logged interval of N steps (`Trained 900 steps, 0:15:00 elapsed`) is per step / N
    "progress": [pl.coalesce(pl.col("step_time_ms") / 1000.0, "step_time_s", _hms_seconds("step_hms"),
                             pl.col("s_per_iter"), 1.0 / pl.col("iter_per_s"))
                 .truediv(pl.col("interval_steps").fill_null(1)).alias("step_time_s"),
                 duration_s("cum_time").alias("cum_time_s"), duration_s("avg_time").alias("avg_step_time_s"),
                 (pl.col("mfu_pct") / 100.0).alias("mfu"), _memory_gb("mem").alias("max_mem_alloc_gb"),
                 _other_named("other")],
    "megatron_memory": [(pl.col(f"{c}_mb") / 1024.0).alias(f"{c}_gb") for c in ("ma", "max_ma", "ca", "max_ca")],
    # DeepSpeed's launcher prints `exits with return code = N`, torchrun's `failed (exitcode: N)`
    "launcher_exit": [pl.coalesce("code", "code2").alias("code")],
}
# Columns a kind reads that no frame holds: what DERIVED makes of them is what the frame keeps. ds_cpu_memory's
# rows are attached to the memory frame by run_model._attach_cpu.
SCRATCH: dict[str, frozenset[str]] = {
    "tqdm": frozenset({"elapsed", "rate", "unit", "postfix"}), "hf_train_runtime": frozenset({"steps_per_sec"}),
    "hf_log": frozenset({"iter_per_s"}), "megatron_iter": frozenset({"step_time_ms"}),
    "progress": frozenset({"avg_time", "cum_time", "interval_steps", "iter_per_s", "mem", "mfu_pct", "other",
                           "s_per_iter", "step_hms", "step_time_ms"}),
    "megatron_memory": frozenset({"ca_mb", "ma_mb", "max_ca_mb", "max_ma_mb"}), "launcher_exit": frozenset({"code2"}),
}


def check_kinds(kinds: tuple[LineKind, ...]) -> None:
    """Every column a kind can produce is declared, and lands in its frame (issue 34): a capture group the kind does
    not declare, or a declared field that neither its frame's schema nor DERIVED takes, is an error at load, not a
    silent drop (torchrun's `failed (exitcode: N)` was read into a column that no frame kept)."""
    for k in kinds:
        if k.frame == "timers" or k.name == "ds_cpu_memory":
            continue
        groups = set(re.findall(r"\(\?P<(\w+)>", k.pattern)) if k.pattern else set()
        undeclared = groups - set(k.fields)
        target = set(schema(k.frame))
        dropped = (set(k.fields) | set(k.constants) | set(k.numbers)) - target - SCRATCH.get(k.name, frozenset()) \
            - {"key_prefix"}
        if undeclared or dropped:
            raise ValueError(f"line kind {k.name}: " + "; ".join(
                ([f"capture groups not declared: {sorted(undeclared)}"] if undeclared else [])
                + ([f"fields no frame keeps: {sorted(dropped)}"] if dropped else [])))


check_kinds(KINDS)


def extract_chunk(lines: pl.DataFrame, source_id: int | None,
                  sampling: Sampling | None = None, sentences: bool = True) -> dict[str, list[pl.DataFrame]]:
    """Classify and extract every line kind in one chunk. Returns frame name -> parts, and `_lines`: the distinct
    lines that produced a row. source_id None: a batch of small files whose lines carry their own `source`.
    `sampling`: the thinner's strides and primary streams, for a log past its budget: the lines it would drop are
    skipped here, counted as read (thinning.sample_lines), and `_sampled` numbers the lines of the thinned frames
    for thinning.prepare. `sentences` False: the source's earlier chunks gave prose.read all the candidate sentences
    it reads (PROSE_MAX_LINES, the first in line order), so this chunk's are not looked for."""
    out: dict[str, list[pl.DataFrame]] = {}
    faults: list[str] = []
    key = ["line"] if source_id is not None else ["source", "line"]
    anchored = lines.with_row_index("_row").with_columns(pl.col("text").str.extract(ANCHOR_RE, 0).alias("anchor"))
    tagged = anchored.filter(pl.col("anchor").is_not_null())
    loose_keys: list[pl.DataFrame] = []  # lines the anchorless kinds read
    if FALLBACK_RE and tagged.height < anchored.height:
        loose = anchored.filter(pl.col("anchor").is_null())
        loose = loose.filter(loose["text"].str.contains(FALLBACK_RE))
        if loose.height:
            loose = with_prefix(loose, source_id)
            for kind in FALLBACK_KINDS:
                rows = _guarded(kind, loose.filter(pl.col("text").str.contains(kind.prefilter)), faults)
                if rows is not None and rows.height:
                    loose_keys.append(rows.select(key))
                    out.setdefault(kind.frame, []).append(rows)
                    extra = _side_rows(rows)
                    if extra is not None:
                        out.setdefault(SIDE_FRAME, []).append(extra)
    sampled, skipped = None, None
    searched = anchored  # the lines the environment, settings and block passes search
    if tagged.height and source_id is not None and sampling is not None and sampling.skips:
        text = tagged["text"]
        rank = ds_rank(text)
        # Lines printed without a rank are sampled by their host where the thinner knows the host of their kind's
        # primary stream; a line that names a rank some other way (`[rank3]:`, `3: `) is read, not sampled.
        hostless = _where(rank.is_null() & tagged["anchor"].is_in(list(THINNED_ANCHORS)),
                          lambda idx: ~text.gather(idx).str.contains(_RANK_OUTER_HINT))
        host = _fill(pl.repeat(None, text.len(), dtype=pl.String, eager=True), hostless,
                     lambda idx: host_of(text.gather(idx)))
        keep, sampled = sample_lines(tagged.with_columns(rank.alias("rank"), host.alias("node"),
                                                         hostless.alias("hostless")), source_id, sampling)
        if not keep.all():
            dropped = tagged.filter(~keep)
            skipped = dropped.select(key)
            tagged, rank = tagged.filter(keep), rank.filter(keep)
            # The lines skipped are not searched for settings either: step and timer lines hold none.
            searched = anchored.filter(pl.repeat(True, anchored.height, eager=True).scatter(dropped["_row"], False))
        tagged = with_prefix(tagged, source_id, literal_rank=rank)
    elif tagged.height:
        tagged = with_prefix(tagged, source_id)
    yielding: list[pl.DataFrame] = []  # lines a kind read that hold more than it reads (LineKind.gives_way)
    if tagged.height:
        parts = tagged.partition_by("anchor", as_dict=True, include_key=False)
        by_anchor = {k[0]: v for k, v in parts.items()}
        for kind in KINDS:
            inputs = [by_anchor[a] for a in kind.anchors if a in by_anchor]
            if not inputs:
                continue
            given = pl.concat(inputs).sort("_row") if len(inputs) > 1 else inputs[0]
            rows = _guarded(kind, given, faults)
            if kind.gives_way and rows is not None and rows.height:
                held = given.filter(pl.col("text").str.contains(kind.gives_way))
                yielding.append(held.with_columns(pl.lit(None, pl.String).alias("anchor")).select(anchored.columns))
            if rows is not None and rows.height:
                if kind.frame == "memory":
                    rows = _with_memory_labels(rows, lines, key)
                if kind.name == "exception":
                    rows = _refined(rows)
                if kind.frame == "events":
                    rows = _oom_sized(rows)
                out.setdefault(kind.frame, []).append(rows)
                if kind.name == "tqdm" and (extra := _side_rows(rows)) is not None:
                    out.setdefault(SIDE_FRAME, []).append(extra)
    # wandb's banner suggests `set WANDB_MODE=online`; that is advice, not the run's environment.
    # A shell comment (`#export NCCL_P2P_DISABLE=1` in a pasted script) sets nothing.
    # One pass finds the lines that may set a variable or a setting or open a block; each test then runs on those.
    rare = searched.filter(pl.col("text").str.contains(RARE_RE))
    env_rows = rare.filter(pl.col("text").str.contains(ENV_HINT)).select(lines.columns)  # the other tests apart
    env_rows = env_rows.filter(~pl.col("text").str.starts_with("wandb: ") & ~pl.col("text").str.contains(r"^\s*#")
                               & ~pl.col("text").str.contains(ADVICE_RE))
    if env_rows.height:
        env = (
            every_match(with_prefix(env_rows, source_id), ENV_RE)
            .with_columns(pl.col("value").str.strip_chars("\"'"))
            .select(*BASE_COLUMNS, "key", "value")
        )
        if env.height:
            out.setdefault("env", []).append(env)
    settings = _settings(rare.select(lines.columns), source_id)
    if settings is not None:
        out.setdefault("facts", []).append(settings)
    used = [part.select(key) for parts in out.values() for part in parts] + ([skipped] if skipped is not None else [])
    # One column unique is a sort of integers, a fifth of a frame's hash-based unique on a long log's chunk.
    if not used:
        out["_lines"] = [lines.select(key).clear()]
    elif source_id is not None:
        out["_lines"] = [pl.concat(used)["line"].unique().to_frame()]
    else:
        out["_lines"] = [pl.concat(used).unique()]
    # Lines no anchored kind read: those without an anchor, and those whose anchor's kinds did not match them (a
    # rate printed as `5.2 it/s, loss 0.3` outside a progress bar). An anchor only says which kinds may read a line.
    # Lines a kind read that hold more than it reads (LineKind.gives_way) are mined as well.
    unclaimed = anchored.filter(pl.col("anchor").is_null())
    if tagged.height:
        unmatched = tagged.select(anchored.columns).join(
            out["_lines"][0].select(pl.col(k).cast(tagged.schema[k]) for k in key), on=key, how="anti")
        more = [f for f in (unmatched, *yielding) if f.height]
        if more:
            unclaimed = pl.concat([unclaimed, *more]).sort("_row")
    # Those that may state a quantity in words (parsers/prose.py), read once the source is.
    # A line a kind read (the anchorless kinds' and those that give way are among the unclaimed, for mining) states
    # nothing more as a sentence: `iter 10: loss 2.5, 1.18 it/s` is a step already.
    if sentences:
        read_here = [*loose_keys, *(y.select(key) for y in yielding)]
        sayers = unclaimed if not read_here else unclaimed.join(
            pl.concat(read_here).select(pl.col(k).cast(unclaimed.schema[k]) for k in key).unique(), on=key,
            how="anti")
        said = prose.candidates(sayers if source_id is None else
                                sayers.with_columns(pl.lit(source_id, dtype=pl.UInt32).alias("source")))
        out["_prose"] = [said.head(prose.PROSE_MAX_LINES)]
    # Those that hold a number: their templates are learned once the source is read (parsers/templates.py); the
    # general progress kind's rows on them may give way to a learned stream.
    free = unclaimed.filter(pl.col("text").str.contains(r"[0-9]"))
    if free.height:
        # The prefixes' lengths once (mining and the table reader use them); a table's rows take their header's
        # names (parsers/tables.py) before their templates are mined.
        extent = outer_extent(free["text"])
        free = tables.named_rows(free, unclaimed, extent).with_columns(extent.alias("_extent"))
    if free.height:
        if source_id is not None:
            free = free.with_columns(pl.lit(source_id, dtype=pl.UInt32).alias("source"))
        mined, tpls = mine(free)
        # Rank and time only for the lines that may be a stream's (the prefixes' patterns cost a pass each).
        mined = with_prefix(mined, source_id, node=False)
        mined = mined.with_columns(pl.when(pl.col("counting")).then(None).otherwise(pl.col("rank")).alias("rank"))
        mined = mined.select(*MINED_SCHEMA)
        # Only the anchorless kinds, the env pass and the kinds that give way read lines mined here: their rows say
        # which mined lines a reader already counted (a join with every used line of the chunk would cost a pass).
        loose_used = [*loose_keys, *(p.select(key) for p in out.get("env", [])), *(y.select(key) for y in yielding)]
        if loose_used:
            claimed = pl.concat(loose_used).unique().with_columns(pl.lit(True).alias("claimed"))
            mined = mined.join(claimed, on=key, how="left").with_columns(pl.col("claimed").fill_null(False))
        else:
            mined = mined.with_columns(pl.lit(False).alias("claimed"))
        out["_mined"], out["_templates"] = [mined], [tpls]
    else:
        out["_mined"] = [pl.DataFrame(schema=MINED_SCHEMA | {"claimed": pl.Boolean})]
        out["_templates"] = [pl.DataFrame(schema=TEMPLATES_SCHEMA)]
    # Highest ranks: the anchored lines' from their prefixes (read once, above), the other lines' by a scan.
    marked = [_ranks_seen(anchored.filter(pl.col("anchor").is_null()), source_id)]
    if tagged.height:
        top = tagged.filter(pl.col("_mark").is_not_null()).select("source", "line", pl.col("_mark").alias("rank"))
        marked.append(top.select(pl.col("source").cast(pl.UInt32), pl.col("line").cast(pl.UInt32), "rank"))
    out["_ranks"] = [max_ranks(marked)]
    out["_faults"] = [pl.DataFrame({"fault": faults}, schema={"fault": pl.String})]
    out["_headers"] = [rare.filter(pl.col("text").str.contains(HEADER_RE)).select("_row")]  # positions in `lines`
    if sampled is not None:
        out["_sampled"] = [sampled]
    return out


def _settings(rows: pl.DataFrame, source_id: int | None) -> pl.DataFrame | None:
    """Named settings on any line (kinds.SETTING_FACTS): one facts row per name and value,
    keyed `setting.<name>` in lower case, however many a line holds (a config printed as one dict); and a Lightning
    DeepSpeed strategy's name. A line a facts kind read is searched too (`Trainer(num_nodes=2, devices=8)`: the
    kind reads the nodes, this pass the devices); a fact read twice from one line is claimed once (facts.py)."""
    hinted = rows.filter(pl.col("text").str.contains(SETTING_PREFILTER))
    if hinted.height == 0:
        return None
    parts = []
    named = hinted.filter(pl.col("text").str.contains(SETTING_HINT))
    found = every_match(with_prefix(named, source_id), SETTING_RE) if named.height else None
    if found is not None and found.height:
        name = pl.coalesce("flag", "key").str.to_lowercase().str.replace_all(r"[ -]", "_")
        parts.append(found.select(*BASE_COLUMNS, (pl.lit("setting.") + name).alias("key"), pl.col("value"),
                                  pl.lit("config_setting").alias("origin")))
    staged = hinted.filter(pl.col("text").str.contains(DEEPSPEED_STRATEGY, literal=True))
    found = every_match(with_prefix(staged, source_id), DEEPSPEED_STRATEGY_RE) if staged.height else None
    if found is not None and found.height:
        parts.append(found.select(*BASE_COLUMNS, pl.lit("lightning.deepspeed_stage").alias("key"), pl.col("value"),
                                  pl.lit("lightning_strategy").alias("origin")))
    return pl.concat(parts) if parts else None


# Prefixes that name a process's global rank: DeepSpeed's `[Rank N]`, torch's `[rankN]:` (and a loop's own
# `[rank3] ` or Lightning Fabric's `[rank: 3] `), Open MPI's
# `[1,N]<stdout>:`. srun's `N: ` task label and torchrun's `[defaultN]:` (a local rank) are not among them.
RANK_MARKS = ("[Rank ", "[rank", "]<std")
_RANK_MARKS_RE = any_of(RANK_MARKS)
RANK_MARK_RE = r"\[Rank ([0-9]{1,6})\]|" + RANK_LABEL + r"([0-9]{1,6})\](?::| )|\[[0-9]+,([0-9]{1,6})\]<std(?:out|err)>"


RANKS_SCHEMA = {"source": pl.UInt32, "line": pl.UInt32, "rank": pl.Int32}


def _ranks_seen(lines: pl.DataFrame, source_id: int | None) -> pl.DataFrame:
    """The highest rank a prefix names in this chunk, per source, with the first line that names it: a lower
    bound on the world size (run_model turns the whole log's highest into one `ranks.max_seen` fact)."""
    empty = pl.DataFrame(schema=RANKS_SCHEMA)
    marked = lines.filter(pl.col("text").str.contains(_RANK_MARKS_RE))
    if marked.height == 0:
        return empty
    # DeepSpeed's `[Rank N] ` is on most lines of a long log: a literal find and a cast of a short slice (as
    # with_prefix reads it) instead of a regex; the other marks, rarer, by the pattern.
    text = pl.col("text")
    digits = text.str.slice(text.str.find("[Rank ", literal=True) + 6, 8)
    ds = digits.str.head(digits.str.find("]", literal=True)).cast(pl.Int32, strict=False)
    found = marked.with_columns(ds.alias("_rank"))
    rest = found.filter(pl.col("_rank").is_null())
    if rest.height:
        other = rest.with_columns(text.str.extract_groups(RANK_MARK_RE).alias("_g")).unnest("_g").with_columns(
            pl.coalesce(pl.col(str(i)).cast(pl.Int32, strict=False) for i in (2, 3)).alias("_rank"))
        found = pl.concat([found.filter(pl.col("_rank").is_not_null()), other.select(found.columns)])
    found = found.filter(pl.col("_rank").is_not_null())
    if found.height == 0:
        return empty
    if source_id is not None:
        found = found.with_columns(pl.lit(source_id, dtype=pl.UInt32).alias("source"))
    return max_ranks([found.select(pl.col("source").cast(pl.UInt32), pl.col("line").cast(pl.UInt32),
                                   pl.col("_rank").alias("rank"))])


def max_ranks(parts: list[pl.DataFrame]) -> pl.DataFrame:
    """Chunks' highest ranks (lines already absolute) -> one row per source: the highest, first named where. One
    pass (no sort): a long log's chunk holds a marked row per line."""
    parts = [p for p in parts if p.height]
    if not parts:
        return pl.DataFrame(schema=RANKS_SCHEMA)
    rows = pl.concat(parts) if len(parts) > 1 else parts[0]
    top = pl.col("rank").max()
    return rows.group_by("source").agg(pl.col("line").filter(pl.col("rank") == top).min(), top).select(
        pl.col("source").cast(pl.UInt32), pl.col("line").cast(pl.UInt32), pl.col("rank").cast(pl.Int32))


def ranks_fact_rows(ranks: pl.DataFrame) -> pl.DataFrame:
    """Highest ranks -> `ranks.max_seen` rows of the facts frame."""
    return ranks.select("source", "line", pl.lit(None, pl.Int32).alias("rank"), pl.lit(None, pl.String).alias("node"),
                        pl.lit(None, pl.Datetime("ms")).alias("ts"), pl.col("rank").cast(pl.String).alias("value"),
                        pl.lit("ranks.max_seen").alias("key"), pl.lit("rank_prefix").alias("origin"))


SIDE_FRAME = "progress"
_SIDE_COLUMNS = ("cum_time_s", "avg_step_time_s", "mfu", "other")


def _side_rows(rows: pl.DataFrame) -> pl.DataFrame | None:
    """The progress reader's readings beyond the steps frame's columns, for the rows that have any."""
    have = [c for c in _SIDE_COLUMNS if c in rows.columns]
    if not have:
        return None
    side = rows.select(*BASE_COLUMNS, *have, "origin").filter(pl.any_horizontal(pl.col(c).is_not_null() for c in have))
    return side if side.height else None


def _guarded(kind: LineKind, rows: pl.DataFrame, faults: list[str]) -> pl.DataFrame | None:
    """One kind over its rows; a kind that raises is named in `faults` and the others still read the chunk."""
    try:
        out = apply_kind(kind, rows)
        if out.height and kind.name in DERIVED:
            out = out.with_columns(DERIVED[kind.name])
        return out
    except Exception as e:  # noqa: BLE001 - one kind's fault must not cost the rest of the log
        faults.append(fault(f"line kind {kind.name}", e))
        return None


def _with_memory_labels(rows: pl.DataFrame, lines: pl.DataFrame, key: list[str]) -> pl.DataFrame:
    """see_memory_usage prints its message on the line before the MA line."""
    before = rows.select(*key[:-1], (pl.col("line") - 1).alias("line")).unique()
    labels = (
        lines.join(before, on=key, how="semi")
        .group_by(key).agg(pl.col("text").last())
        .select(*key[:-1], (pl.col("line") + 1).alias("line"),
                pl.col("text").str.replace(OUTER_PREFIX, "").str.strip_chars().alias("label"))
    )
    return rows.join(labels, on=key, how="left")

