"""Wall-clock stamps wherever a line holds them: ISO and space-separated date-times with any fraction of a second, in
brackets or not, `YYYY/MM/DD`, `MM/DD/YYYY`, a two-digit year (`%m/%d/%y`, log4j's `yy/MM/dd`), the year-less
`MM/DD HH:MM:SS` and `MM-DD HH:MM:SS` of detectron2,
MMEngine and OpenRLHF's loggers, month names (syslog's `Jan  5 10:00:08`, ctime's `Mon Jan  5 10:00:08 2026`,
`05 Jan 2026 10:04:15`), behind any launcher prefix. One pattern finds the first stamp of a line; the formats
are tried as polars expressions over the whole column (no per-line Python).

Three shapes count only where they open a line (prefixes peeled), since elsewhere they are as likely a duration or
a count: a clock time alone (`12:03:44 INFO`, `[12:03:44.120]`), glog's `I1202 12:03:44.123456` (absl, TensorFlow,
JAX, Paddle), and epoch seconds (`1701234567.25`, 2001 to 2033) or milliseconds (`1701234567250`).

A year-less stamp is placed in YEARLESS_YEAR, a leap year so that `02/29` parses: only differences between stamps
are ever used, and a stream does not cross New Year often enough to matter (a difference that goes negative is not
a step time: metrics drop it). A clock time alone is placed on CLOCK_ONLY_DAY, and `roll_days` moves it on a day
each time a source's clock times go back by more than half a day (past midnight).

Digits are written `[0-9]`, here and in the other per-line patterns (extract.py, prefixes.py, templates.py), not
`\\d`: the regex crate reads `\\d` as any Unicode digit, and a pattern made of many compiles several times slower
(STAMP: 9 ms against 1 ms). polars keeps about 32 compiled patterns a thread, fewer than one chunk's reading uses, so
every chunk and every small log compiles them again (the samples' parse and diagnosis: 7-10% of their CPU). The
digits a log's numbers and stamps are read from are ASCII ones: a Unicode digit never casts to a number.
"""
from __future__ import annotations

import polars as pl

YEARLESS_YEAR = "2000"
_FRAC = r"(?:[.,][0-9]{1,9})?"
# A 12-hour clock says so (`1:00:08 PM`, `%I:%M:%S %p`), and only then may its hour be one digit.
_HMS = (r"(?:[0-9][0-9]?:[0-9][0-9]:[0-9][0-9]" + _FRAC + r" ?[AaPp][Mm]\b|[0-9][0-9]:[0-9][0-9]:[0-9][0-9]" + _FRAC
        + ")")
