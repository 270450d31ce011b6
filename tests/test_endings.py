"""Why it stopped (issue 33): how each recorded launch ended (real torchrun + gloo runs with one fault each, recorded
by sample_logs/record/train_fault.py), the rank that caused it, what is fallout, and advice lines that are never
evidence."""
from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest

import diagnose
from conftest import SAMPLES
from diagnose.endings import _first_to_stop
from diagnose.engine import diagnose as run_rules
from diagnose.parsers import parse


def _end(run: str):  # type: ignore[no-untyped-def]
    d = run_rules(parse([str(SAMPLES / run)]))
    assert d.ending is not None
    return d


def test_a_rank_that_sleeps_past_the_timeout_is_a_hang_named_by_the_rank_that_never_arrived() -> None:
    d = _end("fault_hang")
    e = d.ending
    assert e.how == "hung" and e.after_step == 5
    # torchrun's table calls rank 0 the root cause (it exited first, timed out); rank 1 is the one it waited for
    assert e.rank == 1 and "rank 0 timed out" in e.summary and "rank 1 never reached it" in e.summary
    assert e.silence_s == pytest.approx(10.9, abs=0.5)  # the 10 s gloo timeout after a 0.2 s step
    top = d.findings[0]
    assert top.id == "nccl-timeout-hang" and top.severity == "critical" and top.cost is not None
    assert top.cost.lost_s == pytest.approx(e.silence_s) and "TORCH_NCCL_DUMP_ON_TIMEOUT=1" in top.fix.summary
    assert "hung in a collective" in d.verdict


def test_the_first_exception_is_the_crash_and_the_peers_errors_are_its_fallout() -> None:
    d = _end("fault_raise")
    e = d.ending
    assert e.how == "crashed" and e.rank == 1 and e.host == "localhost"
    assert "RuntimeError: injected failure on rank 1 at step 6" in e.summary
    assert [w for _, _, w in e.fallout] == ["rank 0: lost its peer (line 27)"]
    f = next(x for x in d.findings if x.id == "rank-crash")
    assert f.severity == "critical" and not f.explains_slowdown and "fallout" in f.summary
    assert d.verdict.startswith("The run crashed after step 5")


def test_sigkill_in_the_failure_table_is_a_kill_not_a_crash() -> None:
    d = _end("fault_kill")
    e = d.ending
    assert e.how == "killed" and e.rank == 1 and "SIGKILL" in e.summary and "OOM killer" in e.summary
    assert [w for _, _, w in e.fallout] == ["rank 0: lost its peer (line 21)"]
    f = next(x for x in d.findings if x.id == "killed")
    assert f.severity == "critical" and "dmesg" in f.fix.summary


def test_a_signal_to_the_launcher_is_a_stop_from_outside() -> None:
    d = _end("fault_timeout")
    assert d.ending.how == "killed" and "SIGTERM" in d.ending.summary and d.ending.after_step == 16
    f = next(x for x in d.findings if x.id == "killed")
    assert f.severity == "info" and not f.explains_slowdown


@pytest.mark.parametrize("run,how", [("ds_zero0", "finished"), ("hf_trainer_deepspeed", "finished"),
                                     ("synthetic/comm_bound", "unknown")])
def test_healthy_endings(run: str, how: str) -> None:
    d = _end(run)
    assert d.ending.how == how
    assert not any(f.id in ("rank-crash", "killed", "nccl-timeout-hang") for f in d.findings)


def test_the_ending_is_in_every_format(tmp_path: Path) -> None:
    a = diagnose.analyse(SAMPLES / "fault_hang")
    doc = json.loads(a.render("json"))
    assert doc["ending"]["how"] == "hung" and doc["ending"]["rank"] == 1
    assert "How it ended: hung after step 5" in a.render("md")
    assert '<p id="ending"><b>How it ended:</b> hung after step 5' in a.render("html")
    assert "How it ended: hung after step 5" in a.render("text")


