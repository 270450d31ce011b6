"""Where the time went (issue 23): the goodput account, costs, change points and stragglers, on logs with known
injected parts (each within 5% of what was injected, the parts within 2% of the span) and on recorded samples."""
from __future__ import annotations

import json
from datetime import datetime, timedelta
from pathlib import Path

import pytest

import diagnose
from conftest import SAMPLES, analysed, bench, case_files, diagnosed
from diagnose.goodput import check_sum

T0 = datetime(2026, 11, 20, 9, 0, 0)
STEP = 2.0
STARTUP, COMPILE_STEP, CHECKPOINT, GAP_TO_BANNER, BANNER_TO_STEP, TAIL = 60.0, 6.0, 120.0, 30.0, 60.0, 30.0
SAVE_AT, CRASH_AT, SHIFT_AT, LAST, SLOW = 40, 80, 110, 150, 2.6


def _ds(t: datetime, where: str, msg: str) -> str:
    return f"[{t:%Y-%m-%d %H:%M:%S},{t.microsecond // 1000:03d}] [INFO] [{where}] {msg}"


def _banner(t: datetime) -> list[str]:
    return [_ds(t, "real_accelerator.py:203:get_accelerator", "Setting ds_accelerator to cuda (auto detect)"),
            _ds(t, "logging.py:96:log_dist", "[Rank 0] DeepSpeed info: version=0.14.4, git-hash=unknown, "
                                             "git-branch=unknown")]


def _step(t: datetime, n: int) -> str:
    return _ds(t, "logging.py:96:log_dist", f"[Rank 0] step={n}, skipped=0, lr=[2.9e-05], mom=[(0.9, 0.95)]")


def injected_log() -> tuple[str, dict[str, float]]:
    """A DeepSpeed run: a minute of startup, three compile steps, a checkpoint stall, a crash and a restart from the
    checkpoint (steps done twice), a 30% slowdown that stays, and a tail. -> (the log, the injected seconds)."""
    t = T0
    lines = _banner(t)
    t += timedelta(seconds=STARTUP)
    for n in range(1, CRASH_AT + 1):
        t += timedelta(seconds=COMPILE_STEP if n <= 3 else STEP + (CHECKPOINT if n == SAVE_AT + 1 else 0.0))
        lines.append(_step(t, n))
        if n == SAVE_AT:
            lines.append(_ds(t, "logging.py:96:log_dist", f"[Rank 0] Saving model checkpoint: /ckpt/global_step{n}/"
                                                          "mp_rank_00_model_states.pt"))
    crash = t
    t += timedelta(seconds=GAP_TO_BANNER)
    lines += _banner(t)
    t += timedelta(seconds=BANNER_TO_STEP)
    for n in range(SAVE_AT + 1, LAST + 1):
        t += timedelta(seconds=SLOW if n >= SHIFT_AT else STEP)
        lines.append(_step(t, n))
    t += timedelta(seconds=TAIL)
    lines.append(_ds(t, "launch.py:351:main", "Process 4242 exits successfully."))
    redone = CRASH_AT - SAVE_AT
    expected = {
        "startup": STARTUP + COMPILE_STEP,  # the first step line closes step 1: its time is in the startup
        "warmup": 2 * (COMPILE_STEP - STEP),
        "stalls": CHECKPOINT,
        "restarts": GAP_TO_BANNER + BANNER_TO_STEP + STEP + redone * STEP,
        "tail": TAIL,
        "span": (t - T0).total_seconds(),
    }
    expected["steps"] = expected["span"] - sum(v for k, v in expected.items() if k not in ("span",))
    assert crash < t
    return "\n".join(lines) + "\n", expected


@pytest.fixture(scope="module")
def injected(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict, dict[str, float]]:
    log, expected = injected_log()
    path = tmp_path_factory.mktemp("goodput") / "train.log"
    path.write_text(log)
    return json.loads(diagnose.analyse(path).render("json")), expected


