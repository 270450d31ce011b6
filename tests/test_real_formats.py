"""Formats that real runs print beyond DeepSpeed's and the HF Trainer's own: Megatron, DeepSpeed's pipeline engine and
DeepSpeed-Chat, plain PyTorch / elastic / Lightning topology lines, nvidia-smi, trainers' own progress lines, launch
commands inside logs. The lines here are written in the project in the shapes those tools print (the real instances
are in ../shared/corpus/real, which test_real_corpus.py reads); the facts read from them are checked one by one."""
from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest

from diagnose.engine import diagnose
from diagnose.parsers import parse


def _model(tmp_path: Path, *lines: str, name: str = "x.log"):
    p = tmp_path / name
    p.write_text("\n".join(lines) + "\n")
    return parse([str(p)])


MEGATRON = [
    "using world size: 32, data-parallel-size: 2, tensor-model-parallel size: 4, pipeline-model-parallel size: 4 ",
    "------------------------ arguments ------------------------",
    "  bf16 ............................................ True",
    "  fp16 ............................................ False",
    "  global_batch_size ............................... 256",
    "  hidden_size ..................................... 4096",
    "  micro_batch_size ................................ 2",
    "  num_attention_heads ............................. 32",
    "  num_layers ...................................... 48",
    "  seq_length ...................................... 2048",
    "  world_size ...................................... 32",
    "-------------------- end of arguments ---------------------",
    *(f" iteration {i:>8}/  100000 | consumed samples: {i * 256:>12} | elapsed time per iteration (ms): "
      f"{1500.0 + i:.1f} | learning rate: 1.000E-04 | global batch size:   256 | lm loss: 2.5{i:02d}E+00 | "
      f"loss scale: 1.0 | grad norm: 0.300 | number of skipped iterations:   {1 if i == 30 else 0} | "
      f"number of nan iterations:   0 | samples per second: {256 / (1.5 + i / 1000):.3f} | TFLOPs: 150.00 |"
      for i in range(10, 60, 10)),
    "time (ms) | forward-compute: 400.00 | forward-recv: 100.00 | backward-compute: 800.00 | backward-send: 50.00 "
    "| backward-params-all-reduce: 120.00 | backward-embedding-all-reduce: 5.00 | optimizer: 30.00 "
    "| batch-generator: 2.00",
    "[Rank 0] (after 10 iterations) memory (MB) | allocated: 20480.0 | max allocated: 30720.0 | reserved: 40960.0 "
    "| max reserved: 40960.0",
]


def test_megatron_iterations_timers_memory_and_layout(tmp_path: Path) -> None:
    m = _model(tmp_path, *MEGATRON)
    steps = m.frames["steps"].filter(pl.col("origin") == "megatron_iter")
    assert steps["global_step"].to_list() == [10, 20, 30, 40, 50]
    assert steps["total_steps"][0] == 100000
    assert steps["step_time_s"].to_list() == pytest.approx([1.51, 1.52, 1.53, 1.54, 1.55])
    assert steps["loss"][0] == pytest.approx(2.510) and steps["tflops"][0] == 150.0
    assert steps["skipped_iters"].to_list() == [0, 0, 1, 0, 0] and steps["global_batch"][0] == 256
    t = m.frames["timers"].row(0, named=True)
    # backward-compute is compute only; the all-reduces are timed apart and bwd is their sum (as DeepSpeed's bwd)
    assert (t["fwd"], t["bwd_inner"], t["bwd_allreduce"], t["step"]) == (400.0, 800.0, 125.0, 30.0)
    assert t["bwd"] == 925.0 and t["pipe_comm"] == 150.0 and t["data"] == 2.0
    mem = m.frames["memory"].row(0, named=True)
    assert (mem["ma_gb"], mem["max_ma_gb"], mem["ca_gb"], mem["rank"]) == (20.0, 30.0, 40.0, 0)
    f = m.facts
    assert (f.world_size, f.tensor_parallel, f.pipeline_parallel, f.data_parallel) == (32, 4, 4, 2)
    assert (f.micro_batch_per_gpu, f.train_batch_size, f.seq_len, f.hidden_size, f.num_layers, f.num_heads) == \
        (2, 256, 2048, 4096, 48, 32)
    assert f.precision == "bf16" and f.evidence["world_size"].line == 1
    d = diagnose(m)
    assert d.metrics.steps is not None and d.metrics.steps.source == "printed"
    assert d.metrics.breakdown is not None and d.metrics.breakdown.shares["pipeline_p2p"] == pytest.approx(
        150 / (400 + 925 + 30 + 150))


def test_deepspeed_pipeline_and_chat_steps(tmp_path: Path) -> None:
    m = _model(
        tmp_path,
        "steps: 10 loss: 8.4555 iter time (s): 1.464 samples/sec: 21.860",
        "steps: 20 loss: 8.4218 iter time (s): 1.456 samples/sec: 21.975",
        "|E2E latency=7.99s |Gather latency=0.00s (0.00%) |Generate time=5.26s (65.81%) |Training time=2.52s "
        "(31.46%) |Others=0.22 (2.73%)|CurSamplesPerSec=8.01 |AvgSamplesPerSec=8.01",
        "Model Parameters: 1.316 B, Latency: 0.88s, TFLOPs: 9.1, Samples/sec: 9.09, Time/seq 0.11s, "
        "Batch Size: 8, Sequence Length: 512",
        "rank=0 time (ms) | train_batch: 9000.00 | batch_input: 10.00 | forward: 1000.00 | pipe_send_output: 500.00 "
        "| comms: 4000.00 | pipe_recv_grad: 1500.00 | backward: 2000.00 | reduce_tied_grads: 1.00 "
        "| reduce_grads: 2999.00 | step: 1000.00",
    )
    s = m.frames["steps"]
    pipe = s.filter(pl.col("origin") == "ds_pipe_step")
    assert pipe["global_step"].to_list() == [10, 20] and pipe["step_time_s"].to_list() == [1.464, 1.456]
    rlhf = s.filter(pl.col("origin") == "dschat_rlhf_step").row(0, named=True)
    assert (rlhf["step_time_s"], rlhf["generate_time_s"], rlhf["train_time_s"], rlhf["samples_per_sec"]) == \
        (7.99, 5.26, 2.52, 8.01)
    chat = s.filter(pl.col("origin") == "dschat_step").row(0, named=True)
    assert (chat["step_time_s"], chat["tflops"], chat["samples_per_sec"]) == (0.88, 9.1, 9.09)
    t = m.frames["timers"].row(0, named=True)
    assert (t["fwd"], t["bwd_inner"], t["bwd_allreduce"], t["pipe_comm"], t["data"]) == \
        (1000.0, 2000.0, 3000.0, 2000.0, 10.0)


