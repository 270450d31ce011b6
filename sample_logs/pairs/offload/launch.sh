#!/usr/bin/env bash
# the baseline with the optimizer offloaded to the CPU
set -euo pipefail
deepspeed --num_gpus 2 /tmp/diagnose-rec/train_ds.py --deepspeed_config /tmp/diagnose-rec/pairs/offload/ds_config.json --steps 30 --ds_log_level info --show_straggler
