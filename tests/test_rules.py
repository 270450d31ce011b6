"""Every rule on the scenario that shows its cause (a real CPU recording where one can, a labelled synthetic
scenario for GPU-only signals), and silence on the healthy recordings."""
from __future__ import annotations

import re

import polars as pl
import pytest

from conftest import SAMPLES, analysed
from diagnose.engine import diagnose
from diagnose.metrics import compute
from diagnose.rules import load_all
from diagnose.parsers import parse

# rule id -> the scenario under sample_logs/ it declares it fires on (synthetic/ ones: synthetic/make.py)
SCENARIOS = {r.id: r.scenario for r in load_all().values()}
HEALTHY = ["ds_zero0", "ds_zero2_bf16", "hf_trainer_ddp_bf16", "ds_zero0_default_loglevel"]


def _diag(name: str):
    return diagnose(parse([str(SAMPLES / name)]))


def test_every_rule_has_a_scenario() -> None:
    assert set(SCENARIOS) == set(load_all())


@pytest.mark.parametrize("rule_id, scenario", sorted(SCENARIOS.items()))
def test_rule_fires_on_its_scenario(rule_id: str, scenario: str) -> None:
    d = _diag(scenario)
    found = {f.id: f for f in d.findings}
    assert rule_id in found, [f.id for f in d.findings]
    f = found[rule_id]
    assert f.evidence and f.fix is not None and f.summary


@pytest.mark.parametrize("scenario", HEALTHY)
def test_healthy_runs_have_no_slowdown_finding(scenario: str) -> None:
    loud = [f.id for f in _diag(scenario).findings if f.explains_slowdown and f.severity != "info"]
    assert loud == []


def test_seed_scenario_ranks_launch_blocking_first_and_recommends_low_stage() -> None:
    d = _diag("synthetic/seed_zero3_launch_blocking")
    assert d.findings[0].id == "cuda-launch-blocking" and d.findings[0].explains_slowdown
    zero = next(f for f in d.findings if f.id == "zero-stage-too-high")
    assert not zero.explains_slowdown and zero.data["recommended_stage"] <= 1
    assert any(c.key == "zero_optimization.stage" and c.before == 3 and c.after <= 1 for c in zero.fix.changes)
    env = d.findings[0].evidence[0]
    assert env.source.endswith("train.sh") and env.line == 6
    assert d.verdict.startswith("Most likely cause: CUDA_LAUNCH_BLOCKING=1")


def test_rules_stay_silent_on_a_fragment(tmp_path) -> None:
    """A pasted 30-line excerpt of a healthy run: enough for facts, too little for step statistics."""
    lines = (SAMPLES / "ds_zero2_bf16" / "train.log").read_text().splitlines()
    start = next(i for i, l in enumerate(lines) if "step=20," in l)
    frag = tmp_path / "paste.txt"
    frag.write_text("\n".join(lines[start:start + 30]) + "\n")
    d = diagnose(parse([str(frag)]))
    assert [f.id for f in d.findings if f.explains_slowdown and f.severity != "info"] == []


def test_fragment_with_the_cause_still_fires(tmp_path) -> None:
    lines = (SAMPLES / "synthetic" / "allocator_flush" / "train.log").read_text().splitlines()
    start = next(i for i, l in enumerate(lines) if "allocator cache flushes" in l)
    frag = tmp_path / "paste.txt"
    frag.write_text("\n".join(lines[start - 5:start + 25]) + "\n")
    assert "allocator-cache-flush" in {f.id for f in diagnose(parse([str(frag)])).findings}


def test_single_node_sockets_are_fine(tmp_path) -> None:
    log = tmp_path / "one.log"
    log.write_text("box:1:2 [0] NCCL INFO NET/IB : No device found.\nbox:1:2 [0] NCCL INFO Using network Socket\n"
                   "box:1:2 [0] NCCL INFO comm 0x1 rank 0 nRanks 8 nNodes 1 localRanks 8 localRank 0 MNNVL 0\n")
    assert "nccl-socket-transport" not in {f.id for f in diagnose(parse([str(log)])).findings}


