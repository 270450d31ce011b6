"""The run model's frames: one documented schema each. Every parser output is cast to these.

Columns shared by every frame that comes from a log line:
  source  UInt32    index into RunModel.sources (the file, URL or stdin the line came from)
  line    UInt32    1-based physical line number in that source (tqdm redraws on one line share it)
  rank    Int32     the rank that printed it, where a prefix (`[Rank N]`, `[rank0]:`, `[default3]:`, `[1,0]<stdout>:`,
                    Slurm `3: `) tells; null otherwise
  node    String    host label from a pdsh / srun host prefix or the NCCL `host:pid:tid` prefix; null otherwise
  ts      Datetime  wall time from the logger or container timestamp; null where the line has none
  origin  String    the line kind (parsers/kinds.py) or file kind that produced the row
"""
from __future__ import annotations

import polars as pl

BASE: dict[str, pl.DataType | type[pl.DataType]] = {
    "source": pl.UInt32,
    "line": pl.UInt32,
    "rank": pl.Int32,
    "node": pl.Categorical,
    "ts": pl.Datetime("ms"),
}

# Megatron's straggler metrics: (column stem, unit suffix of the column, what it is). The report prints each as
# `Mn<Label>/Rnk: <value><unit>/<rank>` and `Mx<Label>/Rnk: ...`; parsers/kinds.py maps the labels to these stems.
STRAGGLER_METRICS: tuple[tuple[str, str, str], ...] = (
    ("rtt", "_ms", "round-trip time of the traced operations per iteration, ms"),
    ("power", "_w", "GPU power, W"),
    ("temp", "_c", "GPU temperature, C"),
    ("util", "_pct", "GPU utilization, %"),
    ("clock", "_mhz", "GPU clock, MHz"),
    ("data_rtt", "_ms", "get_batch latency per iteration, ms"),
    ("etpt", "_tf", "estimated throughput, TFLOP/s"),
)

