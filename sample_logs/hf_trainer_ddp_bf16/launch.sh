#!/usr/bin/env bash
# HF Trainer under accelerate (DDP, bf16), eval every 20 steps, W&B offline
set -euo pipefail
export WANDB_MODE=offline
export WANDB_PROJECT=diagnose-samples
accelerate launch --config_file /tmp/diagnose-rec/hf_trainer_ddp_bf16/accelerate.yaml /tmp/diagnose-rec/train_hf.py --output_dir /tmp/diagnose-rec/hf_trainer_ddp_bf16/out --max_steps 40 --bf16 --report_to wandb --run_name hf-ddp-bf16
