"""Older and rarer line shapes, quoted verbatim from real logs in public threads (../shared/reference/log_formats.md
names each thread) or, where marked, from the library's source at that version."""
from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest

from diagnose.parsers import parse


def _model(tmp_path: Path, *lines: str):
    p = tmp_path / "x.log"
    p.write_text("\n".join(lines) + "\n")
    return parse([str(p)])


def test_throughput_generations(tmp_path: Path) -> None:
    m = _model(
        tmp_path,
        # 0.3/0.4 [thread: deepspeedai/DeepSpeed#1107]
        "[2021-05-29 19:53:43,103] [INFO] [timer.py:157:stop] 0/100, SamplesPerSec=1166.1363801104596",
        # 0.6 [thread: deepspeedai/DeepSpeed#1825]
        "[2022-03-01 10:00:00,000] [INFO] [timer.py:189:stop] 0/40, SamplesPerSec=83.48609168106144, "
        "MemAllocated=0.26GB, MaxMemAllocated=9.02GB",
        # 0.7 (from source)
        "[2022-08-01 10:00:00,000] [INFO] [timer.py:208:stop] 0/50, RunningAvgSamplesPerSec=10.5, "
        "CurrSamplesPerSec=11.25, MemAllocated=1.5GB, MaxMemAllocated=2.5GB",
    )
    s = m.frames["steps"]
    assert s["origin"].to_list() == ["ds_throughput_v05", "ds_throughput_v05", "ds_throughput_v07"]
    assert s["micro_step"].to_list() == [100, 40, 50]
    assert s["samples_per_sec"].to_list() == pytest.approx([1166.1363801104596, 83.48609168106144, 11.25])
    assert s["max_mem_alloc_gb"].to_list()[1:] == [9.02, 2.5]


def test_old_timer_names_and_rank_field(tmp_path: Path) -> None:
    m = _model(
        tmp_path,
        "[2023-05-01 10:00:00,000] [INFO] [logging.py:96:log_dist] [Rank 0] rank=0 time (ms) | forward_microstep: "
        "10.5 | backward_microstep: 20.25 | backward_inner_microstep: 15.0 | backward_allreduce_microstep: 5.25 | "
        "step_microstep: 3.0",
        "[2024-03-08 16:52:55,712] [INFO] [logging.py:96:log_dist] [Rank 0] time (ms) | optimizer_step: 147.5",
    )
    t = m.frames["timers"]
    assert (t["fwd"][0], t["bwd"][0], t["bwd_inner"][0], t["bwd_allreduce"][0], t["step"][0]) == (10.5, 20.25, 15.0, 5.25, 3.0)
    assert t["microstep"].to_list() == [True, False] and t["optimizer_step"][1] == 147.5 and t["step"][1] is None


def test_fp16_overflow_lines(tmp_path: Path) -> None:
    m = _model(
        tmp_path,
        "[2023-01-01 00:00:01,000] [INFO] [loss_scaler.py:183:update_scale] [deepspeed] OVERFLOW! Rank 0 Skipping "
        "step. Attempted loss scale: 65536, reducing to 32768",
        "[2023-01-01 00:00:02,000] [INFO] [stage_1_and_2.py:1800:step] [deepscale] OVERFLOW! Rank 0 Skipping step. "
        "Attempted loss scale: 4294967296, reducing to 2147483648",
        "[2023-01-01 00:00:03,000] [INFO] [logging.py:96:log_dist] [Rank 0] Overflow detected. Skipping step. "
        "Attempted loss scale: 1024.0, reducing to 512.0",
        "Grad overflow on iteration 1234",
        "[2023-01-01 00:00:04,000] [INFO] [fused_optimizer.py:362:_update_scale] Reducing dynamic loss scale from "
        "512.0 to 256.0",
    )
    ev = m.frames["events"]
    over = ev.filter(pl.col("kind") == "overflow")
    assert over["value_to"].to_list()[:3] == [32768.0, 2147483648.0, 512.0]
    assert over["step"].to_list()[3] == 1234
    assert ev.filter(pl.col("kind") == "loss_scale")["value_to"].to_list() == [256.0]


def test_allocator_flush_warning(tmp_path: Path) -> None:
    # [src: deepspeed/runtime/zero/stage3.py]; the count is the delta since the last warning.
    m = _model(
        tmp_path,
        "[2024-01-01 00:00:00,000] [WARNING] [stage3.py:1850:step] 3 pytorch allocator cache flushes since last "
        "step. this happens when there is high memory pressure and is detrimental to performance. if this is "
        "happening frequently consider adjusting settings to reduce memory consumption. If you are unable to make "
        "the cache flushes go away consider adding get_accelerator().empty_cache() calls in your training loop to "
        "ensure that all ranks flush their caches at the same time",
    )
    ev = m.frames["events"]
    assert ev["kind"].to_list() == ["allocator_flush"] and ev["count"].to_list() == [3]


def test_nccl_lines(tmp_path: Path) -> None:
    m = _model(
        tmp_path,
        # [thread: deepspeedai/DeepSpeed#4715], [thread: NVIDIA/nccl-tests#373], [thread: huggingface/accelerate#2183]
        "10.0.0.1: gpu-node-1:12345:12400 [0] NCCL INFO NCCL version 2.18.5+cuda12.2",
        "10.0.0.1: gpu-node-1:12345:12400 [0] NCCL INFO NET/IB : No device found.",
        "10.0.0.1: gpu-node-1:12345:12400 [0] NCCL INFO NCCL_SOCKET_IFNAME set by environment to eth0",
        "10.0.0.1: gpu-node-1:12345:12400 [0] NCCL INFO NET/Socket : Using [0]eth0:10.0.0.1<0>",
        "10.0.0.1: gpu-node-1:12345:12400 [0] NCCL INFO Using network Socket",
        "10.0.0.2: gpu-node-2:2345:2400 [3] NCCL INFO Channel 00/0 : 3[3] -> 4[0] [send] via NET/Socket/0",
        "10.0.0.2: gpu-node-2:2345:2400 [3] NCCL INFO Channel 00/0 : 2[2] -> 3[3] via P2P/IPC",
        "10.0.0.2: gpu-node-2:2345:2400 [3] NCCL INFO comm 0x7f00 rank 7 nRanks 8 nNodes 2 localRanks 4 localRank 3 MNNVL 0",
        "10.0.0.2: gpu-node-2:2345:2400 [3] misc/socket.cc:50 NCCL WARN socket timeout",
    )
    n = m.facts.nccl
    assert n.version == "2.18.5+cuda12.2" and n.network == "Socket" and n.ib_device_found is False
    assert n.env == {"NCCL_SOCKET_IFNAME": "eth0"} and n.transports == {"NET/Socket": 1, "P2P/IPC": 1}
    assert n.hosts == ("gpu-node-1", "gpu-node-2") and (n.n_ranks, n.n_nodes, n.local_ranks) == (8, 2, 4)
    assert m.facts.world_size == 8 and m.facts.nodes == 2 and m.facts.gpus_per_node == 4
    assert m.facts.env["NCCL_SOCKET_IFNAME"].value == "eth0"
    nodes = m.frames["nccl"]["node"].to_list()
    assert nodes[:5] == ["10.0.0.1"] * 5
    assert m.frames["events"].filter(pl.col("kind") == "nccl_warn")["detail"].to_list() == ["socket timeout"]


def test_accelerate_state_and_defaults(tmp_path: Path) -> None:
    m = _model(
        tmp_path,
        # [thread: hiyouga/LlamaFactory#163], [thread: xuduo35/MakeLongVideo#3]
        "The following values were not passed to `accelerate launch` and had defaults used instead:",
        "        `--num_processes` was set to a value of `8`",
        "        `--num_machines` was set to a value of `1`",
        "        `--mixed_precision` was set to a value of `'no'`",
        "03/01/2024 10:00:00 - INFO - __main__ - Distributed environment: MULTI_GPU  Backend: nccl",
        "Num processes: 8",
        "Mixed precision type: no",
    )
    f = m.facts
    assert f.world_size == 8 and f.precision == "fp32"
    assert f.accelerate["log.distributed_type"] == "MULTI_GPU" and f.accelerate["log.num_machines"] == "1"


def test_hf_explicit_format_and_4x_float_dicts(tmp_path: Path) -> None:
    m = _model(
        tmp_path,
        "[INFO|trainer.py:2128] 2025-08-14 11:54:29,561 >> ***** Running training *****",
        "[INFO|trainer.py:2129] 2025-08-14 11:54:29,561 >>   Num examples = 1,000",
        "[INFO|trainer.py:2130] 2025-08-14 11:54:29,561 >>   Num Epochs = 3",
        "[INFO|trainer.py:2133] 2025-08-14 11:54:29,561 >>   Instantaneous batch size per device = 2",
        "[INFO|trainer.py:2136] 2025-08-14 11:54:29,561 >>   Gradient Accumulation steps = 8",
        "[INFO|trainer.py:2137] 2025-08-14 11:54:29,561 >>   Total optimization steps = 186",
        "[INFO|trainer.py:2138] 2025-08-14 11:54:29,562 >>   Number of trainable parameters = 2,779,683,840",
        "{'loss': 0.0002, 'learning_rate': 0.00021013958031099205, 'epoch': 50.0}",  # [thread: QwenLM/Qwen#669]
    )
    f = m.facts
    assert f.model_params == 2_779_683_840 and f.grad_accum_steps == 8 and f.micro_batch_per_gpu == 2
    s = m.frames["steps"]
    assert s["loss"].to_list() == [0.0002] and s["lr"][0] == pytest.approx(0.00021013958031099205)


def _slowing(prints: int) -> list[tuple[int, float, float]]:
    """(step, step time, seconds since the start) at each of `prints` prints, ten steps apart, of a run whose steps
    slow from 0.85 s to 1.8 times that."""
    out, wall = [], 0.0
    for i in range(1, prints + 1):
        t = 0.85 * (1 + 0.8 * i / prints)
        wall += 10 * t
        out.append((10 * i, t, wall))
    return out


def _stamp(seconds: float) -> str:
    """A `%Y-%m-%d %H:%M:%S` stamp this many seconds after 10:00 on 2026-01-05."""
    s = int(seconds)
    return f"2026-01-05 {10 + s // 3600:02d}:{s % 3600 // 60:02d}:{s % 60:02d}"


def _steady(tmp_path: Path, lines: list[str]) -> tuple[object, list[tuple[str, str]]]:
    from diagnose.engine import diagnose
    m = _model(tmp_path, *lines)
    stream = next(s for s in m.streams if s.step_clock)
    return diagnose(m).metrics.steps, [(r.name, r.role) for r in stream.roles]


def _reads_as(tmp_path: Path, lines: list[str], p50: float, *roles: tuple[str, str], rel: float = 1e-6) -> None:
    """The lines' step clock has this median step and these (name, role) pairs among its roles."""
    steps, got = _steady(tmp_path, lines)
    assert steps is not None and steps.p50_s == pytest.approx(p50, rel=rel), steps
    assert not [r for r in roles if r not in got], got


def test_maxtext_completed_step_lines(tmp_path: Path) -> None:
    # MaxText's train.py (from source): `completed step: {step}, seconds: {step_time:.3f}, TFLOP/s/device: ...,
    # Tokens/s/device: ..., total_weights: ..., loss: ...` every step; `seconds` is that step's time.
    lines = [f"completed step: {s}, seconds: {0.85 + 0.01 * (s % 3):.3f}, TFLOP/s/device: 150.123, "
             f"Tokens/s/device: 4819.1, total_weights: 524288, loss: {9.8 - s / 100:.3f}" for s in range(1, 31)]
    steps, roles = _steady(tmp_path, lines)
    assert steps is not None and steps.p50_s == pytest.approx(0.86)
    assert ("seconds", "step_time") in roles and ("TFLOP/s/device", "tflops") in roles
    assert ("Tokens/s/device", "tokens_per_sec") in roles


@pytest.mark.parametrize("ups", ["ups=1.18, ", ""])
def test_fairseq_train_inner_lines(tmp_path: Path, ups: str) -> None:
    # fairseq's train_inner progress (from source: progress_bar's simple format over log_interval=10 updates):
    # `ups` is updates per second; `train_wall` is the interval's wall time (reset at each print), `wall` the run's.
    # Without `ups`, the total that grows times the steps: `wall`, not `train_wall`.
    lines, wall = [], 0.0
    for i in range(1, 31):
        wall += 8.5
        lines.append(f"2026-01-05 10:{int(wall) // 60 % 60:02d}:{int(wall) % 60:02d} | INFO | train_inner | epoch 001:"
                     f"    {i * 10} / 6000 loss=9.876, ppl=941.2, wps=12345.6, {ups}wpb=4096, bsz=32, "
                     f"num_updates={i * 10}, lr=0.0005, gnorm=1.234, train_wall=8, gb_free=10.2, wall={wall:.0f}")
    steps, roles = _steady(tmp_path, lines)
    assert steps is not None and steps.p50_s == pytest.approx(1 / 1.18 if ups else 0.85, abs=0.06)
    assert ("num_updates", "counter") in roles and (not ups or ("ups", "iter_rate") in roles)


def test_composer_console_records(tmp_path: Path) -> None:
    # Composer's ConsoleLogger (from source): `[batch=N/M]:` then one `\t Train <name>: <value>` line per metric;
    # SpeedMonitor's throughput/batches_per_sec is the step clock's rate.
    lines = []
    for s in range(1, 31):
        lines += [f"[batch={s}/4800]:", f"\t Train time/batch: {s - 1}",
                  f"\t Train loss/train/total: {6.8 - s / 100:.4f}",
                  f"\t Train throughput/batches_per_sec: {1 / (0.85 + 0.01 * (s % 3)):.4f}",
                  f"\t Train throughput/samples_per_sec: {256 / 0.85:.4f}",
                  f"\t Train time/train: {s * 0.85 / 3600:.4f}"]
    steps, roles = _steady(tmp_path, lines)
    assert steps is not None and steps.p50_s == pytest.approx(0.86, abs=0.005)
    assert ("Train throughput/batches_per_sec", "iter_rate") in roles
    assert ("Train throughput/samples_per_sec", "samples_per_sec") in roles


def test_olmo_console_records(tmp_path: Path) -> None:
    # OLMo's trainer (from source, log_metrics_to_console): a stamped `[step=N/M]` line, then `    name=value` lines.
    lines = []
    for s in range(1, 31):
        stamp = f"2026-01-05 10:{s // 6:02d}:{s % 6 * 10:02d}.000"
        lines += [f"{stamp}\tnode0:0\tolmo.train:962\tINFO\t[step={s * 10}/739328]",
                  f"    train/CrossEntropyLoss={9.8 - s / 100:.4f}",
                  f"    throughput/device/tokens_per_second={61680.5:.1f}",
                  f"    throughput/device/batches_per_second={1 / 0.95:.4f}", "    System/Peak GPU Memory (MB)=45678"]
    steps, roles = _steady(tmp_path, lines)
    # the record's rate (0.95 s a batch), not the stamps (10 s over 10 steps)
    assert steps is not None and steps.p50_s == pytest.approx(0.95, abs=0.001)
    assert ("throughput/device/batches_per_second", "iter_rate") in roles


def test_a_timing_line_printed_more_often_than_the_steps_is_no_record_field(tmp_path: Path) -> None:
    # Four rate lines a step (one per micro-batch) are not a field of the step's record: the stamps time it.
    lines = []
    for s in range(1, 31):
        lines.append(f"2026-01-05 10:{s // 6:02d}:{s % 6 * 10:02d} [step={s}/1000]")
        lines += ["    micro/batches_per_second=2.0"] * 4
    steps, roles = _steady(tmp_path, lines)
    assert steps is not None and steps.p50_s == pytest.approx(10.0)
    assert not any(role == "iter_rate" for _, role in roles)


def test_timm_train_lines_padded_to_width(tmp_path: Path) -> None:
    # timm's train.py (from source): `Train: {epoch} [{idx:>4d}/{n} ({pct:>3.0f}%)]  Loss: ... Time: {t:.3f}s,
    # {rate:>7.2f}/s  ({avg:.3f}s, {rate_avg:>7.2f}/s)  LR: ...  Data: ...`: the widths pad 10 and 1000 differently,
    # one layout all the same.
    # 100 updates an epoch, logged every 33 and at the last: `[ 33/100 ( 33%)]` then `[ 99/100 (100%)]`.
    lines = [f"Train: {e} [{i:>3d}/100 ({100 * i / 99:>3.0f}%)]  Loss: 2.30 (2.35)  Time: {0.85 + 0.01 * (i % 3):.3f}s,"
             f"  301.18/s  (0.852s,  300.47/s)  LR: 1.000e-03  Data: 0.012 (0.015)"
             for e in range(10) for i in (0, 33, 66, 99)]
    steps, roles = _steady(tmp_path, lines)
    assert steps is not None and steps.n >= len(lines) - 2
    assert ("Time", "step_time") in roles and ("Data", "data_time") in roles


