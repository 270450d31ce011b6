#!/usr/bin/env bash
# ZeRO-3 with the optimizer offloaded to the CPU (DeepSpeedCPUAdam)
set -euo pipefail
deepspeed --num_gpus 2 /tmp/diagnose-rec/train_ds.py --deepspeed_config /tmp/diagnose-rec/ds_zero3_offload/ds_config.json --steps 20 --ds_log_level info
