#!/usr/bin/env bash
# baseline: ZeRO-1, 2 ranks, accumulation 1
set -euo pipefail
deepspeed --num_gpus 2 /tmp/diagnose-rec/train_ds.py --deepspeed_config /tmp/diagnose-rec/pairs/base/ds_config.json --steps 30 --ds_log_level info --show_straggler