def test_each_injected_part_is_measured_within_five_percent(injected: tuple[dict, dict[str, float]]) -> None:
    doc, expected = injected
    g = doc["goodput"]
    parts = {p["name"]: p for p in g["parts"]}
    assert g["clock"] == "timestamps" and g["launches"] == 2
    assert g["span_s"] == pytest.approx(expected["span"], rel=0.001)
    for name in ("startup", "warmup", "stalls", "restarts", "tail", "steps"):
        assert parts[name]["seconds"] == pytest.approx(expected[name], rel=0.05), name
    assert abs(sum(p["seconds"] for p in g["parts"]) - g["span_s"]) <= 0.02 * g["span_s"]
    (stall,) = parts["stalls"]["pieces"]
    assert stall["name"] == "checkpoint" and stall["step"] == SAVE_AT + 1
    # The stall rests on the step line that closed it and on the checkpoint line printed before it.
    lines = injected_log()[0].splitlines()
    assert any("Saving model checkpoint" in lines[e["line"] - 1] for e in stall["evidence"])
    (restart,) = parts["restarts"]["pieces"]
    assert restart["step"] == SAVE_AT and "40 step(s) done twice" in restart["basis"]


def test_the_shift_is_found_at_its_step_with_both_levels(injected: tuple[dict, dict[str, float]]) -> None:
    doc, _ = injected
    cps = doc["goodput"]["change_points"]
    (shift,) = cps["shifts"]
    assert abs(shift["step"] - SHIFT_AT) <= 2
    assert shift["before_s"] == pytest.approx(STEP, rel=0.05) and shift["after_s"] == pytest.approx(SLOW, rel=0.05)
    assert cps["slowdown_s"] == pytest.approx((SLOW - STEP) * (LAST - SHIFT_AT + 1), rel=0.1)


def test_a_single_spike_is_not_a_shift() -> None:
    import polars as pl

    from diagnose import changepoints

    times = [1.0] * 60
    times[30] = 9.0
    series = pl.DataFrame({"step": range(1, 61), "step_time_s": times, "ts": [None] * 60},
                          schema_overrides={"ts": pl.Datetime("ms")})
    empty = pl.DataFrame(schema={"kind": pl.String, "ts": pl.Datetime("ms"), "source": pl.Int64, "line": pl.Int64})
    steps = pl.DataFrame(schema={"global_step": pl.Int64, "lr": pl.Float64, "global_batch": pl.Int64,
                                 "source": pl.Int64, "line": pl.Int64})
    found = changepoints.find(series, empty, steps)
    assert found is not None and found.shifts == () and found.pattern is None


def test_the_largest_measured_loss_heads_the_report_and_ranks_its_finding() -> None:
    doc = json.loads(analysed(SAMPLES / "synthetic" / "checkpoint_stalls").render("json"))
    top = doc["findings"][0]
    assert top["id"] == "periodic-stalls" and top["cost"]["measure"] == "stalls"
    assert top["cost"]["lost_s"] == pytest.approx(360.0, rel=0.05)  # two 180 s checkpoint stalls were injected
    assert "lost to stalls" in doc["verdict"] and f"{top['cost']['share']:.0%} of the run" in doc["verdict"]
    comm = json.loads(analysed(SAMPLES / "synthetic" / "multinode_socket").render("json"))
    socket = next(f for f in comm["findings"] if f["id"] == "nccl-socket-transport")
    c = socket["cost"]
    assert c["gpu_hours"] == pytest.approx(c["lost_s"] * 16 / 3600, rel=1e-6)
    assert c["saves_gpu_hours"] == pytest.approx(c["gpu_hours"] * (1 - 25 / 200), rel=1e-6)
    assert "/ 200 Gb/s" in c["arithmetic"] and c["per_1000_steps"] > 0


def test_a_persistent_straggler_is_named_with_its_wait() -> None:
    doc = json.loads(analysed(SAMPLES / "synthetic" / "straggler").render("json"))
    s = doc["goodput"]["stragglers"]
    assert s["kind"] == "persistent" and s["rank"] == 5 and s["share"] == 1.0
    straggler = next(f for f in doc["findings"] if f["id"] == "straggler")
    assert straggler["cost"]["lost_s"] == pytest.approx(s["wait_s_per_step"] * doc["goodput"]["steps"], rel=1e-6)
    # Without line timestamps the time around the steps is unknown, not folded into the steps.
    parts = {p["name"]: p["seconds"] for p in doc["goodput"]["parts"]}
    assert parts["startup"] is None and parts["tail"] is None and doc["goodput"]["goodput"] is None


