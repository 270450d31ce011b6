#!/usr/bin/env bash
# the healthy HF run saving a full checkpoint (weights and optimizer) every 25 steps
set -euo pipefail
nvidia-smi
torchrun --nproc_per_node 1 /tmp/diagnose-rec/train_hf.py --output_dir /tmp/diagnose-rec/gpu/hf_ckpt_every_25/out --max_steps 300 --n_layer 12 --n_embd 768 --seq_len 512 --batch 8 --eval_steps 100 --bf16 --save_steps 25 --save_total_limit 2
