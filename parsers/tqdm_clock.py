"""Step times from tqdm bars: the rate a bar prints is an average, not a step's time.

tqdm (4.x, `tqdm/std.py`) updates its rate only at a refresh (every `mininterval`, 0.1 s by default), as
`ema(dn) / ema(dt)`: exponential moving averages, weight `smoothing` (0.3 by default) on the newest interval,
bias-corrected like `ewm_mean(adjust=True)`. Every other line of the bar (a redraw after `tqdm.write`, the HF
Trainer's log dicts) repeats the last rate with a newer count. Lightning's bars set `smoothing=0`: the rate is
then the count over the elapsed time since the bar began. Read as step times, such rates smear a pause over the
steps after it (a 1.7 s checkpoint save shows as 0.2 s, 0.15 s, 0.13 s, ... per step) and make a warm-up look
twenty steps long.

So each bar is read as what it prints: a refresh is a line whose rate differs from the line before; between two
refreshes the count advanced by `dn` steps; and the interval's time `dt` follows from the rates by undoing the
average, under the model the bar's own elapsed column (`[MM:SS<`) agrees with:
- `cumulative` (smoothing 0): the time to each refresh is `n / rate`;
- `ema` (smoothing 0.3): `ema(dt)_k = ema(dn)_k / rate_k`, with `ema(dn)` computed from the known counts, and
  `dt_k = (U_k - (1 - a) U_(k-1)) / a` on the uncorrected averages `U`.
Each step of the interval gets `dt / dn`. Where neither model agrees with the elapsed column within its
one-second resolution (a bar cut at the head, another smoothing, a bar that was never a clock), the printed rates
stay as they are.
"""
from __future__ import annotations

import polars as pl

# tqdm's default `smoothing` (tqdm/std.py, `tqdm.__init__`): the weight of the newest interval in its averages.
SMOOTHING = 0.3
# The elapsed column is printed in whole seconds; a model agrees with it when its time to each refresh is within a
# second of the printed elapsed time, plus this share of it (the rates are printed to 3-4 significant digits).
ELAPSED_SLACK_S = 1.0
ELAPSED_SLACK_SHARE = 0.05
MIN_REFRESHES = 4  # fewer refreshes than this say nothing about the average's model
STREAM = ["source", "_nd", "_rk"]  # one bar stream per source, host and rank
# ... and within it, each bar from its count's start (`_bar`): one integer key for the four, since the bars are
# grouped in a dozen windows, joins and aggregations below (1 GiB log: 0.36 -> 0.27 s for the whole clock).
BAR = ["_b"]


def shorter_bar(over: str | list[str] = "source") -> pl.Expr:
    """A tqdm row of a bar shorter than the longest in `over`: an evaluation's or a save writer's (the HF Trainer's
    closing `evaluate()` draws 8/8 after step 300), not the training's."""
    tqdm = pl.col("origin") == "tqdm"
    return (tqdm & (pl.col("total_steps") < pl.col("total_steps").filter(tqdm).max().over(over))).fill_null(False)


def _nth_in_line(frame: pl.DataFrame, *order: str) -> pl.DataFrame:
    """Each row's place among its line's rows (0, 1, ...), in `order`: one pass over the sorted rows, not a window
    per line."""
    frame = frame.sort("source", "line", *order, maintain_order=True)
    idx = pl.int_range(pl.len(), dtype=pl.UInt32)
    new = ((pl.col("line") != pl.col("line").shift(1))
           | (pl.col("source") != pl.col("source").shift(1))).fill_null(True)
    return frame.with_columns((idx - pl.when(new).then(idx).forward_fill()).alias("_o"))


def _elapsed_s(rows: pl.DataFrame, side: pl.DataFrame) -> pl.DataFrame:
    """Each tqdm row's elapsed seconds from the progress frame, which holds one row for each, in the same order: a
    line holds several bars where a log keeps tqdm's carriage returns, so rows pair by their place in the line."""
    # The progress frame keeps every bar line and the steps frame a sample of them on a long log (8 GiB: 3.0M
    # against 0.2M): only the lines sampled are numbered, each with all its bars, so each bar keeps its place.
    sampled = rows.lazy().select("source", "line").unique()
    elapsed = _nth_in_line(side.lazy().filter(pl.col("origin") == "tqdm").select(
        "source", "line", pl.col("cum_time_s").alias("_el")).join(
        sampled, on=["source", "line"], how="semi", maintain_order="left").collect())
    return _nth_in_line(rows, "_i").join(elapsed, on=["source", "line", "_o"], how="left").drop("_o")