PROGRESS = [
    ("iter 120: loss 3.2000, time 350.20ms, mfu 41.00%", 120, 0.3502),
    ("step 00004/21400 (0.02%) | loss: 8.893647 | lrm: 1.00 | dt: 989.44ms | tok/sec: 529,882 | mfu: 74.13 | "
     "total time: 0.00m", 4, 0.98944),
    ("step 100 | dt 0.41s | loss 2.1", 100, 0.41),
    ("2020-01-01 10:00:00,000 - mmdet - INFO - Epoch [1][50/500]\tlr: 0.02000, eta: 1:00:00, time: 0.512, "
     "data_time: 0.301, memory: 2677, loss: 1.2", 50, 0.512),
    ("120\timages/sec: 37.5 +/- 0.1 (jitter = 0.6)\t0.596", 120, None),
    ("Trained 900 steps, 0:15:00 elapsed (92.1% computing time)", None, 1.0),
]


@pytest.mark.parametrize("line, step, seconds", PROGRESS)
def test_general_progress_reader(tmp_path: Path, line: str, step: int | None, seconds: float | None) -> None:
    s = _model(tmp_path, line).frames["steps"]
    assert s.height == 1 and s["origin"][0] == "progress"
    assert s["global_step"][0] == step
    assert s["step_time_s"][0] == (pytest.approx(seconds) if seconds is not None else None)


def test_progress_reader_details_and_what_it_leaves(tmp_path: Path) -> None:
    m = _model(tmp_path, PROGRESS[1][0], PROGRESS[3][0], PROGRESS[4][0],
               "step 0: train loss 10.9886, val loss 10.9897",  # an eval line: a counter, no duration
               "Loading checkpoint shards: step 1")
    s = m.frames["steps"]
    assert s.height == 3
    assert s["tokens_per_sec"][0] == 529882.0 and s["total_steps"][0] == 21400
    assert s["data_time_s"][1] == pytest.approx(0.301) and s["total_steps"][1] == 500
    assert s["samples_per_sec"][2] == 37.5


def test_counter_lines_with_timestamps_give_step_times(tmp_path: Path) -> None:
    lines = [f"2021-09-20 18:{59 + i // 6:02d}:{(i * 10) % 60:02d},000 INFO [train.py:506] (0/3) Epoch 0, batch "
             f"{i * 10}, batch avg loss 3.0" for i in range(6)]
    m = _model(tmp_path, *lines)
    d = diagnose(m)
    assert d.metrics.steps is not None and d.metrics.steps.p50_s == pytest.approx(1.0)


def test_a_clock_time_alone_that_crosses_midnight_times_the_steps(tmp_path: Path) -> None:
    """`HH:MM:SS | step N | loss` with no date (a `%H:%M:%S` datefmt, rich's log time): the stamps time the steps,
    and past midnight the day rolls over instead of a step of minus 24 hours; the goodput account spans the run."""
    import datetime as dt

    t, lines = dt.datetime(2026, 1, 1, 23, 59, 40), ["Starting training"]
    for i in range(1, 21):
        lines.append(f"{t:%H:%M:%S} | step {i} | loss {3.0 - i * 0.01:.3f}")
        t += dt.timedelta(seconds=30 if i == 12 else 2)
    d = diagnose(_model(tmp_path, *lines))
    assert d.metrics.steps is not None and d.metrics.steps.p50_s == pytest.approx(2.0)
    assert d.metrics.steps.n == 18 and d.metrics.steps.max_s == pytest.approx(30.0)  # step 13, after midnight
    assert d.goodput is not None and d.goodput.span_s == pytest.approx(2 * 18 + 30)


def test_glog_and_epoch_second_stamps_that_open_a_line(tmp_path: Path) -> None:
    glog = [f"I1202 10:00:{2 * i:02d}.250000 1234 train.py:88] step {i}, loss 2.5" for i in range(1, 9)]
    d = diagnose(_model(tmp_path, *glog, name="glog.log"))
    assert d.metrics.steps is not None and d.metrics.steps.p50_s == pytest.approx(2.0)
    epoch = [f"{1701234567 + 3 * i}.5 step {i} loss 2.5" for i in range(1, 9)]
    d = diagnose(_model(tmp_path, *epoch, name="epoch.log"))
    assert d.metrics.steps is not None and d.metrics.steps.p50_s == pytest.approx(3.0)
    # The same behind torchrun's tee prefix, which has no space after it (`[default0]:I1202 ...`).
    teed = [f"[default0]:{line}" for line in glog]
    d = diagnose(_model(tmp_path, *teed, name="teed.log"))
    assert d.metrics.steps is not None and d.metrics.steps.p50_s == pytest.approx(2.0)
    # A count of ten digits after a name is no stamp: `tokens: 1701234567` opens no line.
    from diagnose.parsers.stamps import leading_stamp
    assert leading_stamp(pl.Series(["tokens: 1701234567 seen", "12:61:00 x", "100:00:00 x"])).null_count() == 3


