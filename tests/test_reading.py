"""Reading what users have (issue 19): every line of every file whatever it was sniffed to be, glued lines, the
general progress reader, headless config dumps, topology from what was printed, faults kept local, implausible
values set aside. Real text comes from ../shared/corpus/real (skipped when absent); written lines only where a unit
needs them."""
from __future__ import annotations

import json
import math
import os
from pathlib import Path

import polars as pl
import pytest
from typer.testing import CliRunner

from conftest import CORPUS, SAMPLES, bench, case_files, diagnosed
from diagnose.engine import diagnose
from diagnose.parsers import parse
from diagnose.parsers.extract import extract_chunk
from diagnose.parsers.kinds import KINDS
from diagnose.parsers.lines import ChunkStats, lines_frame

REAL = CORPUS / "real"
needs_real = pytest.mark.skipif(not REAL.is_dir(), reason="../shared/corpus/real is not beside the checkout")

SAMPLED = [(k.name, line, want) for k in KINDS for line, want in k.samples]
KIND_BY_NAME = {k.name: k for k in KINDS}


@pytest.mark.parametrize("kind,line,want", SAMPLED, ids=[f"{k}-{i}" for i, (k, _, _) in enumerate(SAMPLED)])
def test_each_kind_reads_its_sample_lines(kind: str, line: str, want: dict[str, object]) -> None:
    out = extract_chunk(lines_frame((line + "\n").encode(), ChunkStats()), 0)
    rows = [r for frame, parts in out.items() if not frame.startswith("_") for p in parts
            for r in p.to_dicts() if r.get("origin") == kind]
    assert rows, f"{kind} read nothing from {line!r}"

    def missing(read: dict[str, object]) -> list[tuple[str, object]]:
        out = []
        for key, value in want.items():
            got = read.get(key)
            numeric = isinstance(value, float) and isinstance(got, (int, float))
            same = math.isclose(got, value, rel_tol=1e-6) if numeric else got == value
            if not same:
                out.append((key, got))
        return out

    if KIND_BY_NAME[kind].every:  # a line of several readings: one of its rows gives the sample's
        assert any(not missing(r) for r in rows), [missing(r) for r in rows]
        return
    read: dict[str, object] = {}
    for r in rows:  # a line's readings may span frames (steps and progress)
        read.update({k: v for k, v in r.items() if v is not None})
    assert not missing(read), missing(read)


# ---- a file is read whatever it was sniffed to be -----------------------------------------------------------

PASTE = """export NCCL_DEBUG=INFO
export NCCL_IB_DISABLE=0
#export NCCL_P2P_DISABLE=1
torchrun --nnodes 2 --nproc_per_node 8 train.py --bf16

**Error:** the job uses sockets, not InfiniBand. Logs:

gpu-a1:37715:38896 [0] NCCL INFO NET/IB : No device found.
gpu-a1:37715:38896 [0] NCCL INFO NET/Socket : Using [0]enp1s0:10.0.0.1<0>
gpu-a1:37715:38896 [0] NCCL INFO Using network Socket
"""


def test_a_paste_that_looks_like_a_script_keeps_its_log_lines(tmp_path: Path) -> None:
    p = tmp_path / "issue.md"
    p.write_text(PASTE)
    m = parse([str(p)])
    assert m.sources[0].recognised >= 3
    assert m.facts.nccl.network == "Socket" and m.facts.nccl.ib_device_found is False
    assert m.facts.nodes == 2 and m.facts.gpus_per_node == 8  # the script's flags are launcher facts
    assert "NCCL_P2P_DISABLE" not in m.facts.env  # a commented-out export sets nothing


def test_a_directory_walk_reads_markdown(tmp_path: Path) -> None:
    (tmp_path / "notes.md").write_text(PASTE)
    assert [Path(s.name).name for s in parse([str(tmp_path)]).sources] == ["notes.md"]


def test_a_script_comment_is_not_an_event(tmp_path: Path) -> None:
    p = tmp_path / "launch.sh"
    p.write_text("#!/bin/bash\n# a checkpoint saved every 10 steps\ndeepspeed --num_gpus 2 train.py\n")
    m = parse([str(p)])
    assert m.frames["events"].height == 0 and m.facts.gpus_per_node == 2


