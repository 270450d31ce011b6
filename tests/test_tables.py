"""Tables whose names sit on a header row (parsers/tables.py): each row is read with its header's names."""
from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest

from diagnose.engine import diagnose
from diagnose.parsers import parse
from diagnose.parsers.tables import named_rows


def _write(tmp_path: Path, name: str, lines: list[str]) -> Path:
    p = tmp_path / name
    p.write_text("\n".join(lines) + "\n")
    return p


def _read(tmp_path: Path, name: str, lines: list[str]):
    p = tmp_path / name
    p.write_text("\n".join(lines) + "\n")
    m = parse([str(p)])
    stream = next(s for s in m.streams if s.step_clock)
    return m, diagnose(m).metrics.steps, [(r.name, r.role) for r in stream.roles]


def test_a_metrics_csv_with_a_step_time_column(tmp_path: Path) -> None:
    # A custom loop's CSV logger: `0,100` is two fields here, not one number with a thousands separator.
    rows = ["epoch,step,train_loss,step_time"] + [f"0,{s},{2.5 - s / 1000:.4f},{0.85 + 0.01 * (s % 3):.3f}"
                                                   for s in range(10, 610, 10)]
    m, steps, roles = _read(tmp_path, "metrics.csv", rows)
    assert steps is not None and steps.n >= 58 and steps.p50_s == pytest.approx(0.86)
    assert ("step", "counter") in roles and ("step_time", "step_time") in roles
    assert m.frames["steps"]["global_step"].to_list()[:3] == [10, 20, 30]


def test_lightning_csv_logger_rows_with_empty_fields(tmp_path: Path) -> None:
    # Lightning's CSVLogger (from source): one header of every metric logged, a row per log call with the fields it
    # did not log left empty; training rows every 50 steps, a validation row per epoch.
    rows = ["epoch,step,train_loss,val_loss"]
    for s in range(49, 1500, 50):
        rows.append(f"{s // 500},{s},{2.5 - s / 1000:.4f},")
        if s % 500 == 499:
            rows.append(f"{s // 500},{s},,{2.0 - s / 2000:.4f}")
    m, _, roles = _read(tmp_path, "metrics.csv", rows)
    assert ("step", "counter") in roles and ("train_loss", "loss") in roles
    s = m.frames["steps"]
    assert s["global_step"].to_list()[:3] == [49, 99, 149] and s["loss"][0] == pytest.approx(2.451)


def test_fastai_and_chainer_epoch_tables(tmp_path: Path) -> None:
    # fastai's ProgressCallback table and Chainer's PrintReport (from source): a header row, then a row an epoch,
    # columns padded with spaces; fastai's `time` is the epoch's, Chainer's `elapsed_time` the run's so far.
    fastai = ["epoch     train_loss  valid_loss  accuracy  time    "] + [
        f"{e:<10}{0.5 - e / 100:<12.6f}{0.4 - e / 200:<12.6f}{0.85 + e / 1000:<10.6f}01:{25 + e % 3:02d}"
        for e in range(12)]
    _, steps, roles = _read(tmp_path, "fastai.log", fastai)
    assert steps is not None and steps.p50_s == pytest.approx(86.0)
    assert ("epoch", "counter") in roles and ("train_loss", "loss") in roles and ("time", "step_time") in roles
    chainer = ["epoch       main/loss   validation/main/loss  main/accuracy  validation/main/accuracy  elapsed_time"]
    chainer += [f"{e:<12}{0.2 - e / 100:<12.4f}{0.1:<22.4f}{0.94:<15.3f}{0.97:<26.3f}{6.04 * e:.2f}"
                for e in range(1, 13)]
    _, steps, roles = _read(tmp_path, "chainer.log", chainer)
    assert steps is not None and steps.p50_s == pytest.approx(6.04, rel=0.01)
    assert ("elapsed_time", "cum_time") in roles


def test_rows_without_a_header_or_of_another_width_stay_as_printed() -> None:
    text = ["0,49,2.31", "epoch,step,loss", "0,99,2.2", "1,2,3,4", "step 5: loss 2.1"]
    lines = pl.DataFrame({"line": list(range(len(text))), "text": text})
    assert named_rows(lines)["text"].to_list() == ["0,49,2.31", "epoch,step,loss", "epoch: 0, step: 99, loss: 2.2",
                                                   "1,2,3,4", "step 5: loss 2.1"]


