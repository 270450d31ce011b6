"""Quantities stated in sentences (issue 30, must 6): what a thread says about its runs when it pastes no step line,
or pastes two runs' lines one after the other.

A sentence states a setting (`on one GPU`, `with 8 GPUs`, `8GPU on one node`, `Training with 3 nodes`, `单个 GPU`,
`2 个 V100`), a duration and what it is of (`2.4 s/it`, `90 s per iteration`, `an epoch takes 5 h`, `WALL training
time is 63.598 seconds`, `约 5 小时`), a ZeRO stage (`deepspeed ZeRO2`), or a share of the time spent communicating
(`half of GPU time is spent on ncclKernel_AllReduce`). Each becomes a row of the `stated` frame with its sentence as
evidence; a duration carries the setting in force where it is stated: a setting paired with it on the same line
(`5 h vs 6.5 h` after `one GPU ... 2 GPUs`, in order), else the last one stated in the PROSE_WINDOW lines before it. What the rows mean (a scaling
comparison) is decided in diagnose/metrics.py: this module reads, it does not judge.

The words are data, in the tables below (English, and the Chinese of the threads in the shared corpus).
"""
from __future__ import annotations

import re

import polars as pl

from diagnose.parsers.literals import any_of
from diagnose.parsers.schema import FRAMES

# A cheap literal pass before the patterns: lines without one of these state nothing this module reads.
HINTS = ("GPU", "gpu", "node", "Node", "V100", "A100", "H100", "T4", "卡", "per ", "/it", "/step", "/iter", "sec",
         "second", "minute", "hour", " min", " h ", " h,", " h.", " h)", " s ", " s,", " s.", " s)", "ms ", "小时", "分钟",
         "秒", "% of", "half of", "quarter of", "third of", "ZeRO", "Zero", "ZERO", "zero", "ffload", "it/s", "/s ",
         "/s,", "/s.", "ptimizer on", "B model", "b model", "B param", "M param")
_HINTS_RE = any_of(HINTS)
PROSE_MAX_LINES = 4000  # per source: a long log's chatter is not read sentence by sentence beyond this
PROSE_WINDOW = 8  # a duration takes the setting stated at most this many lines above it (a bullet list's header)
MAX_LINE = 600  # longer lines are records, not sentences

COUNT_WORDS = {"one": 1, "single": 1, "a": 1, "two": 2, "three": 3, "four": 4, "six": 6, "eight": 8, "sixteen": 16,
               "单": 1, "单个": 1, "一": 1, "一个": 1, "一张": 1, "两": 2, "两个": 2, "两张": 2, "二": 2}
_COUNT = r"(?P<n>\d{1,4}|one|single|two|three|four|six|eight|sixteen|单个|单|一个|一张|一|两个|两张|两|二)"
# a device after its count: `8 GPUs`, `8GPU`, `8x A100`, `2 个 V100`, `单 GPU`
_DEVICE = (r"(?:GPUs?|gpus?|cards?|V100s?|A100s?|H100s?|H200s?|H800s?|A800s?|A6000s?|A40s?|A10G?s?|L40S?s?|L4s?|T4s?"
           r"|(?:GeForce )?RTX ?\d{4}(?: ?Ti)?s?|MI\d{3}X?s?|卡)")
# (a count glued to the CJK text before it is still a count: `在单个 GPU 上`)
GPUS = re.compile(rf"(?<![A-Za-z0-9.]){_COUNT}\s*(?:x\s*|×\s*|个\s*)?(?:(?:Tesla|Telsa|NVIDIA)\s+)?{_DEVICE}"
                  r"(?![A-Za-z])(?!\s*(?:nodes?|machines?|hosts?|servers?)\b)", re.I)
NODES = re.compile(rf"(?<![A-Za-z0-9.]){_COUNT}[\s-]*(?:GPU\s+)?(?:nodes?|machines?|hosts?|servers?|节点|台机器)(?![A-Za-z])",
                   re.I)
