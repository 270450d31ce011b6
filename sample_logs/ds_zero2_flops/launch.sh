#!/usr/bin/env bash
# ZeRO-2 with the flops profiler at step 5
set -euo pipefail
deepspeed --num_gpus 2 /tmp/diagnose-rec/train_ds.py --deepspeed_config /tmp/diagnose-rec/ds_zero2_flops/ds_config.json --steps 15 --ds_log_level info