@needs_real
def test_source_text_followed_by_its_output_is_read() -> None:
    """modded-nanogpt: the training script's source, nvidia-smi, then `step:N/M ... train_time:..ms step_avg:..ms`."""
    m = parse([str(REAL / "modded-nanogpt-8xh100")])
    d = diagnose(m)
    assert d.metrics.steps is not None and d.metrics.steps.p50_s == pytest.approx(0.1446, abs=0.003)
    assert (m.facts.world_size, m.facts.nodes) == (8, 1)  # the 8 GPUs nvidia-smi shows running python


# ---- glued lines --------------------------------------------------------------------------------------------

def test_any_progress_bar_end_splits_a_glued_line() -> None:
    data = (" 8%|#| 1999/24128 [1:52:09<20:27:23,  3.33s/it][2021-11-26 03:07:16,494] [INFO] [logging.py:69:log_dist] "
            "[Rank 0] step=2000, skipped=1995, lr=[0.001], mom=[0.0]\n"
            "Map: 100%|###| 1000/1000 [00:01<00:00, 912.35 examples/s][2021-11-26 03:07:17,000] [INFO] x\n")
    texts = lines_frame(data.encode(), ChunkStats())["text"].to_list()
    assert texts[1].startswith("[2021-11-26 03:07:16,494]") and texts[3].startswith("[2021-11-26 03:07:17,000]")
    steps = extract_chunk(lines_frame(data.encode(), ChunkStats()), 0)["steps"]
    ds = pl.concat(steps, how="diagonal").filter(pl.col("origin") == "ds_step")
    assert ds["skipped"].to_list() == [1995]


@needs_real
def test_a_nccl_prefix_glued_to_text_is_not_another_host() -> None:
    m = parse([str(REAL / "mds-gpt125m-baseline-8gpu")])
    assert m.facts.nccl.hosts == ("azwus2f200000DQ",) and m.facts.nodes == 1


# ---- config dumps -------------------------------------------------------------------------------------------

DUMP_TAIL = """[2025-02-07 01:13:41,065] [INFO] [config.py:1003:print]   train_micro_batch_size_per_gpu  1
[2025-02-07 01:13:41,065] [INFO] [config.py:1003:print]   world_size ................... 1
[2025-02-07 01:13:41,065] [INFO] [config.py:1003:print]   zero_config .................. stage=3 contiguous_gradients=True reduce_bucket_size=500000000 offload_param=DeepSpeedZeroOffloadParamConfig(device='cpu', nvme_path=None) offload_optimizer=DeepSpeedZeroOffloadOptimizerConfig(device='cpu', nvme_path=None)
"""


def test_a_dump_cut_above_its_header_still_gives_the_stage(tmp_path: Path) -> None:
    p = tmp_path / "log.txt"
    p.write_text(DUMP_TAIL)
    f = parse([str(p)]).facts
    assert (f.zero_stage, f.world_size, f.micro_batch_per_gpu) == (3, 1, 1)
    assert (f.offload_param, f.offload_optimizer) == ("cpu", "cpu")


# ---- topology -----------------------------------------------------------------------------------------------

@needs_real
@pytest.mark.parametrize("case,world", [("ds-ulysses-llama1b-seq8k", 8), ("ds-gpt1b8-4gpu-bf16test", 4)])
def test_world_size_from_rank_prefixes_and_topology_lines(case: str, world: int) -> None:
    f = parse([str(REAL / case)]).facts
    assert f.world_size == world and f.nodes == 2 and f.gpus_per_node == world // 2


def test_world_size_is_never_below_the_ranks_seen(tmp_path: Path) -> None:
    p = tmp_path / "train.log"
    p.write_text("".join(f"{t}: [Rank {r}] Loading dataset...\n" for t in (0, 1) for r in range(t * 4, t * 4 + 4)))
    f = parse([str(p)]).facts
    assert f.world_size == 8 and f.evidence["world_size"].origin == "rank_prefix"
    assert f.evidence["world_size"].line == 8


