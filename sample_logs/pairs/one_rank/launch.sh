#!/usr/bin/env bash
# the baseline on 1 rank
set -euo pipefail
deepspeed --num_gpus 1 /tmp/diagnose-rec/train_ds.py --deepspeed_config /tmp/diagnose-rec/pairs/one_rank/ds_config.json --steps 30 --ds_log_level info --show_straggler
