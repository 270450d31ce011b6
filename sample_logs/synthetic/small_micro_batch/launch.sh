deepspeed --num_gpus 8 train.py --deepspeed ds_config.json --per_device_train_batch_size 1 --gradient_accumulation_steps 16 --max_seq_length 512 --bf16