@pytest.mark.parametrize("stamped", [True, False])
def test_espnet_phase_times_are_parts_of_the_step(tmp_path: Path, stamped: bool) -> None:
    # ESPnet2's Reporter.log_message (from source): `{e}epoch:train:{a}-{b}batch: k=v, ...`, the interval's means;
    # forward_time, backward_time and optim_step_time are parts of train_time, the whole iteration. With stamps the
    # one that agrees with them is the step's; without, the largest (a step's phases are parts of it).
    lines = []
    for i in range(1, 31):
        t = 0.85 + 0.01 * (i % 3)
        stamp = f"[gpu01] 2026-01-05 10:{int(i * 8.5) // 60:02d}:{int(i * 8.5) % 60:02d},123 (trainer:762) INFO: "
        lines.append((stamp if stamped else "") + f"1epoch:train:{i * 10 - 9}-{i * 10}batch: iter_time=1.234e-04, "
                     f"forward_time={0.3 * t:.3f}, loss_ctc=123.456, loss={60 - i:.3f}, backward_time={0.45 * t:.3f}, "
                     f"optim_step_time={0.05 * t:.3f}, optim0_lr0=2.000e-05, train_time={t:.3f}")
    _reads_as(tmp_path, lines, 0.86, ("train_time", "step_time"), ("forward_time", "phase_time"),
              ("backward_time", "phase_time"))


def test_an_unnamed_duration_times_the_step(tmp_path: Path) -> None:
    # llm.c's train_gpt2 (from source): `step %4d/%d | loss %f (%+.2fz)| norm %6.4f (%+.2fz)| lr %.2e | %.2f ms |
    # %.1f%% bf16 MFU | %.0f tok/s`: the step's time has a unit and no name.
    lines = [f"step {s:4d}/74 | loss {7.5 - s / 100:7.6f} (+0.12z)| norm 1.2345 (-0.30z)| lr 1.00e-04 | "
             f"{850 + 10 * (s % 3):.2f} ms | 41.2% bf16 MFU | 616838 tok/s" for s in range(1, 31)]
    _reads_as(tmp_path, lines, 0.86, ("#8", "step_time"), ("bfN MFU", "mfu"))


def test_a_name_that_is_a_unit(tmp_path: Path) -> None:
    # pytorch/examples word_language_model (from source): `| epoch {:3d} | {:5d}/{:5d} batches | lr {:02.2f} |
    # ms/batch {:5.2f} | loss {:5.2f} | ppl {:8.2f}`: `ms/batch` names the time of a batch in ms.
    lines = [f"| epoch   1 | {b:5d}/ 2983 batches | lr 20.00 | ms/batch {45.21 + b % 3:5.2f} | loss  7.63 | "
             f"ppl  2063.39" for b in range(200, 6200, 200)]
    _reads_as(tmp_path, lines, 0.04621, ("ms/batch", "step_time"))


def test_paddle_reader_cost_is_the_data_wait(tmp_path: Path) -> None:
    # PaddleNLP's and PaddleOCR's training logs (from source): `avg_reader_cost: {:.5f} sec, avg_batch_cost:
    # {:.5f} sec`: the reader's cost is the wait for data within the batch's.
    lines = [f"[2026-01-05 10:00:{s % 60:02d},123] [    INFO] - global step {s * 10}, epoch: 0, batch: {s * 10 - 1}, "
             f"loss: 9.861, avg_reader_cost: 0.51000 sec, avg_batch_cost: 0.85000 sec, speed: 1.18 step/s, "
             f"ips_total: 9638 tokens/s, learning rate: 5.00000e-05" for s in range(1, 31)]
    m = _model(tmp_path, *lines)
    roles = [(r.name, r.role) for s in m.streams if s.step_clock for r in s.roles]
    assert ("avg_reader_cost", "data_time") in roles and ("avg_batch_cost", "step_time") in roles
    assert m.frames["steps"]["data_time_s"].median() == pytest.approx(0.51)


def test_darknet_lines_open_with_their_counter(tmp_path: Path) -> None:
    # darknet's detector.c (from source): `%d: %f, %f avg loss, %f rate, %lf seconds, %d images, %f hours left`
    # every iteration. The opening `120: ` is the iteration, not srun's task label; each number is named by the
    # words after it.
    lines = [f" {i}: {2.5 - i / 1000:f}, {2.6 - i / 1000:f} avg loss, 0.001000 rate, {0.85 + 0.01 * (i % 3):f} "
             f"seconds, {i * 64} images, {(500 - i) * 0.85 / 3600:f} hours left" for i in range(1, 31)]
    m = _model(tmp_path, *lines)
    steps, roles = _steady(tmp_path, lines)
    assert steps is not None and steps.n >= 28 and steps.p50_s == pytest.approx(0.86)
    assert ("avg loss", "loss") in roles
    s = m.frames["steps"]
    assert s["global_step"].to_list() == list(range(1, 31)) and s["rank"].null_count() == s.height
    assert s["loss"][0] == pytest.approx(2.599)  # the avg loss, named by the words after it


def test_srun_task_labels_stay_ranks(tmp_path: Path) -> None:
    # srun -l labels repeat (every rank prints the same lines): they are ranks, however the lines count.
    lines = [f"{r}: iter {i} | loss 2.3 | time {0.85 + 0.01 * r:.3f}" for i in range(1, 11) for r in (0, 1)]
    m = _model(tmp_path, *lines)
    s = m.frames["steps"]
    assert sorted(s["rank"].unique().to_list()) == [0, 1]
    assert s.filter(pl.col("rank") == 1)["global_step"].to_list() == list(range(1, 11))


def test_a_time_that_climbs_is_no_total(tmp_path: Path) -> None:
    # A step's unnamed time that rises 1.0x -> 1.8x on every line is a slowdown, not an elapsed time.
    lines = [f"step {s:4d}/300 | loss 2.5 | lr 1.00e-04 | {850 * (1 + 0.8 * s / 30):.2f} ms | 600000 tok/s"
             for s in range(1, 31)]
    _reads_as(tmp_path, lines, 0.85 * (1 + 0.8 * 15.5 / 30), ("#5", "step_time"), rel=0.05)


def test_tensorflow_estimator_rate_record_times_the_step(tmp_path: Path) -> None:
    # TF1 Estimator's hooks (from source): StepCounterHook's `global_step/sec: v` then LoggingTensorHook's
    # `loss = v, step = N (t sec)`, every 100 steps; `t` is the interval's time, the rate a step's.
    lines = []
    for i in range(1, 31):
        t = 0.85 + 0.01 * (i % 3)
        lines += [f"INFO:tensorflow:global_step/sec: {1 / t:.5g}",
                  f"INFO:tensorflow:loss = {2.5 - i / 100}, step = {i * 100} ({100 * t:.3f} sec)"]
    _reads_as(tmp_path, lines, 0.86, ("global_step/sec", "iter_rate"), ("#3", "interval_time"), rel=0.01)


def test_mindspore_time_monitor_is_the_loss_lines_record(tmp_path: Path) -> None:
    # MindSpore's LossMonitor and TimeMonitor (from source): `epoch: 1 step: 10, loss is 2.48` then `epoch time:
    # 8500.0 ms, per step time: 850.0 ms`. The time line has no counter: it is the loss line's record, and an
    # epoch's time is not a step's.
    lines = []
    for i in range(1, 31):
        t = 850 + 10 * (i % 3)
        lines += [f"epoch: 1 step: {i * 10}, loss is {2.5 - i / 100:.4f}",
                  f"epoch time: {10 * t:.3f} ms, per step time: {t:.3f} ms"]
    m = _model(tmp_path, *lines)
    _reads_as(tmp_path, lines, 0.86, ("step", "counter"), ("per step time", "step_time"))
    assert m.frames["steps"]["global_step"].to_list()[:3] == [10, 20, 30]


@pytest.mark.parametrize("order", [(0, 1, 2), (2, 1, 0)])
def test_deepspeed_chat_end_to_end_latency_is_the_steps_record(tmp_path: Path, order: tuple[int, ...]) -> None:
    # DeepSpeed-Chat's step 3 (from source: dschat/utils/perf.py print_throughput_step3 after main.py's loss line):
    # three lines of several timings after each step, each with its `Latency`. The end-to-end one is the step's;
    # generation and training are its parts, whichever is printed first.
    lines = []
    for i in range(1, 31):
        t = 0.85 + 0.01 * (i % 3)
        timing = [f"End-to-End => Latency: {t:.2f}s, TFLOPs: 128.40, Samples/sec: {256 / t:.2f}, Time/seq 0.03s, "
                  "Batch Size: 256, Total Seq. Length: 512",
                  f"Generation => Latency: {0.6 * t:.2f}s, Per-token Latency {0.6 * t / 0.256:.2f} ms, TFLOPs: 12.10, "
                  "BW: 410.23 GB/sec, Answer Seq. Length: 256",
                  f"Training   => Latency: {0.4 * t:.2f}s, TFLOPs: 95.30"]
        lines += [f"epoch: 0|step: {i}|ppo_ep: 1|act_loss: {2.5 - i / 100:.4f}|cri_loss: 0.1234|unsuper_loss: 0.0",
                  *(timing[j] for j in order)]
    _reads_as(tmp_path, lines, 0.86, ("step", "counter"), ("Latency", "step_time"), ("Samples/sec", "samples_per_sec"))


def test_a_line_of_timings_printed_at_some_steps_only_times_none(tmp_path: Path) -> None:
    # An evaluation's line of several timings every tenth step is no step's record: its time is not a step's.
    lines = []
    for i in range(1, 31):
        lines.append(f"epoch: 0|step: {i}|act_loss: {2.5 - i / 100:.4f}|cri_loss: 0.1234")
        if i % 10 == 0:
            lines.append(f"Evaluation => Latency: {15 + i / 10:.2f}s, Samples/sec: {40 + i / 10:.2f}, Batch Size: 64")
    steps = _model(tmp_path, *lines).frames["steps"]
    assert steps.height == 30 and steps["step_time_s"].null_count() == 30


def test_stable_baselines3_table_records(tmp_path: Path) -> None:
    # Stable-Baselines3's HumanOutputFormat (from source): a boxed `| key | value |` table per rollout, its
    # `time_elapsed` whole seconds since the start: the steps' time is its growth over the iterations.
    lines = []
    for i in range(1, 31):
        lines += ["-----------------------------", "| time/              |        |",
                  f"|    fps             | {2048 / 8.5:.0f}    |", f"|    iterations      | {i}      |",
                  f"|    time_elapsed    | {int(8.5 * i)}     |", f"|    total_timesteps | {2048 * i}  |",
                  "-----------------------------"]
    _reads_as(tmp_path, lines, 8.5, ("iterations", "counter"), ("time_elapsed", "cum_time"), rel=0.07)


def test_open_clip_train_lines(tmp_path: Path) -> None:
    # open_clip's training/train.py (from source): logging's datefmt '%Y-%m-%d,%H:%M:%S', then `Train Epoch: {e}
    # [{n:>{w}}/{total} ({pct:.0f}%)] Data (t): {:.3f} Batch (t): {:.3f}, {:#g}/s, {:#g}/s/gpu LR: {:5f} ...`.
    lines = [f"2024-01-05,10:{int(8.5 * i) // 60:02d}:{int(8.5 * i) % 60:02d} | INFO | Train Epoch: 0 [{i * 2560:>8d}/"
             f"1281167 ({i * 2560 / 12811.67:.0f}%)] Data (t): 0.017 Batch (t): {0.85 + 0.01 * (i % 3):.3f}, 301.176/s, "
             f"37.647/s/gpu LR: 0.000300 Logit Scale: 14.286 Contrastive_loss: 2.4833 (2.5833) Loss: 2.4833 (2.5833)"
             for i in range(1, 31)]
    m = _model(tmp_path, *lines)
    _reads_as(tmp_path, lines, 0.86, ("Data (t)", "data_time"), ("Batch (t)", "step_time"))
    ts = m.frames["steps"]["ts"]
    assert ts.null_count() == 0 and (ts[1] - ts[0]).total_seconds() == 9  # the stamp with a comma is read


def test_a_loop_that_counts_epochs_and_prints_their_time(tmp_path: Path) -> None:
    # nnU-Net v2's nnUNetTrainer (from source): per epoch, stamped lines `Epoch N`, `Current learning rate: ...`,
    # `train_loss ...`, `val_loss ...`, ..., `Epoch time: 85.3 s`: its steps are epochs, each timed by its record.
    lines = []
    for e in range(1, 31):
        stamp = f"2024-01-05 {10 + e * 86 // 3600:02d}:{e * 86 // 60 % 60:02d}:{e * 86 % 60:02d}.123456: "
        lines += [stamp + f"Epoch {e}", stamp + "Current learning rate: 0.00982", stamp + f"train_loss {-0.1 * e:.4f}",
                  stamp + "val_loss -0.4", stamp + f"Epoch time: {85.3 + e % 3:.2f} s"]
    _reads_as(tmp_path, lines, 86.3, ("Epoch", "counter"), ("Epoch time", "step_time"))


def test_chinese_names_and_units(tmp_path: Path) -> None:
    # Training loops that print in Chinese (`第 N 步, 损失: ..., 耗时: ... 秒`, `学习率`): the names and units are
    # the vocabulary's as the English ones are.
    lines = [f"2024-01-05 10:{int(8.5 * i) // 60:02d}:{int(8.5 * i) % 60:02d} 第 {i * 10} 步, 损失: {2.5 - i / 100:.4f}, "
             f"学习率: 3.0e-04, 耗时: {850 + 10 * (i % 3)} 毫秒" for i in range(1, 31)]
    _reads_as(tmp_path, lines, 0.86, ("损失", "loss"), ("学习率", "lr"), ("耗时", "step_time"))


def test_ray_result_times(tmp_path: Path) -> None:
    # Ray Train / Tune results (from source: ray.tune.result): `time_this_iter_s` is one training iteration's time,
    # `time_total_s` the run's so far; `_s` is their unit, not `iter/s`.
    lines = [f"Training iteration {i}: time_this_iter_s={8.5 + 0.1 * (i % 3):.3f}, time_total_s={8.6 * i:.1f}, "
             f"loss={2.5 - i / 100:.4f}" for i in range(1, 31)]
    _reads_as(tmp_path, lines, 8.6, ("time_this_iter_s", "step_time"), ("time_total_s", "cum_time"))


def test_three_lines_pasted(tmp_path: Path) -> None:
    # A user pastes three lines. llm.c's unnamed time rises on both (816, 850, 884 ms) and is still a step's: it is
    # no total (not through the origin with the counter, not fourfold). ESPnet's train_time rises too, and the
    # stamps still pick it over a phase whose seconds read as minutes would match them.
    llmc = [f"step {s:4d}/600 | loss 2.48 (+0.12z)| norm 0.9300 (-0.30z)| lr 3.00e-04 | {782 + 3.4 * s:.2f} ms | "
            f"41.2% bf16 MFU | 616809 tok/s" for s in (10, 20, 30)]
    _reads_as(tmp_path, llmc, 0.85, ("#8", "step_time"))
    espnet = [f"[gpu01] 2026-01-05 10:00:{8 + 8.5 * i:02.0f},123 (trainer:762) INFO: 1epoch:train:{10 * i - 9}-{10 * i}"
              f"batch: iter_time={0.017:.3e}, forward_time=0.255, loss=60.000, backward_time=0.383, "
              f"optim_step_time=0.043, optim0_lr0=2.000e-05, train_time={0.782 + 0.034 * i:.3f}" for i in (1, 2, 3)]
    _reads_as(tmp_path, espnet, 0.85, ("train_time", "step_time"), ("iter_time", "phase_time"), rel=0.05)


def test_pax_step_lines_without_a_counter(tmp_path: Path) -> None:
    # Pax/Praxis (from source, programs.py): `[PAX STATUS]: train_step() took {:.6f} seconds.` a step, glog-stamped,
    # with no step number: one step a line, kept from pruning however many lines a chunk holds.
    lines = [f"I0105 10:{int(0.85 * i) // 60:02d}:{0.85 * i % 60:09.6f} 140000000 programs.py:436] [PAX STATUS]: "
             f"train_step() took {0.85 + 0.01 * (i % 3):.6f} seconds." for i in range(1, 41)]
    _reads_as(tmp_path, lines, 0.86, ("train_step() took", "step_time"))


def test_mlperf_time_ms_is_an_instant(tmp_path: Path) -> None:
    # MLPerf's mllog (from source, mlperf_logging.mllog): `:::MLLOG {"namespace": "", "time_ms": <epoch ms>, ...,
    # "metadata": {..., "step": N}}`. `time_ms` is when the line was logged, not a duration: it stamps the line.
    lines = [f':::MLLOG {{"namespace": "", "time_ms": {1767607200000 + int(8600 * i)}, "event_type": "POINT_IN_TIME", '
             f'"key": "tracked_stats", "value": {{"throughput": 297.67}}, "metadata": {{"file": "train.py", '
             f'"lineno": 100, "step": {10 * i}}}}}' for i in range(1, 31)]
    # the step inside `metadata` is named with it (a nested object's keys are)
    _reads_as(tmp_path, lines, 0.86, ("time_ms", "stamp"), ("metadata/step", "counter"))


