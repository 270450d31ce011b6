"""What threads say in sentences (issue 30, must 6) and what the analysis makes of it: settings, durations and the
setting they belong to, a stated share of time in NCCL, and the scaling comparison they give (diagnose/scaling.py).
The sentences below are the families seen in threads, several wordings each; the real threads are read at the end
(../shared/corpus/real, skipped when absent)."""
from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest

from diagnose.engine import diagnose
from diagnose.metrics import compute
from diagnose.parsers import parse, prose
from diagnose.scaling import compare


def _stated(*lines: str) -> pl.DataFrame:
    rows = pl.DataFrame({"source": [0] * len(lines), "line": list(range(1, len(lines) + 1)), "text": list(lines)},
                        schema={"source": pl.UInt32, "line": pl.UInt32, "text": pl.String})
    return prose.read(prose.candidates(rows))


def _settings(text: str) -> tuple[int | None, int | None]:
    rows = _stated(text).filter(pl.col("quantity") == "setting")
    assert rows.height == 1, rows
    return rows["gpus"][0], rows["nodes"][0]


@pytest.mark.parametrize("text, gpus, nodes", [
    ("I training my model on one GPU(v100), the speed as below:", 1, None),
    ("when I use 8GPU on one node, with DistributedDataParallel", 8, 1),
    ("Training with 3 nodes :", None, 3),
    ("Single node training (no distribution of any kind) :", None, 1),
    # a per-node count times the nodes the line names is the run's; alone it is not (below)
    ("a cluster with three GPU nodes, each node has one GPU (Nvidia T4)", 3, 3),
    ("I trained with batch size 256 on 2 host, 8 gpus per host.", 16, 2),
    ("• 7 Nodes, 3 nodes have one Telsa T4", 3, 3),
    ("on 4 nodes x 8 GPUs each", 32, 4),
    ("We run on 8x A100 80GB", 8, None),
    # the count after the nodes is each node's, with the card's memory or the word GPU between it and `each`
    ("I am running on 2 nodes with 8x A100 80GB each, ZeRO stage 3.", 16, 2),
    ("2 nodes with 8 x A100-80GB", 16, 2),
    ("2 nodes, each with 8x H100 80GB GPUs", 16, 2),
    ("4 nodes x 8 GPUs", 32, 4),
    ("4 nodes of 8 GPUs", 32, 4),
    ("8 A100 (80GB) per node, 2 nodes", 16, 2),
    ("16 GPUs over 2 nodes", 16, 2),
    ("single node with 8x A100 80GB", 8, 1),
    # a VM (a machine) with its GPUs is one node
    ("我有一个带有 2 个 V100 的虚拟机", 2, 1),
    ("I have a VM with 2 V100s", 2, 1),
    ("both GPUs are on the same machine, 4x RTX 3090", 4, 1),
    ("on a single GPU it trains fine", 1, None),
])
def test_settings_in_sentences(text: str, gpus: int | None, nodes: int | None) -> None:
    assert _settings(text) == (gpus, nodes)


@pytest.mark.parametrize("text", ["we use one GPU per node for this", "each node has 8x A100 40GB"])
def test_a_per_node_count_alone_is_no_setting(text: str) -> None:
    assert _stated(text).filter(pl.col("quantity") == "setting").height == 0


@pytest.mark.parametrize("text, quantity, seconds", [
    ("each step takes about 2.4 s now", "step_time", 2.4),
    ("it runs at 90 s per iteration", "step_time", 90.0),
    ("7 min per step, which is far too slow", "step_time", 420.0),
    ("an epoch takes 5 h on this machine", "epoch_time", 18000.0),
    ("WALL training time is 63.598 seconds", "total_time", 63.598),
    ("training took 3.5 hours in all", "total_time", 12600.0),
])
def test_durations_and_what_they_are_of(text: str, quantity: str, seconds: float) -> None:
    rows = _stated(text).filter(pl.col("quantity") != "setting")
    assert rows["quantity"].to_list() == [quantity]
    assert rows["value"][0] == pytest.approx(seconds)