# Per-node counts: `8 gpus per host`, `each node has one GPU`, `3 nodes with one T4` (each). With the node count
# on the same line they give the run's GPU count; alone they are not the run's.
_NODE_WORD = r"(?:nodes?|machines?|hosts?|servers?)"
_MODEL = r"(?:(?:Tesla|Telsa|NVIDIA)\s+)?"


def _count_rx(name: str) -> str:
    return _COUNT.replace("?P<n>", f"?P<{name}>")


# what may stand between a device and `each` / `per node`: its memory and the word GPU (`8x A100 80GB each`,
# `8 A100 (80GB) per node`, `8 H100 80GB GPUs each`)
_QUALIFIED = r"(?:[\s-]*\(?\d{2,3}\s*G(?:i?B)?\)?)?(?:\s+(?:GPUs?|cards?))?"
_TIMES = r"(?:x\s*|×\s*)?"
PER_NODE = re.compile(
    rf"(?<![A-Za-z0-9.]){_count_rx('k')}\s*(?:x\s*|×\s*|个\s*)?{_MODEL}{_DEVICE}{_QUALIFIED}"
    rf"\s*(?:per|/|on each|in each|on every|each)\s*{_NODE_WORD}\b"
    rf"|(?<![A-Za-z0-9.]){_count_rx('k4')}\s*{_TIMES}{_MODEL}{_DEVICE}{_QUALIFIED}\s+each\b"
    rf"|(?:each|every) {_NODE_WORD} (?:has|with|having) {_count_rx('k2')}\s*{_TIMES}{_MODEL}{_DEVICE}"
    # `2 nodes with 8 GPUs`, `4 nodes x 8 GPUs`, `4 nodes of 8 A100s`: the count after the nodes is each node's
    rf"|(?<![A-Za-z0-9.]){_count_rx('n2')}\s+{_NODE_WORD},?\s+(?:each\s+)?(?:with|having|have|has|x|×|of)\s+"
    rf"{_count_rx('k3')}\s*{_TIMES}{_MODEL}{_DEVICE}", re.I)

# duration units -> seconds
UNITS = {"ms": 1e-3, "s": 1.0, "sec": 1.0, "secs": 1.0, "second": 1.0, "seconds": 1.0, "min": 60.0, "mins": 60.0,
         "minute": 60.0, "minutes": 60.0, "h": 3600.0, "hr": 3600.0, "hrs": 3600.0, "hour": 3600.0, "hours": 3600.0,
         "秒": 1.0, "分钟": 60.0, "小时": 3600.0}
_UNIT = "|".join(sorted((re.escape(u) for u in UNITS), key=len, reverse=True))
# A unit that names the number after it (tf_cnn_benchmarks' `80\timages/sec: 37.5`, `3 sec: 12.1`) labels a column:
# the number before it is no quantity. Nor is a number a tab sets apart from the unit.
_LABEL = r"(?!\s*[:=]\s*[-+]?\.?\d)"
DURATION = re.compile(rf"(?<![\w.])(?P<v>\d+(?:\.\d+)?)[ \u00a0]*(?P<u>{_UNIT})(?![A-Za-z]){_LABEL}"
                      r"(?P<per>\s*(?:/|per|a|each|every)\s*(?:step|iteration|iter|it|batch|epoch)s?\b)?", re.I)
# A rate: of steps (a step's time), of samples or tokens (a throughput): `1.5 it/s`, `150 images per second`,
# `3,000 tokens/s`.
_STEP_UNIT = re.compile(r"its?|iters?|iterations?|steps?|batch(?:es)?", re.I)
RATE = re.compile(r"(?<![\w.,])(?P<v>\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?)[ \u00a0]*"
                  r"(?P<what>its?|iters?|iterations?|steps?|batch(?:es)?|images?|imgs?|samples?|examples?|seqs?|"
                  r"sequences?|tokens?|toks?)\s*(?:/|per)\s*(?:s|sec|second)\b" + _LABEL, re.I)