def _human(num: float) -> str:
    """nanotron's human_format (from source, src/nanotron/logging.py): three significant digits, then K, M, G, T."""
    if abs(num) < 1:
        return f"{num:.3g}"
    num, magnitude = float(f"{num:.3g}"), 0
    while abs(num) >= 1000 and magnitude < 4:
        magnitude, num = magnitude + 1, num / 1000.0
    return f"{num:f}".rstrip("0").rstrip(".") + ["", "K", "M", "G", "T"][magnitude]


def test_magnitude_letters_are_one_layout_in_base_units(tmp_path: Path) -> None:
    # nanotron's iteration line (from source, trainer.py): every value through human_format, so a step of 850 ms
    # prints `850` and one of 1,010 ms `1.01K`: one layout, the letter a factor of the number, not a unit or a
    # word of the template.
    ms = [820 + 12 * i for i in range(30)]
    lines = [f"12/05/2025 10:{i // 60:02d}:{i % 60:02d} [INFO|DP=0|PP=0|TP=0|ip-26-0-160-225]: "
             f"iteration: {i + 1} / 30 | consumed_tokens: {_human((i + 1) * 524288)} "
             f"| elapsed_time_per_iteration_ms: {_human(m)} "
             f"| tokens_per_sec: {_human(524288 / m * 1000)} | tokens_per_sec_per_gpu: {_human(65536 / m * 1000)} "
             f"| global_batch_size: 256 | lm_loss: {_human(9.8 - i / 10)} | lr: 0.0003 | model_tflops_per_gpu: 128 "
             f"| hardware_tflops_per_gpu: 128 | grad_norm: 0.93" for i, m in enumerate(ms)]
    assert "_ms: 988 |" in lines[14] and "_ms: 1.01K |" in lines[16]
    m = _model(tmp_path, *lines)
    stream = next(s for s in m.streams if s.step_clock)
    roles = [(r.name, r.role) for r in stream.roles]
    assert stream.lines == 30 and ("elapsed_time_per_iteration_ms", "step_time") in roles
    steps = m.frames["steps"].sort("line")
    assert steps["step_time_s"].to_list() == pytest.approx([float(_human(v).replace("K", "e3")) / 1000 for v in ms])
    assert steps["tokens_per_sec"][0] == pytest.approx(639_000.0)  # `639K`


def test_a_memory_letter_stays_its_unit(tmp_path: Path) -> None:
    # A letter after a memory value is its unit (GB), not a factor; after a rate it is a factor.
    lines = [f"iter {i} | time: {850 + i} ms | tokens/s: 61.7K | mem: 30.1G" for i in range(1, 21)]
    s = _model(tmp_path, *lines).frames["steps"]
    assert s["max_mem_alloc_gb"].to_list() == [30.1] * 20 and s["tokens_per_sec"][0] == pytest.approx(61_700.0)


def test_a_phase_named_time_is_not_the_step(tmp_path: Path) -> None:
    # InternEvo's record_current_batch_training_metrics line (from source): `k=v` pairs, one step a line;
    # `fwd_bwd_time` is the forward and backward alone, without the optimizer step, so the stamps time the step.
    lines = []
    for s in range(1, 41):
        at = 0.85 * s
        lines.append(f"2026-01-05 10:{int(at) // 60:02d}:{int(at) % 60:02d},{int(at * 1000) % 1000:03d}\tINFO "
                     f"training_internlm.py:580 in record_current_batch_training_metrics -- tflops=128.4 step={s} "
                     f"loss={9.8 - s / 10:.4f} tgs (tokens/gpu/second)=77101.18 lr=0.0003 loss_scale=65536.0 "
                     f"grad_norm={{'0_default': 0.93}} micro_num=4 num_consumed_tokens={s * 524288} fwd_bwd_time=0.68")
    _reads_as(tmp_path, lines, 0.85, ("fwd_bwd_time", "phase_time"), rel=0.03)


def _flair(i: int, per_step: float, stamped_every: float) -> str:
    at = stamped_every * i
    return (f"2026-01-05 10:{int(at) // 60:02d}:{int(at) % 60:02d},500 epoch 1 - iter {10 * i}/300 - loss "
            f"{2.5 - i / 100:.8f} - time (sec): {per_step:.2f} - samples/sec: 301.18 - lr: 0.000300 "
            "- momentum: 0.000000")


def test_a_short_paste_of_a_running_total_is_told_by_its_stamps(tmp_path: Path) -> None:
    # Flair's ModelTrainer (from source): `time (sec)` is the seconds since the epoch began, printed every tenth of
    # an epoch. Three lines pasted are too few to see it start from zero; the stamps show it grows as they do.
    lines = [_flair(i, 8.5 * i, 8.5) for i in range(1, 4)]
    m = _model(tmp_path, "Training is slow, here is the log:", "", "```", *lines, "```")
    stream = next(s for s in m.streams if s.step_clock)
    assert ("time (sec)", "cum_time") in [(r.name, r.role) for r in stream.roles]
    from diagnose.engine import diagnose
    assert "progressive-slowdown" not in [f.id for f in diagnose(m).findings]


def test_a_short_paste_of_step_times_stays_step_times(tmp_path: Path) -> None:
    # The same layout printing a step's own time (0.85 s, every 10 steps): it does not grow with the stamps.
    lines = [_flair(i, 0.85 + 0.01 * i, 8.5) for i in range(1, 4)]
    m = _model(tmp_path, *lines)
    stream = next(s for s in m.streams if s.step_clock)
    assert ("time (sec)", "step_time") in [(r.name, r.role) for r in stream.roles]


def test_scalars_printed_in_their_repr_keep_their_names(tmp_path: Path) -> None:
    # A metrics dict printed as it stands: NumPy 2 prints its scalars as `np.float64(2.48)` (NEP 51), torch a 0-d
    # tensor as `tensor(2.4800, device='cuda:0', grad_fn=<...>)`; the name is the key before the wrapper.
    numpy = [f"{{'step': {s}, 'loss': np.float64({2.5 - s / 1000}), 'lr': 0.0003, "
             f"'step_time': np.float64({0.85 + 0.01 * (s % 3):.3f}), 'grad_norm': np.float32(0.93)}}"
             for s in range(10, 310, 10)]
    _reads_as(tmp_path, numpy, 0.86, ("loss", "loss"), ("step_time", "step_time"), ("grad_norm", "grad_norm"))
    torch = [f"step {s}: {{'loss': tensor({2.5 - s / 1000:.4f}, device='cuda:0', grad_fn=<NllLossBackward0>), "
             f"'lr': 0.0003, 'time': {0.85 + 0.01 * (s % 3):.4f}}}" for s in range(10, 310, 10)]
    _reads_as(tmp_path, torch, 0.86, ("loss", "loss"), ("time", "step_time"))
    assert _model(tmp_path, *torch).frames["steps"].sort("line")["loss"][0] == pytest.approx(2.49)


@pytest.mark.parametrize("layout", [
    # custom loops' wordings of a data wait and a step time that the vocabulary did not list
    "step {s} | loss 2.48 | step_time {t:.3f}s | fetch_time {d:.3f}s",
    "iter {s}/600: loss=2.483 iter_time={tm:.1f}ms io_time={dm:.1f}ms",
    "[step {s}] loss: 2.48, total: {t:.3f}s, dataloader wait: {d:.3f}s, compute: {c:.3f}s",
    "it {s} t_iter {t:.3f} t_data {d:.3f} loss 2.483",
    "epoch 0 batch {s}/600 loss 2.4833 batch_ms {tm:.1f} load_ms {dm:.1f}",
    # LeRobot's train loop (from memory): the update's time and the data wait, abbreviated
    "step:{s} smpl:{n} ep:0 epch:0.01 loss:2.483 grdn:0.930 lr:3.0e-04 updt_s:{t:.3f} data_s:{d:.3f}",
])
def test_data_waits_and_step_times_under_other_names(tmp_path: Path, layout: str) -> None:
    # `batch_ms`: a count's name with a unit of time is the time per count; `total: 0.85s`: a counting name printed
    # with a unit of time is a time; `io_time`, `fetch_time`, `dataloader wait`, `load_ms`: waits named for what
    # they wait on. A step of 0.85 s that waits 0.51 s for data is input-bound.
    _input_bound(tmp_path, layout)


def test_a_per_print_time_named_elapsed_beside_a_running_total(tmp_path: Path) -> None:
    # A trainer that prints each interval's time under a name of a total (`Elapsed Time`) beside the run's total
    # (`Wall Time`): in a slowdown both grow, and the step clock is the total that runs through the origin, or the
    # per-print time the stamps confirm; the interval's 8.5 s is ten steps' worth. `[%m/%d/%y %H:%M:%S]` stamps.
    from diagnose.engine import diagnose
    lines = [f"[01/05/26 10:{int(wall) // 60:02d}:{int(wall) % 60:02d}] fairseq2 - Train Metrics (step {step}) - Loss: "
             f"2.483 | Elapsed Time: {10 * t:.1f}s | Wall Time: {wall:.0f}s" for step, t, wall in _slowing(40)]
    m = _model(tmp_path, *lines)
    d = diagnose(m)
    assert d.metrics.steps is not None and d.metrics.steps.p50_s == pytest.approx(1.2, rel=0.1)
    assert "progressive-slowdown" in [f.id for f in d.findings[:3]]
    assert "input-bound" not in [f.id for f in d.findings]
    steady = [f"[01/05/26 10:{int(8.5 * i) // 60:02d}:{int(8.5 * i) % 60:02d}] fairseq2 - Train Metrics (step "
              f"{10 * i}) - Loss: 2.483 | Elapsed Time: {8.5 + 0.1 * (i % 3):.1f}s" for i in range(1, 41)]
    _reads_as(tmp_path, steady, 0.86, ("Elapsed Time", "step_time"), rel=0.02)


def test_two_digit_year_stamps() -> None:
    # `%m/%d/%y` (Python logging's datefmt in many repos) and log4j's `yy/MM/dd` (Spark's executors): read whole,
    # not as a year-less `05/26 10:00:08` inside them, so a log that runs past midnight keeps its order.
    import datetime as dt

    from diagnose.parsers.stamps import find_stamp
    got = find_stamp(pl.Series(["[01/05/26 23:59:58] fairseq2 - step", "[01/06/26 00:00:06] fairseq2 - step",
                                "26/01/05 10:00:08 INFO TorchDistributor: step 10", "2026/01/05 10:00:08 x"]))
    assert got.to_list() == [dt.datetime(2026, 1, 5, 23, 59, 58), dt.datetime(2026, 1, 6, 0, 0, 6),
                             dt.datetime(2026, 1, 5, 10, 0, 8), dt.datetime(2026, 1, 5, 10, 0, 8)]


def test_keras_epoch_lines_time_the_step_by_their_unit(tmp_path: Path) -> None:
    # Keras' `fit(verbose=2)` (from source, ProgbarLogger): `Epoch N/M`, then one line an epoch, `steps/steps - Ts -
    # Tms/step - metric: v`: no counter steps up, but `ms/step` is a step's time and the print closes `10/10`.
    lines = []
    for e in range(1, 31):
        lines += [f"Epoch {e}/30", f"10/10 - 9s - {850 + 10 * (e % 3)}ms/step - accuracy: 0.9000 - loss: 0.2500"]
    m = _model(tmp_path, *lines)
    _reads_as(tmp_path, lines, 0.86, ("#4", "step_time"))
    assert m.frames["steps"].sort("line")["global_step"].to_list()[:3] == [10, 20, 30]


@pytest.mark.parametrize("bar", ["|", "\u2502"])
def test_bordered_tables_of_a_status_reporter(tmp_path: Path, bar: str) -> None:
    # Ray Tune's CLIReporter (tabulate, `psql` layout) and its newer box-drawn table: a header between borders,
    # then a row a report whose words (trial name, status, host:port) stand beside the numbers.
    lines = []
    for i in range(1, 31):
        lines += ["== Status ==", "+-----------------+----------+------+------------------+-------+",
                  f"{bar} Trial name      {bar} status   {bar} loc             {bar}   iter {bar}"
                  f"   total time (s) {bar}   loss {bar}",
                  f"{bar} train_fn_00000  {bar} RUNNING  {bar} 10.0.0.1:12345  {bar} {10 * i:6d} {bar} "
                  f"{8.5 * i + 0.1 * (i % 3):16.1f} {bar} {2.5 - i / 100:6.3f} {bar}"]
    _reads_as(tmp_path, lines, 0.85, ("iter", "counter"), ("total time (s)", "cum_time"), rel=0.02)


def test_a_counters_name_printed_with_a_unit_of_time_is_its_time(tmp_path: Path) -> None:
    # `batch: 0.850s` beside `data: 0.510s`: a step's time under a count's name, and an input-bound step.
    from diagnose.engine import diagnose
    lines = [f"[{10 * i}/600] loss: 2.4833, data: {0.51 + 0.006 * (i % 3):.3f}s, batch: {0.85 + 0.01 * (i % 3):.3f}s"
             for i in range(1, 41)]
    d = diagnose(_model(tmp_path, *lines))
    assert d.metrics.steps is not None and d.metrics.steps.p50_s == pytest.approx(0.86)
    assert "input-bound" in [f.id for f in d.findings[:3]]


def test_a_duration_named_by_the_words_after_it(tmp_path: Path) -> None:
    # `(0.816 s/step, 0.490 s data)`, `(490 ms waiting for data), loss`: a duration with no name before it takes
    # the words that a bracket (or, last on the line, the line's end) closes after its unit; `input` (an input
    # pipeline's time, in µs) is a data wait.
    from diagnose.engine import diagnose
    for layout in ("step {s}/600 loss 2.4833 ({t:.3f} s/step, {d:.3f} s data)",
                   "Step {s}: {tm:.0f} ms ({dm:.0f} ms waiting for data), loss 2.483",
                   "iter {s} | loss 2.4833 | fwd+bwd {tu:.0f} \u00b5s | input {du:.0f} \u00b5s"):
        lines = [layout.format(s=10 * i, t=0.85 + 0.01 * (i % 3), d=0.51 + 0.006 * (i % 3),
                               tu=1e6 * (0.85 + 0.01 * (i % 3)), du=1e6 * (0.51 + 0.006 * (i % 3)),
                               tm=1e3 * (0.85 + 0.01 * (i % 3)), dm=1e3 * (0.51 + 0.006 * (i % 3)))
                 for i in range(1, 41)]
        d = diagnose(_model(tmp_path, *lines))
        assert d.metrics.steps is not None and d.metrics.steps.p50_s == pytest.approx(0.86), layout
        assert "input-bound" in [f.id for f in d.findings[:3]], layout


def test_an_rl_steps_timing_record_names_its_phases(tmp_path: Path) -> None:
    # NeMo-RL's step report (from memory of its printing code): a banner with the step, then bulleted results and a
    # `Timing:` block, one phase a line. The phases are the step's record: generation 60% of the step is the cause.
    from diagnose.engine import diagnose
    lines = []
    for i in range(1, 31):
        t = 0.85 + 0.01 * (i % 3)
        lines += [f"========================= Step {i}/300 =========================", "\u25b6 Preparing batch...",
                  "\U0001f4ca Training Results:", f"  \u2022 Loss: {2.5 - i / 100:.4f}", "\u23f1\ufe0f  Timing:",
                  f"  \u2022 Total step time: {t:.2f}s", f"  \u2022 generation: {0.6 * t:.2f}s",
                  f"  \u2022 policy_training: {0.3 * t:.2f}s"]
    d = diagnose(_model(tmp_path, *lines))
    assert d.metrics.steps is not None and d.metrics.steps.p50_s == pytest.approx(0.86)
    assert d.findings and d.findings[0].id == "rlhf-generation-bound"


def test_a_generic_word_names_a_wait_only_beside_a_unit_of_time(tmp_path: Path) -> None:
    # `input 490 µs` is an input pipeline's wait, but `input 512 output 128` counts tokens and a CPU's `load 3.2` is
    # a level: words such as `input`, `load`, `io`, `generation` take a timing role only with a unit of time.
    from diagnose.engine import diagnose
    lines = [f"step {10 * i} input 512 output 128 load 3.2 generation {i} time {0.85 + 0.01 * (i % 3):.3f}s"
             for i in range(1, 41)]
    m = _model(tmp_path, *lines)
    d = diagnose(m)
    assert d.metrics.steps is not None and d.metrics.steps.p50_s == pytest.approx(0.86)
    assert not {"input-bound", "rlhf-generation-bound"} & {f.id for f in d.findings}
    roles = dict((r.name, r.role) for s in m.streams if s.step_clock for r in s.roles)
    assert roles.get("input") != "data_time" and roles.get("load") != "data_time"
    assert roles.get("generation") != "generate_time"