def test_slurm_time_limit_and_the_nccl_watchdog(tmp_path: Path) -> None:
    steps = "\n".join(f"[2024-05-01 10:00:{i:02d},000] [INFO] [logging.py:96:log_dist] [Rank 0] step={i}, skipped=0, "
                      "lr=[0.0001], mom=[(0.9, 0.95)]" for i in range(1, 9))
    cancelled = tmp_path / "slurm-1.out"
    cancelled.write_text(steps + "\nslurmstepd: error: *** JOB 1234 ON gpu-node-1 CANCELLED AT 2024-05-01T10:00:09 "
                                 "DUE TO TIME LIMIT ***\n")
    e = run_rules(parse([str(cancelled)])).ending
    assert e is not None and e.how == "killed" and "time limit" in e.summary and e.after_step == 8
    hang = tmp_path / "hang.log"
    hang.write_text(steps + "\n[rank3]:[E1201 10:30:08.000000 ProcessGroupNCCL.cpp:607] [Rank 3] Watchdog caught "
                            "collective operation timeout: WorkNCCL(SeqNum=93, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, "
                            "Timeout(ms)=1800000) ran for 1800073 milliseconds before timing out.\n")
    e = run_rules(parse([str(hang)])).ending
    assert e is not None and e.how == "hung" and "rank 3 timed out" in e.summary


def test_advice_is_never_evidence(tmp_path: Path) -> None:
    """PyTorch prints 'For debugging consider passing CUDA_LAUNCH_BLOCKING=1' under a CUDA error: that run did not
    set it, and cuda-launch-blocking must not fire (it did)."""
    log = tmp_path / "train.log"
    log.write_text("\n".join(
        [f"[2024-05-01 10:00:0{i},000] [INFO] [logging.py:96:log_dist] [Rank 0] step={i}, skipped=0, lr=[0.0001], "
         "mom=[(0.9, 0.95)]" for i in range(1, 6)]
        + ["[rank1]: RuntimeError: CUDA error: an illegal memory access was encountered",
           "[rank1]: For debugging consider passing CUDA_LAUNCH_BLOCKING=1",
           "[rank1]: Compile with `TORCH_USE_CUDA_DSA` to enable device-side assertions.",
           "huggingface/tokenizers: To disable this warning, you can either: Explicitly set the environment variable "
           "TOKENIZERS_PARALLELISM=(true | false)"]) + "\n")
    d = run_rules(parse([str(log)]))
    assert not any(f.id == "cuda-launch-blocking" for f in d.findings)
    assert parse([str(log)]).frames["env"].height == 0
    assert d.ending is not None and d.ending.how == "crashed" and d.ending.rank == 1
    assert "illegal memory access" in d.ending.summary
    set_here = tmp_path / "set.log"
    set_here.write_text(log.read_text() + "export CUDA_LAUNCH_BLOCKING=1\n")
    assert parse([str(set_here)]).frames["env"]["key"].to_list() == ["CUDA_LAUNCH_BLOCKING"]


def test_the_lowest_last_enqueued_sequence_names_the_rank_that_never_reached_the_collective() -> None:
    """ProcessGroupNCCL's `last enqueued NCCL work` per rank (the lines written in torch 2.4+'s format): seven ranks
    enqueued all-reduce 93 and wait in it; rank 5's last is 92."""
    d = _end("synthetic/nccl_hang")
    e = d.ending
    assert e.how == "hung" and e.rank == 5 and "rank 5 never reached it" in e.summary
    assert e.silence_s == pytest.approx(601, abs=2)  # glog stamps behind torch's `[rankN]:` prefix, on the log's year
    tail = next(p for p in d.goodput.parts if p.name == "tail")
    assert tail.pieces[0].name == "hang before the timeout" and tail.pieces[0].seconds == pytest.approx(e.silence_s)
    assert d.findings[0].id == "nccl-timeout-hang" and "lost to the hang before the timeout" in d.verdict


def test_minus_one_everywhere_is_a_frozen_process_not_a_network_hang() -> None:
    d = _end("synthetic/frozen_process")
    assert d.ending.how == "frozen" and "filesystem" in d.ending.summary
    assert d.findings[0].id == "frozen-process" and not any(f.id == "nccl-timeout-hang" for f in d.findings)