_TQDM_SHAPE = re.compile(r"\[\d+:\d\d(?::\d\d)?<|%\|")
# what a duration without `per ...` is of: the words of the sentence before it
_EPOCH = re.compile(r"\bepoch\b|一个 ?epoch|每个 ?epoch", re.I)
_STEP = re.compile(r"\b(?:each|every|per|one|a) (?:step|iteration|iter|batch)\b|\bsteps? takes?\b|每(?:步|个 ?step)"
                   r"|\b(?:step|iteration|iter) ?time\b|\btime per (?:step|iteration|iter)\b", re.I)
_TOTAL = re.compile(r"\b(?:training|wall|total|whole|run|entire|takes?|took|finish(?:es|ed)?|lasts?)\b|训练|需要|用时|耗时",
                    re.I)
# A ZeRO stage named in words: `ZeRO-3`, `ZeRO2`, `Zero stage 2`, `ZeRO_3`, and in lower case glued or with `stage`
# (`zero3`, `zero-2`, `zero stage 2`) where it is a word, not part of a path or a name (`ds_zero3_offload.json` is
# the config file's name, read as such by parsers/facts.py): not `ZeRO-Offload`, not `zero 3`.
ZERO_STAGE = re.compile(r"(?<![A-Za-z])(?:ZeRO|Zero|ZERO)[-_ ]?(?:[Ss]tage[-_ ]?)?(?P<stage>[0-3])(?!\d|\.\d)"
                        r"|(?<![\w/.-])zero(?:[-_]?|[-_ ]stage[-_ ]?)(?P<low>[0-3])(?![\w/-]|\.\w)")
# An offload named in words: `CPU offload`, `ZeRO-Offload`, `offloading the optimizer states to the CPU`, `optimizer
# on CPU`, `NVMe offload` (not DeepSpeed's own `ZeRO offload gradient protections: False`); `without CPU offload`
# names none. The optimizer's unless the parameters are named.
OFFLOAD = re.compile(
    r"(?P<neg>\b(?:without|no|w/o|disabl(?:e|ed|ing)|turn(?:ed|ing)? off)\s+(?:the\s+|any\s+)?(?:[\w-]+\s+)?)?"
    r"(?:\b(?P<d1>cpu|nvme)[ -]?offload(?:ing|ed)?\b|\bzero-?offload\b"
    r"|\boffload(?:ing|ed)?\s+(?:the\s+)?(?P<what>optimizer(?:\s+states?)?|param(?:eter)?s|weights)?\s*"
    r"(?:to|on|onto)\s+(?:the\s+)?(?P<d2>cpu|nvme)\b"
    r"|\boptimizer(?:\s+states?)?\s+(?:offloaded\s+)?(?:on|to)\s+(?:the\s+)?(?P<d3>cpu)\b)",
    re.I)
# the stated frame's value of an offload (0: none named, `without CPU offload`)
OFFLOAD_DEVICES = {1.0: "cpu", 2.0: "nvme"}
# A model's size stated in words (`a 2.7B model`, `7B parameter model`, `350M params`; not `1.3B tokens`), or in its
# name (`Llama-2-13b`, `GPT-NeoX 20B`: the name's last size token, as size_in_name reads a hub id).
MODEL_SIZE = re.compile(
    r"(?<![\w.])(?P<size>\d+(?:\.\d+)?\s?[BbMm])\b(?=[ -]?(?:param(?:eter)?s?|(?:parameters? )?model|LLM)\b)"
    r"|(?<![\w/])(?P<name>(?i:llama|qwen|mistral|falcon|gpt-?neox|gpt-j|opt|bloom|pythia|gemma|phi|deepseek|baichuan"
    r"|internlm|starcoder|codellama|vicuna|olmo|t5|flan-t5)[\w.-]*(?: \d+(?:\.\d+)?[BbMm]\b)?)")
