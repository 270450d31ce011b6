"""Bounded memory for the per-step frames of long multi-rank logs.

Every rank prints its own step, throughput and timer lines, so a 16-rank log holds 16 copies of each step: the
frames grow with the log (a 2 GiB log: 13M rows, 1.1 GB). The diagnosis reads the step clock from one rank (the
lowest, metrics._one_rank) and takes medians over the others (rank imbalance, the timer breakdown). So the lowest
rank's rows (the primary stream of each line kind) are all kept, and the other ranks' rows are kept in full up to a
budget; past it, every second one of them is dropped, then every fourth, and so on: a systematic sample by each
stream's own occurrence count, so every rank keeps the same share of its steps. Logs under the budget (all the
corpus and sample logs) are read exactly.

Once a log is past the budget, the lines that the stride would drop are not read at all (sample_lines): a step,
throughput or timer line of a non-primary stream (a rank above the chunk's lowest; without a rank, another host
than its kind's primary), off the stride's phase, is counted and skipped before its prefix and fields are taken
apart. A line is numbered by its place among the lines of its stream, which is the row's place wherever each such
line gives a row (a garbled line, which gives none, moves the sample by one line). Timers keep `seq` from the same
count.

This is how W&B keeps long histories cheap too (`run.history()` samples 500 rows; reference/wandb.md).
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import polars as pl

from diagnose.parsers.kinds import KINDS

# Rows of the non-primary streams kept per frame before thinning starts: 400k rows are ~45 MB of steps and ~25 MB
# of timers, enough for per-rank medians over thousands of steps on hundreds of ranks.
THIN_BUDGET_ROWS = 400_000
# The primary streams are kept in full up to this many rows per frame; past it, one row per step and kind (a kind
# whose lines carry no rank, such as tqdm bars or throughput lines, is printed by every process: 4 to 16 copies);
# past it again with one row per step (a run of millions of steps, a file of millions of tqdm redraws), the primary
# streams are sampled too, every second step, then every fourth: step times come from differences over the step
# count (metrics.WALL_PER_STEP), so a sample of steps still gives them.
PRIMARY_BUDGET_ROWS = 1_000_000
THINNED_FRAMES = ("steps", "timers")
# What one stream of rows is: a rank's (or, without ranks, a host's) lines of one kind in one source. Timers keep the
# numbering `seq` had before (per source, rank and microstep flag): the n-th timer line ~ the n-th step.
STREAM_KEYS: dict[str, tuple[str, ...]] = {
    "steps": ("source", "rank", "node", "origin"),
    "timers": ("source", "rank", "microstep"),
}


@dataclass(frozen=True)
class _Primary:
    rank: int | None
    source: int
    node: str | None


@dataclass
class Thinner:
    """Owns the parts of the thinned frames while a run is read (across all its sources, so per-rank files are
    thinned like one multi-rank log)."""

    budget: int = field(default_factory=lambda: THIN_BUDGET_ROWS)
    primary_budget: int = field(default_factory=lambda: PRIMARY_BUDGET_ROWS)
    parts: dict[str, list[pl.DataFrame]] = field(default_factory=dict)
    stride: dict[str, int] = field(default_factory=dict)  # frame -> keep 1 in N rows of non-primary streams
    primary_stride: dict[str, int] = field(default_factory=dict)  # frame -> keep 1 in N primary rows (past per-step)
    per_step: set[str] = field(default_factory=set)  # frames whose primary streams keep one row per step
    _seen_counts: dict[str, dict[int, int]] = field(default_factory=dict)  # frame -> stream hash -> rows so far
    _primary: dict[tuple[str, str], _Primary] = field(default_factory=dict)  # (frame, origin) -> primary stream
    _others: dict[str, int] = field(default_factory=dict)  # frame -> non-primary rows held
    _primaries: dict[str, int] = field(default_factory=dict)  # frame -> primary rows held
    _sources: set[int] = field(default_factory=set)
    _steps_before: dict[str, pl.DataFrame] = field(default_factory=dict)  # frame -> the last part's primary steps

    def add(self, name: str, part: pl.DataFrame, summary: Summary | None = None) -> None:
        """Number one part's rows within their streams and keep what the current stride allows. `summary` is the
        part's per-stream counts and per-kind ranks where the worker that parsed it computed them (prepare)."""
        if part.height == 0:
            return
        if summary is None:
            part, summary = prepare(name, part)
        part = self._number(name, part, summary.counts)
        part = part.with_columns(self._is_primary(name, summary.kinds).alias("_primary"))
        stride, primary_stride = self.stride.get(name, 1), self.primary_stride.get(name, 1)
        if stride > 1 or primary_stride > 1:
            part = part.filter(_kept(stride, primary_stride))
        if name in self.per_step:
            part = self._one_per_step(name, part)
        self.parts.setdefault(name, []).append(part)
        self._sources.update(part["source"].unique().to_list())
        primary = int(part["_primary"].sum())
        self._others[name] = self._others.get(name, 0) + part.height - primary
        self._primaries[name] = self._primaries.get(name, 0) + primary
        while self._others[name] > self.budget:
            self._halve(name)
        if self._primaries[name] > self.primary_budget and name not in self.per_step and "global_step" in part.columns:
            self.per_step.add(name)
            self.parts[name] = [self._one_per_step(name, p) for p in self.parts[name]]
            self._recount(name)
        while name in self.per_step and self._primaries[name] > self.primary_budget:
            self.primary_stride[name] = self.primary_stride.get(name, 1) * 2
            self.parts[name] = [p.filter(_kept(self.stride.get(name, 1), self.primary_stride[name]))
                                for p in self.parts[name]]
            self._recount(name)

    def sampling(self) -> Sampling:
        """What the workers may skip now (sample_lines)."""
        hosts = {origin: (p.source, p.node) for (_, origin), p in self._primary.items() if p.rank is None}
        return Sampling(dict(self.stride), hosts)

    def drop_source(self, source_id: int) -> None:
        """A file read as a log and then found to be a launch script (or unreadable after all): its rows go."""
        if source_id not in self._sources:
            return
        self._sources.discard(source_id)
        for name, parts in self.parts.items():
            self.parts[name] = [p.filter(pl.col("source") != source_id) for p in parts]
            self._recount(name)

    def take(self, name: str) -> list[pl.DataFrame]:
        """The kept parts, in source and line order, without the bookkeeping columns."""
        parts = [p for p in self.parts.get(name, []) if p.height]
        parts.sort(key=lambda p: (p["source"][0], p["line"][0]))
        return [p.drop("_occ", "_phase", "_primary") for p in parts]

    def _halve(self, name: str) -> None:
        stride = self.stride.get(name, 1) * 2
        self.stride[name] = stride
        self.parts[name] = [p.filter(_kept(stride, self.primary_stride.get(name, 1))) for p in self.parts[name]]
        self._recount(name)

    def _recount(self, name: str) -> None:
        primary = sum(int(p["_primary"].sum()) for p in self.parts[name])
        self._primaries[name] = primary
        self._others[name] = sum(p.height for p in self.parts[name]) - primary

    def _number(self, name: str, part: pl.DataFrame, counts: dict[int, int]) -> pl.DataFrame:
        """`_occ`: the row's index within its stream, counted across parts (and `seq` for timers). The part's own
        numbering is done where it was parsed (prepare, on the worker); here each stream's earlier rows are added."""
        seen = self._seen_counts.setdefault(name, {})
        earlier = {stream: seen[stream] for stream in counts if stream in seen}
        if earlier:
            base = pl.col("_stream").replace_strict(list(earlier), list(earlier.values()), default=0,
                                                    return_dtype=pl.UInt64)
            part = part.with_columns((pl.col("_occ") + base).alias("_occ"))
        for stream, n in counts.items():
            seen[stream] = seen.get(stream, 0) + n
        part = part.drop("_stream")
        if name == "timers":
            part = part.with_columns(pl.col("_occ").cast(pl.UInt32).alias("seq"))
        return part

    def _is_primary(self, name: str, kinds: list[tuple[str, int | None, int, str | None]]) -> pl.Expr:
        """Rows of the lowest rank printing each kind; where the kind's lines carry no rank, those of the first
        source and host that printed it."""
        expr = pl.lit(False)
        for origin, low, source, node in kinds:
            current = self._primary.get((name, origin))
            if low is not None:
                if current is None or current.rank is None or low < current.rank:
                    self._primary[(name, origin)] = current = _Primary(int(low), 0, None)
            elif current is None:
                self._primary[(name, origin)] = current = _Primary(None, int(source), node)
            if current.rank is not None:
                this = pl.col("rank") == current.rank
            else:
                same = pl.col("node").is_null() if current.node is None else pl.col("node").cast(pl.String) == current.node
                this = pl.col("rank").is_null() & (pl.col("source") == current.source) & same
            expr = pl.when(pl.col("origin") == origin).then(this.fill_null(False)).otherwise(expr)
        return expr

    def _one_per_step(self, name: str, part: pl.DataFrame) -> pl.DataFrame:
        """Primary rows past the primary budget: the first of each step and kind (the copies other processes
        printed go), also where a step's lines straddle two chunks."""
        if "global_step" not in part.columns:
            return part
        key = ["source", "origin", "global_step"]
        first = pl.struct(key).is_first_distinct()
        part = part.filter(~pl.col("_primary") | pl.col("global_step").is_null() | first)
        before = self._steps_before.get(name)
        if before is not None:
            seen = part.select(key).join(before, on=key, how="left", nulls_equal=True, maintain_order="left")
            part = part.filter(~pl.col("_primary") | seen["_seen"].is_null())
        self._steps_before[name] = part.filter(pl.col("_primary") & pl.col("global_step").is_not_null()).select(
            *key, pl.lit(True).alias("_seen")).unique()
        return part