def _fr_dump(last_entered: int, last_completed: int) -> dict[str, object]:
    """A Flight Recorder dump in PyTorch's documented layout (torch/distributed/flight_recorder: the keys the
    analyser reads): a rank's last collectives with their sequence ids and states."""
    entries = [{"record_id": s, "pg_id": 0, "process_group": ("0", "default_pg"), "collective_seq_id": s,
                "p2p_seq_id": 0, "op_id": s, "profiling_name": "nccl:all_reduce", "time_created_ns": 10**18 + s,
                "input_sizes": [[1024]], "input_dtypes": ["Float"], "output_sizes": [[1024]],
                "output_dtypes": ["Float"], "state": "completed" if s <= last_completed else "started",
                "time_discovered_started_ns": None, "time_discovered_completed_ns": None,
                "retired": s <= last_completed, "timeout_ms": 600000, "is_p2p": False,
                "frames": [{"name": "all_reduce", "filename": "distributed_c10d.py", "line": 2501}]}
               for s in range(last_entered - 3, last_entered + 1)]
    return {"version": "2.4", "pg_config": {"0": {"name": "0", "desc": "default_pg", "ranks": "[0, 1, 2, 3]"}},
            "pg_status": {}, "entries": entries, "nccl_comm_state": {}}


def test_flight_recorder_dumps_name_the_rank_behind(tmp_path: Path) -> None:
    import pickle

    for r in range(4):
        (tmp_path / f"nccl_trace_rank_{r}").write_bytes(pickle.dumps(_fr_dump(92 if r == 2 else 93, 92), protocol=4))
    model = parse([str(tmp_path)])
    rows = model.frames["events"].filter(model.frames["events"]["origin"] == "flight_recorder")
    assert sorted(zip(rows["rank"].to_list(), rows["value_from"].to_list())) == [(0, 93.0), (1, 93.0), (2, 92.0),
                                                                                  (3, 93.0)]
    e = run_rules(model).ending
    assert e is not None and e.how == "hung" and e.rank == 2 and "ranks 0, 1, 3 timed out" in e.summary


def test_a_pickle_that_names_code_is_refused_and_never_run(tmp_path: Path) -> None:
    import pickle

    from conftest import run_cli

    marker = tmp_path / "ran"

    class Payload:
        def __reduce__(self):  # type: ignore[no-untyped-def]
            return (Path.touch, (marker,))

    bad = tmp_path / "nccl_trace_rank_0"
    bad.write_bytes(pickle.dumps({"entries": [Payload()]}, protocol=4))
    done = run_cli("report", str(bad))
    assert done.returncode == 2 and not marker.exists()
    assert "Flight Recorder dump not read: the pickle names pathlib" in done.stderr
    assert "Traceback" not in done.stderr and len(done.stderr.strip().splitlines()) == 1
    cut = tmp_path / "nccl_trace_rank_1"
    cut.write_bytes(pickle.dumps(_fr_dump(10, 9), protocol=4)[:200])
    done = run_cli("report", str(cut))
    assert done.returncode == 2 and "not a readable pickle" in done.stderr and "Traceback" not in done.stderr


@pytest.mark.parametrize("message,tried,cap", [
    ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 MiB. GPU 0 has a total capacity of "
     "79.15 GiB of which 3.06 MiB is free.", 20 / 1024, 79.15),
    ("RuntimeError: CUDA out of memory. Tried to allocate 2.00 GiB (GPU 0; 39.59 GiB total capacity; 36.12 GiB "
     "already allocated; 1.08 GiB free; 37.05 GiB reserved in total by PyTorch)", 2.0, 39.59)])
