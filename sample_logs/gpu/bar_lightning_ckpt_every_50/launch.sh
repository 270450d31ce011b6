#!/usr/bin/env bash
# the saving loop with its bar drawn as Lightning's TQDMProgressBar draws it (one bar reset every epoch, smoothing 0)
set -euo pipefail
export NCCL_DEBUG=INFO
nvidia-smi
torchrun --nproc_per_node 1 /tmp/diagnose-rec/train_loop.py --epochs 3 --steps 200 --workers 8 --amp --bar tqdm --save-every 50 --bar lightning
