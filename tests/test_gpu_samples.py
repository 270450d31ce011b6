"""The runs recorded on one NVIDIA H200 (sample_logs/gpu/, sample_logs/record/record.py --gpu), and what reading them
showed: tqdm's printed rate is an average (parsers/tqdm_clock.py), a trend needs more than four noisy medians, a
torchrun without --nnodes is one node, transformers 5 draws a bar at each save; a loop's bar per epoch with its loss as
the postfix is a tqdm bar, numbered across epochs."""
from __future__ import annotations

import io
import json
import random
from pathlib import Path

import polars as pl
import pytest
import tqdm
import tqdm.std

from conftest import ROOT, SAMPLES
from diagnose.engine import diagnose
from diagnose.metrics import rising_p
from diagnose.parsers import parse
from diagnose.parsers.launch_script import parse_script

GPU = SAMPLES / "gpu"
LABELS = {k: v for k, v in json.loads((ROOT / "benchmarks" / "sample_labels.json").read_text()).items()
          if k.startswith("gpu/")}


@pytest.mark.parametrize("name", sorted(LABELS))
def test_each_gpu_sample_gives_its_labelled_verdict_and_facts(name: str) -> None:
    label = LABELS[name]
    model = parse([str(SAMPLES / name)])
    d = diagnose(model)
    top = [f.id for f in d.findings[:3]]
    if label["expected"]:
        assert set(label["expected"]) & set(top), (name, top)
    if label["healthy"]:
        alarms = [f.id for f in d.findings if f.explains_slowdown and f.severity in ("warning", "critical")]
        assert alarms == [], (name, alarms)
    for key, want in label.get("facts", {}).items():
        assert getattr(model.facts, key) == want, (name, key)


def _median_step(name: str) -> float:
    steps = diagnose(parse([str(GPU / name)])).metrics.steps
    assert steps is not None and steps.source == "tqdm"
    return steps.p50_s


def test_a_run_that_saves_every_25_steps_has_the_step_time_of_the_run_that_does_not() -> None:
    # The same model, batch and GPU; the saves fall between steps. Read as step times, tqdm's averaged rate put the
    # median of the saving run at 0.0825 s against 0.047 s (each save smeared over the 20 steps after it).
    plain, saving = _median_step("hf_bf16"), _median_step("hf_ckpt_every_25")
    assert 0.040 < plain < 0.055
    assert abs(saving / plain - 1) < 0.15, (plain, saving)


def test_the_saves_are_found_and_cost_what_the_bar_shows() -> None:
    model = parse([str(GPU / "hf_ckpt_every_25")])
    d = diagnose(model)
    stalls = next(f for f in d.findings if f.id == "periodic-stalls")
    assert stalls.severity == "warning" and stalls.explains_slowdown
    text = " ".join(e.text for e in stalls.evidence)
    for step in (25, 50, 75):
        assert f"checkpoint at step {step}" in text
    saves = [e for e in model.frames["events"].filter(pl.col("kind") == "checkpoint_save").iter_rows(named=True)]
    assert len({r["line"] for r in saves}) >= 12  # 300 steps, a save every 25


@pytest.mark.parametrize("name", ["bar_ckpt_every_50", "bar_lightning_ckpt_every_50"])
def test_a_loop_with_a_postfixed_bar_per_epoch_is_read_across_its_epochs_and_its_saves_stand_out(name: str) -> None:
    # A ResNet-18 loop on the H200, 3 epochs of 200 steps, a tqdm bar per epoch (`Epoch N`, `loss=` or Lightning's
    # `train_loss=..., v_num=0` after the rate) and a save of the model and optimizer every 50 steps.
    model = parse([str(GPU / name)])
    steps = model.frames["steps"].filter(pl.col("origin") == "tqdm")
    assert steps["global_step"].max() == 600 and sorted(steps["epoch"].drop_nulls().unique()) == [0, 1, 2]
    plain = _median_step("bar_healthy")
    assert 0.015 < plain < 0.03
    d = diagnose(model)
    assert d.metrics.steps is not None and abs(d.metrics.steps.p50_s / plain - 1) < 0.15
    stalls = next(f for f in d.findings[:3] if f.id == "periodic-stalls")
    assert stalls.severity == "warning"
    # where the bar refreshes at every step (Lightning's way: a postfix set with refresh), each save lands on its step
    if "lightning" in name:
        per_step = steps.unique("global_step", keep="last").filter(pl.col("step_time_s") > 4 * plain)
        saves = set(range(50, 601, 50))
        assert len(saves & set(per_step["global_step"].to_list())) >= 10