# Alternatives, most specific first; each is also its own normalisation below.
_YMD = r"[0-9]{4}-[0-9][0-9]-[0-9][0-9][T ,]" + _HMS  # `,`: open_clip's datefmt '%Y-%m-%d,%H:%M:%S'
_YMD_SLASH = r"[0-9]{4}/[0-9][0-9]/[0-9][0-9][ T,-]" + _HMS  # `-`: RocksDB's `2026/01/05-10:00:08.160123`
_MDY = r"[0-9]{1,2}/[0-9]{1,2}/[0-9]{4},? " + _HMS
# The year first with dots (`2026.01.05 10:00:08`, a .NET or Unity `yyyy.MM.dd`, common in Chinese loggers' datefmt).
_YMD_DOT = r"\b[0-9]{4}\.[0-9][0-9]\.[0-9][0-9][ T]" + _HMS
# Day first with dots (a German or Russian locale's `%d.%m.%Y`), the CJK `2026年01月05日`, the compact `%Y%m%d` of
# C++ loggers (`20260105 10:00:08.160`).
_DMY_DOT = r"\b[0-9][0-9]\.[0-9][0-9]\.[0-9]{4},? " + _HMS
_YMD_CJK = r"[0-9]{4}年[0-9]{1,2}月[0-9]{1,2}日 ?" + _HMS
# (glog since 0.7 prints the year: `I20260105 10:00:08.160000 12345 solver.cpp:245]`, its level's letter glued on)
_YMD_COMPACT = r"\b[IWEF]?(?:19|20)[0-9][0-9][01][0-9][0-3][0-9][ T]" + _HMS
# A two-digit year: `%m/%d/%y` (`01/05/26 10:00:08`) or log4j's `yy/MM/dd` (Spark's `26/01/05 10:00:08`). Read as the
# month first where the first part can be a month, else as the year first. A day-first `%d/%m/%y` is not told apart
# (no single line says which it is): its stamps are right within a day and jump a month at midnight.
_MDY2 = r"\b[0-9][0-9]/[0-9][0-9]/[0-9][0-9],? " + _HMS
_MD_SLASH = r"[0-9][0-9]/[0-9][0-9] " + _HMS
_MD_DASH = r"[0-9][0-9]-[0-9][0-9] " + _HMS
# Month names: syslog's and journald's `Jan  5 10:00:08` (no year), C's ctime `Mon Jan  5 10:00:08 2026` (`date`
# in a job script, the year after the time), and `05 Jan 2026 10:04:15.600` (redis, RFC 2822 without the weekday).
MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")
_MON = "(?:" + "|".join(MONTHS) + ")"
# Java's default `Jan 5, 2026 1:00:08 PM` has the year after a comma, as has Kibana's export (`Jan 5, 2026 @
# 10:00:08.000`); `05-Jan-2026 10:00:08` (log4j's and Tomcat's `dd-MMM-yyyy`) and the common log format's
# `05/Jan/2026:10:00:08` join the parts otherwise.
_MON_D = (rf"(?:(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun) )?{_MON} {{1,2}}[0-9][0-9]?(?:, [0-9]{{4}}(?: @)?)? {_HMS}"
          r"(?: [0-9]{4}\b)?")
_D_MON_Y = rf"\b[0-9]{{1,2}}[ /-]{_MON}[ /-][0-9]{{4}}(?:,? |:){_HMS}"
STAMP = "|".join(f"(?:{p})" for p in (_YMD, _YMD_SLASH, _YMD_DOT, _MDY, _MDY2, _MD_SLASH, _MD_DASH, _MON_D, _D_MON_Y,
                                      _DMY_DOT, _YMD_CJK, _YMD_COMPACT))
# The cheap pre-filter: a clock time with seconds next to a date-like part (a month's name ends in a letter).
STAMP_HINT = (r"[0-9][-/.][0-9][0-9][ T,-]+[0-9][0-9]?:[0-9][0-9]:[0-9][0-9]"
              r"|[0-9]{4},?(?: @)?[ T:][0-9][0-9]?:[0-9][0-9]:[0-9][0-9]"
              r"|[a-z] [ 0-9][0-9] [0-9][0-9]?:[0-9][0-9]:[0-9][0-9]"
              r"|日 ?[0-9][0-9]?:[0-9][0-9]:[0-9][0-9]")
# Cheaper still, tried first: a pattern with no leading literal costs a regex step per byte of the line, and this
# one (a third of the cost of STAMP_HINT on the benchmark's timer lines) turns most lines away.
_CLOCK_HINT = r"[0-9]:[0-9][0-9]:[0-9][0-9]"


def _parse(stamps: pl.Series) -> pl.Series:
    """Found stamps (any of the formats) -> Datetime(ms). The normalised text is made once: each format's test below
    reads it, and an expression would be evaluated again for each (polars' eager select shares no subexpression)."""
    rare = stamps.str.contains(_RARE_SHAPE).fill_null(False).arg_true()
    # (scatter writes in place: onto a copy, as the 12-hour test below reads the stamps as found)
    s = stamps.clone().scatter(rare, pl.select(_normalised(pl.lit(stamps.gather(rare)))).to_series()) \
        if rare.len() else stamps
    s = s.str.replace(",", ".", literal=True).str.replace(r"\. ", " ")  # `12/09/2022, 12:13:25`; `,123` ms
    if not (twelve := stamps.str.contains(_TWELVE_HOUR).fill_null(False)).any():
        return pl.select(_parse24(pl.lit(s))).to_series()
    half = pl.when(twelve).then(stamps.str.extract(r"([AaPp])[Mm]$", 1).str.to_uppercase())  # AM or PM
    return pl.select(_twelve_hour(_parse24(pl.lit(s)), half)).to_series()