def number_bars(rows: pl.DataFrame) -> pl.DataFrame:
    """The tqdm rows of the longest bar of each source and rank (the training bar, not an evaluation's or a
    checkpoint writer's), numbered into bars: a count that falls back starts a new one."""
    # One bar per source, host and rank (pdsh and srun prefixes name the host where the rank is not printed); the
    # key joins: null never equals null.
    rows = rows.with_columns(pl.col("rank").fill_null(-1).alias("_rk"), pl.col("node").fill_null("").alias("_nd"))
    rows = rows.filter(~shorter_bar(STREAM) & pl.col("total_steps").is_not_null()).sort("source", "line", "_i")
    restart = (pl.col("global_step") < pl.col("global_step").shift(1).over(STREAM)).fill_null(True)
    return rows.with_columns(restart.alias("_new")).with_columns(
        pl.col("_new").cum_sum().over(STREAM).alias("_bar")).with_columns(
        pl.struct(*STREAM, "_bar").rank("dense").alias("_b")).drop("_new")


def _refreshes(bar: pl.DataFrame, every_advance: bool = False) -> pl.DataFrame:
    """A bar's refreshes: each line whose rate differs from the line before, with the steps since the last one; with
    `every_advance`, each line whose count advanced (a steady bar prints the same rate at refresh after refresh)."""
    rate = 1.0 / pl.col("step_time_s")
    column = "global_step" if every_advance else "step_time_s"
    changed = (pl.col(column) != pl.col(column).shift(1).over(BAR)).fill_null(True)
    ref = bar.filter(changed & (pl.col("step_time_s") > 0)).with_columns(rate.alias("_rate"))
    ref = ref.with_columns(pl.col("global_step").diff().over(BAR).alias("_dn"))
    # The bar's first refresh counts from 0 where the bar is seen from its start (its first count no larger than
    # twice the typical interval), else the count before it is unknown and it takes the next interval's size.
    first = pl.col("global_step").first().over(BAR)
    from_start = first <= 2 * pl.col("_dn").median().over(BAR).fill_null(first)
    ref = ref.with_columns(from_start.alias("_start"), pl.col("_dn").shift(-1).over(BAR).alias("_next"))
    dn = pl.when(pl.col("_dn").is_null()).then(pl.when(pl.col("_start")).then(pl.col("global_step"))
                                                 .otherwise(pl.col("_next"))).otherwise(pl.col("_dn"))
    return ref.with_columns(dn.alias("_dn"), pl.int_range(1, pl.len() + 1).over(BAR).alias("_k")) \
        .drop("_next").filter(pl.col("_dn") > 0)


def _steady(bars: pl.DataFrame) -> pl.DataFrame:
    """The bars whose lines at one count all print one rate (but the last: `close()` prints the whole bar's
    average): a bar that tqdm drew alone, not several interleaved on one line."""
    same_count = pl.col("global_step") == pl.col("global_step").shift(1).over(BAR)
    other_rate = pl.col("step_time_s") != pl.col("step_time_s").shift(1).over(BAR)
    mixed = (same_count & other_rate).fill_null(False)
    return bars.group_by(BAR).agg(mixed.head(pl.len() - 1).any().alias("_mixed")).filter(
        ~pl.col("_mixed")).select(BAR)


