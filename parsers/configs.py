"""Config files: DeepSpeed JSON, accelerate YAML, HF trainer_state.json. Sniffed from content, not names."""
from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

import polars as pl
import yaml

from diagnose.parsers import jsonc
from diagnose.parsers.errors import Refused

DS_KEYS = {"zero_optimization", "train_micro_batch_size_per_gpu", "train_batch_size", "gradient_accumulation_steps",
           "fp16", "bf16", "optimizer", "scheduler", "wall_clock_breakdown", "steps_per_print", "comms_logger",
           "gradient_clipping", "activation_checkpointing", "flops_profiler"}
ACCELERATE_KEYS = {"distributed_type", "num_processes", "num_machines", "mixed_precision", "compute_environment",
                   "machine_rank", "deepspeed_config", "main_process_ip"}


def sniff_json(text: str) -> tuple[str, Any] | None:
    """-> ("ds_config" | "trainer_state", parsed) or None when it is not one of ours."""
    try:
        data = json.loads(re.sub(r"(?<=[\s:\[,])(-?)inf\b", r"\1Infinity", text))
    except ValueError:
        try:  # the comments and trailing commas people leave in DeepSpeed configs
            data = jsonc.loads(text)
        except (ValueError, RecursionError):
            return None
    if not isinstance(data, dict):
        return None
    if isinstance(data.get("log_history"), list):
        return "trainer_state", data
    if DS_KEYS & set(data):
        return "ds_config", data
    return None


# A JSON object or Python dict pasted into a log or a thread: a line that opens it alone (`{`, `ds_config = {`,
# `baseline.json: {`), read up to the line where its braces balance. DeepSpeed's own `json = {` dump is the block
# reader's (blocks.py). At most EMBEDDED_MAX_LINES lines: no config is longer.
# A JSON key before the brace (`"zero_optimization": {`, a fragment quoted from a config) is kept: the object is
# read as that key's.
_OPENS = re.compile(r"(?m)^[ \t>]*(?:(?:\"(?P<key>[\w.-]+)\"|[\w.-]+)[ \t]*[:=][ \t]*)?\{[ \t]*$")
# A config (or a fragment of one) pasted on one line, found by a key only DeepSpeed configs hold:
# `{"zero_optimization": {"stage": 3}, "bf16": {"enabled": true}}`, `> "zero_optimization": {"stage": 3},`.
_DS_ONLY = r"\"(?:zero_optimization|train_micro_batch_size_per_gpu|gradient_accumulation_steps)\""
_DS_ONLY_RE = re.compile(_DS_ONLY)
# (A fragment stands at the line's start or behind a blockquote's `>`: indented, it is a line of a config that did
# not balance, cut short, and read whole or not at all.)
_ONE_LINE = re.compile(r"(?m)^(?:[ \t]*(?:[\w.-]+[ \t]*[:=][ \t]*)?(?P<obj>\{[^\n]*" + _DS_ONLY + r"[^\n]*)"
                       r"|(?:[ \t]*>[ \t]*)?(?P<fragment>" + _DS_ONLY + r"[ \t]*:[ \t]*[{\d][^\n]*))$")
EMBEDDED_MAX_LINES = 400
EMBEDDED_MAX_BYTES = 64 * 1024  # each candidate looks this far ahead: a log of many `{` lines costs no more per line


def _one_line_configs(text: str) -> Iterator[re.Match[str]]:
    """_ONE_LINE's matches, found from the rare keys it needs: one pattern tried at every line start of a 4 MiB head
    cost three times what the rest of embedded_configs does."""
    seen = -1
    for key in _DS_ONLY_RE.finditer(text):
        start = text.rfind("\n", 0, key.start()) + 1
        if start <= seen:
            continue
        seen = start
        if (m := _ONE_LINE.match(text, start)) is not None:
            yield m


_MEMBER = re.compile(r"^(?:[ \t]*>[ \t]*)?(?P<member>\"[\w.-]+\"[ \t]*:.*)$")


def _member_run(text: str, at: int) -> tuple[int, int]:
    """The (start, end) of the consecutive `"key": value` lines (blockquoted or not) around the line at `at`."""
    start = text.rfind("\n", 0, at) + 1
    while start > 0:
        prev = text.rfind("\n", 0, start - 1) + 1
        if not _MEMBER.match(text[prev:start - 1]):
            break
        start = prev
    stop = text.find("\n", at)
    stop = len(text) if stop < 0 else stop
    while stop < len(text):
        nxt = text.find("\n", stop + 1)
        nxt = len(text) if nxt < 0 else nxt
        if not _MEMBER.match(text[stop + 1:nxt]):
            break
        stop = nxt
    return start, stop