_TWELVE_HOUR = r"[0-9] ?[AaPp][Mm]$"
# Shapes the common ones need no work for: a 12-hour clock, a date ended by `,` or `-`, day first with dots, CJK,
# %Y%m%d. Found by one test, and only those stamps normalised (each of _normalised's passes costs as much as the test).
_RARE_SHAPE = (_TWELVE_HOUR + r"|年|^[0-9][0-9]\.[0-9][0-9]\.|^[0-9]{4}\.|^[IWEF]?(?:19|20)[0-9]{6}[ T]"
               r"|^[0-9]{4}[-/][0-9][0-9][-/][0-9][0-9][,-]")


def _normalised(stamp: pl.Expr) -> pl.Expr:
    """A stamp in a shape _parse24 reads: its 12-hour mark dropped, the hour padded, the date's parts in order."""
    return (stamp.str.replace(r" ?[AaPp][Mm]$", "")
            .str.replace(r"(^|[^0-9:.])([0-9]):([0-9][0-9]:[0-9][0-9])", "${1}0${2}:${3}")  # `1:00:08 PM`
            # `2024-01-05,10:00:08`, `2026/01/05-10:00:08`
            .str.replace(r"^([0-9]{4}[-/][0-9][0-9][-/][0-9][0-9])[,-]", "${1} ")
            .str.replace(r"^([0-9][0-9])\.([0-9][0-9])\.([0-9]{4})", "${3}-${2}-${1}")  # day first with dots
            .str.replace(r"^([0-9]{4})\.([0-9][0-9])\.([0-9][0-9])", "${1}-${2}-${3}")  # the year first with dots
            .str.replace(r"^([0-9]{4})年([0-9]{1,2})月([0-9]{1,2})日 ?", "${1}-${2}-${3} ")
            .str.replace(r"^([0-9]{4})-([0-9])-", "${1}-0${2}-")
            .str.replace(r"^([0-9]{4}-[0-9][0-9])-([0-9]) ", "${1}-0${2} ")
            .str.replace(r"^[IWEF]?((?:19|20)[0-9][0-9])([01][0-9])([0-3][0-9])[ T]", "${1}-${2}-${3} "))  # `%Y%m%d`


def _twelve_hour(ts: pl.Expr, half: pl.Expr) -> pl.Expr:
    """A 12-hour clock's stamp on the 24-hour day: 12 AM is midnight, 1 to 11 PM twelve hours on."""
    hour = ts.dt.hour()
    shift = pl.when((half == "P") & (hour < 12)).then(12).when((half == "A") & (hour == 12)).then(-12).otherwise(0)
    return ts + pl.duration(hours=shift)