def test_month_name_stamps_and_epoch_milliseconds(tmp_path: Path) -> None:
    """syslog's and journald's `Jan  5 10:00:08 host prog[pid]: ` (no year), C's ctime `Mon Jan  5 10:00:08 2026` (a
    job script's `date`), and epoch milliseconds opening a line, also behind torchrun's tee prefix: each times the
    steps where the lines print no duration."""
    import datetime as dt

    t0 = dt.datetime(2026, 1, 5, 10, 0, 0)
    at = [t0 + dt.timedelta(seconds=2.5 * i) for i in range(1, 11)]
    shapes = {
        "syslog": [f"{t:%b} {t.day:2d} {t:%H:%M:%S} gpu-node-1 python3[12345]: step {i} loss 2.5"
                   for i, t in enumerate(at, 1)],
        "ctime": [f"{t:%a %b} {t.day:2d} {t:%H:%M:%S %Y}: step {i} loss 2.5" for i, t in enumerate(at, 1)],
        "epoch_ms": [f"{int(t.timestamp() * 1000)} step {i} loss 2.5" for i, t in enumerate(at, 1)],
    }
    shapes["epoch_ms_teed"] = [f"[default0]:{line}" for line in shapes["epoch_ms"]]
    assert shapes["syslog"][0].startswith("Jan  5 10:00:02 ") and shapes["ctime"][0].startswith("Mon Jan  5 ")
    for name, lines in shapes.items():
        m = _model(tmp_path, *lines, name=f"{name}.log")
        d = diagnose(m)
        assert d.metrics.steps is not None and d.metrics.steps.p50_s == pytest.approx(2.5), name
    from diagnose.parsers.stamps import find_stamp
    found = find_stamp(pl.Series(["1:M 05 Jan 2026 10:04:15.600 * Background saving", "May be slow: 12 10:00:00",
                                  "Jan  5 10:00:08.1234 host kernel: a fraction of four digits is no year"]))
    assert found.to_list() == [dt.datetime(2026, 1, 5, 10, 4, 15, 600000), None,
                               dt.datetime(2000, 1, 5, 10, 0, 8, 123000)]  # stamps are kept to the millisecond


def test_topology_lines_of_plain_pytorch_elastic_mpi_and_lightning(tmp_path: Path) -> None:
    barrier = _model(tmp_path, *(f"[2023-05-15 14:14:38,444][torch.distributed.distributed_c10d][INFO] - Rank {r}: "
                                 "Completed store-based barrier for key:store_based_barrier_key:1 with 24 nodes."
                                 for r in range(3)))
    assert barrier.facts.world_size == 24
    mpi = _model(tmp_path, *(f"[2023-05-15 14:37:24,243] [INFO] [comm.py:656:mpi_discovery] Discovered MPI settings "
                             f"of world_rank={r}, local_rank={r % 4}, world_size=12, master_addr=10.0.0.1, "
                             "master_port=29500" for r in range(12)), name="mpi.log")
    assert (mpi.facts.world_size, mpi.facts.gpus_per_node, mpi.facts.nodes) == (12, 4, 3)
    elastic = _model(tmp_path, "  group_world_size=2", "  local_world_size=8", "  global_world_sizes=[16, 16, 16]",
                     name="elastic.log")
    assert (elastic.facts.world_size, elastic.facts.nodes, elastic.facts.gpus_per_node) == (16, 2, 8)
    lightning = _model(tmp_path, "Initializing distributed: GLOBAL_RANK: 0, MEMBER: 1/6", name="pl.log")
    assert lightning.facts.world_size == 6


def test_largest_communicator_is_the_world(tmp_path: Path) -> None:
    lines = [f"node{n}:100:200 [{d}] NCCL INFO comm 0x1 rank {r} nranks 8 cudaDev {d} busId 1000 - Init COMPLETE"
             for n in range(2) for d in range(4) for r in [n * 4 + d]]
    lines += [f"node0:100:200 [{d}] NCCL INFO comm 0x2 rank {d} nranks 4 cudaDev {d} busId 1000 - Init COMPLETE"
              for d in range(4)]
    f = _model(tmp_path, *lines[::-1]).facts  # the sub-communicator first
    assert f.world_size == 8 and f.nodes == 2


def test_gpu_from_nvidia_smi_table(tmp_path: Path) -> None:
    m = _model(
        tmp_path,
        "+-----------------------------------------------------------------------------+",
        "| NVIDIA-SMI 460.32.03    Driver Version: 460.32.03    CUDA Version: 11.2     |",
        "|   0  Tesla V100-SXM2...  On   | 00000000:1A:00.0 Off |                    0 |",
        "| N/A   34C    P0    41W / 300W |      0MiB / 32510MiB |      0%      Default |",
        "GPU 1: NVIDIA A100-SXM4-80GB (UUID: GPU-1234)",
    )
    f = m.facts
    assert f.gpu_name == "NVIDIA A100-SXM4-80GB"  # the full name beats the table's cut one (hardware tier)
    assert f.gpu_memory_gb == pytest.approx(31.7)
    # the report says the device it read, and that the count is not known (one host's table is not the job's count)
    from diagnose.engine import diagnose
    from diagnose.reports import document, markdown
    text = markdown.render(document.build(m, diagnose(m)))
    assert "| GPUs | NVIDIA A100-SXM4-80GB: count not in the logs |" in text


# nvidia-smi as pasted into a "more GPUs are no faster" thread (deepmodeling/deepmd-kit#1218): the borders lost on the
# first row and on the process rows, one process on both GPUs, the second GPU idle
SMI_ONE_PROCESS = [
    " 0  NVIDIA GeForce ...  Off  | 00000000:01:00.0 Off |                  N/A |",
    "| 35%   59C    P2   105W / 196W |   2360MiB /  4041MiB |     99%      Default |",
    "|   1  NVIDIA GeForce ...  Off  | 00000000:03:00.0 Off |                  N/A |",
    "|  0%   35C    P8    15W / 196W |    194MiB /  4043MiB |      0%      Default |",
    "",
    " 0   N/A  N/A     12238      C   ...a3/envs/deepmd/bin/python     2333MiB ",
    " 1   N/A  N/A     12238      C   ...a3/envs/deepmd/bin/python      189MiB ",
]


@pytest.mark.parametrize("glued", ["", "Map: 100%|██████████| 1000/1000 [00:01<00:00, 912.35 examples/s]"])
def test_one_process_holding_every_gpu_nvidia_smi_lists_while_one_idles(tmp_path: Path, glued: str) -> None:
    # (and with a progress bar printed without its newline before a process row)
    rows = [glued + row if i == 5 else row for i, row in enumerate(SMI_ONE_PROCESS)]
    m = _model(tmp_path, *rows)
    assert m.facts.smi is not None
    assert m.facts.smi.usage == ((2360, 99), (194, 0)) and m.facts.smi.processes == ((0, 12238), (1, 12238))
    assert m.facts.gpus_per_node is None  # a process on two GPUs counts none: the job's GPUs are not known
    top = diagnose(m).findings[0]
    assert top.id == "world-size-mismatch" and "PID 12238" in top.title and top.data["idle_gpus"] == 1