# ---- faults stay local --------------------------------------------------------------------------------------

def _raise(*_: object) -> None:
    raise ValueError("boom\nsecond line")


def test_a_raising_rule_is_named_and_the_report_comes_from_the_rest(monkeypatch: pytest.MonkeyPatch,
                                                                     tmp_path: Path) -> None:
    from dataclasses import replace

    from diagnose.cli import app
    from diagnose.rules import REGISTRY, load_all

    load_all()
    monkeypatch.setitem(REGISTRY, "straggler", replace(REGISTRY["straggler"], check=_raise))
    d = diagnose(parse([str(SAMPLES / "ds_zero2_debug_env")]))
    assert d.faults == ("rule straggler: ValueError: boom",)
    assert {"debug-switches", "cuda-launch-blocking"} <= {f.id for f in d.findings}
    out = tmp_path / "r.json"
    res = CliRunner().invoke(app, ["report", str(SAMPLES / "ds_zero2_debug_env"), "-o", str(out)])
    assert res.exit_code == 0, res.output
    doc = json.loads(out.read_text())
    assert doc["faults"] == ["rule straggler: ValueError: boom"] and doc["findings"]


def test_a_raising_line_kind_is_named_and_the_rest_is_read(monkeypatch: pytest.MonkeyPatch) -> None:
    from diagnose.parsers import extract

    real = extract.apply_kind

    def flaky(kind, rows):  # type: ignore[no-untyped-def]
        if kind.name == "ds_timers":
            raise RuntimeError("kind broke")
        return real(kind, rows)

    monkeypatch.setattr(extract, "apply_kind", flaky)
    m = parse([str(SAMPLES / "ds_zero1_straggler")])
    assert m.faults == ("line kind ds_timers: RuntimeError: kind broke",)
    assert m.frames["timers"].height == 0 and m.frames["steps"].height > 0 and m.facts.zero_stage == 1
    assert diagnose(m).faults == m.faults


# ---- implausible values -------------------------------------------------------------------------------------

def test_initialisation_memory_is_not_the_training_peak_nor_the_gpu(tmp_path: Path) -> None:
    p = tmp_path / "train.log"
    p.write_text("Stage 3 initialize beginning\n"
                 "[2024-01-01 00:00:00,000] [INFO] [utils.py:800:see_memory_usage] After initializing ZeRO optimizer\n"
                 "[2024-01-01 00:00:00,000] [INFO] [utils.py:801:see_memory_usage] MA 0.29 GB         "
                 "Max_MA 0.63 GB         CA 0.87 GB         Max_CA 1 GB \n"
                 "|   0  NVIDIA A100-SXM4-40GB          On  |   00000000:01:00.0 Off |                    0 |\n"
                 "| N/A   30C    P0             50W /  400W |       1MiB /    512MiB |      0%      Default |\n")
    m = parse([str(p)])
    d = diagnose(m)
    assert d.metrics.peak_mem_gb is None
    assert m.facts.gpu_memory_gb is None
    assert [(fact, ev.value) for fact, ev, _ in m.facts.set_aside] == [("gpu_memory_gb", 0.5)]


# ---- the same run printed differently -----------------------------------------------------------------------

def _invariance():  # type: ignore[no-untyped-def]  # -> the benchmarks/invariance.py module
    """Loaded once a process: its cache of each case's own verdict serves every group of transformations."""
    return bench("invariance")


# The transformations in groups that test workers run side by side (each reads every sample's original once a
# process, from the module's cache). Each group is held to the overall floor, with excused pairs counted as
# changed, so all of them together are too; (g) excuses a pair when its evidence was dropped, so it goes with the
# two transformations of four variants each, whose pairs carry its excuses under the floor.
INVARIANCE_GROUPS = ("a,d,g", "b,c,e,f", "h,i,j")


