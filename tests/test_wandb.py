"""W&B runs as sources, with the real wandb client: offline runs it writes during the test, read back by our
`.wandb` reader; and the same run served by a loopback stand-in of the W&B API that the real client fetches over
HTTP (with the cache and every error path). Every subprocess has a timeout. The command line runs as a child here,
not in the test's process as elsewhere (conftest.run_cli): the real client starts wandb-core, whose deadlines and
teardown belong to a process of their own."""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import polars as pl
import pytest

from conftest import ROOT, run_cli
from diagnose.parsers import parse, wandb_history, wandb_offline, wandb_schema
from wandb_standin import StandIn

# One test worker runs this module, so that its module-scoped fixture is built once (pytest-xdist's loadgroup).
pytestmark = pytest.mark.xdist_group("test_wandb")

STEPS = 240
WRITER = r"""
import os, sys, time, wandb
run = wandb.init(project="p", config={"per_device_train_batch_size": 8, "gradient_accumulation_steps": 2,
                 "bf16": True, "fp16": False, "model/num_parameters": 124000000},
                 settings=wandb.Settings(x_stats_sampling_interval=0.2))
print(f"run id {run.id}", flush=True)
for i in range(STEPS):
    extra = {}
    if i % 60 == 7:  # values the columnar history decoder hands to the exact one, or types it keeps as JSON text
        extra = {"eval/note": "n" * 150, "eval/ok": True, "eval/nan": float("nan"), "eval/nested": {"a": 1}}
    run.log({"train/loss": 5.0 - i * 0.01, "train/learning_rate": 1e-4, "train/global_step": i + 1, **extra}, step=i)
    if i % 40 == 0:
        print(f"[Rank 0] time (ms) | fwd: {10 + i / 100:.2f} | bwd: 20.00 | bwd_inner: 15.00 | bwd_allreduce: 5.00 | step: 3.00", flush=True)
    time.sleep(0.004)
time.sleep(1.0)
run.finish()
""".replace("STEPS", str(STEPS))


def _env(home: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("WANDB_")}
    env.update(HOME=str(home), WANDB_MODE="offline", WANDB_DIR=str(home), WANDB_SILENT="true",
               DIAGNOSE_CACHE_DIR=str(home / "cache"), **extra)
    return env


@pytest.fixture(scope="module")
def offline_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    home = tmp_path_factory.mktemp("wandb-home")
    (home / "writer.py").write_text(WRITER)
    proc = subprocess.run([sys.executable, str(home / "writer.py")], env=_env(home), capture_output=True, text=True,
                          timeout=180, cwd=home)
    assert proc.returncode == 0, proc.stderr[-2000:]
    runs = sorted((home / "wandb").glob("offline-run-*"))
    assert len(runs) == 1
    return runs[0]


def test_offline_run_reads_back(offline_run: Path) -> None:
    m = parse([str(offline_run)])
    hist = m.frames["steps"].filter(pl.col("origin") == "wandb_history").sort("global_step")
    assert hist.height == STEPS
    assert hist["global_step"].to_list() == list(range(1, STEPS + 1))
    assert hist["loss"].to_list() == pytest.approx([5.0 - i * 0.01 for i in range(STEPS)])
    system = m.frames["system"]
    assert system.height > 0 and {"cpu", "proc.memory.rssMB"} & set(system["metric"].to_list())
    f = m.facts
    assert (f.micro_batch_per_gpu, f.grad_accum_steps, f.precision, f.model_params) == (8, 2, "bf16", 124_000_000)
    timers = m.frames["timers"]
    assert timers.height == STEPS // 40 and timers["fwd"][0] == 10.0  # console output went through the log parser


def test_columnar_history_matches_the_exact_decoder(offline_run: Path) -> None:
    """The polars decoder of history records gives what protobuf's own parser gives, record for record; records
    with an item of 128 bytes or more (the long note) go through the exact decoder."""
    wfile = next(offline_run.glob("run-*.wandb"))
    payloads, _, _ = wandb_offline.iter_records(wfile.read_bytes())
    pb = wandb_schema.internal_pb2()
    exact, history = [], []
    for payload in payloads:
        rec = pb.Record()
        rec.ParseFromString(payload)
        if rec.WhichOneof("record_type") == "history":
            exact.append(wandb_offline._history_row(rec.history.item))
            history.append(payload)
    _, handed_back = wandb_history.decode_records(pl.Series(history, dtype=pl.Binary))
    assert handed_back == [i for i in range(STEPS) if i % 60 == 7]
    want = wandb_history.from_rows(exact)
    got = wandb_offline.read(wfile).history
    assert sorted(got.columns) == sorted(want.columns) and got.height == STEPS
    assert got.select(sorted(want.columns)).equals(want.select(sorted(want.columns)))
    assert got.schema["eval/ok"] == pl.String and got.schema["eval/nan"] == pl.Float64
    assert got["eval/note"].drop_nulls().to_list() == ['"' + "n" * 150 + '"'] * 4


