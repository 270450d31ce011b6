"""Multi-line blocks: the DeepSpeed engine config dump and user JSON, the comms-logger table, the flops profile.

Blocks are rare (a handful per log), so each is read from a window of lines after its header with plain Python;
the per-line hot path stays in polars (extract.py).
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass, field

from diagnose.parsers.prefixes import OUTER_PREFIX

WINDOW = 2000  # lines after a header that may belong to its block (the ZeRO-3 comms table is the longest seen)
_PREFIX = re.compile(OUTER_PREFIX)
_CONFIG_KV = re.compile(r"^\[config\.py:\d+:print\]\s+(?P<key>[a-z_0-9]+)(?: \.+ | {2,}| )(?P<value>.*?)\s*$")
_DS_LOGGER = re.compile(r"^\[?\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}\] \[[A-Z]+\] \[(?P<src>[\w.]+:\d+:\w+)\] ")
_NUM = r"[-+]?\d[\d.]*(?:[eE][-+]?\d+)?"
# A row of either comms-logger table: message size, count, then four numbers whose meaning the header gives.
_COMMS_ROW = re.compile(
    rf"^\s{{8,}}(?P<size>{_NUM}\s?[KMGT]?B)\s+(?P<count>\d+)\s+(?P<a>{_NUM})\s+(?P<b>{_NUM})\s+"
    rf"(?P<c>{_NUM})\s+(?P<d>{_NUM})\s*$"
)
# `Total Latency(ms)  Avg Latency(ms)  tput_avg (Gbps)  busbw_avg (Gbps)`, and with show_straggler (0.14+) a second
# table after `Breakdown with straggler effect`: `Total comm lat(ms)  Total straggler(ms)  Avg comm lat(ms)
# Avg straggler(ms)`, where comm lat is the fastest rank's and straggler the time this rank waited beyond it.
_COMMS_COLUMNS = ("total_latency_ms", "avg_latency_ms", "algbw_gbps", "busbw_gbps")
_STRAGGLER_COLUMNS = ("total_latency_ms", "total_straggler_ms", "avg_latency_ms", "avg_straggler_ms")
_COMMS_OP = re.compile(r"^(?P<op>[a-z][a-z_0-9]*)\s*$")
_SIZE_UNITS = {"B": 1.0, "KB": 1024.0, "MB": 1024.0**2, "GB": 1024.0**3, "TB": 1024.0**4}
_FLOPS_KEYS = {
    "world size": "world_size", "data parallel size": "dp_size", "model parallel size": "mp_size",
    "batch size per GPU": "batch_per_gpu", "params per GPU": "params_per_gpu",
    "params of model = params per GPU * mp_size": "params_model", "fwd MACs per GPU": "fwd_macs_per_gpu",
    "fwd flops per GPU": "fwd_flops_per_gpu", "fwd flops of model = fwd flops per GPU * mp_size": "fwd_flops_model",
    "fwd latency": "fwd_latency", "fwd FLOPS per GPU = fwd flops per GPU / fwd latency": "fwd_flops_per_sec",
    "bwd latency": "bwd_latency", "step latency": "step_latency", "iter latency": "iter_latency",
    "FLOPS per GPU = 3 * fwd flops per GPU / iter latency": "flops_per_gpu", "samples/second": "samples_per_sec",
}


@dataclass
class Blocks:
    ds_config: dict[str, object] = field(default_factory=dict)  # engine dump: key -> value (str or parsed JSON)
    ds_user_config: dict[str, object] = field(default_factory=dict)  # the `json = {...}` user config
    comms: list[dict[str, object]] = field(default_factory=list)  # summary-table rows
    comms_straggler: list[dict[str, object]] = field(default_factory=list)  # straggler-breakdown rows
    flops: dict[str, str] = field(default_factory=dict)
    where: dict[str, tuple[int, int]] = field(default_factory=dict)  # block -> (source, line) of its header
    lines_used: set[int] = field(default_factory=set)  # line numbers a block consumed (JSON continuations, table rows)


def strip_prefix(text: str) -> tuple[str, str | None]:
    """-> (message, rank as printed by a per-rank prefix or None)."""
    m = _PREFIX.match(text)
    if not m:
        return text, None
    rank = m.group("torch_rank") or m.group("tr_rank") or m.group("mpi_rank") or m.group("task")
    rest = text[m.end():]
    if m.group("ds_ts"):  # keep the logger's [file:line:func] so the config-dump parser can see it
        rest = f"[{m.group('src')}] {rest}"
    return rest, rank


def parse_block(name: str, texts: list[str], line_numbers: list[int], blocks: Blocks, where: tuple[int, int]) -> None:
    msgs = [strip_prefix(t) for t in texts]
    header_rank = msgs[0][1]
    keep = [i for i, (_, r) in enumerate(msgs) if r == header_rank]  # interleaved ranks: the header's rank only
    own = [msgs[i][0] for i in keep]
    if name == "ds_config_dump":
        config, used = _config_dump(own[1:])
        blocks.ds_config = blocks.ds_config or config
        positions = [0] + [1 + u for u in used]
    elif name == "ds_user_json":
        user, n = _user_json(own)
        blocks.ds_user_config = blocks.ds_user_config or user
        positions = list(range(n + 1))
    elif name == "comms_table":
        straggler = "straggler" in own[0]
        rows, n = _comms_table(own[1:], _STRAGGLER_COLUMNS if straggler else _COMMS_COLUMNS)
        # every rank prints the tables; the first of each is kept
        if straggler:
            blocks.comms_straggler = blocks.comms_straggler or rows
            name = "comms_straggler"  # its own header line as the rows' evidence
        else:
            blocks.comms = blocks.comms or rows
        positions = list(range(n))
    else:
        flops, n = _flops(own[1:])
        blocks.flops = blocks.flops or flops
        positions = list(range(n))
    blocks.where.setdefault(name, where)
    blocks.lines_used.update(line_numbers[keep[p]] for p in positions if p < len(keep))


def _config_dump(lines: list[str]) -> tuple[dict[str, object], list[int]]:
    """Every `[config.py:N:print]   key .... value` line up to the user JSON; other ranks' output may interleave."""
    out: dict[str, object] = {}
    i = 0
    used: list[int] = []
    while i < len(lines):
        line = lines[i]
        i += 1
        if "json = {" in line:
            break
        m = _CONFIG_KV.match(line)
        if not m:
            continue
        used.append(i - 1)
        key, value = m.group("key"), m.group("value")
        if value.endswith("{"):  # a JSON value continues on unprefixed lines up to a closing `}`
            body = [value]
            while i < len(lines) and _json_continuation(lines[i]):
                body.append(lines[i])
                used.append(i)
                i += 1
                if lines[i - 1].rstrip() == "}":
                    break
            value = _loads("\n".join(body)) or "\n".join(body)
        out.setdefault(key, value)
    return out, used