@pytest.mark.parametrize("rows, why", [
    # one process a GPU (DDP), the second idle a moment: no single process
    ([SMI_ONE_PROCESS[1], SMI_ONE_PROCESS[3], " 0   N/A  N/A     12238      C   python     2333MiB ",
      " 1   N/A  N/A     12239      C   python      189MiB "], "a process a GPU"),
    # one process driving both GPUs, both busy (DataParallel): nothing idles
    (["|   2360MiB /  4041MiB |     99%      Default |", "|   2300MiB /  4043MiB |     97%      Default |",
      *SMI_ONE_PROCESS[5:]], "both busy"),
    # the job says it ran with two processes itself
    ([*SMI_ONE_PROCESS, "Number of processes: 2, world size: 2"], "the job's own world size"),
])
def test_nvidia_smi_is_no_mismatch_where_it_shows_none(tmp_path: Path, rows: list[str], why: str) -> None:
    m = _model(tmp_path, *rows)
    assert m.facts.smi is not None, why
    assert "world-size-mismatch" not in [f.id for f in diagnose(m).findings], why


def test_zero_stage_and_offload_from_banners_and_command_lines(tmp_path: Path) -> None:
    m = _model(tmp_path,
               "[2021-05-25 06:37:59,217] [INFO] [utils.py:588:see_memory_usage] Stage 3 initialize beginning")
    assert m.facts.zero_stage == 3
    chat = _model(tmp_path, "cmd = deepspeed main.py --model_name_or_path facebook/opt-1.3b --zero_stage 2 --offload "
                            "--per_device_train_batch_size 8 --max_seq_len 512 --deepspeed", name="chat.log")
    f = chat.facts
    assert (f.zero_stage, f.offload_optimizer, f.micro_batch_per_gpu, f.seq_len) == (2, "cpu", 8, 512)
    assert f.evidence["zero_stage"].origin == "ds_cmd"


def test_log_that_opens_with_its_launch_command_is_a_log(tmp_path: Path) -> None:
    lines = ["export NCCL_DEBUG=info",
             "srun --jobid $SLURM_JOBID bash -c 'python -m torch.distributed.launch --nnodes 2 --nproc_per_node=4 "
             "--node_rank $SLURM_PROCID bench.py'"]
    lines += [f"node{n}:100:200 [{d}] NCCL INFO comm 0x1 rank {n * 4 + d} nranks 8 cudaDev {d} busId 1000 - "
              "Init COMPLETE" for n in range(2) for d in range(4)]
    m = _model(tmp_path, *lines, name="bench.txt")
    assert [s.kind for s in m.sources] == ["log"]
    f = m.facts
    assert (f.world_size, f.nodes, f.gpus_per_node) == (8, 2, 4)
    assert f.env["NCCL_DEBUG"].value == "info"
    script = _model(tmp_path, "#!/bin/bash", "export NCCL_DEBUG=info", "torchrun --nproc_per_node 4 train.py",
                    name="run.sh")
    assert [s.kind for s in script.sources] == ["launch_script"]


def test_traced_launcher_variables_are_expanded(tmp_path: Path) -> None:
    m = _model(
        tmp_path,
        "+ export 'LAUNCHER=python -u -m torch.distributed.launch     --nproc_per_node 4     --nnodes 4     '",
        "+ LAUNCHER='python -u -m torch.distributed.launch     --nproc_per_node 4     --nnodes 4     '",
        "+ srun --jobid 1832555 bash -c '$LAUNCHER --node_rank $SLURM_PROCID train.py'",
        "[2021-05-25 06:38:26,359] [INFO] [config.py:752:print]   world_size ................... 16",
    )
    f = m.facts
    assert (f.world_size, f.nodes, f.gpus_per_node) == (16, 4, 4)
    assert f.evidence["nodes"].origin == "log_launch_command"


def test_launch_flags_override_the_accelerate_yaml_without_a_mismatch(tmp_path: Path) -> None:
    (tmp_path / "cfg.yaml").write_text("compute_environment: LOCAL_MACHINE\ndistributed_type: MULTI_GPU\n"
                                       "num_machines: 1\nnum_processes: 4\nmixed_precision: bf16\n")
    (tmp_path / "launch.sh").write_text("#!/bin/bash\naccelerate launch --config_file cfg.yaml --num_machines 4 "
                                        "--num_processes 16 --machine_rank $RANK train.py\n")
    (tmp_path / "train.log").write_text("Distributed environment: MULTI_GPU  Backend: nccl\nNum processes: 16\n"
                                        "Process index: 0\n")
    m = parse([str(tmp_path)])
    assert (m.facts.world_size, m.facts.nodes) == (16, 4)
    assert "world-size-mismatch" not in [x.id for x in diagnose(m).findings]


@pytest.mark.parametrize("sbatch, log, fires", [
    ("#SBATCH --nodes=1\n#SBATCH --ntasks=1\n#SBATCH --gres=gpu:3\nsrun python3 train.py\n",
     "trainer.world_size=1\n", True),  # world size 1 on a 3-GPU allocation
    ("#SBATCH --nodes=2\n#SBATCH --gres=gpu:8\nsrun torchrun --nnodes 2 --nproc_per_node 8 train.py\n",
     "[2023-08-20 07:58:12,783] [INFO] [launch.py:163:main] dist_world_size=8\n", True),  # 8 processes on 2 x 8
    ("#SBATCH --nodes=2\n#SBATCH --gres=gpu:8\nsrun torchrun --nnodes 2 --nproc_per_node 8 train.py\n",
     "[2023-08-20 07:58:12,783] [INFO] [launch.py:163:main] dist_world_size=16\n", False),
])
def test_world_size_mismatch_compares_what_ran_with_what_was_launched_and_allocated(
        tmp_path: Path, sbatch: str, log: str, fires: bool) -> None:
    (tmp_path / "job.sbatch").write_text("#!/bin/bash\n" + sbatch)
    (tmp_path / "job.log").write_text(log)
    ids = [x.id for x in diagnose(parse([str(tmp_path)])).findings]
    assert ("world-size-mismatch" in ids) is fires