def test_a_record_field_printed_with_its_running_average(tmp_path: Path) -> None:
    # Coqui TTS's trainer (from memory of its console logger): a banner line with the step, then one field a line,
    # each value beside its running average in brackets. The loader's time is the record's data wait.
    from diagnose.engine import diagnose
    lines = []
    for i in range(1, 41):
        t = 0.85 + 0.01 * (i % 3)
        lines += [f"   --> TIME: 2026-01-05 10:{i // 6:02d}:{(i * 9) % 60:02d} -- STEP: {i}/405 -- GLOBAL_STEP: {i}",
                  f"     | > loss: {2.5 - i / 100:.5f}  ({2.6 - i / 100:.5f})",
                  f"     | > step_time: {t:.4f}  ({t:.4f})", f"     | > loader_time: {0.6 * t:.4f}  ({0.6 * t:.4f})"]
    m = _model(tmp_path, *lines)
    d = diagnose(m)
    assert d.metrics.steps is not None and d.metrics.steps.p50_s == pytest.approx(0.86)
    assert "input-bound" in [f.id for f in d.findings[:3]]
    roles = [(r.name, r.role) for s in m.streams if s.step_clock for r in s.roles]
    assert ("loader_time", "data_time") in roles


def test_a_duration_in_several_units_is_one_slot(tmp_path: Path) -> None:
    # MMF's logistics callback (from memory of its printing code) prints durations as `08s 500ms`, `01m 25s 234ms`,
    # `05h 29m 49s 123ms`: the same line whether the run is seconds or hours in, each one value in seconds. Go's
    # `time.Duration` prints `1h2m3.5s`. Keras's `255s 850ms/step` is an epoch's time and a step's, two values.
    def mmf(sec: float) -> str:
        ms = round(sec * 1000)
        h, ms = divmod(ms, 3_600_000)
        m, ms = divmod(ms, 60_000)
        s, ms = divmod(ms, 1000)
        return (f"{h:02d}h " if h else "") + (f"{m:02d}m " if h or m else "") + f"{s:02d}s {ms:03d}ms"
    lines = [f"2026-01-05T10:{int(8.5 * i) // 60:02d}:{int(8.5 * i) % 60:02d} | mmf.trainers.callbacks.logistics: "
             f"progress: {10 * i}/600, train/total_loss: {2.5 - i / 100:.4f}, epoch: 0, num_updates: {10 * i}, "
             f"ups: 1.18, time: {mmf(8.5)}, time_since_start: {mmf(8.5 * i)}, eta: {mmf(8.5 * (60 - i) * 70)}"
             for i in range(1, 41)]
    m = _model(tmp_path, *lines)
    stream = next(s for s in m.streams if s.step_clock)
    assert stream.lines == 40
    roles = dict((r.name, r.role) for r in stream.roles)
    assert roles["time_since_start"] == "cum_time" and roles["eta"] == "eta"
    steps = m.frames["steps"].filter(pl.col("origin") == "learned")
    assert steps.height == 40 and steps["step_time_s"].median() == pytest.approx(0.85)
    from diagnose.parsers.templates import _rare_masks, _values
    body = _rare_masks(pl.Series(["took 1h2m3.5s", "wait 2m30s ok", "300/300 [====] - 255s 850ms/step - loss: 2.1"]))
    values = pl.DataFrame({"b": body}).select(_values(pl.col("b"))).to_series().to_list()
    assert values == [[3723.5], [150.0], [300.0, 300.0, 255.0, 850.0, 2.1]]


def test_a_bare_running_total_of_seconds_beside_the_counter(tmp_path: Path) -> None:
    # nshepperd's GPT-2 `train.py` (and gpt-2-simple, from memory of its print): `[counter | seconds since start]
    # loss=.. avg=..`, the seconds unnamed and without a unit. They grow as a running total of the steps, so they time
    # them; a bare fraction of an epoch, a learning rate in warm-up and a count of samples grow too, but slower than
    # any step takes or in whole numbers, and time nothing.
    from diagnose.engine import diagnose
    elapsed, lines = 0.0, []
    for i in range(1, 41):
        elapsed += 10 * (0.85 + 0.01 * (i % 3))
        lines.append(f"[{10 * i} | {elapsed:2.2f}] loss={2.5 - i / 100:2.2f} avg={2.6 - i / 100:2.2f}")
    d = diagnose(_model(tmp_path, *lines))
    assert d.metrics.steps is not None and d.metrics.steps.p50_s == pytest.approx(0.86)
    # the same seconds as a line's prefix: a script's `time.perf_counter()`, or the kernel log's seconds since boot
    for prefix in ("[{e:.2f}] ", "[{e:12.6f}] gpu-node-1 python3[12345]: "):
        lines = [(prefix + "step {s}/600 loss 2.41 lr 3.00e-04").format(e=8.6 * i, s=10 * i) for i in range(1, 41)]
        d = diagnose(_model(tmp_path, *lines))
        assert d.metrics.steps is not None and d.metrics.steps.p50_s == pytest.approx(0.86), prefix
    for other in ("[{s} | {e:.4f}] loss=2.41", "[{s} | {lr:.8f}] loss=2.41", "[{s} | {n}] loss=2.41"):
        lines = [other.format(s=10 * i, e=10 * i / 3000, lr=3e-7 * 10 * i, n=256 * 10 * i) for i in range(1, 41)]
        d = diagnose(_model(tmp_path, *lines))
        assert d.metrics.steps is None or d.metrics.steps.p50_s is None, other


def test_a_counter_named_by_what_is_done_so_far(tmp_path: Path) -> None:
    # Dopamine's runner (from memory of its logging): `Steps executed: 1000 Episode length: 200 Return: 21.0` under
    # absl stamps. `Steps executed`, like `batches processed` or `iterations done`, counts the steps; stamps time them.
    from diagnose.engine import diagnose
    lines = [f"I0105 10:{int(8.5 * i) // 60:02d}:{int(8.5 * i) % 60:02d}.123456 140234 run_experiment.py:310] "
             f"Steps executed: {10 * i} Episode length: 200 Return: {20 + i / 10:.1f}" for i in range(1, 41)]
    m = _model(tmp_path, *lines)
    roles = dict((r.name, r.role) for s in m.streams if s.step_clock for r in s.roles)
    assert roles.get("Steps executed") == "counter"
    d = diagnose(m)
    assert d.metrics.steps is not None and d.metrics.steps.p50_s == pytest.approx(0.85, rel=0.1)


def test_a_step_counter_before_a_log_dict_numbers_its_steps(tmp_path: Path) -> None:
    # jaxline (from memory of its train loop): `global_step: 10, {'loss': ..., 'steps_per_sec': ...}` under absl
    # stamps. The HF kind reads a log dict as one step a line, its time the gap between stamps (here ten steps'
    # worth); the counter before the dict numbers the steps and its rate times them, so the learned stream stands.
    from diagnose.engine import diagnose
    lines = [f"I0105 10:{int(8.5 * i) // 60:02d}:{int(8.5 * i) % 60:02d}.123456 140234 utils.py:386] "
             f"global_step: {10 * i}, {{'loss': {2.5 - i / 100}, 'steps_per_sec': {1 / (0.85 + 0.01 * (i % 3))}, "
             f"'top_1_acc': 0.1234}}" for i in range(1, 41)]
    m = _model(tmp_path, *lines)
    s = m.frames["steps"]
    assert set(s["origin"].to_list()) == {"learned"} and s["global_step"].to_list()[:3] == [10, 20, 30]
    roles = dict((r.name, r.role) for st in m.streams if st.step_clock for r in st.roles)
    assert roles.get("global_step") == "counter" and roles.get("steps_per_sec") == "iter_rate"
    d = diagnose(m)
    assert d.metrics.steps is not None and d.metrics.steps.p50_s == pytest.approx(0.86, rel=0.02)
    # the HF Trainer's own dicts, alone on their lines, stay the HF kind's
    hf = [f"{{'loss': {2.5 - i / 100:.4f}, 'grad_norm': 0.93, 'learning_rate': 3e-05, 'epoch': {i / 40:.2f}}}"
          for i in range(1, 41)]
    assert set(_model(tmp_path, *hf).frames["steps"]["origin"].to_list()) == {"hf_log"}


@pytest.mark.parametrize(("lines", "role"), [
    # rl_games' a2c_common (from memory): frames per second end to end, by epoch
    ([f"fps step: {1200 + i % 7} fps step and policy inference: {1100 + i % 5} fps total: {1000 + i % 3} "
      f"epoch: {i}/600 frames: {i * 32768}" for i in range(1, 41)], ("fps total", "samples_per_sec")),
    # XGBoost's evaluation log (from memory): a round and its metrics, the default regression metric a loss
    ([f"[{i}]\ttrain-rmse:{2.5 - i / 100:.5f}\teval-rmse:{2.6 - i / 100:.5f}" for i in range(40)],
     ("train-rmse", "loss")),
])
def test_loops_that_print_no_time_are_read_as_steps(tmp_path: Path, lines: list[str], role: tuple[str, str]) -> None:
    m = _model(tmp_path, *lines)
    stream = next(s for s in m.streams if s.step_clock)
    assert role in [(r.name, r.role) for r in stream.roles] and stream.lines == 40
    assert m.frames["steps"].height == 40


def test_a_baselines_table_counts_its_updates(tmp_path: Path) -> None:
    # OpenAI Baselines' HumanOutputFormat (from memory of logger.py): a bordered key/value table per update, keys
    # sorted, floats as `%-8.3g`. `misc/nupdates` counts the updates and `misc/time_elapsed` is the run's elapsed
    # time; `total_timesteps` counts environment steps, not updates.
    lines, elapsed = [], 0.0
    for i in range(1, 41):
        elapsed += 10 * (0.85 + 0.01 * (i % 3))
        rows = {"eplenmean": 200, "fps": 300 + i % 3, "loss/policy_loss": -0.00123, "misc/nupdates": 10 * i,
                "misc/time_elapsed": elapsed, "misc/total_timesteps": 2560 * i}
        width = max(map(len, rows))
        rule = "-" * (width + 15)
        lines += [rule, *(f"| {k:<{width}} | {v:<8.3g} |" for k, v in rows.items()), rule]
    _reads_as(tmp_path, lines, 0.86, ("misc/nupdates", "counter"), ("misc/time_elapsed", "cum_time"), rel=0.1)


def test_a_data_load_time_in_a_dict_of_quoted_numbers(tmp_path: Path) -> None:
    # FunASR's trainer (from memory): its speed stats as a dict of strings, `{'data_load': '0.512', ...,
    # 'total_time': '0.853'}`, at the end of each progress line.
    lines = [f"[2026-01-05 10:00:{i:02d},001][root][INFO] - train, rank: 0, epoch: 0/2, step_in_epoch: {10 * i}, "
             f"total step: {10 * i}, (loss_avg_rank: 2.483), (lr: 1.000e-04), "
             f"{{'data_load': '{0.51 + 0.01 * (i % 3):.3f}', 'forward_and_backward_time': '0.300', "
             f"'optim_time': '0.010', 'total_time': '0.853'}}" for i in range(1, 41)]
    m = _model(tmp_path, *lines)
    roles = dict((r.name, r.role) for s in m.streams if s.step_clock for r in s.roles)
    assert roles.get("data_load") == "data_time"
    assert m.frames["steps"]["data_time_s"].median() == pytest.approx(0.52)


@pytest.mark.parametrize("spelled", ids=["ray", "words"], argvalues=[
    # Ray Train's report line (from memory of its console output): `1min 40s`, then `1hr 0min 5s`
    lambda s: (f"{s // 3600}hr {s % 3600 // 60}min {s % 60}s" if s >= 3600 else f"{s // 60}min {s % 60}s"),
    lambda s: (f"{s // 3600} hours {s % 3600 // 60} minutes" if s >= 3600 else f"{s // 60} min {s % 60} sec"),
])
def test_a_running_total_with_its_units_spelled(tmp_path: Path, spelled) -> None:
    # A total printed in spelled units stays one slot as it crosses a minute and an hour (the template would split
    # at each), and `running time` names a total: ten steps of about 10 s between prints.
    from diagnose.engine import diagnose
    elapsed, lines = 0, []
    for i in range(1, 41):
        elapsed += 100 + 10 * (i % 3 - 1)
        lines.append(f"Training finished iteration {10 * i}. Total running time: {spelled(elapsed)}")
    m = _model(tmp_path, *lines)
    clock = [s for s in m.streams if s.step_clock]
    assert len(clock) == 1 and clock[0].lines >= 36
    assert ("Total running time", "cum_time") in [(r.name, r.role) for r in clock[0].roles]
    d = diagnose(m)
    assert d.metrics.steps is not None and d.metrics.steps.p50_s == pytest.approx(10.0, rel=0.1)


def test_a_table_header_written_as_a_comment(tmp_path: Path) -> None:
    # NequIP's trainer (from memory): `# Epoch batch  loss  loss_f ...` once, then one row of numbers per logged batch;
    # the header is a comment and its first two names are one space apart where the rows' numbers are not.
    header = "# Epoch batch         loss       loss_f       loss_e        f_mae"
    rows = [f"{e:7d} {b:5d} {2.5 - (e * 30 + b) / 1000:12.3g} {0.123:12.3g} {0.456:12.3g} {0.0123:12.3g}"
            for e in range(2) for b in range(10, 310, 10)]
    # the epoch's summary, with a header of its own (a `#` column among its names), between the batch rows
    rows[30:30] = ["  Train      #    Epoch      wal       LR       loss_f       loss_e         loss        f_mae",
                   "! Train              1    255.123    0.005        0.123        0.456        2.483        0.123"]
    m = _model(tmp_path, header, *rows)
    clock = next(s for s in m.streams if s.step_clock)
    roles = dict((r.name, r.role) for r in clock.roles)
    assert roles.get("batch") == "counter" and roles.get("loss") == "loss" and clock.lines == 60
    assert m.frames["steps"]["global_step"].to_list()[29:32] == [300, 310, 320]


def test_a_time_named_for_the_print_interval_is_divided_by_its_steps(tmp_path: Path) -> None:
    # GluonCV's estimator LoggingHandler (from memory): `[Epoch 0][Batch 49][Samples 3200] time/interval: 4.162s
    # training accuracy: ...` every log_interval batches; the time is the interval's, not a batch's.
    lines = [f"[Epoch 0][Batch {50 * i - 1}][Samples {3200 * i}] time/interval: {50 * (0.85 + 0.01 * (i % 3)):.3f}s "
             f"training accuracy: 0.8906, softmaxcrossentropyloss: {2.5 - i / 100:.4f}" for i in range(1, 41)]
    _reads_as(tmp_path, lines, 0.86, ("time/interval", "interval_time"), ("Batch", "counter"), rel=0.01)


def test_a_datasets_map_bar_is_not_the_training_clock(tmp_path: Path) -> None:
    # The datasets library's `Map:` bars (from memory of its tqdm: `examples/s`) before the HF Trainer's own bar: a
    # learned stream read them as the step clock (6 lines, ten thousand "steps" at 0.5 ms) over the trainer's
    # `it/s` bar of 60 lines.
    from diagnose.engine import diagnose
    maps = [f"Map: {p:3d}%|{'#' * (p // 10):<10}| {p * 100}/10000 [00:0{p // 20}<00:0{(100 - p) // 20}, "
            f"{1900 + p:.2f} examples/s]" for p in (10, 30, 50, 70, 90, 100)]
    elapsed, bars = 0.0, []
    for i in range(1, 61):
        t = 0.85 + 0.01 * (i % 3)
        elapsed += 10 * t
        bars.append(f" {i * 10 // 6:3d}%|{'#' * (i // 6):<10}| {10 * i}/600 [{int(elapsed) // 60:02d}:"
                    f"{int(elapsed) % 60:02d}<00:00, {1 / t:.2f}it/s]")
    m = _model(tmp_path, *maps, *bars)
    assert not [s for s in m.streams if s.step_clock]
    d = diagnose(m)
    assert d.metrics.steps is not None and d.metrics.steps.p50_s == pytest.approx(0.86, rel=0.05)


