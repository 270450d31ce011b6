"""Write the SYNTHETIC scenarios in sample_logs/synthetic/: GPU-only signals (NCCL transports, multi-node
topology, allocator flushes, fp16 overflow, stragglers, step-time shapes) that a CPU recording cannot produce.

Every line follows a real format: the templates are copied from the recorded logs in sample_logs/ and from the
line shapes in ../shared/reference/log_formats.md (DeepSpeed 0.14-0.19, NCCL 2.18-2.21). Values are made up and
seeded, so the files are reproducible: `python sample_logs/synthetic/make.py`.
"""
from __future__ import annotations

import base64
import json
import random
from datetime import datetime, timedelta
from pathlib import Path

HERE = Path(__file__).resolve().parent
T0 = datetime(2026, 11, 20, 9, 0, 0)
LOG_DIST = "[logging.py:96:log_dist]"  # DeepSpeed 0.10.1-0.15.2 line number (log_formats.md §1.1)


def ts(t: datetime) -> str:
    return t.strftime("%Y-%m-%d %H:%M:%S,") + f"{t.microsecond // 1000:03d}"


def ds(t: datetime, src: str, msg: str, level: str = "INFO") -> str:
    return f"[{ts(t)}] [{level}] {src} {msg}"


def world_info(hosts: list[str], gpus: int) -> str:
    return base64.urlsafe_b64encode(json.dumps({h: list(range(gpus)) for h in hosts}).encode()).decode()


def launcher_block(t: datetime, hosts: list[str], gpus: int) -> list[str]:
    lines = [ds(t, "[runner.py:568:main]", f"cmd = pdsh -S -f 1024 -w {','.join(hosts)} export PYTHONPATH=/work; "
                                          f"cd /work; /usr/bin/python -u -m deepspeed.launcher.launch "
                                          f"--world_info={world_info(hosts, gpus)} --node_rank=%n "
                                          f"--master_addr={hosts[0]} --master_port=29500 train.py")]
    for i, h in enumerate(hosts):
        lines += [f"{h}: " + ds(t, "[launch.py:146:main]", f"WORLD INFO DICT: {{{', '.join(repr(x) + ': ' + str(list(range(gpus))) for x in hosts)}}}"),
                  f"{h}: " + ds(t, "[launch.py:152:main]", f"nnodes={len(hosts)}, num_local_procs={gpus}, node_rank={i}"),
                  f"{h}: " + ds(t, "[launch.py:164:main]", f"dist_world_size={len(hosts) * gpus}")]
    return lines


def nvidia_smi(hosts: list[str], gpus: int, name: str = "NVIDIA A100-SXM4-80GB") -> list[str]:
    rng = random.Random(7)
    return [f"{h}: GPU {g}: {name} (UUID: GPU-{rng.getrandbits(32):08x}-{rng.getrandbits(16):04x})"
            for h in hosts for g in range(gpus)]


def nccl_block(hosts: list[str], gpus: int, network: str) -> list[str]:
    out = []
    for n, h in enumerate(hosts):
        pfx = f"{h}: {h}:{4000 + n}:{4100 + n} [0] NCCL INFO "
        out.append(pfx + "NCCL version 2.21.5+cuda12.4")
        if network == "IB":
            out += [pfx + "NET/IB : Using [0]mlx5_0:1/IB [1]mlx5_1:1/IB [RO]; OOB ib0:10.0.0.%d<0>" % (n + 1),
                    pfx + "Using network IB"]
        else:
            out += [pfx + "NET/IB : No device found.", pfx + "NCCL_IB_DISABLE set by environment to 1.",
                    pfx + "NET/Socket : Using [0]eth0:10.0.0.%d<0>" % (n + 1), pfx + "Using network Socket"]
        out.append(pfx + f"comm 0x7f3c2c000000 rank {n * gpus} nRanks {len(hosts) * gpus} nNodes {len(hosts)} "
                         f"localRanks {gpus} localRank 0 MNNVL 0")
        net = "NET/IB/0" if network == "IB" else "NET/Socket/0"
        out.append(pfx + f"Channel 00/0 : {n * gpus + gpus - 1}[3] -> {((n + 1) % len(hosts)) * gpus}[0] [send] via {net}")
        out.append(pfx + f"Channel 00/0 : {n * gpus}[0] -> {n * gpus + 1}[1] via P2P/IPC")
    return out