def test_a_moving_straggler_is_told_from_a_persistent_one(tmp_path: Path) -> None:
    """Four ranks; each step a different rank runs 40% slow: the input, not a GPU."""
    lines = []
    for step in range(12):
        slow = step % 4
        for rank in range(4):
            fwd = 300.0 * (1.4 if rank == slow else 1.0)
            lines.append(f"{rank}: [Rank {rank}] time (ms) | fwd: {fwd:.2f} | bwd: 700.00 | bwd_inner: 560.00 | "
                         f"bwd_allreduce: 140.00 | step: 40.00")
    (tmp_path / "train.log").write_text("\n".join(lines) + "\n")
    doc = json.loads(diagnose.analyse(tmp_path / "train.log").render("json"))
    assert doc["goodput"]["stragglers"] is None  # 1.12x the median rank: under the imbalance gate, not named
    lines = [ln.replace("fwd: 420.00", "fwd: 900.00") for ln in lines]
    (tmp_path / "train.log").write_text("\n".join(lines) + "\n")
    s = json.loads(diagnose.analyse(tmp_path / "train.log").render("json"))["goodput"]["stragglers"]
    assert s["kind"] == "moving" and s["share"] == 0.25 and sorted(s["moving_ranks"]) == [0, 1, 2, 3]


def _megatron_with_straggler_reports(slow_of: list[int], spread: float) -> str:
    """A Megatron-LM run logging every 10 iterations with `--log-straggler --straggler-minmax-count 2` on 8 ranks:
    interval i's slowest rank is slow_of[i] (lowest clock, hottest), `spread` its round trip over the fastest's."""
    lines = []
    for i, slow in enumerate(slow_of):
        t = T0 + timedelta(seconds=35 * (i + 1))
        it = 10 * (i + 1)
        fast = 3400.0
        lines.append(f"[{t:%Y-%m-%d %H:%M:%S}] iteration {it:>8}/    1000 | consumed samples: {it * 256:>10} | "
                     f"elapsed time per iteration (ms): {fast * spread:.1f} | learning rate: 3.000E-04 | global batch "
                     "size:   256 | lm loss: 7.1E+00 | loss scale: 1.0 | grad norm: 1.2 | number of skipped "
                     "iterations:   0 | number of nan iterations:   0 |")
        other = (slow + 3) % 8
        lines.append(f"[{t:%Y-%m-%d %H:%M:%S}.500] INFO:megatron.core.utils:{t.timestamp():.3f} | "
                     f"MnRtt/Rnk: {fast:.2f}ms/{other} | MxRtt/Rnk: {fast * spread:.2f}ms/{slow} | "
                     f"MnPwr/Rnk: 540.00W/{slow} | MxPwr/Rnk: 690.00W/{other} | MnTmp/Rnk: 52.00C/{other} | "
                     f"MxTmp/Rnk: 84.00C/{slow} | MnUtl/Rnk: 96.00%/{slow} | MxUtl/Rnk: 100.00%/{other} | "
                     f"MnClk/Rnk: 1290.00MHz/{slow} | MxClk/Rnk: 1980.00MHz/{other} | MnDRtt/Rnk: 3.10ms/{other} | "
                     f"MxDRtt/Rnk: 4.20ms/{(slow + 1) % 8} | MnEtpt/Rnk: {390 / spread:.2f}TF/{slow} | "
                     f"MxEtpt/Rnk: 390.00TF/{other}")
        lines.append(f"^^^^ Bottom 2 Ranks with lowest  Etpt(TF): {390 / spread:.2f}/{slow}, 385.10/{other},")
        lines.append(f"^^^^ Top    2 Ranks with highest Etpt(TF): 389.20/{(other + 1) % 8}, 390.00/{other},")
    return "\n".join(lines) + "\n"


