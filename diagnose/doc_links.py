"""Where to read more: the upstream documentation of each knob a fix changes, kept in one table (issue 20)."""
from __future__ import annotations

from diagnose.findings import Finding

DS_CONFIG = "https://www.deepspeed.ai/docs/config-json/"
DS_ZERO = "https://www.deepspeed.ai/docs/config-json/#zero-optimizations-for-fp16-training"
DS_OFFLOAD = "https://www.deepspeed.ai/tutorials/zero-offload/"
NCCL_ENV = "https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/env.html"
CUDA_ENV = "https://docs.nvidia.com/cuda/cuda-c-programming-guide/index.html#cuda-environment-variables"
TORCH_DIST_DEBUG = "https://pytorch.org/docs/stable/distributed.html#debugging-torch-distributed-applications"
TORCH_CUDA_MEMORY = "https://pytorch.org/docs/stable/notes/cuda.html#memory-management"
TORCH_DATALOADER = "https://pytorch.org/docs/stable/data.html#torch.utils.data.DataLoader"
TORCH_AMP = "https://pytorch.org/docs/stable/amp.html"
HF_ARGS = "https://huggingface.co/docs/transformers/main_classes/trainer#transformers.TrainingArguments"
ACCELERATE_CONFIG = "https://huggingface.co/docs/accelerate/package_reference/cli#accelerate-config"
MEGATRON_ARGS = "https://github.com/NVIDIA/Megatron-LM/blob/main/megatron/training/arguments.py"
DSCHAT = "https://github.com/deepspeedai/DeepSpeedExamples/tree/master/applications/DeepSpeed-Chat"

# (target, key prefix) -> the page for that knob; the longest matching prefix wins.
KNOB_DOCS: dict[tuple[str, str], str] = {
    ("ds_config", ""): DS_CONFIG,
    ("ds_config", "zero_optimization"): DS_ZERO,
    ("ds_config", "zero_optimization.offload"): DS_OFFLOAD,
    ("env", "NCCL_"): NCCL_ENV,
    ("env", "CUDA_"): CUDA_ENV,
    ("env", "TORCH_DISTRIBUTED_DEBUG"): TORCH_DIST_DEBUG,
    ("env", "TORCH_NCCL_"): NCCL_ENV,
    ("env", "PYTORCH_CUDA_ALLOC_CONF"): TORCH_CUDA_MEMORY,
    ("accelerate", ""): ACCELERATE_CONFIG,
}
# The training loop's flags: per framework (diagnose/frameworks.py names them).
ARGS_DOCS = {"hf_trainer": HF_ARGS, "megatron": MEGATRON_ARGS, "dschat": DSCHAT}
# Findings whose fix is a code change or a measurement rather than a key: the page about the mechanism.
RULE_DOCS: dict[str, str] = {
    "input-bound": TORCH_DATALOADER,
    "allocator-cache-flush": TORCH_CUDA_MEMORY,
    "no-mixed-precision": TORCH_AMP,
    "offload-bottleneck": DS_OFFLOAD,
    "nccl-socket-transport": NCCL_ENV,
    "p2p-disabled": NCCL_ENV,
    "debug-switches": TORCH_DIST_DEBUG,
    "zero-stage-too-high": DS_ZERO,
    "grad-accum-zero-traffic": DS_ZERO,
    "overlap-comm-off": DS_ZERO,
    "rlhf-generation-bound": DSCHAT,
}


def docs_for(f: Finding, framework: str | None) -> tuple[str, ...]:
    """The pages for the knobs a finding's fix changes (and for its mechanism), each once, in order."""
    out: list[str] = []
    for ch in f.fix.changes if f.fix else ():
        if ch.target == "trainer_args":
            url = ARGS_DOCS.get(framework or "")
        else:
            matches = [(len(prefix), url) for (target, prefix), url in KNOB_DOCS.items()
                       if target == ch.target and ch.key.startswith(prefix)]
            url = max(matches)[1] if matches else None
        if url:
            out.append(url)
    if f.id in RULE_DOCS:
        out.append(RULE_DOCS[f.id])
    return tuple(dict.fromkeys(out))
