#!/usr/bin/env bash
# the baseline with rank 1 sleeping 40 ms before each backward
set -euo pipefail
deepspeed --num_gpus 2 /tmp/diagnose-rec/train_ds.py --deepspeed_config /tmp/diagnose-rec/pairs/slow_rank/ds_config.json --steps 30 --ds_log_level info --show_straggler --slow_rank 1 --slow_ms 40
