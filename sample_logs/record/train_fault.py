"""A tiny data-parallel loop over gloo that fails one way on purpose (issue 33: why it stopped). Run under torchrun
with 2 processes; `--fault` picks the failure, `--at` the step it strikes at, `--rank` the rank it strikes.

    hang   the rank sleeps past the process group's timeout, so the others time out in the all-reduce
    raise  the rank raises an exception (a crash with a traceback)
    kill   the rank sends itself SIGKILL (what the kernel's OOM killer does)
    none   no fault: the run is stopped from outside (`timeout`)
"""
from __future__ import annotations

import argparse
import logging
import os
import signal
import time
from datetime import timedelta

import torch
import torch.distributed as dist

logging.basicConfig(format="[%(asctime)s] [%(levelname)s] %(message)s", level=logging.INFO)
log = logging.getLogger("train")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--fault", choices=("hang", "raise", "kill", "none"), default="none")
    ap.add_argument("--at", type=int, default=6)
    ap.add_argument("--rank", type=int, default=1)
    ap.add_argument("--steps", type=int, default=12)
    ap.add_argument("--timeout", type=float, default=10.0)
    args = ap.parse_args()
    dist.init_process_group("gloo", timeout=timedelta(seconds=args.timeout))
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(256, 512), torch.nn.ReLU(), torch.nn.Linear(512, 256))
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    if rank == 0:
        log.info("world_size=%d backend=gloo steps=%d", world, args.steps)
    for step in range(1, args.steps + 1):
        t0 = time.perf_counter()
        if rank == args.rank and step == args.at:
            if args.fault == "hang":
                time.sleep(args.timeout * 6)
            elif args.fault == "raise":
                raise RuntimeError(f"injected failure on rank {rank} at step {step}")
            elif args.fault == "kill":
                os.kill(os.getpid(), signal.SIGKILL)
        x = torch.randn(64, 256)
        loss = model(x).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        for p in model.parameters():
            dist.all_reduce(p.grad)
            p.grad /= world
        opt.step()
        time.sleep(0.2)  # a step long enough to see on the clock
        if rank == 0:
            log.info("step %d loss %.4f step_time %.3fs", step, loss.item(), time.perf_counter() - t0)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
