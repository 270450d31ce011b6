#!/bin/bash
#SBATCH --job-name=phi2-cpt
#SBATCH --nodes=4
#SBATCH --ntasks-per-node=1
#SBATCH --gpus-per-node=4
export CUDA_LAUNCH_BLOCKING=1   # left from debugging a NaN last week
export NCCL_DEBUG=INFO
srun deepspeed --num_nodes 4 --num_gpus 4 --hostfile hostfile train.py --deepspeed ds_config.json \
    --model_name_or_path microsoft/phi-2 --per_device_train_batch_size 4 --gradient_accumulation_steps 4 \
    --max_seq_length 2048 --bf16
