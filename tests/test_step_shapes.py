"""Step-time shapes read as the family they are (issue 30, must 10): stalls that recur at a period among other
spikes, pauses between step lines at checkpoints, a data loader's rhythm, waits for data now and then, and the phases
of an RL step. Lines are written in the layouts the trainers print (../shared/reference/formats); the real logs these
families came from are read at the end (../shared/corpus/real, skipped when absent)."""
from __future__ import annotations

from pathlib import Path

import pytest

from diagnose.engine import diagnose
from diagnose.metrics import spike_period
from diagnose.parsers import parse


def _diagnosis(tmp_path: Path, lines: list[str], name: str = "train.log"):
    p = tmp_path / name
    p.write_text("\n".join(lines) + "\n")
    return diagnose(parse([str(p)]))


def _ids(d) -> list[str]:
    return [f.id for f in d.findings]


def test_a_period_among_other_spikes() -> None:
    evals = list(range(201, 5800, 200))
    assert spike_period(sorted(evals + [5081]), [28.0] * len(evals) + [2.0]) == 200  # one stray spike
    shards = [round(190.7 * k) for k in range(1, 30)]
    evals = list(range(250, 5600, 250))
    spikes = sorted(set(shards + evals))
    weights = [18.8 if s in evals else 3.2 for s in spikes]
    assert spike_period(spikes, weights) == 250  # two interleaved events: the costlier one is named
    assert spike_period([12, 13, 23, 24], [1.0] * 4) is None  # two pairs the same distance apart are no period
    assert spike_period([10, 20, 30], [1.0] * 3) == 10
    assert spike_period([3, 50, 71, 140, 300], [1.0] * 5) is None
    # a save every 25 steps read from a bar on one or two steps beside each other (the H200's hf_ckpt_every_25)
    saves = [24, 26, 50, 51, 75, 76, 100, 101, 124, 125, 149, 150, 174, 175, 198, 200, 224, 225, 249, 251, 275, 276]
    assert spike_period(saves, [1.0] * len(saves)) == 25  # was 51: the pairs' distances split 24 / 25 / 26
    assert spike_period([2, 4, 6, 8, 10, 12], [1.0] * 6) == 2  # a loader's every other step stays its own period


NANOGPT = "step {i:5d} | loss: 3.2{r:02d} | lr 6.0000e-04 | norm: 0.3000 | dt: {ms:.2f}ms | tok/sec: 662857.74"


def test_evaluation_every_n_steps_among_other_spikes_is_periodic(tmp_path: Path) -> None:
    lines = []
    for i in range(1, 1300):
        ms = 790.0 + (i % 7)
        if i % 100 == 0:
            ms = 18755.0
        elif i == 777:
            ms = 3100.0
        lines.append(NANOGPT.format(i=i, r=i % 100, ms=ms))
    d = _diagnosis(tmp_path, lines)
    assert d.metrics.steps is not None and d.metrics.steps.spike_period == 100
    f = next(f for f in d.findings if f.id == "periodic-stalls")
    assert "(every 100 steps)" in f.evidence[0].text
    # the 12 evaluations and the stray spike over the timed steps (no line timestamps: no span of the run)
    extra = 12 * (18755.0 - 793.0) + (3100.0 - 793.0)
    assert f.severity == "warning" and f.data["stall_share"] == pytest.approx(extra / (1299 * 793.0 + extra), rel=0.05)
    assert "of the timed steps" in f.summary


MEGATRON = ("[2026-06-24 15:{m:02d}:{s:06.3f}] iteration {i:>8}/     154 | consumed samples: {c:>8} | elapsed time per "
            "iteration (ms): {ms:.1f} | learning rate: 3.0E-04 | global batch size:   448 | lm loss: 8.1E+00 | "
            "loss scale: 1.0 | grad norm: 1.000 | number of skipped iterations:   0 | number of nan iterations:   0 |")