@pytest.mark.slow
@pytest.mark.longest
@pytest.mark.parametrize("group", INVARIANCE_GROUPS)
def test_verdicts_stay_put_when_the_samples_are_reprinted(group: str) -> None:
    inv = _invariance()
    keys = set(group.split(","))
    saved = dict(os.environ)  # (j) points GITHUB_* at its loopback stand-in for the run
    try:
        outcomes = inv.run("samples", keys)
    finally:
        os.environ.clear()
        os.environ.update(saved)
        for standin in inv._STANDIN:
            standin.__exit__()
        inv._STANDIN.clear()
    assert {o.transform for o in outcomes} == keys
    s = inv.summary(outcomes)
    assert s["crashes"] == 0, s["changed"]
    strict = sum(o.same for o in outcomes) / len(outcomes)  # excused pairs counted as changed
    assert strict >= INVARIANCE_OVERALL_FLOOR, s["changed"] + s["excused_pairs"]
    low = {k: v["share"] for k, v in s["per_transform"].items() if (v["share"] or 1.0) < INVARIANCE_EACH_FLOOR}
    assert not low, (low, s["changed"])
    # only (g) may excuse, and only with the dropped line named
    assert all("[g/" in p and "its evidence was dropped" in p for p in s["excused_pairs"])


def test_the_invariance_groups_take_every_transformation_once() -> None:
    keys = [k for group in INVARIANCE_GROUPS for k in group.split(",")]
    assert sorted(keys) == sorted(_invariance().TRANSFORMS)


INVARIANCE_OVERALL_FLOOR = 0.95  # issue 19, must 8
INVARIANCE_EACH_FLOOR = 0.90


def test_a_wandb_history_is_a_step_clock() -> None:
    """A W&B run that logs no step-time metric: its rows' `_timestamp` over the step give the step time."""
    from diagnose.parsers.run_model import RunModel

    m = parse([str(SAMPLES / "hf_trainer_ddp_bf16" / "wandb")])
    only = RunModel({**m.frames, "steps": m.frames["steps"].filter(pl.col("origin") == "wandb_history")},
                    m.facts, m.sources)
    s = diagnose(only).metrics.steps
    ts = only.frames["steps"].sort("global_step")["ts"]
    wall = (ts.diff().dt.total_milliseconds() / 1000.0).drop_nulls()
    assert s is not None and s.source == "wandb_history"
    assert s.p50_s == pytest.approx(float(wall.filter(wall > 0).tail(-2).median()), rel=0.1)


REPRS = """Namespace(bf16=True, deepspeed='ds.json', gradient_accumulation_steps=4, per_device_train_batch_size=8, zero_stage=2)
TrainingArguments(
_n_gpu=1,
gradient_checkpointing=True,
)
iter 300 | loss 2.1 | time 412.5ms | grad_norm: 1.25 | lrm: 1.0
iter 301 | loss 2.0 | time 410.1ms | grad_norm: 1.19 | lrm: 1.0
"""


def test_argument_reprs_and_unknown_named_numbers(tmp_path: Path) -> None:
    p = tmp_path / "run.out"
    p.write_text(REPRS)
    m = parse([str(p)])
    f = m.facts
    assert (f.precision, f.grad_accum_steps, f.micro_batch_per_gpu, f.zero_stage) == ("bf16", 4, 8, 2)
    assert f.gradient_checkpointing is True and f.evidence["micro_batch_per_gpu"].line == 1
    assert m.frames["progress"]["other"].to_list() == ["grad_norm=1.25;lrm=1.0", "grad_norm=1.19;lrm=1.0"]


def test_disagreeing_sources_are_both_shown() -> None:
    from diagnose.reports.document import build

    m = parse([str(SAMPLES / "synthetic" / "world_size_mismatch")])
    doc = build(m, diagnose(m))
    others = doc["run"]["also_claimed"]
    assert others and all(x["value"] != doc["run"][fact] for fact, xs in others.items() for x in xs)
    from diagnose.reports.document import display

    assert any("also claimed" in row["fact"] for row in display(doc)["facts_table"])


