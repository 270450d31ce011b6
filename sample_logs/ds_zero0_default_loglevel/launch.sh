#!/usr/bin/env bash
# ZeRO-0 at DeepSpeed's default WARNING worker log level
set -euo pipefail
deepspeed --num_gpus 2 /tmp/diagnose-rec/train_ds.py --deepspeed_config /tmp/diagnose-rec/ds_zero0_default_loglevel/ds_config.json --steps 30
