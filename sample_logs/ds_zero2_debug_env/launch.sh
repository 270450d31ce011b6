#!/usr/bin/env bash
# ZeRO-2 launched with CUDA_LAUNCH_BLOCKING=1, TORCH_DISTRIBUTED_DEBUG=DETAIL and NCCL_DEBUG=INFO exported in the launch script; the script prints its environment
set -euo pipefail
export CUDA_LAUNCH_BLOCKING=1
export TORCH_DISTRIBUTED_DEBUG=DETAIL
export NCCL_DEBUG=INFO
deepspeed --num_gpus 2 /tmp/diagnose-rec/train_ds.py --deepspeed_config /tmp/diagnose-rec/ds_zero2_debug_env/ds_config.json --steps 20 --ds_log_level info --print_env
