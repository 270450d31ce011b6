#!/usr/bin/env bash
# ZeRO-0 (plain data parallel), INFO logging, timers and comms logger: a healthy run
set -euo pipefail
deepspeed --num_gpus 2 /tmp/diagnose-rec/train_ds.py --deepspeed_config /tmp/diagnose-rec/ds_zero0/ds_config.json --steps 40 --ds_log_level info