def test_truncated_run_gives_what_it_can(offline_run: Path, tmp_path: Path) -> None:
    src = next(offline_run.glob("run-*.wandb"))
    cut = tmp_path / src.name
    data = src.read_bytes()
    # Cut inside the middle history record: a cut at a fixed fraction of the file can land past the last history
    # record when the system-metrics sampler wrote more than usual (a loaded machine).
    payloads, _, _ = wandb_offline.iter_records(data)
    records = pl.Series("p", payloads, dtype=pl.Binary)
    history = (wandb_offline.record_fields(records) == wandb_offline.HISTORY_FIELD).arg_true()
    # (a record split across a 32 KiB block is not found whole; the next one is)
    middle = next(p for i in history[history.len() // 2:] if data.find(p := payloads[i]) > 0)
    cut.write_bytes(data[: data.find(middle) + len(middle) // 2])
    run = wandb_offline.read(cut)
    assert run.truncated and 0 < len(run.history) < STEPS
    m = parse([str(cut)])
    assert "(truncated)" in m.sources[0].name


def test_not_a_wandb_file(tmp_path: Path) -> None:
    with pytest.raises(ValueError):
        wandb_offline.iter_records(b"garbage that is not a transaction log")


def _standin_from(offline_run: Path) -> StandIn:
    run = wandb_offline.read(next(offline_run.glob("run-*.wandb")))
    system = [{("system." + k if not k.startswith("_") else k): v for k, v in row.items()} for row in run.stats]
    system = [{**r, "system.gpu.0.gpu": 50.0 + i % 3, "system.gpu.0.memoryAllocated": 92.0}
              for i, r in enumerate(system)]  # GPU keys as the API names them (no GPU writes them here)
    config = {k: v for k, v in run.config.items() if k != "_wandb"}
    history = run.history.select(pl.exclude("^eval/.*$"))  # the decoder test's extra keys; training keys only
    return StandIn(run.run["run_id"], config, {"train/loss": 2.61}, history.to_dicts(), system, "\n".join(run.output),
                   {"host": "vm", "gpu_nvidia": [{"name": "NVIDIA A100-SXM4-80GB"}], "gpu_count": 4})


KEY = "x" * 40


@pytest.mark.slow
def test_api_fetch_matches_offline_run_and_caches(offline_run: Path, tmp_path: Path) -> None:
    offline = parse([str(offline_run)])
    with _standin_from(offline_run) as standin:
        ref = f"e/p/{standin.run_id}"
        env = _env(tmp_path, WANDB_BASE_URL=standin.url, WANDB_API_KEY=KEY)
        proc = subprocess.run([sys.executable, "-m", "diagnose", "parse", ref, "--format", "json", "--out",
                               str(tmp_path / "frames")], env=env, capture_output=True, text=True, timeout=120,
                              cwd=ROOT)
        assert proc.returncode == 0, proc.stderr
        doc = json.loads(proc.stdout)
        assert any(r.startswith("POST /graphql") for r in standin.requests)
    steps = pl.read_parquet(tmp_path / "frames" / "steps.parquet").filter(pl.col("origin") == "wandb_history")
    want = offline.frames["steps"].filter(pl.col("origin") == "wandb_history")
    assert sorted(steps["global_step"].to_list()) == sorted(want["global_step"].to_list())
    assert sorted(steps["loss"].to_list()) == pytest.approx(sorted(want["loss"].to_list()))
    system = pl.read_parquet(tmp_path / "frames" / "system.parquet")
    assert system.filter((pl.col("metric") == "gpu") & (pl.col("gpu") == 0)).height > 0
    assert doc["facts"]["gpu_name"] == "NVIDIA A100-SXM4-80GB" and doc["facts"]["micro_batch_per_gpu"] == 8
    assert doc["frames"]["timers"] == offline.frames["timers"].height  # console output.log through the parser
    # the server is gone: the cache answers
    again = subprocess.run([sys.executable, "-m", "diagnose", "parse", ref, "--format", "json"], env=env,
                           capture_output=True, text=True, timeout=60, cwd=ROOT)
    assert again.returncode == 0, again.stderr
    assert json.loads(again.stdout)["frames"] == doc["frames"]
    refresh = subprocess.run([sys.executable, "-m", "diagnose", "parse", ref, "--refresh"], env=env,
                             capture_output=True, text=True, timeout=60, cwd=ROOT)
    assert refresh.returncode == 2 and "cannot reach" in refresh.stderr


def _run_error(offline_run: Path, tmp_path: Path, mode: str, process: bool = True,
               **env_extra: str) -> tuple[subprocess.CompletedProcess[str], float]:
    """`diagnose parse` of the stand-in's run in `mode`, in a child (`process`: start-up, a terminal's settings read
    at import, the time the command takes) or in this process (what it prints and its exit status)."""
    with _standin_from(offline_run) as standin:
        standin.mode = mode
        env = _env(tmp_path, WANDB_BASE_URL=standin.url, WANDB_API_KEY=KEY)
        env.update(env_extra)
        ref = f"https://wandb.example.test/e/p/runs/{standin.run_id}/overview?nw=1" if mode == "selfhosted" else \
            f"e/p/{standin.run_id}"
        t0 = time.monotonic()
        proc = run_cli("parse", ref, environ=env, process=process, timeout=90)
        return proc, time.monotonic() - t0


@pytest.mark.parametrize("mode, message", [
    ("missing", "run not found"),
    ("denied", "no permission"),
    ("unauthorized", "did not accept the API key"),
])
def test_api_errors(offline_run: Path, tmp_path: Path, mode: str, message: str) -> None:
    proc, _ = _run_error(offline_run, tmp_path, mode, process=False)
    assert proc.returncode == 2 and message in proc.stderr, proc.stderr
    assert proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr


@pytest.mark.slow
def test_rate_limit_is_retried_then_reported(offline_run: Path, tmp_path: Path) -> None:
    once, _ = _run_error(offline_run, tmp_path, "ratelimit-once")
    assert once.returncode == 0, once.stderr  # one 429, then the answer: retried with backoff
    always, seconds = _run_error(offline_run, tmp_path / "b", "ratelimit")
    assert always.returncode == 2 and always.stderr.count("\n") == 1, always.stderr
    assert "rate limited by the W&B API (HTTP 429" in always.stderr
    assert seconds < 30


@pytest.mark.slow
def test_server_errors_are_named(offline_run: Path, tmp_path: Path) -> None:
    """wandb-core retries 5xx answers until its deadline and then reports a timeout; a probe names the status."""
    proc, seconds = _run_error(offline_run, tmp_path, "servererror")
    assert proc.returncode == 2 and "kept failing with HTTP 500" in proc.stderr and proc.stderr.count("\n") == 1
    assert seconds < 30


def test_no_api_key(tmp_path: Path) -> None:
    env = _env(tmp_path, WANDB_BASE_URL="http://127.0.0.1:9")
    env.pop("WANDB_MODE")
    proc = run_cli("parse", "e/p/abc123", "--refresh", environ=env)
    assert proc.returncode == 2
    assert "cannot reach" in proc.stderr or "WANDB_API_KEY" in proc.stderr


def test_no_api_key_with_a_reachable_server(offline_run: Path, tmp_path: Path) -> None:
    with _standin_from(offline_run) as standin:
        env = _env(tmp_path, WANDB_BASE_URL=standin.url)
        env.pop("WANDB_MODE")
        proc = run_cli("parse", f"e/p/{standin.run_id}", environ=env)
    assert proc.returncode == 2 and "WANDB_API_KEY" in proc.stderr and "wandb login" in proc.stderr, proc.stderr


def test_unreachable_fails_fast(tmp_path: Path) -> None:
    env = _env(tmp_path, WANDB_BASE_URL="http://127.0.0.1:9", WANDB_API_KEY=KEY)
    t0 = time.monotonic()
    proc = run_cli("parse", "e/p/abc123", environ=env)
    assert proc.returncode == 2 and "cannot reach" in proc.stderr
    assert time.monotonic() - t0 < 10


@pytest.mark.parametrize("text, want", [
    ("https://wandb.ai/ent/proj/runs/abc123", ("ent", "proj", "abc123", None)),
    ("https://wandb.ai/ent/proj/runs/abc123/logs?nw=nwuser", ("ent", "proj", "abc123", None)),
    ("https://wandb.ai/ent/proj/runs/abc123/system", ("ent", "proj", "abc123", None)),
    ("https://wandb.example.com/ent/proj/runs/abc123/overview", ("ent", "proj", "abc123", "https://wandb.example.com")),
    ("ent/proj/runs/abc123", ("ent", "proj", "abc123", None)),
    ("ent/proj/abc123", ("ent", "proj", "abc123", None)),
])
def test_run_references(text: str, want: tuple) -> None:
    from diagnose.parsers.wandb_api import parse_ref

    ref = parse_ref(text)
    assert ref is not None and (ref.entity, ref.project, ref.run_id, ref.base_url) == want


def test_report_url_asks_for_run_urls() -> None:
    proc = run_cli("parse", "https://wandb.ai/ent/proj/reports/Slow-run--Vmlldzo1")
    assert proc.returncode == 2 and "not a run" in proc.stderr


def test_walking_a_run_directory_reads_the_transaction_log_once(offline_run: Path) -> None:
    m = parse([str(offline_run.parent)])
    assert [s.kind for s in m.sources] == ["wandb_run"]


def test_legacy_run_directory(offline_run: Path, tmp_path: Path) -> None:
    """Older SDKs and synced runs leave JSON files instead of (or beside) the transaction log."""
    run = wandb_offline.read(next(offline_run.glob("run-*.wandb")))
    legacy = tmp_path / "wandb" / "run-20240101_000000-legacy1"
    files = legacy / "files"
    files.mkdir(parents=True)
    (files / "wandb-history.jsonl").write_text("\n".join(json.dumps(r) for r in run.history.to_dicts())
                                               + '\n{"_step": 9')
    (files / "wandb-events.jsonl").write_text("\n".join(json.dumps({"system.gpu.0.gpu": 55.0, "_timestamp": 1.7e9 + i})
                                                        for i in range(5)) + "\n")
    (files / "wandb-summary.json").write_text(json.dumps({"train/loss": 2.61}))
    (files / "wandb-metadata.json").write_text(json.dumps({"gpu_nvidia": [{"name": "NVIDIA H100 80GB HBM3"}]}))
    (files / "config.yaml").write_text("wandb_version: 1\nper_device_train_batch_size:\n  desc: null\n  value: 8\n")
    (files / "output.log").write_text("\n".join(run.output))
    m = parse([str(tmp_path / "wandb")])
    assert m.sources[0].kind == "wandb_run"
    assert m.frames["steps"].filter(pl.col("origin") == "wandb_history").height == STEPS
    assert m.frames["system"].filter(pl.col("metric") == "gpu")["value"].to_list() == [55.0] * 5
    assert m.facts.gpu_name == "NVIDIA H100 80GB HBM3" and m.facts.micro_batch_per_gpu == 8


def test_panel_csv_export(tmp_path: Path) -> None:
    """A CSV exported from a W&B system panel and one from a chart panel."""
    gpu = tmp_path / "gpu-util.csv"
    gpu.write_text('"Relative Time (Process)","phi2-cpt - system/gpu.0.gpu","phi2-cpt - system/gpu.0.gpu__MIN",'
                   '"phi2-cpt - system/gpu.1.gpu"\n' + "\n".join(f"{i * 15},{50 + i % 2},{49},{48 + i % 3}"
                                                                  for i in range(20)) + "\n")
    loss = tmp_path / "loss.csv"
    loss.write_text('"Step","phi2-cpt - train/loss","phi2-cpt - train/loss__MIN","phi2-cpt - train/loss__MAX"\n'
                    + "\n".join(f"{i},{3 - i * 0.01},{2.9},{3.1}" for i in range(1, 31)) + "\n")
    m = parse([str(gpu), str(loss)])
    assert [s.kind for s in m.sources] == ["wandb_panel_csv", "wandb_panel_csv"]
    sys_ = m.frames["system"]
    assert sorted(set(sys_["gpu"].to_list())) == [0, 1] and sys_.height == 40
    steps = m.frames["steps"].filter(pl.col("origin") == "wandb_history")
    assert steps.height == 30 and steps["loss"][0] == pytest.approx(2.99)


def test_big_runs_use_the_unsampled_parquet_history(offline_run: Path, tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """Above FULL_HISTORY_MAX rows the sampled history would hide stalls: scan_history range-reads parquet."""
    from diagnose.parsers import wandb_api

    with _standin_from(offline_run) as standin:
        for k in [k for k in os.environ if k.startswith("WANDB_")]:
            monkeypatch.delenv(k)
        monkeypatch.setenv("HOME", str(tmp_path))
        monkeypatch.setenv("WANDB_BASE_URL", standin.url)
        monkeypatch.setenv("WANDB_API_KEY", KEY)
        monkeypatch.setattr(wandb_api, "FULL_HISTORY_MAX", 10)
        monkeypatch.setattr(wandb_api, "PROGRESS_EVERY_ROWS", 100)
        seen: list[tuple[str, int, int | None]] = []
        run = wandb_api.fetch(wandb_api.WandbRef("e", "p", standin.run_id, None), cache_root=tmp_path / "cache",
                              progress=lambda what, done, total: seen.append((what, done, total)))
        assert any(r.startswith("GET /files/history.parquet") for r in standin.requests)
    assert len(run.history) == STEPS
    rows = [(done, total) for what, done, total in seen if what == "history rows"]
    assert rows == [(0, STEPS), (100, STEPS), (200, STEPS), (STEPS, STEPS)]  # the bar's steps while rows arrive
    assert [what for what, _, _ in seen][-2:] == ["system metrics", "metadata and console output"]
    assert sorted(run.history["train/loss"].to_list()) == pytest.approx(
        sorted(5.0 - i * 0.01 for i in range(STEPS)))


def test_progress_shows_on_a_terminal(offline_run: Path, tmp_path: Path) -> None:
    """On a terminal (rich honours FORCE_COLOR as one) the fetch draws a progress display on stderr, then erases it."""
    proc, _ = _run_error(offline_run, tmp_path, "ok", FORCE_COLOR="1", COLUMNS="100")
    assert proc.returncode == 0, proc.stderr
    shown = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", proc.stderr).replace("━", "")
    assert re.search(r"W&B: history rows +240/240", shown), shown[-1500:]
    assert "W&B: system metrics" in shown and "steps=" in proc.stdout


@pytest.mark.parametrize("mode, message", [
    ("silent", "accepted the connection but did not answer within 5 s"),
    ("notfound", "is not a W&B API (HTTP 404 on /graphql)"),
])
@pytest.mark.slow
def test_hosts_that_are_not_answering_w_and_b_apis(offline_run: Path, tmp_path: Path, mode: str, message: str) -> None:
    proc, seconds = _run_error(offline_run, tmp_path, mode)
    assert proc.returncode == 2 and message in proc.stderr and proc.stderr.count("\n") == 1, proc.stderr
    assert "API key" not in proc.stderr
    assert seconds < 10 + 3  # within 10 s of diagnose's own work, plus interpreter start-up


@pytest.mark.parametrize("console", ["output.log", "output.md", "output_log", "train.log"])
def test_a_run_directory_reads_its_console_whatever_its_name(tmp_path: Path, console: str) -> None:
    # A run directory as older SDKs left it, its console log renamed (a paste saved as `.md`, a copy beside the run):
    # the files W&B does not write are read as inputs of their own; before, the run read as nothing.
    files = tmp_path / "wandb" / "run-20260105_100000-abc123" / "files"
    files.mkdir(parents=True)
    (files / "wandb-metadata.json").write_text(json.dumps({"gpu": "NVIDIA H100 80GB HBM3", "gpu_count": 8}))
    (files / "requirements.txt").write_text("torch==2.5.1\n")
    (files / console).write_text("".join(f"step {s} loss 2.4833 step_time {0.85 + 0.01 * (s % 3):.3f}s\n"
                                         for s in range(10, 410, 10)))
    for src in (tmp_path / "wandb", files.parent):
        m = parse([str(src)])
        assert m.frames["steps"].height == 40 and m.frames["steps"]["step_time_s"].median() == pytest.approx(0.86)
        assert not any(s.name.endswith(("requirements.txt", "wandb-metadata.json")) for s in m.sources)