def test_tensorboard_scalars_exported_as_csv(tmp_path: Path) -> None:
    # TensorBoard's "Download CSV" of a scalar: `Wall time,Step,Value`, the wall time in epoch seconds; the steps'
    # time is the wall time's difference over the steps between rows.
    rows = ["Wall time,Step,Value"] + [f"{1767607200 + 0.85 * s:.3f},{s},{2.5 - s / 1000:.4f}"
                                       for s in range(10, 610, 10)]
    m, steps, roles = _read(tmp_path, "run-train-tag-loss.csv", rows)
    assert steps is not None and steps.p50_s == pytest.approx(0.85, rel=1e-3)
    assert ("Step", "counter") in roles and ("Wall time", "stamp") in roles


def test_a_history_saved_by_pandas_with_its_index_column(tmp_path: Path) -> None:
    # `run.history().to_csv(...)` (W&B's API, pandas): an unnamed index column first, then `_step`, `_runtime`
    # (seconds since the start) and `_timestamp` (epoch seconds).
    rows = [",_step,_runtime,_timestamp,train/loss,train/learning_rate"] + [
        f"{i},{s},{0.85 * s:.2f},{1767607200 + 0.85 * s:.2f},{2.5 - s / 1000:.4f},0.0003"
        for i, s in enumerate(range(10, 610, 10))]
    m, steps, roles = _read(tmp_path, "history.csv", rows)
    assert steps is not None and steps.p50_s == pytest.approx(0.85, rel=1e-3)
    assert ("_step", "counter") in roles and ("train/loss", "loss") in roles
    assert m.frames["steps"]["global_step"].to_list()[:2] == [10, 20]


def test_a_notebook_table_of_two_tab_separated_columns(tmp_path: Path) -> None:
    # The HF Trainer's notebook table copied as text (a Jupyter or Colab cell pasted into an issue): `Step` and
    # `Training Loss`, set apart by a tab. Two words apart by spaces stay prose.
    rows = ["Step\tTraining Loss"] + [f"{s}\t{2.5 - s / 1000:.6f}" for s in range(10, 110, 10)]
    m = parse([str(_write(tmp_path, "cell.txt", rows))])
    s = m.frames["steps"].sort("line")
    assert s["global_step"].to_list()[:3] == [10, 20, 30] and s["loss"][0] == pytest.approx(2.49)
    prose = ["Step  Loss"] + [f"{s}  {2.5 - s / 1000:.6f}" for s in range(10, 110, 10)]
    assert "Step: 10" not in named_rows(pl.DataFrame({"line": list(range(1, 12)), "text": prose}))["text"].to_list()[1]


def test_header_names_of_several_words(tmp_path: Path) -> None:
    # Columns set apart by runs of spaces whose names hold single spaces (spaCy's `LOSS TOK2VEC`, a custom loop's
    # `step time (s)`): each name whole.
    rows = ["step    train loss    step time (s)"] + [f"{s:<7d} {2.5 - s / 1000:<13.4f} {0.85 + 0.01 * (s % 3):.3f}"
                                                      for s in range(10, 310, 10)]
    m, steps, roles = _read(tmp_path, "table.log", rows)
    assert ("step time (s)", "step_time") in roles and ("train loss", "loss") in roles
    assert steps is not None and steps.p50_s == pytest.approx(0.86)


def test_a_markdown_table_of_timings_with_their_units(tmp_path: Path) -> None:
    # a thread's own table of timings, each cell with its unit: the times were dropped as words, the steps untimed
    rows = ["| step | loss | step time | data time |", "|---|---|---|---|"]
    rows += [f"| {s} | {2.5 - s / 1000:.4f} | {850 + 10 * (s % 3):.1f} ms | {510 + s % 7:.1f} ms |"
             for s in range(10, 410, 10)]
    m, steps, roles = _read(tmp_path, "thread.md", rows)
    assert steps is not None and steps.p50_s == pytest.approx(0.86)
    assert ("step time", "step_time") in roles and ("data time", "data_time") in roles
    assert "input-bound" in [f.id for f in diagnose(m).findings][:3]
