#!/usr/bin/env bash
# HF Trainer + DeepSpeed ZeRO-2 through accelerate, 'auto' values
set -euo pipefail
accelerate launch --config_file /tmp/diagnose-rec/hf_trainer_deepspeed/accelerate.yaml /tmp/diagnose-rec/train_hf.py --output_dir /tmp/diagnose-rec/hf_trainer_deepspeed/out --deepspeed /tmp/diagnose-rec/hf_trainer_deepspeed/ds_config.json --max_steps 30
