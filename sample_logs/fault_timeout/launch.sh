#!/usr/bin/env bash
# a healthy run stopped from outside after 9 s by `timeout` (SIGTERM to the launcher), as a scheduler's time limit does
set -euo pipefail
timeout 9 torchrun --nproc_per_node 2 sample_logs/record/train_fault.py --steps 200