def config_dump(t: datetime, stage: int, micro: int, ga: int, world: int, bf16: bool, overlap: bool) -> list[str]:
    src = "[config.py:984:print]"
    kv = {
        "bfloat16_enabled": str(bf16), "fp16_enabled": "False", "gradient_accumulation_steps": str(ga),
        "steps_per_print": "1", "train_batch_size": str(micro * ga * world), "train_micro_batch_size_per_gpu": str(micro),
        "wall_clock_breakdown": "True", "world_size": str(world),
        "zero_config": f"stage={stage} contiguous_gradients=True reduce_scatter=True reduce_bucket_size=500,000,000 "
                       f"allgather_partitions=True allgather_bucket_size=500,000,000 overlap_comm={overlap} "
                       "load_from_fp32_weights=True elastic_checkpoint=False offload_param=None offload_optimizer=None "
                       "sub_group_size=1,000,000,000 prefetch_bucket_size=50,000,000",
        "zero_enabled": str(stage > 0), "zero_optimization_stage": str(stage),
    }
    lines = [ds(t, src, "DeepSpeedEngine configuration:")]
    for k, v in kv.items():
        dots = "." * max(2, 29 - len(k)) if len(k) < 29 else ""
        lines.append(ds(t, src, f"  {k} {dots} {v}" if dots else f"  {k}  {v}"))
    return lines


def steps_block(t: datetime, n: int, step_s: list[float], micro: int, ga: int, world: int, rng: random.Random,
                timers: tuple[float, float, float, float] | None, prefix: str = "", extra: dict[int, list[str]] | None = None,
                skipped: list[int] | None = None) -> tuple[list[str], datetime]:
    lines = []
    batch = micro * ga * world
    for step in range(1, n + 1):
        t = t + timedelta(seconds=step_s[step - 1])
        sk = skipped[step - 1] if skipped else 0
        lines.append(prefix + ds(t, LOG_DIST, f"[Rank 0] step={step}, skipped={sk}, lr=[2.9e-05], mom=[(0.9, 0.95)]"))
        if step > 2:
            lines.append(prefix + ds(t, "[timer.py:260:stop]",
                                     f"epoch=0/micro_step={step * ga}/global_step={step}, RunningAvgSamplesPerSec="
                                     f"{batch / step_s[step - 1] * rng.uniform(0.98, 1.02)}, CurrSamplesPerSec="
                                     f"{batch / step_s[step - 1]}, MemAllocated=61.2GB, MaxMemAllocated=73.4GB"))
        if timers:
            fwd, inner, allreduce, opt = (x * rng.uniform(0.97, 1.03) for x in timers)
            lines.append(prefix + ds(t, LOG_DIST, f"[Rank 0] time (ms) | fwd: {fwd:.2f} | bwd: {inner + allreduce:.2f} | "
                                                  f"bwd_inner: {inner:.2f} | bwd_allreduce: {allreduce:.2f} | step: {opt:.2f}"))
        lines += [prefix + x for x in (extra or {}).get(step, [])]
    return lines, t


def write(name: str, files: dict[str, str]) -> None:
    d = HERE / name
    d.mkdir(parents=True, exist_ok=True)
    for fname, text in files.items():
        (d / fname).write_text(text)


def wandb_events(path: Path, start: datetime, seconds: float, gpus: int, util, mem, power, every: float = 15.0) -> None:
    """A W&B run directory with system metrics in wandb-events.jsonl (the format older SDKs and synced runs
    leave); keys as the API names them (`system.gpu.<i>.<metric>`)."""
    rows, t = [], 0.0
    while t <= seconds:
        row = {"_timestamp": start.timestamp() + t, "_runtime": t}
        for g in range(gpus):
            row[f"system.gpu.{g}.gpu"] = util(t, g)
            row[f"system.gpu.{g}.memoryAllocated"] = mem(t, g)
            row[f"system.gpu.{g}.powerPercent"] = power(t, g)
        rows.append(row)
        t += every
    files = path / "files"
    files.mkdir(parents=True, exist_ok=True)
    (files / "wandb-events.jsonl").write_text("\n".join(json.dumps(r) for r in rows) + "\n")