def test_a_number_without_a_unit_or_subject_is_no_duration() -> None:
    assert _stated("I use a 1024 batch-size and train for 20 epochs").filter(
        pl.col("quantity") != "setting").height == 0


def test_a_pair_on_one_line_takes_its_settings_in_order() -> None:
    rows = _stated("在单个 GPU 上的训练速度明显快于 2GPU:约 5 小时 vs 约 6.5 小时。")
    times = rows.filter(pl.col("quantity") == "total_time")
    assert times.select("gpus", "value").rows() == [(1, 18000.0), (2, 23400.0)]
    rows = _stated("With 1 GPU training takes 4 h vs 3 h with 4 GPUs")
    assert rows.filter(pl.col("quantity") == "total_time").select("gpus", "value").rows() == [(1, 14400.0),
                                                                                            (4, 10800.0)]


def test_a_duration_takes_the_setting_stated_above_it_within_the_window() -> None:
    rows = _stated("Single node training:", "  - Test accuracy 0.83", "  - WALL training time is 63.6 seconds",
                   "Training with 3 nodes:", "  - WALL training time is 38.6 seconds",
                   *(["filler"] * prose.PROSE_WINDOW), "training took 10 seconds")
    times = rows.filter(pl.col("quantity") == "total_time")
    assert times.select("nodes", "value").rows() == [(1, 63.6), (3, 38.6), (None, 10.0)]


@pytest.mark.parametrize("text, share", [
    ("is it expected that half of GPU time is spent on ncclKernel_AllReduce_RING_LL_Sum_float ?", 0.5),
    ("the profiler says 35% of the step time is spent in all_reduce", 0.35),
    ("a quarter of the time is spent on NCCL communication", 0.25),
])
def test_a_stated_share_of_time_in_communication(text: str, share: float) -> None:
    rows = _stated(text).filter(pl.col("quantity") == "comm_share")
    assert rows["value"].to_list() == [pytest.approx(share)]


def test_a_share_of_time_in_something_else_is_not_communication() -> None:
    assert _stated("half of the time is spent on data loading").filter(pl.col("quantity") == "comm_share").height == 0


def test_scaling_from_stated_times_strong_and_weak() -> None:
    run = compare(_stated("Single node training:", "WALL training time is 63.598 seconds", "Training with 3 nodes:",
                          "WALL training time is 38.594 seconds"), pl.DataFrame())
    assert run is not None and (run.unit, run.small, run.large, run.basis) == ("nodes", 1, 3, "run")
    assert run.efficiency == pytest.approx(63.598 / (3 * 38.594))
    step = compare(_stated("on 1 GPU each step takes 1.7 s", "on 8 GPUs each step takes 2.8 s"), pl.DataFrame())
    assert step is not None and step.basis == "step" and step.efficiency == pytest.approx(1.7 / 2.8)


PROGRESS = "2019-09-17 01:46:{s:02d},876 - INFO - [{i:>5}/{n}]\tlr: 0.000100\tTime {t:6.3f} ({t:6.3f})\t" \
           "Data  0.001 ( 0.001)\tLoss 6341.771 (6945.944)"


def _thread(tmp_path: Path, one: float, eight: float) -> Path:
    """A forum post: step lines of the PyTorch examples' ProgressMeter pasted under each of two settings."""
    lines = ["Distributed training slow", "", "I train my model on one GPU (V100), the speed is:", ""]
    lines += [PROGRESS.format(s=10 + 2 * k, i=1022 + k, n=10000, t=one + 0.01 * k) for k in range(4)]
    lines += ["", "When I use 8 GPUs on one node with DistributedDataParallel the speed is:", ""]
    lines += [PROGRESS.format(s=30 + 3 * k, i=9 + k, n=5000, t=eight + 0.01 * k) for k in range(4)]
    lines += ["", "Why is it so slow?"]
    p = tmp_path / "post.md"
    p.write_text("\n".join(lines) + "\n")
    return p


