"""W&B offline runs: our own reader of the binary `run-<id>.wandb` transaction log.

wandb 0.31 ships no Python reader (the writer is Go wandb-core) but still ships the protobuf schema
(`wandb.proto.wandb_internal_pb2.Record`). The framing is LevelDB's log format (../shared/reference/wandb.md §2):
a 7-byte file header `:W&B` + magic 0xBEE1 + version, then 32 KiB blocks of chunks `<crc32 u32, length u16, type u8>`
(1 full, 2 first, 3 middle, 4 last); fewer than 7 bytes left in a block are padding. A crashed run leaves a
truncated tail: everything before it is read and `truncated` says so.
"""
from __future__ import annotations

import json
import re
import struct
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import polars as pl

from diagnose.parsers import wandb_history, wandb_schema

HEADER = struct.Struct("<4sHB")
CHUNK = struct.Struct("<IHB")
BLOCK = 32768
MAGIC = (b":W&B", 0xBEE1)
FULL, FIRST, MIDDLE, LAST = 1, 2, 3, 4
_GPU_KEY = re.compile(r"^(?:system\.)?gpu\.(?:process\.)?(\d+)\.(.+)$")


@dataclass
class WandbRun:
    run: dict[str, Any] = field(default_factory=dict)
    config: dict[str, Any] = field(default_factory=dict)
    summary: dict[str, Any] = field(default_factory=dict)
    environment: dict[str, Any] = field(default_factory=dict)
    history: pl.DataFrame = field(default_factory=pl.DataFrame)  # wandb_history: a column per key
    stats: list[dict[str, Any]] = field(default_factory=list)
    output: list[str] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=dict)
    truncated: bool = False
    bad_crc: int = 0


def is_wandb_file(head: bytes) -> bool:
    return len(head) >= HEADER.size and HEADER.unpack_from(head)[:2] == MAGIC


def iter_records(data: bytes, check_crc: bool = True) -> tuple[list[bytes], bool, int]:
    """-> (record payloads, truncated, chunks with a bad CRC)."""
    if not is_wandb_file(data):
        raise ValueError("not a W&B transaction log (bad header)")
    unpack, crc32, size, n = CHUNK.unpack_from, zlib.crc32, CHUNK.size, len(data)
    type_crc = {t: zlib.crc32(bytes([t])) for t in (FULL, FIRST, MIDDLE, LAST)}
    pos, truncated, bad = HEADER.size, False, 0
    out: list[Any] = []
    parts: list[Any] = []
    append = out.append
    while pos < n:
        left = BLOCK - pos % BLOCK
        if left < size:
            pos += left
            continue
        if pos + size > n:
            truncated = True
            break
        crc, length, ctype = unpack(data, pos)
        start = pos + size
        end = start + length
        if length == 0 and ctype == 0:  # zero padding at the end of a block
            pos += left
            continue
        if end > n:
            truncated = True
            break
        payload = data[start:end]
        pos = end
        if check_crc and crc32(payload, type_crc.get(ctype, 0)) != crc:
            bad += 1
            parts = []
            continue
        if ctype == FULL:
            append(payload)
        elif ctype == FIRST:
            parts = [payload]
        elif ctype == MIDDLE and parts:
            parts.append(payload)
        elif ctype == LAST and parts:
            parts.append(payload)
            append(b"".join(parts))
            parts = []
    if parts:
        truncated = True
    return out, truncated, bad


SUMMARY_FIELD = 3
# wandb-core writes about two summary records per logged step (200,001 for 100,000 steps); the final summary is
# what matters, so only the first and the last few thousand are decoded (keys set once at the start survive).
SUMMARY_HEAD, SUMMARY_TAIL = 500, 2000


HISTORY_FIELD = 2