def test_out_of_memory_reads_the_allocation_and_the_capacity(tmp_path: Path, message: str, tried: float,
                                                             cap: float) -> None:
    """Both shapes of CUDA's message (torch >= 2.1 and before); its PYTORCH_CUDA_ALLOC_CONF hint sets nothing."""
    log = tmp_path / "train.log"
    log.write_text("\n".join(f"[2024-05-01 10:00:0{i},000] [INFO] [logging.py:96:log_dist] [Rank 0] step={i}, "
                             "skipped=0, lr=[0.0001], mom=[(0.9, 0.95)]" for i in range(1, 5))
                   + f"\n[rank2]: {message} If reserved but unallocated memory is large try setting "
                     "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation.\n")
    model = parse([str(log)])
    assert model.frames["env"].height == 0
    d = run_rules(model)
    assert d.ending is not None and d.ending.how == "crashed" and d.ending.error == "oom" and d.ending.rank == 2
    assert d.ending.oom_gib == pytest.approx((tried, cap))
    f = d.findings[0]
    assert f.id == "out-of-memory" and f"{cap:.3g} GiB GPU" in f.summary
    assert not any(x.id == "rank-crash" for x in d.findings)


def test_the_recorded_out_of_memory_names_rank_and_host() -> None:
    d = _end("synthetic/out_of_memory")
    assert d.ending.rank == 3 and d.ending.host == "gpu-node-1" and d.ending.oom_gib == pytest.approx((3.5, 79.15))
    assert d.findings[0].id == "out-of-memory" and d.verdict.startswith("The run crashed after step 10")


def _relaunched_log() -> str:
    """Two launches of one DeepSpeed job: the first saves at step 40 and runs out of GPU memory on rank 1 after
    step 50; the relaunch resumes from step 40 and Slurm cancels it at its time limit after step 90."""
    from datetime import datetime, timedelta

    t = datetime(2026, 11, 30, 8, 0, 0)

    def ds(msg: str) -> str:
        return f"[{t:%Y-%m-%d %H:%M:%S},{t.microsecond // 1000:03d}] [INFO] [logging.py:96:log_dist] {msg}"

    lines = [ds("[Rank 0] DeepSpeed info: version=0.14.4, git-hash=unknown, git-branch=unknown")]
    for n in range(1, 51):
        t += timedelta(seconds=2)
        lines.append(ds(f"[Rank 0] step={n}, skipped=0, lr=[2.9e-05], mom=[(0.9, 0.95)]"))
        if n == 40:
            lines.append(ds("[Rank 0] Saving model checkpoint: /ckpt/global_step40/mp_rank_00_model_states.pt"))
    lines.append("[rank1]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 1 has a "
                 "total capacity of 79.15 GiB of which 1.20 GiB is free.")
    t += timedelta(seconds=120)
    lines.append(ds("[Rank 0] DeepSpeed info: version=0.14.4, git-hash=unknown, git-branch=unknown"))
    for n in range(41, 91):
        t += timedelta(seconds=2)
        lines.append(ds(f"[Rank 0] step={n}, skipped=0, lr=[2.9e-05], mom=[(0.9, 0.95)]"))
        if n == 80:
            lines.append(ds("[Rank 0] Saving model checkpoint: /ckpt/global_step80/mp_rank_00_model_states.pt"))
    lines.append("slurmstepd: error: *** JOB 77 ON node-3 CANCELLED AT 2026-11-30T08:05:00 DUE TO TIME LIMIT ***")
    return "\n".join(lines) + "\n"


def test_each_launch_ends_and_the_restart_goes_to_what_ended_the_one_before(tmp_path: Path) -> None:
    log = tmp_path / "job.log"
    log.write_text(_relaunched_log())
    d = run_rules(parse([str(log)]))
    first, last = d.launch_endings
    assert first.how == "crashed" and first.error == "oom" and first.rank == 1 and first.after_step == 50
    # the first launch lost the 10 steps since its save at step 40; the relaunch did them again
    assert first.unsaved_s == pytest.approx(20.0) and "checkpoint save" in (first.unsaved_from or "")
    assert last.how == "killed" and "time limit" in last.summary and last.after_step == 90
    assert last.unsaved_s == pytest.approx(20.0) and d.ending == last
    restarts = d.goodput.part("restarts")
    assert restarts is not None and len(restarts.pieces) == 1
    (restart,) = restarts.pieces
    assert restart.basis.startswith("after launch 1 crashed (CUDA out of memory") and "10 step(s) done twice" \
        in restart.basis
    killed = next(f for f in d.findings if f.id == "killed")
    assert killed.cost is not None and killed.cost.lost_s == pytest.approx(20.0)
    doc = json.loads(diagnose.analyse(log).render("json"))
    assert doc["ending"]["how"] == "killed" and doc["ending"]["unsaved_s"] == pytest.approx(20.0)
    assert len(doc["ending"]["earlier"]) == 1 and doc["ending"]["earlier"][0].startswith("launch 1: crashed")
    assert "before it, launch 1: crashed" in diagnose.analyse(log).render("md")


