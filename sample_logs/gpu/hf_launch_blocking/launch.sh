#!/usr/bin/env bash
# the healthy HF run with CUDA_LAUNCH_BLOCKING=1 left in the launch script
set -euo pipefail
export CUDA_LAUNCH_BLOCKING=1
nvidia-smi
torchrun --nproc_per_node 1 /tmp/diagnose-rec/train_hf.py --output_dir /tmp/diagnose-rec/gpu/hf_launch_blocking/out --max_steps 300 --n_layer 12 --n_embd 768 --seq_len 512 --batch 8 --eval_steps 100 --bf16