def seed_zero3_launch_blocking() -> None:
    """The motivating thread: phi-2 (2.78B), ZeRO-3, 4 nodes x 4 A100-80GB, CUDA_LAUNCH_BLOCKING=1 in the sbatch."""
    rng = random.Random(1)
    hosts = [f"gpu-node-{i}" for i in range(1, 5)]
    t = T0
    log = launcher_block(t, hosts, 4) + nvidia_smi(hosts, 4) + nccl_block(hosts, 4, "IB")
    log.append(f"{hosts[0]}: " + ds(t, LOG_DIST, "[Rank 0] DeepSpeed info: version=0.14.0, git-hash=unknown, git-branch=unknown"))
    log.append(f"{hosts[0]}: " + ds(t, LOG_DIST, "[Rank 0] Creating torch.bfloat16 ZeRO stage 3 optimizer"))
    log += [f"{hosts[0]}: " + x for x in config_dump(t, 3, 4, 4, 16, True, True)]
    log += [f"{hosts[0]}: [INFO|trainer.py:2128] {ts(t)} >> ***** Running training *****",
            f"{hosts[0]}: [INFO|trainer.py:2136] {ts(t)} >>   Instantaneous batch size per device = 4",
            f"{hosts[0]}: [INFO|trainer.py:2138] {ts(t)} >>   Number of trainable parameters = 2,779,683,840"]
    steps = [rng.uniform(17.5, 18.5) for _ in range(60)]
    body, _ = steps_block(t, 60, steps, 4, 4, 16, rng, (4100.0, 8300.0, 2900.0, 310.0), prefix=f"{hosts[0]}: ")
    log += body
    cfg = {"bf16": {"enabled": True}, "train_micro_batch_size_per_gpu": 4, "gradient_accumulation_steps": 4,
           "wall_clock_breakdown": True, "steps_per_print": 1,
           "zero_optimization": {"stage": 3, "overlap_comm": True, "contiguous_gradients": True,
                                 "stage3_gather_16bit_weights_on_model_save": True}}
    sbatch = """#!/bin/bash
#SBATCH --job-name=phi2-cpt
#SBATCH --nodes=4
#SBATCH --ntasks-per-node=1
#SBATCH --gpus-per-node=4
export CUDA_LAUNCH_BLOCKING=1   # left from debugging a NaN last week
export NCCL_DEBUG=INFO
srun deepspeed --num_nodes 4 --num_gpus 4 --hostfile hostfile train.py --deepspeed ds_config.json \\
    --model_name_or_path microsoft/phi-2 --per_device_train_batch_size 4 --gradient_accumulation_steps 4 \\
    --max_seq_length 2048 --bf16
"""
    write("seed_zero3_launch_blocking", {"slurm-1234.out": "\n".join(log) + "\n", "ds_config.json": json.dumps(cfg, indent=2) + "\n",
                                         "train.sh": sbatch})
    # What the user saw on W&B (node 0's 4 GPUs): ~50% utilization, flat, at ~92% memory and low power.
    wrng = random.Random(21)
    wandb_events(HERE / "seed_zero3_launch_blocking" / "wandb" / "run-20261120_090000-seed0001", T0, sum(steps), 4,
                 lambda t, g: round(wrng.uniform(46, 55), 1), lambda t, g: round(wrng.uniform(91.5, 92.8), 1),
                 lambda t, g: round(wrng.uniform(38, 46), 1))


def multinode_socket() -> None:
    rng = random.Random(2)
    hosts = [f"node{i}" for i in range(1, 3)]
    t = T0
    log = launcher_block(t, hosts, 8) + nvidia_smi(hosts, 8, "NVIDIA H100 80GB HBM3") + nccl_block(hosts, 8, "Socket")
    log += [f"{hosts[0]}: " + x for x in config_dump(t, 2, 8, 1, 16, True, True)]
    body, _ = steps_block(t, 40, [rng.uniform(9.0, 9.6) for _ in range(40)], 8, 1, 16, rng,
                          (900.0, 1700.0, 6400.0, 90.0), prefix=f"{hosts[0]}: ")
    write("multinode_socket", {"train.log": "\n".join(log + body) + "\n",
                               "launch.sh": "export NCCL_IB_DISABLE=1\nexport NCCL_SOCKET_IFNAME=eth0\n"
                                            "deepspeed --num_nodes 2 --num_gpus 8 --hostfile hostfile train.py "
                                            "--deepspeed ds_config.json\n"})