@pytest.mark.parametrize("line,how,signal", [
    ("TERM_RUNLIMIT: job killed after reaching LSF run time limit.", "killed", None),
    ("slurmstepd: error: Detected 1 oom-kill event(s) in StepId=4242.0. Some of your processes may have been killed "
     "by the cgroup out-of-memory handler.", "killed", "SIGKILL"),
])
def test_scheduler_end_lines(tmp_path: Path, line: str, how: str, signal: str | None) -> None:
    log = tmp_path / "run.log"
    log.write_text(_healthy_steps() + line + "\n")
    e = run_rules(parse([str(log)])).ending
    assert e is not None and e.how == how and e.signal == signal and e.after_step == 20
    assert ("LSF run time limit" in e.summary) if "LSF" in line else ("out-of-memory killer" in e.summary)


def _healthy_steps() -> str:
    return "".join(f"[2026-11-30 08:00:{n:02d},000] [INFO] [logging.py:96:log_dist] [Rank 0] step={n}, skipped=0, "
                   "lr=[2.9e-05], mom=[(0.9, 0.95)]\n" for n in range(1, 21))


def test_a_lost_peer_with_no_error_before_it_is_a_node_that_went_away(tmp_path: Path) -> None:
    log = tmp_path / "run.log"
    log.write_text(_healthy_steps() + "[rank0]: torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/"
                   "distributed/c10d/ProcessGroupNCCL.cpp:1970, remote process exited or there was a network error, "
                   "NCCL version 2.20.5\n")
    e = run_rules(parse([str(log)])).ending
    # rank 0 reports the loss; the rank that went away is its peer, which the line does not number
    assert e is not None and e.how == "crashed" and e.error == "peer_lost" and e.rank is None
    assert "rank 0 lost its peer" in e.summary and "went away" in e.summary


def test_an_nccl_system_error_is_a_crash_and_the_fix_names_nccl_debug(tmp_path: Path) -> None:
    log = tmp_path / "run.log"
    log.write_text(_healthy_steps() + "[rank2]: torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/"
                   "distributed/c10d/ProcessGroupNCCL.cpp:1970, unhandled system error (run with NCCL_DEBUG=INFO for "
                   "details), NCCL version 2.20.5\n")
    d = run_rules(parse([str(log)]))
    assert d.ending is not None and d.ending.how == "crashed" and d.ending.error == "nccl_error" and d.ending.rank == 2
    crash = next(f for f in d.findings if f.id == "rank-crash")
    assert "NCCL_DEBUG=INFO" in crash.fix.summary
    # `(run with NCCL_DEBUG=INFO for details)` is the message's advice: it sets nothing
    assert "NCCL_DEBUG" not in parse([str(log)]).facts.env


def test_with_one_file_per_rank_the_rank_whose_output_ends_first_is_named(tmp_path: Path) -> None:
    for rank, last in ((0, 30), (1, 30), (2, 27), (3, 30)):
        (tmp_path / f"rank{rank}.log").write_text("".join(
            f"[2026-11-30 08:00:{n:02d},000] [INFO] [logging.py:96:log_dist] [Rank {rank}] step={n}, skipped=0, "
            "lr=[2.9e-05], mom=[(0.9, 0.95)]\n" for n in range(1, last + 1)))
    e = run_rules(parse([str(tmp_path)])).ending
    assert e is not None and e.how == "unknown" and e.rank == 2
    assert "rank 2's output ends first (step 27; the others reach step 30)" in e.summary


