#!/usr/bin/env bash
# ZeRO-1, gradient accumulation 2, memory_breakdown, launched with torchrun
set -euo pipefail
torchrun --nproc_per_node 2 /tmp/diagnose-rec/train_ds.py --deepspeed_config /tmp/diagnose-rec/ds_zero1_ga2_torchrun/ds_config.json --steps 20 --ds_log_level info
