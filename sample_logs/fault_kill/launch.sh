#!/usr/bin/env bash
# rank 1 sends itself SIGKILL at step 6 (what the kernel's OOM killer does)
set -euo pipefail
torchrun --nproc_per_node 2 sample_logs/record/train_fault.py --fault kill --at 6 --rank 1
