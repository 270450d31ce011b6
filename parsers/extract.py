"""Apply the declared line kinds to one chunk of lines, as polars expressions over the whole chunk."""
from __future__ import annotations

import polars as pl

from parsers.kinds import ANCHORS, BLOCK_HEADERS, KINDS, LineKind
from parsers.prefixes import OUTER_PREFIX

_META = set("\\.+*?()|[]{}^$#&-~")


def rx_escape(literal: str) -> str:
    """Escape for polars' Rust regex (Python's re.escape also escapes spaces, which Rust rejects)."""
    return "".join("\\" + c if c in _META else c for c in literal)


ANCHOR_RE = "(" + "|".join(rx_escape(a) for a in sorted(ANCHORS, key=len, reverse=True)) + ")"
HEADER_RE = "|".join(rx_escape(h) for h in BLOCK_HEADERS.values())
# Environment variables seen anywhere: `export X=1`, `X=1 cmd`, launcher echoes, `os.environ[X]=1` dumps.
ENV_NAMES = (r"(?:NCCL|CUDA|TORCH|PYTORCH|OMP|DS|ACCELERATE|WANDB|HF|TRANSFORMERS|MASTER|WORLD|LOCAL|NVIDIA|FI|UCX|"
             r"TOKENIZERS|CUBLAS|KMP|MKL|GLOO|NVTE|XLA|DEEPSPEED|SLURM|TF|MLFLOW)_[A-Z0-9_]*")
ENV_RE = (r"(?:^|[\s;'\"(\[])(?:export\s+|os\.environ\[['\"]?)?(?P<key>" + ENV_NAMES
          + r")['\"]?\]?=(?P<value>\"[^\"]*\"|'[^']*'|[^\s;'\")\]]*)")
ENV_HINT = r"(?:NCCL|CUDA|TORCH|PYTORCH|OMP|DS|ACCELERATE|WANDB|HF|TRANSFORMERS|MASTER|WORLD|LOCAL|NVIDIA|FI|UCX|TOKENIZERS|CUBLAS|KMP|MKL|GLOO|NVTE|XLA|DEEPSPEED|SLURM|TF|MLFLOW)_[A-Z0-9_]*['\"]?\]?="

TIMER_NAMES = ("fwd", "bwd", "bwd_inner", "bwd_allreduce", "step", "optimizer_allgather", "optimizer_gradients",
               "optimizer_step", "init_optimizer_state")
_NUM = r"([-+]?\d[\d.]*(?:[eE][-+]?\d+)?)"

BASE_COLUMNS = ("source", "line", "rank", "node", "ts")


def _ts(col: str, fmt: str) -> pl.Expr:
    return pl.col(col).str.to_datetime(fmt, strict=False, time_unit="ms", time_zone=None)


def with_prefix(frame: pl.DataFrame, source_id: int) -> pl.DataFrame:
    """Add source, rank, node and ts (from outer prefixes) to a frame holding `text`."""
    p = frame.with_columns(pl.col("text").str.extract_groups(OUTER_PREFIX).alias("_p")).unnest("_p")
    iso = pl.col("iso_ts").str.replace(r"Z$", "").str.slice(0, 23)
    return p.with_columns(
        pl.lit(source_id, dtype=pl.UInt16).alias("source"),
        pl.coalesce(
            pl.when(pl.col("ds_rank") != "-1").then(pl.col("ds_rank")).cast(pl.Int32, strict=False),
            pl.col("torch_rank").cast(pl.Int32, strict=False),
            pl.col("tr_rank").cast(pl.Int32, strict=False),
            pl.col("mpi_rank").cast(pl.Int32, strict=False),
            pl.col("task").cast(pl.Int32, strict=False),
        ).alias("rank"),
        pl.col("host").alias("node"),
        pl.coalesce(
            _ts("ds_ts", "%Y-%m-%d %H:%M:%S,%3f"),
            _ts("hf_ts", "%Y-%m-%d %H:%M:%S,%3f"),
            iso.str.to_datetime("%Y-%m-%dT%H:%M:%S%.f", strict=False, time_unit="ms"),
            iso.str.to_datetime("%Y-%m-%dT%H:%M:%S", strict=False, time_unit="ms"),
        ).alias("ts"),
    )


def _cast(expr: pl.Expr, dtype: pl.DataType | type[pl.DataType]) -> pl.Expr:
    if dtype == pl.String:
        return expr
    return expr.str.replace_all(",", "").cast(dtype, strict=False)