@pytest.mark.parametrize(("wait", "cause"), [(0.6, True), (0.02, False), (6.0, False)])
def test_a_data_wait_beside_a_rate_is_weighed_against_the_stamps(tmp_path: Path, wait: float, cause: bool) -> None:
    # A loop that prints its data wait and a throughput but no step time (basecls, from memory: `data 0.490s, speed
    # 301.2 ex/s`): the step's time is the stamps', and the wait is weighed against it. A "wait" ten times the
    # step's wall time is not one step's (a sum over the interval), and says nothing.
    from datetime import datetime, timedelta

    from diagnose.engine import diagnose
    start, elapsed, lines = datetime(2026, 1, 5, 10), 0.0, []
    for i in range(1, 41):
        t = 0.85 + 0.01 * (i % 3)
        elapsed += 10 * t
        lines.append(f"[{start + timedelta(seconds=elapsed):%m/%d %H:%M:%S} INFO] Epoch 1 Step {10 * i}/400: lr 0.1, "
                     f"loss {2.5 - i / 100:.3f}, top1 0.10, data {wait * t:.3f}s, speed {256 / t:.1f} ex/s")
    d = diagnose(_model(tmp_path, *lines))
    assert d.metrics.steps is not None and d.metrics.steps.p50_s == pytest.approx(0.86, rel=0.05)
    assert ("input-bound" in [f.id for f in d.findings[:3]]) is cause
    if wait < 1:
        assert d.metrics.data_wait_share == pytest.approx(wait, rel=0.1)
    else:
        assert d.metrics.data_wait_share is None


@pytest.mark.parametrize("wait", [0.02, 0.6])
def test_abbreviated_phase_timers_and_a_per_print_runtime(tmp_path: Path, wait: float) -> None:
    # flashlight's Train.cpp meters (from memory): `bch(ms)` the batch, `smp(ms)` its sample loading, `fwd(ms)`,
    # `crit-fwd(ms)`, `bwd(ms)`, `optim(ms)` its parts, and `runtime` the print interval's wall time (HH:MM:SS),
    # which does not grow: no running total.
    from diagnose.engine import diagnose
    lines = []
    for i in range(1, 41):
        t = 0.85 + 0.01 * (i % 3)
        lines.append(f"epoch:        1 | nupdates: {10 * i:12d} | lr: 0.000100 | lrcriterion: 0.000000 | runtime: "
                     f"00:00:{round(10 * t):02d} | bch(ms): {1000 * t:.2f} | smp(ms): {1000 * wait * t:.2f} | fwd(ms): "
                     f"{300 * t:.2f} | crit-fwd(ms): 10.00 | bwd(ms): {450 * t:.2f} | optim(ms): 50.00 | loss: "
                     f"{2.5 - i / 100:10.5f} | train-TER: 50.00 | train-WER: 80.00 | avg-isz: 1200 | hrs: 10.00")
    m = _model(tmp_path, *lines)
    roles = {(r.name, r.role) for s in m.streams if s.step_clock for r in s.roles}
    assert {("bch(ms)", "step_time"), ("smp(ms)", "data_time"), ("fwd(ms)", "phase_time"),
            ("crit-fwd(ms)", "phase_time"), ("bwd(ms)", "phase_time")} <= roles, roles
    d = diagnose(m)
    assert d.metrics.steps is not None and d.metrics.steps.p50_s == pytest.approx(0.86, rel=0.01)
    assert ("input-bound" in [f.id for f in d.findings[:3]]) is (wait > 0.5)


@pytest.mark.parametrize("layout", [
    "Train loss {i} {loss:.6f} Grad Norm 0.930000 {t:.2f}s/it",  # NVIDIA's Tacotron 2 train.py (from memory)
    "loss {i} {loss:.4f} time {t:.3f}",  # `print("loss", it, loss.item(), "time", dt)`
])
def test_a_name_printed_before_the_counter_is_the_next_numbers(tmp_path: Path, layout: str) -> None:
    # Python's print of several values puts the name before the iteration and its value after it: the whole,
    # rising number is the counter, the fraction after it the loss.
    lines = [layout.format(i=i, loss=2.5 - i / 1000, t=0.85 + 0.01 * (i % 3)) for i in range(1, 61)]
    lines.insert(30, "Validation loss 30:  2.123456  ")
    steps, roles = _steady(tmp_path, lines)
    assert steps is not None and steps.n >= 50 and steps.p50_s == pytest.approx(0.86, rel=0.01)
    assert ("#1", "counter") in roles and [n for n, r in roles if r == "loss" and n.endswith("loss")], roles


def test_a_records_average_step_time_on_a_line_of_its_own(tmp_path: Path) -> None:
    # OpenSeq2Seq's print hooks (from memory): the step and loss on one line, the interval's mean step time and
    # throughput each on a line of its own after it.
    lines = []
    for i in range(1, 41):
        t = 0.85 + 0.01 * (i % 3)
        lines += [f"*** Global step {10 * i}:     ***     Train loss: {2.5 - i / 100:.4f}",
                  f"*** Avg time per step: {t:.3f}s", f"*** Avg objects per second: {256 * 2048 / t:.3f}"]
    _reads_as(tmp_path, lines, 0.86, ("Global step", "counter"), ("Avg time per step", "avg_step_time"), rel=0.01)


@pytest.mark.parametrize(("scale", "spelled"), [(1.0, "{:.3f}"), (1000.0, "{:.0f}"), (1e9, "{:.0f}")])
def test_a_json_field_named_as_a_stamp_stamps_its_line(tmp_path: Path, scale: float, spelled: str) -> None:
    # zap's production encoder (Go; from memory) writes `"ts"` as epoch seconds, others in ms or ns: the field in
    # whichever unit lands in the epoch range is the line's stamp, and the stamps time the steps.
    start, lines = 1767607200.0, []
    for i in range(1, 41):
        start += 10 * (0.85 + 0.01 * (i % 3))
        ts = spelled.format(start * scale)
        lines.append(f'{{"level":"info","ts":{ts},"caller":"train/loop.go:88","msg":"train step","step":{10 * i},'
                     f'"loss":{2.5 - i / 100:.4f}}}')
    _reads_as(tmp_path, lines, 0.86, ("ts", "stamp"), ("step", "counter"), rel=0.02)


def test_a_small_number_named_ts_is_no_stamp(tmp_path: Path) -> None:
    lines = [f"step {10 * i} ts {i * 8.5:.1f} loss {2.5 - i / 100:.4f}" for i in range(1, 41)]
    m = _model(tmp_path, *lines)
    stream = next(s for s in m.streams if s.step_clock)
    assert "stamp" not in {r.role for r in stream.roles}
    assert m.frames["steps"]["ts"].null_count() == m.frames["steps"].height


def test_dl4j_performance_listener_names_its_data_wait_etl(tmp_path: Path) -> None:
    # DL4J's PerformanceListener (from memory): `ETL: 17 ms; iteration 10; iteration time: 850 ms; samples/sec: ...`
    from diagnose.engine import diagnose
    from datetime import datetime, timedelta
    at, lines = datetime(2026, 1, 5, 10), []
    for i in range(1, 41):
        t = 0.85 + 0.01 * (i % 3)
        at += timedelta(seconds=10 * t)
        lines.append(f"{at:%H:%M:%S}.{at.microsecond // 1000:03d} [main] INFO  o.d.o.l.PerformanceListener - ETL: "
                     f"{600 * t:.0f} ms; "
                     f"iteration {10 * i}; iteration time: {1000 * t:.0f} ms; samples/sec: {32 / t:.3f}; "
                     f"batches/sec: {1 / t:.3f}; ")
    d = diagnose(_model(tmp_path, *lines))
    assert d.metrics.steps is not None and d.metrics.steps.p50_s == pytest.approx(0.86, rel=0.01)
    assert "input-bound" in [f.id for f in d.findings[:3]]


@pytest.mark.parametrize(("written", "when"), [
    ("05-Jan-2026 10:00:08.160 INFO [main] step", (2026, 1, 5, 10, 0, 8, 160000)),  # log4j's dd-MMM-yyyy
    ("[05/Jan/2026:10:00:08 +0000] step", (2026, 1, 5, 10, 0, 8, 0)),  # the common log format
    ("2026/01/05-10:00:08.160123 7f3a2b INFO step", (2026, 1, 5, 10, 0, 8, 160000)),  # RocksDB's
    ("20260105 10:00:08.160 I step", (2026, 1, 5, 10, 0, 8, 160000)),  # a C++ logger's %Y%m%d
    ("05.01.2026 10:00:08 INFO: step", (2026, 1, 5, 10, 0, 8, 0)),  # a day-first locale's %d.%m.%Y
    ("2026年01月05日 10:00:08 信息 step", (2026, 1, 5, 10, 0, 8, 0)),
    ("Jan 5, 2026 1:00:08 PM org.example.Train step", (2026, 1, 5, 13, 0, 8, 0)),  # java.util.logging's default
    ("1/5/2026 12:00:08 AM step", (2026, 1, 5, 0, 0, 8, 0)),
    ("1/5/2026 12:30:08 PM step", (2026, 1, 5, 12, 30, 8, 0)),
    ("2026.01.05 10:00:08 | step", (2026, 1, 5, 10, 0, 8, 0)),  # the year first with dots
    ('"Jan 5, 2026 @ 10:00:08.160","gpu-0","step"', (2026, 1, 5, 10, 0, 8, 160000)),  # Kibana's CSV export
])
def test_stamps_of_other_locales_and_loggers(written: str, when: tuple[int, ...]) -> None:
    import datetime as dt

    from diagnose.parsers.stamps import find_stamp
    assert find_stamp(pl.Series([written])).to_list() == [dt.datetime(*when)]


def test_a_twelve_hour_clock_keeps_its_order_past_noon(tmp_path: Path) -> None:
    # `%I:%M:%S %p`: 11:59:58 AM, then 12:00:06 PM, then 1:00:08 PM (one digit): the steps stay 0.86 s apart.
    import datetime as dt

    at, lines = dt.datetime(2026, 1, 5, 11, 58), []
    for i in range(1, 61):
        at += dt.timedelta(seconds=100 * (0.85 + 0.01 * (i % 3)))
        lines.append(f"{at.month}/{at.day}/{at.year} {at.hour % 12 or 12}:{at:%M:%S %p} step {100 * i} loss 2.48")
    assert any(" 1:0" in line for line in lines) and any("AM" in line for line in lines)
    _reads_as(tmp_path, lines, 0.86, ("step", "counter"), rel=0.05)
    ts = _model(tmp_path, *lines).frames["steps"].sort("line")["ts"]
    assert ts.null_count() == 0 and ts.is_sorted() and ts[-1] - ts[0] == at - dt.datetime(2026, 1, 5, 11, 58) - \
        dt.timedelta(seconds=100 * 0.86)


@pytest.mark.parametrize("repeated", [True, False])
def test_a_printed_pandas_frame_leaves_its_index_out(tmp_path: Path, repeated: bool) -> None:
    # `print(df.tail(1))` at each print (the header again each time), or the frame printed whole once: the index
    # column has a blank header, and its whole numbers are not the step.
    head = "      step    loss  step_time  data_time"
    rows = [f"{i - 1:<4d}  {10 * i:4d}  {2.5 - i / 100:.4f}   {0.85 + 0.01 * (i % 3):.4f}     0.0170"
            for i in range(1, 41)]
    lines = [x for r in rows for x in (head, r)] if repeated else [head, *rows]
    _reads_as(tmp_path, lines, 0.86, ("step", "counter"), ("step_time", "step_time"), rel=0.01)


def _go_duration(seconds: float) -> str:
    """Go's time.Duration String(): `850ms`, `1.25s`, `1m2.5s`."""
    if seconds < 1:
        return f"{seconds * 1000:g}ms"
    minutes, rest = divmod(seconds, 60)
    return f"{int(minutes)}m{rest:g}s" if minutes else f"{rest:g}s"


def test_a_duration_whose_unit_changes_as_it_grows_is_one_column(tmp_path: Path) -> None:
    # Go's and Rust's Duration print `850ms`, then `1.25s`, then `1m2.5s` as a step slows: the lines of each unit are
    # one layout, in seconds, and the slowdown is read whole.
    from diagnose.engine import diagnose
    times = [0.6 * 1.09 ** i * (1 + 0.05 * (i % 3 - 1)) for i in range(60)]  # 0.6 s to 97 s, not evenly
    lines = [f"step={10 * (i + 1)} loss={2.5 - i / 100:.4f} dur={_go_duration(round(t, 3))}"
             for i, t in enumerate(times)]
    assert any(line.endswith("ms") for line in lines) and any("m" in line.split("dur=")[1][:-1] for line in lines)
    m = _model(tmp_path, *lines)
    stream = next(s for s in m.streams if s.step_clock)
    assert stream.lines == 60 and ("dur", "step_time") in {(r.name, r.role) for r in stream.roles}
    d = diagnose(m)
    assert d.metrics.steps is not None and d.metrics.steps.n >= 55
    assert d.metrics.steps.max_s == pytest.approx(max(times[2:]), rel=0.01)
    assert "progressive-slowdown" in [f.id for f in d.findings[:3]]
    # one template alone keeps its unit
    alone = _model(tmp_path, *(f"step={10 * i} dur={850 + i}ms" for i in range(1, 41)))
    assert [s.template for s in alone.streams] == ["step=# dur=#ms"]


def test_spacy_train_table_counts_by_its_hash_column(tmp_path: Path) -> None:
    # spaCy v3's `spacy train` (from memory of its console logger): a `#` column counts the steps and each loss is
    # named for its component (`LOSS TOK2VEC`, `LOSS NER`).
    lines = ["E    #       LOSS TOK2VEC  LOSS NER  ENTS_F  ENTS_P  ENTS_R  SCORE ",
             "---  ------  ------------  --------  ------  ------  ------  ------"]
    lines += [f"{i // 20:>3d} {200 * i:>7d}  {40 - i / 2:>12.2f}  {2000 / i:>8.2f}   81.23   80.12   82.01    0.81"
              for i in range(1, 41)]
    m = _model(tmp_path, *lines)
    stream = next(s for s in m.streams if s.step_clock)
    assert stream.lines == 40 and ("#2", "counter") in {(r.name, r.role) for r in stream.roles}, stream
    steps = m.frames["steps"].sort("line")
    assert steps["global_step"].to_list()[:3] == [200, 400, 600]
    assert steps["loss"].to_list()[0] == pytest.approx(39.5)  # the first component's loss, none totals them


def test_a_losss_parts_and_its_total_and_its_scale(tmp_path: Path) -> None:
    # MMDetection's parts (`loss_rpn_cls`, `loss_bbox`) before the total `loss`: the total is the loss column; a loss
    # scale is no loss.
    lines = [f"Epoch [1][{10 * i}/300]\tlr: 2.000e-02, time: {0.85 + 0.01 * (i % 3):.3f}, loss_rpn_cls: 0.0512, "
             f"loss_bbox: 0.2100, loss: {1.5 - i / 100:.4f}, loss_scale: 512.0000" for i in range(1, 41)]
    m = _model(tmp_path, *lines)
    roles = {(r.name, r.role) for s in m.streams if s.step_clock for r in s.roles}
    assert {("loss_rpn_cls", "loss"), ("loss", "loss")} <= roles and not [r for r in roles if r[0] == "loss_scale"
                                                                           and r[1] == "loss"]
    assert m.frames["steps"].sort("line")["loss"].to_list()[0] == pytest.approx(1.49)


def test_a_month_and_day_stamp_without_glogs_letter(tmp_path: Path) -> None:
    # tensorpack's logger (from memory): `[0105 10:00:08 @train.py:88] ...`, glog's stamp without the level's letter,
    # times the steps; four digits that are no month and day (`1399 10:00:08`) are no stamp.
    import datetime as dt

    at, lines = dt.datetime(2026, 1, 5, 10), []
    for i in range(1, 41):
        at += dt.timedelta(seconds=10 * (0.85 + 0.01 * (i % 3)))
        lines.append(f"[{at:%m%d %H:%M:%S}.{at.microsecond // 1000:03d} @train.py:88] step {10 * i}: cost 2.4833")
    _reads_as(tmp_path, lines, 0.86, ("step", "counter"), rel=0.02)
    from diagnose.parsers.stamps import leading_stamp
    assert leading_stamp(pl.Series(["1399 10:00:08 x", "0132 10:00:08 x"])).null_count() == 2