def p2p_disabled() -> None:
    rng = random.Random(3)
    t = T0
    pfx = "box:5000:5100 [0] NCCL INFO "
    log = [pfx + "NCCL version 2.21.5+cuda12.4", pfx + "NCCL_P2P_DISABLE set by environment to 1.",
           pfx + "Channel 00/0 : 0[0] -> 1[1] via SHM/direct/direct", pfx + "Channel 01/0 : 1[1] -> 2[2] via SHM/direct/direct",
           pfx + "comm 0x55d0 rank 0 nRanks 8 nNodes 1 localRanks 8 localRank 0 MNNVL 0"]
    log += config_dump(t, 1, 8, 1, 8, True, False)
    body, _ = steps_block(t, 30, [rng.uniform(1.9, 2.1) for _ in range(30)], 8, 1, 8, rng, (500.0, 1000.0, 420.0, 60.0))
    write("p2p_disabled", {"train.log": "\n".join(log + body) + "\n"})


def flat_run(name: str, seed: int, steps: int, step_s: tuple[float, float], stage: int, micro: int, world: int,
             timers: tuple[float, float, float, float], extra: tuple[str, ...] = ()) -> None:
    """A single-node nccl run with a config dump and steady step times: the shape several scenarios share."""
    rng = random.Random(seed)
    t = T0
    log = [ds(t, "[comm.py:637:init_distributed]", "Initializing TorchBackend in DeepSpeed with backend nccl"), *extra]
    log += config_dump(t, stage, micro, 1, world, True, True)
    body, _ = steps_block(t, steps, [rng.uniform(*step_s) for _ in range(steps)], micro, 1, world, rng, timers)
    write(name, {"train.log": "\n".join(log + body) + "\n"})


def comm_bound() -> None:
    flat_run("comm_bound", 4, 40, (3.0, 3.2), 2, 2, 32, (300.0, 600.0, 2100.0, 40.0))


def allocator_flush() -> None:
    rng = random.Random(5)
    t = T0
    log = [ds(t, "[comm.py:637:init_distributed]", "Initializing TorchBackend in DeepSpeed with backend nccl")]
    log += config_dump(t, 3, 8, 1, 8, True, True)
    steps = [rng.uniform(2.0, 2.2) if s < 30 else rng.uniform(4.1, 4.5) for s in range(60)]
    warn = ("{n} pytorch allocator cache flushes since last step. this happens when there is high memory pressure and "
            "is detrimental to performance. if this is happening frequently consider adjusting settings to reduce "
            "memory consumption. If you are unable to make the cache flushes go away consider adding "
            "get_accelerator().empty_cache() calls in your training loop to ensure that all ranks flush their caches "
            "at the same time")
    extra = {s: [ds(t + timedelta(seconds=2.1 * s), "[stage3.py:2126:step]", warn.format(n=rng.randint(1, 4)), "WARNING")]
             for s in range(30, 61)}
    body, _ = steps_block(t, 60, steps, 8, 1, 8, rng, (600.0, 1200.0, 200.0, 50.0), extra=extra)
    write("allocator_flush", {"train.log": "\n".join(log + body) + "\n"})


def straggler() -> None:
    rng = random.Random(6)
    t = T0
    lines = [ds(t, "[comm.py:637:init_distributed]", "Initializing TorchBackend in DeepSpeed with backend nccl")]
    for step in range(1, 31):
        t += timedelta(seconds=1.5)
        for rank in range(8):
            slow = 1.45 if rank == 5 else 1.0
            f, b, s = 300 * slow * rng.uniform(0.98, 1.02), 700 * slow * rng.uniform(0.98, 1.02), 40.0
            # srun --label prefix; DeepSpeed's print_dist timers carry the printing rank (log_formats.md §1.8)
            lines.append(f"{rank}: [Rank {rank}] time (ms) | fwd: {f:.2f} | bwd: {b:.2f} | bwd_inner: {b * 0.8:.2f} | "
                         f"bwd_allreduce: {b * 0.2:.2f} | step: {s:.2f}")
    write("straggler", {"train.log": "\n".join(lines) + "\n"})