def _user_json(lines: list[str]) -> tuple[dict[str, object], int]:
    first = lines[0]
    body = [first[first.index("json = {") + len("json = "):]]
    for line in lines[1:]:
        if not _json_continuation(line):  # the closing brace was lost (a damaged log): stop at the next record
            break
        body.append(line)
        if line.rstrip() == "}":
            break
    parsed = _loads("\n".join(body))
    return (parsed if isinstance(parsed, dict) else {}), len(body) - 1


def _json_continuation(line: str) -> bool:
    """Pretty-printed JSON lines are indented, or the closing brace; anything else is the next log record."""
    return line[:1] in (" ", "\t") or line.rstrip() in ("}", "},", "]", "],")


def _loads(text: str) -> object:
    fixed = re.sub(r"(?<=[\s:\[,])(-?)inf\b", r"\1Infinity", text)
    try:
        return json.loads(fixed)
    except ValueError:
        return None


def _comms_table(lines: list[str], columns: tuple[str, ...]) -> tuple[list[dict[str, object]], int]:
    rows: list[dict[str, object]] = []
    op = None
    used = 1
    for line in lines:
        if m := _COMMS_ROW.match(line):
            if op is None:
                break
            size = m.group("size")
            rows.append({"op": op, "msg_size": size, "msg_bytes": size_bytes(size), "count": _int64(m.group("count")),
                         **{col: float(m.group(g)) for col, g in zip(columns, "abcd")}})
        elif m := _COMMS_OP.match(line):
            op = m.group("op")
        else:
            break
        used += 1
    return rows, used


def size_bytes(size: str) -> float | None:
    m = re.match(r"([\d.]+)\s?([KMGT]?B)", size)
    return float(m.group(1)) * _SIZE_UNITS[m.group(2)] if m else None


def _flops(lines: list[str]) -> tuple[dict[str, str], int]:
    out: dict[str, str] = {}
    used = 1
    for line in lines[:80]:
        if line.startswith("----- Aggregated"):
            break
        used += 1
        key, sep, value = line.rpartition(":")
        key = key.strip()
        if sep and key in _FLOPS_KEYS and value.strip():
            out[_FLOPS_KEYS[key]] = value.strip()
    return out, used


def _int64(text: str) -> int | None:
    """A count as printed, or None past 64 bits (a frame column cannot hold it; a real count never needs it)."""
    value = int(text)
    return value if -(1 << 63) <= value < (1 << 63) else None