# A GPU model named in words, with its memory where stated (`4 nodes x 4 A100-80GB`, `8x H100 80GB`, `RTX 3090
# (24GB)`): the stated frame's value is the model's place in STATED_GPUS.
STATED_GPUS = ("H200", "H100", "H800", "A100", "A800", "V100", "A10G", "A6000", "A40", "L40S", "L4", "T4", "RTX 3090",
               "RTX 4090", "RTX 3080", "RTX 2080 Ti", "P100", "K80", "MI250X", "MI300X")
# (as written: in upper case, the 100-class cards in lower case too, `8xa100`; not inside a name, `layers.l4`)
_GPU_ALTERNATIVES = "|".join(re.escape(g).replace(r"\ ", " ?") for g in sorted(STATED_GPUS, key=len, reverse=True))
_GPU_INDEX = {g.replace(" ", "").lower(): i for i, g in enumerate(STATED_GPUS)}
GPU_NAMED = re.compile(r"(?:(?<=[0-9]x)|(?<![\w.-]))(?P<gpu>" + _GPU_ALTERNATIVES + r"|[ahv][18]00|h200)s?(?![\w])"
                       r"(?:[\s-]*\(?(?P<mem>\d{2,3})\s*G(?:i?B)?\b\)?)?")
# No ZeRO at all, as a thread compares it with a stage (`without ZeRO`, `plain DDP`): stage 0.
_NO_ZERO = re.compile(r"\b(?:without|no) (?:ZeRO|DeepSpeed)\b|\bplain DDP\b|\bvanilla DDP\b", re.I)


def size_in_name(name: str) -> int | None:
    """`Llama-3.2-1B` -> 1e9, `opt-350m` -> 3.5e8, `Qwen1.5-1.8B-Chat` -> 1.8e9, `2.7B` -> 2.7e9 (the last size token
    in the name; none in `Mixtral-8x7B` or `Qwen1.5-MoE-A2.7B`, whose tokens are not the model's size). A model's hub
    id (facts.py) and a sentence (below) are read by this one function."""
    found = re.findall(r"(?:^|[-_/. ])(\d+(?:\.\d+)?) ?([bBmM])(?=$|[-_. ])", name)
    if not found:
        return None
    number, unit = found[-1]
    return int(float(number) * (1e9 if unit in "bB" else 1e6))


def _stage_of(m: re.Match[str]) -> int:
    """The stage a ZERO_STAGE match names, in either case."""
    return int(m.group("stage") or m.group("low"))
COMM_SHARE = re.compile(
    r"(?P<share>half|a third|a quarter|\d+(?:\.\d+)?\s*%)\s+of\s+(?:the\s+)?(?:GPU\s+|total\s+|step\s+|training\s+)?"
    r"time\s+(?:is\s+|was\s+)?(?:spent\s+)?(?:on|in|by|waiting for)\s+(?P<what>\S+)", re.I)
COMM_WORDS = re.compile(r"nccl|all_?reduce|all-reduce|allgather|all_gather|reduce_scatter|communication|comm\b", re.I)
_SHARE_WORDS = {"half": 0.5, "a third": 1 / 3, "a quarter": 0.25}

# the stated frame's own columns (parsers/schema.py), behind the two that place a row
STATED_SCHEMA = {"source": pl.UInt32, "line": pl.UInt32, **{c: t for c, (t, _) in FRAMES["stated"].items()}}


_TABLE_ROW = r"^\s*\|"  # anchored: no copy of every line with its blanks stripped


def candidates(rows: pl.DataFrame) -> pl.DataFrame:
    """The lines of a chunk (source, line, text) that may state something: one literal pass (polars), and the rows
    of Markdown tables (a row of numbers under a header that names them)."""
    hinted = rows.filter(pl.col("text").str.contains(_HINTS_RE) | pl.col("text").str.contains(_TABLE_ROW))
    return hinted.filter(pl.col("text").str.len_bytes() <= MAX_LINE * 4).select("source", "line", "text")