def world_size_mismatch() -> None:
    rng = random.Random(7)
    hosts = [f"worker-{i}" for i in range(4)]
    t = T0
    log = []
    for i, h in enumerate(hosts):
        pfx = f"{h}:{7000 + i}:{7100 + i} [0] NCCL INFO "
        log.append(pfx + "comm 0x7f00 rank 0 nRanks 8 nNodes 1 localRanks 8 localRank 0 MNNVL 0")
    body, _ = steps_block(t, 20, [rng.uniform(2.0, 2.1) for _ in range(20)], 4, 1, 8, rng, None)
    yaml = ("compute_environment: LOCAL_MACHINE\ndistributed_type: MULTI_GPU\nmachine_rank: 0\nmain_process_ip: "
            "10.0.0.1\nmain_process_port: 29500\nmixed_precision: bf16\nnum_machines: 1\nnum_processes: 8\n"
            "rdzv_backend: static\nsame_network: true\nuse_cpu: false\n")
    script = ("#!/bin/bash\n#SBATCH --nodes=4\n#SBATCH --gpus-per-node=8\n"
              "srun accelerate launch --config_file accelerate.yaml train.py --bf16\n")
    write("world_size_mismatch", {"train.log": "\n".join(log + body) + "\n", "accelerate.yaml": yaml, "run.sbatch": script})