def apply_kind(kind: LineKind, rows: pl.DataFrame) -> pl.DataFrame:
    """Rows already known to carry one of the kind's anchors -> typed rows of this kind (may be empty)."""
    if kind.pattern:
        out = rows.with_columns(pl.col("text").str.extract_groups(kind.pattern).alias("_g")).unnest("_g")
    else:
        out = rows.with_columns(
            pl.col("text").str.extract(pat, 1).alias(name) for name, pat in kind.field_patterns.items()
        )
    if kind.required:
        out = out.filter(pl.col(kind.required).is_not_null())
    out = out.with_columns(_cast(pl.col(n), t).alias(n) for n, t in kind.fields.items())
    consts = [pl.lit(v).alias(k) for k, v in kind.constants.items() if k != "key_prefix"]
    if "key_prefix" in kind.constants:
        consts.append((pl.lit(kind.constants["key_prefix"]) + pl.col("key")).alias("key"))
    keep = [*BASE_COLUMNS, *kind.fields]
    out = out.with_columns(*consts, pl.lit(kind.name).alias("origin"))
    extra = [c for c in kind.constants if c != "key_prefix"] + (["key"] if "key_prefix" in kind.constants else [])
    return out.select(list(dict.fromkeys([*keep, *extra, "origin"])))


def timers_wide(rows: pl.DataFrame) -> pl.DataFrame:
    """`body` of `time (ms) | a: 1 | b: 2` lines -> one column per known timer, plus the microstep flag."""
    body = pl.col("body").str.replace_all("forward", "fwd", literal=True).str.replace_all("backward", "bwd",
                                                                                          literal=True)
    rows = rows.with_columns(body.alias("body"))
    cols = [
        pl.col("body").str.extract(r"(?:^|\| )" + name + r"(?:_microstep)?: " + _NUM, 1).cast(pl.Float64,
                                                                                            strict=False).alias(name)
        for name in TIMER_NAMES
    ]
    return rows.select(*BASE_COLUMNS, pl.col("body").str.contains("_microstep:", literal=True).alias("microstep"),
                       *cols, "origin")


# Columns computed from a kind's own fields, where the printed unit differs from the schema's.
DERIVED: dict[str, list[pl.Expr]] = {
    "tqdm": [pl.when(pl.col("unit") == "s/it").then(pl.col("rate"))
             .otherwise(1.0 / pl.col("rate")).alias("step_time_s")],
    "hf_train_runtime": [(1.0 / pl.col("steps_per_sec")).alias("step_time_s")],
}


def extract_chunk(lines: pl.DataFrame, source_id: int) -> dict[str, list[pl.DataFrame]]:
    """Classify and extract every line kind in one chunk. Returns frame name -> parts."""
    out: dict[str, list[pl.DataFrame]] = {}
    tagged = lines.with_row_index("_row").with_columns(pl.col("text").str.extract(ANCHOR_RE, 1).alias("anchor")).filter(
        pl.col("anchor").is_not_null()
    )
    out["_tagged_count"] = [pl.DataFrame({"n": [tagged.height]})]
    if tagged.height:
        tagged = with_prefix(tagged, source_id)
        parts = tagged.partition_by("anchor", as_dict=True, include_key=False)
        by_anchor = {k[0]: v for k, v in parts.items()}
        for kind in KINDS:
            inputs = [by_anchor[a] for a in kind.anchors if a in by_anchor]
            if not inputs:
                continue
            rows = apply_kind(kind, pl.concat(inputs).sort("_row") if len(inputs) > 1 else inputs[0])
            if rows.height and kind.name in DERIVED:
                rows = rows.with_columns(DERIVED[kind.name])
            if rows.height:
                if kind.frame == "timers":
                    rows = timers_wide(rows)
                elif kind.frame == "memory":
                    rows = _with_memory_labels(rows, lines)
                out.setdefault(kind.frame, []).append(rows)
    # wandb's banner suggests `set WANDB_MODE=online`; that is advice, not the run's environment.
    env_rows = lines.filter(pl.col("text").str.contains(ENV_HINT) & ~pl.col("text").str.starts_with("wandb: "))
    if env_rows.height:
        env = (
            with_prefix(env_rows, source_id)
            .with_columns(pl.col("text").str.extract_all(ENV_RE).alias("_m"))
            .explode("_m")
            .filter(pl.col("_m").is_not_null())
            .with_columns(pl.col("_m").str.extract_groups(ENV_RE).alias("_g"))
            .unnest("_g")
            .with_columns(pl.col("value").str.strip_chars("\"'"))
            .select(*BASE_COLUMNS, "key", "value")
        )
        if env.height:
            out.setdefault("env", []).append(env)
    return out


def _with_memory_labels(rows: pl.DataFrame, lines: pl.DataFrame) -> pl.DataFrame:
    """see_memory_usage prints its message on the line before the MA line."""
    before = rows.select((pl.col("line") - 1).alias("line")).unique()
    labels = (
        lines.join(before, on="line", how="semi")
        .group_by("line").agg(pl.col("text").last())
        .select((pl.col("line") + 1).alias("line"),
                pl.col("text").str.replace(OUTER_PREFIX, "").str.strip_chars().alias("label"))
    )
    return rows.join(labels, on="line", how="left")


def header_rows(lines: pl.DataFrame) -> pl.DataFrame:
    return lines.filter(pl.col("text").str.contains(HEADER_RE))
