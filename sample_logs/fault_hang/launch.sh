#!/usr/bin/env bash
# rank 1 sleeps past the gloo process group's 10 s timeout at step 6; rank 0 times out in the all-reduce
set -euo pipefail
torchrun --nproc_per_node 2 sample_logs/record/train_fault.py --fault hang --at 6 --rank 1 --timeout 10