def embedded_configs(text: str) -> list[tuple[int, str, Any]]:
    """(line from 1, kind, data) of each DeepSpeed config (or trainer state) pasted whole into a text."""
    out: list[tuple[int, str, Any]] = []
    spans: list[tuple[int, int]] = []
    end = 0
    for m in _OPENS.finditer(text):
        if m.start() < end or "json = {" in m.group(0):
            continue
        lines = text[m.start():m.start() + EMBEDDED_MAX_BYTES].split("\n", EMBEDDED_MAX_LINES)[:EMBEDDED_MAX_LINES]
        depth, body = 0, []
        for line in lines:
            line = re.sub(r"^[ \t]*>[ \t]?", "", line)  # a blockquote's marker
            body.append(line)
            depth += line.count("{") - line.count("}")
            if depth <= 0:
                break
        if depth > 0:
            continue
        block = "\n".join(body)
        block = block[block.index("{"):]
        found = sniff_json(block if m.group("key") is None else f'{{"{m.group("key")}": {block}}}')
        if found is None and (py := sniff_python_dict(block)) is not None and DS_KEYS & set(py):
            found = ("ds_config", py)
        if found is not None:
            out.append((text.count("\n", 0, m.start()) + 1, *found))
            end = m.start() + len(block)
            spans.append((m.start(), end))
    for m in _one_line_configs(text):
        if any(a <= m.start() < b for a, b in spans):  # a line of a config read whole above
            continue
        if m.group("obj"):
            found = sniff_json(m.group("obj").rstrip(" \t,"))
        else:  # the run of `"key": value` lines it stands in, read as one object
            start, stop = _member_run(text, m.start())
            spans.append((start, stop))
            members = "\n".join(m2.group("member") if (m2 := _MEMBER.match(x)) else x
                                for x in text[start:stop].split("\n"))
            found = sniff_json("{" + members.rstrip(" \t\n,") + "}")
        if found is not None and found[0] == "ds_config":
            out.append((text.count("\n", 0, m.start()) + 1, *found))
    out += _pasted_accelerate(text)
    return out


# An accelerate config pasted into a text: a thread's ```yaml fence, blockquoted, or as `accelerate env` lists it
# (`- `Accelerate` default config:`, then `\t- compute_environment: LOCAL_MACHINE`, one `- key: value` a line, its
# `deepspeed_config` a Python dict). Read from its first key to the first line that is no YAML key or continuation.
_ACCELERATE_OPENS = re.compile(r"(?m)^(?P<lead>[ \t]*(?:>[ \t]?)?[ \t]*)(?P<bullet>-[ \t]+)?"
                               r"(?:compute_environment|distributed_type):")
_YAML_LINE = re.compile(r"^(?:[ \t]*-[ \t]+)?[\w.-]+:(?:[ \t].*)?$|^[ \t]+\S")


def _pasted_accelerate(text: str) -> list[tuple[int, str, Any]]:
    m = _ACCELERATE_OPENS.search(text)
    if m is None:
        return []
    quoted = ">" in m.group("lead")
    body = []
    for line in text[m.start():m.start() + EMBEDDED_MAX_BYTES].split("\n", EMBEDDED_MAX_LINES)[:EMBEDDED_MAX_LINES]:
        if quoted:
            line = re.sub(r"^[ \t]*>[ \t]?", "", line)
        line = line.rstrip("\r")
        if not _YAML_LINE.match(line):
            break
        body.append(re.sub(r"^[ \t]*-[ \t]+", "", line) if m.group("bullet") else line)
    indent = min((len(x) - len(x.lstrip()) for x in body if x.strip()), default=0)
    data = sniff_yaml("\n".join(x[indent:] for x in body))
    return [(text.count("\n", 0, m.start()) + 1, "accelerate_config", data)] if data is not None else []


_PY_DICT = re.compile(r"^\s*(?:[A-Za-z_]\w*\s*=\s*)?(\{.*\})\s*$", re.S)