def _count(word: str) -> int | None:
    w = word.lower()
    if w.isdigit():
        return int(w)
    return COUNT_WORDS.get(w)


# One machine, however the GPUs on it are counted: `single node`, `a VM with 2 V100s`, `on the same machine`,
# `一台机器`, `一个带有 2 个 V100 的虚拟机` (a VM with two V100s).
_ONE_MACHINE = re.compile(r"\bsingle[- ](?:node|machine|server|host|VM)\b|\bone (?:node|machine|server|VM)\b"
                          r"|\b(?:a|one|the same) (?:VM|virtual machine|machine|server|box|instance|workstation) "
                          r"(?:with|that has|having)\b|\bon the same (?:machine|node|server|host)\b|单机|单节点"
                          r"|一(?:个|台)[^，。,.]{0,24}?(?:虚拟机|机器|服务器|主机)", re.I)


def _settings(text: str) -> list[tuple[int, int | None, int | None]]:
    """(position, gpus, nodes) of each setting a line states, in order. A per-node count is multiplied by the node
    count the line states (`2 host, 8 gpus per host`: 16 GPUs on 2 nodes) and is otherwise left out."""
    per = PER_NODE.search(text)
    if per is not None and per.group("k4") and not NODES.search(text):
        per = None  # `on 1 GPU each step takes 1.7 s`: `each` belongs to the step; `4 nodes x 8 GPUs each` to a node
    out: list[tuple[int, int | None, int | None]] = []
    if per is not None:
        text = text[: per.start()] + " " * (per.end() - per.start()) + text[per.end():]  # positions kept
        k = _count(per.group("k") or per.group("k2") or per.group("k3") or per.group("k4"))
        n = _count(per.group("n2")) if per.group("n2") else None
        if n is None:  # the node count the line names elsewhere (`on 2 host, 8 gpus per host`)
            named = list(NODES.finditer(text))
            n = _count(named[-1].group("n")) if named else None
        if k and n:
            out.append((per.start(), k * n, n))
    out += [(m.start(), _count(m.group("n")), None) for m in GPUS.finditer(text)]
    out += [(m.start(), None, _count(m.group("n"))) for m in NODES.finditer(text)]
    if _ONE_MACHINE.search(text) and not any(n for _, _, n in out):
        out.append((0, None, 1))
    if re.search(r"\bsingle[- ]GPU\b|单卡", text, re.I) and not any(g for _, g, _ in out):
        out.append((0, 1, None))
    return sorted(out, key=lambda t: t[0])


def _duration_kind(text: str, m: re.Match[str]) -> str | None:
    if m.group("per"):
        return "epoch_time" if "epoch" in m.group("per").lower() else "step_time"
    before = text[: m.start()]
    if _EPOCH.search(before[-40:]):
        return "epoch_time"
    if _STEP.search(before[-40:]):
        return "step_time"
    if _TOTAL.search(before) or re.search(r"\bvs\.?\b|versus|对比|比", text):
        return "total_time"
    return None


# Markdown tables of timings: `| GPUs | step time (s) |`, `|---|---|`, `| 8 | 1.2 |`. Each row under a header that
# names a setting column is read as the sentence it stands for (`with 8 GPUs: 1.2 s per step`).
_TABLE_SEP = re.compile(r"^\s*\|?\s*:?-{3,}:?\s*(?:\|\s*:?-{3,}:?\s*)+\|?\s*$")
_SETTING_HEAD = re.compile(r"^(?:#\s*|num(?:ber of)?[ _]?|n[ _]?)?(?P<what>GPUs?|cards?|devices?|nodes?|machines?|"
                           r"hosts?|卡|节点)(?:\s*(?:count|数))?$", re.I)
_HEAD_UNIT = re.compile(rf"[(\[]\s*(?P<u>{_UNIT})\s*(?:/\s*(?:it|iter|step))?\s*[)\]]", re.I)


