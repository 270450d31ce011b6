"""A plain PyTorch training loop in the layout of pytorch/examples' imagenet/main.py (AverageMeter and ProgressMeter,
`Epoch: [e][i/n]  Time v (avg)  Data v (avg)  Loss ...` every --print-freq batches), the loop most training scripts
were copied from. Used to record the GPU samples (sample_logs/gpu/); run under torchrun, one process a GPU, NCCL.

A ResNet-18 on random images. `--decode-ms` is CPU work per sample in the dataset (what JPEG decoding and
augmentation cost), so with few loader workers the GPU waits for data. `--oom-at` makes the batch at that step as
large as `--oom-batch` (a resolution or batch size raised past what the GPU holds), which raises CUDA's own
out-of-memory error.

`--bar tqdm` draws a tqdm bar per epoch instead (`Epoch N`, the loss as its postfix), as most custom loops do;
`--bar lightning` draws it as Lightning's TQDMProgressBar does (one bar reset every epoch, `smoothing=0`, the
postfix `v_num=0, train_loss=...`). `--save-every N` saves the model and the optimizer every N steps.
"""
from __future__ import annotations

import argparse
import os
import time
from enum import Enum

import torch
import torch.distributed as dist
import torchvision
from torch.nn.parallel import DistributedDataParallel
from torch.utils.data import DataLoader, Dataset
from torch.utils.data.distributed import DistributedSampler
from tqdm import tqdm


class Summary(Enum):
    NONE = 0
    AVERAGE = 1


class AverageMeter:
    """As in pytorch/examples imagenet/main.py: the current value and the running average since the epoch began."""

    def __init__(self, name: str, fmt: str = ":f", summary_type: Summary = Summary.AVERAGE) -> None:
        self.name, self.fmt, self.summary_type = name, fmt, summary_type
        self.val = self.avg = self.sum = 0.0
        self.count = 0

    def update(self, val: float, n: int = 1) -> None:
        self.val = val
        self.sum += val * n
        self.count += n
        self.avg = self.sum / self.count

    def __str__(self) -> str:
        fmtstr = "{name} {val" + self.fmt + "} ({avg" + self.fmt + "})"
        return fmtstr.format(**self.__dict__)


class ProgressMeter:
    def __init__(self, num_batches: int, meters: list[AverageMeter], prefix: str = "") -> None:
        num_digits = len(str(num_batches // 1))
        fmt = "{:" + str(num_digits) + "d}"
        self.batch_fmtstr = "[" + fmt + "/" + fmt.format(num_batches) + "]"
        self.meters, self.prefix = meters, prefix

    def display(self, batch: int) -> None:
        entries = [self.prefix + self.batch_fmtstr.format(batch)]
        entries += [str(meter) for meter in self.meters]
        print("\t".join(entries), flush=True)


class RandomImages(Dataset):
    def __init__(self, n: int, size: int, decode_ms: float) -> None:
        self.n, self.size, self.decode_ms = n, size, decode_ms

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, i: int) -> tuple[torch.Tensor, int]:
        if self.decode_ms:
            time.sleep(self.decode_ms / 1000)
        g = torch.Generator().manual_seed(i)
        return torch.rand(3, self.size, self.size, generator=g), i % 1000


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--epochs", type=int, default=1)
    ap.add_argument("--steps", type=int, default=100, help="batches per epoch")
    ap.add_argument("-b", "--batch-size", type=int, default=64)
    ap.add_argument("-j", "--workers", type=int, default=4)
    ap.add_argument("-p", "--print-freq", type=int, default=10)
    ap.add_argument("--decode-ms", type=float, default=0.0)
    ap.add_argument("--amp", action="store_true", help="bf16 autocast")
    ap.add_argument("--oom-at", type=int, default=0)
    ap.add_argument("--oom-batch", type=int, default=20000)
    ap.add_argument("--bar", choices=["none", "tqdm", "lightning"], default="none")
    ap.add_argument("--save-every", type=int, default=0, help="save model and optimizer every N steps")
    ap.add_argument("--save-dir", default="checkpoints")
    args = ap.parse_args()

    dist.init_process_group("nccl")
    rank, world = dist.get_rank(), dist.get_world_size()
    local_rank = int(os.environ.get("LOCAL_RANK", 0))
    torch.cuda.set_device(local_rank)
    print(f"Use GPU: {local_rank} for training ({torch.cuda.get_device_name(local_rank)}), world size {world}",
          flush=True)
    torch.manual_seed(0)
    model = torchvision.models.resnet18().cuda().to(memory_format=torch.channels_last)
    model = DistributedDataParallel(model, device_ids=[local_rank])
    criterion = torch.nn.CrossEntropyLoss().cuda()
    optimizer = torch.optim.SGD(model.parameters(), 0.1, momentum=0.9, weight_decay=1e-4)
    data = RandomImages(args.steps * args.batch_size * world, 224, args.decode_ms)
    sampler = DistributedSampler(data)
    loader = DataLoader(data, batch_size=args.batch_size, sampler=sampler, num_workers=args.workers,
                        pin_memory=True)

    bar = None
    if args.bar == "lightning" and rank == 0:
        bar = tqdm(total=len(loader), smoothing=0, dynamic_ncols=True)
    step = 0
    for epoch in range(args.epochs):
        sampler.set_epoch(epoch)
        if args.bar == "tqdm" and rank == 0:
            bar = tqdm(total=len(loader), desc=f"Epoch {epoch}")
        elif bar is not None:
            bar.reset(total=len(loader))
            bar.set_description(f"Epoch {epoch}")
        batch_time = AverageMeter("Time", ":6.3f")
        data_time = AverageMeter("Data", ":6.3f")
        losses = AverageMeter("Loss", ":.4e")
        progress = ProgressMeter(len(loader), [batch_time, data_time, losses], prefix=f"Epoch: [{epoch}]")
        model.train()
        end = time.time()
        for i, (images, target) in enumerate(loader):
            data_time.update(time.time() - end)
            if args.oom_at and i + 1 == args.oom_at:
                # the batch grown past what the GPU holds
                images, target = torch.rand(args.oom_batch, 3, 224, 224), torch.randint(0, 1000, (args.oom_batch,))
            images = images.cuda(non_blocking=True).to(memory_format=torch.channels_last)
            target = target.cuda(non_blocking=True)
            with torch.autocast("cuda", dtype=torch.bfloat16, enabled=args.amp):
                loss = criterion(model(images), target)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            losses.update(loss.item(), images.size(0))
            batch_time.update(time.time() - end)
            end = time.time()
            step += 1
            if args.save_every and step % args.save_every == 0 and rank == 0:
                os.makedirs(args.save_dir, exist_ok=True)
                torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(), "step": step},
                           os.path.join(args.save_dir, "last.pt"))
            if bar is not None:
                bar.update(1)
                if args.bar == "lightning":
                    bar.set_postfix(v_num=0, train_loss=f"{losses.val:.3f}")
                else:
                    bar.set_postfix(loss=f"{losses.val:.4f}")
            elif i % args.print_freq == 0 and rank == 0:
                progress.display(i + 1)
        if args.bar == "tqdm" and bar is not None:
            bar.close()
    if bar is not None and args.bar == "lightning":
        bar.close()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