def test_two_pasted_runs_under_two_settings_are_a_scaling_comparison(tmp_path: Path) -> None:
    d = diagnose(parse([str(_thread(tmp_path, 1.7, 2.9))]))
    sc = d.metrics.scaling
    assert sc is not None and (sc.unit, sc.small, sc.large, sc.basis) == ("GPUs", 1, 8, "step")
    assert sc.efficiency == pytest.approx(1.715 / 2.915, rel=0.02)
    top = d.findings[0]
    assert top.id == "comm-bound" and "59% scaling efficiency from 1 to 8 GPUs" in top.summary
    assert [e.line for e in top.evidence if e.line] == [3, 10, 5, 12]  # the settings, then their first step lines


def test_runs_that_scale_well_are_no_finding(tmp_path: Path) -> None:
    d = diagnose(parse([str(_thread(tmp_path, 1.7, 1.8))]))
    assert d.metrics.scaling is not None and d.metrics.scaling.efficiency > 0.9
    assert "comm-bound" not in [f.id for f in d.findings]


@pytest.mark.parametrize("case, efficiency", [("e-pytorch-136017", 0.55), ("e-so-5005027051", 0.38),
                                              ("e-pytorch-56106", 0.61)])
def test_real_threads_that_compare_settings(case: str, efficiency: float, corpus: Path) -> None:
    folder = corpus / "real" / case
    if not folder.is_dir():
        pytest.skip("shared corpus not present")
    d = diagnose(parse([str(folder / "log.txt")]))
    assert d.metrics.scaling is not None and d.metrics.scaling.efficiency == pytest.approx(efficiency, abs=0.01)
    assert d.findings[0].id == "comm-bound"


@pytest.mark.parametrize("text, stage", [
    ("deepspeed ZeRO2启动训练时 在训练中途保存checkpoint时 CPU占用会突然增大", 2), ("with ZeRO-3 it is slow", 3),
    ("Zero stage 1 is fine", 1), ("ZeRO_0 and nothing else", 0)])
def test_a_zero_stage_named_in_words(text: str, stage: int) -> None:
    rows = _stated(text).filter(pl.col("quantity") == "zero_stage")
    assert rows["value"].to_list() == [float(stage)]


def test_no_zero_stage_from_other_words() -> None:
    assert _stated("ZeRO-Offload moves the optimizer; zero 3 times; ZeRO++").filter(
        pl.col("quantity") == "zero_stage").height == 0


def test_the_stage_a_thread_names_is_a_claim_only_when_it_names_one(tmp_path: Path) -> None:
    one = tmp_path / "one.md"
    one.write_text("Checkpoints with ZeRO2 fill the disk\n\nEvery save under ZeRO-2 writes the optimizer states\n")
    facts = parse([str(one)]).facts
    assert facts.zero_stage == 2 and facts.evidence["zero_stage"].origin == "stated_in_text"
    two = tmp_path / "two.md"
    two.write_text("ZeRO-2 is fast, ZeRO-3 is slow for my 7B model\n")
    assert parse([str(two)]).facts.zero_stage is None


def test_a_markdown_table_of_timings_under_settings() -> None:
    rows = _stated("| GPUs | step time (s) | throughput (samples/s) |", "|------|------|------|",
                   "| 1 | 0.50 | 64 |", "| 8 | 1.20 | 213 |")
    steps = rows.filter(pl.col("quantity") == "step_time")
    assert steps.select("gpus", "value").rows() == [(1, 0.5), (8, 1.2)]  # the throughput column is no time
    assert steps["detail"][1].startswith("| GPUs | step time (s)") and "| 8 | 1.20 | 213 |" in steps["detail"][1]
    epochs = _stated("| # nodes | epoch time (min) |", "| :--- | ---: |", "| 1 | 50 |", "| 4 | 20 |")
    ep = epochs.filter(pl.col("quantity") == "epoch_time")
    assert ep.select("nodes", "value").rows() == [(1, 3000.0), (4, 1200.0)]
    total = _stated("| GPU | training time |", "|---|---|", "| 2 | 6.5 h |")
    assert total.filter(pl.col("quantity") == "total_time").select("gpus", "value").rows() == [(2, 23400.0)]