def test_fp16_warmup_overflows_are_normal(tmp_path) -> None:
    lines = []
    scale = 65536
    for step in range(1, 101):
        if step <= 8:
            lines.append(f"[2026-01-01 00:00:{step:02d},000] [INFO] [loss_scaler.py:183:update_scale] [deepspeed] "
                         f"OVERFLOW! Rank 0 Skipping step. Attempted loss scale: {scale}, reducing to {scale // 2}")
            scale //= 2
        lines.append(f"[2026-01-01 00:01:{step % 60:02d},000] [INFO] [logging.py:96:log_dist] [Rank 0] "
                     f"step={step}, skipped={min(step, 8)}, lr=[1e-4], mom=[(0.9, 0.95)]")
    log = tmp_path / "fp16.log"
    log.write_text("\n".join(lines) + "\n")
    assert "fp16-overflow-skips" not in {f.id for f in diagnose(parse([str(log)])).findings}


def test_utilization_and_log_timestamps_on_one_clock() -> None:
    """SYNTHETIC: W&B samples idle on every GPU exactly while the log says a checkpoint was being saved."""
    d = _diag("synthetic/checkpoint_stalls")
    f = d.findings[0]
    assert f.id == "periodic-stalls" and f.explains_slowdown
    assert "at each checkpoint (steps 100, 200)" in f.summary
    assert d.metrics.util_pattern == "gaps" and len(d.metrics.idle_windows) == 2


def test_seed_picture_is_what_the_user_saw() -> None:
    d = _diag("synthetic/seed_zero3_launch_blocking")
    assert d.metrics.util_pattern == "flat"
    assert d.picture.startswith("memory stayed at 92% while utilization sat flat at 50%")


def test_one_gpu_different_from_wandb_metrics(tmp_path) -> None:
    import json

    files = tmp_path / "run-20260101_000000-strag001" / "files"
    files.mkdir(parents=True)
    rows = [{"_timestamp": 1.79e9 + 15 * i, **{f"system.gpu.{g}.gpu": (60.0 if g == 2 else 95.0) for g in range(4)}}
            for i in range(20)]
    (files / "wandb-events.jsonl").write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    d = diagnose(parse([str(tmp_path / "run-20260101_000000-strag001")]))
    f = next(f for f in d.findings if f.id == "straggler")
    assert f.data["gpu"] == 2 and f.data["signals"] == []
    # Its clock, power and temperature say why: a throttled GPU (a 2% temperature gap is noise, not named).
    rows = [r | {f"system.gpu.{g}.smClock": (1290.0 if g == 2 else 1980.0) for g in range(4)}
            | {f"system.gpu.{g}.powerWatts": (300.0 if g == 2 else 390.0) for g in range(4)}
            | {f"system.gpu.{g}.temp": (62.0 if g == 2 else 61.0) for g in range(4)} for r in rows]
    (files / "wandb-events.jsonl").write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    f = next(f for f in diagnose(parse([str(tmp_path / "run-20260101_000000-strag001")])).findings
             if f.id == "straggler")
    assert f.data["signals"] == ["it also has the lowest SM clock (1290 MHz against 1980 MHz on the others)",
                                 "it also has the lowest power draw (300 W against 390 W on the others)"]
    assert "lowest SM clock" in f.summary and "temperature" not in f.summary


def test_mfu_uses_the_attention_term_when_the_shape_is_known() -> None:
    from diagnose.metrics import _mfu

    six_n, basis = _mfu(10_000.0, 2_780_000_000, 16, "NVIDIA A100-SXM4-80GB", "bf16")
    full, basis_full = _mfu(10_000.0, 2_780_000_000, 16, "NVIDIA A100-SXM4-80GB", "bf16", 32, 2560, 2048)
    assert six_n == pytest.approx(10_000 * 6 * 2.78e9 / (16 * 312e12))
    assert full == pytest.approx(10_000 * (6 * 2.78e9 + 12 * 32 * 2560 * 2048) / (16 * 312e12))
    assert basis.startswith("6N x") and basis_full.startswith("6N + 12LHQT")
    assert _mfu(10_000.0, None, 16, "A100", "bf16") == (None, None)


