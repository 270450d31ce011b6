"""The step clocks (issue 34): each clock that can time a run's steps, declared once with how reports name it and
how fine it is, in precedence order (most trusted first). metrics.py computes each clock's series by name, compare
names the clock both sides share, and the charts label their step-time lines from here."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from diagnose.parsers.names import ClockName

# per step: one time for every optimizer step; per print: one for each printed interval (every K steps); smoothed:
# a running average (tqdm's rate where its bar fits no average that can be undone: parsers/tqdm_clock.py); per log:
# each logging call's wall time (W&B's `_runtime`)
Granularity = Literal["per step", "per print", "smoothed", "per log"]


@dataclass(frozen=True)
class Clock:
    name: ClockName
    label: str  # in a sentence: "step times on both sides from the same clock: <label>"
    chart_label: str  # a chart's line: "step time (<chart_label>)"
    granularity: Granularity


# Most trusted first: wall-clock stamps of DeepSpeed's step lines, the trainer's own printed times, DeepSpeed's
# throughput, tqdm's bar (its average undone per refresh where the elapsed column agrees), W&B's logging times.
CLOCKS: tuple[Clock, ...] = (
    Clock("ds_step_ts", "DeepSpeed's step-line timestamps", "wall clock between DeepSpeed step lines", "per step"),
    Clock("printed", "the trainer's printed step times", "as the trainer printed it", "per print"),
    Clock("ds_throughput", "DeepSpeed's samples/s lines", "from DeepSpeed's samples/s", "per print"),
    Clock("tqdm", "tqdm's progress bar", "from the progress bar", "smoothed"),
    Clock("wandb_history", "W&B's history", "from W&B's logging times", "per log"),
)
BY_NAME: dict[str, Clock] = {c.name: c for c in CLOCKS}
ORDER: tuple[str, ...] = tuple(c.name for c in CLOCKS)


def label(name: str) -> str:
    return BY_NAME[name].label if name in BY_NAME else name


def chart_label(name: str) -> str:
    return BY_NAME[name].chart_label if name in BY_NAME else name


__all__ = ["BY_NAME", "CLOCKS", "Clock", "Granularity", "ORDER", "chart_label", "label"]
