#!/usr/bin/env bash
# ZeRO-2, gradient accumulation 4, overlap_comm false
set -euo pipefail
deepspeed --num_gpus 2 /tmp/diagnose-rec/train_ds.py --deepspeed_config /tmp/diagnose-rec/ds_zero2_ga4_overlap_off/ds_config.json --steps 15 --ds_log_level info
