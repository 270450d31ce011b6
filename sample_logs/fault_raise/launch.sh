#!/usr/bin/env bash
# rank 1 raises at step 6; rank 0's all-reduce then fails with "Connection closed by peer"
set -euo pipefail
torchrun --nproc_per_node 2 sample_logs/record/train_fault.py --fault raise --at 6 --rank 1