def test_microstep_timers_when_the_global_ones_are_zero(tmp_path: Path) -> None:
    lines = []
    for _ in range(6):
        lines.append("[Rank 0] time (ms) | fwd_microstep: 10.00 | bwd_microstep: 30.00 | bwd_inner_microstep: 20.00 | "
                     "bwd_allreduce_microstep: 10.00 | step_microstep: 5.00")
        lines.append("[Rank 0] time (ms) | fwd: 0.00 | bwd: 0.00 | bwd_inner: 0.00 | bwd_allreduce: 0.00 | step: 0.00")
    br = diagnose(_model(tmp_path, *lines)).metrics.breakdown
    assert br is not None and (br.fwd_ms, br.bwd_allreduce_ms, br.step_ms) == (10.0, 10.0, 5.0)


def test_ms_swift_and_llamafactory_dicts(tmp_path: Path) -> None:
    s = _model(tmp_path,
               "{'loss': 1.25, 'grad_norm': 0.5, 'learning_rate': 1e-05, 'epoch': 0.1, 'train_speed(s/it)': 2.5, "
               "'memory(GiB)': 20.5}",
               "{'loss': 1.2, 'acc': 0.7, 'learning_rate': 1e-05, 'epoch': 0.2, 'global_step/max_steps': '20/100', "
               "'percentage': '20.00%', 'memory(GiB)': 21.0, 'train_speed(iter/s)': 0.5}").frames["steps"]
    assert s["step_time_s"].to_list() == [2.5, 2.0]
    assert s["global_step"][1] == 20 and s["total_steps"][1] == 100 and s["max_mem_alloc_gb"][1] == 21.0


def test_one_unreadable_input_is_skipped_not_fatal(tmp_path: Path) -> None:
    good = tmp_path / "good.log"
    good.write_text(PROGRESS[0][0] + "\n")
    empty = tmp_path / "empty.log"
    empty.write_text("")
    binary = tmp_path / "model.bin"
    binary.write_bytes(bytes(range(256)) * 64)
    prose = tmp_path / "notes.txt"
    prose.write_text("nothing to see\n")  # text: read, and said to hold nothing recognised (issue 30, must 8)
    m = parse([str(good), str(empty), str(binary), str(prose)])
    assert [s.name for s in m.sources] == [str(good), str(prose)]
    assert m.sources[1].note == "nothing recognised in 1 lines"
    assert {s.name: s.why.split(":")[0] for s in m.skipped} == {
        str(empty): "empty", str(binary): "binary file, not a log, config or launch script"}


@pytest.mark.slow
def test_a_folder_of_two_runs_is_reported_as_two_runs(tmp_path: Path) -> None:
    import json
    import shutil

    from diagnose.parsers.sources import find_runs
    from tests.conftest import SAMPLES, run_cli

    for name in ("ds_zero0", "ds_zero2_bf16"):
        shutil.copytree(SAMPLES / name, tmp_path / name)
    runs = find_runs(tmp_path)
    assert [Path(r.name).name for r in runs] == ["ds_zero0", "ds_zero2_bf16"]
    proc = run_cli("report", str(tmp_path), "--format", "json")
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert [Path(r["name"]).name for r in doc["runs"]] == ["ds_zero0", "ds_zero2_bf16"]
    assert [r["run"]["zero_stage"] for r in doc["runs"]] == [0, 2]
    assert "2 runs found" in proc.stderr
    md = run_cli("report", str(tmp_path), "--format", "md").stdout
    assert md.count("# Run ") == 2 and "# Run 2 of 2: `" in md
    one = run_cli("report", str(tmp_path), "--run", "ds_zero2_bf16", "--format", "json")
    assert json.loads(one.stdout)["run"]["zero_stage"] == 2


def test_job_ids_in_one_folder_are_separate_runs(tmp_path: Path) -> None:
    from diagnose.parsers.sources import find_runs

    for job in ("1234", "1240"):
        (tmp_path / f"slurm-{job}.out").write_text(PROGRESS[0][0] + "\n")
    (tmp_path / "ds_config.json").write_text('{"train_micro_batch_size_per_gpu": 1, "zero_optimization": {"stage": 1}}')
    runs = find_runs(tmp_path)
    assert [Path(r.name).name for r in runs] == ["job 1234", "job 1240"]
    assert all(str(tmp_path / "ds_config.json") in r.sources for r in runs)


def test_a_message_every_rank_prints_counts_once_per_step(tmp_path: Path) -> None:
    lines = []
    for scale in (65536, 32768, 16384):
        for r in range(4):
            lines.append(f"{r}: [2023-04-18 01:46:53,259] [INFO] [loss_scaler.py:181:update_scale] [deepspeed] "
                         f"OVERFLOW! Rank {r} Skipping step. Attempted loss scale: {scale}, reducing to {scale // 2}")
    for r in range(4):
        lines.append(f"{r}: [2023-04-18 01:47:00,000] [WARNING] [stage3.py:1850:step] 3 pytorch allocator cache "
                     "flushes since last step. this happens when there is high memory pressure")
    ev = _model(tmp_path, *lines).frames["events"]
    assert ev.filter(pl.col("kind") == "overflow")["value_from"].to_list() == [65536.0, 32768.0, 16384.0]
    assert ev.filter(pl.col("kind") == "allocator_flush")["count"].to_list() == [3]