@pytest.mark.parametrize("layout", [
    "스텝 {s} | 손실 2.4833 | 시간 {t:.3f}초 | 데이터 {d:.3f}초",  # Korean, units glued in Hangul
    "шаг {s} | потеря 2.4833 | время {t:.3f} с | данные {d:.3f} с",  # Russian
    "Schritt {s}/600 - Verlust: 2.4833 - Zeit: {t:.3f}s - Daten: {d:.3f}s",  # German
    "步數 {s} | 損失 2.4833 | 耗時 {t:.3f} 秒 | 數據 {d:.3f} 秒",  # Traditional Chinese
    "Passo {s}/600 - perdita: 2.4833 - tempo: {t:.3f} s - dati: {d:.3f} s",  # Italian
    "Adım {s}/600 | kayıp: 2.4833 | süre: {t:.3f} sn | veri: {d:.3f} sn",  # Turkish, its seconds as `sn`
    "Krok {s}/600, strata: 2.4833, czas kroku: {t:.3f} s, dane: {d:.3f} s",  # Polish
    "Bước {s}/600 - mất mát: 2.4833 - thời gian: {t:.3f}s - dữ liệu: {d:.3f}s",  # Vietnamese, its words spaced
    "步骤：{s}/600，损失：2.4833，每步耗时：{t:.3f}秒，数据耗时：{d:.3f}秒",  # full-width punctuation, unspaced names
])
def test_names_and_units_in_other_scripts_and_languages(tmp_path: Path, layout: str) -> None:
    # A custom loop's words in its author's language: names of any script are names, a unit after a number in any
    # script is a unit, and the vocabulary knows the step, loss, time and data words of several languages.
    from diagnose.engine import diagnose
    lines = [layout.format(s=10 * i, t=0.85 + 0.01 * (i % 3), d=0.6 * (0.85 + 0.01 * (i % 3))) for i in range(1, 41)]
    d = diagnose(_model(tmp_path, *lines))
    assert d.metrics.steps is not None and d.metrics.steps.n == 40
    assert d.metrics.steps.p50_s == pytest.approx(0.86, rel=0.01)
    assert "input-bound" in [f.id for f in d.findings[:3]]


@pytest.mark.parametrize("label", ["[default{r}]:", "{r}: "])
def test_a_table_behind_a_launchers_prefix_under_each_ranks_header(tmp_path: Path, label: str) -> None:
    # The same table printed by two ranks through torchrun's tee or srun's labels, their lines interleaved: each
    # rank's rows take the names of the header behind its own prefix.
    lines = []
    for r in (0, 1):
        lines.append(label.format(r=r) + "step    loss    step_time    data_time")
    for i in range(1, 41):
        for r in (0, 1):
            t = 0.85 + 0.01 * (i % 3) + 0.1 * r
            lines.append(label.format(r=r) + f"{10 * i:<6d}  {2.5 - i / 100:.4f}  {t:.4f}       0.0170")
    m = _model(tmp_path, *lines)
    steps = m.frames["steps"]
    assert steps.height == 80 and sorted(steps["rank"].unique().to_list()) == [0, 1]
    by_rank = steps.group_by("rank").agg(pl.col("step_time_s").median()).sort("rank")["step_time_s"].to_list()
    assert by_rank == pytest.approx([0.86, 0.96], rel=0.01)


@pytest.mark.parametrize("layout", [
    "step {s}: last 10 steps took {w:.1f}s, loss 2.4833",
    "[iter {s}] loss=2.4833 time/10 steps={w:.2f}s",
    "epoch 0 | {s} | 10 batches in {w:.2f} s | loss 2.48",
])
def test_a_duration_over_a_stated_count_of_steps(tmp_path: Path, layout: str) -> None:
    # A time printed after the count of steps it covers is that many steps' time, whatever its name says.
    lines = [layout.format(s=10 * i, w=10 * (0.85 + 0.01 * (i % 3))) for i in range(1, 41)]
    steps, _ = _steady(tmp_path, lines)
    assert steps is not None and steps.p50_s == pytest.approx(0.86, rel=0.01)
    # a total after a count of steps is no window's time
    total = [f"step {10 * i}: 600 steps eta {int(600 - 10 * i) // 60}:{int(600 - 10 * i) % 60:02d}, elapsed "
             f"{8.6 * i:.1f}s" for i in range(1, 41)]
    steps, _ = _steady(tmp_path, total)
    assert steps is not None and steps.p50_s == pytest.approx(0.86, rel=0.01)


@pytest.mark.parametrize("fmt", ["{ms} INFO step {s} loss 2.4833", "{ms:>6d} MainThread step {s} loss 2.4833",
                                 "[default0]:{ms} WARNING step {s} loss 2.4833"])
def test_loggings_relative_milliseconds_stamp_the_lines(tmp_path: Path, fmt: str) -> None:
    # `%(relativeCreated)d %(levelname)s %(message)s` and the logging cookbook's `%(relativeCreated)6d %(threadName)s`:
    # milliseconds since logging loaded, opening the line before the level or the thread; ten digits are epoch seconds.
    elapsed, lines = 0.0, []
    for i in range(1, 41):
        elapsed += 10 * (0.85 + 0.01 * (i % 3))
        lines.append(fmt.format(ms=int(1000 * elapsed), s=10 * i))
    _reads_as(tmp_path, lines, 0.86, ("step", "counter"), rel=0.02)
    from diagnose.parsers.stamps import leading_stamp
    got = leading_stamp(pl.Series(["1767607208 INFO x", "12345 loss 2.3"])).to_list()
    assert got[0] is not None and got[0].year == 2026 and got[1] is None


def test_a_unit_in_brackets_ends_the_name_whatever_it_spells(tmp_path: Path) -> None:
    # `Time/iter (s)` folds to `time_iter_s`, whose tail `iter_s` names a rate: the bracketed unit is taken off first.
    lines = [f"Iteration {10 * i} - Loss 2.4833 - Time/iter (s) {0.85 + 0.01 * (i % 3):.3f} - Data (s) 0.017"
             for i in range(1, 41)]
    _reads_as(tmp_path, lines, 0.86, ("Time/iter (s)", "step_time"), ("Data (s)", "data_time"), rel=0.01)


def test_a_time_of_one_part_that_only_grows_is_that_parts_total_and_the_stamps_time_the_steps(tmp_path: Path) -> None:
    # habitat-baselines' PPO trainer: `update: N\tenv-time: Xs\tpth-time: Ys\tframes: F`, both times since the start
    # (each part of the work's); the stamps 8.5 s apart time the 10 updates between prints.
    lines, env, pth = [], 0.0, 0.0
    for i in range(1, 41):
        env, pth = env + 6.4, pth + 2.1
        stamp = f"2026-01-05 10:{8.5 * i // 60:02.0f}:{8.5 * i % 60:06.3f}".replace(".", ",")
        lines += [f"{stamp} update: {10 * i}\tfps: 301.176\t",
                  f"{stamp} update: {10 * i}\tenv-time: {env:.3f}s\tpth-time: {pth:.3f}s\tframes: {2560 * i}"]
    steps, roles = _steady(tmp_path, lines)
    assert steps is not None and steps.p50_s == pytest.approx(0.85, rel=0.02), steps
    assert ("env-time", "step_time") not in roles and ("update", "counter") in roles, roles
    # a paste of three prints: a step's own time that doubles and triples over them is no likelier
    m = _model(tmp_path, *lines[:6])
    timed = [(r.name, r.role) for s in m.streams for r in s.roles if r.role == "step_time"]
    assert not timed, timed


def test_a_clock_time_after_the_level_in_the_opening_bracket_stamps_the_line(tmp_path: Path) -> None:
    # PyMARL's logger `[%(levelname)s %(asctime)s] %(name)s %(message)s` with datefmt `%H:%M:%S`, and its loop's
    # environment timestep `t_env: N / T` as the counter.
    lines = []
    for i in range(1, 41):
        s = round(8.5 * i)
        lines.append(f"[INFO 10:{s // 60:02d}:{s % 60:02d}] my_main t_env: {10 * i} / 400")
    _reads_as(tmp_path, lines, 0.85, ("my_main t_env", "counter"), rel=0.06)  # whole seconds: 8 or 9 s a print
    from diagnose.parsers.stamps import leading_stamp
    got = leading_stamp(pl.Series(["[INFO 10:00:08] my_main x", "INFO 10:00:09 x", "[INFO] 10:00:08 x"])).to_list()
    assert [g.second if g else None for g in got] == [8, 9, None]


@pytest.mark.parametrize(("name", "scale"), [("s/b", 1.0), ("ms/batch", 1e-3), ("sec/step", 1.0), ("ms/it", 1e-3)])
def test_a_unit_of_time_over_a_steps_word_is_seconds_per_step(tmp_path: Path, name: str, scale: float) -> None:
    # HiFi-GAN's `Steps : N, Gen Loss Total : v, Mel-Spec. Error : v, s/b : v`; Transformer-XL's `ms/batch`. The
    # step's word after the slash is no counter, and a loss named with words around it is a loss, not a count.
    lines = [f"Steps : {10 * i}, Gen Loss Total : 2.483, Mel-Spec. Error : 0.812, {name} : "
             f"{(0.85 + 0.01 * (i % 3)) / scale:.3f}" for i in range(1, 41)]
    steps, roles = _steady(tmp_path, lines)
    assert steps is not None and steps.p50_s == pytest.approx(0.86, rel=0.01), steps
    assert ((name, "sec_per_iter") in roles or (name, "step_time") in roles) and ("Gen Loss Total", "loss") in roles
    from diagnose.parsers.vocabulary import normalise, role_of
    # the slash decides: `batch/s` is a rate, `batch_s` the batch's seconds (as LeRobot's `updt_s`)
    assert role_of(normalise("batch/s")[0]) == "iter_rate"
    assert normalise("batch_s") == ("step_time", 1.0) and role_of(normalise("batch_s")[0]) == "step_time"


def test_electras_elapsed_time_in_seconds_then_minutes(tmp_path: Path) -> None:
    # ELECTRA's ETAHook: `N/T = p%, SPS: v, ELAP: e, ETA: e - loss: v`, its times as a timedelta with the leading
    # zeros cut (`8`, `59`, `1:08`, `4:15`).
    def short(secs: float) -> str:
        h, rest = divmod(int(round(secs)), 3600)
        return f"{h}:{rest // 60:02d}:{rest % 60:02d}" if h else f"{rest // 60}:{rest % 60:02d}" if rest >= 60 \
            else str(rest)
    lines = [f"{10 * i}/400 = {2.5 * i:.1f}%, SPS: 1.2, ELAP: {short(8.5 * i)}, ETA: {short(8.5 * (40 - i))} - loss: "
             "2.4833" for i in range(1, 41)]
    _reads_as(tmp_path, lines, 0.85, ("ELAP", "cum_time"), rel=0.06)


def test_a_bracketed_word_in_the_name_names_the_bracketed_number(tmp_path: Path) -> None:
    # BasicSR's MessageLogger: `[eta: 0:08:01, time (data): 0.850 (0.017)]` is a step's time and its data wait, not a
    # time and its running average; `loss (avg): v (w)` and `time (s): v (w)` keep theirs.
    lines = [f"{_stamp(8.5 * i)},123 INFO: [train..][epoch:  0, iter: {10 * i:7d}, lr:(2.000e-04,)] [eta: "
             f"0:08:01, time (data): {0.85 + 0.01 * (i % 3):.3f} (0.017)] l_pix: 2.4833e+00" for i in range(1, 41)]
    _reads_as(tmp_path, lines, 0.86, ("time", "step_time"), ("data", "data_time"), rel=0.01)
    from diagnose.parsers.templates import _slots
    for name in ("loss (avg)", "time (s)"):
        first, second = _slots(f"{name}: \x06 (\x06)")
        assert first.name == name and second.avg_of == 0 and not second.name, (name, first, second)


def test_time_before_what_it_times_names_a_part_of_the_step(tmp_path: Path) -> None:
    # d3rlpy's epoch line: `metrics={'time_sample_batch': v, 'time_algorithm_update': v, 'loss': v, 'time_step': v}`:
    # the draw from the replay buffer is the data wait, the update a part of the step; neither counts steps.
    lines = [f"{_stamp(8.5 * i)} [info     ] DQN_20260105100000: epoch={i} step={10 * i} epoch={i} "
             f"metrics={{'time_sample_batch': 0.51, 'time_algorithm_update': 0.34, 'loss': 2.4833, 'time_step': 0.85}}"
             f" step={10 * i}" for i in range(1, 41)]
    _reads_as(tmp_path, lines, 0.85, ("time_sample_batch", "data_time"), ("time_algorithm_update", "phase_time"),
              ("time_step", "step_time"), rel=0.01)


def test_a_table_ruled_between_its_column_groups_is_read_by_its_header(tmp_path: Path) -> None:
    # ElegantRL's evaluator: `ID     Step    Time |    avgR ...` and rows `0  1.00e+01       8 |   12.34 ...`; the
    # step count in e-notation, the time since the start in whole seconds.
    head = "{:<3}{:>8}{:>8} |{:>8}{:>7}{:>7}{:>6} |{:>8}{:>7}{:>7}".format("ID", "Step", "Time", "avgR", "stdR", "avgS",
                                                                          "stdS", "expR", "objC", "etc.")
    rows = [f"0  {10 * i:8.2e}{8.5 * i:8.0f} |   12.34    1.2    200     0 |   -0.12   1.23   0.45"
            for i in range(1, 41)]
    _reads_as(tmp_path, ["#" * 80, head, *rows], 0.85, ("Step", "counter"), ("Time", "cum_time"), rel=0.06)


def test_table_cells_of_one_number_in_brackets(tmp_path: Path) -> None:
    # DeepXDE's TrainingDisplay: `Step      Train loss    Test loss     Test metric`, its rows `1000      [2.30e-02]
    # [2.50e-02]    []`: each loss a list (of one term here), the metric's list empty.
    rows = [f"{1000 * i:<10}[{2.5 - 0.01 * i:.2e}]    [{2.6 - 0.01 * i:.2e}]    []    " for i in range(1, 41)]
    m = _model(tmp_path, "Step      Train loss    Test loss     Test metric", *rows)
    stream = next(s for s in m.streams if s.step_clock)
    assert stream.lines == 40 and ("Step", "counter") in [(r.name, r.role) for r in stream.roles], stream
    assert m.frames["steps"]["global_step"].to_list()[:3] == [1000, 2000, 3000]


def test_an_evaluation_named_right_after_its_counter_is_no_step_clock(tmp_path: Path) -> None:
    # RecBole: `epoch 10 training [time: 0.85s, train loss: v]` then `epoch 10 evaluating [time: 0.12s, valid_score:
    # v]`, under its logger's `%a %d %b %Y %H:%M:%S` stamp; GCN's `Epoch: 0010 train_loss= ... val_loss= ...` stays
    # a training line.
    lines = []
    for i in range(1, 41):
        stamp = f"Mon 05 Jan 2026 10:{8.5 * i // 60:02.0f}:{int(8.5 * i % 60):02d}"
        lines += [f"{stamp} INFO  epoch {i} training [time: {0.85 + 0.01 * (i % 3):.2f}s, train loss: 2.4833]",
                  f"{stamp} INFO  epoch {i} evaluating [time: 0.12s, valid_score: 0.123400]"]
    _reads_as(tmp_path, lines, 0.86, ("time", "step_time"), ("train loss", "loss"), rel=0.01)
    gcn = [f"Epoch: {i:04d} train_loss= 2.48333 train_acc= 0.15000 val_loss= 2.58333 val_acc= 0.21000 time= "
           f"{0.85 + 0.01 * (i % 3):.5f}" for i in range(1, 41)]
    _reads_as(tmp_path, gcn, 0.86, ("time", "step_time"), rel=0.01)


def test_a_paste_printed_newest_first_reads_from_its_last_line_up(tmp_path: Path) -> None:
    # Grafana's and Kibana's log views, and `logcli` by default, list the newest line first: the counter falls down
    # the paste. Read in that order, a slowdown looked like a speed-up and the run seemed to stop at its first step.
    from diagnose.endings import ending
    from diagnose.engine import diagnose
    lines = [f"2026-01-05T10:{int(wall) // 60:02d}:{int(wall) % 60:02d}.000Z step {step} loss 2.48 step_time {t:.3f}s"
             for step, t, wall in _slowing(60)]
    m = _model(tmp_path, *reversed(lines))
    stream = next(s for s in m.streams if s.step_clock)
    assert "newest first" in stream.note, stream
    d = diagnose(m)
    assert "progressive-slowdown" in [f.id for f in d.findings[:3]], [f.id for f in d.findings]
    end = ending(m)
    assert end is not None and end.after_step == 600, end


@pytest.mark.parametrize("prefix", ["", "[default0]:"])
def test_a_counter_hyphened_to_its_word_is_no_host_and_no_minus_sign(tmp_path: Path, prefix: str) -> None:
    # Tutel's `STEP-10: loss = v, step_time = v sec, perf = v tflops.`: at the line's start shaped like a pdsh host
    # (`node-2: `), behind torchrun's tee a negative number; an exponent's minus stays one (`lr 3e-5`).
    lines = [f"{prefix}STEP-{10 * i}: loss = 2.48333, lr 3e-5, step_time = {0.85 + 0.01 * (i % 3):.6f} sec, perf = "
             "128.40 tflops." for i in range(1, 41)]
    _reads_as(tmp_path, lines, 0.86, ("STEP", "counter"), rel=0.01)
    m = _model(tmp_path, *lines)
    assert m.frames["steps"]["global_step"].to_list()[:3] == [10, 20, 30]
    assert m.frames["steps"]["lr"].to_list()[:1] == [pytest.approx(3e-5)]