_STAGE_HEAD = re.compile(r"^(?:zero(?:[ _-]?stage)?|(?:zero[ _-]?)?stage|config(?:uration)?|setting|setup|strategy)$",
                         re.I)


def _stage_cell(cell: str) -> int | None:
    """The ZeRO stage a table cell names (`ZeRO-2`, `stage 3`, `2`; `none`, `DDP`, `no ZeRO`: 0), or None."""
    if (m := ZERO_STAGE.search(cell)) is not None:
        return _stage_of(m)
    if re.fullmatch(r"(?:stage\s*)?([0-3])", cell.strip(), re.I):
        return int(cell.strip()[-1])
    if _NO_ZERO.search(cell) or re.fullmatch(r"none|no|ddp|0", cell.strip(), re.I):
        return 0
    return None


def _cells(text: str) -> list[str]:
    return [c.strip() for c in text.strip().strip("|").split("|")]


def _head_words(head: str) -> str | None:
    """What a header's durations are, as the words the sentence reader knows; None where it names no time."""
    h = head.lower()
    if re.search(r"it/s|samples?/s|tokens?/s|throughput|speedup|loss|acc", h):
        return None
    if "epoch" in h:
        return "an epoch takes"
    if re.search(r"step|iter|batch|s/it|/it\b", h):
        return "per step"
    if re.search(r"time|duration|wall|total|耗时|用时|时间", h):
        return "training time is"
    return None


def _table_rows(lines: list[tuple[int, str]]) -> dict[int, tuple[str, str]]:
    """Line -> the sentence a Markdown table row stands for and the row under its header (the evidence), for tables
    whose header names a setting column."""
    out: dict[int, tuple[str, str]] = {}
    for i in range(1, len(lines)):
        line, text = lines[i]
        if not _TABLE_SEP.match(text) or lines[i - 1][0] != line - 1:
            continue
        head = _cells(lines[i - 1][1])
        setting = next(((k, m.group("what")) for k, h in enumerate(head) if (m := _SETTING_HEAD.match(h))), None)
        stage_col = next((k for k, h in enumerate(head) if _STAGE_HEAD.match(h)), None)
        if setting is not None:
            k, what = setting
        elif stage_col is not None:
            k, what = stage_col, ""
        else:
            continue
        unit = "nodes" if re.match(r"nodes?|machines?|hosts?|节点", what, re.I) else "GPUs"
        for at, row in lines[i + 1:]:
            if at != line + 1 or not row.strip().startswith("|"):
                break
            line, cells = at, _cells(row)
            if len(cells) != len(head):
                continue
            if setting is None:  # a column of ZeRO stages (`ZeRO-2`, `3`, `none`): said as `with ZeRO-N`
                stage = _stage_cell(cells[k])
                if stage is None:
                    continue
                said_for = f"with ZeRO-{stage}" if stage else "without ZeRO"
            elif not re.fullmatch(r"\d{1,4}", cells[k]):
                continue
            else:
                said_for = f"with {cells[k]} {unit}"
            said = []
            for j, (h, cell) in enumerate(zip(head, cells)):
                words = _head_words(h) if j != k else None
                value = re.fullmatch(r"(\d+(?:\.\d+)?)\s*(\S*)", cell)
                if words is None or value is None:
                    continue
                u = value.group(2) or ((m := _HEAD_UNIT.search(h)) and m.group("u")) or "s"  # seconds by default
                if words == "per step":
                    said.append(f"{value.group(1)} {u} per step")
                else:
                    said.append(f"{words} {value.group(1)} {u}")
            if said:
                out[at] = (f"{said_for}: " + "; ".join(said), f"{lines[i - 1][1].strip()} {row.strip()}")
    return out


