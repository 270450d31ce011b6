#!/usr/bin/env bash
# the same loop saving the model and the optimizer every 50 steps
set -euo pipefail
export NCCL_DEBUG=INFO
nvidia-smi
torchrun --nproc_per_node 1 /tmp/diagnose-rec/train_loop.py --epochs 3 --steps 200 --workers 8 --amp --bar tqdm --save-every 50