def test_a_table_without_a_setting_column_states_nothing() -> None:
    rows = _stated("| model | step time (s) |", "|---|---|", "| 7B | 1.2 |")
    assert rows.filter(pl.col("quantity") == "step_time").height == 0


@pytest.mark.parametrize("text, pairs", [
    ("each step takes 4.1 s with ZeRO-3 and 1.2 s with ZeRO-0", [(4.1, 3), (1.2, 0)]),
    ("Each iteration takes about 2.3 s on 8x A100 with ZeRO-3, whereas with ZeRO-2 it was 1.1 s per iteration.",
     [(2.3, 3), (1.1, 2)]),
    ("ZeRO-3: 2.3 s/it, ZeRO-2: 1.1 s/it", [(2.3, 3), (1.1, 2)]),
    ("Switching from ZeRO-2 to ZeRO-3 the step time went from 1.1 s to 2.3 s per step.", [(1.1, 2), (2.3, 3)]),
    # one stage named for every duration of its sentence; a stage in the sentence before is not this one's
    ("With ZeRO-3 a step takes 2.3 s and 2.4 s with a warm cache.", [(2.3, 3), (2.4, 3)]),
    ("ZeRO-2 was fine. Now each step takes 2.3 s.", [(2.3, None)]),
    # an epoch stated beside a whole run's time named as such stays what it is
    ("With ZeRO stage 3 an epoch takes 5 h; without DeepSpeed it took 2 h.", [(18000.0, 3), (7200.0, 0)]),
])
def test_a_duration_stated_for_a_zero_stage(text: str, pairs: list[tuple[float, int | None]]) -> None:
    rows = _stated(text).filter(pl.col("quantity").is_in(["step_time", "epoch_time"]))
    assert rows.select("value", "zero_stage").rows() == pairs


def test_a_stage_named_alone_holds_for_the_durations_under_it_and_a_table_of_stages() -> None:
    rows = _stated("With ZeRO-3:", "2.3 s/it", "With ZeRO-1:", "0.9 s/it")
    assert rows.filter(pl.col("quantity") == "step_time").select("value", "zero_stage").rows() == [(2.3, 3), (0.9, 1)]
    table = _stated("| stage | s/it | GPU mem |", "|---|---|---|", "| ZeRO-2 | 1.1 | 62 GB |",
                    "| ZeRO-3 | 2.3 | 38 GB |", "| none | 0.8 | 75 GB |")
    assert table.filter(pl.col("quantity") == "step_time").select("value", "zero_stage").rows() == [
        (1.1, 2), (2.3, 3), (0.8, 0)]


def test_a_higher_stage_stated_slower_is_the_finding(tmp_path: Path) -> None:
    # `each step takes N s with ZeRO-3 and M s with ZeRO-0`, with no step line pasted: before, "not enough to tell"
    thread = tmp_path / "issue.md"
    thread.write_text("Training is much slower with ZeRO-3 than with ZeRO-2.\n\nEach iteration takes about 2.3 s on "
                      "8x A100 80GB with ZeRO-3, whereas with ZeRO-2 it was 1.1 s per iteration.\n")
    d = diagnose(parse([str(thread)]))
    top = d.findings[0]
    assert top.id == "zero-stage-too-high" and top.explains_slowdown, d.findings
    assert "2.3 s with ZeRO-3" in top.evidence[0].text and top.evidence[1].line == 3
    # the lower stage ran, but no peak memory on a known GPU was measured: said in words, not put in the patch
    assert "zero_optimization.stage 3 -> 2" in top.fix.summary and top.fix.summary.startswith("Train with ZeRO-2")
    # a stage that costs little is no finding
    close = tmp_path / "close.md"
    close.write_text("ZeRO-3: 1.15 s/it, ZeRO-2: 1.1 s/it\n")
    assert "zero-stage-too-high" not in [f.id for f in diagnose(parse([str(close)])).findings]