def test_megatron_straggler_reports_name_a_persistent_rank_and_its_clock(tmp_path: Path) -> None:
    log = tmp_path / "megatron.log"
    log.write_text(_megatron_with_straggler_reports([5] * 9 + [2], spread=1.35))
    a = diagnose.analyse(log)
    frame = a.runs[0].model.frames["rank_extremes"]
    assert frame.filter(frame["rtt_max_rank"].is_not_null()).height == 10
    assert frame["clock_min_mhz"].drop_nulls()[0] == 1290.0 and frame["low_etpt_ranks"].drop_nulls().len() == 10
    doc = json.loads(a.render("json"))
    s = doc["goodput"]["stragglers"]
    assert (s["basis"], s["kind"], s["rank"], s["share"]) == ("megatron", "persistent", 5, 0.9)
    assert s["ratio"] == pytest.approx(1.35, rel=1e-3)
    assert s["wait_s_per_step"] == pytest.approx(3.4 * 0.35, rel=1e-3)
    assert any("lowest GPU clock in 9 of 10 reports (median 1290 MHz against 1980" in x for x in s["signals"])
    assert any("highest temperature" in x for x in s["signals"])
    assert any("lowest-throughput ranks in 10 of 10" in x for x in s["signals"])
    assert not any("get_batch" in x for x in s["signals"])  # the data wait sat on another rank
    finding = next(f for f in doc["findings"] if f["id"] == "straggler")
    assert finding["title"].startswith("Rank 5 is the slowest in 90% of Megatron's straggler reports")
    assert "MxRtt/Rnk: 4590.00ms/5" in finding["evidence"][0]["text"]
    assert finding["cost"]["lost_s"] == pytest.approx(s["wait_s_per_step"] * doc["goodput"]["steps"], rel=1e-6)
    assert "Persistent straggler: rank 5 had the longest round trip in 90% of 10 straggler reports" in \
        a.render("md")


def test_megatron_straggler_reports_tell_a_moving_rank_and_stay_quiet_under_the_gate(tmp_path: Path) -> None:
    log = tmp_path / "megatron.log"
    log.write_text(_megatron_with_straggler_reports([i % 8 for i in range(10)], spread=1.3))
    s = json.loads(diagnose.analyse(log).render("json"))["goodput"]["stragglers"]
    assert (s["basis"], s["kind"], s["share"]) == ("megatron", "moving", 0.2)
    assert sorted(s["moving_ranks"]) == list(range(8)) and s["signals"] == []
    log.write_text(_megatron_with_straggler_reports([5] * 10, spread=1.1))
    doc = json.loads(diagnose.analyse(log).render("json"))
    assert doc["goodput"]["stragglers"] is None and "straggler" not in {f["id"] for f in doc["findings"]}


def test_mfu_says_what_it_lacked() -> None:
    doc = json.loads(analysed(SAMPLES / "synthetic" / "checkpoint_stalls").render("json"))
    assert doc["metrics"]["mfu"] is None
    assert "the sequence length (--seq-len)" in doc["goodput"]["mfu_missing"]
    seed = json.loads(diagnose.analyse(SAMPLES / "synthetic" / "seed_zero3_launch_blocking").render("json"))
    assert seed["metrics"]["mfu"] is not None and seed["goodput"]["mfu_missing"] == []


def test_every_format_shows_the_account(injected: tuple[dict, dict[str, float]], tmp_path: Path) -> None:
    log, _ = injected_log()
    path = tmp_path / "train.log"
    path.write_text(log)
    a = diagnose.analyse(path)
    md = a.render("md")
    assert "### Where the time went" in md and "| restarts |" in md and "| · checkpoint at step 41 |" in md
    html = a.render("html")
    assert 'id="time"' in html and "Where the time went (goodput account)" in html
    text = a.render("text")
    assert "Where the time went" in text and "restarts" in text and "checkpoint at step 41" in text


@pytest.mark.slow
def test_recorded_samples_add_up(tmp_path: Path) -> None:
    """Every recorded sample with line timestamps: the parts add up to the span within 2%."""
    checked = 0
    for run in sorted(p for p in SAMPLES.iterdir() if p.is_dir() and p.name.startswith(("ds_", "hf_"))):
        for r in diagnose.analyse(run).runs:
            acc = r.diagnosis.goodput
            if acc is not None and acc.span_s:
                assert check_sum(acc) <= 0.02, run.name
                checked += 1
    assert checked >= 5


