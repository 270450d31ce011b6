#!/usr/bin/env bash
# ZeRO-3, a checkpoint saved every 10 steps
set -euo pipefail
deepspeed --num_gpus 2 /tmp/diagnose-rec/train_ds.py --deepspeed_config /tmp/diagnose-rec/ds_zero3_ckpt/ds_config.json --steps 30 --ds_log_level info --save_dir /tmp/diagnose-rec/ckpt_zero3 --save_every 10
