"""Where a training-loop setting goes, per framework: one table (issue 20).

Rules ask for a setting by one canonical name (`dataloader_num_workers`, `gradient_checkpointing`, ...), with the
change's target `trainer_args`. Here that change becomes the run's own syntax: an HF `TrainingArguments` / CLI flag
where the run uses the HF Trainer or a trainer built on it (LLaMA-Factory, ms-swift, TRL, axolotl), a Megatron
argument for Megatron, a DeepSpeed-Chat flag for its step scripts. For a training script of the user's own there is
no flag to set: the change is said in words, with the PyTorch API involved, and stays out of the machine-applied
diff.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from diagnose.findings import Change

FRAMEWORK_NAMES = {"hf_trainer": "the HF Trainer", "megatron": "Megatron", "dschat": "DeepSpeed-Chat",
                   "lightning": "Lightning", "custom": "a training script of its own"}


@dataclass(frozen=True)
class Knob:
    """One setting of the training loop: its flag per framework (None: that framework has none) and what to change
    in a script of the user's own (`{before}` / `{after}` are filled in)."""

    hf: str | None
    megatron: str | None
    dschat: str | None
    code: str


KNOBS: dict[str, Knob] = {
    "dataloader_num_workers": Knob(
        "dataloader_num_workers", "num-workers", None,
        "load batches in worker processes: `DataLoader(..., num_workers={after}, persistent_workers=True)` "
        "(torch.utils.data.DataLoader)"),
    "dataloader_pin_memory": Knob(
        "dataloader_pin_memory", None, None,
        "pin host memory: `DataLoader(..., pin_memory=True)` and `.to(device, non_blocking=True)`"),
    "optim": Knob(
        "optim", None, None,
        "use a fused optimizer: `torch.optim.AdamW(params, fused=True)` or DeepSpeed's `FusedAdam`"),
    "gradient_checkpointing": Knob(
        "gradient_checkpointing", "recompute-activations", "gradient_checkpointing",
        "stop recomputing activations: `model.gradient_checkpointing_disable()` or remove the "
        "`torch.utils.checkpoint.checkpoint` wrappers"),
    "save_steps": Knob(
        "save_steps", "save-interval", None,
        "save every {after} steps instead of every {before} (`engine.save_checkpoint(...)` / `torch.save`)"),
    "eval_steps": Knob(
        "eval_steps", "eval-interval", None,
        "evaluate every {after} steps instead of every {before}"),
    "micro-batch-size": Knob(
        "per_device_train_batch_size", "micro-batch-size", "per_device_train_batch_size",
        "raise the per-GPU batch from {before} to {after}: the DataLoader's `batch_size`"),
    "global-batch-size": Knob(
        None, "global-batch-size", None,
        "raise the global batch to {after} (more micro-batches per step)"),
    "enable_hybrid_engine": Knob(
        None, None, "enable_hybrid_engine",
        "generate with DeepSpeed's hybrid engine (`\"hybrid_engine\": {{\"enabled\": true}}` in the DeepSpeed "
        "config of the actor)"),
}


def translate(ch: Change, framework: str | None) -> tuple[Change | None, str]:
    """A `trainer_args` change in the run's framework -> (the change to apply, or None; words for the user).

    Other targets (DeepSpeed JSON, accelerate YAML, env) are the same in every framework and pass unchanged."""
    knob = KNOBS.get(ch.key)
    if ch.target != "trainer_args" or knob is None:
        return ch, ""
    flag = {"hf_trainer": knob.hf, "megatron": knob.megatron, "dschat": knob.dschat}.get(framework or "")
    if flag is not None:
        return dataclasses.replace(ch, key=flag), ""
    words = knob.code.format(before=ch.before if ch.before is not None else "the current value", after=ch.after)
    who = FRAMEWORK_NAMES.get(framework or "", "")
    if framework in (None, "custom", "lightning"):
        hint = f"; with the HF Trainer, `--{knob.hf} {ch.after}`" if knob.hf and framework is None else ""
        where = "in the training script" if framework else "in the training script (its framework is not in the logs)"
        return None, f"{where}: {words}{hint}"
    return None, f"{who} has no flag for it: {words}"