def read(rows: pl.DataFrame) -> pl.DataFrame:
    """Candidate lines of whole sources (source, line, text) -> the stated frame's rows."""
    out: list[dict[str, object]] = []
    for (source,), part in rows.sort("source", "line").group_by(["source"], maintain_order=True):
        setting: tuple[int, int | None, int | None] | None = None  # (line, gpus, nodes) in force
        in_force: tuple[int, int] | None = None  # (line, ZeRO stage) named alone above the durations under it
        lines = list(part.head(PROSE_MAX_LINES).select("line", "text").iter_rows())
        tables = _table_rows(lines)
        for line, text in lines:
            # the evidence is the line as written (a table row under its header), not the sentence it stands for
            text, shown = tables.get(line, (text, text))
            text, shown = text.strip()[:MAX_LINE], shown.strip()[:MAX_LINE]
            found = _settings(text)
            every = _quantities(text)
            stages = _stages(text, [at for at, _, _ in every],
                             in_force[1] if in_force and line - in_force[0] <= PROSE_WINDOW else None)
            durations = _parallel(text, [(kind, value, st) for (_, kind, value), st in zip(every, stages)])
            paired = len(found) >= 2 and len(durations) == len(found)
            for _, g, n in (found if paired else [(0, *_merged(found))] if found else []):
                out.append(_row(source, line, "setting", None, g, n, shown))
            if not durations and len(alone := _named_stages(text)) == 1:
                in_force = (line, alone[0][1])
            for i, (kind, seconds, stage) in enumerate(durations):
                if paired:
                    g, n = found[i][1], found[i][2]
                elif found:
                    g, n = _merged(found)
                elif setting is not None and line - setting[0] <= PROSE_WINDOW:
                    g, n = setting[1], setting[2]
                else:
                    g = n = None
                out.append(_row(source, line, kind, seconds, g, n, shown, stage))
            for m in ZERO_STAGE.finditer(text):
                out.append(_row(source, line, "zero_stage", float(_stage_of(m)), None, None, shown))
            for m in MODEL_SIZE.finditer(text):
                if size := size_in_name(m.group("size") or m.group("name")):
                    out.append(_row(source, line, "model_params", float(size), None, None, shown))
            for m in GPU_NAMED.finditer(text):
                named = _GPU_INDEX[m.group("gpu").replace(" ", "").lower()]
                out.append(_row(source, line, "gpu_name", float(named), None, None, shown))
                if m.group("mem"):
                    out.append(_row(source, line, "gpu_memory_gb", float(m.group("mem")), None, None, shown))
            for m in OFFLOAD.finditer(text):
                device = 0.0 if m.group("neg") else 2.0 if (m.group("d1") or m.group("d2") or "").lower() == "nvme" \
                    else 1.0
                what = "offload_param" if re.match(r"param|weight", m.group("what") or "", re.I) else \
                    "offload_optimizer"
                out.append(_row(source, line, what, device, None, None, shown))
            for m in COMM_SHARE.finditer(text):
                if COMM_WORDS.search(m.group("what")):
                    s = m.group("share").lower()
                    share = _SHARE_WORDS.get(s) or float(s.rstrip("% ")) / 100.0
                    out.append(_row(source, line, "comm_share", share, None, None, shown))
            if found and not paired:
                setting = (line, *_merged(found))
    frame = pl.DataFrame(out, schema=STATED_SCHEMA, orient="row") if out else pl.DataFrame(schema=STATED_SCHEMA)
    return frame.with_columns(pl.lit("prose").alias("origin"))


def _merged(found: list[tuple[int, int | None, int | None]]) -> tuple[int | None, int | None]:
    """One line's settings as one: the last GPU count and the last node count it names."""
    gpus = [g for _, g, _ in found if g is not None]
    nodes = [n for _, _, n in found if n is not None]
    return (gpus[-1] if gpus else None), (nodes[-1] if nodes else None)