def _parse24(s: pl.Expr) -> pl.Expr:
    iso = s.str.replace("T", " ", literal=True).str.replace_all("/", "-", literal=True)
    fmt = "%Y-%m-%d %H:%M:%S%.f"
    mdy = s.str.extract(r"^([0-9]{1,2})/([0-9]{1,2})/([0-9]{4})", 0)
    return pl.coalesce(
        pl.when(s.str.contains(_MON)).then(_by_month_name(s).str.to_datetime(fmt, strict=False, time_unit="ms")),
        pl.when(s.str.contains(r"^[0-9]{4}[-/]")).then(iso.str.to_datetime(fmt, strict=False, time_unit="ms")),
        pl.when(mdy.is_not_null()).then(
            s.str.replace(r"^([0-9]{1,2})/([0-9]{1,2})/([0-9]{4})", "${3}-${1}-${2}")
            .str.replace(r"^([0-9]{4})-([0-9])-", "${1}-0${2}-")
            .str.replace(r"^([0-9]{4}-[0-9][0-9])-([0-9]) ", "${1}-0${2} ")
            .str.to_datetime(fmt, strict=False, time_unit="ms")),
        pl.when(s.str.contains(r"^[0-9][0-9]/[0-9][0-9]/[0-9][0-9] ")).then(
            s.str.replace(r"^(0[0-9]|1[0-2])/([0-9][0-9])/([0-9][0-9]) ", "20${3}-${1}-${2} ")
            .str.replace(r"^([0-9][0-9])/([0-9][0-9])/([0-9][0-9]) ", "20${1}-${2}-${3} ")
            .str.to_datetime(fmt, strict=False, time_unit="ms")),
        pl.when(s.str.contains(r"^[0-9][0-9][-/][0-9][0-9] ")).then(
            (pl.lit(YEARLESS_YEAR + "-") + s.str.replace("/", "-", literal=True))
            .str.to_datetime(fmt, strict=False, time_unit="ms")),
    )


def _by_month_name(s: pl.Expr) -> pl.Expr:
    """`[Mon ]Jan  5 10:00:08[ 2026]` and `05 Jan 2026 10:04:15` -> `YYYY-MM-DD HH:MM:SS...` (YEARLESS_YEAR where the
    stamp has none)."""
    month = s.str.extract("(" + _MON + ")", 1).replace_strict(
        list(MONTHS), [f"{i:02d}" for i in range(1, 13)], default=None, return_dtype=pl.String)
    day = (s.str.extract(rf"{_MON} +([0-9][0-9]?)\b", 1).fill_null(s.str.extract(rf"^([0-9][0-9]?)[ /-]{_MON}", 1))
           .str.zfill(2))
    # not `2026:10:00:08`'s `26:10:00`
    clock = s.str.extract(r"(?:^|[^0-9])([0-9][0-9]:[0-9][0-9]:[0-9][0-9](?:\.[0-9]{1,9})?)", 1)
    year = s.str.extract(r"(?:^|[\s/-])([0-9]{4})(?:[\s,:]|$)", 1).fill_null(pl.lit(YEARLESS_YEAR))  # not `08.1234`
    return pl.concat_str(year, pl.lit("-"), month, pl.lit("-"), day, pl.lit(" "), clock)


def has_stamp(text: pl.Series) -> pl.Series:
    """Whether each line may hold a stamp (STAMP_HINT), tested on the lines with a clock time only."""
    idx = text.str.contains(_CLOCK_HINT).fill_null(False).arg_true()
    out = pl.repeat(False, text.len(), eager=True)
    return out.scatter(idx, text.gather(idx).str.contains(STAMP_HINT).fill_null(False)) if idx.len() else out


CLOCK_ONLY_DAY = "1900-01-01"
ROLLOVER_BACK_S = 12 * 3600  # a clock time this far below the one before it is the next day's
_CLOCK = r"[0-9][0-9]:[0-9][0-9]:[0-9][0-9](?:[.,][0-9]{1,9})?"
_EPOCH = r"1[0-9]{9}(?:\.[0-9]{1,9})?"
_EPOCH_MS = r"1[0-9]{12}"  # epoch milliseconds (Java's and JavaScript's clocks, MLflow's and many JSON loggers')
# A clock time may follow the level inside the line's opening bracket (PyMARL's `[INFO 10:00:08] my_main ...`, logging's
# `[%(levelname)s %(asctime)s]` with a time-only datefmt).
_LEVELS = "INFO|DEBUG|WARNING|WARN|ERROR|CRITICAL"  # logging's level names, as they open a line or follow a stamp
_LEVEL = rf"(?:{_LEVELS}) "
_LEAD_HMS = rf"^\[?(?:{_LEVEL})?({_CLOCK})\]?(?:\s|$)"
_LEAD_EPOCH = rf"^\[?({_EPOCH})\]?(?:\s|$)"
_LEAD_EPOCH_MS = rf"^\[?({_EPOCH_MS})\]?(?:\s|$)"
# torch wraps it: `[rank0]:[E1120 ...`; tensorpack's logger prints the month and day without the level's letter
# (`[0105 10:00:08 @base.py:285]`), where they must be a month's and a day's
_LEAD_GLOG = (r"^\[?(?:[IWEF]([0-9][0-9])([0-9][0-9])|(0[1-9]|1[0-2])([0-3][0-9])) "
              r"([0-9][0-9]:[0-9][0-9]:[0-9][0-9](?:\.[0-9]{1,9})?)\s")