def _kept(stride: int, primary_stride: int = 1) -> pl.Expr:
    """The rows the strides keep, by each stream's phase: one in `primary_stride` of the primary rows (all of them
    until a run outgrows the primary budget) and one in `stride` of the others."""
    primary = pl.col("_primary") if primary_stride == 1 else pl.col("_primary") & (pl.col("_phase") % primary_stride == 0)
    return primary | (~pl.col("_primary") & (pl.col("_phase") % stride == 0))


@dataclass(frozen=True)
class Summary:
    counts: dict[int, int]  # stream hash -> rows in the part
    kinds: list[tuple[str, int | None, int, str | None]]  # per line kind: (origin, lowest rank, first source, host)


def _stream(name: str) -> pl.Expr:
    return pl.struct(list(STREAM_KEYS[name])).hash().alias("_stream")


def prepare(name: str, part: pl.DataFrame, stride: int = 1,
            sampled: pl.DataFrame | None = None) -> tuple[pl.DataFrame, Summary]:
    """The part's own numbering within each stream (`_stream`: a hash of the stream's key; `_occ`, and `_phase`
    which the sampling keys on) and its summary, done where the part was parsed (on a worker) so that the merge in
    order only adds each stream's earlier rows. With the stride already known, rows that cannot be kept are dropped
    here: those of a rank above the part's lowest for their kind (never the primary) off the stride's phase.
    `sampled` (sample_lines): the chunk's lines that were numbered before they were read, some of them skipped;
    their rows keep that number, and the timers' counts are of the lines, skipped ones included."""
    part = part.with_columns(_stream(name)).with_columns(
        pl.int_range(pl.len(), dtype=pl.UInt64).over("_stream").alias("_occ"))
    if sampled is not None and sampled.height:
        numbered = sampled.filter(pl.col("frame") == name)
        part = part.join(numbered.select("line", pl.col("occ").alias("_pre")), on="line", how="left")
        prenumbered = pl.col("_pre").is_not_null()
        counts = dict(part.filter(~prenumbered).group_by("_stream").agg(pl.len()).iter_rows())
        if name == "timers":  # seq counts what each rank printed: the skipped lines too
            lines = numbered.group_by("rank", "microstep").agg(pl.len().alias("n")).select(
                pl.lit(part["source"][0], pl.UInt32).alias("source"), "rank", "microstep", "n")
            for stream, n in lines.select(_stream(name), "n").iter_rows():
                counts[stream] = counts.get(stream, 0) + n
        else:  # a step row's _occ is not read past the chunk (only timers' seq is): the rows read suffice
            counts.update(dict(part.filter(prenumbered).group_by("_stream").agg(pl.len()).iter_rows()))
        part = part.with_columns(pl.coalesce("_pre", "_occ").alias("_occ")).drop("_pre")
    else:
        counts = dict(part.group_by("_stream").agg(pl.len()).iter_rows())
    kinds = part.group_by("origin", maintain_order=True).agg(
        pl.col("rank").min().alias("low"), pl.col("source").first(), pl.col("node").first().cast(pl.String))
    part = part.with_columns(pl.col("_occ").cast(pl.UInt32).alias("_phase"))
    if stride > 1:
        maybe_primary = pl.col("rank").is_null() | (pl.col("rank") == pl.col("rank").min().over("origin"))
        part = part.filter(maybe_primary | (pl.col("_phase") % stride == 0))
    return part, Summary(counts, [(str(o), low, int(src), node) for o, low, src, node in kinds.iter_rows()])