def fp16_overflow() -> None:
    rng = random.Random(8)
    t = T0
    log = [ds(t, "[comm.py:637:init_distributed]", "Initializing TorchBackend in DeepSpeed with backend nccl")]
    n = 80
    skipped, k, extra = [], 0, {}
    scale = 65536
    for s in range(1, n + 1):
        over = s <= 12 or rng.random() < 0.35
        if over:
            k += 1
            new = max(1, scale // 2)
            extra[s] = [ds(t, "[loss_scaler.py:183:update_scale]", f"[deepspeed] OVERFLOW! Rank 0 Skipping step. "
                                                                  f"Attempted loss scale: {scale}, reducing to {new}")]
            scale = new
        skipped.append(k)
    body, _ = steps_block(t, n, [rng.uniform(1.0, 1.1) for _ in range(n)], 8, 1, 8, rng, None, extra=extra,
                          skipped=skipped)
    write("fp16_overflow", {"train.log": "\n".join(log + body) + "\n"})


def progressive_slowdown() -> None:
    rng = random.Random(9)
    t = T0
    log = [ds(t, "[comm.py:637:init_distributed]", "Initializing TorchBackend in DeepSpeed with backend nccl")]
    steps = [1.0 * (1 + s / 60) * rng.uniform(0.98, 1.02) for s in range(80)]
    body, _ = steps_block(t, 80, steps, 4, 1, 8, rng, None)
    write("progressive_slowdown", {"train.log": "\n".join(log + body) + "\n",
                                   "launch.sh": "export WANDB_WATCH=all\ntorchrun --nproc_per_node 8 train.py "
                                                "--deepspeed ds_config.json\n"})


def small_micro_batch() -> None:
    rng = random.Random(10)
    t = T0
    log = [ds(t, "[comm.py:637:init_distributed]", "Initializing TorchBackend in DeepSpeed with backend nccl"),
           f"[INFO|trainer.py:2138] {ts(t)} >>   Number of trainable parameters = 6,738,415,616"]
    log += config_dump(t, 2, 1, 16, 8, True, True)
    body, _ = steps_block(t, 30, [rng.uniform(6.0, 6.3) for _ in range(30)], 1, 16, 8, rng, None)
    write("small_micro_batch", {"train.log": "\n".join(log + body) + "\n",
                                "launch.sh": "deepspeed --num_gpus 8 train.py --deepspeed ds_config.json "
                                             "--per_device_train_batch_size 1 --gradient_accumulation_steps 16 "
                                             "--max_seq_length 512 --bf16\n"})


def input_bound() -> None:
    flat_run("input_bound", 11, 40, (2.4, 2.6), 1, 8, 8, (300.0, 560.0, 140.0, 40.0), (
        "/usr/lib/python3/dist-packages/torch/utils/data/dataloader.py:557: UserWarning: This DataLoader will create "
        "32 worker processes in total. Our suggested max number of worker in current system is 8, which is smaller "
        "than what this DataLoader is going to create.",))


def slow_optimizer_step() -> None:
    flat_run("slow_optimizer_step", 12, 30, (1.9, 2.0), 0, 8, 8, (300.0, 560.0, 100.0, 900.0))


def checkpoint_stalls() -> None:
    """Checkpoints every 100 steps that idle every GPU for ~3 minutes, seen on W&B and in the log timestamps."""
    rng = random.Random(13)
    t = T0
    log = [ds(t, "[comm.py:637:init_distributed]", "Initializing TorchBackend in DeepSpeed with backend nccl")]
    n = 300
    steps = [rng.uniform(1.9, 2.1) + (180.0 if s in (101, 201) else 0.0) for s in range(1, n + 1)]
    saves: dict[int, list[str]] = {}
    clock = t
    for s in range(1, n + 1):
        clock += timedelta(seconds=steps[s - 1])
        if s in (100, 200, 300):
            saves[s] = [ds(clock, LOG_DIST, f"[Rank 0] [Torch] Checkpoint global_step{s} is about to be saved!"),
                        ds(clock, LOG_DIST, f"[Rank 0] Saving model checkpoint: /ckpt/global_step{s}/"
                                            "zero_pp_rank_0_mp_rank_00_model_states.pt")]
    body, _ = steps_block(t, n, steps, 8, 1, 8, rng, None, extra=saves)
    save_t = [sum(steps[:s]) for s in (100, 200)]
    wrng = random.Random(14)
    wandb_events(HERE / "checkpoint_stalls" / "wandb" / "run-20261120_090000-ckpt0001", T0, sum(steps), 8,
                 lambda t, g: 0.0 if any(st <= t <= st + 175 for st in save_t) else round(wrng.uniform(92, 99), 1),
                 lambda t, g: 71.0, lambda t, g: 20.0 if any(st <= t <= st + 175 for st in save_t) else 88.0)
    write("checkpoint_stalls", {"train.log": "\n".join(log + body) + "\n"})


def pipeline_bubble() -> None:
    """Megatron-LM with 8 pipeline stages and 4 micro-batches per global batch: (8-1)/(4+8-1) = 64% bubble.
    Line shapes: Megatron-LM's arguments dump, `using world size` and training_log (log_formats.md §6)."""
    rng = random.Random(21)
    args = {"bf16": "True", "fp16": "False", "global_batch_size": "16", "hidden_size": "5120", "micro_batch_size": "1",
            "num_attention_heads": "40", "num_layers": "40", "pipeline_model_parallel_size": "8", "seq_length": "2048",
            "tensor_model_parallel_size": "4", "world_size": "128"}
    log = ["using world size: 128, data-parallel-size: 4, context-parallel size: 1, tensor-model-parallel size: 4, "
           "pipeline-model-parallel size: 8 ",
           "------------------------ arguments ------------------------"]
    log += [f"  {k} {'.' * (48 - len(k))} {v}" for k, v in sorted(args.items())]
    log += ["-------------------- end of arguments ---------------------"]
    for i in range(10, 210, 10):
        ms = rng.uniform(5900, 6100)
        log.append(f" iteration {i:>8}/   10000 | consumed samples: {i * 16:>12} | elapsed time per iteration (ms): "
                   f"{ms:.1f} | learning rate: 1.500E-04 | global batch size:    16 | lm loss: {3.5 - i / 1000:.6E} | "
                   "loss scale: 1.0 | grad norm: 0.412 | number of skipped iterations:   0 | number of nan iterations:"
                   "   0 |")
        log.append(f"time (ms) | forward-compute: {rng.uniform(700, 760):.2f} | forward-recv: {rng.uniform(1900, 2100):.2f}"
                   f" | backward-compute: {rng.uniform(1400, 1500):.2f} | backward-send: {rng.uniform(900, 1000):.2f} | "
                   f"backward-params-all-reduce: {rng.uniform(150, 170):.2f} | optimizer: {rng.uniform(40, 50):.2f}")
    write("pipeline_bubble", {"train.log": "\n".join(log) + "\n"})


def no_gpu() -> None:
    """An HF Trainer run that meant to train in fp16 on a GPU but found none: the CPU AMP backend."""
    t = T0
    log = ["The installed version of bitsandbytes was compiled without GPU support. 8-bit optimizers, 8-bit "
           "multiplication, and GPU quantization are unavailable.",
           f"[INFO|trainer.py:698] {ts(t)} >> Using cpu_amp half precision backend",
           f"[INFO|trainer.py:2313] {ts(t)} >> ***** Running training *****",
           f"[INFO|trainer.py:2314] {ts(t)} >>   Num examples = 2,000",
           f"[INFO|trainer.py:2318] {ts(t)} >>   Instantaneous batch size per device = 4"]
    log += [f"{s * 100 // 50}%|{'#' * (s // 5)}{' ' * (10 - s // 5)}| {s}/50 [{s * 41 // 60:02d}:{s * 41 % 60:02d}<"
            f"{(50 - s) * 41 // 60:02d}:{(50 - s) * 41 % 60:02d}, 41.{s % 10}2s/it]" for s in range(1, 51)]
    write("no_gpu", {"train.log": "\n".join(log) + "\n"})


def gloo_horovod() -> None:
    """Horovod built without NCCL (`horovodrun --check-build`) running a 4-GPU synthetic benchmark."""
    rng = random.Random(23)
    log = ["$ horovodrun --check-build", "Horovod v0.28.1:", "", "Available Frameworks:", "    [ ] TensorFlow",
           "    [X] PyTorch", "", "Available Controllers:", "    [ ] MPI", "    [X] Gloo", "",
           "Available Tensor Operations:", "    [ ] NCCL", "    [ ] DDL", "    [ ] CCL", "    [ ] MPI", "    [X] Gloo",
           "$ horovodrun -np 4 -H localhost:4 python pytorch_synthetic_benchmark.py",
           "[0]<stdout>:Model: resnet50", "[0]<stdout>:Batch size: 32", "[0]<stdout>:Number of GPUs: 4"]
    log += [f"[0]<stdout>:Iter #{i}: {rng.uniform(30, 33):.1f} img/sec per GPU" for i in range(10)]
    write("gloo_horovod", {"train.log": "\n".join(log) + "\n"})


def rlhf_generation() -> None:
    """DeepSpeed-Chat step 3 without --enable_hybrid_engine: generation ~85% of every PPO step."""
    rng = random.Random(29)
    log = ["cmd = deepspeed main.py --data_path Dahoas/rm-static --actor_model_name_or_path ./actor "
           "--critic_model_name_or_path ./critic --per_device_generation_batch_size 4 "
           "--per_device_training_batch_size 4 --generation_batches 1 --ppo_epochs 1 --max_answer_seq_len 256 "
           "--max_prompt_seq_len 256 --actor_zero_stage 3 --critic_zero_stage 3 --deepspeed --output_dir ./out"]
    for _ in range(40):
        gen, train, other = rng.uniform(20, 22), rng.uniform(2.8, 3.2), rng.uniform(0.2, 0.3)
        e2e = gen + train + other
        log.append(f"|E2E latency={e2e:.2f}s |Gather latency=0.00s (0.00%) |Generate time={gen:.2f}s "
                   f"({gen / e2e:.2%}) |Training time={train:.2f}s ({train / e2e:.2%}) |Others={other:.2f} "
                   f"({other / e2e:.2%})|CurSamplesPerSec={32 / e2e:.2f} |AvgSamplesPerSec={32 / e2e:.2f}")
    write("rlhf_generation", {"train.log": "\n".join(log) + "\n"})


def _watchdog(t: datetime, ranks: list[int], seq: int, enqueued: dict[int, int], completed: dict[int, int]) -> list[str]:
    """ProcessGroupNCCL's lines at a collective timeout (torch 2.4+): the watchdog's, then each rank's last work."""
    stamp = t.strftime("%m%d %H:%M:%S.") + f"{t.microsecond:06d}"
    out = []
    for r in ranks:
        out.append(f"[rank{r}]:[E{stamp} {140 + r} ProcessGroupNCCL.cpp:616] [Rank {r}] Watchdog caught collective "
                   f"operation timeout: WorkNCCL(SeqNum={seq}, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, "
                   f"Timeout(ms)=600000) ran for 600073 milliseconds before timing out.")
        out.append(f"[rank{r}]:[E{stamp} {140 + r} ProcessGroupNCCL.cpp:1785] [PG ID 0 PG GUID 0(default_pg) Rank {r}] "
                   f"Exception (either an error or timeout) detected by watchdog at work: {seq}, last enqueued NCCL "
                   f"work: {enqueued[r]}, last completed NCCL work: {completed[r]}.")
    return out


def nccl_hang() -> None:
    """8 ranks; rank 5 never enqueues all-reduce 93 (stuck in its data loader), the other 7 time out in it after
    the default 10 minutes."""
    rng = random.Random(21)
    t = T0
    log = [ds(t, "[comm.py:637:init_distributed]", "Initializing TorchBackend in DeepSpeed with backend nccl")]
    log += config_dump(t, 2, 4, 1, 8, True, True)
    body, t = steps_block(t, 30, [rng.uniform(1.0, 1.05) for _ in range(30)], 4, 1, 8, rng, None)
    waiting = [r for r in range(8) if r != 5]
    log += body + _watchdog(t + timedelta(seconds=601), waiting, 93, {r: 93 if r != 5 else 92 for r in range(8)},
                            {r: 92 for r in range(8)})
    write("nccl_hang", {"train.log": "\n".join(log) + "\n"})


def frozen_process() -> None:
    """Every rank times out with nothing enqueued (`last enqueued NCCL work: -1`): frozen before any collective."""
    t = T0
    log = [ds(t, "[comm.py:637:init_distributed]", "Initializing TorchBackend in DeepSpeed with backend nccl")]
    log += config_dump(t, 2, 4, 1, 4, True, True)
    log += _watchdog(t + timedelta(seconds=605), list(range(4)), 1, {r: -1 for r in range(4)}, {r: -1 for r in range(4)})
    write("frozen_process", {"train.log": "\n".join(log) + "\n"})


def out_of_memory() -> None:
    """A 7B model on 8 A100-80GB with ZeRO-1 and micro-batch 8: rank 3 runs out of memory at step 11 (torch >= 2.1's
    message), then torchrun's failure table names it."""
    rng = random.Random(33)
    t = T0
    log = [ds(t, "[comm.py:637:init_distributed]", "Initializing TorchBackend in DeepSpeed with backend nccl")]
    log += nvidia_smi(["gpu-node-1"], 8)
    log += config_dump(t, 1, 8, 1, 8, True, True)
    body, t = steps_block(t, 10, [rng.uniform(2.0, 2.1) for _ in range(10)], 8, 1, 8, rng, None)
    stamp = (t + timedelta(seconds=3)).strftime("%Y-%m-%d_%H:%M:%S")
    log += body + [
        "[rank3]: Traceback (most recent call last):",
        '[rank3]:   File "/work/train.py", line 212, in <module>',
        "[rank3]:     engine.backward(loss)",
        "[rank3]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 3.50 GiB. GPU 3 has a total capacity "
        "of 79.15 GiB of which 1.21 GiB is free. Including non-PyTorch memory, this process has 77.93 GiB memory in "
        "use. Of the allocated memory 74.02 GiB is allocated by PyTorch, and 2.41 GiB is reserved by PyTorch but "
        "unallocated. If reserved but unallocated memory is large try setting "
        "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation.",
        "torch.distributed.elastic.multiprocessing.errors.ChildFailedError: ",
        "============================================================",
        "/work/train.py FAILED",
        "------------------------------------------------------------",
        "Root Cause (first observed failure):",
        "[0]:",
        f"  time      : {stamp}",
        "  host      : gpu-node-1",
        "  rank      : 3 (local_rank: 3)",
        "  exitcode  : 1 (pid: 41733)",
        "  error_file: <N/A>",
        "============================================================"]
    write("out_of_memory", {"train.log": "\n".join(log) + "\n"})


SCENARIOS = (seed_zero3_launch_blocking, checkpoint_stalls, multinode_socket, p2p_disabled, comm_bound, allocator_flush, straggler,
             world_size_mismatch, fp16_overflow, progressive_slowdown, small_micro_batch, input_bound,
             slow_optimizer_step, pipeline_bubble, no_gpu, gloo_horovod, rlhf_generation, nccl_hang, frozen_process, out_of_memory)

if __name__ == "__main__":
    for make in SCENARIOS:
        make()
        print("wrote", make.__name__)