def test_a_counter_below_zero_is_timed_not_refused(tmp_path: Path) -> None:
    # Steps numbered from below zero (a warm-up counted up to 0) left no step past the warm-up to take the median of,
    # and the report stopped with an internal error.
    from diagnose.engine import diagnose
    m = _model(tmp_path, *[f"iter {10 * i - 1000}: loss 2.48, time 0.850s" for i in range(1, 61)])
    steps = diagnose(m).metrics.steps
    assert steps is not None and steps.p50_s == pytest.approx(0.85), steps


def test_a_counter_that_steps_down_is_kept_for_learning(tmp_path: Path) -> None:
    # SASRec's `epoch:N, time: T(s), ...` (T since the start) pasted newest first: the miner dropped a template
    # printed eight times or more in a chunk whose numbers never step up, before any stream was learned from it.
    lines = [f"epoch:{step}, time: {wall:f}(s), valid (NDCG@10: 0.5123, HR@10: 0.7890), test (NDCG@10: 0.4987, HR@10: "
             "0.7654)" for step, _, wall in _slowing(60)]
    m = _model(tmp_path, *reversed(lines))
    stream = next(s for s in m.streams if s.step_clock)
    assert stream.lines == 60 and "newest first" in stream.note, stream


def test_a_count_of_steps_left_is_no_counter_pasted_newest_first(tmp_path: Path) -> None:
    # `remaining steps: N` (its tail a counter's name) falls in a log printed oldest first: none is read backwards.
    lines = [f"remaining steps: {600 - 10 * i} loss 2.48" for i in range(1, 41)]
    m = _model(tmp_path, *lines)
    assert not [s for s in m.streams if "newest first" in s.note], m.streams


def test_a_duration_whose_product_with_a_rate_is_the_print_interval_is_the_intervals(tmp_path: Path) -> None:
    # keras-rl's episode line: the counter counts steps, `duration` is the episode's (10 steps), and `steps per
    # second` (printed rounded) confirms it. Read as a step's, the median was 8.5 s.
    lines = [f"{step:>6}/600: episode: {i}, duration: {10 * t:.3f}s, episode steps:   10, steps per second: "
             f"{1 / t:>4.0f}, episode reward: 21.000, mean reward:  0.021 [ 0.000,  1.000],  loss: 2.483333, mae: "
             "0.123456" for i, (step, t, _) in enumerate(_slowing(60))]
    m = _model(tmp_path, *lines)
    stream = next(s for s in m.streams if s.step_clock)
    assert ("duration", "interval_time") in [(r.name, r.role) for r in stream.roles], stream.roles
    # the first print has no print before it to count the steps from
    assert m.frames["steps"]["step_time_s"].slice(1, 3).to_list() == pytest.approx(
        [t for _, t, _ in _slowing(60)[1:4]], rel=1e-3)
    # a duration that is the step's beside a rate that agrees keeps its role
    same = [f"step {10 * i}: duration: 0.850s, steps per second: 1.18" for i in range(1, 41)]
    _reads_as(tmp_path, same, 0.85, ("duration", "step_time"))


def test_a_generic_time_in_a_vertical_record_that_grows_is_the_elapsed_time(tmp_path: Path) -> None:
    # Spinning Up's EpochLogger table: `Time` is seconds since the start. Read as each epoch's own time, a steady run
    # was 259 s a step and alarmed as slowing down.
    lines: list[str] = []
    for step, t, wall in _slowing(60):
        lines += ["-" * 41, f"|             Epoch |               {step:<3} |",
                  "|      AverageEpRet |            -123 |", f"|              Time |        {wall:8.3g} |", "-" * 41]
    m = _model(tmp_path, *lines)
    stream = next(s for s in m.streams if s.step_clock)
    assert ("Time", "cum_time") in [(r.name, r.role) for r in stream.roles], stream.roles
    times = m.frames["steps"]["step_time_s"].drop_nulls()
    assert times.len() >= 55 and times.median() == pytest.approx(0.85 * 1.4, rel=0.1), times


def test_a_clock_with_a_glued_unit_and_a_number_padded_before_a_bar(tmp_path: Path) -> None:
    # pytorch-tabnet: `epoch {:<3}| loss: ... |  0:01:25s` (elapsed). The glued `s` split the clock, and `epoch 100|`
    # was another template than `epoch 10 |`.
    lines = [f"epoch {step:<3}| loss: 2.48333 | val_0_auc: 0.51234 |  {int(wall) // 3600}:{int(wall) % 3600 // 60:02d}:"
             f"{int(wall) % 60:02d}s" for step, _, wall in _slowing(60)]
    m = _model(tmp_path, *lines)
    stream = next(s for s in m.streams if s.step_clock)
    assert stream.lines == 60 and ("#4", "cum_time") in [(r.name, r.role) for r in stream.roles], stream
    # spaces before a bar that never vary are the layout and stay
    assert "# |" in _model(tmp_path, *[f"| {0.85:.2f} ms | step {10 * i} |" for i in range(1, 41)]).streams[0].template


def test_a_part_of_a_step_per_step_is_named_by_the_part(tmp_path: Path) -> None:
    # `time/iter: 0.850 | data/iter: 0.510`: `data/iter` was a counter's name (`iter`) and the data wait went unread.
    lines = [f"samples seen: {256 * step} | loss: 2.4833 | time/iter: 0.850 | data/iter: 0.510"
             for step, _, _ in _slowing(40)]
    m = _model(tmp_path, *lines)
    assert m.frames["steps"]["data_time_s"].drop_nulls().to_list()[:2] == [0.51, 0.51]
    _reads_as(tmp_path, lines, 0.85, ("time/iter", "step_time"), ("data/iter", "data_time"))


def test_the_keys_of_a_nested_json_object_are_named_with_their_parent(tmp_path: Path) -> None:
    # `{"step": 10, "timing": {"step": 0.85, "data": 0.51}}`: the inner `step` was a second counter and dropped.
    lines = [f'{{"step": {step}, "loss": 2.4833, "timing": {{"step": 0.8500, "data": 0.5100}}, "lr": 0.0003}}'
             for step, _, _ in _slowing(40)]
    _reads_as(tmp_path, lines, 0.85, ("step", "counter"), ("timing/step", "step_time"),
              ("timing/data", "data_time"), ("lr", "lr"))
    # a Python dict printed the same way
    py = [f"{{'step': {step}, 'perf': {{'iter_time': 0.85}}, 'loss': 2.48}}" for step, _, _ in _slowing(40)]
    _reads_as(tmp_path, py, 0.85, ("perf/iter_time", "step_time"), ("loss", "loss"))


def test_a_unit_spelled_out(tmp_path: Path) -> None:
    # `the step took 850 milliseconds` was 850 s a step.
    lines = [f"Step {step}: the step took 850 milliseconds (data 17 milliseconds)" for step, _, _ in _slowing(40)]
    _reads_as(tmp_path, lines, 0.85)


def test_a_time_per_step_after_a_count_of_steps_is_not_divided_again(tmp_path: Path) -> None:
    # `8.50 s for 10 steps | 0.850 s/step`: the count of steps divided the per-step time after it (0.085 s a step).
    lines = [f"Step {step} | {10 * 0.85:.2f} s for 10 steps | 0.850 s/step | loss 2.48" for step, _, _ in _slowing(40)]
    _reads_as(tmp_path, lines, 0.85)
    # a window's total after its count is still divided
    window = [f"step {step}: last 10 steps took 8.50s, loss 2.48" for step, _, _ in _slowing(40)]
    _reads_as(tmp_path, window, 0.85)


def test_a_paste_newest_first_with_an_epoch_before_its_step(tmp_path: Path) -> None:
    # `Epoch 2, Step 590, ..., Time: 0.83s` over `Epoch 2, Step 580`: the epoch holds over most lines, so the test of
    # a falling counter looked at it and the paste was not read at all.
    from diagnose.engine import diagnose
    lines = [f"Epoch {1 + step // 300}, Step {step}, Loss: 2.4833, Time: {t:.2f}s" for step, t, _ in _slowing(60)]
    m = _model(tmp_path, *reversed(lines))
    stream = next(s for s in m.streams if s.step_clock)
    assert "newest first" in stream.note and stream.lines == 60, stream
    assert "progressive-slowdown" in [f.id for f in diagnose(m).findings[:3]]


def test_glog_with_its_year(tmp_path: Path) -> None:
    # glog since 0.7 prints the year, its level's letter glued on: `I20260105 10:00:08.160000 12345 solver.cpp:245]`.
    # No stamp was read, and a stream with no time of its own was not timed at all.
    lines = [f"I{_stamp(wall)[:10].replace('-', '')} {_stamp(wall)[11:]}.160000 12345 solver.cpp:245] Iteration "
             f"{step}, lr = 0.001, loss = 2.4833" for step, _, wall in _slowing(40)]
    m = _model(tmp_path, *lines)
    assert m.frames["steps"]["ts"].drop_nulls().len() == 40
    assert m.frames["steps"]["ts"][0].year == 2026


def test_camel_case_names_and_msecs(tmp_path: Path) -> None:
    # DL4J's PerformanceListener through log4j: `iterationTimeMs`, `etlTimeMs` (camelCase, a unit word glued on)
    lines = [f"iteration={step} score=2.4833 iterationTimeMs=850 etlTimeMs=510" for step, _, _ in _slowing(40)]
    _reads_as(tmp_path, lines, 0.85, ("iterationTimeMs", "step_time"), ("etlTimeMs", "data_time"))
    msecs = [f"iter {step}: 850 msecs (data 17 msecs), loss=2.4833" for step, _, _ in _slowing(40)]
    _reads_as(tmp_path, msecs, 0.85)


def test_a_count_of_samples_seen_beside_a_step_time_is_one_step_a_line(tmp_path: Path) -> None:
    # `[samples 2560] loss 2.48 time 0.850s`: no counter but a count that grows on every line; the miner pruned it
    lines = [f"[samples {256 * step}] loss 2.4833 time {t:.3f}s" for step, t, _ in _slowing(60)]
    m = _model(tmp_path, *lines)
    stream = next(s for s in m.streams if s.step_clock)
    assert stream.lines == 60 and m.frames["steps"]["step_time_s"].head(2).to_list() == pytest.approx(
        [t for _, t, _ in _slowing(60)[:2]], rel=1e-3)


def test_a_mean_and_its_spread(tmp_path: Path) -> None:
    # `0.850 ± 0.021 s/step`: the unit after the spread was the spread's alone; the spread was read as the step time
    lines = [f"step {step} | loss 2.4833 | {t:.3f} ± 0.021 s/step | data 0.017 +/- 0.002 s"
             for step, t, _ in _slowing(40)]
    _reads_as(tmp_path, lines, _slowing(40)[19][1], ("#3", "step_time"), ("data", "data_time"), rel=0.02)


def test_tables_drawn_by_rich_and_printed_as_tuples(tmp_path: Path) -> None:
    # rich's default box: a heavy `┃` header over `│` rows
    rich = ["┏━━━━━━━━┳━━━━━━━━━━┳━━━━━━━━━━━┳━━━━━━━━━━┓", "┃   step ┃     loss ┃   time_ms ┃  data_ms ┃",
            "┡━━━━━━━━╇━━━━━━━━━━╇━━━━━━━━━━━╇━━━━━━━━━━┩"]
    rich += [f"│ {step:>6} │ {2.4833:>8.4f} │ {850.0:>9.1f} │ {17.0:>8.1f} │" for step, _, _ in _slowing(40)]
    _reads_as(tmp_path, rich, 0.85, ("time_ms", "step_time"), ("data_ms", "data_time"))
    # a Python tuple of names, then a tuple a step
    tuples = ["(step, loss, step_time, data_time)"]
    tuples += [f"({step}, 2.4833, 0.8500, 0.0170)" for step, _, _ in _slowing(40)]
    _reads_as(tmp_path, tuples, 0.85, ("step_time", "step_time"), ("data_time", "data_time"))


def test_a_duration_over_a_count_of_steps_as_its_unit(tmp_path: Path) -> None:
    # `Time: 8.5s/10it`: seconds per ten iterations, read as 8.5 s a step
    lines = [f"[{step}/600 ({step // 6}%)] Loss: 2.4833 | Time: {10 * t:.1f}s/10it" for step, t, _ in _slowing(40)]
    m = _model(tmp_path, *lines)
    assert m.frames["steps"]["step_time_s"].head(3).to_list() == pytest.approx(
        [round(10 * t, 1) / 10 for _, t, _ in _slowing(40)[:3]])


def test_an_epoch_instant_in_milliseconds_named_time_stamps_the_line(tmp_path: Path) -> None:
    # pino's JSON `"time":1767607208160`: read as 1.8e12 s a step, where it is the line's stamp in milliseconds
    lines = [f'{{"level":30,"time":{1767607200000 + round(1000 * wall)},"pid":4321,"msg":"step {step}/600 '
             f'loss=2.4833"}}' for step, _, wall in _slowing(40)]
    _reads_as(tmp_path, lines, _median([t for _, t, _ in _slowing(40)[1:]]), ("time", "stamp"), rel=1e-3)


def test_csvs_quoted_and_with_decimal_commas(tmp_path: Path) -> None:
    # every field quoted (R's write.csv, a log platform's export); `;` between fields and `,` as the decimal mark
    quoted = ['"step","loss","step_time","data_time"']
    quoted += [f'"{step}","2.4833","{t:.4f}","{0.6 * t:.4f}"' for step, t, _ in _slowing(40)]
    _reads_as(tmp_path, quoted, _median([t for _, t, _ in _slowing(40)]), ("step_time", "step_time"),
              ("data_time", "data_time"), rel=1e-3)
    _reads_as(tmp_path, [f"[default0]:{line}" for line in quoted], _median([t for _, t, _ in _slowing(40)]),
              ("step_time", "step_time"), rel=1e-3)  # behind torchrun's tee prefix
    semicolons = ["step;loss;step_time;data_time"]
    semicolons += [f"{step};2,4833;{t:.3f};{0.6 * t:.3f}".replace(".", ",") for step, t, _ in _slowing(40)]
    _reads_as(tmp_path, semicolons, _median([t for _, t, _ in _slowing(40)]), ("step_time", "step_time"), rel=1e-3)


def test_decimal_commas_in_a_line_and_on_the_lines_they_leave_unsure(tmp_path: Path) -> None:
    # `Zeit 0,816 s`: read as 816 s (a thousands separator). Past a second, `Zeit 1,020 s` may be either; its
    # template's other lines say which.
    lines = [f"Schritt {step}/600: Verlust 2,4833 – Zeit {t:.3f} s".replace(".", ",") for step, t, _ in _slowing(40)]
    m = _model(tmp_path, *lines)
    times = m.frames["steps"]["step_time_s"].to_list()
    assert times == pytest.approx([round(t, 3) for _, t, _ in _slowing(40)])
    assert max(times) > 1.0  # the `1,xxx` lines too
    # a list beside a decimal point stays a list, and thousands stay thousands
    m = _model(tmp_path, *[f"step {step} loss 2.48 tokens 1,048,576 time {t:.3f}s" for step, t, _ in _slowing(40)])
    assert m.frames["steps"]["step_time_s"].head(1).to_list() == pytest.approx([round(_slowing(40)[0][1], 3)])


def test_a_time_per_step_between_two_numbers_names_the_second(tmp_path: Path) -> None:
    # `loss 2.4833 sec/batch 0.816`: the unit was the loss's, and the time had no name
    lines = [f"epoch 0 batch {step} loss 2.4833 sec/batch {t:.3f}" for step, t, _ in _slowing(40)]
    _reads_as(tmp_path, lines, _median([t for _, t, _ in _slowing(40)]), ("loss", "loss"), ("sec/batch", "step_time"),
              rel=1e-3)


def test_generic_time_under_a_records_key_that_grows_is_the_elapsed_time(tmp_path: Path) -> None:
    # DeepPavlov's train report: `"time_spent": "0:02:05"` under `train` grows with `batches_seen`
    lines = [f'{{"train": {{"time_spent": "{int(wall) // 3600}:{int(wall) % 3600 // 60:02d}:{int(wall) % 60:02d}", '
             f'"batches_seen": {step}, "loss": 2.4833}}}}' for step, _, wall in _slowing(40)]
    m = _model(tmp_path, *lines)
    stream = next(s for s in m.streams if s.step_clock)
    roles = [(r.name, r.role) for r in stream.roles]
    assert ("train/time_spent", "cum_time") in roles and ("train/batches_seen", "counter") in roles
    assert m.frames["steps"]["step_time_s"].drop_nulls().max() < 2.0


def test_a_waits_own_duration_is_a_data_wait(tmp_path: Path) -> None:
    # logfmt's `data_duration=0.490s` beside `step_duration=0.816s`; Chinese `数据耗时` (data, time taken)
    lines = [f'time="{_stamp(wall)}" level=info msg="training step" step={step} step_duration={t:.3f}s '
             f"data_duration={0.6 * t:.3f}s" for step, t, wall in _slowing(40)]
    _reads_as(tmp_path, lines, _median([t for _, t, _ in _slowing(40)]), ("step_duration", "step_time"),
              ("data_duration", "data_time"), rel=1e-3)


