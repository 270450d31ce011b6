"""tqdm bars as trainers draw them, driven through the real tqdm with a clock of ours: a postfix after the rate
(a custom loop's `set_postfix`, Lightning's `v_num=0, train_loss=...`), one bar per epoch described `Epoch N`, a
steady bar that prints one rate for many refreshes, and a bar glued to the next log line."""
from __future__ import annotations

import io
from pathlib import Path

import polars as pl
import pytest
import tqdm
import tqdm.std

from diagnose.engine import diagnose
from diagnose.parsers import lines, parse, thinning

STEP_S, STALL_S = 0.2, 3.2


def _clocked(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    clock = [1_000.0]
    monkeypatch.setattr(tqdm.std, "time", lambda: clock[0])
    return clock


def _steps(text: str, tmp_path: Path) -> pl.DataFrame:
    log = tmp_path / "train.log"
    log.write_text(text)
    steps = parse([str(log)]).frames["steps"].filter(pl.col("origin") == "tqdm")
    return steps.unique("global_step", keep="last").sort("global_step").filter(pl.col("step_time_s").is_not_null())


def _lightning(monkeypatch: pytest.MonkeyPatch, epochs: int, per_epoch: int, stall_at: int) -> str:
    """Lightning's TQDMProgressBar: one bar reset every epoch, `smoothing=0`, described `Epoch N`, the logged
    metrics as its postfix; a refresh at every batch. `stall_at`: the global step that takes STALL_S."""
    clock = _clocked(monkeypatch)
    out = io.StringIO()
    bar = tqdm.tqdm(total=per_epoch, file=out, smoothing=0, mininterval=0, miniters=1, ncols=100)
    for epoch in range(epochs):
        bar.reset(total=per_epoch)
        bar.set_description(f"Epoch {epoch}")
        for i in range(1, per_epoch + 1):
            step = epoch * per_epoch + i
            clock[0] += STALL_S if step == stall_at else STEP_S
            bar.update(1)
            bar.set_postfix(v_num=0, train_loss=round(2.0 / step, 4))
    bar.close()
    return out.getvalue()


def test_a_lightning_bar_is_read_as_tqdm_numbered_across_epochs_and_its_pause_lands_on_its_step(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    text = _lightning(monkeypatch, epochs=3, per_epoch=100, stall_at=150)
    assert "Epoch 1:  50%" in text and "it/s, train_loss=" in text  # the bar as tqdm drew it
    steps = _steps(text, tmp_path)
    assert steps["global_step"].max() == 300 and steps["epoch"].drop_nulls().unique().sort().to_list() == [0, 1, 2]
    # the cumulative rate undone: the pause on step 150 alone (the steps after it keep the rounding of a rate
    # printed to three digits, not the pause spread over them)
    times = dict(zip(steps["global_step"], steps["step_time_s"]))
    assert times[150] == pytest.approx(STALL_S, rel=0.02)
    rest = pl.Series([t for s, t in times.items() if s != 150])
    assert rest.median() == pytest.approx(STEP_S, rel=0.02) and rest.max() < 1.3 * STEP_S


def test_a_steady_bar_that_prints_one_rate_for_many_refreshes_still_shows_each_pause(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    clock = _clocked(monkeypatch)
    out = io.StringIO()
    bar = tqdm.tqdm(total=200, file=out, mininterval=0, miniters=1)  # tqdm's averaging bar
    for i in range(1, 201):
        clock[0] += 5.0 if i % 50 == 0 else 0.5
        bar.set_postfix(loss=1.0 / i, refresh=False)
        bar.update(1)
    bar.close()
    # steps 1-49 all print `2.00it/s`: read at the rate changes alone they are one interval with the pause in it
    assert out.getvalue().count(" 2.00it/s, loss=") > 40
    steps = _steps(out.getvalue(), tmp_path)
    slow = steps.filter(pl.col("step_time_s") > 2.0)
    assert slow["global_step"].to_list() == [50, 100, 150, 200]
    assert slow["step_time_s"].to_list() == pytest.approx([5.0] * 4, rel=0.02)
    assert steps.filter(pl.col("step_time_s") <= 2.0)["step_time_s"].median() == pytest.approx(0.5, rel=0.02)


def test_bars_of_several_ranks_merged_on_one_line_are_not_read_as_one_steady_bar(tmp_path: Path) -> None:
    # four ranks' `Loading checkpoint shards` bars drawn onto one line: one count shows several rates
    frames = [f"Loading checkpoint shards: {25 * n:3d}%|##| {n}/4 [00:{3 * n + r:02d}<00:05,  {1.5 + 0.1 * r:.2f}s/it]"
              for n in range(1, 5) for r in range(4)]
    log = tmp_path / "train.log"
    log.write_text("0: " + "".join(frames) + "\n")
    steps = parse([str(log)]).frames["steps"].filter(pl.col("origin") == "tqdm")
    printed = sorted({round(1.5 + 0.1 * r, 2) for r in range(4)})
    assert sorted(set(steps["step_time_s"].round(2).to_list())) == printed  # the printed rates, none undone


def test_a_bar_with_a_postfix_glued_to_a_deepspeed_warning_gives_both(tmp_path: Path) -> None:
    # a paste that lost the bar's `\r`: the next log record follows the postfix's `]` on the same line
    line = ("  2%|###       | 2/90 [34:38<25:29:07, 1042.58s/it, loss=5.97, ppl=390][2024-04-08 13:19:59,481] "
            "[WARNING] [stage3.py:2069:step] 28 pytorch allocator cache flushes since last step. this happens when "
            "there is high memory pressure and is detrimental to performance.")
    log = tmp_path / "train.log"
    log.write_text("\n".join([line.replace("2/90", f"{n}/90").replace("28 pytorch", f"{26 + n} pytorch")
                              for n in (1, 2, 3)]) + "\n")
    model = parse([str(log)])
    steps = model.frames["steps"].filter(pl.col("origin") == "tqdm")
    assert steps["global_step"].to_list() == [1, 2, 3] and steps["step_time_s"].to_list()[0] == 1042.58
    assert "allocator-cache-flush" in {f.id for f in diagnose(model).findings}


def test_a_bar_is_still_read_when_the_other_hosts_bars_are_sampled(monkeypatch: pytest.MonkeyPatch,
                                                                    tmp_path: Path) -> None:
    # Two hosts print the same Lightning-style bar through pdsh, a redraw a line. Past the thinner's budget the
    # second host's bar rows are sampled in the steps frame while the progress frame keeps every bar line: the
    # clock pairs each kept row with its own elapsed time, and the first host's bar reads as it does unsampled.
    clock = _clocked(monkeypatch)
    out = io.StringIO()
    bar = tqdm.tqdm(total=300, file=out, smoothing=0, mininterval=0, miniters=1, ncols=100)
    for step in range(1, 301):
        clock[0] += STALL_S if step == 150 else STEP_S
        bar.update(1)
        bar.set_postfix(loss=round(2.0 / step, 4))
    bar.close()
    log = tmp_path / "train.log"
    log.write_text("".join(f"node-{host}: {redraw}\n" for redraw in out.getvalue().split("\r") if redraw.strip()
                           for host in (1, 2)))

    def read() -> tuple[dict[str, int], int, pl.DataFrame]:
        model = parse([str(log)])
        bars = model.frames["steps"].filter(pl.col("origin") == "tqdm")
        return model.thinned, model.frames["progress"].height, bars

    full_thinned, full_lines, full = read()
    monkeypatch.setattr(thinning, "THIN_BUDGET_ROWS", 200)
    monkeypatch.setattr(lines, "CHUNK_BYTES", 16 * 1024)
    thinned, progress_lines, thin = read()
    assert not full_thinned and thinned.get("steps", 1) > 1 and progress_lines == full_lines
    per_host = dict(thin.group_by(pl.col("node").cast(pl.String)).len().iter_rows())
    assert per_host["node-1"] == full.height // 2 and per_host["node-2"] < per_host["node-1"] / 2

    def first_host(bars: pl.DataFrame) -> pl.DataFrame:
        return bars.filter(pl.col("node") == "node-1").select("line", "global_step", "step_time_s").sort("line")

    assert first_host(thin).equals(first_host(full))
    times = dict(first_host(thin).unique("global_step", keep="last").select("global_step", "step_time_s").iter_rows())
    assert times[150] == pytest.approx(STALL_S, rel=0.02) and times[149] == pytest.approx(STEP_S, rel=0.02)


def test_a_dataset_map_bar_with_a_larger_total_is_not_the_training_bar(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    # A TRL run's output: the dataset's `map` over 25,000 examples in about a second, then the training bar of 760
    # steps at about 2 s each (b-trl-distilbert-rm-1gpu of the shared corpus, as W&B kept its output).
    clock = _clocked(monkeypatch)
    out = io.StringIO()
    data = tqdm.tqdm(total=25_000, file=out, mininterval=0.1)
    for _ in range(250):
        clock[0] += 0.004
        data.update(100)
    data.close()
    out.write("\n")
    train = tqdm.tqdm(total=760, file=out, mininterval=0, miniters=1)
    for _ in range(760):
        clock[0] += 2.1
        train.update(1)
    train.close()
    log = tmp_path / "output.log"
    log.write_text(out.getvalue())
    steps = diagnose(parse([str(log)])).metrics.steps
    assert steps is not None and steps.source == "tqdm" and steps.p50_s == pytest.approx(2.1, rel=0.02)
    assert steps.n > 700


def _bar_per_epoch(monkeypatch: pytest.MonkeyPatch, epochs: int, per_epoch: int, stop_at: int | None = None) -> str:
    """llama-recipes' train loop (from source, utils/train_utils.py): a new tqdm bar each epoch, its description
    `Training Epoch: e/E, step i/n completed (loss: ...)`, no `Epoch N` a reader would know. `stop_at`: the first
    bar ends there (a crash) and the next starts from the beginning again (a relaunch)."""
    clock = _clocked(monkeypatch)
    out = io.StringIO()
    for epoch in range(epochs):
        bar = tqdm.tqdm(total=per_epoch, file=out, mininterval=0, miniters=1, ncols=100, dynamic_ncols=False)
        for i in range(1, per_epoch + 1):
            clock[0] += STEP_S
            bar.update(1)
            bar.set_description(f"Training Epoch: {epoch + 1}/{epochs}, step {i}/{per_epoch} completed "
                                f"(loss: {2.0 / (epoch * per_epoch + i):.4f})")
            if stop_at is not None and epoch == 0 and i == stop_at:
                break
        bar.close()
        out.write("\n")
    return out.getvalue()


def test_a_new_bar_each_epoch_counts_on_from_the_last(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    text = _bar_per_epoch(monkeypatch, epochs=3, per_epoch=100)
    assert "Training Epoch: 2/3, step 1/100" in text and "Epoch 1:" not in text
    steps = _steps(text, tmp_path)
    assert steps["global_step"].max() == 300 and steps.height >= 290
    assert steps["step_time_s"].median() == pytest.approx(STEP_S, rel=0.02)


def test_a_bar_that_starts_over_before_its_end_is_a_relaunch_not_an_epoch(monkeypatch: pytest.MonkeyPatch,
                                                                          tmp_path: Path) -> None:
    text = _bar_per_epoch(monkeypatch, epochs=2, per_epoch=100, stop_at=50)
    steps = _steps(text, tmp_path)
    assert steps["global_step"].max() == 100  # the second bar's counts as printed, not 50 + 100