def test_wandb_times_are_not_mixed_into_a_log_clock(tmp_path: Path) -> None:
    """A log in the node's local time beside a W&B run (UTC, here five hours apart): the span is the log's."""
    log, expected = injected_log()
    shifted = "\n".join(ln.replace("[2026-11-20 09:", "[2026-11-20 14:").replace("[2026-11-20 10:", "[2026-11-20 15:")
                        for ln in log.splitlines()) + "\n"
    (tmp_path / "train.log").write_text(shifted)
    run = next((SAMPLES / "synthetic" / "checkpoint_stalls" / "wandb").iterdir())
    doc = json.loads(diagnose.analyse([tmp_path / "train.log", run]).render("json"))
    assert any(s["kind"] == "wandb_run" for s in doc["sources"])
    assert doc["goodput"]["span_s"] == pytest.approx(expected["span"], rel=0.001)


def _doc_of(tmp_path: Path, lines: list[str]) -> dict:
    (tmp_path / "train.log").write_text("\n".join(lines) + "\n")
    return json.loads(diagnose.analyse(tmp_path / "train.log").render("json"))


def test_a_step_counter_that_restarts_each_epoch_is_not_a_relaunch(tmp_path: Path) -> None:
    """Steps 1..30 then 1..30 again at the usual pace: one launch, every interval a step."""
    t, lines = T0, _banner(T0)
    for epoch in range(2):
        for n in range(1, 31):
            t += timedelta(seconds=STEP)
            lines.append(_step(t, n))
    g = _doc_of(tmp_path, lines)["goodput"]
    parts = {p["name"]: p["seconds"] for p in g["parts"]}
    assert g["launches"] == 1 and parts["restarts"] == 0
    assert parts["steps"] == pytest.approx(59 * STEP, rel=0.01)


def test_a_step_line_printed_while_engines_are_built_is_startup(tmp_path: Path) -> None:
    """DeepSpeed prints `step=0` as each engine is built; a second engine's banner after it (DeepSpeed-Chat's
    actor and reference models) is still the startup, not a restart."""
    t = T0
    lines = _banner(t) + [_step(t + timedelta(seconds=5), 0)]
    t += timedelta(seconds=40)
    lines += _banner(t)
    for n in range(1, 31):
        t += timedelta(seconds=STEP)
        lines.append(_step(t, n))
    g = _doc_of(tmp_path, lines)["goodput"]
    parts = {p["name"]: p["seconds"] for p in g["parts"]}
    assert g["launches"] == 1 and parts["restarts"] == 0
    assert parts["startup"] == pytest.approx(40 + STEP, rel=0.01)  # to the first step line after the banner


@pytest.mark.slow
@pytest.mark.xdist_group("corpus")  # with the other tests that read every case (accuracy.read)
def test_every_timestamped_account_of_the_corpus_adds_up() -> None:
    """The labelled real logs and the samples: wherever there are line timestamps, the parts sum to the span."""
    checked = 0
    for which in ("real", "samples"):
        for name, files, _ in bench("accuracy").cases(which):
            acc = diagnosed(tuple(files))[1].goodput
            if acc is not None and acc.span_s:
                assert check_sum(acc) <= 0.02, name
                checked += 1
    assert checked >= 21  # the samples have 21 with line timestamps; the real corpus adds 15 when beside the checkout


@pytest.mark.slow
@pytest.mark.xdist_group("corpus")  # every sample, through the corpus tests' cache (conftest.diagnosed)
def test_the_headline_names_only_its_own_causes_cost() -> None:
    """Issue 31, must 4: a cost beside the headline cause's title is that cause's own (the seed's launch-blocking
    cause once carried the communication finding's 0.76 GPU-hours; allocator_flush the input finding's)."""
    from diagnose import costs

    seen = 0
    for run in sorted({p.parent for p in SAMPLES.rglob("*.log") if "wandb" not in p.parts}):
        d = diagnosed((str(run),))[1]
        top = next((f for f in d.findings if f.explains_slowdown and f.severity != "info"), None)
        if top is None or " lost to " not in d.verdict:
            continue
        seen += 1
        assert top.cost is not None and f"lost to {costs.LABELS[top.cost.measure]}" in d.verdict, (run, d.verdict)
    assert seen >= 3