FRAMES: dict[str, dict[str, tuple[pl.DataType | type[pl.DataType], str]]] = {
    "steps": {
        "global_step": (pl.Int64, "optimizer step (DeepSpeed global_step, HF step, tqdm n, trainer_state step)"),
        "micro_step": (pl.Int64, "micro-step counter where printed (gradient accumulation)"),
        "epoch": (pl.Float64, "epoch (fractional for HF)"),
        "step_time_s": (pl.Float64, "seconds per step where printed directly (tqdm s/it, 1/it/s, runtime/steps)"),
        "samples_per_sec": (pl.Float64, "current samples/s over all ranks (DeepSpeed CurrSamplesPerSec, HF)"),
        "samples_per_sec_running": (pl.Float64, "DeepSpeed RunningAvgSamplesPerSec"),
        "loss": (pl.Float64, "training loss"),
        "lr": (pl.Float64, "learning rate of the first param group"),
        "grad_norm": (pl.Float64, "gradient norm"),
        "skipped": (pl.Int64, "cumulative skipped optimizer steps (fp16 overflow), DeepSpeed `skipped=`"),
        "loss_scale": (pl.Float64, "fp16 loss scale where known"),
        "mem_alloc_gb": (pl.Float64, "DeepSpeed MemAllocated (GB)"),
        "max_mem_alloc_gb": (pl.Float64, "DeepSpeed MaxMemAllocated (GB)"),
        "total_steps": (pl.Int64, "tqdm total (the bar's N)"),
        "train_runtime_s": (pl.Float64, "HF final train_runtime"),
        "global_batch": (pl.Int64, "global batch size as printed (Megatron)"),
        "skipped_iters": (pl.Int64, "skipped iterations in this logging interval (Megatron)"),
        "nan_iters": (pl.Int64, "NaN iterations in this logging interval (Megatron)"),
        "tflops": (pl.Float64, "achieved TFLOPs per GPU as the trainer prints it"),
        "generate_time_s": (pl.Float64, "generation seconds of an RL step (DeepSpeed-Chat, verl's timing_s/gen)"),
        "train_time_s": (pl.Float64, "training seconds of an RL step (DeepSpeed-Chat, verl's timing_s/update_actor)"),
        "tokens_per_sec": (pl.Float64, "tokens/s as the trainer prints it (per GPU or total, as printed)"),
        "data_time_s": (pl.Float64, "seconds waiting for data, where the trainer times it (mmcv `data_time`)"),
    },
    "timers": {
        "microstep": (pl.Boolean, "true for the `*_microstep` line printed every micro-step"),
        "fwd": (pl.Float64, "forward ms (old name: forward)"),
        "bwd": (pl.Float64, "backward ms incl. gradient reduction (old name: backward); inner + allreduce where only "
                           "those are printed"),
        "bwd_inner": (pl.Float64, "backward compute ms"),
        "bwd_allreduce": (pl.Float64, "gradient reduction ms"),
        "step": (pl.Float64, "optimizer step ms (Megatron `optimizer`)"),
        "optimizer_allgather": (pl.Float64, "ZeRO-1/2 parameter all-gather after the step, ms"),
        "optimizer_gradients": (pl.Float64, "ZeRO-1/2 gradient handling, ms"),
        "optimizer_step": (pl.Float64, "ZeRO inner optimizer step, ms"),
        "init_optimizer_state": (pl.Float64, "ZeRO-3 one-off optimizer state init, ms"),
        "pipe_comm": (pl.Float64, "pipeline point-to-point send/recv waits, ms (Megatron, DeepSpeed pipeline engine)"),
        "data": (pl.Float64, "batch loading inside the timed step, ms (where timed)"),
        "seq": (pl.UInt32, "occurrence index per (source, rank, microstep): the n-th timer line ~ the n-th step"),
    },
    "comms": {
        "op": (pl.String, "collective (all_reduce, all_gather_into_tensor, reduce_scatter_tensor, ...)"),
        "msg_size": (pl.String, "message size as printed"),
        "msg_bytes": (pl.Float64, "message size in bytes"),
        "count": (pl.Int64, "number of calls (summary table); 1 for a per-op line"),
        "total_latency_ms": (pl.Float64, "total latency (summary table)"),
        "avg_latency_ms": (pl.Float64, "average latency"),
        "algbw_gbps": (pl.Float64, "algorithmic bandwidth (tput_avg), Gbps"),
        "busbw_gbps": (pl.Float64, "bus bandwidth, Gbps"),
        "total_straggler_ms": (pl.Float64, "straggler table: time this rank waited beyond the fastest rank, total"),
        "avg_straggler_ms": (pl.Float64, "straggler table: the same per call (trimmed mean)"),
    },
    "memory": {
        "label": (pl.String, "see_memory_usage message (e.g. `Engine before forward`)"),
        "ma_gb": (pl.Float64, "memory allocated, GB"),
        "max_ma_gb": (pl.Float64, "max memory allocated, GB"),
        "ca_gb": (pl.Float64, "memory reserved (cached), GB"),
        "max_ca_gb": (pl.Float64, "max memory reserved, GB"),
        "cpu_used_gb": (pl.Float64, "host virtual memory used, GB"),
        "cpu_percent": (pl.Float64, "host virtual memory used, %"),
    },
    "events": {
        "kind": (pl.String, "allocator_flush | overflow | loss_scale | oom | nccl_warn | timeout | traceback | "
                            "exception | checkpoint_save | eval | eval_result | launcher_exit | dataloader_warning | "
                            "anomaly_detection | profiler | recompile | gradient_checkpointing | no_gpu | "
                            "failure_root_cause | failure_entry | failure_rank | failure_host | failure_exitcode | "
                            "comm_timeout | nccl_last_work | peer_lost | nccl_error | job_cancelled | host_oom | "
                            "exception_ignored | signal_received"),
        "count": (pl.Int64, "how many (allocator flushes since last step; 1 otherwise)"),
        "value_from": (pl.Float64, "old loss scale / eval runtime seconds / last enqueued NCCL work (nccl_last_work) / "
                                   "GiB the failed allocation asked for (oom)"),
        "value_to": (pl.Float64, "new loss scale / eval loss / last completed NCCL work (nccl_last_work) / the GPU's "
                                 "total capacity in GiB (oom)"),
        "step": (pl.Int64, "step the event names, where it does"),
        "code": (pl.Int64, "exit code (launcher_exit, failure_exitcode; negative: killed by that signal)"),
        "failed_rank": (pl.Int64, "the rank a failure names (torchrun's failure table), not the rank that printed it"),
        "host": (pl.String, "the host a failure names (torchrun's failure table)"),
        "detail": (pl.String, "the message, for evidence"),
    },
    "nccl": {
        "nccl_host": (pl.String, "host from `host:pid:tid`"),
        "dev": (pl.Int64, "CUDA device"),
        "msg": (pl.String, "text after `NCCL INFO `"),
    },
    "env": {
        "key": (pl.String, "environment variable name"),
        "value": (pl.String, "its value"),
    },
    "facts": {
        "key": (pl.String, "fact name (version.deepspeed, ds.<engine config key>, hf.<Running training key>, ...)"),
        "value": (pl.String, "value as printed"),
    },
    # What the general progress reader finds on a line beyond the steps frame's columns, one row per such line
    # (joined to its steps row by source and line). A frame of its own: columns that most step rows would leave
    # null still cost their width on every row, and the steps frame is what grows with a long log.
    "progress": {
        "cum_time_s": (pl.Float64, "cumulative training seconds as printed (`train_time:467422ms`); the steps "
                                   "row's step_time_s comes from its differences where no step time is printed"),
        "avg_step_time_s": (pl.Float64, "running average seconds per step as printed (`step_avg:144.6ms`)"),
        "mfu": (pl.Float64, "model FLOPs utilisation as the trainer prints it, a fraction (`mfu 41.2%` -> 0.412)"),
        "other": (pl.String, "named numbers no column reads, `name=value` joined by `;` (`grad_norm=1.2;lrm=1.0`), "
                             "kept rather than dropped"),
    },
    # Megatron-LM's straggler report (`--log-straggler`), one row per report line: the lowest and highest value of
    # each per-rank metric over the ranks, and the rank it was seen on (reference/goodput_stragglers.md).
    "rank_extremes": {
        **{f"{m}_{end}{unit}": (pl.Float64, f"{end}imum {what} over the ranks")
           for m, unit, what in STRAGGLER_METRICS for end in ("min", "max")},
        **{f"{m}_{end}_rank": (pl.Int32, f"the rank with the {end}imum {m}")
           for m, _, _ in STRAGGLER_METRICS for end in ("min", "max")},
        "low_etpt_ranks": (pl.String, "the ranks with the lowest estimated throughput, slowest first, comma-separated "
                                      "(`--straggler-minmax-count N` adds the line)"),
        "high_etpt_ranks": (pl.String, "the ranks with the highest estimated throughput, as printed"),
    },
    # What sentences state (parsers/prose.py): settings, durations with the setting they were stated for, and a
    # share of the time spent communicating; one row per quantity, the sentence as evidence.
    "stated": {
        "quantity": (pl.String, "setting | step_time | epoch_time | total_time | samples_per_sec | tokens_per_sec | "
                                "comm_share | zero_stage | offload_optimizer | offload_param | model_params | "
                                "gpu_name | gpu_memory_gb"),
        "value": (pl.Float64, "seconds for a duration (a rate of steps as its step's time), per second for a "
                              "throughput, a fraction for a share, the stage, an offload's device (0 none, 1 CPU, "
                              "2 NVMe), parameters, a GPU model's place in prose.STATED_GPUS, GB; null for a "
                              "setting"),
        "gpus": (pl.Int64, "the GPU count of the setting (the one stated, or in force where the duration is)"),
        "nodes": (pl.Int64, "the node count of the setting"),
        "zero_stage": (pl.Int64, "the ZeRO stage a duration was stated for (0: none), where its sentence pairs one "
                                 "with it (`2.3 s with ZeRO-3, 1.1 s with ZeRO-2`) or one is in force above it"),
        "detail": (pl.String, "the sentence, for evidence"),
    },
    # Filled from W&B runs (issue 3); empty for logs.
    "system": {
        "gpu": (pl.Int32, "GPU index"),
        "metric": (pl.String, "gpu | memoryAllocated | powerWatts | ..."),
        "value": (pl.Float64, "sample value"),
    },
}