# Python logging's `%(relativeCreated)d`, milliseconds since logging loaded, before the level or the thread's name (the
# logging cookbook's `%(relativeCreated)6d %(threadName)s`): nine digits at most (eleven days), as ten are epoch
# seconds (`%(created)d`). Placed on CLOCK_ONLY_DAY: only differences are used.
_AFTER_RELATIVE = rf"\]? (?:{_LEVELS}|MainThread)\b"
RELATIVE = r" *[0-9]{1,9}" + _AFTER_RELATIVE  # after an optional `[`
_LEAD_RELATIVE = r"^\[? *([0-9]{1,9})" + _AFTER_RELATIVE
# Which lines may open with one of them (prefixes peeled): anchored, so it costs a few bytes per line.
LEADING_HINT = (rf"^\[?(?:(?:{_LEVEL})?[0-9][0-9]:[0-9][0-9]:[0-9][0-9]|1[0-9]{{9}}\b|1[0-9]{{12}}\b"
                rf"|[IWEF]?[0-9]{{4}} [0-9][0-9]:|{RELATIVE})")
# The stamp itself, as templates mask it: the shapes above (their groups dropped).
LEADING = (rf"^\[?(?:(?:{_LEVEL})?{_CLOCK}|{_EPOCH}|{_EPOCH_MS})\]?(?:\s|$)|^\[?[IWEF][0-9]{{4}} {_CLOCK}\s"
           rf"|^\[?(?:0[1-9]|1[0-2])[0-3][0-9] {_CLOCK}\s"
           r"|^\[?" + RELATIVE)  # the level or thread's name after it masked with it


def leading_stamp(text: pl.Series) -> pl.Series:
    """The stamp that opens each line (prefixes already peeled): a clock time alone (on CLOCK_ONLY_DAY), glog's
    month-day and time (in YEARLESS_YEAR), epoch seconds, or logging's relativeCreated; null where the line opens
    with none."""
    fmt = "%Y-%m-%d %H:%M:%S%.f"
    hms = text.str.extract(_LEAD_HMS, 1).str.replace(",", ".", literal=True)
    glog = text.str.extract_groups(_LEAD_GLOG).struct
    epoch = text.str.extract(_LEAD_EPOCH, 1).cast(pl.Float64, strict=False).fill_null(
        text.str.extract(_LEAD_EPOCH_MS, 1).cast(pl.Float64, strict=False) / 1000)
    relative = text.str.extract(_LEAD_RELATIVE, 1).cast(pl.Int64, strict=False)
    return pl.select(pl.coalesce(
        (pl.lit(CLOCK_ONLY_DAY + " ") + pl.lit(hms)).str.to_datetime(fmt, strict=False, time_unit="ms"),
        pl.concat_str(pl.lit(YEARLESS_YEAR + "-"), pl.coalesce(pl.lit(glog.field("1")), pl.lit(glog.field("3"))),
                      pl.lit("-"), pl.coalesce(pl.lit(glog.field("2")), pl.lit(glog.field("4"))),
                      pl.lit(" "), pl.lit(glog.field("5"))).str.to_datetime(fmt, strict=False, time_unit="ms"),
        (pl.lit(epoch) * 1000).cast(pl.Int64).cast(pl.Datetime("ms")),
        pl.lit(CLOCK_ONLY_DAY).str.to_datetime("%Y-%m-%d", time_unit="ms") + pl.duration(milliseconds=pl.lit(relative)),
    )).to_series().alias("ts")