@pytest.mark.parametrize("text, said", [
    ("After upgrading to torch 2.1 the step time went from 0.8 s to 1.6 s.",
     "the text states 0.8 s then 1.6 s for a step"),
    ("It runs at 90 s per iteration, far too slow.", "the text states 90 s for a step"),
    ("an epoch takes 5 h on this machine", "the text states 5 h for an epoch"),
])
def test_a_stated_time_is_quoted_where_no_step_line_times_the_run(tmp_path: Path, text: str, said: str) -> None:
    p = tmp_path / "issue.md"
    p.write_text(text + "\n")
    d = diagnose(parse([str(p)]))
    assert d.verdict.startswith("Not enough to tell: no step line read (" + said + ")"), d.verdict


def test_rates_in_sentences() -> None:
    # a rate of steps is its step's time, paired with a stage as a duration is; a rate of samples or tokens is a
    # throughput; a tqdm bar's rate is a printed line, not a sentence
    rows = _stated("ZeRO-2 gives 1.8 it/s, ZeRO-3 only 0.9 it/s")
    assert rows.filter(pl.col("quantity") == "step_time").select("value", "zero_stage").rows() == [
        (pytest.approx(1 / 1.8), 2), (pytest.approx(1 / 0.9), 3)]
    rows = _stated("we get 150 images per second on 8 GPUs and 3,000 tokens/s")
    assert rows.filter(pl.col("quantity") != "setting").select("quantity", "value").rows() == [
        ("samples_per_sec", 150.0), ("tokens_per_sec", 3000.0)]
    assert _stated(" 10%|#         | 100/1000 [01:00<10:00, 1.50it/s]").height == 0


def test_a_throughput_stated_alone_is_quoted(tmp_path: Path) -> None:
    p = tmp_path / "issue.md"
    p.write_text("Throughput dropped from 3,000 tokens/s to 1,200 tokens/s after enabling offload.\n")
    assert "(the text states 3,000 then 1,200 tokens/s)" in diagnose(parse([str(p)])).verdict