def test_pauses_at_checkpoints_between_step_lines_are_periodic_stalls(tmp_path: Path) -> None:
    """Megatron's time per iteration leaves the save out: the pause is in the lines' timestamps only."""
    t, lines = 0.0, []
    for i in range(1, 61):
        t += 1.47
        lines.append(MEGATRON.format(m=int(t // 60), s=t % 60, i=i, c=448 * i, ms=1470.0))
        if i % 10 == 0:
            lines.append(f"[2026-06-24 15:{int(t // 60):02d}:{t % 60:06.3f}] saving checkpoint at iteration "
                         f"{i:>7} to /scratch/ckpt in torch_dist format")
            t += 1.6
    d = _diagnosis(tmp_path, lines)
    f = next(f for f in d.findings if f.id == "periodic-stalls")
    assert f.title == "Training stalls at each checkpoint"
    assert "pauses at a checkpoint every 10 steps" in f.evidence[0].text
    assert f.data["stall_share"] == pytest.approx(5 * 1.6 / (60 * 1.47), rel=0.1)


CLIP = "02/09/2022 12:{m:02d}:{s:02d} - INFO - Epoch: 1/30, Step: {i}/951, Lr: 0.000000000, Loss: 3.25, Time/step: {t}"


def test_every_second_step_waiting_with_nothing_printed_is_the_loader(tmp_path: Path) -> None:
    t, lines = 0, []
    for i in range(1, 13):
        step = 44.2 if i % 2 else 4.5
        t += int(step)
        lines.append(CLIP.format(m=t // 60, s=t % 60, i=i, t=f"{step:.6f}"))
    d = _diagnosis(tmp_path, lines)
    assert d.metrics.loader_period == 2
    assert "periodic-stalls" not in _ids(d)
    f = next(f for f in d.findings if f.id == "input-bound")
    assert f.summary.startswith("Every 2nd step waits for its batch")


def test_a_save_every_second_step_is_no_loader_rhythm(tmp_path: Path) -> None:
    lines = []
    for i in range(0, 12):
        if i % 2 == 0:
            lines += [f"step {i}: train loss 10.9, val loss 10.9", "saving checkpoint to out"]
        lines.append(f"iter {i}: loss 10.9, time {20176.69 if i % 2 == 0 and i else 923.17:.2f}ms, mfu 30.00%")
    d = _diagnosis(tmp_path, lines)
    assert d.metrics.loader_period is None
    assert "periodic-stalls" in _ids(d) and "input-bound" not in _ids(d)


def test_a_wait_for_data_now_and_then_is_input_bound(tmp_path: Path) -> None:
    waits = [0.0001, 0.0001, 0.0002, 19.6173, 0.0002, 0.0001, 0.0002, 0.0001]
    lines = [f"load_data_time: {w}, train_step_time: {0.64 + 0.01 * (k % 3):.3f}" for k, w in enumerate(waits)]
    d = _diagnosis(tmp_path, lines)
    share, step, longest = d.metrics.data_stalls
    assert longest == pytest.approx(19.6173) and share > 0.5
    f = next(f for f in d.findings if f.id == "input-bound")
    assert "19.6 s at step" in f.summary


PROGRESS_METER = "Epoch: [{e}][{i}/196]\tTime {t:.3f} ({t:.3f})\tData {d:.3f} ({d:.3f})\tLoss 0.0000 (0.0000)"


def test_a_first_batch_wait_in_lines_printed_every_50_steps_is_not_summed(tmp_path: Path) -> None:
    lines = []
    for e in range(1, 4):
        for i in (0, 50, 100, 150, 195):
            lines.append(PROGRESS_METER.format(e=e, i=i, t=17.0 if i == 0 else 3.14, d=12.6 if i == 0 else 0.014))
    d = _diagnosis(tmp_path, lines)
    assert d.metrics.data_stalls is None
    assert "input-bound" not in [f.id for f in d.findings if f.explains_slowdown]


VERL = ("step:{i} - actor/pg_loss:0.01 - actor/grad_norm:0.2 - response_length/mean:{r} - timing_s/gen:{g} - "
        "timing_s/ref:{ref} - timing_s/update_actor:{u} - timing_s/step:{s} - perf/time_per_step:{s}")


def _verl(tmp_path: Path, gens: list[float]) -> object:
    lines = [VERL.format(i=i + 1, r=300 + 5 * i, g=g, ref=0.6 * g, u=100.0, s=g + 0.6 * g + 100.0 + 20.0)
             for i, g in enumerate(gens)]
    return _diagnosis(tmp_path, lines)


def test_rl_steps_whose_largest_phase_is_generation(tmp_path: Path) -> None:
    d = _verl(tmp_path, [285.0 + (k % 5) for k in range(20)])
    f = next(f for f in d.findings if f.id == "rlhf-generation-bound")
    assert 0.45 < d.metrics.generation_share < 0.5  # under half, and still the largest phase
    assert "against 17% for the training phase" in f.summary and "gpu_memory_utilization" in f.fix.summary
    assert "enable_hybrid_engine" not in str(f.fix.changes)


def test_rl_steps_that_slow_down_with_their_rollouts_are_no_leak(tmp_path: Path) -> None:
    d = _verl(tmp_path, [150.0 + 15.0 * k for k in range(24)])
    f = next(f for f in d.findings if f.id == "progressive-slowdown")
    assert f.title == "RL steps get longer as the rollouts do" and not f.explains_slowdown


@pytest.mark.parametrize("case, expected", [
    ("d-nanogpt-gpt2-124m-2gpu", "periodic-stalls"), ("d-megatron-gpt2-345m-8gpu", "periodic-stalls"),
    ("a-megatron-llama3-1b-gdn-56gpu", "periodic-stalls"), ("c-CLIP4Clip-58", "input-bound"),
    ("c-Open-AnimateAnyone-101", "input-bound"), ("b-verl-qwen3b-8gpu", "rlhf-generation-bound"),
])
def test_the_real_logs_of_these_families(case: str, expected: str, corpus: Path) -> None:
    folder = corpus / "real" / case
    if not folder.is_dir():
        pytest.skip(f"{case} not in the shared corpus")
    files = [str(p) for p in folder.iterdir() if p.name != "truth.json" and not p.name.startswith("log_")]
    d = diagnose(parse(files))
    assert expected in _ids(d)[:3]


SAMPLES = Path(__file__).resolve().parent.parent / "sample_logs"


def test_a_per_step_line_beside_every_k_steps_engine_lines_is_the_step_clock() -> None:
    """The recorded ZeRO-3 offload run prints `[train] global_step=N ... elapsed=Ts` each step and DeepSpeed's
    `step=N` line every 5 (steps_per_print): the per-step times are the finer clock, so its report times the 19
    steps, not 3 five-step windows."""
    import re

    log = (SAMPLES / "ds_zero3_offload" / "train.log").read_text()
    elapsed = [float(v) for v in re.findall(r"global_step=\d+ loss=\S+ elapsed=([\d.]+)s", log)]
    diffs = sorted(b - a for a, b in zip(elapsed, elapsed[1:]))
    m = diagnose(parse([str(SAMPLES / "ds_zero3_offload")])).metrics
    assert m.steps is not None and m.steps.source == "printed" and m.steps.n == len(diffs) - 1  # warm-up dropped
    assert m.steps.p50_s == pytest.approx(diffs[len(diffs) // 2], abs=0.051)
    # A run whose engine prints every step keeps the engine's stamps (the trainer's line is no finer there).
    assert diagnose(parse([str(SAMPLES / "ds_zero0")])).metrics.steps.source == "ds_step_ts"


def test_one_steps_time_printed_every_k_steps_is_no_finer_clock(corpus: Path) -> None:
    """mlprof prints `step=6.0000 dt=0.0152` every 5 steps: one step's time, sampled; DeepSpeed's stamps every 10
    steps stay the step clock (the sampled dt leaves out the host time between steps)."""
    folder = corpus / "real" / "mlprof-ds"
    if not folder.is_dir():
        pytest.skip("mlprof-ds not in the shared corpus")
    m = diagnose(parse([str(folder / "log.txt")])).metrics
    assert m.steps is not None and m.steps.source == "ds_step_ts"
