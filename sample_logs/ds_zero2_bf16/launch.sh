#!/usr/bin/env bash
# ZeRO-2 with bf16, overlap_comm on: healthy ZeRO-2
set -euo pipefail
deepspeed --num_gpus 2 /tmp/diagnose-rec/train_ds.py --deepspeed_config /tmp/diagnose-rec/ds_zero2_bf16/ds_config.json --steps 40 --ds_log_level info