def test_gpu_only_advice_is_not_raised_for_a_cpu_run() -> None:
    """ds_zero2_debug_env is a CPU recording (gloo) with CUDA_LAUNCH_BLOCKING=1: no CUDA kernel runs there."""
    m = parse([str(SAMPLES / "ds_zero2_debug_env")])
    assert m.facts.backend == "gloo"
    d = diagnose(m)
    clb = next(f for f in d.findings if f.id == "cuda-launch-blocking")
    assert clb.severity == "info" and not clb.explains_slowdown and "CPU" in clb.title
    assert not any("nsys" in s for s in d.next_steps)


@pytest.mark.slow
@pytest.mark.xdist_group("corpus")  # reads every case through the corpus tests' cache (conftest.diagnosed)
def test_every_origin_a_reader_emits_has_a_tier() -> None:
    """A claim's origin decides its precedence (parsers/facts.py). One that is not registered would be a reader that
    forgot to say how far it is trusted: it gets the least trusted tier, and this test names it. Run over every
    sample and, where present, every real corpus case."""
    from diagnose.parsers.facts import ORIGIN_TIERS, TIERS, tier_of

    assert tier_of("a-reader-that-forgot") == TIERS[-1]
    runs = [(str(p),) for p in sorted(SAMPLES.rglob("*")) if p.is_dir() and any(f.is_file() for f in p.iterdir())
            and "wandb" not in p.parts]
    if (CORPUS / "real").is_dir():
        runs += [case_files(p) for p in sorted((CORPUS / "real").iterdir()) if p.is_dir()]
    seen: dict[str, str] = {}
    for sources in runs:
        try:
            m = diagnosed(sources)[0]
        except Exception:  # noqa: BLE001 - unreadable cases are the refusal tests' business
            continue
        for claims in m.facts.claims.values():
            for ev in claims:
                seen.setdefault(ev.origin, sources[0])
        for ev in m.facts.evidence.values():
            seen.setdefault(ev.origin, sources[0])
    assert len(seen) > 20
    assert {o: where for o, where in seen.items() if o not in ORIGIN_TIERS} == {}


def test_a_kind_that_would_drop_a_column_is_refused_at_load() -> None:
    """Strict kinds (issue 34): a capture group a kind does not declare, or a field its frame does not keep, stops the
    load with the kind's name (torchrun's `failed (exitcode: N)` used to land in a column no frame kept)."""
    from dataclasses import replace

    from diagnose.parsers.extract import check_kinds

    exit_kind = next(k for k in KINDS if k.name == "launcher_exit")
    check_kinds((exit_kind,))
    with pytest.raises(ValueError, match="launcher_exit: capture groups not declared: \\['signal'\\]"):
        check_kinds((replace(exit_kind, pattern=exit_kind.pattern + r"|(?P<signal>SIG\w+)"),))
    with pytest.raises(ValueError, match="fields no frame keeps: \\['exit_note'\\]"):
        check_kinds((replace(exit_kind, fields={**exit_kind.fields, "exit_note": exit_kind.fields["code"]}),))


def test_every_kind_carries_samples() -> None:
    """Each line kind declares lines in the wild and what they give (issue 34), as lnav's formats do; the test above
    runs them all. The samples are lines of the project's recorded runs, or the library's own printed layout."""
    assert [k.name for k in KINDS if not k.samples] == []


def test_unread_templates_show_each_files_own_line_and_ties_in_a_fixed_order(tmp_path: Path) -> None:
    """Small files are read as one batch, so their templates share ids: each file's unread template keeps a line of
    that file as its sample, and templates printed equally often are listed by their text, run after run."""
    for name, speed in (("a.log", 37.5), ("b.log", 152.2)):
        rows = [f"{i}\timages/sec: {speed + i / 10:.1f} +/- 0.3 (jitter = 2.3)" for i in (10, 20, 30)]
        rows += [f"cache warm: {i} hits" for i in (7, 3, 5)] + [f"allocator note: {i} blocks" for i in (9, 1, 4)]
        (tmp_path / name).write_text("\n".join(rows) + "\n")
    models = [parse([str(tmp_path / "a.log"), str(tmp_path / "b.log")]) for _ in range(3)]
    unread = [[(Path(m.source_name(u.source)).name, u.template, u.sample) for u in m.unread] for m in models]
    assert unread[0] == unread[1] == unread[2]
    samples = {(src, tpl.split(":")[0]): sample for src, tpl, sample in unread[0]}
    assert samples[("a.log", "# images/sec")].startswith("10\timages/sec: 38.5")
    assert samples[("b.log", "# images/sec")].startswith("10\timages/sec: 153.2")
    per_file = [tpl for src, tpl, _ in unread[0] if src == "a.log"]
    assert len(per_file) == 3 and per_file == sorted(per_file)  # three lines each: in the order of their text


