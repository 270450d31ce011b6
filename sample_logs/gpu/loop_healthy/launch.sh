#!/usr/bin/env bash
# ImageNet-style loop, ResNet-18, bf16 autocast, 8 loader workers: a healthy run
set -euo pipefail
export NCCL_DEBUG=INFO
nvidia-smi
torchrun --nproc_per_node 1 /tmp/diagnose-rec/train_loop.py --steps 500 --workers 8 --amp