def _median(values: list[float]) -> float:
    import statistics
    return statistics.median(values)


def test_an_average_over_the_last_steps_is_a_steps_and_a_total_over_them_is_not(tmp_path: Path) -> None:
    # `avg step time over last 10 steps: 850.0 ms` was divided by the ten, as `time over last 10 steps: 8.5 s` is
    average = [f"step {step} | loss 2.4833 | avg step time over last 10 steps: {1000 * t:.1f} ms"
               for step, t, _ in _slowing(40)]
    _reads_as(tmp_path, average, _median([round(t, 4) for _, t, _ in _slowing(40)]), rel=1e-3)
    total = [f"step {step} | loss 2.4833 | time over last 10 steps: {10 * t:.3f} s" for step, t, _ in _slowing(40)]
    _reads_as(tmp_path, total, _median([t for _, t, _ in _slowing(40)]), rel=1e-3)


@pytest.mark.parametrize("gpus", ["Num GPUs used = 2", "Num GPUs = 2"])
def test_unsloths_banner_states_the_hf_trainers_summary_several_a_line(tmp_path: Path, gpus: str) -> None:
    # Unsloth replaces the Trainer's `***** Running training *****` block with this banner (newer releases say
    # `Num GPUs used`, older ones `Num GPUs`); only its first value a line was read, and the GPUs not at all
    m = _model(tmp_path,
               f"==((====))==  Unsloth - 2x faster free finetuning | {gpus}",
               "   \\\\   /|    Num examples = 51,760 | Num Epochs = 1 | Total steps = 60",
               "O^O/ \\_/ \\    Batch size per device = 2 | Gradient accumulation steps = 4",
               "\\        /    Data Parallel GPUs = 2 | Total batch size (2 x 4 x 2) = 16",
               ' "-____-"     Trainable parameters = 41,943,040 of 8,072,204,288 (0.52% trained)',
               "{'loss': 1.8151, 'grad_norm': 0.6, 'learning_rate': 0.0002, 'epoch': 0.0}")
    f = m.facts
    assert (f.world_size, f.micro_batch_per_gpu, f.grad_accum_steps, f.train_batch_size, f.total_steps) == \
        (2, 2, 4, 16, 60)


def test_a_counter_named_as_a_steps_makes_the_step_clock_before_one_found_by_its_statistics(tmp_path: Path) -> None:
    # a loader's `Worker 3: loaded shard 0001 (12345 samples) in 0.45s` after each step line was taken as the steps
    lines = []
    for i, (step, t, _) in enumerate(_slowing(40)):
        lines += [f"step {step} loss 2.4833 ({t:.3f}s/it)", f"Worker 3: loaded shard {i + 1:04d} (12345 samples) in 0.45s"]
    _reads_as(tmp_path, lines, _median([round(t, 3) for _, t, _ in _slowing(40)]), ("step", "counter"), rel=1e-3)


def test_names_before_a_fat_arrow(tmp_path: Path) -> None:
    # a Perl or Ruby hash printed: `step => 10, loss => 2.4833, step_time => 0.8500`
    lines = [f"step => {step}, loss => 2.4833, step_time => {t:.4f}" for step, t, _ in _slowing(40)]
    _reads_as(tmp_path, lines, _median([t for _, t, _ in _slowing(40)]), ("step", "counter"),
              ("step_time", "step_time"), rel=1e-3)


@pytest.mark.parametrize("label", ["[rank{r}] ", "[rank {r}] ", "[rank: {r}] "])
def test_a_loops_own_rank_label_names_the_rank(tmp_path: Path, label: str) -> None:
    # `print(f"[rank{rank}] step ...")` and Lightning Fabric's `[rank: 1]`: torch's `[rank1]:` has a colon, these
    # none; the ranks were unknown (no world size), and read newest first the step's first line was rank 1's
    lines = [f"{label.format(r=r)}step {step} loss 2.4833 time {t * (1.3 if r else 1.0):.3f}"
             for step, t, _ in _slowing(40) for r in (0, 1)]
    for order in (lines, lines[::-1]):
        m = _model(tmp_path, *order)
        assert m.facts.world_size == 2
        _reads_as(tmp_path, order, _median([round(t, 3) for _, t, _ in _slowing(40)]), rel=1e-3)


def _input_bound(tmp_path: Path, layout: str) -> None:
    """Forty prints ten steps apart of a 0.85-0.87 s step that waits 60% of it for data (`c`: a 30% compute part, `n`:
    samples seen): read at that median, and input-bound."""
    from diagnose.engine import diagnose
    lines = []
    for i in range(1, 41):
        t = 0.85 + 0.01 * (i % 3)
        lines.append(layout.format(s=10 * i, n=640 * i, t=t, d=0.6 * t, c=0.3 * t, tm=1000 * t, dm=600 * t))
    d = diagnose(_model(tmp_path, *lines))
    assert d.metrics.steps is not None and d.metrics.steps.p50_s == pytest.approx(0.86, rel=0.01)
    assert "input-bound" in [f.id for f in d.findings[:3]]


@pytest.mark.parametrize("layout", [
    # what the time went on, said after the number (`waited 490ms for data`, `spent 0.49 s on data loading`)
    "Batch {s}/600 done in {tm:.0f}ms, waited {dm:.0f}ms for data, loss=2.483",
    "step {s}: loss 2.4833 | took {t:.3f} s | spent {d:.3f} s on data loading",
    # a step's total under a counting name with the unit in the name; waits named for the loop's own data call
    "it={s} loss=2.483 total_ms={tm:.1f} dataloader_ms={dm:.1f}",
    "step {s}: next_batch {dm:.1f}ms, train_step {tm:.1f}ms, loss 2.4833",
    "[step {s}] loss=2.4833 prep={d:.3f}s step={t:.3f}s",
    "step {s} loss 2.4833 queue_wait {dm:.0f}ms iteration {tm:.0f}ms",
    # a step's word with `_s` glued is its seconds, not a rate (`step/s`)
    "step={s} loss=2.4833 step_s={t:.3f} data_s={d:.3f}",
])
def test_data_waits_said_after_the_number_or_named_for_the_loops_own_calls(tmp_path: Path, layout: str) -> None:
    _input_bound(tmp_path, layout)


@pytest.mark.parametrize("layout", ["it {s} | wall {t:.3f}s | loss 2.4833", "step {s} elapsed {t:.3f}s loss 2.48"])
def test_a_total_by_name_that_falls_between_lines_is_the_steps_time(tmp_path: Path, layout: str) -> None:
    # `wall` and `elapsed` name running totals, which never fall: one that rises and falls from print to print is
    # each step's own time. Its differences gave 0.0001 s steps.
    lines = [layout.format(s=10 * i, t=0.85 * (1 + 0.02 * ((i * 7) % 5 - 2))) for i in range(1, 41)]
    _reads_as(tmp_path, lines, _median([round(0.85 * (1 + 0.02 * ((i * 7) % 5 - 2)), 3) for i in range(1, 41)]),
              rel=1e-3)
    # a running total under the same names stays one: its growth per step times the steps
    totals = [layout.format(s=10 * i, t=8.5 * i) for i in range(1, 41)]
    _reads_as(tmp_path, totals, 0.85, rel=1e-3)


@pytest.mark.parametrize("layout", [
    "Iteration {s} of 600: {r:.3f} iterations per second, loss 2.4833",  # a rate spelled out
    "step {s} | loss 2.4833 | {tm:.0f} ms per step",
    "STEP {s} LOSS 2.4833 SAMPLES/SEC {sps:.1f} SEC/STEP {t:.3f}",  # a rate's name is its unit: not the next one's
])
def test_rates_spelled_out_and_a_rate_named_by_its_unit(tmp_path: Path, layout: str) -> None:
    ts = [0.85 + 0.01 * (i % 3) for i in range(1, 41)]
    lines = [layout.format(s=10 * i, t=t, tm=1000 * t, r=1 / t, sps=256 / t) for i, t in enumerate(ts, 1)]
    _reads_as(tmp_path, lines, 0.86, rel=0.01)


def test_a_headless_stamped_table_with_an_even_counter_is_a_loops_progress(tmp_path: Path) -> None:
    # a custom logger's `f"{datetime.now().isoformat()}\t{step}\t{loss}"`: nothing named, the stamps time the steps
    lines = [f"2026-01-05T10:{wall // 60:02.0f}:{wall % 60:02.0f}\t{step}\t{2.5 - step / 1000:.4f}"
             for step, _, wall in ((10 * i, 0, 8.5 * i) for i in range(1, 41))]
    _reads_as(tmp_path, lines, 0.85, rel=0.07)
    # a monitor's samples (a GPU's index, its utilisation, its memory) count nothing: no stream
    monitor = [f"2026-01-05T10:00:{i:02d}\t0\t{40 + (i * 7) % 13}\t{30000 + (i * 37) % 101}" for i in range(40)]
    assert not [s for s in _model(tmp_path, *monitor).streams if s.step_clock]


@pytest.mark.parametrize("layout", ["Completed {s} of 600 steps in {w:.1f}s (loss 2.4833)",
                                    "[{s}/600 steps in {w:.1f}s] loss 2.4833"])
def test_the_total_of_a_progress_fraction_is_not_the_steps_a_time_covers(tmp_path: Path, layout: str) -> None:
    # `last 10 steps took 8.5s` divides by its 10; `Completed 10 of 600 steps in 8.2s` is the run's elapsed time at
    # step 10 of 600: dividing by 600 gave 1.4 ms steps
    lines = [layout.format(s=step, w=wall) for step, _, wall in _slowing(40)]
    _reads_as(tmp_path, lines, _median([t for _, t, _ in _slowing(40)]), rel=0.02)


def test_a_spaced_slash_between_pairs_is_no_unit(tmp_path: Path) -> None:
    # `time 0.816s / data 0.490s`: `s / data` was read as one unit not understood, so the step time had no unit and
    # the data wait no name; `s / it` is still a unit
    _input_bound(tmp_path, "step {s} / loss 2.4833 / time {t:.3f}s / data {d:.3f}s")
    from diagnose.parsers.vocabulary import unit_of
    assert unit_of(" s / it, loss")[1:] == ("sec_per_iter", 1.0) and unit_of(" GB / s")[1:] == (None, None)


@pytest.mark.parametrize("layout", [
    # a wait said in its words: on a batch or the data, or a GPU starved
    "[{s}] loss=2.4833 t={t:.3f}s waiting_for_batch={d:.3f}s",
    "step {s} loss 2.4833 batch ready after {dm:.0f}ms, step took {tm:.0f}ms",
    "step {s}: loss 2.4833, step {tm:.0f} ms, loader stall {dm:.0f} ms",
    "step {s} loss 2.4833 {t:.3f}s/step, GPU starved for {d:.3f}s",
    # the input's own names for its time
    "Step {s} | input pipeline {dm:.1f} ms | train {tm:.1f} ms | loss 2.4833",
    "step {s} | loss 2.4833 | read {d:.3f}s | compute {t:.3f}s",
    # a dict of times after `name=` (a kwargs-style print): its keys time the parts
    "step {s} loss 2.4833 times={{'data': {d:.3f}, 'forward': 0.210, 'backward': 0.420, 'step': {t:.3f}}}",
])
def test_waits_said_in_words_and_a_dict_of_times(tmp_path: Path, layout: str) -> None:
    _input_bound(tmp_path, layout)
    from diagnose.parsers.vocabulary import normalise, role_of
    # a count of what waited is no wait: `batch_wait` is one, `wait` alone and `stall_count` are none
    assert [role_of(normalise(n)[0]) for n in ("batch_wait", "wait", "stall_count")] == ["data_time", None, None]


@pytest.mark.parametrize("layout", [
    "step {s} | collate {dm:.1f} ms | step {tm:.1f} ms | loss 2.4833",  # the batch assembled from its samples
    "[step {s}] e2e {tm:.0f}ms | dataload {dm:.0f}ms | loss 2.4833",
    "step {s} loss 2.4833 loader.next {dm:.1f}ms train_step {tm:.1f}ms",
    "data_s={d:.3f} train_s={t:.3f} step={s} loss=2.4833",  # timed, `train` is the step's training
])
def test_the_batchs_assembly_and_the_loaders_call_are_data_waits(tmp_path: Path, layout: str) -> None:
    _input_bound(tmp_path, layout)
    from diagnose.parsers.vocabulary import normalise, role_of
    # untimed, `train` names nothing; `train_time` stays the run's
    assert role_of("train", timed=False) is None and role_of(normalise("train_time")[0]) == "cum_time"


@pytest.mark.parametrize("layout", [
    "Iteration {s}: {tm:.1f} ms (input feed {dm:.1f} ms), loss 2.4833",  # the input fed to the step
    "[{s}/600] loss: 2.4833 | step: {t:.2f}s | ingest: {d:.2f}s | 301.2 samples/s",  # a pipeline's ingest
    "E1 B{s}/300  loss=2.483  batch={t:.3f}s  load-wait={d:.3f}s",  # a wait on the load
])
def test_a_feed_an_ingest_and_a_wait_on_the_load_are_data_waits(tmp_path: Path, layout: str) -> None:
    _input_bound(tmp_path, layout)
    from diagnose.parsers.vocabulary import role_of
    # bare, they may count: `ingest 1200` records, `feed 3` queues
    assert role_of("ingest", timed=False) is None and role_of("feed", timed=False) is None


@pytest.mark.parametrize("layout", [
    "it={s} t_iter={t:.3f} t_load={d:.3f} loss=2.4833",  # `t_` says the rest is timed: no unit is printed
    "{s} it | {t:.3f} s | {d:.3f} s in data | loss 2.4833",  # a duration named by the words before the separator
    "#{s} loss 2.483 | sampler {d:.3f}s | step {t:.3f}s",  # the sampler's draw of the batch
    "step {s} | batch time {t:.3f}s | prefetch {d:.3f}s | loss 2.483",  # the batch prefetched
])
def test_a_time_by_its_head_word_and_a_duration_named_after_it_are_data_waits(tmp_path: Path, layout: str) -> None:
    _input_bound(tmp_path, layout)
    from diagnose.parsers.vocabulary import role_of
    # untimed, `load` names nothing (a CPU's load); timed by its head word, it is the data's
    assert role_of("load", timed=False) is None and role_of("t_load") == "data_time"


def test_a_total_after_counted_progress_lines_is_a_summary_not_a_step(tmp_path: Path) -> None:
    # tf_cnn_benchmarks (Horovod #693): every rank prints `step<TAB>images/sec: r +/- e (jitter = j)<TAB>loss ...`,
    # then `total images/sec: r`, the job's whole rate: a summary that advances no counter (issue 30, must 4)
    lines = ["Step\tImg/sec\ttotal_loss\ttop_1_accuracy\ttop_5_accuracy"]
    lines += [f"{s}\timages/sec: {152.1 + (s % 3) / 10:.1f} +/- 0.2 (jitter = 2.1)\t{2.5 - s / 1000:.3f}\t0.953\t1.000"
              for s in range(10, 310, 10)]
    lines += ["-" * 64, "total images/sec: 608.72", "-" * 64]  # four GPUs' rate
    m = _model(tmp_path, *lines)
    steps = m.frames["steps"]
    assert steps.height == 30 and steps["global_step"].null_count() == 0
    assert steps["samples_per_sec"].max() < 153  # the total's 608.72 is no step's rate
    summary = m.frames["events"].filter(pl.col("kind") == "summary")
    assert summary["line"].to_list() == [len(lines) - 1]


@pytest.mark.parametrize("postfix", ["loss={l}, data={d:.3f}s", "data_time={dm:.0f}ms, loss={l}",
                                     "loss={l}, io={d:.3f}s", "loss={l}, Data={dm:.0f}MS", "data={d:.3f} sec"])
def test_a_data_wait_in_a_bars_postfix(tmp_path: Path, postfix: str) -> None:
    # a loop's own bar: `pbar.set_postfix(loss=..., data=...)` after tqdm's rate
    lines = []
    for i, (step, t, _) in enumerate(_slowing(40), start=1):
        d = 0.6 * 0.85
        pf = postfix.format(l=f"{2.5 - i / 100:.3f}", d=d, dm=1000 * d)
        lines.append(f"train: {100 * step // 400:3d}%|#         | {step}/400 [00:{i:02d}<05:00, {1 / 0.85:.2f}it/s, {pf}]")
    steps = _model(tmp_path, *lines).frames["steps"]
    assert steps.height == 40 and steps["data_time_s"].to_list() == pytest.approx([0.51] * 40)
    if "io=" in postfix:  # `io` bare may count anything: no wait without its unit
        bare = _model(tmp_path, *(line.replace("s]", "]") for line in lines)).frames["steps"]
        assert bare["data_time_s"].null_count() == 40
