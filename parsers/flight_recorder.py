"""PyTorch's Flight Recorder dumps (issue 33, must 5): the per-rank files `TORCH_NCCL_DUMP_ON_TIMEOUT=1` writes
(`TORCH_NCCL_DEBUG_INFO_TEMP_FILE`, default `/tmp/nccl_trace_rank_<rank>`), a pickled dict whose `entries` are the
rank's last collectives: `collective_seq_id`, `profiling_name` (`nccl:all_reduce`), `state` (scheduled, started,
completed), `process_group`, sizes and frames (torch/csrc/distributed/c10d/FlightRecorder.cpp, and
torch/distributed/flight_recorder for the analyser's reading of the same keys).

A pickle can run code when it is loaded, and these files come from users: they are read by an unpickler that builds
only what pickle's own opcodes build (dicts, lists, tuples, sets, strings, bytes, numbers, booleans, None) and
refuses any class or function a stream names, with one line. `pickle.load` is never called on a user's file.
"""
from __future__ import annotations

import io
import pickle
import re
from pathlib import Path
from typing import Any

import polars as pl

from diagnose.parsers.schema import conform

PICKLE_HEAD = b"\x80"  # protocol 2+ opens with PROTO
NAME = re.compile(r"(?:nccl_trace_rank_|fr_trace_|flight_recorder[_-]?)(\d+)(?:\.pkl|\.pickle)?$")
MAX_DUMP_BYTES = 256 * 1024 * 1024  # a dump holds at most TORCH_NCCL_TRACE_BUFFER_SIZE entries: far less than this
ENTERED = ("scheduled", "started")


class RefusedPickle(ValueError):
    """The stream names a class or function: it is not a plain Flight Recorder dump."""


class _PlainUnpickler(pickle.Unpickler):
    def find_class(self, module: str, name: str) -> Any:  # noqa: D401 - pickle's hook
        raise RefusedPickle(f"the pickle names {module}.{name}; a Flight Recorder dump holds only plain data")

    def persistent_load(self, pid: Any) -> Any:
        raise RefusedPickle("the pickle refers to a persistent object; a Flight Recorder dump holds only plain data")


def loads_plain(data: bytes) -> Any:
    """Unpickle data made only of plain containers, strings and numbers; RefusedPickle for anything else."""
    return _PlainUnpickler(io.BytesIO(data)).load()


def is_dump(path: Path, head: bytes) -> bool:
    """A Flight Recorder dump by its name and its first byte."""
    return head[:1] == PICKLE_HEAD and NAME.search(path.name) is not None


def _rank(path: Path, dump: dict[str, Any]) -> int | None:
    for key in ("rank", "global_rank"):
        if isinstance(dump.get(key), int):
            return int(dump[key])
    m = NAME.search(path.name)
    return int(m.group(1)) if m else None


def read(path: Path, source_id: int) -> pl.DataFrame:
    """A dump -> one `nccl_last_work` event row: the rank's last entered and last completed collective sequence
    numbers, and the collective it last entered. ValueError (one line) for a file that is not a plain dump."""
    if path.stat().st_size > MAX_DUMP_BYTES:
        raise ValueError(f"larger than {MAX_DUMP_BYTES >> 20} MiB: not a Flight Recorder dump")
    try:
        dump = loads_plain(path.read_bytes())
    except RefusedPickle:
        raise
    except Exception as e:  # noqa: BLE001 - a truncated or foreign pickle: one line, never a traceback
        raise ValueError(f"not a readable pickle ({type(e).__name__})") from None
    if not isinstance(dump, dict) or not isinstance(dump.get("entries"), list):
        raise ValueError("a pickle without Flight Recorder `entries`")
    entries = [e for e in dump["entries"] if isinstance(e, dict) and not e.get("is_p2p")]
    seqs = [(int(e.get("collective_seq_id", -1)), str(e.get("state", "")), str(e.get("profiling_name", "")))
            for e in entries if isinstance(e.get("collective_seq_id"), int)]
    entered = [s for s, _, _ in seqs]
    completed = [s for s, state, _ in seqs if state == "completed"]
    last_entered = max(entered) if entered else -1
    op = next((name for s, _, name in seqs if s == last_entered), "")
    row = {"source": source_id, "line": 1, "rank": _rank(path, dump), "kind": "nccl_last_work",
           "value_from": float(last_entered), "value_to": float(max(completed) if completed else -1),
           "detail": f"Flight Recorder: last entered {op or 'collective'} #{last_entered}, last completed "
                     f"#{max(completed) if completed else -1}", "origin": "flight_recorder"}
    return conform("events", [pl.DataFrame([row])])


__all__ = ["RefusedPickle", "is_dump", "loads_plain", "read"]