def record_fields(payloads: pl.Series) -> pl.Series:
    """The field number of each serialized Record's first field after `num` (1): its record type, read without
    decoding the message (wandb-core writes fields in field-number order; all record types we tell apart have
    one-byte tags). -1 where there is none."""
    p = pl.col("p").bin
    # `num` (tag 0x08, a varint) comes first unless it is 0
    skip = pl.when(p.get(0, null_on_oob=True) == 0x08).then(1 + wandb_history.varint_size(pl.lit(1))).otherwise(0)
    return (payloads.rename("p").to_frame().select((p.get(skip, null_on_oob=True) // 8).fill_null(-1).cast(pl.Int64))
            .to_series())


def _history_row(items: Any) -> dict[str, Any]:
    keys = [it.key or ".".join(it.nested_key) for it in items]
    if not all(keys):
        return _items(items)
    try:
        decoded = json.loads("[" + ",".join([it.value_json or "null" for it in items]) + "]")  # one parse per row
    except ValueError:
        return _items(items)
    return dict(zip(keys, decoded))


def _items(items: Any) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for it in items:
        nested = getattr(it, "nested_key", None)
        key = ".".join(nested) if nested else it.key
        try:
            out[key] = json.loads(it.value_json) if it.value_json else None
        except ValueError:
            out[key] = it.value_json
    return out


def read(path: Path) -> WandbRun:
    from google.protobuf.json_format import MessageToDict
    pb = wandb_schema.internal_pb2()

    payloads, truncated, bad = iter_records(path.read_bytes())
    run = WandbRun(truncated=truncated, bad_crc=bad)
    raw_output: list[str] = []
    records = pl.Series("p", payloads, dtype=pl.Binary)
    fields = record_fields(records)
    history_idx = (fields == HISTORY_FIELD).arg_true()
    summary_idx = (fields == SUMMARY_FIELD).arg_true().to_list()
    if len(summary_idx) > SUMMARY_HEAD + SUMMARY_TAIL:
        run.counts["summary_skipped"] = len(summary_idx) - SUMMARY_HEAD - SUMMARY_TAIL
        summary_idx = summary_idx[:SUMMARY_HEAD] + summary_idx[-SUMMARY_TAIL:]
    history, failed = wandb_history.decode_records(records.gather(history_idx))
    history_pos = {history_idx[j]: j for j in failed}  # records the columnar decoder handed back
    exact: list[dict[str, Any]] = []
    # Decoded one by one: everything but history and the skipped summaries.
    wanted = (~fields.is_in([HISTORY_FIELD, SUMMARY_FIELD])).arg_true().to_list()
    for i in sorted([*wanted, *summary_idx, *history_pos]):
        payload = payloads[i]
        rec = pb.Record()
        try:
            rec.ParseFromString(payload)
        except Exception:  # a damaged record: skip it, keep the rest  # noqa: BLE001
            run.counts["undecodable"] = run.counts.get("undecodable", 0) + 1
            continue
        kind = rec.WhichOneof("record_type")
        run.counts[kind or "?"] = run.counts.get(kind or "?", 0) + 1
        if kind == "history":
            exact.append({wandb_history.ROW: history_pos[i], **_history_row(rec.history.item)})
        elif kind == "stats":
            row = _items(rec.stats.item)
            row["_timestamp"] = rec.stats.timestamp.seconds + rec.stats.timestamp.nanos / 1e9
            run.stats.append(row)
        elif kind == "config":
            for k, v in _items(rec.config.update).items():
                run.config[k] = v.get("value", v) if isinstance(v, dict) and set(v) <= {"value", "desc"} else v
        elif kind == "summary":
            run.summary.update(_items(rec.summary.update))
        elif kind == "run":
            r = rec.run
            run.run = {"run_id": r.run_id, "entity": r.entity, "project": r.project, "display_name": r.display_name,
                       "host": r.host, "start_time": r.start_time.seconds}
            if len(r.config.update):
                run.config.update(_items(r.config.update))
        elif kind == "environment":
            run.environment.update(MessageToDict(rec.environment, preserving_proto_field_name=True))
        elif kind == "output_raw":
            raw_output.append(rec.output_raw.line)
        elif kind == "output":
            raw_output.append(rec.output.line)
    if exact:
        history = pl.concat([history, wandb_history.from_rows(exact).with_columns(pl.col(wandb_history.ROW)
                             .cast(pl.UInt32))], how="diagonal_relaxed").sort(wandb_history.ROW)
    run.history = history.drop(wandb_history.ROW, strict=False)
    run.counts["history"] = run.history.height
    run.output = "".join(raw_output).replace("\r\n", "\n").split("\n") if raw_output else []
    return run


def system_frame(stats: list[dict[str, Any]], source_id: int) -> pl.DataFrame:
    """Stats rows -> long (ts, gpu, metric, value) rows; `system.` prefix optional, non-GPU metrics have gpu null."""
    rows: list[tuple[Any, int | None, str, float]] = []
    for row in stats:
        ts = row.get("_timestamp") or row.get("system._timestamp")
        for key, value in row.items():
            if key.startswith("_") or not isinstance(value, (int, float)) or isinstance(value, bool):
                continue
            m = _GPU_KEY.match(key)
            if m:
                rows.append((ts, int(m.group(1)), m.group(2), float(value)))
            else:
                rows.append((ts, None, key.removeprefix("system."), float(value)))
    frame = pl.DataFrame(rows, schema={"_t": pl.Float64, "gpu": pl.Int32, "metric": pl.String, "value": pl.Float64},
                         orient="row")
    return frame.with_columns(
        pl.from_epoch((pl.col("_t") * 1000).cast(pl.Int64, strict=False), time_unit="ms").alias("ts"),
        pl.lit(source_id, dtype=pl.UInt32).alias("source"), pl.lit("wandb_stats").alias("origin"),
    ).drop("_t")


# History keys the HF integration and common scripts use, per steps column (first present wins).
HISTORY_KEYS = {
    "global_step": ("train/global_step", "global_step", "trainer/global_step", "step", "_step"),
    "loss": ("train/loss", "loss", "train_loss"),
    "lr": ("train/learning_rate", "learning_rate", "lr"),
    "grad_norm": ("train/grad_norm", "grad_norm"),
    "epoch": ("train/epoch", "epoch"),
    "samples_per_sec": ("train/samples_per_second", "samples_per_sec", "throughput"),
}


def steps_frame(history: pl.DataFrame, source_id: int) -> pl.DataFrame:
    """History columns -> steps rows: per steps column the first HISTORY_KEYS key that holds a number in that row."""
    numeric = {name for name, dtype in history.schema.items() if dtype.is_numeric()}

    def first(keys: tuple[str, ...]) -> pl.Expr:
        present = [pl.col(k).cast(pl.Float64, strict=False) for k in keys if k in numeric]
        return pl.coalesce(present) if present else pl.repeat(None, pl.len(), dtype=pl.Float64)

    columns = {col: first(keys) for col, keys in HISTORY_KEYS.items()}
    out = history.select(**columns, _timestamp=first(("_timestamp",)))
    out = out.filter(pl.col("loss").is_not_null() | pl.col("samples_per_sec").is_not_null() | pl.col("lr").is_not_null())
    return out.with_columns(
        pl.col("global_step").cast(pl.Int64, strict=False),
        pl.from_epoch((pl.col("_timestamp") * 1000).cast(pl.Int64, strict=False), time_unit="ms").alias("ts"),
        pl.lit(source_id, dtype=pl.UInt32).alias("source"), pl.lit("wandb_history").alias("origin"),
    ).drop("_timestamp")


LEGACY_FILES = ("wandb-history.jsonl", "wandb-events.jsonl", "wandb-summary.json", "wandb-metadata.json",
                "config.yaml")


def read_legacy(run_dir: Path) -> WandbRun:
    """A run directory as older SDKs (and `wandb sync`) left it: JSON-lines history and system events,
    wandb-summary.json, wandb-metadata.json, config.yaml (values wrapped in {value: ...}), output.log."""
    import yaml

    files = run_dir / "files" if (run_dir / "files").is_dir() else run_dir
    run = WandbRun(run={"run_id": run_dir.name.rsplit("-", 1)[-1]})

    def jsonl(name: str) -> list[dict[str, Any]]:
        path = files / name
        rows = []
        if path.is_file():
            for line in path.read_text(errors="replace").splitlines():
                try:
                    rows.append(json.loads(line))
                except ValueError:  # a run killed mid-write leaves a partial last line
                    run.truncated = True
        return rows

    run.history = wandb_history.from_rows(jsonl("wandb-history.jsonl"))
    run.stats = jsonl("wandb-events.jsonl")
    def mapping(name: str, data: Any) -> dict[str, Any]:
        if not isinstance(data, dict):
            raise ValueError(f"{name} holds a {type(data).__name__}, not a mapping")
        return data

    if (files / "wandb-summary.json").is_file():
        run.summary = mapping("wandb-summary.json",
                              json.loads((files / "wandb-summary.json").read_text(errors="replace") or "{}"))
    if (files / "wandb-metadata.json").is_file():
        run.environment = mapping("wandb-metadata.json",
                                  json.loads((files / "wandb-metadata.json").read_text(errors="replace") or "{}"))
    if (files / "config.yaml").is_file():
        from diagnose.parsers.configs import load_yaml

        try:
            cfg = load_yaml((files / "config.yaml").read_text(errors="replace")) or {}
        except yaml.YAMLError as e:
            raise ValueError(f"config.yaml is not YAML ({str(e).splitlines()[0]})") from None
        cfg = mapping("config.yaml", cfg)
        run.config = {k: v.get("value", v) if isinstance(v, dict) else v for k, v in cfg.items() if k != "wandb_version"}
    if (files / "output.log").is_file():
        run.output = (files / "output.log").read_text(errors="replace").split("\n")
    run.counts = {"history": len(run.history), "stats": len(run.stats)}
    return run


PANEL_TIME_COLUMNS = {"Step": "step", "_step": "step", "Relative Time (Process)": "runtime",
                      "Relative Time (Wall)": "runtime", "_runtime": "runtime", "Wall Time": "timestamp",
                      "_timestamp": "timestamp"}


def sniff_panel_csv(head: str) -> bool:
    first = head.split("\n", 1)[0].strip().lstrip("\ufeff")
    return first.split(",", 1)[0].strip('"') in PANEL_TIME_COLUMNS and "," in first


def read_panel_csv(path: Path) -> WandbRun:
    """A CSV exported from a W&B panel: a time/step column, then `<run name> - <metric>` columns (with
    `__MIN` / `__MAX` bands, which are dropped). System panels name metrics `system/gpu.0.gpu` or `gpu.0.gpu`."""
    frame = pl.read_csv(path, infer_schema_length=None, encoding="utf8-lossy")
    time_col = frame.columns[0]
    kind = PANEL_TIME_COLUMNS[time_col.lstrip("\ufeff")]
    run = WandbRun(run={"run_id": path.stem})
    metrics = {c: c.split(" - ", 1)[-1].replace("system/", "system.") for c in frame.columns[1:]
               if not c.endswith(("__MIN", "__MAX"))}
    history: list[dict[str, Any]] = []
    for row in frame.iter_rows(named=True):
        t = row[time_col]
        base: dict[str, Any] = {"_step": t} if kind == "step" else ({"_runtime": t} if kind == "runtime" else
                                                                  {"_timestamp": t})
        values = {m: row[c] for c, m in metrics.items() if isinstance(row[c], (int, float))}
        system = {k: v for k, v in values.items() if _GPU_KEY.match(k) or k.startswith("system.")}
        hist = {k: v for k, v in values.items() if k not in system}
        if system:
            stamp = base.get("_timestamp", base.get("_runtime", base.get("_step")))
            run.stats.append({"_timestamp": stamp, **system})
        if hist:
            history.append({**base, **hist})
    run.history = wandb_history.from_rows(history)
    run.counts = {"history": len(run.history), "stats": len(run.stats)}
    return run


# What W&B itself writes in a run directory's files/ folder, besides LEGACY_FILES.
_OWN_FILES = frozenset({"output.log", "requirements.txt", "diff.patch", "conda-environment.yaml"})
_OWN_PREFIXES = ("upstream_diff_", "wandb-")


def foreign_files(run_dir: Path) -> list[Path]:
    """The files in a run directory's files/ folder that W&B does not write (a console log renamed or compressed,
    `output.md`, `output.log.gz`; a log the user saved beside the run): read as inputs of their own. Without them a
    run directory whose `output.log` was renamed read as nothing."""
    files = run_dir / "files"
    if not files.is_dir():
        return []
    return sorted(p for p in files.iterdir() if p.is_file() and p.name not in _OWN_FILES
                  and p.name not in LEGACY_FILES and not p.name.startswith(_OWN_PREFIXES))


def is_legacy_run_dir(path: Path) -> bool:
    files = path / "files"
    # Any of the files counts: a run directory holding only wandb-metadata.json / wandb-summary.json / config.yaml
    # still tells the GPU model and count, the runtime and the config.
    return path.is_dir() and any((files / n).is_file() for n in LEGACY_FILES)


def find_run_files(path: Path) -> list[Path]:
    """A `.wandb` file, a run directory, or a `wandb/` directory of runs -> the transaction logs in it (or, for
    runs that have none, the legacy run directories)."""
    if path.is_file():
        return [path]
    found = sorted(path.glob("run-*.wandb")) or sorted(path.glob("*/run-*.wandb"))
    if not found:
        return [path] if is_legacy_run_dir(path) else sorted(p for p in path.glob("*") if is_legacy_run_dir(p))
    found.sort(key=lambda p: "latest-run" in p.parts)  # `latest-run` links to one of the run directories
    unique: dict[Path, Path] = {}
    for p in found:
        unique.setdefault(p.resolve(), p)
    return sorted(unique.values())
