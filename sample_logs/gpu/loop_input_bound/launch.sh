#!/usr/bin/env bash
# the same loop with 3 ms of CPU decoding a sample and 1 loader worker
set -euo pipefail
export NCCL_DEBUG=INFO
nvidia-smi
torchrun --nproc_per_node 1 /tmp/diagnose-rec/train_loop.py --steps 60 --workers 1 --decode-ms 3 --amp