def test_wandb_run_dir_with_only_metadata_summary_and_config(tmp_path: Path) -> None:
    import json

    files = tmp_path / "run-20260101_000000-abc123" / "files"
    files.mkdir(parents=True)
    (files / "wandb-metadata.json").write_text(json.dumps(
        {"host": "node1", "gpu": "NVIDIA A100-SXM4-80GB", "gpu_count": 8, "cuda_version": "12.4",
         "gpu_nvidia": [{"name": "NVIDIA A100-SXM4-80GB", "memoryTotal": "85899345920"}]}))
    (files / "wandb-summary.json").write_text('{"_runtime": 3600, "_step": 1000}')
    (files / "config.yaml").write_text("wandb_version: 1\nper_device_train_batch_size:\n  value: 4\n"
                                       "bf16:\n  value: true\nfp16:\n  value: false\n")
    m = parse([str(files.parent)])
    f = m.facts
    assert (f.gpu_name, f.gpus_per_node, f.gpu_memory_gb, f.precision, f.micro_batch_per_gpu) == \
        ("NVIDIA A100-SXM4-80GB", 8, 80.0, "bf16", 4)
    assert m.frames["steps"].height == 0 and "no step data" in m.sources[0].note


def test_comms_logger_lines_with_any_spacing_and_prefixed_tqdm(tmp_path: Path) -> None:
    m = _model(
        tmp_path,
        "[2023-05-15 14:37:35,318] [INFO] [logging.py:96:log_dist] [Rank 0] rank=0 | comm op: broadcast | time (ms): "
        "3907.38 | msg size: 576.0 B | algbw (Gbps): 0.00  | busbw (Gbps): 0.00 ",
        "[Rank 0] rank=0 |comm op: all_reduce|time (ms): 8.50|msg size: 64.0 MB|algbw (Gbps): 63.2|busbw (Gbps): 118.5",
        "Train:   3%|▎         | 30/1000 [00:10<05:00,  3.20it/s]",
    )
    comms = m.frames["comms"]
    assert comms["op"].to_list() == ["broadcast", "all_reduce"] and comms["busbw_gbps"][1] == 118.5
    tq = m.frames["steps"].filter(pl.col("origin") == "tqdm")
    assert tq["global_step"].to_list() == [30] and tq["step_time_s"][0] == pytest.approx(1 / 3.2)


def test_device_line_names_the_gpu(tmp_path: Path) -> None:
    f = _model(tmp_path, "Device: NVIDIA H100 80GB HBM3").facts
    assert f.gpu_name == "NVIDIA H100 80GB HBM3"


def test_launch_flags_alone_override_the_yaml(tmp_path: Path) -> None:
    (tmp_path / "cfg.yaml").write_text("compute_environment: LOCAL_MACHINE\ndistributed_type: MULTI_GPU\n"
                                       "num_machines: 1\nnum_processes: 4\n")
    (tmp_path / "launch.sh").write_text("#!/bin/bash\naccelerate launch --config_file cfg.yaml --num_machines 4 "
                                        "--num_processes 16 train.py\n")
    m = parse([str(tmp_path / "cfg.yaml"), str(tmp_path / "launch.sh")])
    assert (m.facts.world_size, m.facts.nodes, m.facts.gpus_per_node) == (16, 4, 4)
    assert m.facts.evidence["world_size"].origin == "launch_script"
    assert "world-size-mismatch" not in [x.id for x in diagnose(m).findings]


def test_deepspeed_config_pasted_as_python_is_read_as_data(tmp_path: Path) -> None:
    cfg = tmp_path / "ds_config.py.txt"
    cfg.write_text('ds_config = {\n    "train_micro_batch_size_per_gpu": batch_size,\n    "fp16": {"enabled": True},\n'
                   '    "zero_optimization": {"stage": 3, "offload_optimizer": {"device": "cpu", "pin_memory": True}},\n'
                   '    "gradient_clipping": -1.0,\n}\n')
    m = parse([str(cfg)])
    f = m.facts
    assert [s.kind for s in m.sources] == ["ds_config"]
    assert (f.zero_stage, f.offload_optimizer, f.precision, f.micro_batch_per_gpu) == (3, "cpu", "fp16", None)
    assert f.ds_config["gradient_clipping"] == -1.0
    code = tmp_path / "evil.py.txt"
    code.write_text('ds_config = {"fp16": __import__("os").system("echo pwned")}\n')  # never run: read as unknown
    assert parse([str(code), str(cfg)]).facts.ds_config.get("fp16", "x") in (None, "x")


def test_a_bare_time_is_not_a_step(tmp_path: Path) -> None:
    p = tmp_path / "x.log"
    p.write_text("Loading checkpoint, time: 12.5\neval time: 3.2 s\n" + PROGRESS[0][0] + "\n")
    s = parse([str(p)]).frames["steps"]
    assert s["global_step"].to_list() == [120]  # only the line with a counter


@pytest.mark.parametrize("lines, want", [
    # SlowFast / detectron2 print their yacs config as one dict: GPUs per machine and machines
    (["[06/20 18:17:31][INFO] train_net.py:  537: CfgNode({'NUM_GPUS': 1, 'NUM_SHARDS': 1, 'SHARD_ID': 0})"],
     {"world_size": 1, "nodes": 1, "gpus_per_node": 1}),
    # Hydra overrides on verl's command line
    (["python3 -m verl.trainer.main_ppo data.train_batch_size=1024 trainer.n_gpus_per_node=8 trainer.nnodes=2"],
     {"world_size": 16, "nodes": 2, "gpus_per_node": 8}),
    # a Markdown table of settings in a thread
    (["| setting | value |", "|---|---|", "| num_nodes | 2 |", "| num_gpus | 4 |"],
     {"world_size": 8, "nodes": 2, "gpus_per_node": 4}),
    # a blockquoted vertical list: global and device batch
    (["> global_train_batch_size: 512", "> device_train_batch_size: 64", "> gradient_accumulation_steps: 2"],
     {"train_batch_size": 512, "micro_batch_per_gpu": 64, "grad_accum_steps": 2}),
    # a flag, and a Markdown list
    (["python train.py --devices 1 --num_nodes=1"], {"world_size": 1, "gpus_per_node": 1, "nodes": 1}),
    (["- zero_stage: 2", "- per_device_train_batch_size: 8"], {"zero_stage": 2, "micro_batch_per_gpu": 8}),
    # the names written as words, and dashed flags
    (["- ZeRO stage: 3", "- gradient accumulation: 8", "- micro batch size per GPU: 4"],
     {"zero_stage": 3, "grad_accum_steps": 8, "micro_batch_per_gpu": 4}),
    (["deepspeed train.py --num-gpus 4 --num-nodes 2"], {"world_size": 8, "gpus_per_node": 4, "nodes": 2}),
    # LightningCLI's dotted flags
    (["python main.py fit --trainer.devices 4 --trainer.num_nodes=2"],
     {"world_size": 8, "gpus_per_node": 4, "nodes": 2}),
])
def test_settings_named_in_configs_and_commands(tmp_path: Path, lines: list[str], want: dict) -> None:
    facts = _model(tmp_path, *lines, name="thread.md").facts
    assert {k: getattr(facts, k) for k in want} == want
    assert {facts.evidence[k].origin for k in want if k in facts.evidence} == {"config_setting"}