STAMP_YEARS = (1900, 2200)  # outside them a stamp is a misprint (`0000-01-01`), and Python's datetime has no year 0


def settle(frame: pl.DataFrame) -> pl.DataFrame:
    """A frame's stamps as the analysis may use them: implausible years dropped, clock times rolled over midnight."""
    if "ts" in frame.columns and frame.height:
        year = pl.col("ts").dt.year()
        if frame.select(((year < STAMP_YEARS[0]) | (year > STAMP_YEARS[1])).any()).item():
            frame = frame.with_columns(pl.when(year.is_between(*STAMP_YEARS)).then(pl.col("ts")).alias("ts"))
    return roll_days(frame)


def lend_years(frames: dict[str, pl.DataFrame]) -> dict[str, pl.DataFrame]:
    """Year-less stamps (YEARLESS_YEAR) take the year the same source's dated stamps carry, across frames: torchrun's
    glog lines (`E1203 07:21:42.604 ...`) beside a trainer's `[2026-12-03 07:21:31,729]` lines are one clock, so the
    silence between a last step and a failure is a difference of the two."""
    yearless = int(YEARLESS_YEAR)
    dated = [f.select("source", pl.col("ts").dt.year().alias("year")).filter(pl.col("year") != yearless)
             for f in frames.values() if {"source", "ts"} <= set(f.columns) and f.height]
    dated = [d.drop_nulls() for d in dated if d.height]
    if not dated:
        return frames
    years = pl.concat(dated).group_by("source").agg(pl.col("year").mode().first())
    if years.height == 0:
        return frames
    out = {}
    for name, f in frames.items():
        if not ({"source", "ts"} <= set(f.columns)) or f.height == 0 or \
                not f.select((pl.col("ts").dt.year() == yearless).any()).item():
            out[name] = f
            continue
        joined = f.join(years, on="source", how="left")
        out[name] = joined.with_columns(
            pl.when((pl.col("ts").dt.year() == yearless) & pl.col("year").is_not_null())
            .then(pl.col("ts").dt.replace(year=pl.col("year"))).otherwise(pl.col("ts")).alias("ts")
        ).select(f.columns)
    return out


def roll_days(frame: pl.DataFrame) -> pl.DataFrame:
    """Clock-time-only stamps (CLOCK_ONLY_DAY) moved on a day each time they go back by more than
    ROLLOVER_BACK_S within a source, in line order: a run that crosses midnight keeps its order and its step times."""
    if "ts" not in frame.columns or frame.height == 0:
        return frame
    bare = pl.col("ts") < pl.lit(CLOCK_ONLY_DAY).str.to_datetime("%Y-%m-%d", time_unit="ms") + pl.duration(days=1)
    if not frame.select(bare.fill_null(False).any()).item():
        return frame
    key = [c for c in ("source", "line") if c in frame.columns]
    indexed = frame.with_row_index("_i")
    rows = indexed.filter(bare.fill_null(False)).sort(key)
    day = (pl.col("ts").diff().dt.total_seconds() < -ROLLOVER_BACK_S).fill_null(False).cum_sum()
    if "source" in frame.columns:
        day = day.over("source")
    moved = rows.select("_i", (pl.col("ts") + pl.duration(days=day)).alias("_moved"))
    return (indexed.join(moved, on="_i", how="left")
            .with_columns(pl.coalesce("_moved", "ts").alias("ts")).drop("_i", "_moved").select(frame.columns))


def find_stamp(text: pl.Series) -> pl.Series:
    """The first stamp each line holds, parsed (null where none or unparseable)."""
    found = text.str.extract(STAMP, 0)
    return _parse(found).alias("ts") if found.len() else pl.Series("ts", [], dtype=pl.Datetime("ms"))
