export NCCL_IB_DISABLE=1
export NCCL_SOCKET_IFNAME=eth0
deepspeed --num_nodes 2 --num_gpus 8 --hostfile hostfile train.py --deepspeed ds_config.json