@pytest.mark.parametrize("lines, want", [
    (['trainer = Trainer(devices=8, num_nodes=2, strategy="deepspeed_stage_2_offload", precision="bf16-mixed")'],
     {"zero_stage": 2, "offload_optimizer": "cpu", "offload_param": None, "gpus_per_node": 8, "nodes": 2,
      "world_size": 16}),
    (["python train.py --trainer.strategy deepspeed_stage_3"], {"zero_stage": 3, "offload_optimizer": None}),
    (["trainer:", "  strategy: deepspeed_stage_3_offload", "  devices: 8"],
     {"zero_stage": 3, "offload_optimizer": "cpu", "offload_param": "cpu", "gpus_per_node": 8}),
    (["    strategy: deepspeed_stage_3_offload_nvme"], {"zero_stage": 3, "offload_optimizer": "nvme",
                                                     "offload_param": "nvme"}),
    # not a strategy's name
    (["my_deepspeed_stage_2_notes.txt", "deepspeed_stage_4"], {"zero_stage": None}),
])
def test_a_lightning_deepspeed_strategy_names_its_stage_and_offload(tmp_path: Path, lines: list[str],
                                                                   want: dict) -> None:
    """Lightning's registered strategies (`deepspeed_stage_2_offload`), on a line a facts kind also reads (the
    node count of the Trainer call): each setting of the line is read."""
    facts = _model(tmp_path, *lines, name="thread.md").facts
    assert {k: getattr(facts, k) for k in want} == want
    if want["zero_stage"] is not None:
        assert facts.evidence["zero_stage"].origin == "lightning_strategy"


@pytest.mark.parametrize("command, nodes, per_node, world", [
    ("mpirun -np 16 -H host1:8,host2:8 python train.py", 2, 8, 16),
    ("horovodrun -np 2 -H localhost:2 python pytorch_synthetic_benchmark.py", 1, 2, 2),
    ("mpirun -np 4 -H a,a,b,b python train.py", 2, 2, 4),
    ("mpirun -np 16 -H $HOSTS python train.py", None, None, 16),
])
def test_an_mpi_host_list_gives_the_nodes_and_their_slots(tmp_path: Path, command: str, nodes: int | None,
                                                          per_node: int | None, world: int) -> None:
    facts = _model(tmp_path, command, name="thread.md").facts
    assert (facts.nodes, facts.gpus_per_node, facts.world_size) == (nodes, per_node, world)


def test_an_ambiguous_batch_name_is_no_global_batch(tmp_path: Path) -> None:
    """`train_batch_size` is DeepSpeed's global batch but HF's per-device one (trainer_state.json, a pasted
    TrainingArguments dict): a line naming it sets no global batch; a DeepSpeed config file still does."""
    facts = _model(tmp_path, '  "train_batch_size": 8,', '  "per_device_train_batch_size": 8,', name="post.md").facts
    assert facts.train_batch_size is None and facts.micro_batch_per_gpu == 8


def test_a_setting_named_in_a_text_gives_way_to_the_count_the_job_printed(tmp_path: Path) -> None:
    facts = _model(tmp_path, "num_gpus: 2", "World size: 4", "devices 3 of them were idle").facts
    assert facts.world_size == 4 and facts.evidence["world_size"].origin == "world_size_print"
    assert facts.evidence["gpus_per_node"].origin == "config_setting" and facts.gpus_per_node == 2


def test_counts_a_thread_states_in_words_are_the_lowest_tier_claims(tmp_path: Path) -> None:
    post = ["Time of each step is unstable", "", "I trained with batch size 256 on 2 host, 8 gpus per host.",
            "On one GPU it was fine."]
    facts = _model(tmp_path, *post, name="post.md").facts
    assert (facts.world_size, facts.nodes, facts.gpus_per_node) == (16, 2, 8)
    assert facts.evidence["world_size"].origin == "stated_in_text" and facts.evidence["world_size"].line == 3
    printed = _model(tmp_path, *post, "[Rank 0] World size: 4", name="post2.md").facts
    assert printed.world_size == 4  # what the program printed outranks what the text says


def test_the_settings_prefilter_covers_every_name() -> None:
    import re

    from diagnose.parsers.kinds import SETTING_FACTS, SETTING_PREFILTER, SPACED_SETTINGS
    assert all(re.search(SETTING_PREFILTER, n) and re.search(SETTING_PREFILTER, n.upper()) for n in SETTING_FACTS)
    forms = [f for n in SPACED_SETTINGS for f in (n, n.upper(), n.capitalize())]
    assert [f for f in forms if not re.search(SETTING_PREFILTER, f)] == []


def test_a_topology_from_settings_outranks_a_count_stated_in_words(tmp_path: Path) -> None:
    # `8x A100` in a sentence is per node or in all; `trainer.devices=8 trainer.num_nodes=2` says which
    post = ["We train on 8x A100 80GB.", "", "python train.py trainer.devices=8 trainer.num_nodes=2"]
    facts = _model(tmp_path, *post, name="post.md").facts
    assert (facts.world_size, facts.nodes, facts.gpus_per_node) == (16, 2, 8)
    assert facts.evidence["world_size"].origin == "config_setting" and facts.evidence["world_size"].line == 3
    assert [(ev.value, ev.origin) for ev in facts.claims["world_size"]] == [(8, "stated_in_text")]


