"""Tiny Hugging Face Trainer job used to record the sample logs (launched with `accelerate launch`)."""
from __future__ import annotations

import argparse

import torch
from torch.utils.data import Dataset
from transformers import GPT2Config, GPT2LMHeadModel, Trainer, TrainingArguments


class RandomTokens(Dataset):
    def __init__(self, n: int, seq_len: int, vocab: int, seed: int) -> None:
        g = torch.Generator().manual_seed(seed)
        self.data = torch.randint(0, vocab, (n, seq_len), generator=g)

    def __len__(self) -> int:
        return len(self.data)

    def __getitem__(self, i: int) -> dict[str, torch.Tensor]:
        return {"input_ids": self.data[i], "labels": self.data[i]}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--max_steps", type=int, default=40)
    ap.add_argument("--output_dir", required=True)
    ap.add_argument("--run_name", default="tiny")
    ap.add_argument("--bf16", action="store_true")
    ap.add_argument("--deepspeed", default=None)
    ap.add_argument("--gradient_checkpointing", action="store_true")
    ap.add_argument("--report_to", default="none")
    ap.add_argument("--save_steps", type=int, default=0)
    ap.add_argument("--save_total_limit", type=int, default=None)
    # The model's and the batch's size: the CPU samples keep the 2-layer defaults; the GPU samples use GPT-2 small's
    # shape so that a step is GPU work worth timing.
    ap.add_argument("--n_layer", type=int, default=2)
    ap.add_argument("--n_embd", type=int, default=64)
    ap.add_argument("--seq_len", type=int, default=64)
    ap.add_argument("--batch", type=int, default=4)
    ap.add_argument("--eval_steps", type=int, default=20)
    args = ap.parse_args()

    torch.manual_seed(1234)
    cfg = GPT2Config(n_layer=args.n_layer, n_embd=args.n_embd, n_head=max(4, args.n_embd // 64),
                     n_positions=args.seq_len, vocab_size=1024 if args.n_embd <= 64 else 50257)
    model = GPT2LMHeadModel(cfg)
    targs = TrainingArguments(
        output_dir=args.output_dir,
        run_name=args.run_name,
        max_steps=args.max_steps,
        per_device_train_batch_size=args.batch,
        per_device_eval_batch_size=8,
        learning_rate=3e-4,
        warmup_steps=5,
        logging_steps=1,
        eval_strategy="steps",
        eval_steps=args.eval_steps,
        save_strategy="steps" if args.save_steps else "no",
        save_steps=args.save_steps or 500,
        save_total_limit=args.save_total_limit,
        bf16=args.bf16,
        use_cpu=not torch.cuda.is_available(),
        report_to=args.report_to,
        deepspeed=args.deepspeed,
        gradient_checkpointing=args.gradient_checkpointing,
        dataloader_num_workers=0,
        disable_tqdm=False,
    )
    vocab = cfg.vocab_size
    trainer = Trainer(model=model, args=targs, train_dataset=RandomTokens(2048, args.seq_len, vocab, 0),
                      eval_dataset=RandomTokens(64, args.seq_len, vocab, 1))
    trainer.train()
    trainer.evaluate()


if __name__ == "__main__":
    main()
