"""Tiny DeepSpeed training job used to record the sample logs (CPU or GPU).

A randomly initialised 2-layer GPT-2 (nothing is downloaded) trained on random tokens. The script prints only
what a real training script would (a `[train]` progress line per optimizer step); everything else in the log
comes from DeepSpeed, torch and the launcher.
"""
from __future__ import annotations

import argparse
import os
import time

import deepspeed
import torch
from transformers import GPT2Config, GPT2LMHeadModel


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--local_rank", type=int, default=-1)
    ap.add_argument("--deepspeed_config", required=True)
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--seq_len", type=int, default=64)
    ap.add_argument("--ds_log_level", default=None)
    ap.add_argument("--save_dir", default=None)
    ap.add_argument("--save_every", type=int, default=0)
    ap.add_argument("--print_env", action="store_true")
    ap.add_argument("--n_layer", type=int, default=2)
    ap.add_argument("--n_embd", type=int, default=64)
    ap.add_argument("--show_straggler", action="store_true", help="comms summary with the straggler breakdown")
    ap.add_argument("--slow_rank", type=int, default=-1, help="this rank sleeps before each backward: a straggler")
    ap.add_argument("--slow_ms", type=float, default=0.0)
    args = ap.parse_args()

    if args.ds_log_level:
        from deepspeed.utils.logging import set_log_level_from_string

        set_log_level_from_string(args.ds_log_level)
    deepspeed.init_distributed()
    rank = torch.distributed.get_rank()
    world = torch.distributed.get_world_size()
    if args.print_env and rank == 0:
        for key in sorted(os.environ):
            if key.startswith(("CUDA_", "NCCL_", "TORCH_", "OMP_", "LOCAL_", "MASTER_", "WORLD_")):
                print(f"os.environ[{key}]={os.environ[key]}", flush=True)

    torch.manual_seed(1234)
    cfg = GPT2Config(n_layer=args.n_layer, n_embd=args.n_embd, n_head=4, n_positions=args.seq_len, vocab_size=1024)
    model = GPT2LMHeadModel(cfg)
    n_params = sum(p.numel() for p in model.parameters())
    print(f"rank {rank}/{world}: built GPT2LMHeadModel from config, {n_params} parameters", flush=True)

    engine, _, _, _ = deepspeed.initialize(model=model, model_parameters=model.parameters(), config=args.deepspeed_config)
    micro = engine.train_micro_batch_size_per_gpu()
    gas = engine.gradient_accumulation_steps()
    device = engine.device
    gen = torch.Generator().manual_seed(rank)
    start = time.time()
    for step in range(1, args.steps + 1):
        for _ in range(gas):
            ids = torch.randint(0, cfg.vocab_size, (micro, args.seq_len), generator=gen).to(device)
            out = engine(input_ids=ids, labels=ids)
            if rank == args.slow_rank:
                time.sleep(args.slow_ms / 1000)  # the other ranks wait for it in the gradient all-reduce
            engine.backward(out.loss)
            engine.step()
        if rank == 0:
            print(f"[train] global_step={step} loss={out.loss.item():.4f} elapsed={time.time() - start:.1f}s", flush=True)
        if args.save_dir and args.save_every and step % args.save_every == 0:
            engine.save_checkpoint(args.save_dir)
    if args.save_dir and not args.save_every:
        engine.save_checkpoint(args.save_dir)
    if engine.config.get("comms_logger", {}).get("enabled") if isinstance(engine.config, dict) else True:
        try:
            deepspeed.comm.log_summary(show_straggler=args.show_straggler)
        except Exception:  # comms logger off: nothing to summarise
            pass
    if rank == 0:
        print(f"done: {args.steps} optimizer steps in {time.time() - start:.1f}s", flush=True)


if __name__ == "__main__":
    main()
