#!/usr/bin/env bash
# HF Trainer, GPT-2 small shape, bf16, one GPU: a healthy run
set -euo pipefail
nvidia-smi
torchrun --nproc_per_node 1 /tmp/diagnose-rec/train_hf.py --output_dir /tmp/diagnose-rec/gpu/hf_bf16/out --max_steps 300 --n_layer 12 --n_embd 768 --seq_len 512 --batch 8 --eval_steps 100 --bf16
