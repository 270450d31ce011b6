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
from typing import Any

from diagnose.findings import Change
from diagnose.parsers.facts import RunFacts, dig

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


# ---- which file owns which knob ------------------------------------------------------------------------------
# A rule asks for a DeepSpeed JSON key (or an accelerate YAML key); `route` turns it into the changes the run's own
# framework takes, so that the patched run starts. Each table is the framework's own rule, with where it is decided.

PRECISION_KEYS = ("bf16.enabled", "fp16.enabled")

# The HF Trainer fills these JSON keys from TrainingArguments, and a literal that disagrees with the argument stops
# the run ("Please correct the following DeepSpeed config values that mismatch TrainingArguments values":
# transformers/integrations/deepspeed.py, HfTrainerDeepSpeedConfig.trainer_config_process). The argument is the
# change; the JSON keeps "auto", or its literal moves with the argument. Precision is the Trainer's --bf16 / --fp16,
# and the JSON says "auto" for it.
HF_TRAINER_DS: dict[str, str] = {
    "train_micro_batch_size_per_gpu": "per_device_train_batch_size",
    "gradient_accumulation_steps": "gradient_accumulation_steps",
    "gradient_clipping": "max_grad_norm",
    "optimizer.params.lr": "learning_rate",
    "optimizer.params.eps": "adam_epsilon",
    "optimizer.params.weight_decay": "weight_decay",
    "scheduler.params.warmup_max_lr": "learning_rate",
    "fp16.enabled": "fp16",
    "bf16.enabled": "bf16",
}

# Megatron (and Megatron-DeepSpeed) take the batch and precision as arguments; the accumulation is not one: it is
# --global-batch-size / (--micro-batch-size x data-parallel size) (megatron/training/arguments.py). None: derived.
MEGATRON_DS: dict[str, str | None] = {
    "train_micro_batch_size_per_gpu": "micro-batch-size",
    "gradient_accumulation_steps": None,
    "train_batch_size": "global-batch-size",
    "gradient_clipping": "clip-grad",
    "bf16.enabled": "bf16",
    "fp16.enabled": "fp16",
}

# DeepSpeed-Chat's step scripts build the DeepSpeed config in code from their flags
# (dschat/utils/ds_utils.py, get_train_ds_config; the flags in each step's main.py).
DSCHAT_DS: dict[str, str] = {
    "train_micro_batch_size_per_gpu": "per_device_train_batch_size",
    "gradient_accumulation_steps": "gradient_accumulation_steps",
    "zero_optimization.stage": "zero_stage",
    "zero_optimization.offload_optimizer.device": "offload",
    "bf16.enabled": "dtype",
    "fp16.enabled": "dtype",
}

# accelerate launched with a `deepspeed_config_file` refuses these YAML keys beside it ("When using
# `deepspeed_config_file`, the following accelerate config variables will be ignored": accelerate/utils/
# dataclasses.py, DeepSpeedPlugin._deepspeed_config_checks; launch.py adds mixed_precision when the YAML sets it).
# They belong to the JSON, under these names.
ACCELERATE_BESIDE_DS_FILE: dict[str, str] = {
    "mixed_precision": "bf16.enabled",
    "gradient_accumulation_steps": "gradient_accumulation_steps",
    "gradient_clipping": "gradient_clipping",
    "deepspeed_config.zero_stage": "zero_optimization.stage",
    "deepspeed_config.offload_optimizer_device": "zero_optimization.offload_optimizer.device",
    "deepspeed_config.offload_param_device": "zero_optimization.offload_param.device",
}

# accelerate with its DeepSpeed settings in the YAML itself (no JSON file): the YAML's names for the JSON's keys
# (accelerate/commands/config/cluster.py writes them).
ACCELERATE_INLINE_DS: dict[str, str] = {
    "zero_optimization.stage": "deepspeed_config.zero_stage",
    "gradient_accumulation_steps": "deepspeed_config.gradient_accumulation_steps",
    "gradient_clipping": "deepspeed_config.gradient_clipping",
    "zero_optimization.offload_optimizer.device": "deepspeed_config.offload_optimizer_device",
    "zero_optimization.offload_param.device": "deepspeed_config.offload_param_device",
    "bf16.enabled": "mixed_precision",
    "fp16.enabled": "mixed_precision",
}