def sniff_python_dict(text: str) -> dict[str, Any] | None:
    """A DeepSpeed config pasted as Python (`ds_config = {"zero_optimization": {"stage": 3, ...}, "fp16": {"enabled":
    True}}`): read as data, never run. Names the snippet leaves to the script (`batch_size`) read as unknown."""
    import ast

    m = _PY_DICT.match(text)
    if not m:
        return None
    try:
        tree = ast.parse(m.group(1), mode="eval")
    except (SyntaxError, ValueError, RecursionError):
        return None

    def value(node: ast.AST) -> Any:
        if isinstance(node, ast.Constant):
            return node.value
        if isinstance(node, ast.Dict):
            return {value(k): value(v) for k, v in zip(node.keys, node.values) if k is not None}
        if isinstance(node, (ast.List, ast.Tuple)):
            return [value(e) for e in node.elts]
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub) and isinstance(node.operand, ast.Constant):
            return -node.operand.value  # type: ignore[operator]  # a literal that is not a number raises: not a config
        return None  # a name or an expression the script computes

    data = value(tree.body)
    return data if isinstance(data, dict) and DS_KEYS & set(data) else None


MAX_YAML_ALIASES = 100  # a config uses a handful; a "billion laughs" file nests thousands
MAX_YAML_NODES = 100_000  # nodes once aliases are expanded: 9 levels of 9 aliases each make 387 million
MAX_NESTING = 100  # JSON / YAML levels; configs use a few


class _BoundedLoader(yaml.SafeLoader):
    """safe_load with a cap on alias references and nesting depth: aliases share objects, so a few hundred bytes
    of nested aliases become gigabytes when anything walks or prints the result."""

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self._aliases = 0
        self._depth = 0

    def compose_node(self, parent: Any, index: Any) -> Any:
        if self.check_event(yaml.AliasEvent):
            self._aliases += 1
            if self._aliases > MAX_YAML_ALIASES:
                raise Refused(f"YAML with more than {MAX_YAML_ALIASES} alias references: refused")
        self._depth += 1
        if self._depth > MAX_NESTING:
            raise Refused(f"YAML nested deeper than {MAX_NESTING} levels: refused")
        try:
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1


def load_yaml(text: str) -> Any:
    loader = _BoundedLoader(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        if _expanded_size(node, {}) > MAX_YAML_NODES:
            raise Refused(f"YAML that expands past {MAX_YAML_NODES:,} nodes through its aliases: refused")
        return loader.construct_document(node)
    finally:
        loader.dispose()


def _expanded_size(node: yaml.Node, memo: dict[int, int]) -> int:
    """Nodes in the document with every alias expanded, counted without expanding it (each node once)."""
    key = id(node)
    if key in memo:
        return memo[key]
    memo[key] = 1  # a cycle counts once
    if isinstance(node, yaml.SequenceNode):
        size = 1 + sum(_expanded_size(child, memo) for child in node.value)
    elif isinstance(node, yaml.MappingNode):
        size = 1 + sum(_expanded_size(k, memo) + _expanded_size(v, memo) for k, v in node.value)
    else:
        size = 1
    memo[key] = min(size, MAX_YAML_NODES + 1)
    return memo[key]


def sniff_yaml(text: str) -> dict[str, Any] | None:
    if not re.search(r"^(?:distributed_type|num_processes|compute_environment):", text, re.M):
        return None
    try:
        data = load_yaml(text)
    except yaml.YAMLError:
        return None
    if isinstance(data, dict) and len(ACCELERATE_KEYS & set(data)) >= 2:
        return data
    return None


def trainer_state_steps(state: dict[str, Any], source_id: int) -> pl.DataFrame:
    """trainer_state.json log_history -> steps rows (training entries) and the final runtime entry."""
    rows = []
    for entry in state.get("log_history", []):
        if not isinstance(entry, dict):
            continue
        if "loss" in entry or "train_runtime" in entry:
            rows.append({
                "global_step": _int(entry.get("step")),
                "epoch": _float(entry.get("epoch")),
                "loss": _float(entry.get("loss", entry.get("train_loss"))),
                "lr": _float(entry.get("learning_rate")),
                "grad_norm": _float(entry.get("grad_norm")),
                "train_runtime_s": _float(entry.get("train_runtime")),
                "samples_per_sec": _float(entry.get("train_samples_per_second")),
                "origin": "trainer_state_runtime" if "train_runtime" in entry else "trainer_state",
            })
    frame = pl.DataFrame(rows, schema={"global_step": pl.Int64, "epoch": pl.Float64, "loss": pl.Float64,
                                       "lr": pl.Float64, "grad_norm": pl.Float64, "train_runtime_s": pl.Float64,
                                       "samples_per_sec": pl.Float64, "origin": pl.String})
    return frame.with_columns(pl.lit(source_id, dtype=pl.UInt32).alias("source"))


def _float(value: Any) -> float | None:
    try:
        return float(value) if value is not None else None
    except (TypeError, ValueError):
        return None


def _int(value: Any) -> int | None:
    f = _float(value)
    return int(f) if f is not None else None