def test_a_long_log_stops_looking_for_sentences_once_it_has_as_many_as_are_read(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """prose.read takes a source's first PROSE_MAX_LINES candidate sentences: the chunks after those are not searched,
    and what is stated is what reading every chunk in full gives."""
    from diagnose.parsers import extract, ingest, lines

    log = tmp_path / "chatty.log"
    # every line a candidate (`per `, `GPU`); the first one states the duration the report quotes
    log.write_text("each step takes 2.5 s per iteration on 8 GPUs\n"
                   + "".join(f"note {i}: waiting per GPU for the barrier\n" for i in range(12_000)))
    monkeypatch.setattr(prose, "PROSE_MAX_LINES", 1_000)
    monkeypatch.setattr(lines, "CHUNK_BYTES", 64 * 1024)
    monkeypatch.setattr(ingest, "WORKERS", 1)  # chunks merged one by one: the count is known before each submit
    asked: list[bool] = []
    chunk = extract.extract_chunk

    def spied(frame: pl.DataFrame, source: int | None, sampling: object = None, sentences: bool = True) -> dict:
        asked.append(sentences)
        return chunk(frame, source, sampling, sentences)  # type: ignore[arg-type]

    monkeypatch.setattr(ingest, "extract_chunk", spied)
    skipping = parse([str(log)]).frames["stated"]
    assert asked[0] and not asked[-1] and asked.count(False) >= len(asked) - 3
    monkeypatch.setattr(ingest, "extract_chunk", lambda frame, source, sampling=None, sentences=True:
                        chunk(frame, source, sampling, True))
    whole = parse([str(log)]).frames["stated"]
    assert skipping.height and skipping.equals(whole)
    assert skipping.filter(pl.col("quantity") == "step_time")["value"].to_list() == [2.5]


@pytest.mark.parametrize("text", [
    "80\timages/sec: 37.5 +/- 0.1 (jitter = 0.6)\t0.596\t1.000\t1.000",  # tf_cnn_benchmarks' step line
    "100 images/sec: 152.1 +/- 0.2 (jitter = 2.2)",
    "3 sec: 12.1",
    "10\tsamples/s 301.2",
])
def test_a_unit_that_labels_a_column_states_no_quantity(text: str) -> None:
    # the number before `images/sec:` is the step, the rate the one after it
    assert _stated(text).filter(pl.col("quantity") != "setting").height == 0


def test_a_rate_followed_by_a_colon_and_words_is_still_stated() -> None:
    rows = _stated("it runs at 150 images/sec: far below the 600 of one node").filter(pl.col("quantity") != "setting")
    assert rows["quantity"].to_list()[:1] == ["samples_per_sec"] and rows["value"][0] == 150.0


def test_a_line_a_reader_read_states_nothing_more_and_counts_once(tmp_path: Path) -> None:
    # the general progress reader reads these; the rate on them is the step's, not a sentence's claim
    log = tmp_path / "train.log"
    log.write_text("".join(f"iter {i * 10}: loss {2.5 - i / 100:.3f}, time 850ms, 1.18 it/s\n" for i in range(1, 21)))
    m = parse([str(log)])
    assert m.frames["steps"].height == 20 and m.frames["stated"].height == 0
    assert (m.sources[0].lines, m.sources[0].recognised) == (20, 20)


def test_a_count_stated_twice_takes_its_first_time_every_time(tmp_path: Path) -> None:
    """Two pastes under the same GPU count: the first one stated is that count's time, whatever order the segments
    are grouped in (a group_by's order is drawn afresh at each call)."""
    p = _thread(tmp_path, 1.7, 2.9)
    lines = p.read_text().splitlines()
    lines[-1:-1] = ["", "And with 8 GPUs again, after a reboot:", ""] + [
        PROGRESS.format(s=60 + 3 * k, i=19 + k, n=5000, t=5.0 + 0.01 * k) for k in range(4)] + [""]
    p.write_text("\n".join(lines) + "\n")
    model = parse([str(p)])
    for _ in range(8):
        sc = compute(model).scaling
        assert sc is not None and (sc.small, sc.large) == (1, 8)
        assert sc.large_s == pytest.approx(2.915, rel=0.02)


@pytest.mark.parametrize("lines, stage, optimizer, param", [
    (["Training is slow. I'm using ZeRO-3 with CPU offload on 4 GPUs."], 3, "cpu", None),
    (["We use ZeRO-2 offload (optimizer on CPU) on a single node with 8 GPUs."], 2, "cpu", None),
    (["I'm training on 1 node with 4 RTX 3090s, zero stage 2, batch size 8 per GPU."], 2, None, None),
    (["zero3 is what we run, offloading the parameters to NVMe"], 3, None, "nvme"),
    (["It is ZeRO-Offload on a single V100."], None, "cpu", None),
    # none named, or a comparison: nothing stated of the run
    (["ZeRO-3 without CPU offload, on 8 GPUs"], 3, None, None),
    (["zero3 + cpu offload is 3x slower than zero2"], None, None, None),
    # a path or a name, and DeepSpeed's own print, are no sentence about the run
    (["cp configs/ds_zero3_offload.json run/", "see zero2_config.yaml"], None, None, None),
    (["[INFO] [stage_1_and_2.py:239:__init__] ZeRO offload gradient protections: False"], None, None, None),
])
def test_a_stage_and_an_offload_named_in_words(tmp_path: Path, lines: list[str], stage: int | None,
                                               optimizer: str | None, param: str | None) -> None:
    p = tmp_path / "thread.md"
    p.write_text("\n".join(lines) + "\n")
    facts = parse([str(p)]).facts
    assert (facts.zero_stage, facts.offload_optimizer, facts.offload_param) == (stage, optimizer, param)
    for fact in ("zero_stage", "offload_optimizer", "offload_param"):
        assert fact not in facts.evidence or facts.evidence[fact].origin == "stated_in_text"


@pytest.mark.parametrize("lines, params, gpu, memory", [
    (["Continued pretraining of a 2.7B model with ZeRO-3 on 4 nodes x 4 A100-80GB."], 2_700_000_000, "A100", 80.0),
    (["I fine-tune Llama-2-13b with ZeRO-3 and CPU offload."], 13_000_000_000, None, None),
    (["We train a 7B parameter model on 8 H100s."], 7_000_000_000, "H100", None),
    (["Training GPT-NeoX 20B on 96 A100 40GB GPUs."], 20_000_000_000, "A100", 40.0),
    (["the model has 350M params", "trained on 4x RTX 3090 (24GB) GPUs"], 350_000_000, "RTX 3090", 24.0),
    # no model's size: tokens, an MoE's name, a path; two GPU models are a comparison
    (["we pretrain on 1.3B tokens with Mixtral-8x7B", "see /models/llama-7b/config.json"], None, None, None),
    (["it was fine on an A100 but is slow on a V100"], None, None, None),
    # glued to its count, in lower case; a layer's name is no GPU
    (["ZeRO-2 on 8xa100, 13b model"], 13_000_000_000, "A100", None),
    (["GPU memory grows in model.layers.l4.mlp"], None, None, None),
])
def test_a_model_size_and_a_gpu_named_in_words(tmp_path: Path, lines: list[str], params: int | None, gpu: str | None,
                                               memory: float | None) -> None:
    p = tmp_path / "thread.md"
    p.write_text("\n".join(lines) + "\n")
    facts = parse([str(p)]).facts
    assert (facts.model_params, facts.gpu_name, facts.gpu_memory_gb) == (params, gpu, memory)
    assert all(facts.evidence[k].origin == "stated_in_text" for k in ("model_params", "gpu_name", "gpu_memory_gb")
               if k in facts.evidence)


def test_a_size_stated_in_words_gives_way_to_the_estimate_from_the_shape(tmp_path: Path) -> None:
    """`512M parameter model` in a script's comment against a Megatron run's 24 layers of 1024: the estimate from
    the printed shape (a source the run printed) outranks the sentence."""
    p = tmp_path / "run.log"
    p.write_text("# 512M parameter model with ZeRO-3\n"
                 "  num_layers ...................................... 24\n"
                 "  hidden_size ..................................... 1024\n")
    facts = parse([str(p)]).facts
    assert facts.model_params == 12 * 24 * 1024 ** 2 and facts.evidence["model_params"].origin == "estimate"
    p.write_text("# 512M parameter model with ZeRO-3\n")
    assert parse([str(p)]).facts.model_params == 512_000_000


def test_the_headline_run_told_in_one_sentence_gets_the_planners_advice(tmp_path: Path) -> None:
    """The run this tool was made for, as a thread would first describe it: the size, the GPUs and their memory, the
    stage, all in words. The planner reads them and says plain data parallel fits."""
    p = tmp_path / "issue.md"
    p.write_text("Continued pretraining of a 2.7B model with DeepSpeed ZeRO-3 on 4 nodes x 4 A100-80GB. W&B shows "
                 "~50% GPU utilization at ~92% memory. Each step takes about 2.6 s.\n")
    model = parse([str(p)])
    f = model.facts
    assert (f.model_params, f.world_size, f.nodes, f.gpu_memory_gb, f.zero_stage) == (2_700_000_000, 16, 4, 80.0, 3)
    zero = next(x for x in diagnose(model).findings if x.id == "zero-stage-too-high")
    assert "2.70B parameters on 16 GPUs of 80 GB" in zero.summary and "plain data parallel" in zero.summary
