"""The project's string vocabularies as types, in one module (issue 34), as polars keeps its own in `_typing.py`:
a fact name, a clock, a frame or a finding id spelled wrong is a type error, and tests/test_names.py holds each
alias equal to what the code registers (the fact table, the clocks, the run model's frames, the rule registry)."""
from __future__ import annotations

from typing import Literal

FactName = Literal[
    "world_size", "nodes", "gpus_per_node", "tensor_parallel", "pipeline_parallel", "data_parallel", "gpu_name",
    "gpu_memory_gb", "model_params", "zero_stage", "offload_optimizer", "offload_param", "precision",
    "micro_batch_per_gpu", "grad_accum_steps", "nccl_transport", "cpu_run", "launcher", "backend", "accelerator",
    "train_batch_size", "optimizer", "steps_per_print", "wall_clock_breakdown", "overlap_comm",
    "contiguous_gradients", "reduce_bucket_size", "allgather_bucket_size", "prefetch_bucket_size",
    "gradient_checkpointing", "dataloader_num_workers", "hybrid_engine", "logging_steps", "total_steps", "seq_len",
    "hidden_size", "num_layers", "num_heads",
]
ClockName = Literal["ds_step_ts", "printed", "ds_throughput", "tqdm", "wandb_history"]
FrameName = Literal["steps", "timers", "comms", "memory", "events", "nccl", "env", "facts", "progress",
                    "rank_extremes", "stated", "system"]
FindingId = Literal[
    "activation-checkpointing-unneeded", "allocator-cache-flush", "comm-bound", "cuda-launch-blocking",
    "debug-switches", "fp16-overflow-skips", "frozen-process", "gloo-collectives", "grad-accum-zero-traffic",
    "input-bound", "killed", "nccl-socket-transport", "nccl-timeout-hang", "no-gpu", "no-mixed-precision",
    "offload-bottleneck", "out-of-memory", "overlap-comm-off", "p2p-disabled", "periodic-stalls", "pipeline-bubble",
    "progressive-slowdown", "rank-crash", "rlhf-generation-bound", "slow-optimizer-step", "small-micro-batch",
    "straggler", "world-size-mismatch", "zero-stage-too-high",
]

__all__ = ["ClockName", "FactName", "FindingId", "FrameName"]
