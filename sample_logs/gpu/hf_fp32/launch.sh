#!/usr/bin/env bash
# the healthy HF run without --bf16: fp32 on a GPU with bf16 tensor cores
set -euo pipefail
nvidia-smi
torchrun --nproc_per_node 1 /tmp/diagnose-rec/train_hf.py --output_dir /tmp/diagnose-rec/gpu/hf_fp32/out --max_steps 300 --n_layer 12 --n_embd 768 --seq_len 512 --batch 8 --eval_steps 100