def schema(frame: str) -> dict[str, pl.DataType | type[pl.DataType]]:
    cols = dict(BASE)
    cols.update({name: dtype for name, (dtype, _) in FRAMES[frame].items()})
    cols["origin"] = pl.Categorical
    return cols


SORT_MAX_ROWS = 200_000  # parts arrive in (source, chunk) order, each sorted; bigger frames skip the copy a sort makes


def conform(frame: str, parts: list[pl.DataFrame]) -> pl.DataFrame:
    """Concatenate parts (any subset of columns) into the frame's exact schema, in source/line order."""
    target = schema(frame)
    fixed = []
    for part in parts:
        if part.schema == target:
            fixed.append(part)
            continue
        missing = [pl.lit(None, dtype=t).alias(c) for c, t in target.items() if c not in part.columns]
        fixed.append(part.with_columns(missing).select(pl.col(c).cast(t, strict=False) for c, t in target.items()))
    if not fixed:
        return pl.DataFrame(schema=target)
    fixed = [p for p in fixed if p.height] or fixed[:1]
    fixed.sort(key=lambda p: (p["source"][0] or 0, p["line"][0] or 0) if p.height else (0, 0))
    out = pl.concat(fixed, how="vertical", rechunk=False)
    if out.height > SORT_MAX_ROWS:
        return out
    # One source (a chunk's parts): one integer key sorts at a fraction of the cost of two.
    keys = ["line"] if out["source"].n_unique() <= 1 else ["source", "line"]
    return out.sort(keys, maintain_order=True)


def describe() -> str:
    """The schema as text, for `diagnose parse --help-schema` and the docs."""
    out = []
    for name, cols in FRAMES.items():
        out.append(f"{name}: source, line, rank, node, ts, origin, " + ", ".join(cols))
        out += [f"  {c:<24} {t}  {d}" for c, (t, d) in cols.items()]
    return "\n".join(out)