def route(ch: Change, facts: RunFacts) -> tuple[tuple[Change, ...], str]:
    """A change as the run's framework and files take it: the changes to make (none where it cannot be made, with
    words saying why, or with none where another change of the same call covers it)."""
    if ch.target == "accelerate":
        return _route_accelerate(ch, facts)
    if ch.target != "ds_config":
        return (ch,), ""
    inline = _accelerate_inline_ds(facts)
    if inline and not facts.ds_config and ch.key in ACCELERATE_INLINE_DS:
        moved = _inline_change(ch)
        return ((moved,) if moved is not None else ()), ""
    framework = facts.framework
    if framework == "hf_trainer" and ch.key in HF_TRAINER_DS:
        flag = HF_TRAINER_DS[ch.key]
        if ch.key in PRECISION_KEYS:
            return (Change("trainer_args", flag, None, _enabled(ch.after)),
                    Change("ds_config", ch.key, ch.before, "auto")), ""
        return (Change("trainer_args", flag, None, ch.after), dataclasses.replace(ch, filled_by="hf_trainer")), ""
    if framework == "megatron" and ch.key in MEGATRON_DS:
        arg = MEGATRON_DS[ch.key]
        if arg is None:  # it follows from the micro-batch and global batch changes beside it
            return (), ""
        after = _enabled(ch.after) if ch.key in PRECISION_KEYS else ch.after
        follow = (dataclasses.replace(ch, filled_by="megatron"),) if dig(facts.ds_config, ch.key)[0] else ()
        return (Change("trainer_args", arg, None, after), *follow), ""
    if framework == "dschat" and ch.key in DSCHAT_DS:
        flag = DSCHAT_DS[ch.key]
        if ch.key in PRECISION_KEYS:
            chosen = ch.key.split(".")[0] if _enabled(ch.after) else None
            return ((Change("trainer_args", flag, None, chosen),) if chosen else ()), ""
        if flag == "offload":
            return (Change("trainer_args", flag, None, str(ch.after).lower() not in ("none", "", "false")),), ""
        return (Change("trainer_args", flag, None, ch.after),), ""
    return (ch,), ""


def _route_accelerate(ch: Change, facts: RunFacts) -> tuple[tuple[Change, ...], str]:
    if _accelerate_ds_file(facts) and ch.key in ACCELERATE_BESIDE_DS_FILE:
        key = ACCELERATE_BESIDE_DS_FILE[ch.key]
        after: object | None = ch.after
        if ch.key == "mixed_precision":
            wanted = str(ch.after).lower()
            if wanted not in ("bf16", "fp16"):
                return (), ""
            key, after = f"{wanted}.enabled", True
        return route(Change("ds_config", key, None, after), facts)
    if ch.key == "mixed_precision" and facts.framework == "hf_trainer":
        # The Trainer's flag decides: TrainingArguments sets accelerate's precision from --bf16 / --fp16.
        wanted = str(ch.after).lower()
        flag = (Change("trainer_args", wanted, None, True),) if wanted in ("bf16", "fp16") else ()
        return (ch, *flag), ""
    return (ch,), ""


def _inline_change(ch: Change) -> Change | None:
    key = ACCELERATE_INLINE_DS[ch.key]
    if ch.key in PRECISION_KEYS:
        return Change("accelerate", key, None, ch.key.split(".")[0]) if _enabled(ch.after) else None
    return Change("accelerate", key, None, ch.after)


def _accelerate_ds(facts: RunFacts) -> dict[str, Any] | None:
    ds = facts.accelerate.get("deepspeed_config")
    return ds if isinstance(ds, dict) else None


def _accelerate_ds_file(facts: RunFacts) -> bool:
    ds = _accelerate_ds(facts)
    return bool(ds and ds.get("deepspeed_config_file"))


def _accelerate_inline_ds(facts: RunFacts) -> bool:
    ds = _accelerate_ds(facts)
    return bool(ds) and not _accelerate_ds_file(facts)


def _enabled(value: object) -> bool:
    return value is True or str(value).lower() in ("true", "1", "yes")

