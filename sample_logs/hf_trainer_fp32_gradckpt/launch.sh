#!/usr/bin/env bash
# HF Trainer under accelerate (DDP), fp32, gradient checkpointing on, a checkpoint every 15 steps
set -euo pipefail
accelerate launch --config_file /tmp/diagnose-rec/hf_trainer_fp32_gradckpt/accelerate.yaml /tmp/diagnose-rec/train_hf.py --output_dir /tmp/diagnose-rec/hf_trainer_fp32_gradckpt/out --max_steps 30 --gradient_checkpointing --save_steps 15