def _hf_dicts(every_s: int, n: int = 12) -> str:
    """LLaMA-Factory's logger over HF's log dicts: a timestamp and no step count on each line."""
    lines = []
    for i in range(n):
        s = 10 + every_s * i
        lines.append(f"[INFO|2026-01-05 10:{s // 60:02d}:{s % 60:02d}] llamafactory.train.callbacks:144 >> "
                     f"{{'loss': {2.5 - i / 100:.4f}, 'learning_rate': 3.0000e-04, 'epoch': {i / 40:.2f}}}")
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize("setting", ["train.logging_steps: 5\n", "TrainingArguments(logging_steps=5, output_dir='o')\n",
                                     "llamafactory-cli train --logging_steps 5 --bf16\n"])
def test_hf_dicts_are_timed_per_step_where_logging_steps_is_known(tmp_path: Path, setting: str) -> None:
    # A dict every 5 steps, 10 s apart: 2 s a step, and the dicts stand at steps 5, 10, 15, ...
    (tmp_path / "running_log.txt").write_text(_hf_dicts(10))
    (tmp_path / "settings.txt").write_text(setting)
    m = parse([str(tmp_path)])
    assert m.facts.logging_steps == 5
    hf = m.frames["steps"].filter(pl.col("origin") == "hf_log").sort("line")
    assert hf["global_step"].to_list()[:3] == [5, 10, 15]
    d = diagnose(m)
    assert d.metrics.steps is not None and d.metrics.steps.p50_s == pytest.approx(2.0)
    assert not m.hf_steps_unknown and not any("logging_steps" in s for s in d.next_steps)


def test_hf_dicts_without_logging_steps_keep_their_ordinal(tmp_path: Path) -> None:
    (tmp_path / "running_log.txt").write_text(_hf_dicts(10))
    m = parse([str(tmp_path)])
    assert m.facts.logging_steps is None and m.hf_steps_unknown
    assert m.frames["steps"].filter(pl.col("origin") == "hf_log").sort("line")["global_step"].to_list()[:3] == [1, 2, 3]
    # ... and the report says its step times are per log dict, and what would make them per step
    assert any(s.startswith("Give the run's logging_steps") for s in diagnose(m).next_steps)


@needs_real
def test_a_web_ui_run_is_timed_per_step_from_its_yaml() -> None:
    # LLaMA-Factory's web UI saves its settings (`train.logging_steps: 5`) beside running_log.txt; the labelled
    # median is 104 s per 5 steps.
    _, d = diagnosed(case_files(REAL / "b-llamafactory-deepseek7b-2gpu"))
    assert d.metrics.steps is not None and d.metrics.steps.p50_s == pytest.approx(104 / 5, rel=0.05)


@pytest.mark.parametrize(("world", "nodes"), [(2, 1), (4, None)])
def test_a_process_on_the_last_local_gpu_means_one_node(tmp_path: Path, world: int, nodes: int | None) -> None:
    # Processes on cuda:0 and cuda:1 of a world of 2 share one node; of a world of 4 they may not (two nodes of 2).
    p = tmp_path / "train.log"
    p.write_text(f"World size: {world}\n"
                 "Process rank: 0, device: cuda:0, n_gpu: 1, distributed training: True, 16-bits training: True\n"
                 "Process rank: 1, device: cuda:1, n_gpu: 1, distributed training: True, 16-bits training: True\n")
    f = parse([str(p)]).facts
    assert f.world_size == world and f.nodes == nodes
    assert nodes is None or (f.evidence["nodes"].origin == "process_device" and f.evidence["nodes"].line == 3)