def test_slow_node_from_pdsh_prefixed_timers(tmp_path) -> None:
    lines = []
    for step in range(20):
        for host, slow in (("node-1", 1.0), ("node-2", 1.0), ("node-3", 1.5)):
            for rank in range(2):
                lines.append(f"{host}: [Rank {rank}] time (ms) | fwd: {100 * slow:.2f} | bwd: {200 * slow:.2f} | "
                             f"bwd_inner: {150 * slow:.2f} | bwd_allreduce: {50 * slow:.2f} | step: 10.00")
    log = tmp_path / "nodes.log"
    log.write_text("\n".join(lines) + "\n")
    d = diagnose(parse([str(log)]))
    f = next(f for f in d.findings if f.id == "straggler")
    assert f.data["node"] == "node-3" and f.data["ratio"] == pytest.approx(1.5, rel=0.05)


def _straggler_rows_from_text() -> list[tuple]:
    """The straggler table read straight from the recorded log: an op line, then rows padded to 20 columns."""
    lines = (SAMPLES / "ds_zero1_straggler" / "train.log").read_text().splitlines()
    start = lines.index("Breakdown with straggler effect")
    rows, op = [], None
    for line in lines[start + 3:]:
        if line and not line.startswith(" "):
            op = line.strip()
            continue
        cells = re.split(r"\s{2,}", line.strip())
        if len(cells) != 6:
            break
        rows.append((op, cells[0], int(cells[1]), *map(float, cells[2:])))
    return rows


def test_straggler_from_the_comms_logger_breakdown() -> None:
    """A real recording with a slow rank: the straggler table is parsed row for row, and the rule reads it."""
    model = parse([str(SAMPLES / "ds_zero1_straggler")])
    got = (model.frames["comms"].filter(pl.col("origin") == "comms_straggler")
           .select("op", "msg_size", "count", "total_latency_ms", "total_straggler_ms", "avg_latency_ms",
                   "avg_straggler_ms").rows())
    want = _straggler_rows_from_text()
    assert got == want and len(want) >= 10
    assert model.frames["comms"].filter(pl.col("origin") == "comms_table").height > 0  # the plain table too
    d = diagnose(model)
    f = next(f for f in d.findings if f.id == "straggler")
    fastest = sum(r[3] for r in want)
    ratio = (fastest + sum(r[4] for r in want)) / fastest
    assert f.explains_slowdown and f"{ratio:.1f}x" in f.title and d.findings[0].id == "straggler"
    header = (SAMPLES / "ds_zero1_straggler" / "train.log").read_text().splitlines()[f.evidence[0].line - 1]
    assert "Total straggler(ms)" in header
    assert d.metrics.comm_running_totals and d.metrics.comm_busbw_gbps is None  # DeepSpeed 0.19.8


def test_comms_running_totals_only_from_0_18_3(tmp_path) -> None:
    """DeepSpeed 0.18.3 began logging running totals; an older banner keeps the bus bandwidth."""
    text = (SAMPLES / "ds_zero0" / "train.log").read_text()
    assert "version=0.19.8" in text
    log = tmp_path / "train.log"
    log.write_text(text.replace("version=0.19.8", "version=0.18.2"))
    old = diagnose(parse([str(log)])).metrics
    assert not old.comm_running_totals and old.comm_busbw_gbps is not None
    assert diagnose(parse([str(SAMPLES / "ds_zero0" / "train.log")])).metrics.comm_running_totals