def _anchor_owners() -> tuple[dict[str, str], dict[str, str]]:
    """(anchor -> frame, anchor -> kind) for the anchors whose lines give rows of one thinned frame only, and of
    one kind where the second map has them: a line classified by one of them may be skipped by the stride. The
    line kinds' anchors, as data (kinds.py), decide it."""
    owners: dict[str, set[tuple[str, str]]] = {}
    for kind in KINDS:
        for anchor in kind.anchors:
            owners.setdefault(anchor, set()).add((kind.frame, kind.name))
    frames = {a: {f for f, _ in o} for a, o in owners.items()}
    thinned = {a: next(iter(f)) for a, f in frames.items() if len(f) == 1 and next(iter(f)) in THINNED_FRAMES}
    return thinned, {a: next(iter(owners[a]))[1] for a in thinned if len(owners[a]) == 1}


THINNED_ANCHORS, _ANCHOR_KIND = _anchor_owners()
_THINNED = tuple(THINNED_ANCHORS)
_MICROSTEP = "_microstep: "  # a timer line of the micro-step shape (extract.timers_wide reads the same names)


@dataclass(frozen=True)
class Sampling:
    """What a worker needs to skip the lines the thinner would drop: the strides, and for each kind whose primary
    stream carries no rank, the source and host that stream is (Thinner._is_primary)."""

    strides: dict[str, int]
    hosts: dict[str, tuple[int, str | None]] = field(default_factory=dict)

    @property
    def skips(self) -> bool:
        return max(self.strides.values(), default=1) > 1