@pytest.mark.parametrize(("summary", "micro", "accum", "world"), [
    # TRL SFT: 0.8 samples and 0.1 steps a second, 1 x 8 a process: one process
    ("'train_samples_per_second': 0.8, 'train_steps_per_second': 0.1", 1, 8, 1),
    # a short last batch: 1000 samples in 63 steps of 16 (2 processes of 8)
    ("'train_samples_per_second': 15.873, 'train_steps_per_second': 1.0", 8, 1, 2),
    # rounded to 4 decimals, 0.0001 steps a second may be anything from 0.00005 to 0.00015: undecided
    ("'train_samples_per_second': 0.0008, 'train_steps_per_second': 0.0001", 1, 8, None),
    # 12 samples a step with 8 a process: no whole number of processes
    ("'train_samples_per_second': 1.2, 'train_steps_per_second': 0.1", 1, 8, None),
])
def test_the_world_from_the_hf_summary_rates(tmp_path: Path, summary: str, micro: int, accum: int,
                                             world: int | None) -> None:
    p = tmp_path / "train.log"
    p.write_text(f"per_device_train_batch_size: {micro}\ngradient_accumulation_steps: {accum}\n"
                 f"{{'train_runtime': 1810.426, {summary}, 'train_loss': 0.48, 'epoch': 1.0}}\n")
    f = parse([str(p)]).facts
    assert f.world_size == world and f.nodes == (1 if world == 1 else None)
    assert world is None or f.evidence["world_size"].origin == "hf_summary_rates"


@pytest.mark.parametrize("line", [
    "I0105 10:00:{sec:02d}.000000 140 train.py:123] step {s}: loss=2.3, {rate:.2f} steps/sec",
    "step {s} | loss 2.3 | {rate:.2f} it/sec",
    "step={s} loss=2.3 speed={rate:.3f} batches/s",
    "epoch 1 | batch {s} | loss 2.3 | {ms:.1f} ms/batch",
    "[epoch 1][batch {s}] loss 2.3, {t:.3f} s/batch",
    "global step {s}: loss 2.3 ({t:.3f} sec/step)",
    "Iteration {s}/1000 took {t:.3f}s",
    # spellings no table lists: each word is reduced to one form (vocabulary.CANONICAL_UNITS)
    "update {s}: {rate:.3f} iters/sec",
    "it {s} ({ms:.0f} ms/iteration)",
])
def test_rate_and_time_spellings_time_a_learned_stream(tmp_path: Path, line: str) -> None:
    # 0.85 s a step however the unit or the verb is spelled (the absl stamps, 1 s apart, are not the clock)
    p = tmp_path / "train.log"
    p.write_text("\n".join(line.format(s=s, sec=s % 60, rate=1 / 0.85, ms=850.0, t=0.85) for s in range(1, 31)) + "\n")
    steps = diagnose(parse([str(p)])).metrics.steps
    assert steps is not None and steps.p50_s == pytest.approx(0.85, rel=0.01)


def test_the_world_from_a_wandb_runs_summary_rates(tmp_path: Path) -> None:
    # The HF integration's summary (wandb-summary.json) holds the Trainer's rates, and its config the batch: a W&B
    # run whose console output is not beside it still gives one process.
    files = tmp_path / "run-20240502_104635-36hrg0wi" / "files"
    files.mkdir(parents=True)
    (files / "config.yaml").write_text("wandb_version: 1\nper_device_train_batch_size:\n  value: 8\n"
                                       "gradient_accumulation_steps:\n  value: 1\n")
    (files / "wandb-summary.json").write_text(json.dumps({"train/train_samples_per_second": 0.728,
                                                          "train/train_steps_per_second": 0.091}))
    (files / "wandb-history.jsonl").write_text("".join(json.dumps({"_step": i, "train/loss": 1.0}) + "\n"
                                                       for i in range(5)))
    f = parse([str(tmp_path)]).facts
    assert f.world_size == 1 and f.evidence["world_size"].origin == "hf_summary_rates"