def test_compare_puts_the_fp32_run_at_twice_the_step_time_and_names_the_dropped_flag(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from diagnose.cli import app
    res = CliRunner().invoke(app, ["compare", str(GPU / "hf_bf16"), str(GPU / "hf_fp32"), "--format", "json"])
    assert res.exit_code == 0, res.output
    doc = json.loads(res.output)
    assert 1.8 < doc["delta"]["step_time_ratio"] < 2.3, doc["delta"]
    assert {"precision", "arg.bf16"} <= {c["key"] for c in doc["changes"]}
    # the flag passed on one side only, both launch commands read: the other side ran the Trainer's default (fp32)
    assert "what changed: --bf16 dropped" in doc["verdict"]


# tqdm's own averaging, driven by a clock of ours: the bar a trainer prints, from known step times.
def _bar(step_times: list[float], monkeypatch: pytest.MonkeyPatch, smoothing: float = 0.3) -> str:
    clock = [1_000.0]
    monkeypatch.setattr(tqdm.std, "time", lambda: clock[0])
    out = io.StringIO()
    bar = tqdm.tqdm(total=len(step_times), file=out, smoothing=smoothing, mininterval=0.1)
    for dt in step_times:
        clock[0] += dt
        bar.update(1)
    bar.close()
    return out.getvalue()


def _read(text: str, tmp_path: Path) -> pl.DataFrame:
    log = tmp_path / "train.log"
    log.write_text(text)
    steps = parse([str(log)]).frames["steps"].filter(pl.col("origin") == "tqdm")
    return steps.unique("global_step", keep="last").sort("global_step").filter(pl.col("step_time_s").is_not_null())


SAVE_EVERY, SAVE_S, STEP_S = 25, 1.5, 0.05


def _saving_run(seed: int = 7) -> list[float]:
    rng = random.Random(seed)
    return [STEP_S * rng.uniform(0.95, 1.05) + (SAVE_S if i % SAVE_EVERY == 0 else 0.0) for i in range(1, 301)]


@pytest.mark.parametrize("smoothing", [0.3, 0.0])  # tqdm's default, and Lightning's bars
def test_tqdm_step_times_are_the_intervals_the_bar_averaged(monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
                                                            smoothing: float) -> None:
    truth = _saving_run()
    text = _bar(truth, monkeypatch, smoothing)
    # what the rows held before: the printed rate, with the saves leaked into every step after them
    printed = [float(f.strip().rsplit(", ", 1)[1][:-len("it/s]")]) for f in text.split("\r")
               if f.strip().endswith("it/s]") and "?" not in f]
    assert pl.Series([1 / r for r in printed]).median() > 1.3 * STEP_S
    steps = _read(text, tmp_path)
    t = steps["step_time_s"]
    assert abs(t.median() / STEP_S - 1) < 0.1, t.median()
    # every save stands out at its step or the one after it (an interval spans the steps between two refreshes)
    slow = set(steps.filter(pl.col("step_time_s") > 5 * STEP_S)["global_step"].to_list())
    for save in range(SAVE_EVERY, 301 - SAVE_EVERY, SAVE_EVERY):
        assert slow & {save, save + 1, save + 2}, save
    # and the time adds up to the run's: each printed count stands for the steps since the one before
    since = pl.col("global_step").diff().fill_null(pl.col("global_step"))
    measured = steps.select((pl.col("step_time_s") * since).sum()).item()
    last = steps["global_step"].max()
    assert abs(measured / sum(truth[:last]) - 1) < 0.05  # rates printed to 3-4 digits; undoing the average adds up


def test_a_bar_whose_rates_fit_no_average_keeps_its_printed_rates(tmp_path: Path) -> None:
    # rates that no smoothing of these intervals gives (a copy with the rates shuffled): left as printed
    lines = [f"{100 * n // 40:3d}%|#| {n}/40 [00:{n // 4:02d}<00:10, {r:.2f}it/s]"
             for n, r in zip(range(1, 41), random.Random(3).sample([4.0 + 0.1 * i for i in range(40)], 40))]
    steps = _read("\n".join(lines) + "\n", tmp_path)
    printed = [1 / float(s.split(", ")[-1][:-5]) for s in lines]
    assert steps["step_time_s"].to_list() == pytest.approx(printed, rel=1e-6)


def test_a_rise_is_a_trend_only_when_noise_would_rarely_order_it_so() -> None:
    assert rising_p(pl.Series([1.0 + 0.1 * i for i in range(12)])) < 0.001
    assert rising_p(pl.Series([1.0] * 12)) == 1.0
    # ten step times of the H200 ResNet-18 run printed every 10 steps: four rising quarter medians by chance
    noise = pl.Series([0.013, 0.020, 0.016, 0.021, 0.022, 0.023, 0.026, 0.025, 0.016])
    assert rising_p(noise) > rising_p(pl.Series([0.013, 0.016, 0.016, 0.020, 0.021, 0.022, 0.023, 0.025, 0.026]))
    long = pl.Series([random.Random(1).gauss(1.0, 0.05) + i * 1e-4 for i in range(5_000)])  # blocks of medians
    assert rising_p(long) < 0.05


@pytest.mark.parametrize(("command", "nodes"), [
    ("torchrun --nproc_per_node 4 train.py", 1),
    ("torchrun --standalone --nproc_per_node=8 train.py", 1),
    ("torchrun --nnodes $SLURM_NNODES --nproc_per_node 8 train.py", None),  # a flag whose value is not read
    ("export PET_NNODES=2\ntorchrun --nproc_per_node 8 train.py", None),
    ("torchrun --nnodes 2 --nproc_per_node 8 train.py", 2),
])
def test_torchrun_without_nnodes_runs_on_one_node(tmp_path: Path, command: str, nodes: int | None) -> None:
    script = tmp_path / "launch.sh"
    script.write_text("#!/usr/bin/env bash\n" + command + "\n")
    assert parse_script(script.read_text()).launcher == "torchrun"
    assert parse([str(script)]).facts.nodes == nodes


def test_two_hosts_bars_interleaved_behind_pdsh_prefixes_are_read_as_two_bars(monkeypatch: pytest.MonkeyPatch,
                                                                              tmp_path: Path) -> None:
    # each node's local rank 0 draws its own bar; pdsh prints them as they come, each line behind its host's name
    bars = {host: [seg for seg in _bar(_saving_run(seed), monkeypatch).split("\r") if "it/s]" in seg or "s/it]" in seg]
            for host, seed in (("node-a", 1), ("node-b", 2))}
    lines = [f"{host}: {seg.strip()}" for pair in zip(*bars.values()) for host, seg in zip(bars, pair)]
    log = tmp_path / "train.log"
    log.write_text("\n".join(lines) + "\n")
    steps = parse([str(log)]).frames["steps"].filter((pl.col("origin") == "tqdm") & pl.col("step_time_s").is_not_null())
    for host in bars:
        mine = steps.filter(pl.col("node") == host)
        assert mine.height > 50 and abs(mine["step_time_s"].median() / STEP_S - 1) < 0.1, host


def test_compare_names_the_saves_that_became_the_cause() -> None:
    # the baseline notes its three evaluations' stalls at info; on the candidate the saves are the cause
    from typer.testing import CliRunner

    from diagnose.cli import app
    res = CliRunner().invoke(app, ["compare", str(GPU / "hf_bf16"), str(GPU / "hf_ckpt_every_25"), "--format",
                                   "json"])
    doc = json.loads(res.output)
    assert "(periodic-stalls) appeared" in doc["verdict"]
    assert "periodic-stalls" in {f["id"] for f in doc["new_findings"]}


def test_a_tqdm_clock_that_raises_is_named_and_the_bar_keeps_its_printed_rates(monkeypatch: pytest.MonkeyPatch) -> None:
    import diagnose.parsers.run_model as run_model

    def broken(steps: pl.DataFrame, side: pl.DataFrame) -> pl.DataFrame:
        raise ValueError("a bar it cannot read")

    monkeypatch.setattr(run_model, "tqdm_step_times", broken)
    model = parse([str(GPU / "hf_ckpt_every_25")])
    assert model.faults == ("tqdm clock: ValueError: a bar it cannot read",)
    d = diagnose(model)
    assert d.metrics.steps is not None and d.metrics.steps.p50_s > 0.07  # the averaged rates, as before the clock
