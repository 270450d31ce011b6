#!/usr/bin/env bash
# ZeRO-1 with rank 1 sleeping 40 ms before each backward (a straggler the other rank waits for in the all-reduce); comms summary with the straggler breakdown
set -euo pipefail
deepspeed --num_gpus 2 /tmp/diagnose-rec/train_ds.py --deepspeed_config /tmp/diagnose-rec/ds_zero1_straggler/ds_config.json --steps 20 --ds_log_level info --show_straggler --slow_rank 1 --slow_ms 40