IGNORED = """Exception ignored in atexit callback: <function matmul_ext_update_autotune_table at 0x7fbb72c837e0>
Traceback (most recent call last):
  File "/opt/DeepSpeed/deepspeed/ops/transformer/inference/triton/matmul_ext.py", line 105, in put
    os.replace(self.file_path + ".tmp", self.file_path)
FileNotFoundError: [Errno 2] No such file or directory: '/root/.triton/autotune/Fp16Matmul_4d_kernel.pickle.tmp'
"""
CTRL_C = """Traceback (most recent call last):
  File "pretrain_gpt.py", line 276, in <module>
    KeyboardInterruptsampled_indices = torch.multinomial(prob_dist, reserved_length)
KeyboardInterrupt
  File "/opt/DeepSpeed/deepspeed/launcher/runner.py", line 511, in sigkill_handler
    result_kill = subprocess.Popen(kill_cmd, env=env)
NameError: free variable 'kill_cmd' referenced before assignment in enclosing scope
[2022-10-31 11:03:54,132] [INFO] [launch.py:295:sigkill_handler] Main process received SIGTERM, exiting
"""
AFTER_SUMMARY = """{'train_runtime': 40.5, 'train_samples_per_second': 243.9, 'train_steps_per_second': 0.476, \
'train_loss': 0.269, 'epoch': 0.39}
Error executing job with overrides: []
omegaconf.errors.ConfigAttributeError: Key 'I' is not in struct
"""


@pytest.mark.parametrize("tail,how,words", [
    (IGNORED, "unknown", "the log stops after step 20"),  # Python's unraisable hook: nothing stopped
    (CTRL_C, "killed", "received SIGINT"),  # the launcher's own NameError after Ctrl-C is fallout
    (AFTER_SUMMARY, "finished", "the script failed after it (omegaconf.errors.ConfigAttributeError"),
])
def test_errors_that_did_not_stop_training(tmp_path: Path, tail: str, how: str, words: str) -> None:
    log = tmp_path / "run.log"
    log.write_text(_healthy_steps() + tail)
    d = run_rules(parse([str(log)]))
    assert d.ending is not None and d.ending.how == how and words in d.ending.summary
    assert not any(f.id == "rank-crash" for f in d.findings)


def test_an_error_the_run_went_on_past_did_not_end_it(tmp_path: Path) -> None:
    log = tmp_path / "run.log"
    log.write_text("CondaError: Run 'conda init' before 'conda deactivate'\n" + _healthy_steps())
    e = run_rules(parse([str(log)])).ending
    assert e is not None and e.how == "unknown" and e.after_step == 20
    # the same error as the last thing printed is the crash
    log.write_text(_healthy_steps() + "RuntimeError: CUDA error: an illegal memory access was encountered\n")
    e = run_rules(parse([str(log)])).ending
    assert e is not None and e.how == "crashed" and "illegal memory access" in e.summary


@pytest.mark.parametrize(("run", "steps"), [("hf_trainer_ddp_bf16", 40), ("gpu/hf_bf16", 300)])
def test_a_finished_hf_run_ends_after_its_training_bars_last_step_not_the_closing_evaluations(run: str,
                                                                                           steps: int) -> None:
    # The Trainer's closing evaluate() draws its own bar (4/4 on the CPU sample, 8/8 on the H200) after the last step
    e = _end(run).ending
    assert e.how == "finished" and e.after_step == steps


def test_the_step_kind_most_lines_print_is_chosen_the_same_way_on_a_tie() -> None:
    """Two step kinds print as many lines: the first by name is read, every time (a group_by's order is drawn afresh
    at each call)."""
    rows = [(0, s, "ds_step") for s in range(1, 6)] + [(1, s, "ds_step") for s in range(1, 4)]
    rows += [(r, s, "tqdm") for r in (0, 1) for s in range(1, 5)]
    steps = pl.DataFrame(rows, schema={"rank": pl.Int32, "global_step": pl.Int64, "origin": pl.String}, orient="row")
    for _ in range(8):
        assert _first_to_stop(steps) == (1, 3, 5)
