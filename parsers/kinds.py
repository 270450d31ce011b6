"""Line kinds, declared as data (after lnav's log formats): an anchor, a pattern and typed fields each.

How a line is classified: every line is searched once for the leftmost of all ANCHORS (one Aho-Corasick pass in
polars); the kinds that list that anchor then try their pattern on it. An anchor must not sit in a prefix shared
with other kinds' lines (`[launch.py:` would hide the launcher's exit lines), since only the leftmost one counts.
Environment variables are found by a separate pass (extract.ENV_RE), wherever they sit on a line. A kind's
pattern is a Rust-regex (polars) pattern with named groups; the groups become the typed fields. `required` names
the group that must match for a row to count. `fields` maps each group to its polars dtype; numbers may carry
thousands separators or quotes. The high-volume kinds also declare a `Layout`: separators and labels that a split
checks piece by piece, 0.6x the instructions of their patterns; a line that does not fit takes the pattern.

Formats come from ../shared/reference/log_formats.md (section numbers below) and DeepSpeed / transformers source.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import polars as pl

from diagnose.parsers import fact_table
from diagnose.parsers.schema import STRAGGLER_METRICS
from diagnose.parsers.vocabulary import NAMES, names_alternation

F = pl.Float64
I = pl.Int64
S = pl.String
NUM = r"[-+]?(?:\d[\d,]*\.?\d*(?:[eE][-+]?\d+)?|nan|inf|NaN|Infinity)"
# A duration as trainers print it: a number with an optional unit (ms, s, min; seconds when bare) or H:MM:SS.
# Captured as text; extract.duration_s normalises it.
DUR = r"(\d+:\d\d:\d\d(?:\.\d+)?|" + NUM + r"\s*(?:ms|msec|s|sec|secs|seconds|min|mins|minutes)?)(?:\b|$|[^\w])"


@dataclass(frozen=True)
class Layout:
    """The fast path of a high-volume kind: split on `sep` (after turning each of `also` into `sep`), piece i holds
    field i after its label: piece 0 after the first occurrence of the label, the others right after it as a
    prefix; `strip` is removed from both ends of each value. A line that does not fit, or whose values do not all
    parse, takes the kind's general path. Splitting once and casting short pieces beats extracting the numbers
    with a regex: callgrind counts 28M against 48M instructions for the step lines of a 4 MB chunk of the ingest
    benchmark, 59M against 89M for its throughput lines."""

    sep: str
    fields: tuple[tuple[str, str], ...]  # (label, field)
    also: tuple[str, ...] = ()
    strip: str = ""


@dataclass(frozen=True)
class LineKind:
    name: str
    frame: str  # steps | timers | memory | events | facts | comms
    anchors: tuple[str, ...]
    pattern: str = ""
    fields: dict[str, pl.DataType | type[pl.DataType]] = field(default_factory=dict)
    # Per-field patterns (one capture group each) for dicts whose keys come in any order; a tuple is tried in order.
    field_patterns: dict[str, str | tuple[str, ...]] = field(default_factory=dict)
    required: str = ""
    # A row counts when every field of at least one of these groups was read (`ts` is the line's timestamp).
    required_any: tuple[tuple[str, ...], ...] = ()
    # A kind without anchors is a fallback: it reads lines that no anchor claimed and that this pattern finds.
    prefilter: str = ""
    # Constant columns written on every row of this kind (e.g. an event kind).
    constants: dict[str, object] = field(default_factory=dict)
    # For the high-volume kinds: the numbers on the line from `after` on, in order, are these fields (a row whose
    # count of numbers differs is garbled and dropped); cheaper than capture groups by 2-5x. This is the general
    # path of those kinds: their `layout`, where a line fits it, is cheaper still.
    after: str = ""
    numbers: tuple[str, ...] = ()
    min_numbers: int = 0  # accept rows with at least this many numbers (default: exactly len(numbers))
    layout: Layout | None = None
    # Lines in the wild and the fields they must give (after units are normalised), as lnav's formats carry their
    # samples: tests/test_reading.py runs each through extraction.
    samples: tuple[tuple[str, dict[str, object]], ...] = ()
    # A line this kind reads that also matches this pattern holds more than the kind reads (a step counter printed
    # before a log dict that numbers no step): it is mined too (parsers/templates.py), and where the learned step
    # clock reads it, that row stands instead of this kind's (run_model._given_way).
    gives_way: str = ""
    # The pattern may match several times on a line, each match a row (Unsloth's banner packs the HF Trainer's
    # summary into `Num examples = 51,760 | Num Epochs = 1 | Total steps = 60`).
    every: bool = False


def _fact(name: str, anchors: tuple[str, ...], pattern: str, key: str,
          samples: tuple[tuple[str, dict[str, object]], ...] = ()) -> LineKind:
    """A run-fact line with one value (the pattern's `value` group) stored under `key`."""
    return LineKind(name, "facts", anchors, pattern, {"value": S}, required="value", constants={"key": key},
                    samples=samples)


# Megatron's straggler labels -> the rank_extremes column stems (parsers/schema.py).
_STRAGGLER_LABELS = {"Rtt": "rtt", "Pwr": "power", "Tmp": "temp", "Utl": "util", "Clk": "clock", "DRtt": "data_rtt",
                     "Etpt": "etpt"}


def _straggler_fields() -> tuple[dict[str, pl.DataType | type[pl.DataType]], dict[str, str | tuple[str, ...]]]:
    """Each metric's min and max value and rank as `Mn<Label>/Rnk: <value>[unit]/<rank>` -> (fields, patterns)."""
    units = {m: u for m, u, _ in STRAGGLER_METRICS}
    fields: dict[str, pl.DataType | type[pl.DataType]] = {}
    patterns: dict[str, str | tuple[str, ...]] = {}
    for label, stem in _STRAGGLER_LABELS.items():
        for end, tag in (("min", "Mn"), ("max", "Mx")):
            head = r"(?:^|[^A-Za-z])" + tag + label + r"/Rnk:\s*"
            value, rank = f"{stem}_{end}{units[stem]}", f"{stem}_{end}_rank"
            fields |= {value: F, rank: I}
            patterns |= {value: head + "(" + NUM + ")", rank: head + NUM + r"\s*[A-Za-z%]*/(\d+)"}
    return fields, patterns


_STRAGGLER_FIELDS, _STRAGGLER_PATTERNS = _straggler_fields()


# A step counter named right before a log dict (jaxline's `global_step: 10, {'loss': ...}`, `step 10: {'loss': ...}`):
# a name of the vocabulary's counters (spaces or underscores), then the number. The HF Trainer prints its dict alone.
_COUNTER_NAMES = names_alternation(NAMES["counter"])
# nvidia-smi's process row, `#` standing for its GPU, GI, CI and PID columns: a border, a launcher's prefix or a bar
# glued before it (`... 912.35 examples/s] 0   N/A  N/A  12238  C ...`)
_SMI_PROCESS = r"(?:^|[:>\]] ?)\|?\s*#\s+C(?:\+G)?\s+\S+\s+(?:\d+MiB|N/A)"
_SMI_IDS = r"\d+\s+(?:N/A\s+N/A\s+|\d+\s+\d+\s+)?\d+"
COUNTED_DICT = rf"(?i)\b(?:{_COUNTER_NAMES})\s*[:=]?\s*\d+\]?\s*[,:;|-]?\s*\{{'loss'"


def _hf_key(key: str) -> str:
    return r"'" + key + r"': '?(" + NUM + r")'?"


KINDS: tuple[LineKind, ...] = (
    # ---- steps (§1.6, §3) ---------------------------------------------------------------------------------
    # `step=<n>, skipped=<k>, lr=[<lr>, ...], mom=[...]`: the first three numbers after `step=`.
    LineKind("ds_step", "steps", (", skipped=",), "", {"global_step": I, "skipped": I, "lr": F},
             required="global_step", after="step=", numbers=("global_step", "skipped", "lr"), min_numbers=3,
             layout=Layout(", ", (("step=", "global_step"), ("skipped=", "skipped"), ("lr=", "lr")), strip="[]"),
             samples=(("[2026-11-29 23:04:15,055] [INFO] [logging.py:123:log_dist] [Rank 0] step=0, skipped=0,"
                       " lr=[0], mom=[[0.9, 0.95]]",
                       {"global_step": 0, "skipped": 0, "lr": 0.0}),)),
    # `epoch=<e>/micro_step=<m>/global_step=<g>, RunningAvgSamplesPerSec=<f>, CurrSamplesPerSec=<f>,
    #  MemAllocated=<f>GB, MaxMemAllocated=<f>GB` (0.8.0+).
    LineKind("ds_throughput", "steps", ("/micro_step=",), "",
             {"epoch": F, "micro_step": I, "global_step": I, "samples_per_sec_running": F, "samples_per_sec": F,
              "mem_alloc_gb": F, "max_mem_alloc_gb": F}, required="global_step", after="epoch=",
             numbers=("epoch", "micro_step", "global_step", "samples_per_sec_running", "samples_per_sec",
                      "mem_alloc_gb", "max_mem_alloc_gb"),
             layout=Layout(", ", (("epoch=", "epoch"), ("micro_step=", "micro_step"), ("global_step=", "global_step"),
                                  ("RunningAvgSamplesPerSec=", "samples_per_sec_running"),
                                  ("CurrSamplesPerSec=", "samples_per_sec"), ("MemAllocated=", "mem_alloc_gb"),
                                  ("MaxMemAllocated=", "max_mem_alloc_gb")), also=("/",), strip="GB"),
             samples=(("[2026-11-29 23:04:15,680] [INFO] [timer.py:264:stop] epoch=0/micro_step=3/global_step=3,"
                       " RunningAvgSamplesPerSec=79.53398058252426, CurrSamplesPerSec=79.53318988362679,"
                       " MemAllocated=0.41GB, MaxMemAllocated=0.41GB",
                       {"epoch": 0.0, "micro_step": 3, "global_step": 3,
                        "samples_per_sec_running": 79.53398058252426, "samples_per_sec": 79.53318988362679,
                        "mem_alloc_gb": 0.41, "max_mem_alloc_gb": 0.41}),)),
    # 0.7.x: `<epoch>/<step>, RunningAvgSamplesPerSec=..., CurrSamplesPerSec=...` (step counts micro-steps there).
    LineKind("ds_throughput_v07", "steps", ("RunningAvgSamplesPerSec=",),
             r"(?P<epoch>\d+)/(?P<micro_step>\d+), RunningAvgSamplesPerSec=(?P<samples_per_sec_running>" + NUM
             + r"), CurrSamplesPerSec=(?P<samples_per_sec>" + NUM + r")(?:, MemAllocated=(?P<mem_alloc_gb>" + NUM
             + r")GB, MaxMemAllocated=(?P<max_mem_alloc_gb>" + NUM + r")GB)?",
             {"epoch": F, "micro_step": I, "samples_per_sec_running": F, "samples_per_sec": F, "mem_alloc_gb": F,
              "max_mem_alloc_gb": F}, required="micro_step",
             samples=(("[2022-06-01 10:00:05,123] [INFO] [timer.py:181:stop] 0/20, RunningAvgSamplesPerSec=38.42,"
                       " CurrSamplesPerSec=39.10, MemAllocated=5.12GB, MaxMemAllocated=9.87GB",
                       {"epoch": 0.0, "micro_step": 20, "samples_per_sec_running": 38.42, "samples_per_sec": 39.1,
                        "mem_alloc_gb": 5.12, "max_mem_alloc_gb": 9.87}),)),
    # 0.2-0.6: `<epoch>/<step>, SamplesPerSec=<f>[, MemAllocated=..GB, MaxMemAllocated=..GB]`.
    LineKind("ds_throughput_v05", "steps", (", SamplesPerSec=",),
             r"(?P<epoch>\d+)/(?P<micro_step>\d+), SamplesPerSec=(?P<samples_per_sec>" + NUM
             + r")(?:, MemAllocated=(?P<mem_alloc_gb>" + NUM + r")GB, MaxMemAllocated=(?P<max_mem_alloc_gb>" + NUM
             + r")GB)?",
             {"epoch": F, "micro_step": I, "samples_per_sec": F, "mem_alloc_gb": F, "max_mem_alloc_gb": F},
             required="micro_step",
             samples=(("[2021-03-01 10:00:05,123] [INFO] [timer.py:166:stop] 0/20, SamplesPerSec=38.42,"
                       " MemAllocated=5.12GB, MaxMemAllocated=9.87GB",
                       {"epoch": 0.0, "micro_step": 20, "samples_per_sec": 38.42, "mem_alloc_gb": 5.12,
                        "max_mem_alloc_gb": 9.87}),)),
    # HF Trainer's log dict; LLaMA-Factory adds `'train_speed(s/it)'`, ms-swift `'global_step/max_steps': '10/100'`,
    # `'train_speed(iter/s)'` and `'memory(GiB)'` (peak reserved memory).
    LineKind("hf_log", "steps", ("{'loss'",), "",
             {"loss": F, "grad_norm": F, "lr": F, "epoch": F, "global_step": I, "total_steps": I, "step_time_s": F,
              "iter_per_s": F, "max_mem_alloc_gb": F},
             field_patterns={"loss": _hf_key("loss"), "grad_norm": _hf_key("grad_norm"),
                             "lr": _hf_key("learning_rate"), "epoch": _hf_key("epoch"),
                             "global_step": r"'global_step/max_steps': '(\d+)/",
                             "total_steps": r"'global_step/max_steps': '\d+/(\d+)'",
                             "step_time_s": _hf_key(r"train_speed\(s/it\)"),
                             "iter_per_s": _hf_key(r"train_speed\(iter/s\)"),
                             "max_mem_alloc_gb": _hf_key(r"memory\(GiB\)")}, required="loss",
             gives_way=COUNTED_DICT,
             samples=(("{'loss': '6.837', 'grad_norm': '0.8675', 'learning_rate': '0', 'epoch': '0.003906'}",
                       {"loss": 6.837, "grad_norm": 0.8675, "lr": 0.0, "epoch": 0.003906}),)),
    # Megatron-LM / Megatron-DeepSpeed / gpt-neox iteration lines: `iteration N/ M | consumed samples: | elapsed time
    # per iteration (ms): | learning rate: | global batch size: | lm loss: | loss scale: | grad norm: | number of
    # skipped iterations: | number of nan iterations: | samples per second: | TFLOPs:`; fields vary by version, so
    # each is looked for on its own.
    LineKind("megatron_iter", "steps", ("elapsed time per iteration (ms):",), "",
             {"global_step": I, "total_steps": I, "step_time_ms": F, "lr": F, "global_batch": I, "loss": F,
              "loss_scale": F, "grad_norm": F, "skipped_iters": I, "nan_iters": I, "samples_per_sec": F, "tflops": F},
             field_patterns={"global_step": r"iteration\s+(\d+)\s*/", "total_steps": r"iteration\s+\d+\s*/\s*(\d+)",
                             "step_time_ms": r"elapsed time per iteration \(ms\):\s*(" + NUM + ")",
                             "lr": r"learning rate:\s*(" + NUM + ")", "global_batch": r"global batch size:\s*(\d+)",
                             "loss": r"(?:lm[ _]loss|\| loss):\s*(" + NUM + ")",
                             "loss_scale": r"loss scale:\s*(" + NUM + ")", "grad_norm": r"grad norm:\s*(" + NUM + ")",
                             "skipped_iters": r"number of skipped iterations:\s*(\d+)",
                             "nan_iters": r"number of nan iterations:\s*(\d+)",
                             "samples_per_sec": r"samples per second:\s*(" + NUM + ")",
                             "tflops": r"TFLOPs(?: per GPU)?:\s*(" + NUM + ")"}, required="global_step",
             samples=((" iteration       10/   10000 | consumed samples:          160 | elapsed time per iteration"
                       " (ms): 5933.0 | learning rate: 1.500E-04 | global batch size:    16 | lm loss: 3.490000E+00 |"
                       " loss scale: 1.0 | grad norm: 0.412 | number of skipped iterations:   0 | number of nan"
                       " iterations:   0 |",
                       {"global_step": 10, "total_steps": 10000, "step_time_ms": 5933.0, "lr": 0.00015,
                        "global_batch": 16, "loss": 3.49, "loss_scale": 1.0, "grad_norm": 0.412,
                        "skipped_iters": 0, "nan_iters": 0}),)),
    # DeepSpeed's pipeline engine: `steps: 50 loss: 8.4555 iter time (s): 1.464 samples/sec: 21.860`.
    LineKind("ds_pipe_step", "steps", ("iter time (s):",), "",
             {"global_step": I, "loss": F, "step_time_s": F, "samples_per_sec": F},
             field_patterns={"global_step": r"steps:\s*(\d+)", "loss": r"loss:\s*(" + NUM + ")",
                             "step_time_s": r"iter time \(s\):\s*(" + NUM + ")",
                             "samples_per_sec": r"samples/sec:\s*(" + NUM + ")"}, required="step_time_s",
             samples=(("steps: 100 loss: 5.4321 iter time (s): 1.234 samples/sec: 103.726",
                       {"global_step": 100, "loss": 5.4321, "step_time_s": 1.234, "samples_per_sec": 103.726}),)),
    # DeepSpeed-Chat step 3: `|E2E latency=7.99s |Gather latency=0.00s (0.00%) |Generate time=5.26s (65.81%)
    # |Training time=2.52s (31.46%) |Others=0.22 (2.73%)|CurSamplesPerSec=8.01 |AvgSamplesPerSec=8.01`.
    LineKind("dschat_rlhf_step", "steps", ("|E2E latency=",), "",
             {"step_time_s": F, "generate_time_s": F, "train_time_s": F, "samples_per_sec": F},
             field_patterns={"step_time_s": r"E2E latency=(" + NUM + ")s",
                             "generate_time_s": r"Generate time=(" + NUM + ")s",
                             "train_time_s": r"Training time=(" + NUM + ")s",
                             "samples_per_sec": r"CurSamplesPerSec=(" + NUM + ")"}, required="step_time_s",
             samples=(("|E2E latency=24.32s |Gather latency=0.00s (0.00%) |Generate time=21.10s (86.75%) |Training"
                       " time=2.94s (12.08%) |Others=0.28 (1.17%)|CurSamplesPerSec=1.32 |AvgSamplesPerSec=1.32",
                       {"step_time_s": 24.32, "generate_time_s": 21.1, "train_time_s": 2.94,
                        "samples_per_sec": 1.32}),)),
    # DeepSpeed-Chat steps 1-2 (print_throughput): `Model Parameters: 0.331 B, Latency: 0.27s, TFLOPs: 1.02,
    # Samples/sec: 7.28, Time/seq 0.14s, Batch Size: 2, Sequence Length: 512`.
    LineKind("dschat_step", "steps", ("Model Parameters: ",), "",
             {"step_time_s": F, "tflops": F, "samples_per_sec": F},
             field_patterns={"step_time_s": r"Latency: (" + NUM + ")s", "tflops": r"TFLOPs: (" + NUM + ")",
                             "samples_per_sec": r"Samples/sec: (" + NUM + ")"}, required="step_time_s",
             samples=(("Model Parameters: 1.316 B, Latency: 2.51s, TFLOPs: 48.71, Samples/sec: 12.75, Time/seq 0.08s,"
                       " Batch Size: 32, Sequence Length: 512",
                       {"step_time_s": 2.51, "tflops": 48.71, "samples_per_sec": 12.75}),)),
    LineKind("hf_train_runtime", "steps", ("{'train_runtime'",), "",
             {"train_runtime_s": F, "samples_per_sec": F, "steps_per_sec": F, "loss": F, "epoch": F},
             field_patterns={"train_runtime_s": _hf_key("train_runtime"),
                             "samples_per_sec": _hf_key("train_samples_per_second"),
                             "steps_per_sec": _hf_key("train_steps_per_second"), "loss": _hf_key("train_loss"),
                             "epoch": _hf_key("epoch")}, required="train_runtime_s",
             samples=(("{'train_runtime': '7.67', 'train_samples_per_second': '41.72', 'train_steps_per_second':"
                       " '5.215', 'train_loss': '6.837', 'epoch': '0.1562'}",
                       {"train_runtime_s": 7.67, "samples_per_sec": 41.72, "steps_per_sec": 5.215, "loss": 6.837,
                        "epoch": 0.1562}),)),
    # tqdm: `<pct>%|<bar>| <n>/<total> [<elapsed><<remaining>, <rate><unit>]`; the unit flips between it/s and s/it.
    # A bar's postfix (`set_postfix`: a custom loop's `loss=0.31`, Lightning's `v_num=0, train_loss=...`) follows
    # the rate inside the brackets.
    # A bar described `Epoch N` (Lightning's; a custom loop's `Epoch 3/10`, `epoch [3/10]`) counts within the
    # epoch; the epoch is kept and run_model numbers such bars on across epochs.
    LineKind("tqdm", "steps", ("it/s]", "s/it]", "it/s, ", "s/it, "),
             r"(?:[Ee]poch[ :\[]*(?P<epoch>\d+)(?: ?/ ?\d+)?\]?:? *)?"
             r"\d+%\|[^|]*\| *(?P<global_step>\d+)/(?P<total_steps>\d+) \[(?P<elapsed>[\d:]+)<[^,]*, *"
             r"(?P<rate>[\d.]+)(?P<unit>it/s|s/it)(?:, (?P<postfix>[^\]]*))?\]",
             {"global_step": I, "total_steps": I, "rate": F, "unit": S, "elapsed": S, "epoch": F, "postfix": S},
             required="rate",
             samples=(("  2%|▎         | 1/40 [00:00<00:06,  6.47it/s]",
                       {"global_step": 1, "total_steps": 40, "rate": 6.47, "unit": "it/s", "elapsed": "00:00"}),
                      ("Epoch 1:  45%|████▌     | 45/100 [00:02<00:02, 19.23it/s, v_num=0, train_loss=0.123]",
                       {"global_step": 45, "total_steps": 100, "rate": 19.23, "unit": "it/s", "elapsed": "00:02",
                        "epoch": 1.0}),
                      ("Epoch [3/10]: 100%|##########| 50/50 [00:10<00:00,  4.95it/s, loss=0.4]",
                       {"global_step": 50, "total_steps": 50, "rate": 4.95, "unit": "it/s", "elapsed": "00:10",
                        "epoch": 3.0}),
                      ("100%|##########| 50/50 [01:40<00:00,  2.01s/it, loss=0.0312]",
                       {"global_step": 50, "total_steps": 50, "rate": 2.01, "unit": "s/it", "elapsed": "01:40"}),
                      ("train:   3%|          | 20/600 [00:17<08:13, 1.18it/s, loss=2.467, data=0.510s]",
                       {"global_step": 20, "rate": 1.18, "postfix": "loss=2.467, data=0.510s"}))),
    # The general progress reader: most trainers print an iteration counter and a duration or a rate on one line
    # (`iter 120: loss 3.2, time 350.2ms, mfu 41%`, `step 00004/21400 | loss: 8.9 | dt: 989.44ms | tok/sec: 529,882`,
    # `Epoch [1][50/500] lr: 0.02, time: 0.512, data_time: 0.301`, `Epoch 0, batch 10, ...`, `80 images/sec: 37.5`,
    # `Trained 904 steps, 0:10:02 elapsed`), so they give step times without a kind of their own. It reads only lines
    # no anchor claimed; a counter without a duration or rate still counts when the line has a timestamp.
    # Named numbers come in any order and with any separator (`:`, `=`, space, `|`, `,`); a cumulative time
    # (`train_time:467422ms`) gives per-step times by difference (run_model.fill_step_times), a running average
    # (`step_avg:144.6ms`) where no difference can be taken.
    LineKind("progress", "steps", (), "",
             {"global_step": I, "total_steps": I, "step_time_ms": F, "step_time_s": F, "step_hms": S,
              "interval_steps": I, "samples_per_sec": F, "tokens_per_sec": F, "data_time_s": F, "loss": F,
              "cum_time": S, "avg_time": S, "iter_per_s": F, "s_per_iter": F, "mfu_pct": F, "tflops": F,
              "mem": S, "other": S},
             field_patterns={
                 "global_step": (r"Epoch \[\d+\]\[(\d+)/",
                                 r"(?:^|[^\w/.])(?:[Ii]ter(?:ation)?|[Ss]tep|[Bb]atch)[\s:=#]*(\d+)\b",
                                 r"\bglobal[_ ]step[\s:=#]*(\d+)\b",
                                 r"^\s*(\d+)\s+(?:images|samples)/sec"),
                 "cum_time": r"(?:^|[\s|,(])(?:train_time|training_time|total_time|elapsed_time|time_elapsed|"
                             r"wall_time|elapsed)[\s:=]*" + DUR,
                 "avg_time": r"(?:^|[\s|,(])(?:step_avg|avg_step_time|step_time_avg|avg_iter_time|iter_time_avg|"
                             r"time_avg|avg_time)[\s:=]*" + DUR,
                 "iter_per_s": r"(" + NUM + r")\s*it/s\b",
                 "s_per_iter": r"(" + NUM + r")\s*s/it\b",
                 "mfu_pct": r"\b(?:mfu|MFU)[\s:=]*(" + NUM + r")\s*%?",
                 "tflops": r"(?:TFLOPs|tflops|TFLOPS)(?:/s)?(?: per GPU)?[\s:=]*(" + NUM + ")",
                 "mem": r"\b(?:max_mem|peak_mem|mem|memory|max_memory_allocated|max_allocated)(?:\(GiB\)|_gb|_GB)?"
                        r"[\s:=]*(" + NUM + r"\s*(?:GB|GiB|MB|MiB))\b",
                 "other": r"^(.*)$",  # the whole line: extract.py keeps the named numbers no column reads
                 "total_steps": (r"Epoch \[\d+\]\[\d+/(\d+)\]",
                                 r"(?:^|[^\w/.])(?:[Ii]ter(?:ation)?|[Ss]tep)[\s:=#]*\d+\s*/\s*(\d+)"),
                 "step_time_ms": r"(?:^|[\s|,(])(?:time|dt|step_time|iter_time|batch_time)[\s:=]*(" + NUM + r")\s*ms\b",
                 "step_time_s": r"(?:^|[\s|,(])(?:time|dt|step_time|iter_time|batch_time)[\s:=]*(" + NUM
                                + r")\s*(?:s\b|sec\b|,|\||$|\s)",
                 "step_hms": (r"(?:^|[\s|,(])time\s*:\s*(\d+:\d\d:\d\d(?:\.\d+)?)",
                              r"(\d+:\d\d:\d\d(?:\.\d+)?) elapsed"),
                 "interval_steps": r"(?:^|\s)(\d+) (?:steps|iterations|batches)\b",
                 "samples_per_sec": (r"(?:samples|sample|images|imgs|img|seqs)/s(?:ec)?[\s:=]*(" + NUM + ")",
                                     r"(" + NUM + r")\s*(?:samples|images)/s"),
                 "tokens_per_sec": r"(?:tok(?:en)?s?/s(?:ec)?|tokens per second)[\s:=]*(" + NUM + ")",
                 "data_time_s": r"data_time[\s:=]*(" + NUM + ")",
                 "loss": r"\b[Ll]oss[\s:=]*(" + NUM + ")"},
             # A bare `time: 3.2` needs a counter beside it (an eval or load time is not a step); an H:MM:SS
             # duration and a rate are specific enough alone.
             required_any=(("global_step", "step_time_ms"), ("global_step", "step_time_s"), ("step_hms",),
                           ("samples_per_sec",), ("tokens_per_sec",), ("global_step", "ts"),
                           ("global_step", "cum_time"), ("global_step", "avg_time"), ("global_step", "iter_per_s"),
                           ("global_step", "s_per_iter")),
             prefilter=r"[Ii]ter|[Ss]teps?\b|[Bb]atch|Epoch|/sec|/s\b|elapsed|time ?:",
             samples=(
                 ("step:1241/3242 train_loss:3.4251 train_time:179452ms step_avg:144.84ms",
                  {"global_step": 1241, "total_steps": 3242, "cum_time_s": 179.452, "avg_step_time_s": 0.14484}),
                 ("iter 120: loss 3.2112, time 350.21ms, mfu 41.20%", {"global_step": 120, "step_time_s": 0.35021}),
                 ("step 00004/21400 | loss: 8.912 | lrm: 1.00 | dt: 989.44ms | tok/sec: 529,882 | mfu: 48.1",
                  {"global_step": 4, "total_steps": 21400, "step_time_s": 0.98944, "tokens_per_sec": 529882.0,
                   "mfu": 0.481, "other": "lrm=1.00"}),
                 ("iter 300 | loss 2.1 | time 412.5ms | peak_mem 61.3GB | tflops 187.2",
                  {"step_time_s": 0.4125, "max_mem_alloc_gb": 61.3, "tflops": 187.2}),
                 ("Epoch [3][50/500]\tlr: 2.000e-02, eta: 1:02:11, time: 0.512, data_time: 0.301, loss: 1.21",
                  {"global_step": 50, "total_steps": 500, "step_time_s": 0.512, "data_time_s": 0.301}),
                 ("[train] global_step=12 loss=6.9344 elapsed=2.4s", {"global_step": 12, "cum_time_s": 2.4}),
                 ("Step 12 | loss 3.1 | 2.5 it/s", {"global_step": 12, "step_time_s": 0.4}),
                 ("Trained 910 steps, 0:10:51 elapsed (84.6% computing time)",
                  {"interval_steps": 910, "step_time_s": 651.0 / 910}),
             )),
    # ---- timers (§1.8); names normalised forward->fwd, backward->bwd afterwards ----------------------------
    # `time (ms) | <name>: <ms> | ...`: names vary by version and stage, so timers.py maps them per line shape.
    LineKind("ds_timers", "timers", ("time (ms) |",), "", {}, after="time (ms) |",
             samples=(("[2023-06-01 10:00:05,123] [INFO] [logging.py:96:log_dist] [Rank 0] time (ms) | fwd_microstep:"
                       " 120.45 | bwd_microstep: 240.90 | bwd_inner_microstep: 230.70 | bwd_allreduce_microstep:"
                       " 10.20 | step_microstep: 30.12",
                       {"microstep": True, "fwd": 120.45, "bwd": 240.9, "step": 30.12}),)),
    # ---- memory (§1.4) -------------------------------------------------------------------------------------
    LineKind("ds_memory", "memory", ("Max_MA ",),
             r"MA (?P<ma_gb>" + NUM + r") GB\s+Max_MA (?P<max_ma_gb>" + NUM + r") GB\s+CA (?P<ca_gb>" + NUM
             + r") GB\s+Max_CA (?P<max_ca_gb>" + NUM + r") GB",
             {"ma_gb": F, "max_ma_gb": F, "ca_gb": F, "max_ca_gb": F}, required="ma_gb",
             samples=(("MA 0.38 GB         Max_MA 0.38 GB         CA 0.38 GB         Max_CA 0 GB ",
                       {"ma_gb": 0.38, "max_ma_gb": 0.38, "ca_gb": 0.38, "max_ca_gb": 0.0}),)),
    # Megatron: `[Rank 0] (after 20 iterations) memory (MB) | allocated: X | max allocated: Y | reserved: Z |
    # max reserved: W` (MB of 2**20 bytes, like DeepSpeed's GB of 2**30).
    LineKind("megatron_memory", "memory", ("memory (MB) |",),
             r"allocated: (?P<ma_mb>" + NUM + r") \| max allocated: (?P<max_ma_mb>" + NUM + r") \| reserved: (?P<ca_mb>"
             + NUM + r") \| max reserved: (?P<max_ca_mb>" + NUM + r")",
             {"ma_mb": F, "max_ma_mb": F, "ca_mb": F, "max_ca_mb": F}, required="ma_mb",
             samples=(("[Rank 0] (after 10 iterations) memory (MB) | allocated: 10240.5 | max allocated: 20480.0 |"
                       " reserved: 22528.0 | max reserved: 22528.0",
                       {"ma_mb": 10240.5, "max_ma_mb": 20480.0, "ca_mb": 22528.0, "max_ca_mb": 22528.0}),)),
    # ---- Megatron-LM's straggler report (`--log-straggler`; reference/goodput_stragglers.md) ---------------------
    # `... | MnRtt/Rnk: 3425.12ms/5 | MxRtt/Rnk: 3573.33ms/2 | MnPwr/Rnk: 601.00W/3 | ... | MxEtpt/Rnk: 301.2TF/0`;
    # each metric is looked for on its own (versions add metrics), with or without its unit.
    LineKind("megatron_straggler", "rank_extremes", ("/Rnk: ",), "", _STRAGGLER_FIELDS,
             field_patterns=_STRAGGLER_PATTERNS, required_any=tuple((f"{m}_min{u}", f"{m}_max{u}")
                                                                    for m, u, _ in STRAGGLER_METRICS),
             samples=(("[2024-06-01 10:00:00] 1717236000.000 | MnRtt/Rnk: 3425.12ms/5 | MxRtt/Rnk: 4573.33ms/2 | "
                       "MnPwr/Rnk: 601.00W/2 | MxPwr/Rnk: 699.00W/0 | MnTmp/Rnk: 55.00C/1 | MxTmp/Rnk: 81.00C/2 | "
                       "MnUtl/Rnk: 97.00%/2 | MxUtl/Rnk: 100.00%/1 | MnClk/Rnk: 1410.00MHz/2 | "
                       "MxClk/Rnk: 1980.00MHz/3 | MnDRtt/Rnk: 12.01ms/4 | MxDRtt/Rnk: 14.70ms/6 | "
                       "MnEtpt/Rnk: 301.20TF/2 | MxEtpt/Rnk: 389.55TF/0",
                       {"rtt_min_ms": 3425.12, "rtt_min_rank": 5, "rtt_max_ms": 4573.33, "rtt_max_rank": 2,
                        "clock_min_mhz": 1410.0, "clock_min_rank": 2, "data_rtt_max_ms": 14.7, "data_rtt_max_rank": 6,
                        "etpt_min_tf": 301.2, "etpt_min_rank": 2}),
                      ("INFO:megatron.core.utils:MnRtt/Rnk: 88.5/3 | MxRtt/Rnk: 120.25/7",
                       {"rtt_min_ms": 88.5, "rtt_min_rank": 3, "rtt_max_ms": 120.25, "rtt_max_rank": 7}))),
    # `^^^^ Bottom 4 Ranks with lowest  Etpt(TF): 296.02/1, 296.17/7, 296.26/2, 296.47/0,` and `^^^^ Top    4 Ranks
    # with highest Etpt(TF): ...` (`--straggler-minmax-count N`)
    LineKind("megatron_straggler_minmax", "rank_extremes", ("Ranks with lowest", "Ranks with highest"), "",
             {"low_etpt_ranks": S, "high_etpt_ranks": S},
             field_patterns={"low_etpt_ranks": r"Ranks with lowest\s+Etpt[^:]*:\s*(.+?)\s*$",
                             "high_etpt_ranks": r"Ranks with highest\s+Etpt[^:]*:\s*(.+?)\s*$"},
             required_any=(("low_etpt_ranks",), ("high_etpt_ranks",)),
             samples=(("^^^^ Bottom 4 Ranks with lowest  Etpt(TF): 296.02/1, 296.17/7, 296.26/2, 296.47/0,",
                       {"low_etpt_ranks": "296.02/1, 296.17/7, 296.26/2, 296.47/0,"}),
                      ("^^^^ Top    2 Ranks with highest Etpt(TF): 389.20/4, 390.00/3,",
                       {"high_etpt_ranks": "389.20/4, 390.00/3,"}),
                      ("3: [2024-06-01 10:00:00] ^^^^ Bottom 2 Ranks with lowest  Etpt (TF): 296.02/1, 296.17/7",
                       {"low_etpt_ranks": "296.02/1, 296.17/7"}))),
    LineKind("ds_cpu_memory", "cpu_memory", ("CPU Virtual Memory:",),
             r"CPU Virtual Memory:\s+used = (?P<cpu_used_gb>" + NUM + r") GB, percent = (?P<cpu_percent>" + NUM + r")%",
             {"cpu_used_gb": F, "cpu_percent": F}, required="cpu_used_gb",
             samples=(("CPU Virtual Memory:  used = 1.21 GB, percent = 5.1%",
                       {"cpu_used_gb": 1.21, "cpu_percent": 5.1}),)),
    # ---- comms per-op verbose line (§1.10) ------------------------------------------------------------------
    LineKind("ds_comm_op", "comms", ("comm op: ",),
             r"comm op: (?P<op>\w+)\s*\|\s*time \(ms\):\s*(?P<avg_latency_ms>" + NUM + r")\s*\|\s*msg size:\s*"
             r"(?P<msg_size>[\d.]+ ?[KMGT]?B)\s*\|\s*algbw \(Gbps\):\s*(?P<algbw_gbps>" + NUM
             + r")\s*\|\s*busbw \(Gbps\):\s*(?P<busbw_gbps>" + NUM + r")",
             {"op": S, "avg_latency_ms": F, "msg_size": S, "algbw_gbps": F, "busbw_gbps": F}, required="op",
             samples=(("comm op: all_reduce | time (ms): 12.34 | msg size: 256.0 MB | algbw (Gbps): 165.9 | busbw"
                       " (Gbps): 290.4",
                       {"op": "all_reduce", "avg_latency_ms": 12.34, "msg_size": "256.0 MB", "algbw_gbps": 165.9,
                        "busbw_gbps": 290.4}),)),
    # ---- events (§1.7, §1.9, §1.12, §4, §5) ----------------------------------------------------------------
    LineKind("allocator_flush", "events", ("allocator cache flushes",),
             r"(?P<count>\d+) pytorch allocator cache flushes since last step", {"count": I}, required="count",
             constants={"kind": "allocator_flush"},
             samples=(("[2023-06-01 10:00:05,123] [WARNING] [stage3.py:1850:step] 4 pytorch allocator cache flushes"
                       " since last step. this happens when there is high memory pressure and is detrimental to"
                       " performance.",
                       {"count": 4, "kind": "allocator_flush"}),)),
    # The same warning's last sentence, where a paste or a wrapped line keeps only its tail (a count of 1).
    LineKind("allocator_flush_tail", "events", ("ranks flush their caches at the same time",),
             r"(?P<detail>ranks flush their caches at the same time)", {"detail": S}, required="detail",
             constants={"kind": "allocator_flush"},
             samples=(("consider adding get_accelerator().empty_cache() calls in your training loop to ensure that "
                       "all ranks flush their caches at the same time", {"kind": "allocator_flush"}),)),
    LineKind("overflow", "events", ("OVERFLOW!",),
             r"OVERFLOW!(?: Rank \d+)? Skipping step\.(?: Attempted loss scale: (?P<value_from>" + NUM
             + r"), reducing to (?P<value_to>" + NUM + r"))?(?P<detail>.*)$",
             {"value_from": F, "value_to": F, "detail": S}, required="detail", constants={"kind": "overflow"},
             samples=(("[2026-11-20 09:00:00,000] [INFO] [loss_scaler.py:183:update_scale] [deepspeed] OVERFLOW! Rank"
                       " 0 Skipping step. Attempted loss scale: 65536, reducing to 32768",
                       {"value_from": 65536.0, "value_to": 32768.0, "detail": "", "kind": "overflow"}),)),
    LineKind("overflow_fp16_optimizer", "events", ("Overflow detected",),
             r"Overflow detected\. Skipping step\. Attempted loss scale: (?P<value_from>" + NUM + r"), reducing to "
             r"(?P<value_to>" + NUM + r")", {"value_from": F, "value_to": F}, required="value_from",
             constants={"kind": "overflow"},
             samples=(("[2023-06-01 10:00:05,123] [INFO] [fused_optimizer.py:344:_update_scale] Overflow detected."
                       " Skipping step. Attempted loss scale: 65536, reducing to 32768",
                       {"value_from": 65536.0, "value_to": 32768.0, "kind": "overflow"}),)),
    LineKind("overflow_iteration", "events", ("Grad overflow on iteration",),
             r"Grad overflow on iteration:? (?P<step>\d+)", {"step": I}, required="step",
             constants={"kind": "overflow"},
             samples=(("Grad overflow on iteration 1234",
                       {"step": 1234, "kind": "overflow"}),)),
    LineKind("loss_scale_change", "events", ("dynamic loss scale from",),
             r"(?P<detail>Reducing|Increasing) dynamic loss scale from (?P<value_from>" + NUM + r") to (?P<value_to>"
             + NUM + r")", {"detail": S, "value_from": F, "value_to": F}, required="value_from",
             constants={"kind": "loss_scale"},
             samples=(("[2023-06-01 10:00:05,123] [INFO] [loss_scaler.py:183:update_scale] Reducing dynamic loss"
                       " scale from 65536 to 32768",
                       {"detail": "Reducing", "value_from": 65536.0, "value_to": 32768.0, "kind": "loss_scale"}),)),
    # ---- how a launch ended (issue 33) ------------------------------------------------------------------------
    # torchrun's failure table (torch/distributed/elastic/multiprocessing/errors): `Root Cause (first observed
    # failure):` then, per failure, `[i]:` and its `time`, `host`, `rank`, `exitcode` lines.
    LineKind("failure_root_cause", "events", ("Root Cause (first observed failure)",), r"(?P<detail>Root Cause)",
             {"detail": S}, required="detail", constants={"kind": "failure_root_cause"},
             samples=(("Root Cause (first observed failure):", {"kind": "failure_root_cause"}),)),
    LineKind("failure_rank", "events", ("(local_rank: ",),
             r"(?:^|[:\]])\s*rank\s*: (?P<failed_rank>\d+) \(local_rank: \d+\)",
             {"failed_rank": I}, required="failed_rank", constants={"kind": "failure_rank"},
             samples=(("  rank      : 1 (local_rank: 1)", {"failed_rank": 1}),)),
    LineKind("failure_host", "events", ("host      : ",), r"(?:^|[:\]])\s*host\s*: (?P<host>\S+)\s*$", {"host": S},
             required="host", constants={"kind": "failure_host"},
             samples=(("  host      : node-3.cluster", {"host": "node-3.cluster"}),)),
    LineKind("failure_exitcode", "events", ("exitcode  : ",),
             r"(?:^|[:\]])\s*exitcode\s*: (?P<code>-?\d+) \(pid: \d+\)\s*(?:\((?P<detail>SIG\w+)\))?",
             {"code": I, "detail": S},
             required="code", constants={"kind": "failure_exitcode"},
             samples=(("  exitcode  : -9 (pid: 29786)  (SIGKILL)", {"code": -9, "detail": "SIGKILL"}),
                      ("  exitcode  : 1 (pid: 29522) ", {"code": 1}))),
    # A collective that timed out: NCCL's watchdog (`Watchdog caught collective operation timeout: WorkNCCL(SeqNum=
    # 5, OpType=ALLREDUCE, ...) ran for 600050 milliseconds`), gloo's `Timed out waiting 10000ms for recv operation`.
    LineKind("comm_timeout", "events", ("Watchdog caught collective operation timeout", "Timed out waiting "),
             r"(?P<detail>(?:Watchdog caught collective operation timeout|Timed out waiting).*?)"
             r"(?:SeqNum=(?P<step>\d+))?(?:, OpType=\w+.*)?$", {"detail": S, "step": I}, required="detail",
             constants={"kind": "comm_timeout"},
             samples=(("[E ProcessGroupGloo.cpp:144] Timed out waiting 1800000ms for recv operation to complete",
                       {"kind": "comm_timeout"}),
                      ("[rank3]:[E ProcessGroupNCCL.cpp:607] [Rank 3] Watchdog caught collective operation timeout: "
                       "WorkNCCL(SeqNum=93, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for "
                       "600073 milliseconds before timing out.", {"kind": "comm_timeout"}))),
    # ProcessGroupNCCL's per-rank account at a timeout: `Timeout at NCCL work: 93, last enqueued NCCL work: 93, last
    # completed NCCL work: 92.` (value_from: the last enqueued sequence number, value_to: the last completed one).
    LineKind("nccl_last_work", "events", ("last enqueued NCCL work: ",),
             r"last enqueued NCCL work: (?P<value_from>-?\d+), last completed NCCL work: (?P<value_to>-?\d+)",
             {"value_from": F, "value_to": F}, required="value_from", constants={"kind": "nccl_last_work"},
             samples=(("[rank3]:[E1201 10:30:08.000000 ProcessGroupNCCL.cpp:1834] [PG ID 0 PG GUID 0(default_pg) "
                       "Rank 3] Timeout at NCCL work: 93, last enqueued NCCL work: 93, last completed NCCL work: 92.",
                       {"value_from": 93.0, "value_to": 92.0}),)),
    # The peer went away under a collective: fallout of another rank's crash or kill.
    LineKind("peer_lost", "events", ("Connection closed by peer", "Connection reset by peer",
                                     "remote process exited or there was a network error"),
             r"(?P<detail>.+)$", {"detail": S}, required="detail", constants={"kind": "peer_lost"},
             samples=(("[E ProcessGroupGloo.cpp:144] Rank 1: Connection closed by peer [10.0.0.2]:34567",
                       {"kind": "peer_lost"}),)),
    # Slurm's end of a job or step: `*** JOB 123 ON node01 CANCELLED AT 2024-01-01T10:00:00 DUE TO TIME LIMIT ***`.
    LineKind("job_cancelled", "events", (" CANCELLED AT ",),
             r"\*\*\* (?:JOB|STEP) \S+ ON \S+ CANCELLED AT \S+(?: DUE TO (?P<detail>[A-Z ]+?))? \*\*\*",
             {"detail": S}, required="", constants={"kind": "job_cancelled"},
             samples=(("slurmstepd: error: *** JOB 1234 ON gpu-node-1 CANCELLED AT 2024-05-01T10:00:00 DUE TO TIME "
                       "LIMIT ***", {"detail": "TIME LIMIT"}),)),
    # LSF's job report in the `*.o<jobid>` file: `TERM_RUNLIMIT: job killed after reaching LSF run time limit.`
    LineKind("lsf_term", "events", ("TERM_",), r"TERM_[A-Z_]+: job killed (?P<detail>[^.]+)", {"detail": S},
             required="detail", constants={"kind": "job_cancelled"},
             samples=(("TERM_RUNLIMIT: job killed after reaching LSF run time limit.",
                       {"kind": "job_cancelled", "detail": "after reaching LSF run time limit"}),
                      ("TERM_OWNER: job killed by owner.", {"detail": "by owner"}))),
    # The host's out-of-memory killer, as Slurm's cgroup plugin and the kernel report it (SIGKILL to the biggest
    # process: a rank, or a data loader worker).
    LineKind("host_oom", "events", ("oom-kill event", "oom_kill event", "Out of memory: Killed process"),
             r"(?:Detected (?P<count>\d+) oom[-_]kill event|Out of memory: Killed process (?P<code>\d+))",
             {"count": I, "code": I}, required="", constants={"kind": "host_oom"},
             samples=(("slurmstepd: error: Detected 1 oom-kill event(s) in StepId=4242.0. Some of your processes may "
                       "have been killed by the cgroup out-of-memory handler.", {"kind": "host_oom", "count": 1}),
                      ("[Tue Dec  1 10:02:11 2026] Out of memory: Killed process 31337 (python) total-vm:98765432kB",
                       {"kind": "host_oom", "code": 31337}))),
    # The launcher itself was told to stop (a scheduler's time limit, `timeout`, Ctrl-C).
    LineKind("signal_received", "events", ("got signal: ", "death signal, shutting down workers"),
             r"(?:got signal: (?P<code>\d+)|Received (?:Signals\.)?(?P<detail>\w+) death signal)",
             {"code": I, "detail": S},
             required="", constants={"kind": "signal_received"},
             samples=(("W1203 07:22:00.566000 29823 torch/distributed/elastic/agent/server/api.py:753] Received 15 "
                       "death signal, shutting down workers", {"detail": "15"}),
                      ("W1203 07:22:01.100000 29823 torch/distributed/elastic/agent/server/api.py:722] Received "
                       "Signals.SIGTERM death signal, shutting down workers", {"detail": "SIGTERM"}))),
    LineKind("ds_launcher_signal", "events", ("Main process received SIG",),
             r"Main process received (?P<detail>SIG[A-Z]+)", {"detail": S}, required="detail",
             constants={"kind": "signal_received"},
             samples=(("[2022-10-31 11:03:54,132] [INFO] [launch.py:295:sigkill_handler] Main process received "
                       "SIGTERM, exiting", {"kind": "signal_received", "detail": "SIGTERM"}),)),
    # Python's Ctrl-C: a traceback ending in a bare `KeyboardInterrupt` (where ranks' output interleaves, with
    # another rank's text after it on the line).
    LineKind("keyboard_interrupt", "events", ("KeyboardInterrupt",), r"^\s*(?P<detail>KeyboardInterrupt)",
             {"detail": S}, required="detail", constants={"kind": "signal_received", "detail": "SIGINT"},
             samples=(("KeyboardInterrupt", {"kind": "signal_received", "detail": "SIGINT"}),
                      ("    KeyboardInterruptsampled_indices = torch.multinomial(prob_dist, reserved_length)",
                       {"detail": "SIGINT"}))),
    # Python's unraisable-exception hook (`Exception ignored in: <function ...>`, `Exception ignored in atexit
    # callback`): the traceback after it ends in an error that stopped nothing.
    LineKind("exception_ignored", "events", ("Exception ignored in",), r"(?P<detail>Exception ignored in.*)$",
             {"detail": S}, required="detail", constants={"kind": "exception_ignored"},
             samples=(("Exception ignored in atexit callback: <function matmul_ext_update_autotune_table at 0x7f>",
                       {"kind": "exception_ignored"}),)),
    LineKind("oom", "events", ("OutOfMemoryError", "out of memory", "CUDA OOM"),
             r"(?P<detail>[\w.]*(?:OutOfMemoryError|out of memory|CUDA OOM).*)$", {"detail": S},
             required="detail", constants={"kind": "oom"},
             samples=(("torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB (GPU 0; 79.15 GiB"
                       " total capacity; 70.1 GiB already allocated; 1.2 GiB free; 75.3 GiB reserved in total by"
                       " PyTorch)",
                       {"kind": "oom"}),)),
    LineKind("nccl_warn", "events", ("NCCL WARN",), r"NCCL WARN (?P<detail>.*)$", {"detail": S}, required="detail",
             constants={"kind": "nccl_warn"},
             samples=(("node-1:12345:12399 [0] include/socket.h:423 NCCL WARN Net : Connect to 10.0.0.2<55123> failed"
                       " : Connection refused",
                       {"detail": "Net : Connect to 10.0.0.2<55123> failed : Connection refused",
                        "kind": "nccl_warn"}),)),
    LineKind("timeout", "events", ("collective operation timeout", "timed out", "Timed out", "DistNetworkError"),
             r"(?P<detail>.+)$", {"detail": S}, required="detail", constants={"kind": "timeout"},
             samples=(("torch.distributed.DistNetworkError: The client socket has timed out after 900s while trying"
                       " to connect to (node-0, 29500).",
                       {"kind": "timeout"}),)),
    LineKind("traceback", "events", ("Traceback (most recent call last)",), r"(?P<detail>Traceback.*)$",
             {"detail": S}, required="detail", constants={"kind": "traceback"},
             samples=(("[rank0]: Traceback (most recent call last):",
                       {"detail": "Traceback (most recent call last):", "kind": "traceback"}),)),
    LineKind("exception", "events", ("Error: ", "Exception: "),
             r"(?:^|: )(?:\[rank\d+\]: )?(?P<detail>[A-Za-z_][\w.]*(?:Error|Exception): .*)$", {"detail": S},
             required="detail", constants={"kind": "exception"},
             samples=(("[rank0]: RuntimeError: [/__w/pytorch/pytorch/third_party/gloo/gloo/transport/tcp/unbound_buffe"
                       "r.cc:78] Timed out waiting 10000ms for recv operation to complete",
                       {"kind": "comm_timeout"}),)),
    # Megatron: `saving checkpoint at iteration      10 to /path ...` (the save's start; `successfully saved
    # checkpoint from iteration 10 to ...` its end, which is no save of its own).
    LineKind("checkpoint_save", "events",
             ("Saving model checkpoint", "is about to be saved!", "[Torch] Saved ", "checkpoint saved ",
              "saving checkpoint to ", "saving checkpoint at iteration", "Saving checkpoint at ",
              "Writing model shards: 100%"),
             r"(?P<detail>(?:Saving model checkpoint|\[Torch\] Checkpoint|\[Torch\] Saved|\w+ checkpoint saved|"
             r"saving checkpoint to |saving checkpoint at iteration|Saving checkpoint at |"
             r"Writing model shards: 100%).*)$",
             {"detail": S}, required="detail", constants={"kind": "checkpoint_save"},
             samples=(("[2026-06-24 15:09:43.548480] saving checkpoint at iteration      10 to /scratch/ckpt",
                       {"kind": "checkpoint_save"}),
                      ("Saving checkpoint at step 100...", {"kind": "checkpoint_save"}),
                      # transformers 5's save_pretrained draws this bar at every save, where INFO's `Saving model
                      # checkpoint to` is not printed (the Trainer's default log level is WARNING)
                      ("Writing model shards: 100%|██████████| 1/1 [00:00<00:00,  1.74it/s]",
                       {"kind": "checkpoint_save"}))),
    # nanoGPT-style evaluation lines: `step 2000: train loss 2.91, val loss 2.95`.
    LineKind("eval_val_loss", "events", (", val loss ",), r"(?P<detail>\S.*, val loss " + NUM + r")",
             {"detail": S}, required="detail", constants={"kind": "eval"},
             samples=(("step 500: train loss 2.8123, val loss 2.9345",
                       {"detail": "step 500: train loss 2.8123, val loss 2.9345", "kind": "eval"}),)),
    LineKind("eval_start", "events", ("***** Running Evaluation *****",), r"(?P<detail>Running Evaluation)",
             {"detail": S}, required="detail", constants={"kind": "eval"},
             samples=(("***** Running Evaluation *****",
                       {"detail": "Running Evaluation", "kind": "eval"}),)),
    LineKind("eval_result", "events", ("{'eval_loss'",), "", {"value_from": F, "value_to": F},
             field_patterns={"value_from": _hf_key("eval_runtime"), "value_to": _hf_key("eval_loss")},
             required="value_from", constants={"kind": "eval_result"},
             samples=(("\u001b[A{'eval_loss': '6.838', 'eval_runtime': '0.5365', 'eval_samples_per_second': '119.3',"
                       " 'eval_steps_per_second': '7.456', 'epoch': '0.07812'}",
                       {"value_from": 0.5365, "value_to": 6.838, "kind": "eval_result"}),)),
    LineKind("launcher_exit", "events", ("exits with return code", "exits successfully", "failed (exitcode:"),
             r"(?:exits with return code = (?P<code>-?\d+)|exits successfully|failed \(exitcode: (?P<code2>-?\d+)\))",
             {"code": I, "code2": I}, required="", constants={"kind": "launcher_exit"},
             samples=(("[2026-03-25 15:51:10,265] [INFO] [launch.py:367:main] Process 4042576 exits successfully.",
                       {"kind": "launcher_exit"}),
                      ("[2024-05-01 10:00:00,000] [ERROR] [launch.py:321:sigkill_handler] ['python', 'train.py'] "
                       "exits with return code = 1", {"code": 1}),
                      ("E1203 07:21:42.120000 29506 torch/distributed/elastic/multiprocessing/api.py:869] failed "
                       "(exitcode: 1) local_rank: 1 (pid: 29511) of binary: /usr/bin/python", {"code": 1}))),
    LineKind("dataloader_warning", "events", ("does not have many workers", "This DataLoader will create"),
             r"(?P<detail>.+)$", {"detail": S}, required="detail", constants={"kind": "dataloader_warning"},
             samples=(("/usr/lib/python3/dist-packages/torch/utils/data/dataloader.py:557: UserWarning: This"
                       " DataLoader will create 32 worker processes in total. Our suggested max number of worker in"
                       " current system is 8, which is smaller than what this DataLoader is going to create.",
                       {"kind": "dataloader_warning"}),)),
    LineKind("anomaly_detection", "events", ("Anomaly Detection has been enabled",), r"(?P<detail>.+)$",
             {"detail": S}, required="detail", constants={"kind": "anomaly_detection"},
             samples=(("UserWarning: Anomaly Detection has been enabled. This mode will increase the runtime and"
                       " should only be enabled for debugging.",
                       {"kind": "anomaly_detection"}),)),
    LineKind("profiler_active", "events", ("ActivityProfilerController", "Profiler is enabled"), r"(?P<detail>.+)$",
             {"detail": S}, required="detail", constants={"kind": "profiler"},
             samples=(("STAGE:2023-06-01 10:00:05 12345:12345 ActivityProfilerController.cpp:312] Completed Stage:"
                       " Warm Up",
                       {"kind": "profiler"}),)),
    # The job found no GPU: HF Trainer's CPU AMP backend (chosen only when the device is the CPU), bitsandbytes
    # without CUDA, PyTorch / Lightning saying CUDA is unavailable.
    LineKind("no_gpu", "events",
             ("Using cpu_amp half precision backend", "compiled without GPU support", "CUDA is not available",
              "No CUDA GPUs are available", "GPU available: False", "torch.cuda.is_available() is False",
              "using device:cpu", "using device: cpu", "Using device: cpu", "Using device:cpu"),
             r"(?P<detail>.+)$", {"detail": S}, required="detail", constants={"kind": "no_gpu"},
             samples=(("The installed version of bitsandbytes was compiled without GPU support. 8-bit optimizers,"
                       " 8-bit multiplication, and GPU quantization are unavailable.",
                       {"kind": "no_gpu"}),)),
    LineKind("recompile", "events", ("recompile_limit", "cache_size_limit"), r"(?P<detail>.+)$", {"detail": S},
             required="detail", constants={"kind": "recompile"},
             samples=(("torch._dynamo hit config.recompile_limit (8)",
                       {"detail": "torch._dynamo hit config.recompile_limit (8)", "kind": "recompile"}),)),
    LineKind("gradient_checkpointing_warning", "events", ("torch.utils.checkpoint:",), r"(?P<detail>.+)$",
             {"detail": S}, required="detail", constants={"kind": "gradient_checkpointing"},
             samples=(("/usr/lib/python3/dist-packages/torch/utils/checkpoint.py:460: UserWarning:"
                       " torch.utils.checkpoint: the use_reentrant parameter should be passed explicitly.",
                       {"kind": "gradient_checkpointing"}),)),
    # ---- facts: launcher (§1.2), engine (§1.1, §1.3, §1.5), accelerate (§2), HF (§3), NCCL (§5), versions ---
    LineKind("ds_version", "facts", ("DeepSpeed info: version=",), r"DeepSpeed info: version=(?P<value>[^,\s]+)",
             {"value": S}, required="value", constants={"key": "version.deepspeed"},
             samples=(("[2026-11-29 23:02:57,692] [INFO] [logging.py:123:log_dist] [Rank 0] DeepSpeed info:"
                       " version=0.19.8, git-hash=unknown, git-branch=unknown",
                       {"value": "0.19.8", "key": "version.deepspeed"}),)),
    LineKind("ds_config_world_size", "facts", ("[config.py:",), r"Config mesh_device \S+ world_size = (?P<value>\d+)",
             {"value": S}, required="value", constants={"key": "world_size"},
             samples=(("[2026-11-29 23:02:57,693] [INFO] [config.py:475:__init__] Config mesh_device None world_size"
                       " = 2",
                       {"value": "2", "key": "world_size"}),)),
    LineKind("ds_config_kv", "facts", ("[config.py:",),
             r":print\]\s+(?P<key>[a-z_0-9]+)(?: \.+ | {2,}| )(?P<value>.*?)\s*$", {"key": S, "value": S},
             required="key", constants={"key_prefix": "ds."},
             samples=(("[2026-11-29 23:04:15,062] [INFO] [config.py:678:print]   activation_checkpointing_config  {",
                       {"key": "ds.activation_checkpointing_config", "value": "{"}),)),
    LineKind("ds_dp_world_size", "facts", ("self.dp_world_size=",), r"self\.dp_world_size=(?P<value>\d+)",
             {"value": S}, required="value", constants={"key": "dp_world_size"},
             samples=(("\t self.dp_world_size=2",
                       {"value": "2", "key": "dp_world_size"}),)),
    LineKind("ds_world_info", "facts", ("WORLD INFO DICT:",), r"WORLD INFO DICT: (?P<value>\{.*\})", {"value": S},
             required="value", constants={"key": "launcher.world_info"},
             samples=(("[2026-11-29 23:01:53,333] [INFO] [launch.py:152:main] WORLD INFO DICT: {'localhost': [0, 1]}",
                       {"value": "{'localhost': [0, 1]}", "key": "launcher.world_info"}),)),
    LineKind("ds_nnodes", "facts", ("nnodes=",), r"nnodes=(?P<value>\d+), num_local_procs=\d+",
             {"value": S}, required="value", constants={"key": "launcher.nnodes"},
             samples=(("[2026-11-29 23:01:53,333] [INFO] [launch.py:158:main] nnodes=1, num_local_procs=2, node_rank=0",
                       {"value": "1", "key": "launcher.nnodes"}),)),
    LineKind("ds_dist_world_size", "facts", ("dist_world_size=",), r"dist_world_size=(?P<value>\d+)", {"value": S},
             required="value", constants={"key": "launcher.dist_world_size"},
             samples=(("[2026-11-29 23:01:53,333] [INFO] [launch.py:170:main] dist_world_size=2",
                       {"value": "2", "key": "launcher.dist_world_size"}),)),
    LineKind("ds_cmd", "facts", ("] cmd = ", "cmd = "), r"(?:^|\] |:\s?)cmd = (?P<value>.*)$", {"value": S},
             required="value", constants={"key": "launcher.cmd"},
             samples=(("[2026-11-29 23:01:50,227] [INFO] [runner.py:618:main] cmd = /tmp/rec-venv/bin/python3 -u -m"
                       " deepspeed.launcher.launch --world_info=eyJsb2NhbGhvc3QiOiBbMCwgMV19 --master_addr=127.0.0.1"
                       " --master_port=29500 --enable_each_rank_log=None --log_level=info"
                       " /tmp/diagnose-rec/train_ds.py --deepspeed_config /tmp/diagnose-rec/ds_zero0/ds_config.json"
                       " --steps 40 --ds_log_level info",
                       {"key": "launcher.cmd"}),)),
    LineKind("ds_backend", "facts", ("with backend ",), r"with backend (?P<value>\w+)", {"value": S},
             required="value", constants={"key": "backend"},
             samples=(("[2026-11-29 23:02:01,395] [INFO] [comm.py:908:init_distributed] Initializing TorchBackend in"
                       " DeepSpeed with backend gloo",
                       {"value": "gloo", "key": "backend"}),)),
    LineKind("ds_accelerator", "facts", ("Setting ds_accelerator to ",), r"Setting ds_accelerator to (?P<value>\w+)",
             {"value": S}, required="value", constants={"key": "accelerator"},
             samples=(("[2023-06-01 10:00:00,001] [INFO] [real_accelerator.py:161:get_accelerator] Setting"
                       " ds_accelerator to cuda (auto detect)",
                       {"value": "cuda", "key": "accelerator"}),)),
    LineKind("ds_zero_stage", "facts", (" ZeRO stage ",),
             r"Creating \S+ ZeRO stage (?P<value>\d) optimizer", {"value": S},
             required="value", constants={"key": "zero.stage_created"},
             samples=(("[2026-11-29 23:05:06,820] [INFO] [logging.py:123:log_dist] [Rank 0] Creating torch.float32"
                       " ZeRO stage 1 optimizer",
                       {"value": "1", "key": "zero.stage_created"}),)),
    # ZeRO-3's own banners name the stage where no config is printed.
    LineKind("ds_stage3_init", "facts", ("Stage 3 initialize beginning", "Parameter Offload"),
             r"(?P<value>Stage 3 initialize beginning|Parameter Offload)", {"value": S}, required="value",
             constants={"key": "zero.stage3_banner"},
             samples=(("[2023-06-01 10:00:03,100] [INFO] [utils.py:785:see_memory_usage] Stage 3 initialize beginning",
                       {"value": "Stage 3 initialize beginning", "key": "zero.stage3_banner"}),)),
    # mpi_discovery: `Discovered MPI settings of world_rank=11, local_rank=3, world_size=16, ...`
    _fact("ds_mpi_world", ("Discovered MPI settings of ",), r"world_size=(?P<value>\d+)", "mpi.world_size",
          samples=(("[2023-06-01 10:00:00,500] [INFO] [comm.py:637:mpi_discovery] Discovered MPI settings of"
                    " world_rank=0, local_rank=0, world_size=16, master_addr=10.0.0.1, master_port=29500",
                    {"value": "16", "key": "mpi.world_size"}),)),
    _fact("ds_mpi_local", ("Discovered MPI settings of ",), r"local_rank=(?P<value>\d+)", "mpi.local_rank",
          samples=(("[2023-06-01 10:00:00,500] [INFO] [comm.py:637:mpi_discovery] Discovered MPI settings of"
                    " world_rank=0, local_rank=3, world_size=16, master_addr=10.0.0.1, master_port=29500",
                    {"value": "3", "key": "mpi.local_rank"}),)),
    LineKind("ds_cpu_offload", "facts", ("CPU Offload: ",), r"CPU Offload: (?P<value>True|False)", {"value": S},
             required="value", constants={"key": "zero.cpu_offload"},
             samples=(("[2026-11-29 23:05:06,821] [INFO] [stage_1_and_2.py:238:__init__] CPU Offload: False",
                       {"value": "False", "key": "zero.cpu_offload"}),)),
    LineKind("ds_optimizer", "facts", ("Basic Optimizer = ", "Final Optimizer = "),
             r"DeepSpeed (?P<key>Basic|Final) Optimizer = (?P<value>\w+)", {"key": S, "value": S}, required="value",
             constants={"key_prefix": "optimizer."},
             samples=(("[2026-11-29 23:04:15,054] [INFO] [logging.py:123:log_dist] [Rank 0] DeepSpeed Basic Optimizer"
                       " = FusedAdam",
                       {"key": "optimizer.Basic", "value": "FusedAdam"}),)),
    LineKind("cpu_adam", "facts", ("Adam Optimizer #",), r"Adam Optimizer #\d+ is created with (?P<value>\S+) arithmetic",
             {"value": S}, required="value", constants={"key": "optimizer.cpu_adam_simd"},
             samples=(("Adam Optimizer #0 is created with AVX2 arithmetic capability.",
                       {"value": "AVX2", "key": "optimizer.cpu_adam_simd"}),)),
    LineKind("flops_profiler_enabled", "facts", ("Flops Profiler Enabled: ",),
             r"Flops Profiler Enabled: (?P<value>True|False)", {"value": S}, required="value",
             constants={"key": "flops_profiler.enabled"},
             samples=(("[2026-11-29 23:02:57,760] [INFO] [logging.py:123:log_dist] [Rank 0] DeepSpeed Flops Profiler"
                       " Enabled: False",
                       {"value": "False", "key": "flops_profiler.enabled"}),)),
    LineKind("accelerate_env", "facts", ("Distributed environment: ",),
             r"Distributed environment: (?P<value>\w+)", {"value": S},
             required="value", constants={"key": "accelerate.distributed_type"},
             samples=(("Distributed environment: MULTI_GPU  Backend: nccl",
                       {"value": "MULTI_GPU", "key": "accelerate.distributed_type"}),)),
    LineKind("accelerate_num_processes", "facts", ("Num processes: ",), r"Num processes: (?P<value>\d+)",
             {"value": S}, required="value", constants={"key": "accelerate.num_processes"},
             samples=(("Num processes: 8",
                       {"value": "8", "key": "accelerate.num_processes"}),)),
    # `horovodrun --check-build`: NCCL is listed only under "Available Tensor Operations", so its box says whether
    # Horovod can all-reduce GPU tensors with NCCL at all.
    _fact("horovod_nccl", ("[X] NCCL", "[ ] NCCL"), r"\[(?P<value>[X ])\] NCCL\s*$", "horovod.nccl",
          samples=(("    [ ] NCCL",
                    {"value": " ", "key": "horovod.nccl"}),)),
    # ---- plain PyTorch, torchelastic, Lightning, Megatron ---------------------------------------------------
    # c10d: `Rank 2: Completed store-based barrier for key:store_based_barrier_key:1 with 16 nodes.` (its "nodes"
    # are processes).
    _fact("torch_barrier", ("Completed store-based barrier",), r"with (?P<value>\d+) nodes",
          "torch.barrier_world_size",
          samples=(("INFO:torch.distributed.distributed_c10d:Rank 0: Completed store-based barrier for"
                    " key:store_based_barrier_key:1 with 16 nodes.",
                    {"value": "16", "key": "torch.barrier_world_size"}),)),
    # torchelastic's rank assignment block: group_world_size (agents = nodes), local_world_size, global_world_sizes.
    _fact("elastic_nodes", ("group_world_size=",), r"group_world_size=(?P<value>\d+)", "elastic.nodes",
          samples=(("  group_world_size=2",
                    {"value": "2", "key": "elastic.nodes"}),)),
    _fact("elastic_local", ("local_world_size=",), r"local_world_size=(?P<value>\d+)", "elastic.local_world_size",
          samples=(("  local_world_size=8",
                    {"value": "8", "key": "elastic.local_world_size"}),)),
    _fact("elastic_world", ("global_world_sizes=[",), r"global_world_sizes=\[(?P<value>\d+)", "elastic.world_size",
          samples=(("  global_world_sizes=[16, 16, 16, 16, 16, 16, 16, 16]",
                    {"value": "16", "key": "elastic.world_size"}),)),
    # Lightning: `Initializing distributed: GLOBAL_RANK: 0, MEMBER: 1/4`.
    _fact("lightning_member", ("Initializing distributed: GLOBAL_RANK:",), r"MEMBER: \d+/(?P<value>\d+)",
          "job.world_size",
          samples=(("Initializing distributed: GLOBAL_RANK: 0, MEMBER: 1/8",
                    {"value": "8", "key": "job.world_size"}),)),
    # The HF examples' and LLaMA-Factory's per-process line: `Process rank: 1, device: cuda:1, n_gpu: 1, ...` (newer
    # LLaMA-Factory: `Process rank: 1, world size: 2, device: cuda:1, ...`): the process's local GPU index.
    _fact("process_device", ("Process rank: ",),
          r"Process rank: -?\d+, (?:world size: \d+, )?device: cuda:(?P<value>\d+)", "process.cuda_device",
          samples=(("[INFO|2024-11-26 22:07:06] parser.py:355 >> Process rank: 1, device: cuda:1, n_gpu: 1, distributed"
                    " training: True, compute dtype: torch.bfloat16",
                    {"value": "1", "key": "process.cuda_device"}),
                   ("Process rank: 0, world size: 2, device: cuda:0, distributed training: True, compute dtype:"
                    " torch.bfloat16", {"value": "0", "key": "process.cuda_device"}))),
    # The HF Trainer's summary dict: its samples and optimizer steps per second, whose ratio is the samples an optimizer
    # step takes (facts.py divides it by micro-batch x accumulation for the world size).
    _fact("hf_summary_rates", ("{'train_runtime'",),
          r"(?P<value>'train_samples_per_second': '?[\d.]+'?, 'train_steps_per_second': '?[\d.]+)",
          "hf.summary_rates",
          samples=(("{'train_runtime': 1810.426, 'train_samples_per_second': 0.8, 'train_steps_per_second': 0.1,"
                    " 'train_loss': 0.48589169682718775, 'epoch': 1.0}",
                    {"value": "'train_samples_per_second': 0.8, 'train_steps_per_second': 0.1",
                     "key": "hf.summary_rates"}),)),
    # Any world size a script prints: `world_size=N` (`trainer.world_size=1`, `dist.get_world_size()`),
    # `world_size: 8` (ms-swift's `rank: 0, local_rank: 0, world_size: 8`), `World size: 4`.
    LineKind("world_size_print", "facts",
             ("world_size=", "world_size: ", "World size: ", "world size: ", "World Size: ", "world_size = ",
              "World size = ", "WORLD SIZE: "),
             r"(?i)\bworld[_ ]size\s*[:=]\s*(?P<value>\d+)\b", {"value": S}, required="value",
             constants={"key": "job.world_size"},
             samples=(("[INFO:swift] rank: 0, local_rank: 0, world_size: 8, local_world_size: 8",
                       {"value": "8", "key": "job.world_size"}),
                      ("World size: 4", {"value": "4"}), ("trainer.world_size=1", {"value": "1"}))),
    # A node count a launch script or job echoes in words: `Training: llama3-1b ... nodes=8 gbs=288`,
    # `num_nodes: 2`, `Number of nodes: 4` (the launcher's tier, like NUM_NODES=).
    LineKind("nodes_print", "facts", (" nodes=", " nodes: ", "num_nodes=", "num_nodes: ", "Number of nodes: ",
                                      "Number of nodes = "),
             r"(?i)(?:^|[\s,(])(?:num_|number of )?nodes\s*[:=]\s*(?P<value>\d+)\b", {"value": S},
             required="value", constants={"key": "topology.NUM_NODES"},
             samples=(("Training: llama3-1b full-attn fineweb40B  nodes=14  gbs=336  steps=15550",
                       {"value": "14", "key": "topology.NUM_NODES"}), ("num_nodes: 2", {"value": "2"}))),
    # Megatron: `using world size: 64, data-parallel-size: 1, tensor-model-parallel size: 4, pipeline-model-parallel
    # size: 16` (older: `using world size: 64 and model-parallel size: 4`), one row per number.
    _fact("megatron_world", ("using world size: ",), r"using world size: (?P<value>\d+)", "megatron.world_size",
          samples=(("using world size: 128, data-parallel-size: 4, context-parallel size: 1, tensor-model-parallel"
                    " size: 4, pipeline-model-parallel size: 8 ",
                    {"value": "128", "key": "megatron.world_size"}),)),
    _fact("megatron_dp", ("using world size: ",), r"data-parallel-size: (?P<value>\d+)", "megatron.data_parallel",
          samples=(("using world size: 128, data-parallel-size: 4, context-parallel size: 1, tensor-model-parallel"
                    " size: 4, pipeline-model-parallel size: 8 ",
                    {"value": "4", "key": "megatron.data_parallel"}),)),
    _fact("megatron_tp", ("using world size: ",),
          r"(?:tensor-model-parallel size|and model-parallel size): (?P<value>\d+)", "megatron.tensor_parallel",
          samples=(("using world size: 128, data-parallel-size: 4, context-parallel size: 1, tensor-model-parallel"
                    " size: 4, pipeline-model-parallel size: 8 ",
                    {"value": "4", "key": "megatron.tensor_parallel"}),)),
    _fact("megatron_pp", ("using world size: ",), r"pipeline-model-parallel size: (?P<value>\d+)",
          "megatron.pipeline_parallel",
          samples=(("using world size: 128, data-parallel-size: 4, context-parallel size: 1, tensor-model-parallel"
                    " size: 4, pipeline-model-parallel size: 8 ",
                    {"value": "8", "key": "megatron.pipeline_parallel"}),)),
    # PEFT's `print_trainable_parameters()` (LoRA runs; LLaMA-Factory and TRL print it): the model's whole count after
    # the trainable share, which the HF Trainer's `Number of trainable parameters` is.
    _fact("peft_params", ("trainable params: ",), r"trainable params: [0-9,]+ \|\| all params: (?P<value>[0-9,]+)",
          "peft.all_params",
          samples=(("trainable params: 18,739,200 || all params: 6,929,104,896 || trainable%: 0.2704",
                    {"value": "6,929,104,896", "key": "peft.all_params"}),)),
    # Megatron's count of the first model-parallel rank's parameters (`megatron/training/training.py`, `get_model`):
    # the whole model's where tensor and pipeline parallelism are 1 (facts.py decides).
    _fact("megatron_params", ("number of parameters on (tensor, pipeline) model parallel rank (0, 0)",),
          r"model parallel rank \(0, 0\): (?P<value>\d+)", "megatron.params_rank0",
          samples=((" > number of parameters on (tensor, pipeline) model parallel rank (0, 0): 354871296",
                    {"value": "354871296", "key": "megatron.params_rank0"}),)),
    # Megatron's argument dump: `  world_size ...................................... 64` (any key; facts.py reads
    # the ones it knows).
    LineKind("megatron_arg", "facts", (" ....",), r"(?:^|\s)(?P<key>[a-z][a-z0-9_]*) \.{3,} (?P<value>\S.*?)\s*$",
             {"key": S, "value": S}, required="key", constants={"key_prefix": "args."},
             samples=(("  bf16 ............................................ True",
                       {"key": "args.bf16", "value": "True"}),)),
    LineKind("accelerate_mixed_precision", "facts", ("Mixed precision type: ",),
             r"Mixed precision type: (?P<value>\w+)", {"value": S}, required="value",
             constants={"key": "accelerate.mixed_precision"},
             samples=(("Mixed precision type: bf16",
                       {"value": "bf16", "key": "accelerate.mixed_precision"}),)),
    LineKind("accelerate_default", "facts", ("was set to a value of",),
             r"`--(?P<key>\w+)` was set to a value of `'?(?P<value>[^`']*)'?`", {"key": S, "value": S},
             required="key", constants={"key_prefix": "accelerate."},
             samples=(("\t`--num_machines` was set to a value of `1`",
                       {"key": "accelerate.num_machines", "value": "1"}),)),
    LineKind("hf_running_training", "facts", ("***** Running training *****",), r"(?P<value>Running training)",
             {"value": S}, required="value", constants={"key": "hf.running_training"},
             samples=(("[INFO|trainer.py:2313] 2026-11-20 09:00:00,000 >> ***** Running training *****",
                       {"value": "Running training", "key": "hf.running_training"}),)),
    # The HF Trainer's `***** Running training *****` summary, a value a line; Unsloth prints the same as a banner,
    # several a line and in its own words (`Num GPUs used = 2`, `Batch size per device = 2`, `Total batch size (2 x
    # 4 x 2) = 16`, `Total steps = 60`).
    LineKind("hf_block_value", "facts",
             ("Num examples = ", "Num Epochs = ", "Num update steps per epoch = ",
              "Instantaneous batch size per device = ", "Total train batch size", "Gradient Accumulation steps = ",
              "Gradient accumulation steps = ", "Total optimization steps = ", "Number of trainable parameters = ",
              "Num GPUs", "Data Parallel GPUs = ",
              "Batch size per device = ", "Total batch size", "Total steps = "),
             r"(?P<key>Num examples|Num Epochs|Num update steps per epoch|Instantaneous batch size per device|"
             r"Total train batch size|Gradient [Aa]ccumulation steps|Total optimization steps|"
             r"Number of trainable parameters|Num GPUs used|Num GPUs|Data Parallel GPUs|Batch size per device|"
             r"Total batch size|Total steps)[^=|]*= (?P<value>[\d,]+)", {"key": S, "value": S}, required="key",
             constants={"key_prefix": "hf."}, every=True,
             samples=(("[INFO|trainer.py:2314] 2026-11-20 09:00:00,000 >>   Num examples = 2,000",
                       {"key": "hf.Num examples", "value": "2,000"}),
                      ("O^O/ \\_/ \\    Batch size per device = 2 | Gradient accumulation steps = 4",
                       {"key": "hf.Batch size per device", "value": "2"}))),
    LineKind("nccl_info", "nccl", ("NCCL INFO ",),
             r"(?:(?P<nccl_host>[\w.-]+):\d+:\d+ \[(?P<dev>\d+)\] )?NCCL INFO (?P<msg>.*)$",
             {"nccl_host": S, "dev": I, "msg": S}, required="msg",
             samples=(("node1: node1:4000:4100 [0] NCCL INFO NCCL version 2.21.5+cuda12.4",
                       {"nccl_host": "node1", "dev": 0, "msg": "NCCL version 2.21.5+cuda12.4"}),)),
    LineKind("nccl_version", "facts", ("NCCL version ",), r"NCCL version (?P<value>[\d.]+(?:\+cuda[\d.]+)?)",
             {"value": S}, required="value", constants={"key": "version.nccl"},
             samples=(("NCCL version 2.18.5+cuda12.2",
                       {"value": "2.18.5+cuda12.2", "key": "version.nccl"}),)),
    LineKind("wandb_version", "facts", ("Tracking run with wandb version ",),
             r"wandb version (?P<value>[\w.]+)", {"value": S}, required="value", constants={"key": "version.wandb"},
             samples=(("wandb: Tracking run with wandb version 0.31.0",
                       {"value": "0.31.0", "key": "version.wandb"}),)),
    LineKind("ds_report_version", "facts",
             ("torch version ..", "deepspeed info ..", "torch cuda version ..", "nvcc version ..",
              "deepspeed wheel compiled w. .."),
             r"(?P<key>torch version|deepspeed info|torch cuda version|nvcc version)\s*\.+\s*(?P<value>[^\s,]+)",
             {"key": S, "value": S}, required="key", constants={"key_prefix": "ds_report."},
             samples=(("torch version .................... 2.1.0+cu121",
                       {"key": "ds_report.torch version", "value": "2.1.0+cu121"}),)),
    LineKind("accelerate_env_version", "facts", ("` version: ", "- PyTorch version", "- Transformers version"),
             r"- `?(?P<key>Accelerate|PyTorch|Transformers|DeepSpeed|transformers)`? version[^:]*: (?P<value>[\w.+]+)",
             {"key": S, "value": S}, required="key", constants={"key_prefix": "env_report."},
             samples=(("- `Accelerate` version: 0.25.0",
                       {"key": "env_report.Accelerate", "value": "0.25.0"}),)),
    # `nvidia-smi -L` and scripts that print the device: `GPU 0: NVIDIA A100-SXM4-80GB (UUID: GPU-...)`,
    # `Device: NVIDIA H100 80GB HBM3`.
    LineKind("gpu_name", "facts", (" (UUID: GPU-", "GPU 0: NVIDIA", "GPU 0: Tesla", "Device: NVIDIA", "Device: Tesla"),
             r"(?:GPU \d+|Device): (?P<value>(?:NVIDIA|Tesla|Quadro)?[^(]*?)\s*(?:\(UUID: GPU-|$)", {"value": S},
             required="value", constants={"key": "gpu_name"},
             samples=(("node1: GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-52e6b438-f2a7)",
                       {"value": "NVIDIA H100 80GB HBM3", "key": "gpu_name"}),)),
    # nvidia-smi's table: `|   0  Tesla V100-SXM2...  On   | 00000000:1A:00.0 Off |` (the name may be cut short)
    # and the memory row `| N/A 34C P0 41W / 300W |      0MiB / 32510MiB |`.
    LineKind("nvidia_smi_gpu", "facts", (" Off  |", " On   |", " On  |"),
             r"(?:^|[:>] ?)\|\s+\d+\s+(?P<value>[A-Za-z][\w .-]*?)(?:\.\.\.)?\s+(?:On|Off)\s+\|",
             {"value": S}, required="value", constants={"key": "nvidia_smi.gpu"},
             samples=(("|   0  NVIDIA A100-SXM4-80GB          On  | 00000000:07:00.0 Off |                    0 |",
                       {"value": "NVIDIA A100-SXM4-80GB", "key": "nvidia_smi.gpu"}),)),
    LineKind("nvidia_smi_memory", "facts", ("MiB / ",), r"\d+MiB /\s*(?P<value>\d+)MiB", {"value": S},
             required="value", constants={"key": "nvidia_smi.memory_mib"},
             samples=(("| N/A   34C    P0    61W / 400W |      4MiB / 81920MiB |      0%      Default |",
                       {"value": "81920", "key": "nvidia_smi.memory_mib"}),)),
    # The same row's memory in use and utilisation, in the table's order of GPUs (facts.py reads the numbers).
    LineKind("nvidia_smi_usage", "facts", ("MiB / ",), r"(?P<value>\d+MiB /\s*\d+MiB\s*\|\s*\d+%)", {"value": S},
             required="value", constants={"key": "nvidia_smi.usage"},
             samples=(("| 35%   59C    P2   105W / 196W |   2360MiB /  4041MiB |     99%      Default |",
                       {"value": "2360MiB /  4041MiB |     99%", "key": "nvidia_smi.usage"}),)),
    # nvidia-smi's process table: `|    0   N/A  N/A     47031      C   /usr/bin/python3      0MiB |` (older: no GI/CI
    # columns; pasted, often without the borders): the GPU and the process's PID (facts.py splits them), the GPUs of
    # the host that printed it which run a compute process.
    LineKind("nvidia_smi_process", "facts", (),
             _SMI_PROCESS.replace("#", f"(?P<value>{_SMI_IDS})") + r"\s*(?:\||$)",
             {"value": S}, required="value", prefilter=_SMI_PROCESS.replace("#", _SMI_IDS),
             constants={"key": "nvidia_smi.process"},
             samples=(("|    7   N/A  N/A     47038      C   /usr/bin/python3                                0MiB |",
                       {"value": "7   N/A  N/A     47038", "key": "nvidia_smi.process"}),
                      ("|    1     23456      C   python                                      15000MiB |",
                       {"value": "1     23456"}),
                      (" 1   N/A  N/A     12238      C   ...a3/envs/deepmd/bin/python      189MiB ",
                       {"value": "1   N/A  N/A     12238"}))),
    # Topology as a launch script sets or echoes it: `NUM_NODES: 2`, `GPUS_PER_NODE=4`, `NNODES=2`,
    # `SLURM_NNODES=2` (a shell comment sets nothing).
    LineKind("topology_setting", "facts", ("NODES", "PER_NODE"),
             r"^(?:[^#]*?[\s;'\"(])?(?P<key>NUM_NODES|NNODES|N_NODES|SLURM_NNODES|SLURM_JOB_NUM_NODES|GPUS_PER_NODE|"
             r"NPROC_PER_NODE|NUM_GPUS_PER_NODE|N_GPUS_PER_NODE|SLURM_GPUS_PER_NODE)\s*[:=]\s*[\"']?(?P<value>\d+)\b",
             {"key": S, "value": S}, required="value", constants={"key_prefix": "topology."},
             samples=(("  NUM_NODES: 2", {"key": "topology.NUM_NODES", "value": "2"}),
                      ("export GPUS_PER_NODE=4", {"key": "topology.GPUS_PER_NODE", "value": "4"}),
                      ('NNODES="2"', {"key": "topology.NNODES", "value": "2"}))),
    # Python reprs of a job's arguments on one line: argparse's `Namespace(bf16=True, zero_stage=2, ...)`, HF's and
    # TRL's `TrainingArguments(...)` / `DPOConfig(...)`; facts.py reads the `name=value` pairs it knows.
    LineKind("args_repr", "facts", ("Namespace(", "TrainingArguments(", "Config(output_dir="),
             r"(?:Namespace|TrainingArguments|Config)\((?P<value>.*=.*)\)\s*$", {"value": S}, required="value",
             constants={"key": "repr.args"},
             samples=(("Namespace(bf16=True, gradient_accumulation_steps=4, per_device_train_batch_size=8, "
                       "zero_stage=2)", {"key": "repr.args"}),)),
    # The same reprs printed one argument a line (HF prints `TrainingArguments(` then `per_device_train_batch_size=8,`),
    # behind a launcher's prefix too (srun's `0: `, torchrun's `[default0]:`, `[1,0]<stdout>:`, pdsh's `host: `).
    LineKind("args_repr_line", "facts", (),
             r"^(?:[^\s=]{1,40}:\s?)?\s*(?P<key>_?[a-z][a-z0-9_]*)=(?P<value>[^=\s,][^=]*?),\s*$",
             {"key": S, "value": S}, required="value", prefilter=r"^(?:[^\s=]{1,40}:\s?)?\s*_?[a-z][a-z0-9_]*=[^=\s,][^=]*,\s*$",
             constants={"key_prefix": "args."},
             samples=(("gradient_accumulation_steps=8,", {"key": "args.gradient_accumulation_steps", "value": "8"}),
                      ("[default0]:max_length=16384,", {"key": "args.max_length", "value": "16384"}),
                      ("0: per_device_train_batch_size=1,", {"value": "1"}))),
    # A model named by its hub id or path (`--model_name_or_path facebook/opt-1.3b`, `MODEL_NAME="Qwen/Qwen2-7B"`):
    # the size in the name is an estimate of the parameter count where nothing prints one (facts.py).
    LineKind("model_name", "facts", ("model_name", "MODEL_NAME", "model_path", "MODEL_PATH", "model_id", "MODEL_ID"),
             r"(?:model_name(?:_or_path)?|MODEL_NAME(?:_OR_PATH)?|model_path|MODEL_PATH|model_id|MODEL_ID)['\"]?"
             r"\s*[:=\s]\s*['\"]?(?P<value>[\w./-]*?[-_/.]\d+(?:\.\d+)?[bBmM](?:[-_.][\w./-]*)?)(?:['\"\s,]|$)",
             {"value": S}, required="value", constants={"key": "model.name"},
             samples=(('MODEL_NAME="meta-llama/Llama-3.2-1B"', {"value": "meta-llama/Llama-3.2-1B"}),
                      ("--model_name_or_path facebook/opt-1.3b \\", {"value": "facebook/opt-1.3b"}))),
    LineKind("omp_banner", "facts", ("Setting OMP_NUM_THREADS environment variable",),
             r"to be (?P<value>\d+) in default", {"value": S}, required="value",
             constants={"key": "env.OMP_NUM_THREADS"},
             samples=(("W1129 23:04:55.760000 3035 torch/distributed/run.py:874] Setting OMP_NUM_THREADS environment"
                       " variable for each process to be 1 in default, to avoid your system being overloaded, please"
                       " further tune the variable for optimal performance in your application as needed. ",
                       {"value": "1", "key": "env.OMP_NUM_THREADS"}),)),
    LineKind("model_params_script", "facts", (" parameters",),
             r"(?:built \w+ from config, |[Mm]odel (?:has |parameters:? ))(?P<value>[\d,]+) parameters",
             {"value": S}, required="value", constants={"key": "model.params"},
             samples=(("rank 0/2: built GPT2LMHeadModel from config, 169728 parameters",
                       {"value": "169728", "key": "model.params"}),)),
)


@dataclass(frozen=True)
class TimerFamily:
    """How one generation of timer lines maps its names onto the timers frame's columns. A family is recognised by
    a name only it prints (`marker`; the last family, DeepSpeed's engine, has none). Each column is the sum of the
    first alternative whose names the line has: Megatron's `backward-reduce-model-grads` already holds the
    all-reduces that older versions print one by one."""

    name: str
    marker: str | None
    columns: dict[str, tuple[tuple[str, ...], ...]]


_PIPE_P2P = ("forward-recv", "forward-send", "backward-recv", "backward-send", "forward-send-backward-recv",
             "backward-send-forward-recv", "forward-backward-send-forward-backward-recv")
# Names are compared after `_microstep` is removed (the per-micro-step copies of the same timers).
TIMER_FAMILIES: tuple[TimerFamily, ...] = (
    # Megatron-LM: backward-compute excludes the gradient all-reduce, which is timed on its own.
    TimerFamily("megatron", "forward-compute", {
        "fwd": (("forward-compute",),),
        "bwd_inner": (("backward-compute",),),
        "bwd_allreduce": (("backward-reduce-model-grads",),
                          ("backward-params-all-reduce", "backward-embedding-all-reduce",
                           "backward-layernorm-all-reduce")),
        "step": (("optimizer",),),
        "pipe_comm": (_PIPE_P2P,),
        "data": (("batch-generator",),),
    }),
    # DeepSpeed's pipeline engine (gpt-neox): `backward` is compute only; reduce_grads is the data-parallel
    # all-reduce; pipe_send_output / pipe_recv_grad are the pipeline's point-to-point waits.
    TimerFamily("ds_pipe", "train_batch", {
        "fwd": (("forward",),),
        "bwd_inner": (("backward",),),
        "bwd_allreduce": (("reduce_grads", "reduce_tied_grads"),),
        "step": (("step",),),
        "pipe_comm": (("pipe_send_output", "pipe_recv_grad", "pipe_send_grad", "pipe_recv_input"),),
        "data": (("batch_input",),),
    }),
    # Megatron before 2021 (and Megatron-DeepSpeed of that time): forward / backward / optimizer, backward
    # including the all-reduce, and `allreduce` where it is timed on its own.
    TimerFamily("megatron_legacy", "optimizer", {
        "fwd": (("forward",),),
        "bwd": (("backward",),),
        "bwd_allreduce": (("allreduce",),),
        "step": (("optimizer",),),
        "data": (("batch generator", "batch-generator"),),
    }),
    # DeepSpeed's engine (wall_clock_breakdown), both name generations: fwd/forward, bwd/backward (= inner +
    # allreduce), bwd_inner, bwd_allreduce, step and ZeRO's optimizer_* timers.
    TimerFamily("deepspeed", None, {
        "fwd": (("fwd",), ("forward",)),
        "bwd": (("bwd",), ("backward",)),
        "bwd_inner": (("bwd_inner",), ("backward_inner",)),
        "bwd_allreduce": (("bwd_allreduce",), ("backward_allreduce",)),
        "step": (("step",),),
        "optimizer_allgather": (("optimizer_allgather",),),
        "optimizer_gradients": (("optimizer_gradients",),),
        "optimizer_step": (("optimizer_step",),),
        "init_optimizer_state": (("init_optimizer_state",),),
    }),
)

# Headers of multi-line blocks, read from a window of following lines (see blocks.py).
BLOCK_HEADERS: dict[str, str] = {
    "ds_config_dump": "DeepSpeedEngine configuration:",
    "ds_user_json": "json = {",
    "comms_table": "Comm. Op",
    "flops_profile": "- DeepSpeed Flops Profiler -",
}

ANCHORS: tuple[str, ...] = tuple(dict.fromkeys(a for k in KINDS for a in k.anchors))

# Settings a config or a command states by name, wherever a text holds them (issue 30, must 6 and 7): YAML and
# vertical `key: value` lists, JSON and Python-dict reprs (`'NUM_GPUS': 1`), Hydra overrides
# (`trainer.n_gpus_per_node=8`, `+trainer.nnodes=2`), Markdown table rows (`| num_nodes | 2 |`), blockquoted
# (`> num_gpus: 8`) or listed (`- devices: 1`), and flags (`--devices 1`). The name is matched case-insensitively as
# the last part of a dotted key; the value must be a whole number. Name -> run fact: the names some tool gives each
# fact, declared with the fact.
SETTING_FACTS: dict[str, str] = fact_table.SETTING_FACTS  # each fact's `settings` names (parsers/fact_table.py)
# a name's words may be spaced or dashed as people write them (`ZeRO stage: 3`, `--num-gpus 8`); read back as `_`
_SETTING_NAMES = "|".join(n.replace("_", "[ _-]") for n in sorted(SETTING_FACTS, key=len, reverse=True))
# One name and its value: `key: v`, `key=v`, `"key": v`, `'KEY': v`, `| key | v |`, `--key v`, `--key=v`, and
# LightningCLI's dotted flags (`--trainer.devices 4`).
SETTING_RE = (r"(?i)(?:--(?:[\w-]+\.)*(?P<flag>" + _SETTING_NAMES + r")(?:=|\s+)|\b(?P<key>" + _SETTING_NAMES
              + r")['\"]?\s*[:=|]\s*)['\"]?(?P<value>\d+)\b")
SETTING_HINT = r"(?i)(?:" + _SETTING_NAMES + r")['\"]?\s*[:=| ]"
# Lightning's registered DeepSpeed strategies by name (lightning/pytorch/strategies/deepspeed.py,
# `register_strategies`): `deepspeed_stage_1` .. `deepspeed_stage_3`, `_offload` (the optimizer to the CPU, at stage
# 3 the parameters too) and `deepspeed_stage_3_offload_nvme`, in a `Trainer(strategy=...)` call, a CLI flag or a YAML
# key. Read with the settings, wherever on a line (`Trainer(num_nodes=2, strategy="deepspeed_stage_2")`): the value
# is the name's tail (`2_offload`), which parsers/facts.py turns into the stage and the offload.
DEEPSPEED_STRATEGY = "deepspeed_stage_"
DEEPSPEED_STRATEGY_RE = r"(?:^|[^\w])deepspeed_stage_(?P<value>[1-3](?:_offload(?:_nvme)?)?)(?:[^\w]|$)"
# Tried first, on every line: a case-sensitive alternation of a fragment of each name in lower and upper case costs a
# fifth of SETTING_HINT (whose case-insensitive alternation defeats the literal search); tests check the cover.
# The names written as words are covered where people write them so (`ZeRO stage: 3`, `Batch size per GPU: 4`, `grad
# accum: 8`, `gradient accumulation`): fragments without their first letter, so that a capital needs no third case
# (each literal more slows this pass over every line; 73 of them cost 3.7 times these 37, and a 38th 0.8% of a long
# log's chunk: `_stage` covers both `zero_stage` and a Lightning strategy's `deepspeed_stage_`).
_FRAGMENTS = ("gpus", "nodes", "shards", "machines", "world_size", "processes", "batch_size", "accumulation",
              "_stage", "devices", "nproc", "g_steps", "atch size", "atch-size", "ro stage", "ro-stage",
              "rad_accum", "rad accum")
SETTING_PREFILTER = "|".join(f for frag in _FRAGMENTS for f in (frag, frag.upper())) + "|RO stage"
# the word forms the prefilter lets through (tests/test_real_formats.py checks the cover)
SPACED_SETTINGS = ("zero stage", "ZeRO stage", "batch size per gpu", "micro batch size", "gradient accumulation",
                   "grad accum", "gradient accumulation steps", "--num-gpus", "--num-nodes")


# CUDA's out-of-memory message (c10/cuda/CUDACachingAllocator.cpp), in its two shapes: torch >= 2.1 `Tried to allocate
# 20.00 MiB. GPU 0 has a total capacity of 79.15 GiB of which 3.06 MiB is free.`, older `Tried to allocate 2.00 GiB
# (GPU 0; 79.15 GiB total capacity; 75.30 GiB already allocated; ...)`: (size, unit) of the allocation, then of the
# capacity.
OOM_SIZES: tuple[str, ...] = (
    r"Tried to allocate (?P<a>[\d.]+) (?P<au>[KMGT]i?B)\. GPU \d+ has a total capacity of "
    r"(?P<c>[\d.]+) (?P<cu>[KMGT]i?B)",
    r"Tried to allocate (?P<a>[\d.]+) (?P<au>[KMGT]i?B) \(GPU \d+; (?P<c>[\d.]+) (?P<cu>[KMGT]i?B) total capacity",
)

# An exception line names what failed after its type (the refinement is tested on the recorded
# sample_logs/fault_*) (`RuntimeError: [gloo/.../unbound_buffer.cc:78] Timed out waiting
# 10000ms for recv operation`): the line's first anchor is `Error: `, so its kind is refined from the message here.
EXCEPTION_REFINEMENTS: tuple[tuple[str, str], ...] = (
    ("oom", r"OutOfMemoryError|CUDA out of memory|out of memory\. Tried to allocate"),
    ("comm_timeout", r"Watchdog caught collective operation timeout|Timed out waiting \d+ms|"
                     r"collective operation timeout"),
    # NCCL's own failure (`NCCL error in: ...ProcessGroupNCCL.cpp:1691, unhandled system error (run with
    # NCCL_DEBUG=INFO for details)`): a crash whose cause is below torch, read before a lost peer's message wins.
    ("nccl_error", r"NCCL error in: |unhandled system error|unhandled cuda error|internal error - please report|"
                   r"ncclSystemError|ncclInternalError|ncclUnhandledCudaError"),
    ("peer_lost", r"Connection closed by peer|Connection reset by peer|"
                  r"remote process exited or there was a network error"),
)