def sample_lines(tagged: pl.DataFrame, source_id: int, sampling: Sampling) -> tuple[pl.Series, pl.DataFrame]:
    """The anchored lines of one source's chunk (`line`, `text`, `anchor`, the `rank` a `[Rank N]` names, and for
    lines with none that name no rank otherwise (`hostless`), their `node`) -> (which lines to read, and the
    numbering of the lines of thinned frames: line, rank, frame, microstep, occ). A line of a frame with a stride
    above one is skipped where it is off the stride's phase, counted among its rank's lines of the same anchor (or,
    without a rank, its host's), and not of a primary stream: its rank is above the chunk's lowest for the anchor,
    or, printed without a rank, its kind's primary stream is another source's or host's. These are the rows the
    thinner would drop; they are never read."""
    # The anchor as a small integer, once (0: not thinned): what each thinned anchor implies is looked up by it, and
    # the numbering keys on numbers, not on strings hashed again and again.
    frames = [THINNED_ANCHORS[a] for a in _THINNED]
    kinds = [_ANCHOR_KIND.get(a) for a in _THINNED]
    code = pl.col("anchor").replace_strict(_THINNED, range(1, len(_THINNED) + 1), default=0, return_dtype=pl.UInt8)
    lines = tagged.select("line", "rank", "node", "hostless", "text", code.alias("_a"))

    def by_code(values: Sequence[object], dtype: pl.DataType | type[pl.DataType]) -> pl.Expr:
        # A lookup table indexed by the code (0: not thinned, null): a gather, a quarter of a replace's cost.
        return pl.lit(pl.Series([None, *values], dtype=dtype)).gather(pl.col("_a"))

    # Lines without a rank are candidates only where their kind's primary host is known.
    known = by_code([k in sampling.hosts for k in kinds], pl.Boolean)
    ranked = pl.col("rank").is_not_null()
    lines = lines.with_columns(((pl.col("_a") > 0) & (ranked | (pl.col("hostless") & known))).fill_null(False)
                               .alias("_c"))
    numbered = lines.filter("_c").drop("_c")
    timer_codes = [i + 1 for i, f in enumerate(frames) if f == "timers"]
    timer = pl.col("_a").is_in(timer_codes)
    # The microstep shape, read on the timer lines only (a when/then would search every line).
    is_timer = numbered.select(timer).to_series()
    at = is_timer.arg_true()
    microstep = pl.repeat(False, is_timer.len(), eager=True)
    if at.len():
        microstep = microstep.scatter(at, numbered["text"].gather(at).str.contains(_MICROSTEP, literal=True))
    numbered = numbered.with_columns(microstep.alias("microstep"))
    # Numbered within the stream each frame keys its rows by (STREAM_KEYS): a step line by its rank and host, a
    # timer line by its rank and shape; the anchor apart.
    numbered = numbered.with_columns(pl.int_range(pl.len(), dtype=pl.UInt64).over(
        "_a", "rank", pl.when(~timer).then(pl.col("node")), pl.when(timer).then(pl.col("microstep"))).alias("occ"))
    hosts = {k: node for k, (source, node) in sampling.hosts.items() if source == source_id}
    primary_host = by_code([hosts.get(k) if k is not None else None for k in kinds], pl.String)
    elsewhere = by_code([k is not None and k in sampling.hosts and k not in hosts for k in kinds], pl.Boolean)
    other_host = elsewhere | pl.col("node").ne_missing(primary_host)
    low = pl.col("rank") == pl.col("rank").min().over("_a")
    not_primary = pl.when(ranked).then(~low).otherwise(other_host)
    stride = by_code([sampling.strides.get(f, 1) for f in frames], pl.UInt64)
    skip = not_primary.fill_null(False) & (pl.col("occ") % stride != 0)
    read = (~lines["_c"]).scatter(lines["_c"].arg_true(), numbered.select(~skip.fill_null(False)).to_series())
    frame = by_code(frames, pl.String).alias("frame")
    return read, numbered.select("line", "rank", frame, "microstep", "occ")
