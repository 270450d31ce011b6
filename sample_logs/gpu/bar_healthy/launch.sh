#!/usr/bin/env bash
# the healthy loop drawing a tqdm bar per epoch, its loss as the postfix: 3 epochs
set -euo pipefail
export NCCL_DEBUG=INFO
nvidia-smi
torchrun --nproc_per_node 1 /tmp/diagnose-rec/train_loop.py --epochs 3 --steps 200 --workers 8 --amp --bar tqdm
