#!/usr/bin/env bash
# the healthy loop whose 35th batch is 20000 images: CUDA out of memory
set -euo pipefail
export NCCL_DEBUG=INFO
nvidia-smi
torchrun --nproc_per_node 1 /tmp/diagnose-rec/train_loop.py --steps 60 --workers 4 --amp --oom-at 35 --oom-batch 20000
