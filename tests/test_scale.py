"""Long and many logs: the other ranks' rows sampled past a budget (the lowest rank's all kept), and many small logs
read as one batch that gives what reading each alone gives."""
from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import polars as pl
import pytest
from polars.testing import assert_frame_equal

from conftest import SAMPLES
from diagnose import engine
from diagnose.parsers import extract, lines, run_model, thinning
from diagnose.parsers.sources import Input, resolve
from diagnose.reports import document, markdown

BENCH = Path(__file__).resolve().parent.parent / "benchmarks" / "ingest.py"


def _write_bench_log(path: Path, size: int) -> None:
    spec = importlib.util.spec_from_file_location("bench_ingest", BENCH)
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    sys.modules["bench_ingest"] = mod
    spec.loader.exec_module(mod)
    mod.write_log(path, size)


def _model(paths: list[Path], tmp: Path) -> run_model.RunModel:
    return run_model.build(resolve([str(p) for p in paths], tmp))


@pytest.fixture(scope="module")
def bench_log(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("scale") / "train-16rank.log"
    _write_bench_log(path, 3 * 1024 * 1024)
    return path


@pytest.fixture(scope="module")
def full_read(bench_log: Path, tmp_path_factory: pytest.TempPathFactory) -> run_model.RunModel:
    """The benchmark log read whole, in a dozen chunks (counts carry across them), under the budget."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(lines, "CHUNK_BYTES", 256 * 1024)
        return _model([bench_log], tmp_path_factory.mktemp("full"))


@pytest.mark.xdist_group("scale")  # with the other test that compares with full_read: it is read once
def test_other_ranks_are_sampled_past_the_budget_and_the_lowest_rank_kept_whole(
        bench_log: Path, full_read: run_model.RunModel, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(lines, "CHUNK_BYTES", 256 * 1024)
    full = full_read
    assert full.thinned == {}
    monkeypatch.setattr(thinning, "THIN_BUDGET_ROWS", 2_000)
    thin = _model([bench_log], tmp_path)
    assert thin.thinned["steps"] >= 4 and thin.thinned["timers"] >= 4
    for name in ("steps", "timers"):
        assert thin.frames[name].height < full.frames[name].height / 2
        # rank 0 (the step clock's rank) loses nothing
        rank0 = [f.frames[name].filter(pl.col("rank") == 0).sort("line") for f in (full, thin)]
        assert_frame_equal(rank0[0], rank0[1])
        # every other rank keeps about the same share of its rows
        kept = thin.frames[name].filter(pl.col("rank") > 0).group_by("rank").len()["len"]
        assert kept.min() >= 0.8 * kept.max()
    # a timer row keeps the step number it had: `seq` counts what the rank printed, not what was kept
    seq = full.frames["timers"].select("line", "seq").join(thin.frames["timers"].select("line", "seq"), on="line")
    assert seq.height == thin.frames["timers"].height and (seq["seq"] == seq["seq_right"]).all()
    a, b = engine.diagnose(full).metrics, engine.diagnose(thin).metrics
    assert a.steps is not None and b.steps is not None and a.steps.n == b.steps.n
    assert abs(a.breakdown.total_ms - b.breakdown.total_ms) / a.breakdown.total_ms < 0.02  # type: ignore[union-attr]
    assert set(a.rank_step_p50) == set(b.rank_step_p50)
    assert abs(a.samples_per_sec - b.samples_per_sec) / a.samples_per_sec < 0.02  # type: ignore[operator]
    # the report says so
    doc = document.build(thin, engine.diagnose(thin))
    assert doc["sampled"] == thin.thinned
    text = markdown.render(doc)
    assert f"steps 1 in {thin.thinned['steps']}" in text and "lowest rank's rows all kept" in text
    assert "sampled rows" not in markdown.render(document.build(full, engine.diagnose(full)))


@pytest.mark.xdist_group("scale")
def test_lines_the_thinner_would_drop_are_skipped_unread_and_the_frames_stay_as_reading_them_gives(
        bench_log: Path, full_read: run_model.RunModel, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(lines, "CHUNK_BYTES", 256 * 1024)
    skipped: dict[str, int] = {}
    sample = thinning.sample_lines

    def counted(tagged: pl.DataFrame, source: int, sampling: thinning.Sampling) -> tuple[pl.Series, pl.DataFrame]:
        read, numbered = sample(tagged, source, sampling)
        for anchor, n in tagged.filter(~read)["anchor"].value_counts().iter_rows():
            skipped[anchor] = skipped.get(anchor, 0) + n
        return read, numbered

    full = full_read
    monkeypatch.setattr(thinning, "THIN_BUDGET_ROWS", 2_000)
    monkeypatch.setattr(extract, "sample_lines", counted)
    sampled = _model([bench_log], tmp_path)
    # Every line read, the thinner dropping the same rows afterwards: the workers are told no stride.
    monkeypatch.setattr(thinning.Thinner, "sampling", lambda self: thinning.Sampling({}))
    whole = _model([bench_log], tmp_path)
    assert sampled.thinned == whole.thinned and sampled.thinned["timers"] >= 4
    # Many of the rows the thinner dropped came from lines never taken apart (the first chunks are read before any
    # stride is set): ranked step and timer lines, and the throughput lines that carry no rank, sampled by host.
    dropped = sum(full.frames[n].height - whole.frames[n].height for n in ("steps", "timers"))
    assert set(skipped) == {", skipped=", "/micro_step=", "time (ms) |"} and sum(skipped.values()) > 0.4 * dropped
    for name in ("steps", "timers", "events", "facts"):
        assert_frame_equal(sampled.frames[name], whole.frames[name])
    unranked = sampled.frames["steps"].filter(pl.col("origin") == "ds_throughput")
    assert unranked["rank"].null_count() == unranked.height and unranked["node"].n_unique() == 4
    assert [s.recognised for s in sampled.sources] == [s.recognised for s in whole.sources]


def test_past_the_primary_budget_a_kind_printed_by_every_process_keeps_one_row_per_step(
        bench_log: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(thinning, "PRIMARY_BUDGET_ROWS", 1_000)
    monkeypatch.setattr(lines, "CHUNK_BYTES", 256 * 1024)
    model = _model([bench_log], tmp_path)
    steps = model.frames["steps"]
    # tqdm bars from the four hosts, which print no rank: one row per step and source now
    tqdm = steps.filter(pl.col("origin") == "tqdm")
    assert tqdm.height == tqdm.select("global_step").n_unique()
    # rank 0's step lines: still every step
    ds = steps.filter((pl.col("origin") == "ds_step") & (pl.col("rank") == 0))
    assert ds["global_step"].to_list() == list(range(1, ds.height + 1))


def test_a_straggler_is_still_found_when_the_other_ranks_are_sampled(tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    log = SAMPLES / "synthetic" / "straggler"
    full = engine.diagnose(_model([log], tmp_path))
    monkeypatch.setattr(thinning, "THIN_BUDGET_ROWS", 40)
    model = _model([log], tmp_path)
    assert model.thinned
    thin = engine.diagnose(model)
    assert "straggler" in {f.id for f in full.findings} and "straggler" in {f.id for f in thin.findings}
    assert max(thin.metrics.rank_step_p50, key=thin.metrics.rank_step_p50.get) == \
        max(full.metrics.rank_step_p50, key=full.metrics.rank_step_p50.get)


def _split(path: Path, out: Path, lines_per_file: int) -> list[Path]:
    lines = path.read_bytes().splitlines(keepends=True)
    files = []
    for i in range(0, len(lines), lines_per_file):
        p = out / f"part{i // lines_per_file:04d}.log"
        p.write_bytes(b"".join(lines[i:i + lines_per_file]))
        files.append(p)
    return files


def test_small_logs_read_as_one_batch_give_what_each_read_alone_gives(tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    parts = tmp_path / "parts"
    parts.mkdir()
    # a real log with its engine config dump (a multi-line block) and comms, cut into pieces
    files = _split(SAMPLES / "ds_zero3_ckpt" / "train.log", parts, 40)
    (parts / "zz-empty.log").write_bytes(b"")
    (parts / "zz-noise.log").write_bytes(b"nothing to see here\nat all\n")
    (parts / "zz-latin1.log").write_bytes(b"caf\xe9 " + files[3].read_bytes())
    (parts / "zz-nul.log").write_bytes(files[4].read_bytes() + b"\x00" * 64)
    # a launch script, and a log that opens like one (its log lines outnumber the shell lines: a log)
    (parts / "zz-launch.sh").write_bytes((SAMPLES / "ds_zero3_ckpt" / "launch.sh").read_bytes())
    (parts / "zz-exported.log").write_bytes(b"export NCCL_DEBUG=INFO\n" + files[5].read_bytes())
    inputs = list(resolve([str(parts), str(SAMPLES / "ds_zero3_ckpt" / "ds_config.json")], tmp_path))
    batched = run_model.build(inputs)
    monkeypatch.setattr(run_model, "SMALL_LOG_BYTES", 0)
    alone = run_model.build(inputs)
    assert batched.sources == alone.sources
    assert [s.name for s in batched.skipped] == [s.name for s in alone.skipped]
    assert any(s.name.endswith("zz-empty.log") for s in batched.skipped)
    noise = [s for s in batched.sources if s.name.endswith("zz-noise.log")]  # text: read, nothing recognised
    assert noise and noise[0].note == "nothing recognised in 2 lines"
    for name in batched.frames:
        assert_frame_equal(batched.frames[name], alone.frames[name], check_row_order=False)
    assert batched.facts == alone.facts
    assert engine.diagnose(batched).findings == engine.diagnose(alone).findings
    assert batched.facts.zero_stage == 3  # the config dump block, read within its own piece
    kinds = {s.name.rsplit("/", 1)[-1]: s.kind for s in batched.sources}
    assert kinds["zz-launch.sh"] == "launch_script" and kinds["zz-exported.log"] == "log"
    assert batched.configs == alone.configs and any(k.endswith("zz-launch.sh") for k in batched.configs)


def test_inputs_unchanged_in_order_when_small_logs_wait_for_their_batch(tmp_path: Path) -> None:
    """Source ids follow the inputs' order although small logs are read later, together."""
    big = tmp_path / "big.log"
    big.write_bytes((SAMPLES / "ds_zero0" / "train.log").read_bytes() * 30)  # over SMALL_LOG_BYTES
    small = tmp_path / "small.log"
    small.write_bytes((SAMPLES / "ds_zero1_ga2_torchrun" / "train.log").read_bytes()[:20_000])
    assert big.stat().st_size > run_model.SMALL_LOG_BYTES
    model = run_model.build([Input(str(small), small, True), Input(str(big), big, True)])
    assert [s.name for s in model.sources] == [str(small), str(big)]
    steps = model.frames["steps"]
    assert set(steps["source"].unique().to_list()) == {0, 1}
    assert steps.filter(pl.col("source") == 1).height > steps.filter(pl.col("source") == 0).height


def test_many_one_line_files_are_read_as_one_batch(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A folder of one-short-line files (the shape that took minutes at 100,000 files): batched, not read one by
    one, and each file still its own source with its own line numbers."""
    from diagnose.parsers import parse, run_model

    calls = {"log": 0, "batch": 0}
    one, many = run_model.ingest_log, run_model.ingest_batch

    def log(*a, **k):  # type: ignore[no-untyped-def]
        calls["log"] += 1
        return one(*a, **k)

    def batch(*a, **k):  # type: ignore[no-untyped-def]
        calls["batch"] += 1
        return many(*a, **k)

    monkeypatch.setattr(run_model, "ingest_log", log)
    monkeypatch.setattr(run_model, "ingest_batch", batch)
    for i in range(1, 401):
        (tmp_path / f"r{i:03d}.log").write_text(f"step {i} loss 2.5 time 0.1\n")
    m = parse([str(tmp_path)])
    assert calls == {"log": 0, "batch": 1} and len(m.sources) == 400
    assert set(m.frames["steps"]["line"].to_list()) == {1}