def test_what_a_fix_saves_is_the_traffic_it_removes() -> None:
    """Issue 31, must 4: ZeRO-3 -> ZeRO-1 on the seed still all-reduces the gradients, so the fix saves the traffic
    difference (the planner's 62.5 -> 10.4 GB per GPU per step), not all communication."""
    doc = json.loads(diagnose.analyse(SAMPLES / "synthetic" / "seed_zero3_launch_blocking").render("json"))
    f = next(x for x in doc["findings"] if x["id"] == "grad-accum-zero-traffic")
    before, after = f["data"]["traffic_gb_per_step"]
    assert after < before and f["cost"]["saves_gpu_hours"] == pytest.approx(
        f["cost"]["gpu_hours"] * (1 - after / before), rel=1e-6)
    assert "so it saves" in f["cost"]["arithmetic"]


@pytest.mark.slow
@pytest.mark.xdist_group("corpus")  # reads every case through the corpus tests' cache (conftest.diagnosed)
def test_a_stall_findings_share_and_seconds_are_its_costs() -> None:
    """Issue 31, must 4: a stall finding's share and seconds come from the numbers its cost is priced by (once
    'adding 39% to the run's time' from the printed spikes beside '0 s in all' from the account): on every sample
    and every real case, the summary prints the cost's own seconds and share."""
    from diagnose.parsers import InputError

    runs = [(str(p),) for p in sorted({p.parent for p in SAMPLES.rglob("*.log") if "wandb" not in p.parts})]
    real = Path(__file__).resolve().parents[2] / "shared" / "corpus" / "real"
    runs += [case_files(p) for p in sorted(real.iterdir()) if p.is_dir()] if real.is_dir() else []
    seen = 0
    for run in runs:
        try:
            d = diagnosed(run)[1]
        except InputError:
            continue
        for f in (x for x in d.findings if x.id == "periodic-stalls"):
            seen += 1
            c = f.cost
            assert c is not None and c.measure == "stalls", run
            assert c.lost_s == pytest.approx(f.data["stall_s"]) and f"{c.lost_s:.3g} s" in f.summary, (run, f.summary)
            if c.share is not None:
                assert f.data["stall_share"] == pytest.approx(c.share) and f"{c.share:.0%} of the run" in f.summary
                assert (f.severity != "info") == (c.share >= 0.1), (run, c.share, f.severity)
            else:  # no span: a share of the timed steps, said so, never "of the run"
                assert "of the run" not in f.summary, (run, f.summary)
    assert seen >= 3


def _ds_steps(times: list[datetime]) -> str:
    return "".join(_step(t, n) + "\n" for n, t in enumerate(times, 1))


def test_a_clock_that_goes_back_while_the_steps_go_on_is_not_a_relaunch(tmp_path: Path) -> None:
    """Issue 35: the benchmark log's clock goes back an hour every 3,600 steps; sorted by time, each jump read as a
    relaunch (33,917 launches). In file order the count carries on: the account says so and uses the steps' times."""
    times = [T0 + timedelta(seconds=STEP * n) - timedelta(hours=n // 100) for n in range(300)]
    path = tmp_path / "train.log"
    path.write_text(_ds_steps(times))
    g = json.loads(diagnose.analyse(path).render("json"))["goodput"]
    assert g["launches"] == 1 and g["clock"] == "step times"
    assert "goes back 2 time(s)" in g["clock_note"]
    parts = {p["name"]: p["seconds"] for p in g["parts"]}
    assert parts["restarts"] is None  # not measured without the timestamps, never 2 invented relaunches


def test_an_account_lists_at_most_fifty_stalls_and_counts_the_rest(tmp_path: Path) -> None:
    times, t = [], T0
    for n in range(1, 601):
        t += timedelta(seconds=STEP + (30.0 if n % 5 == 0 else 0.0))
        times.append(t)
    path = tmp_path / "train.log"
    path.write_text(_ds_steps(times))
    g = json.loads(diagnose.analyse(path).render("json"))["goodput"]
    stalls = next(p for p in g["parts"] if p["name"] == "stalls")
    assert len(stalls["pieces"]) == 51 and stalls["pieces"][-1]["name"] == "70 more"
    assert sum(p["seconds"] for p in stalls["pieces"]) == pytest.approx(stalls["seconds"])
    assert stalls["seconds"] == pytest.approx(120 * 30.0, rel=0.02)
