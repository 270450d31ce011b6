export WANDB_WATCH=all
torchrun --nproc_per_node 8 train.py --deepspeed ds_config.json
