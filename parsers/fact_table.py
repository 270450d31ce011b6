"""The run facts, declared once (issue 34): each fact's type, unit, label, plausible range, the names each source
gives it, and what the report does with it. The readers (parsers/facts.py), the report's JSON run block and facts
table (reports/document.py), `parse`'s text (reports/parse_text.py), compare's list of compared facts and its
wording (diagnose/compare.py), and the schema check (tests/test_schema.py) read this table; adding a fact, or a
source's name for one, is one entry here. HTA keeps its raw-name -> typed-field vocabulary as data the same way
(hta/configs/event_args_formats/).

The precedence between sources (which claim wins) is the resolution's, by the origin's tier (parsers/facts.py):
a fact does not carry it, because it is the same for every fact."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from diagnose.parsers.names import FactName

FactType = Literal["int", "float", "bool", "str"]
# shown: a row of the report's facts table and of `parse`'s text; json: a field of the report JSON's run block;
# evidenced: the report shows the line its value came from; compared: `compare` diffs it; planner: the ZeRO
# planner's input (diagnose/engine.py plan_inputs)
Role = Literal["shown", "json", "evidenced", "compared", "planner"]

# A count past 2**53 is a misread (a hash, a fuzzed number): floats stop holding every integer there, the largest
# model trained has ~2e12 parameters and the longest run ~1e7 steps.
MAX_COUNT = float(2**53)


@dataclass(frozen=True)
class Fact:
    name: FactName
    type: FactType
    label: str  # how a report names it ("micro-batch per GPU")
    roles: frozenset[Role] = frozenset()
    unit: str = ""
    # a value outside is set aside with its line (RunFacts.set_aside), not trusted, for the reason given; every
    # count is also below MAX_COUNT
    plausible: tuple[float, float] | None = None
    implausible: str = ""
    ds_config: str = ""  # the DeepSpeed JSON key (dotted), where the config sets it
    # training-loop argument names: Megatron's argument dump, HF TrainingArguments (their reprs and W&B's config),
    # a launch script's `--flag`s (dashes read as underscores)
    args: tuple[str, ...] = ()
    # a W&B run config's keys, first found wins (the HF integration logs TrainingArguments and the model's config)
    wandb: tuple[str, ...] = ()
    # the fact frame's keys (parsers/kinds.py) whose value is this fact as printed (integers)
    log_keys: tuple[str, ...] = ()
    # a launch script's topology variables, set or echoed (`NUM_NODES=2`, `GPUS_PER_NODE: 4`)
    script_vars: tuple[str, ...] = ()
    # a setting named in a config or command a text holds (`NUM_GPUS: 1`, `trainer.n_gpus_per_node=8`),
    # case-insensitive (parsers/kinds.py SETTING_RE)
    settings: tuple[str, ...] = ()
    derived: bool = False  # decided by RunFacts from other facts (a property), never claimed by a source


def roles(*names: Role) -> frozenset[Role]:
    return frozenset(names)


_TOPOLOGY = roles("shown", "json", "evidenced", "compared", "planner")

FACTS: tuple[Fact, ...] = (
    Fact("world_size", "int", "world size", _TOPOLOGY, "processes", (1, MAX_COUNT), "a count below 1",
         args=("world_size",), log_keys=("mpi.world_size", "torch.barrier_world_size", "elastic.world_size",
                                         "job.world_size", "megatron.world_size",
                                         # Unsloth's banner: its processes' GPUs
                                         "hf.Num GPUs used", "hf.Num GPUs", "hf.Data Parallel GPUs"),
         settings=("world_size", "num_processes")),
    Fact("nodes", "int", "nodes", _TOPOLOGY, "", (1, MAX_COUNT), "a count below 1", log_keys=("elastic.nodes",),
         script_vars=("NUM_NODES", "NNODES", "N_NODES", "SLURM_NNODES", "SLURM_JOB_NUM_NODES"),
         settings=("num_shards", "nnodes", "num_nodes", "num_machines")),
    Fact("gpus_per_node", "int", "GPUs per node", _TOPOLOGY, "", (1, MAX_COUNT), "a count below 1",
         log_keys=("elastic.local_world_size",),
         script_vars=("NGPU", "GPUS_PER_NODE", "NPROC_PER_NODE", "NUM_GPUS_PER_NODE", "N_GPUS_PER_NODE",
                      "SLURM_GPUS_PER_NODE"),
         # per node: DeepSpeed's `--num_gpus`, Lightning's `devices`, SlowFast/detectron2's NUM_GPUS with
         # NUM_SHARDS machines, verl's `trainer.n_gpus_per_node`; HF's per-process `n_gpu` is left out
         settings=("num_gpus", "n_gpus_per_node", "gpus_per_node", "nproc_per_node", "num_gpus_per_node",
                   "devices")),
    Fact("tensor_parallel", "int", "tensor parallel", _TOPOLOGY, "",
         args=("tensor_model_parallel_size", "model_parallel_size"), log_keys=("megatron.tensor_parallel",)),
    Fact("pipeline_parallel", "int", "pipeline parallel", _TOPOLOGY, "",
         args=("pipeline_model_parallel_size",), log_keys=("megatron.pipeline_parallel",)),
    Fact("data_parallel", "int", "data parallel", _TOPOLOGY, "",
         args=("data_parallel_size",), log_keys=("megatron.data_parallel",)),
    Fact("gpu_name", "str", "GPU", roles("shown", "json", "evidenced", "compared", "planner")),
    # A training GPU's memory: the smallest cards that train anything have 4 GB (GTX 1650-class), the largest 288 GB
    # (AMD MI355X, NVIDIA B300). A value outside is a misread (an initialisation-time allocation, a MiB count as GB).
    Fact("gpu_memory_gb", "float", "GPU memory", roles("json", "evidenced", "planner"), "GB", (4.0, 300.0),
         "outside 4-300 GB, the memory of training GPUs"),
    Fact("model_params", "int", "parameters", _TOPOLOGY, "", wandb=("model/num_parameters",),
         log_keys=("hf.Number of trainable parameters", "model.params", "peft.all_params")),
    Fact("zero_stage", "int", "ZeRO stage", _TOPOLOGY, ds_config="zero_optimization.stage",
         args=("zero_stage",), settings=("zero_stage",)),
    Fact("offload_optimizer", "str", "optimizer offload", _TOPOLOGY,
         ds_config="zero_optimization.offload_optimizer.device"),
    Fact("offload_param", "str", "parameter offload", _TOPOLOGY, ds_config="zero_optimization.offload_param.device"),
    Fact("precision", "str", "precision", _TOPOLOGY),
    Fact("micro_batch_per_gpu", "int", "micro-batch per GPU", _TOPOLOGY, "samples",
         ds_config="train_micro_batch_size_per_gpu",
         args=("per_device_train_batch_size", "micro_batch_size", "batch_size"),
         log_keys=("hf.Instantaneous batch size per device", "hf.Batch size per device"),
         wandb=("per_device_train_batch_size",),
         settings=("device_train_batch_size", "per_device_train_batch_size", "train_micro_batch_size_per_gpu",
                   "micro_batch_size", "micro_batch_size_per_gpu", "batch_size_per_gpu")),
    Fact("grad_accum_steps", "int", "gradient accumulation", _TOPOLOGY, "micro-batches",
         ds_config="gradient_accumulation_steps", args=("gradient_accumulation_steps",),
         log_keys=("hf.Gradient Accumulation steps", "hf.Gradient accumulation steps"),
         wandb=("gradient_accumulation_steps",),
         settings=("gradient_accumulation_steps", "gradient_accumulation", "grad_accum", "grad_accum_steps",
                   "accumulation_steps")),
    # derived by RunFacts (a property), never claimed: how NCCL crossed nodes, and a run on the CPU
    Fact("nccl_transport", "str", "NCCL transport", roles("shown", "json", "compared"), derived=True),
    Fact("cpu_run", "bool", "CPU run", roles("json"), derived=True),
    Fact("launcher", "str", "launcher", roles("shown", "json", "compared")),
    Fact("backend", "str", "backend", roles("shown", "json", "compared")),
    Fact("accelerator", "str", "accelerator", roles("compared")),
    Fact("train_batch_size", "int", "global batch", roles("json", "compared"), "samples",
         ds_config="train_batch_size", args=("global_batch_size",),
         log_keys=("hf.Total train batch size", "hf.Total batch size"),
         # not `train_batch_size`: DeepSpeed's is global, but HF's (trainer_state.json, TrainingArguments) is per
         # device
         settings=("global_train_batch_size", "global_batch_size")),
    Fact("optimizer", "str", "optimizer", roles("compared")),
    Fact("steps_per_print", "float", "steps per print", ds_config="steps_per_print"),
    Fact("wall_clock_breakdown", "bool", "wall-clock breakdown", ds_config="wall_clock_breakdown"),
    Fact("overlap_comm", "bool", "overlap communication", roles("compared"),
         ds_config="zero_optimization.overlap_comm"),
    Fact("contiguous_gradients", "bool", "contiguous gradients", roles("compared"),
         ds_config="zero_optimization.contiguous_gradients"),
    Fact("reduce_bucket_size", "float", "reduce bucket size", roles("compared"), "elements",
         ds_config="zero_optimization.reduce_bucket_size"),
    Fact("allgather_bucket_size", "float", "all-gather bucket size", roles("compared"), "elements",
         ds_config="zero_optimization.allgather_bucket_size"),
    Fact("prefetch_bucket_size", "float", "prefetch bucket size", roles("compared"), "elements",
         ds_config="zero_optimization.stage3_prefetch_bucket_size"),
    Fact("gradient_checkpointing", "bool", "activation checkpointing", roles("json", "compared", "planner"),
         args=("gradient_checkpointing",), wandb=("gradient_checkpointing",)),
    Fact("dataloader_num_workers", "int", "data loader workers", roles("compared"),
         args=("dataloader_num_workers",), wandb=("dataloader_num_workers",)),
    Fact("hybrid_engine", "bool", "hybrid engine", roles("compared"), args=("enable_hybrid_engine",)),
    # HF's `logging_steps` (TrainingArguments, a trainer YAML, `--logging_steps`): the steps between two of its log
    # dicts, which carry no step of their own (run_model._number_hf_steps)
    Fact("logging_steps", "int", "steps per log line", frozenset(), "steps", (1, MAX_COUNT), "a count below 1",
         args=("logging_steps",), wandb=("logging_steps",), settings=("logging_steps",)),
    Fact("total_steps", "int", "total steps", frozenset(), "steps",
         args=("max_steps", "train_iters"), log_keys=("hf.Total optimization steps", "hf.Total steps"),
         wandb=("max_steps",)),
    Fact("seq_len", "int", "sequence length", roles("json", "compared", "planner"), "tokens",
         args=("seq_length", "max_seq_length", "max_length", "model_max_length", "cutoff_len", "seq_len",
               "max_seq_len", "block_size"), wandb=("max_seq_length", "max_length", "seq_length", "block_size")),
    Fact("hidden_size", "int", "hidden size", roles("compared"), "",
         args=("hidden_size",), wandb=("hidden_size", "n_embd", "d_model")),
    Fact("num_layers", "int", "layers", roles("compared"), "",
         args=("num_layers",), wandb=("num_hidden_layers", "n_layer", "num_layers")),
    Fact("num_heads", "int", "attention heads", roles("compared"), "",
         args=("num_attention_heads",), wandb=("num_attention_heads", "n_head", "num_heads")),
)
BY_NAME: dict[str, Fact] = {f.name: f for f in FACTS}


def with_role(role: Role) -> tuple[str, ...]:
    """The facts that play a role, in the table's order."""
    return tuple(f.name for f in FACTS if role in f.roles)


def label(name: str) -> str:
    fact = BY_NAME.get(name)
    return fact.label if fact else name.replace("_", " ")


# Derived lookups, each built from the table (never written by hand elsewhere).
ARG_FACTS: dict[str, str] = {a: f.name for f in FACTS for a in f.args}
LOG_KEY_FACTS: dict[str, str] = {k: f.name for f in FACTS for k in f.log_keys}
SCRIPT_VAR_FACTS: dict[str, str] = {v: f.name for f in FACTS for v in f.script_vars}
SETTING_FACTS: dict[str, str] = {s: f.name for f in FACTS for s in f.settings}
DS_KEY_FACTS: dict[str, str] = {f.ds_config: f.name for f in FACTS if f.ds_config}
WANDB_FACTS: dict[str, tuple[str, ...]] = {f.name: f.wandb for f in FACTS if f.wandb}

__all__ = ["ARG_FACTS", "BY_NAME", "DS_KEY_FACTS", "FACTS", "Fact", "FactType", "LOG_KEY_FACTS", "MAX_COUNT", "Role",
           "SCRIPT_VAR_FACTS", "SETTING_FACTS", "WANDB_FACTS", "label", "with_role"]