def test_seed_without_gpu_memory_still_gets_conditional_stage_advice(tmp_path) -> None:
    """Only the launch script, the DeepSpeed JSON and the slurm log, with no W&B run and no line naming the GPU: the
    planner still runs and zero-stage-too-high says on which GPUs its advice holds."""
    seed = SAMPLES / "synthetic" / "seed_zero3_launch_blocking"
    log = [line for line in (seed / "slurm-1234.out").read_text().splitlines() if "UUID: GPU-" not in line]
    (tmp_path / "slurm-1234.out").write_text("\n".join(log) + "\n")
    sources = [str(tmp_path / "slurm-1234.out"), str(seed / "train.sh"), str(seed / "ds_config.json")]
    model = parse(sources)
    assert model.facts.gpu_name is None and model.facts.gpu_memory_gb is None
    d = diagnose(model)
    assert d.findings[0].id == "cuda-launch-blocking"
    zero = next(f for f in d.findings if f.id == "zero-stage-too-high")
    assert zero.severity == "info" and not zero.explains_slowdown
    # the GPU held the measured 73.4 GB peak: on any such GPU, ZeRO-1 at half the micro-batch fits
    assert re.search(r"On GPUs with at least 73 GB, ZeRO-1 with micro-batch 2 x accumulation 8 fits", zero.summary)
    stages = [c.after for c in d.recommendation.changes if c.key == "zero_optimization.stage"]
    assert stages == [1]  # one stage in the recommended configuration


def test_zero_on_one_gpu_is_conclusive_advice(tmp_path) -> None:
    log = tmp_path / "train.log"
    log.write_text("[2024-01-01 10:00:00,000] [INFO] [config.py:996:print] DeepSpeedEngine configuration:\n"
                   "[2024-01-01 10:00:00,000] [INFO] [config.py:1000:print]   world_size ................... 1\n"
                   "[2024-01-01 10:00:00,000] [INFO] [config.py:1000:print]   zero_optimization_stage ...... 3\n")
    found = {f.id: f for f in diagnose(parse([str(log)])).findings}
    f = found["zero-stage-too-high"]
    assert f.title == "ZeRO-3 on a single GPU partitions nothing" and not f.explains_slowdown
    assert [(c.key, c.before, c.after) for c in f.fix.changes] == [("zero_optimization.stage", 3, 0)]


def test_every_rule_is_self_contained() -> None:
    """Issue 22: a rule declares its docs, the facts that drive it and a scenario it fires on; its findings carry its
    id (the context fills it in). A rule without any of these fails here."""
    import json

    from diagnose.compare import COMPARED_FACTS
    from diagnose.rules import load_all

    labels = json.loads((SAMPLES.parent / "benchmarks" / "sample_labels.json").read_text())
    known_facts = set(COMPARED_FACTS) | {"nccl_transport"}
    for r in load_all().values():
        assert all(len(text) > 20 for text in (r.detects, r.why, r.evidence, r.fix)), r.id
        assert isinstance(r.drivers, tuple) and all(d in known_facts or d.startswith(("env.", "ds.")) for d in
                                                    r.drivers), (r.id, r.drivers)
        assert (SAMPLES / r.scenario).is_dir(), (r.id, r.scenario)  # firing there: test_rule_fires_on_its_scenario
        assert r.scenario in labels, r.scenario


def test_findings_are_keyword_only() -> None:
    import pytest

    from diagnose.findings import Finding

    with pytest.raises(TypeError):
        Finding("x", "t", "info", "high", False, "s")  # type: ignore[misc]


@pytest.mark.parametrize("name, cores", [("NVIDIA GeForce GTX 1080 Ti", False), ("Tesla P40", False),
                                         ("Tesla K80", False), ("NVIDIA GeForce GTX 1660 SUPER", False),
                                         ("Tesla V100-SXM2-32GB", True), ("NVIDIA A100-SXM4-80GB", True),
                                         ("Some Accelerator", None), (None, None)])
def test_which_gpus_have_tensor_cores(name: str | None, cores: bool | None) -> None:
    from diagnose.hardware import has_tensor_cores
    assert has_tensor_cores(name) is cores