def _times(ref: pl.DataFrame) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Each refresh interval's time under the two models (`_dt_cum`, `_dt_ema`) and whether each model agrees
    with the elapsed column over the bar."""
    a, b = SMOOTHING, 1.0 - SMOOTHING
    # cumulative: the time to each refresh is the count over the rate
    to_refresh = pl.col("global_step") / pl.col("_rate")
    dt_cum = to_refresh.diff().over(BAR).fill_null(pl.col("_dn") / pl.col("_rate"))
    # ema: tqdm's corrected average of the counts, the times' average from it, then the uncorrected averages'
    # recurrence undone; a bar seen from its middle starts its averages at the first interval (their correction
    # long since 1).
    ema_dn = pl.when(pl.col("_start").first().over(BAR)).then(
        pl.col("_dn").ewm_mean(alpha=a, adjust=True).over(BAR)).otherwise(
        pl.col("_dn").ewm_mean(alpha=a, adjust=False).over(BAR))
    correction = pl.when(pl.col("_start").first().over(BAR)).then(1.0 - b ** pl.col("_k")).otherwise(1.0)
    u = ema_dn / pl.col("_rate") * correction
    dt_ema = ((u - b * u.shift(1).over(BAR)) / a).fill_null(pl.col("_dn") / pl.col("_rate"))
    ref = ref.with_columns(dt_cum.alias("_dt_cum"), dt_ema.alias("_dt_ema"))
    # Agreement with the printed elapsed time: the time each model puts before each refresh, against `[MM:SS<`,
    # up to a constant (the bar's clock starts before its first count, and a bar seen from its middle has no start):
    # the model's lead on the elapsed column may move by its one-second resolution and a small share of the span.
    span = pl.col("_el").max() - pl.col("_el").min()

    def lead(m: str) -> pl.Expr:
        return pl.col(f"_dt_{m}").cum_sum() - pl.col("_el")

    agree = [(lead(m).max() - lead(m).min() <= ELAPSED_SLACK_S + ELAPSED_SLACK_SHARE * span + 1e-9)
             .alias(f"_ok_{m}") for m in ("cum", "ema")]
    positive = [(pl.col(f"_dt_{m}") > 0).all().alias(f"_pos_{m}") for m in ("cum", "ema")]
    verdict = ref.filter(pl.col("_el").is_not_null()).group_by(BAR).agg(
        *agree, *positive, pl.len().alias("_n"))
    return ref, verdict


def tqdm_step_times(steps: pl.DataFrame, side: pl.DataFrame) -> pl.DataFrame:
    """The steps frame with each tqdm row's step time read as above; rows whose bar fits neither model keep the
    printed rate. `side` is the progress frame, which holds each tqdm line's elapsed seconds (`cum_time_s`)."""
    if steps.height == 0 or "origin" not in steps.columns:
        return steps
    is_tqdm = (pl.col("origin") == "tqdm") & pl.col("step_time_s").is_not_null() & pl.col("global_step").is_not_null()
    # Only the columns the bars are read from: each column of the steps frame carried through the sorts and joins
    # below is a copy. This and the sampled lines' join in _elapsed_s took the 8 GiB report's peak, which was here,
    # from 1.14 GB to 0.93 GB.
    rows = steps.lazy().with_row_index("_i").filter(is_tqdm).select(
        "_i", "source", "line", "rank", "node", "origin", "total_steps", "global_step", "step_time_s").collect()
    if rows.height < MIN_REFRESHES:
        return steps
    bars = number_bars(_elapsed_s(rows, side))
    # Which lines are refreshes: those whose rate changed (other lines of an averaging bar repeat its rate with a
    # newer count: a redraw after `tqdm.write`, a postfix set with refresh), or every line whose count advanced. A
    # cumulative bar computes its rate at every print, so there each line is read (a steady stretch prints one rate
    # for many refreshes, and the first reading would spread a pause over the whole stretch); an averaging bar is
    # read at its rate changes first, and at every advance only where that fits the elapsed column alone.
    readings = {every: _times(_refreshes(bars, every)) for every in (True, False)}
    steady = _steady(bars)
    chosen: list[pl.DataFrame] = []
    verdicts: list[pl.DataFrame] = []
    by_count: list[pl.DataFrame] = []  # the bars read at every advance
    for every, model in ((True, "cum"), (False, "cum"), (False, "ema"), (True, "ema")):
        ref, verdict = readings[every]
        if every:  # not where one count shows two rates (bars interleaved on one line, ranks' bars merged)
            verdict = verdict.join(steady, on=BAR, how="semi").filter(pl.col("_n") >= 2 * MIN_REFRESHES)
        verdict = verdict.filter((pl.col("_n") >= MIN_REFRESHES) & pl.col(f"_ok_{model}") & pl.col(f"_pos_{model}"))
        verdict = verdict.select(BAR)
        for earlier in verdicts:
            verdict = verdict.join(earlier, on=BAR, how="anti")
        verdicts.append(verdict)
        if every:
            by_count.append(verdict)
        chosen.append(ref.join(verdict, on=BAR).select("_i", (pl.col(f"_dt_{model}") / pl.col("_dn")).alias("_per_step")))
    verdict = pl.concat(v.select(BAR) for v in verdicts)
    if verdict.height == 0:
        return steps
    ref = pl.concat(chosen)
    # Each line takes the interval it falls in: the next refresh's, in line order. Lines after a bar's last
    # refresh repeat a rate no interval measured, and give no step time. In a bar read at every advance, a line
    # that repeats a count (a redraw) takes the interval that ended at that count.
    lines = (bars.join(verdict, on=BAR).select("_i", *BAR, "line", "global_step").join(ref, on="_i", how="left")
             .sort(*BAR, "line", "_i"))
    timed = lines.with_columns(pl.col("_per_step").backward_fill().over(BAR))
    counted = pl.concat(by_count)
    if counted.height:
        at_count = pl.col("_per_step").drop_nulls().first().over(*BAR, "global_step")
        recount = (lines.join(counted, on=BAR, how="semi").with_columns(at_count.alias("_per_step"))
                   .sort(*BAR, "global_step", "line", "_i")
                   .with_columns(pl.col("_per_step").backward_fill().over(BAR)))
        timed = pl.concat([timed.join(counted, on=BAR, how="anti"), recount.select(timed.columns)])
    # Each read row's time put in its place (`_i` is its row), null where it repeats a rate no interval measured:
    # one column rewritten, not the whole frame joined.
    read = steps["step_time_s"].scatter(timed["_i"], timed["_per_step"].cast(steps.schema["step_time_s"]))
    return steps.with_columns(read)