def _quantities(text: str) -> list[tuple[int, str | None, float]]:
    """(position, what it is of, value) of each duration (in seconds) and rate a line states, in order: a rate of
    steps is a step's time (`1.5 it/s`: 0.667 s), a rate of samples or tokens a throughput (`150 images per second`).
    A tqdm bar's rate is the program's line, not a sentence."""
    out: list[tuple[int, str | None, float]] = [
        (m.start(), _duration_kind(text, m), float(m.group("v")) * UNITS[m.group("u").lower()])
        for m in DURATION.finditer(text)]
    if not _TQDM_SHAPE.search(text):
        for m in RATE.finditer(text):
            v = float(m.group("v").replace(",", ""))
            what = m.group("what").lower()
            if v <= 0:
                continue
            if _STEP_UNIT.fullmatch(what):
                out.append((m.start(), "step_time", 1.0 / v))
            else:
                out.append((m.start(), "tokens_per_sec" if what.startswith("tok") else "samples_per_sec", v))
    return sorted(out, key=lambda q: q[0])


def _parallel(text: str, quantities: list[tuple[str | None, float, int | None]]
              ) -> list[tuple[str, float, int | None]]:
    """A line's quantities with what each is of and its ZeRO stage, those of no kind left out. Where each is stated
    for a stage of its own, they are one quantity compared (`went from 1.1 s to 2.3 s per step`, `an epoch takes 5 h;
    without DeepSpeed it took 2 h`): a duration that says less than another (no kind, or a total by a verb alone)
    takes that one's kind."""
    kinds = [k for k, _, _ in quantities]
    stages = [st for _, _, st in quantities]
    specific = next((k for k in kinds if k in ("step_time", "epoch_time")), None)
    compared = len(quantities) >= 2 and None not in stages and len(set(stages)) == len(stages)
    if compared and specific is not None and not _TOTAL_NAMED.search(text):
        kinds = [specific if k in (None, "total_time") else k for k in kinds]
    return [(k, v, st) for (_, v, st), k in zip(quantities, kinds) if k is not None]


# A whole run's time named as such: a total that stays one beside a step's time
_TOTAL_NAMED = re.compile(r"\b(?:training|total|whole|entire|wall)(?: ?clock)? time\b|\bin total\b", re.I)


def _stages(text: str, at: list[int], in_force: int | None) -> list[int | None]:
    """The ZeRO stage of each duration of a line (`at`: their positions), sentence by sentence: one a duration
    where the sentence names as many as it states (`2.3 s with ZeRO-3, whereas with ZeRO-2 it was 1.1 s`, in order),
    the one it names for all of them, else the one in force above it (a line that names one alone); none where the
    sentence names several for fewer durations (no pairing to trust)."""
    named = _named_stages(text)
    ends = [m.end() for m in _SENTENCE_END.finditer(text)] + [len(text) + 1]
    out: list[int | None] = []
    for p in at:
        end = next(e for e in ends if p < e)
        start = max([e for e in ends if e <= p], default=0)
        here = [st for q, st in named if start <= q < end]
        mine = [q for q in at if start <= q < end]
        if len(here) == len(mine):
            out.append(here[mine.index(p)])
        elif len(here) == 1:
            out.append(here[0])
        else:
            out.append(in_force if not here else None)
    return out


def _named_stages(text: str) -> list[tuple[int, int]]:
    """(position, stage) of each ZeRO stage a line names, no ZeRO (`without DeepSpeed`) as 0, in order."""
    return sorted([(m.start(), _stage_of(m)) for m in ZERO_STAGE.finditer(text)]
                  + [(m.start(), 0) for m in _NO_ZERO.finditer(text)])


_SENTENCE_END = re.compile(r"[.!?;](?=\s+[A-Z(])")


def _row(source: int, line: int, quantity: str, value: float | None, gpus: int | None, nodes: int | None,
         text: str, stage: int | None = None) -> dict[str, object]:
    return {"source": source, "line": line, "quantity": quantity, "value": value, "gpus": gpus, "nodes": nodes,
            "zero_stage": stage, "detail": text}