def test_a_qlora_run_computes_in_its_quantization_dtype() -> None:
    """bitsandbytes 4-bit layers compute in bnb_4bit_compute_dtype whatever the Trainer's fp16/bf16 flags say: such
    a run is not in fp32, and no-mixed-precision does not fire on it (the autotrain QLoRA run of the corpus)."""
    from types import SimpleNamespace

    from diagnose.parsers.facts import FactInputs, assemble

    def precision(cfg: dict) -> str | None:
        run = SimpleNamespace(config={"bf16": False, "fp16": False, **cfg}, environment={}, summary={})
        empty = pl.DataFrame()
        return assemble(FactInputs(empty, empty, empty, [], [], [], [], wandb=[(0, run)])).precision

    assert precision({"quantization_config": {"load_in_4bit": True, "bnb_4bit_compute_dtype": "bfloat16"}}) == "bf16"
    assert precision({"quantization_config": {"load_in_8bit": True}}) == "fp16"
    assert precision({"quantization_config": {"load_in_4bit": False}}) == "fp32"
    assert precision({}) == "fp32"


def test_a_cause_ranks_above_its_symptom_and_info_never_leads() -> None:
    """Issue 31, must 7: the pipeline bubble leads the send/recv waits it causes (comm-bound), and an info-level
    finding that explains some of the time does not lead a warning."""
    from diagnose.findings import Finding, rank_key

    model = parse([str(SAMPLES / "synthetic" / "pipeline_bubble")])
    d = diagnose(model)
    ids = [f.id for f in d.findings]
    assert ids.index("pipeline-bubble") < ids.index("comm-bound") and d.verdict.startswith(
        "Most likely cause: Pipeline stages sit idle")

    def made(fid: str, severity: str, explains: bool) -> Finding:
        return Finding(id=fid, title=fid, severity=severity, confidence="high",  # type: ignore[arg-type]
                       explains_slowdown=explains, summary="")

    ranked = sorted([made("context", "info", True), made("tuning", "warning", False)], key=rank_key)
    assert [f.id for f in ranked] == ["tuning", "context"]


def test_collective_ops_are_listed_largest_first_every_time() -> None:
    """The comms table's ops, summed per op, in one order (the largest total first): a group_by's own order changed
    from run to run, and with it the report's JSON and the float sum of the totals."""
    model = analysed(SAMPLES / "ds_zero0").runs[0].model
    for _ in range(8):  # a group_by's order is drawn afresh each time: one pass may be in order by chance
        ops = compute(model).comm_ops
        assert list(ops) == ["all_reduce", "broadcast", "log_summary_barrier"]
        assert list(ops.values()) == sorted(ops.values(), reverse=True)


def test_each_gpus_utilization_is_listed_by_its_index_every_time() -> None:
    model = analysed(SAMPLES / "synthetic" / "checkpoint_stalls").runs[0].model
    for _ in range(8):  # a group_by's order is drawn afresh each time
        assert list(compute(model).util_per_gpu) == list(range(8))


@pytest.mark.parametrize("seq_flag, fires", [("--max_seq_length 512", True), ("--max_seq_length 16384", False),
                                             ("", True)])
def test_a_micro_batch_of_one_is_small_by_its_tokens_where_the_length_is_known(tmp_path, seq_flag: str,
                                                                               fires: bool) -> None:
    """A micro-batch of 1 under 16 accumulation steps: 512 tokens a GPU is little work for a 6.7B model, one sequence
    of 16k tokens is not; with no length known, the micro-batch of 1 under many accumulation steps decides."""
    scenario = SAMPLES / "synthetic" / "small_micro_batch"
    (tmp_path / "train.log").write_text((scenario / "train.log").read_text())
    (tmp_path / "launch.sh").write_text((scenario / "launch.sh").read_text().replace("--max_seq_length 512", seq_flag))
    model = parse([str(tmp_path)])
    assert model.facts.seq_len == (int(seq_flag.split()[-1]) if seq_flag else None)
    assert ("small-micro-batch" in {f.id for f in diagnose(model).findings}) is fires