DS_JSON = ['{', '  "train_micro_batch_size_per_gpu": 16,', '  "bf16": {"enabled": true},',
           '  "zero_optimization": {', '    "stage": 2,', '    "offload_optimizer": {"device": "cpu"}', '  }', '}']


@pytest.mark.parametrize("head", [
    ["baseline.json:", *DS_JSON],  # a config pasted above its log
    ["My config:", "", *(f"> {line}" for line in DS_JSON)],  # blockquoted in a thread
    ["ds_config = {", *DS_JSON[1:-1], "}"],  # a Python dict in a script or a post
    # on one line, and a fragment quoted from one (its key kept)
    ['{"train_micro_batch_size_per_gpu": 16, "bf16": {"enabled": true}, "zero_optimization": {"stage": 2, '
     '"offload_optimizer": {"device": "cpu"}}}'],
    ['> "zero_optimization": {"stage": 2, "offload_optimizer": {"device": "cpu"}},', '> "bf16": {"enabled": true},',
     '> "train_micro_batch_size_per_gpu": 16'],
])
def test_a_deepspeed_config_pasted_whole_into_a_log_or_a_thread(tmp_path: Path, head: list[str]) -> None:
    steps = [f"[2024-01-01 10:00:{2 * i:02d},000] [INFO] [logging.py:96:log_dist] [Rank 0] step={i}, skipped=0, "
             "lr=[1e-4], mom=[[0.9, 0.999]]" for i in range(1, 9)]
    facts = _model(tmp_path, *head, "", *steps, name="slurm.out").facts
    assert (facts.zero_stage, facts.offload_optimizer, facts.precision, facts.micro_batch_per_gpu) == \
        (2, "cpu", "bf16", 16)


ACCELERATE_YAML = ["compute_environment: LOCAL_MACHINE", "distributed_type: DEEPSPEED", "deepspeed_config:",
                   "  gradient_accumulation_steps: 2", "  offload_optimizer_device: cpu", "  zero_stage: 2",
                   "mixed_precision: bf16", "num_machines: 1", "num_processes: 4"]


@pytest.mark.parametrize("post", [
    ["accelerate config:", "```yaml", *ACCELERATE_YAML, "```", "Any idea?"],  # a thread's fence
    ["My config:", "", *(f"> {line}" for line in ACCELERATE_YAML), "", "thanks"],  # blockquoted
    # as `accelerate env` lists it under an issue's System Info
    ["- `Accelerate` version: 0.34.2", "- `Accelerate` default config:", "\t- compute_environment: LOCAL_MACHINE",
     "\t- distributed_type: DEEPSPEED", "\t- mixed_precision: bf16", "\t- use_cpu: False", "\t- num_processes: 4",
     "\t- num_machines: 1", "\t- deepspeed_config: {'gradient_accumulation_steps': 2, 'offload_optimizer_device': "
     "'cpu', 'offload_param_device': 'none', 'zero3_init_flag': False, 'zero_stage': 2}", "- PyTorch version: 2.4.0"],
])
def test_an_accelerate_config_pasted_into_a_thread_is_read_as_one(tmp_path: Path, post: list[str]) -> None:
    facts = _model(tmp_path, *post, name="issue.md").facts
    assert (facts.precision, facts.zero_stage, facts.offload_optimizer, facts.world_size, facts.nodes,
            facts.launcher) == ("bf16", 2, "cpu", 4, 1, "accelerate")
    assert facts.evidence["precision"].origin == "accelerate_yaml"


def test_json_that_is_no_config_gives_no_config_facts(tmp_path: Path) -> None:
    from diagnose.parsers.configs import embedded_configs
    assert embedded_configs('metrics:\n{\n  "loss": 2.5,\n  "step": 10\n}\n') == []
    assert embedded_configs('{\n  "zero_optimization": {"stage": 3}\n') == []  # cut short: never balanced


@pytest.mark.parametrize("tp, params", [(1, 354871296), (2, None)])
def test_megatrons_parameter_count_is_the_models_where_nothing_is_split(tmp_path: Path, tp: int,
                                                                        params: int | None) -> None:
    """Rank (0, 0)'s count is the whole model's at tensor and pipeline parallel 1, a shard's otherwise (where the
    12 L H^2 estimate from the shape stands instead, as before)."""
    facts = _model(tmp_path, f"using world size: 2, data-parallel-size: {2 // tp}, context-parallel size: 1, "
                   f"tensor-model-parallel size: {tp}, pipeline-model-parallel size: 1 ",
                   "  hidden_size ..................................... 1024",
                   "  num_layers ...................................... 24",
                   " > number of parameters on (tensor, pipeline) model parallel rank (0, 0): 354871296").facts
    assert facts.model_params == (params or 12 * 24 * 1024 ** 2)
    assert facts.evidence["model_params"].origin == ("megatron_params" if params else "estimate")


def test_a_lora_runs_trainable_count_is_not_the_models_size(tmp_path: Path) -> None:
    """The HF Trainer counts the trainable parameters (a LoRA adapter's); PEFT's line gives the model's whole count,
    which stands in its place."""
    facts = _model(tmp_path,
                   "[INFO|2024-11-26 22:07:14] logging.py:157 >> trainable params: 18,739,200 || all params: "
                   "6,929,104,896 || trainable%: 0.2704",
                   "[INFO|trainer.py:2243] 2024-11-26 22:07:20,115 >>   Number of trainable parameters = "
                   "18,739,200").facts
    assert facts.model_params == 6_929_104_896 and facts.evidence["model_params"].origin == "peft_params"


@pytest.mark.parametrize("prefix", ["", "0: ", "[default0]:", "[1,0]<stdout>:", "node-1: "])
def test_arguments_printed_one_a_line_are_read_behind_a_launchers_prefix(tmp_path: Path, prefix: str) -> None:
    lines = ["TrainingArguments(", "gradient_accumulation_steps=16,", "max_length=16384,",
             "per_device_train_batch_size=1,", ")"]
    facts = _model(tmp_path, *(prefix + line for line in lines)).facts
    assert (facts.seq_len, facts.grad_accum_steps, facts.micro_batch_per_gpu) == (16384, 16, 1)
