"""Run facts: what the run was (topology, ZeRO stage, precision, batch, env, versions), merged from every source.

Each fact keeps where it came from (`Evidence`), so a finding can quote the line. Where sources disagree, one
precedence decides (`TIERS`, `tier_of`): what the running job printed, then the launcher's command-line flags, then
config files, then scheduler directives, then what the hardware shows. Within the job's own output the largest
world size, node count and processes per node win: DeepSpeed prints its data-parallel size as `world_size` and NCCL
prints every sub-communicator, all smaller than the world. Every value seen stays in `claims`, each with its tier,
so the world-size-mismatch rule can compare what ran with what was launched and allocated.
"""
from __future__ import annotations

import ast
import base64
import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

import polars as pl

from diagnose.parsers.blocks import Blocks
from diagnose.parsers.errors import fault
from diagnose.parsers.fact_table import (ARG_FACTS, BY_NAME, DS_KEY_FACTS, FACTS, LOG_KEY_FACTS, MAX_COUNT,
                                         SCRIPT_VAR_FACTS, WANDB_FACTS)
from diagnose.parsers.kinds import SETTING_FACTS
from diagnose.parsers.launch_script import LaunchScript, parse_script
from diagnose.parsers.prose import OFFLOAD_DEVICES, STATED_GPUS, size_in_name
from diagnose.parsers.scalars import number, whole


@dataclass(frozen=True)
class Evidence:
    value: Any
    origin: str  # e.g. "ds_config_dump", "launch_script", "accelerate_yaml", "nccl"
    source: int  # index into RunModel.sources
    line: int | None = None

    @property
    def tier(self) -> str:
        return tier_of(self.origin)


# The precedence of run facts, most trusted first (issue 10): what the running job printed (engine config dump,
# Megatron arguments, accelerate's `Num processes`, elastic WORLD_SIZE, NCCL's world communicator, ...) > the
# launcher's command-line flags > config files (accelerate YAML, DeepSpeed JSON) > scheduler directives (#SBATCH)
# > what the hardware has (W&B metadata's GPU count is the machine's, not the job's) > what the user told diagnose
# (`--seq-len`, `--gpu-memory`: they fill what the sources leave unknown) > what a thread's prose states.
TIERS = ("job", "launcher", "config", "scheduler", "hardware", "user", "text")
_ORIGIN_TIERS = {
    "launch_script": "launcher", "log_launch_command": "launcher", "ds_cmd": "launcher",
    "accelerate_default": "launcher",
    "accelerate_yaml": "config", "ds_config": "config",
    "sbatch": "scheduler",
    "wandb_metadata": "hardware", "nvidia_smi": "hardware", "estimate": "hardware",
    # the HF Trainer's summary rates over micro-batch x accumulation: a derived count, below everything printed
    "hf_summary_rates": "hardware",
    # the local GPU index a process prints (`Process rank: 1, device: cuda:1`): what one node holds
    "process_device": "hardware",
    # a launch script's topology variables, set or echoed (`NUM_NODES: 2`, `GPUS_PER_NODE=4`)
    "topology_setting": "launcher", "nodes_print": "launcher",
    # a Lightning DeepSpeed strategy's name (`strategy="deepspeed_stage_2"`): what the run was configured with
    "lightning_strategy": "config",
    # a parameter count read from the model's name (`Llama-3.2-1B`): an estimate, below everything printed
    "model_name": "hardware",
    # the highest rank a line prefix names is a lower bound on the world size, never a claim of it (assemble)
    "rank_prefix": "hardware",
    # the accumulation as the global batch over micro-batch x data-parallel size: below everything printed
    "from_global_batch": "hardware",
    # a config file's name (`ds_z3_config.json`): what it was named for, below everything it or the job prints
    "config_file_name": "hardware",
    # what a thread's sentences state (`on 2 host, 8 gpus per host`): below everything a program printed
    "stated_in_text": "text",
    # a setting named in a config or command the text holds (`NUM_GPUS: 1`, `trainer.n_gpus_per_node=8`)
    "config_setting": "config",
    # diagnose's own options (`--seq-len`, `--gpu-memory`)
    "user_option": "user",
}
# Counts of which the job's largest printed value is the true one (sub-groups print smaller ones).
_LARGEST_WINS = ("world_size", "nodes", "gpus_per_node")


# What the running job printed: every line kind of the facts frame (parsers/kinds.py, by name) and these, which the
# readers below emit. Every origin has a tier here; one that does not is a reader that forgot to register, and
# tests/test_reading.py fails on it (tier_of gives it the least trusted tier meanwhile, never the most).
JOB_ORIGINS = frozenset({
    "ds_config_dump", "ds_config_world_size", "ds_dist_world_size", "ds_dp_world_size", "ds_world_info", "ds_nnodes",
    "ds_backend", "ds_accelerator", "ds_stage3_init", "ds_mpi_world", "ds_mpi_local", "ds_optimizer", "ds_version",
    "ds_report_version", "cpu_adam", "flops_profiler_enabled", "flops_profile", "gpu_name", "hf_block_value",
    "horovod_nccl", "megatron_arg", "megatron_dp", "megatron_tp", "megatron_pp", "megatron_world", "megatron_params",
    "peft_params", "model_params_script", "nccl", "nccl_hosts", "nccl_version", "torch_barrier", "wandb_config",
    "wandb_version", "world_size_print",
})


def _origin_tiers() -> dict[str, str]:
    from diagnose.parsers.kinds import KINDS

    job = {k.name: "job" for k in KINDS if k.frame == "facts"} | {o: "job" for o in JOB_ORIGINS}
    return job | _ORIGIN_TIERS


ORIGIN_TIERS = _origin_tiers()


def tier_of(origin: str) -> str:
    return ORIGIN_TIERS.get(origin, TIERS[-1])


def with_user_claims(facts: RunFacts, **values: Any) -> RunFacts:
    """The user's own claims (`--seq-len`, `--gpu-memory`), at their tier: each fills a fact the sources leave
    unknown or only a thread's prose states (what the run printed is what ran), and is evidenced as the user's."""
    changes: dict[str, Any] = {}
    evidence = dict(facts.evidence)
    user = TIERS.index(tier_of("user_option"))
    for name, value in values.items():
        held = facts.evidence.get(name)
        if value is None or (getattr(facts, name) is not None and (held is None or TIERS.index(held.tier) < user)):
            continue
        changes[name] = value
        evidence[name] = Evidence(value, "user_option", -1, None)
    return replace(facts, **changes, evidence=evidence) if changes else facts


# DeepSpeed JSON keys that are run facts: (fact, how the value is read), from each fact's `ds_config` key and type
# (parsers/fact_table.py). The one table the readers (a DeepSpeed JSON's claims), the recommender and the rules (a
# key's effective value: RunFacts.effective) share.
def _reader(kind: str) -> Callable[[Any], Any]:
    return {"int": lambda v: _int(v), "float": lambda v: _float(v), "bool": lambda v: _bool(v),
            "str": lambda v: None if v is None else str(v)}[kind]


DS_CONFIG_FACTS: dict[str, tuple[str, Callable[[Any], Any]]] = {
    key: (fact, _reader(BY_NAME[fact].type)) for key, fact in DS_KEY_FACTS.items()}
# DeepSpeed JSON sections whose `enabled` names the precision fact.
DS_PRECISION_SECTIONS = ("bf16", "fp16")
# Training-loop arguments that are run facts (HF Trainer's and Megatron's names; Megatron spells its flags with dashes).
TRAINER_ARG_FACTS = ARG_FACTS | {a.replace("_", "-"): f for a, f in ARG_FACTS.items()}


@dataclass(frozen=True)
class NcclFacts:
    version: str | None = None
    network: str | None = None  # "Socket" | "IB" | "IBext" | ... from `Using network X`
    ib_device_found: bool | None = None  # False on `NET/IB : No device found` / libibverbs missing
    transports: dict[str, int] = field(default_factory=dict)  # channel counts: P2P/IPC, SHM, NET/Socket, NET/IB
    env: dict[str, str] = field(default_factory=dict)  # `X set by environment to Y`
    hosts: tuple[str, ...] = ()
    n_ranks: int | None = None
    n_nodes: int | None = None
    local_ranks: int | None = None
    local_devices: int | None = None  # the most CUDA devices one host's NCCL lines name (`host:pid:tid [dev]`)


@dataclass(frozen=True)
class SmiTable:
    """One source's nvidia-smi table as printed: each GPU's memory in use and utilisation (in the table's order) and
    each compute process's GPU and PID. What they add up to is the rules' to judge."""

    usage: tuple[tuple[int, int], ...] = ()  # (MiB in use, utilisation %)
    processes: tuple[tuple[int, int], ...] = ()  # (GPU index, PID)
    source: int = -1
    lines: tuple[int, ...] = ()  # the rows read, for the evidence


@dataclass(frozen=True)
class RunFacts:
    world_size: int | None = None  # processes in the job
    nodes: int | None = None
    gpus_per_node: int | None = None
    tensor_parallel: int | None = None
    pipeline_parallel: int | None = None
    data_parallel: int | None = None
    allocated_gpus: int | None = None  # what the scheduler granted (#SBATCH), where it says
    gpu_memory_gb: float | None = None  # per GPU, where a source prints it (nvidia-smi's table)
    hostnames: tuple[str, ...] = ()
    gpu_name: str | None = None
    launcher: str | None = None
    backend: str | None = None
    accelerator: str | None = None
    zero_stage: int | None = None
    offload_optimizer: str | None = None  # device ("cpu" | "nvme") or None
    offload_param: str | None = None
    precision: str | None = None  # "bf16" | "fp16" | "fp32"
    micro_batch_per_gpu: int | None = None
    grad_accum_steps: int | None = None
    train_batch_size: int | None = None
    model_params: int | None = None
    optimizer: str | None = None
    steps_per_print: float | None = None
    wall_clock_breakdown: bool | None = None
    comms_logger: bool | None = None
    flops_profiler: bool | None = None
    horovod_nccl: bool | None = None
    hybrid_engine: bool | None = None  # DeepSpeed-Chat's --enable_hybrid_engine (fast generation in RLHF)  # Horovod's build has NCCL tensor operations (`horovodrun --check-build`)
    overlap_comm: bool | None = None
    contiguous_gradients: bool | None = None
    reduce_bucket_size: float | None = None
    allgather_bucket_size: float | None = None
    prefetch_bucket_size: float | None = None
    gradient_checkpointing: bool | None = None
    dataloader_num_workers: int | None = None
    logging_steps: int | None = None  # HF's steps between two log dicts
    total_steps: int | None = None
    seq_len: int | None = None
    hidden_size: int | None = None
    num_layers: int | None = None
    num_heads: int | None = None
    versions: dict[str, str] = field(default_factory=dict)
    env: dict[str, Evidence] = field(default_factory=dict)
    nccl: NcclFacts = field(default_factory=NcclFacts)
    smi: SmiTable | None = None  # a pasted nvidia-smi's usage and processes, where a source has both
    hf: dict[str, int] = field(default_factory=dict)
    accelerate: dict[str, Any] = field(default_factory=dict)
    ds_config: dict[str, Any] = field(default_factory=dict)  # the user's DeepSpeed JSON (file or printed `json =`)
    ds_engine: dict[str, Any] = field(default_factory=dict)  # the engine's printed effective config
    script_args: dict[str, str] = field(default_factory=dict)
    flops: dict[str, str] = field(default_factory=dict)
    evidence: dict[str, Evidence] = field(default_factory=dict)  # fact name -> where its value came from
    # the training loop the run uses: hf_trainer (and trainers built on it) | megatron | dschat | lightning | custom;
    # None with no log at all (run_model.framework_of decides, from the lines the run printed)
    framework: str | None = None
    # values outside their physical range, set aside rather than trusted: (fact, the claim, why)
    set_aside: tuple[tuple[str, Evidence, str], ...] = ()
    claims: dict[str, list[Evidence]] = field(default_factory=dict)  # topology facts: every value seen

    # Derived facts, decided here once; rules, the planner, reports and compare ask these instead of re-deriving.
    @property
    def cpu_run(self) -> bool:
        """Runs on the CPU: DeepSpeed's CPU accelerator, or gloo with no GPU named (gloo beside a named GPU is a GPU
        run whose collectives go through gloo, e.g. Horovod built without NCCL)."""
        return self.accelerator == "cpu" or (self.backend == "gloo" and not self.gpu_name)

    @property
    def offloaded(self) -> bool:
        """Optimizer states or parameters offloaded (to the CPU or NVMe)."""
        return self.offload_optimizer not in (None, "none") or self.offload_param not in (None, "none")

    def effective(self, target: str, key: str) -> tuple[bool, Any]:
        """-> (known, value) of a config key as this run had it: a run fact where the key is one (what the engine
        printed beats the JSON), else the DeepSpeed JSON, else the engine's printed config."""
        if target == "env":
            ev = self.env.get(key)
            return (ev is not None, ev.value if ev is not None else None)
        if target == "accelerate":
            if key == "mixed_precision" and self.precision:
                return True, {"fp32": "no"}.get(self.precision, self.precision)
            return (key in self.accelerate, self.accelerate.get(key))
        if target == "trainer_args":
            if key in self.script_args:
                return True, self.script_args[key]
            fact = TRAINER_ARG_FACTS.get(key)
            value = getattr(self, fact) if fact else None
            return (value is not None, value)
        if target == "ds_config":
            if key in ("bf16.enabled", "fp16.enabled") and self.precision:
                return True, self.precision == key.split(".")[0]
            fact = DS_CONFIG_FACTS.get(key, (None, None))[0]
            if fact and getattr(self, fact) is not None:
                value = getattr(self, fact)
                return True, "none" if fact.startswith("offload") and value in (None, "none") else value
            found, value = dig(self.ds_config, key)
            if found:
                return True, value
            return _engine_value(self.ds_engine, key)
        return False, None

    @property
    def nccl_transport(self) -> str | None:
        """How NCCL crossed nodes: "ib" (InfiniBand / RoCE) or "socket" (TCP), from its INFO lines; None if unknown."""
        n = self.nccl
        if n.network and n.network.upper().startswith("IB"):
            return "ib"
        if n.network == "Socket" or n.ib_device_found is False or "NET/Socket" in n.transports:
            return "socket"
        if any(k.startswith("NET/IB") for k in n.transports):
            return "ib"
        return None


@dataclass
class FactInputs:
    facts: pl.DataFrame
    env: pl.DataFrame
    nccl: pl.DataFrame
    blocks: list[tuple[int, Blocks]]
    ds_configs: list[tuple[int, dict[str, Any]]]
    accelerate_configs: list[tuple[int, dict[str, Any]]]
    scripts: list[tuple[int, LaunchScript]]
    wandb: list[tuple[int, Any]] = field(default_factory=list)  # (source, parsers.wandb_offline.WandbRun)
    embedded_scripts: list[tuple[int, LaunchScript]] = field(default_factory=list)  # launch commands inside logs
    faults: list[str] = field(default_factory=list)  # fact readers that raised, named; the other readers' facts stand
    stated: pl.DataFrame | None = None  # what sentences state (parsers/prose.py): settings as the lowest-tier claims


class _Claims:
    def __init__(self) -> None:
        self.by_fact: dict[str, list[Evidence]] = {}

    def add(self, fact: str, value: Any, origin: str, source: int, line: int | None = None) -> None:
        if value is None or value == "" or value == "auto":
            return
        self.by_fact.setdefault(fact, []).append(Evidence(value, origin, source, line))

    def once_per_line(self) -> None:
        """One claim per fact, line and value: two readers of one line (a launch script read as a script and as
        text) say it once, by the better tier."""
        for fact, found in self.by_fact.items():
            best: dict[tuple[int, int | None, str], Evidence] = {}
            for ev in found:
                k = (ev.source, ev.line, repr(ev.value))
                if ev.line is not None and (k not in best or TIERS.index(ev.tier) < TIERS.index(best[k].tier)):
                    best[k] = ev
            kept = set(map(id, best.values()))
            self.by_fact[fact] = [ev for ev in found if ev.line is None or id(ev) in kept]

    def first(self, fact: str) -> Evidence | None:
        """The winning claim: the best tier; within the job's output the largest count for topology facts, else
        the first claim made."""
        found = self.by_fact.get(fact)
        if not found:
            return None
        best = min(TIERS.index(ev.tier) for ev in found)
        top = [ev for ev in found if TIERS.index(ev.tier) == best]
        if fact in _LARGEST_WINS and best == 0:
            ints = [ev for ev in top if isinstance(ev.value, int)]
            if ints:
                return max(ints, key=lambda ev: ev.value)
        return top[0]


def _guard(inp: FactInputs, unit: str, read: Callable[..., None], *args: Any) -> None:
    """Run one fact reader; one that raises on odd content is named in the report and the others still count."""
    try:
        read(*args)
    except Exception as e:  # noqa: BLE001 - a fault stays local to its reader
        inp.faults.append(fault(f"fact reader {unit}", e))


def assemble(inp: FactInputs) -> RunFacts:
    c = _Claims()
    kv = _fact_rows(inp.facts)
    # Precedence is the order of the `add` calls per fact: what the engine printed beats what a config file asked
    # for, which beats what a launcher implied.
    engine: dict[str, Any] = {}
    user_json: dict[str, Any] = {}
    flops: dict[str, str] = {}
    for src, blk in inp.blocks:
        if blk.ds_config and not engine:
            engine = blk.ds_config
            where = blk.where.get("ds_config_dump", (src, None))
            _guard(inp, "DeepSpeed engine config", _engine_claims, c, engine, where[0], where[1])
        if blk.ds_user_config and not user_json:
            user_json = blk.ds_user_config
        if blk.flops and not flops:
            flops = blk.flops
    if not engine:
        # The engine's dump cut above its header (an issue paste of the tail of `DeepSpeedEngine configuration:`):
        # its `key .... value` lines, read one by one, say the same.
        rows = [r for r in kv if r["key"].startswith("ds.") and r["origin"] == "ds_config_kv"]
        if rows:
            engine = {}
            for r in rows:
                engine.setdefault(r["key"][3:], r["value"])
            _guard(inp, "DeepSpeed engine config", _engine_claims, c, engine, rows[0]["source"], rows[0]["line"])
    ds_config = user_json or (inp.ds_configs[0][1] if inp.ds_configs else {})
    for src, cfg in ([(s, user_json) for s, b in inp.blocks if b.ds_user_config][:1] + inp.ds_configs):
        _guard(inp, "DeepSpeed JSON", _ds_json_claims, c, cfg, "ds_config", src)
    for src, cfg in inp.accelerate_configs:
        _guard(inp, "accelerate YAML", _accelerate_claims, c, cfg, src)
    _guard(inp, "log facts", _log_claims, c, kv)
    for src, script in inp.scripts:
        _guard(inp, "launch script", _script_claims, c, script, src)
    for src, script in inp.embedded_scripts:
        _guard(inp, "launch command", _script_claims, c, script, src, "log_launch_command")
    for src, run in inp.wandb:
        _guard(inp, "W&B config", _wandb_claims, c, run, src)
    if inp.stated is not None and inp.stated.height:
        _guard(inp, "stated settings", _stated_claims, c, inp.stated)
    try:
        nccl = _nccl(inp.nccl, c)
    except Exception as e:  # noqa: BLE001 - a fault stays local to its reader
        nccl = NcclFacts()
        inp.faults.append(fault("fact reader NCCL", e))
    _topology_from_hosts(c, nccl)
    if flops:
        c.add("micro_batch_per_gpu", _int(flops.get("batch_size_per_gpu")), "flops_profile", -1)
        c.add("model_params", _scaled(flops.get("params_per_gpu")), "flops_profile", -1)
    env = _env(inp, c)

    c.once_per_line()
    # A LoRA run: the HF Trainer's `Number of trainable parameters` counts the adapter, PEFT's line the whole model
    params = c.by_fact.get("model_params", [])
    if any(ev.origin == "peft_params" for ev in params):
        c.by_fact["model_params"] = [ev for ev in params if ev.origin != "hf_block_value"]
    set_aside = _set_aside_implausible(c)

    def val(fact: str) -> Any:
        ev = c.first(fact)
        return None if ev is None or ev.value == "none" else ev.value

    # Megatron's count on model-parallel rank (0, 0) is the model's where nothing is split across ranks
    shard = c.first("megatron_params_rank0")
    if shard is not None and val("tensor_parallel") == 1 and val("pipeline_parallel") == 1:
        c.add("model_params", shard.value, shard.origin, shard.source, shard.line)
    stated = c.first("model_params")
    if (stated is None or stated.tier == "text") and val("hidden_size") and val("num_layers"):
        # A transformer's weights are ~12 L H^2 (attention 4 H^2 + MLP 8 H^2 per layer; Kaplan et al. 2020, table 1)
        # where no source prints the count; embeddings are left out, so it is a lower bound. It outranks a size a
        # sentence states (`512M parameter model` in a script's comment), as every printed source does.
        c.add("model_params", 12 * val("num_layers") * val("hidden_size") ** 2, "estimate", -1)
    # nvidia-smi's process table: the GPUs running a compute process on the host that printed it (the lowest tier),
    # where each process holds one GPU; a process on several GPUs (one process driving them all) counts no GPUs.
    procs = [ev.value for ev in c.by_fact.get("smi_process", []) if ev.value is not None]
    smi = {gpu for gpu, _ in procs}
    spread = any(len({gpu for gpu, p in procs if p == pid}) > 1 for pid in {pid for _, pid in procs})
    if smi and not spread:
        first_smi = c.by_fact["smi_process"][0]
        c.add("gpus_per_node", len(smi), "nvidia_smi", first_smi.source, first_smi.line)
        if len(smi) > 1 and not c.by_fact.get("nodes") and not c.by_fact.get("hostname"):
            c.add("nodes", 1, "nvidia_smi", first_smi.source, first_smi.line)
    # HF: the summary's samples over optimizer steps per second, over micro-batch x accumulation (whatever source
    # gave those two), is the world size (the lowest tier: a derived count). The printed line is the evidence where
    # there is one; a W&B run's summary holds the same figures.
    rates = next((ev for ev in c.by_fact.get("hf_summary_rates", []) if ev.line is not None),
                 c.first("hf_summary_rates"))
    micro, accum = val("micro_batch_per_gpu"), val("grad_accum_steps")
    if rates is not None and micro and accum:
        c.add("world_size", _world_from_rates(rates.value, micro * accum), "hf_summary_rates", rates.source,
              rates.line)
    world, nodes, gpn = val("world_size"), val("nodes"), val("gpus_per_node")
    # A process on local GPU world-1 shares its node with the whole world (one process a GPU): one node, where no
    # source counts them (the lowest tier, as nvidia-smi's process table).
    device = max((ev for ev in c.by_fact.get("process_device", []) if ev.value is not None), key=lambda ev: ev.value,
                 default=None)
    if device is not None and nodes is None and world and device.value + 1 == world:
        c.add("nodes", 1, "process_device", device.source, device.line)
        nodes = 1

    tp, pp, dp = val("tensor_parallel"), val("pipeline_parallel"), val("data_parallel")
    if world and (tp or pp) and dp is None and world % ((tp or 1) * (pp or 1)) == 0:
        dp = world // ((tp or 1) * (pp or 1))
    accum = val("grad_accum_steps")
    glob, micro = val("train_batch_size"), val("micro_batch_per_gpu")
    # Megatron prints no accumulation: it is the global batch over micro-batch x data-parallel size (its arguments
    # derive it so), and so is DeepSpeed's where only train_batch_size is set. Only with the data-parallel size known
    # (a world size alone may hold tensor- and pipeline-parallel ranks too) and where it divides evenly.
    if accum is None and glob and micro and dp and glob % (micro * dp) == 0:
        ev = c.first("train_batch_size")
        c.add("grad_accum_steps", glob // (micro * dp), "from_global_batch", ev.source if ev else -1,
              ev.line if ev else None)
    if nodes and gpn and world and nodes * gpn != world and (ws := c.first("world_size")) is not None \
            and ws.tier == "job":
        # the job's own count wins; a per-node count from a lower tier that does not fit it is dropped
        ev_g = c.first("gpus_per_node")
        if ev_g is not None and ev_g.tier != "job":
            gpn = world // nodes if world % nodes == 0 else None
    # Nodes and GPUs per node from sources above the world size's (`trainer.num_nodes=2 trainer.devices=8` in a
    # command, `8x A100` in a sentence): the topology they give wins, and the weaker count stays among the claims.
    topology: Evidence | None = None
    if nodes and gpn and world and nodes * gpn != world:
        ws, en, eg = c.first("world_size"), c.first("nodes"), c.first("gpus_per_node")
        if ws is not None and en is not None and eg is not None \
                and TIERS.index(ws.tier) > max(TIERS.index(en.tier), TIERS.index(eg.tier)):
            world, topology = nodes * gpn, eg
    if gpn is None and world and nodes:
        gpn = world // nodes if world % nodes == 0 else None
    if world is None and nodes and gpn:
        world = nodes * gpn
    if nodes is None and world and gpn:
        nodes = max(1, world // gpn)
    # The world is never smaller than the highest rank a line prefix names (`[Rank 7]`, `[rank7]:`, `[1,7]<stdout>`):
    # a smaller count (srun's task labels taken for ranks, one node's processes) gives way, and both lines stay.
    seen = max(c.by_fact.get("ranks_seen", []), key=lambda ev: ev.value, default=None)
    bound: Evidence | None = None
    if seen is not None and seen.value > (world or 1):
        bound = Evidence(seen.value, "rank_prefix", seen.source, seen.line)
        c.by_fact.setdefault("world_size", []).append(bound)
        world = seen.value
        if nodes and world % nodes == 0 and (gpn is None or nodes * gpn != world):
            gpn = world // nodes
    if world == 1 and nodes is None:  # one process runs on one machine
        nodes = 1
    hosts = tuple(dict.fromkeys(h for ev in c.by_fact.get("hostname", []) for h in [ev.value]))
    versions = {k[len("version."):]: v.value for k, vs in c.by_fact.items() if k.startswith("version.") for v in vs[:1]}
    evidence = {k: ev for k in c.by_fact if (ev := c.first(k)) is not None}
    if topology is not None and bound is None:
        evidence["world_size"] = Evidence(world, topology.origin, topology.source, topology.line)
    if bound is not None:
        evidence["world_size"] = bound
    # every declared fact from its winning claim (parsers/fact_table.py), then the topology the rules above derived
    declared: dict[str, Any] = {f.name: val(f.name) for f in FACTS if not f.derived}
    declared.update(world_size=world, nodes=nodes, gpus_per_node=gpn, tensor_parallel=tp, pipeline_parallel=pp,
                    data_parallel=dp)
    return RunFacts(
        **declared, allocated_gpus=val("allocated_gpus"), hostnames=hosts, comms_logger=val("comms_logger"),
        flops_profiler=val("flops_profiler"), horovod_nccl=val("horovod_nccl"),
        versions=versions, env=env, nccl=nccl, smi=_smi_table(kv), hf=_hf_block(kv),
        accelerate=_accelerate_view(inp, kv),
        ds_config=ds_config, ds_engine=engine,
        script_args={k: s.value for _, sc in inp.scripts for k, s in sc.script_args.items()},
        flops=flops, evidence=evidence, set_aside=set_aside,
        claims={k: v for k, v in c.by_fact.items() if k in ("world_size", "nodes", "gpus_per_node", "allocated_gpus")},
    )


GPU_MEMORY_RANGE_GB = BY_NAME["gpu_memory_gb"].plausible or (0.0, float("inf"))


def _set_aside_implausible(c: _Claims) -> tuple[tuple[str, Evidence, str], ...]:
    """Drop claims whose value cannot be physical (outside the fact's plausible range in parsers/fact_table.py, or
    a count past MAX_COUNT), keeping them (with their line) for the report."""
    out = []
    for fact, claims in c.by_fact.items():
        spec = BY_NAME.get(fact)
        bad: list[tuple[Evidence, str]] = []
        for ev in claims:
            number = isinstance(ev.value, (int, float)) and not isinstance(ev.value, bool)
            if number and isinstance(ev.value, int) and abs(ev.value) >= MAX_COUNT:
                bad.append((ev, f"past {MAX_COUNT:.0e}, larger than any count a run prints"))
            elif number and spec is not None and spec.plausible is not None \
                    and not spec.plausible[0] <= ev.value <= spec.plausible[1]:
                bad.append((ev, spec.implausible))
        out += [(fact, ev, why) for ev, why in bad]
        if bad:
            c.by_fact[fact] = [ev for ev in claims if all(ev is not b for b, _ in bad)]
    return tuple(out)


def _smi_process(value: str) -> tuple[int, int] | None:
    """`7   N/A  N/A     47038` (GPU, GI, CI, PID) or `1     23456` -> (GPU, PID)."""
    parts = value.split()
    return (int(parts[0]), int(parts[-1])) if len(parts) >= 2 and parts[0].isdigit() and parts[-1].isdigit() \
        else None


_USAGE = re.compile(r"(\d+)MiB\s*/\s*\d+MiB\s*\|\s*(\d+)%")


def _smi_table(kv: list[dict[str, Any]]) -> SmiTable | None:
    """The first source's nvidia-smi usage rows and process rows, where it printed both."""
    for src in dict.fromkeys(r["source"] for r in kv if r["key"] == "nvidia_smi.process"):
        rows = sorted((r for r in kv if r["source"] == src and r["key"] in ("nvidia_smi.usage", "nvidia_smi.process")),
                      key=lambda r: r["line"] or 0)
        usage = tuple((int(m.group(1)), int(m.group(2))) for r in rows if r["key"] == "nvidia_smi.usage"
                      and (m := _USAGE.search(r["value"])) is not None)
        procs = tuple(p for r in rows if r["key"] == "nvidia_smi.process" and (p := _smi_process(r["value"])))
        if usage and procs:
            return SmiTable(usage, procs, int(src), tuple(int(r["line"]) for r in rows if r["line"] is not None))
    return None


def _fact_rows(facts: pl.DataFrame) -> list[dict[str, Any]]:
    if facts.height == 0:
        return []
    return facts.select("source", "line", "key", "value", "origin").to_dicts()


def _engine_claims(c: _Claims, eng: dict[str, Any], src: int, line: int | None) -> None:
    o = "ds_config_dump"
    c.add("world_size", _int(eng.get("world_size")), o, src, line)
    zero = str(eng.get("zero_config", ""))
    # Newer versions print the stage only inside `zero_config .... stage=3 contiguous_gradients=True ...`.
    c.add("zero_stage", _int(eng.get("zero_optimization_stage")) if eng.get("zero_optimization_stage") is not None
          else _int(_repr_field(zero, "stage")), o, src, line)
    c.add("micro_batch_per_gpu", _int(eng.get("train_micro_batch_size_per_gpu")), o, src, line)
    c.add("grad_accum_steps", _int(eng.get("gradient_accumulation_steps")), o, src, line)
    c.add("train_batch_size", _int(eng.get("train_batch_size")), o, src, line)
    c.add("steps_per_print", _float(eng.get("steps_per_print")), o, src, line)
    c.add("wall_clock_breakdown", _bool(eng.get("wall_clock_breakdown")), o, src, line)
    c.add("optimizer", eng.get("optimizer_name") if eng.get("optimizer_name") not in ("None", None) else None, o, src,
          line)
    bf16 = _repr_field(eng.get("bfloat16_config"), "enabled") or eng.get("bfloat16_enabled")
    fp16 = _repr_field(eng.get("float16_config"), "enabled") or eng.get("fp16_enabled")
    if _bool(bf16):
        c.add("precision", "bf16", o, src, line)
    elif _bool(fp16):
        c.add("precision", "fp16", o, src, line)
    elif bf16 is not None or fp16 is not None:
        c.add("precision", "fp32", o, src, line)
    zero = str(eng.get("zero_config", ""))
    for fact, key in (("overlap_comm", "overlap_comm"), ("contiguous_gradients", "contiguous_gradients")):
        c.add(fact, _bool(_repr_field(zero, key)), o, src, line)
    for fact, key in (("reduce_bucket_size", "reduce_bucket_size"), ("allgather_bucket_size", "allgather_bucket_size"),
                      ("prefetch_bucket_size", "prefetch_bucket_size")):
        c.add(fact, _float(_repr_field(zero, key)), o, src, line)
    for fact, key in (("offload_optimizer", "offload_optimizer"), ("offload_param", "offload_param")):
        m = re.search(key + r"=(None|\w+\(device='?(\w+)'?)", zero)
        if m:
            dev = m.group(2)
            c.add(fact, dev if dev and dev != "none" else "none", o, src, line)
    flops_cfg = eng.get("flops_profiler_config")
    if isinstance(flops_cfg, dict):
        c.add("flops_profiler", bool(flops_cfg.get("enabled")), o, src, line)


def _ds_json_claims(c: _Claims, cfg: dict[str, Any], origin: str, src: int) -> None:
    zero: dict[str, Any] = cfg["zero_optimization"] if isinstance(cfg.get("zero_optimization"), dict) else {}
    for key, (fact, read) in DS_CONFIG_FACTS.items():
        if key.endswith(".device"):  # offload sections: below, "none" when the section names no device
            continue
        found, value = dig(cfg, key)
        if key == "zero_optimization.stage" and not found and "zero_optimization" in cfg:
            found, value = True, 0  # a zero_optimization section without a stage is stage 0
        c.add(fact, read(value) if found else None, origin, src)
    for fact in ("offload_optimizer", "offload_param"):
        section = zero.get(fact)
        if isinstance(section, dict):
            c.add(fact, str(section.get("device", "none")), origin, src)
    for prec in DS_PRECISION_SECTIONS:
        section = cfg.get(prec)
        if isinstance(section, dict) and _bool(section.get("enabled")):
            c.add("precision", prec, origin, src)
    if isinstance(cfg.get("comms_logger"), dict):
        c.add("comms_logger", _bool(cfg["comms_logger"].get("enabled")), origin, src)
    if isinstance(cfg.get("flops_profiler"), dict):
        c.add("flops_profiler", _bool(cfg["flops_profiler"].get("enabled")), origin, src)
    opt = cfg.get("optimizer")
    if isinstance(opt, dict):
        c.add("optimizer", str(opt.get("type")), origin, src)
    ac = cfg.get("activation_checkpointing")
    if isinstance(ac, dict) and (ac.get("partition_activations") or ac.get("cpu_checkpointing")):
        c.add("gradient_checkpointing", True, origin, src)


def _accelerate_claims(c: _Claims, cfg: dict[str, Any], src: int) -> None:
    o = "accelerate_yaml"
    machines = _int(cfg.get("num_machines"))
    procs = _int(cfg.get("num_processes"))
    c.add("world_size", procs, o, src)
    c.add("nodes", machines, o, src)
    if procs and machines:
        c.add("gpus_per_node", procs // machines if procs % machines == 0 else None, o, src)
    mp = cfg.get("mixed_precision")
    if mp is not None:
        c.add("precision", {"no": "fp32", "bf16": "bf16", "fp16": "fp16", "fp8": "fp8"}.get(str(mp), str(mp)), o, src)
    ds: dict[str, Any] = cfg["deepspeed_config"] if isinstance(cfg.get("deepspeed_config"), dict) else {}
    c.add("zero_stage", _int(ds.get("zero_stage")), o, src)
    c.add("grad_accum_steps", _int(ds.get("gradient_accumulation_steps")), o, src)
    for fact, key in (("offload_optimizer", "offload_optimizer_device"), ("offload_param", "offload_param_device")):
        if ds.get(key) is not None:
            c.add(fact, str(ds.get(key)), o, src)
    c.add("launcher", "accelerate", o, src)




def _log_claims(c: _Claims, kv: list[dict[str, Any]]) -> None:
    for r in kv:
        key, value, src, line, origin = r["key"], r["value"], r["source"], r["line"], r["origin"]
        if key == "world_size" or key == "dp_world_size":
            c.add("world_size", _int(value), origin, src, line)
        elif key == "launcher.dist_world_size":
            c.add("world_size", _int(value), origin, src, line)
            c.add("launcher", "deepspeed", origin, src, line)
        elif key == "launcher.nnodes":
            c.add("nodes", _int(value), origin, src, line)
        elif key == "launcher.world_info":
            _world_info(c, value, origin, src, line)
        elif key == "launcher.cmd":
            m = re.search(r"--world_info=([A-Za-z0-9+/=]+)", value)
            if m:
                try:
                    _world_info(c, base64.urlsafe_b64decode(m.group(1) + "==").decode(), "ds_world_info", src, line)
                except (ValueError, UnicodeDecodeError):
                    pass
            c.add("launcher", "deepspeed", origin, src, line)
            # The runner's argv: `--num_gpus`, `--num_nodes` and the script's `--zero_stage` are launcher flags.
            _script_claims(c, parse_script(value), src, "ds_cmd", line)
        elif key == "accelerate.num_processes":
            c.add("world_size", _int(value), origin, src, line)
        elif key in ("accelerate.num_machines",):
            c.add("nodes", _int(value), origin, src, line)
        elif key in ("accelerate.mixed_precision",):
            c.add("precision", {"no": "fp32"}.get(value, value), origin, src, line)
        elif key == "lightning.deepspeed_stage":  # `2_offload` of Lightning's `deepspeed_stage_2_offload`
            stage, _, offload = value.partition("_")
            c.add("zero_stage", _int(stage), origin, src, line)
            if offload:  # `offload_nvme` sends both to NVMe; stage 3's `offload` the parameters too
                device = "nvme" if offload.endswith("nvme") else "cpu"
                c.add("offload_optimizer", device, origin, src, line)
                if stage == "3":
                    c.add("offload_param", device, origin, src, line)
        elif key == "zero.stage_created":
            c.add("zero_stage", _int(value), origin, src, line)
        elif key == "zero.cpu_offload" and value == "True":
            c.add("offload_optimizer", "cpu", origin, src, line)
        elif key == "optimizer.cpu_adam_simd":
            c.add("offload_optimizer", "cpu", origin, src, line)
        elif key == "optimizer.Basic":
            c.add("optimizer", value, origin, src, line)
        elif key == "backend":
            c.add("backend", value, origin, src, line)
        elif key == "accelerator":
            c.add("accelerator", value, origin, src, line)
        elif key == "flops_profiler.enabled":
            c.add("flops_profiler", value == "True", origin, src, line)
        elif key.startswith("version."):
            c.add(key, value, origin, src, line)
        elif key.startswith("ds_report.") or key.startswith("env_report."):
            name = key.split(".", 1)[1].lower().replace(" version", "").replace("deepspeed info", "deepspeed")
            name = {"torch cuda": "cuda", "nvcc": "cuda", "pytorch": "torch"}.get(name, name)
            c.add("version." + name, value, origin, src, line)
        elif key.startswith("setting.") and key[8:] in SETTING_FACTS:
            c.add(SETTING_FACTS[key[8:]], _int(value), origin, src, line)
        elif key in LOG_KEY_FACTS:  # the fact frame's keys that are an integer run fact as printed
            c.add(LOG_KEY_FACTS[key], _int(value), origin, src, line)
        elif key == "gpu_name":
            c.add("gpu_name", value.strip(), origin, src, line)
        elif key in ("zero.stage3_banner",):
            c.add("zero_stage", 3, origin, src, line)
        elif key == "horovod.nccl":
            c.add("horovod_nccl", value == "X", origin, src, line)
        elif key == "mpi.local_rank":  # the largest local rank seen + 1 = processes per node
            c.add("gpus_per_node", (_int(value) or 0) + 1, origin, src, line)
        elif key.startswith("args."):
            _megatron_arg(c, key[5:], value, origin, src, line)
        elif key == "nvidia_smi.gpu":
            c.add("gpu_name", value.strip(), "nvidia_smi", src, line)
        elif key.startswith("topology.") and key[9:] in SCRIPT_VAR_FACTS:
            c.add(SCRIPT_VAR_FACTS[key[9:]], _int(value), origin, src, line)
        elif key == "megatron.params_rank0":
            c.add("megatron_params_rank0", _int(value), origin, src, line)
        elif key == "ranks.max_seen":
            c.add("ranks_seen", (_int(value) or 0) + 1, origin, src, line)
        elif key == "repr.args":
            _args_repr(c, value, origin, src, line)
        elif key == "model.name":
            c.add("model_params", size_in_name(value), "model_name", src, line)
        elif key == "hf.summary_rates":
            c.add("hf_summary_rates", _rates(value), origin, src, line)
        elif key == "process.cuda_device":
            c.add("process_device", _int(value), "process_device", src, line)
        elif key == "nvidia_smi.process" and (proc := _smi_process(value)) is not None:
            c.add("smi_process", proc, "nvidia_smi", src, line)
        elif key == "nvidia_smi.memory_mib":
            c.add("gpu_memory_gb", round((_int(value) or 0) / 1024.0, 1) or None, "nvidia_smi", src, line)
    # HF: world size = total batch / (per-device batch x accumulation)
    total, micro, ga = c.first("train_batch_size"), c.first("micro_batch_per_gpu"), c.first("grad_accum_steps")
    if total and micro and ga and total.origin == "hf_block_value" and micro.value and ga.value:
        ws = total.value // (micro.value * ga.value)
        c.add("world_size", ws if ws * micro.value * ga.value == total.value else None, "hf_block_value", total.source,
              total.line)


# The HF Trainer rounds its summary rates to 4 decimals (trainer_utils.speed_metrics), and newer versions print
# them to 4 significant digits (`'18.73'`); the world size from their ratio is taken only where that rounding and a
# short last batch (the samples count the dataset, the steps its batches) leave it within WORLD_FROM_RATES_SLACK of
# a whole number.
_RATE_ROUNDING, _RATE_DIGITS = 0.5e-4, 0.5e-3
WORLD_FROM_RATES_SLACK = 0.1


def _rates(printed: str) -> tuple[float, float] | None:
    """`'train_samples_per_second': 0.8, 'train_steps_per_second': 0.1` -> (0.8, 0.1)."""
    found = [_float(v) for v in re.findall(r"': '?([\d.]+)", printed)]
    return (found[0], found[1]) if len(found) == 2 and found[0] and found[1] else None


def _world_from_rates(rates: tuple[float, float], per_process: int) -> int | None:
    """(samples, optimizer steps) per second and micro-batch x accumulation -> the world size, or None where the
    figures cannot decide it."""
    samples, steps = rates
    if samples <= 0 or steps <= 0:
        return None
    # the widest the ratio can be, given the rounding of both figures
    def off(v: float) -> float:
        return max(_RATE_ROUNDING, _RATE_DIGITS * v)

    low = (samples - off(samples)) / (steps + off(steps)) / per_process
    high = (samples + off(samples)) / max(steps - off(steps), 1e-12) / per_process
    world = round(samples / steps / per_process)
    if world < 1 or low < world - WORLD_FROM_RATES_SLACK * world or high > world + WORLD_FROM_RATES_SLACK * world:
        return None
    return world


def _megatron_arg(c: _Claims, name: str, value: str, origin: str, src: int, line: int | None) -> None:
    """A training-loop argument (Megatron's dump `  world_size ........ 64`, HF's TrainingArguments and their reprs,
    a launch script's flags): each fact's `args` names (parsers/fact_table.py), read by the fact's type."""
    fact = ARG_FACTS.get(name)
    if fact is not None and BY_NAME[fact].type == "int":
        c.add(fact, _int(value), origin, src, line)
    elif fact is not None and BY_NAME[fact].type == "bool" and _bool(value) is not None:
        c.add(fact, _bool(value), origin, src, line)
    elif name in ("fp16", "bf16") and _bool(value):
        c.add("precision", name, origin, src, line)


def _args_repr(c: _Claims, text: str, origin: str, src: int, line: int | None) -> None:
    """`bf16=True, gradient_accumulation_steps=4, deepspeed='ds.json', ...` -> the arguments it knows."""
    for name, value in re.findall(r"(?:^|,\s*)([a-z_][a-z0-9_]*)=('[^']*'|\"[^\"]*\"|[^,()\[\]{}]+)", text):
        _megatron_arg(c, name, value.strip("'\" "), origin, src, line)


def _world_info(c: _Claims, text: str, origin: str, src: int, line: int | None) -> None:
    try:
        info = ast.literal_eval(text) if text.startswith("{'") else json.loads(text)
    except (ValueError, SyntaxError):
        return
    if not isinstance(info, dict) or not info:
        return
    c.add("nodes", len(info), origin, src, line)
    sizes = {len(v) for v in info.values() if isinstance(v, list)}
    if len(sizes) == 1:
        c.add("gpus_per_node", sizes.pop(), origin, src, line)
    c.add("world_size", sum(len(v) for v in info.values() if isinstance(v, list)), origin, src, line)
    for host in info:
        c.add("hostname", str(host), origin, src, line)


def _script_claims(c: _Claims, sc: LaunchScript, src: int, origin: str = "launch_script",
                   at: int | None = None) -> None:
    """A launch command's flags (launcher tier) and its #SBATCH directives (scheduler tier)."""
    o = origin
    c.add("launcher", sc.launcher, o, src, at)
    f = {k: v for k, v in sc.launcher_flags.items()}

    def flag(*names: str) -> tuple[int | None, int | None]:
        for n in names:
            if n in f:
                return _int(f[n].value), at or f[n].line
        return None, None

    nodes, line = flag("deepspeed.num_nodes", "torchrun.nnodes", "accelerate.num_machines", "srun.nodes", "srun.N")
    if nodes is None and "torchrun.standalone" in f:  # `torchrun --standalone`: one node, by definition
        nodes, line = 1, at or f["torchrun.standalone"].line
    elif (sc.launcher == "torchrun" and not any(k in f for k in ("torchrun.nnodes", "torchrun.standalone"))
          and "PET_NNODES" not in sc.env and sc.commands):
        # torchrun without --nnodes (nor its PET_NNODES variable) runs on one node: its default is `--nnodes 1:1`
        # (torch/distributed/run.py). A `--nnodes $SLURM_NNODES` whose value is not read is a flag, so no default.
        nodes, line = 1, at or sc.commands[0][0]
    c.add("nodes", nodes, o, src, line)
    gpn, line = flag("deepspeed.num_gpus", "torchrun.nproc_per_node", "torchrun.nproc-per-node",
                     "srun.ntasks-per-node", "srun.gpus-per-node")
    c.add("gpus_per_node", gpn, o, src, line)
    ws, line = flag("accelerate.num_processes", "horovodrun.np", "mpirun.np", "mpirun.n")
    c.add("world_size", ws, o, src, line)
    hosts = next((f[k] for k in _HOST_FLAGS if k in f), None)
    if hosts is not None and (slots := _host_slots(hosts.value)):
        c.add("nodes", len(slots), o, src, at or hosts.line)
        if len(set(slots.values())) == 1:
            c.add("gpus_per_node", next(iter(slots.values())), o, src, at or hosts.line)
    _sbatch_claims(c, sc, src)
    mp = f.get("accelerate.mixed_precision")
    if mp:
        c.add("precision", {"no": "fp32"}.get(mp.value, mp.value), o, src, at or mp.line)
    zs = f.get("accelerate.zero_stage")
    if zs:
        c.add("zero_stage", _int(zs.value), o, src, at or zs.line)
    a = {k.replace("-", "_"): v for k, v in sc.script_args.items()}  # Megatron spells its flags with dashes
    for key, setting in a.items():
        _megatron_arg(c, key, setting.value, o, src, at or setting.line)
    if "offload" in a and _bool(a["offload"].value):  # DeepSpeed-Chat's `--offload`: ZeRO-Offload to the CPU
        c.add("offload_optimizer", "cpu", o, src, at or a["offload"].line)
    for setting in [*a.values(), *f.values()]:
        _config_name_claims(c, setting.value, src, at or setting.line)


# Open MPI's and Horovod's host lists (`mpirun -H host1:8,host2:8`, `horovodrun -H server1:4,server2:4`; Open MPI
# also repeats a host once per slot: `-H a,a,b,b`)
_HOST_FLAGS = ("mpirun.H", "mpirun.host", "mpirun.hosts", "horovodrun.H", "horovodrun.hosts")
_HOST_ITEM = re.compile(r"([A-Za-z0-9][A-Za-z0-9._-]*)(?::([0-9]+))?")


def _host_slots(value: str) -> dict[str, int] | None:
    """Each host of a host list and its slots, or None where the list is not written out (`-H $HOSTS`)."""
    slots: dict[str, int] = {}
    for item in value.split(","):
        m = _HOST_ITEM.fullmatch(item.strip())
        if m is None:
            return None
        slots[m.group(1)] = slots.get(m.group(1), 0) + (int(m.group(2)) if m.group(2) else 1)
    return slots or None


# A DeepSpeed config named for its stage (`ds_z3_config.json`, `zero3_offload_nopin.json`, `ds_config_zero2.json`):
# what the name says, at the lowest tier; the file itself, where it is read, says more.
_CONFIG_NAME = re.compile(r"(?:^|[^a-z0-9])(?:zero|z)[_-]?(?:stage)?[_-]?([0-3])(?![0-9])", re.I)


def _config_name_claims(c: _Claims, value: str, src: int, line: int | None) -> None:
    name = value.rsplit("/", 1)[-1]
    if not name.lower().endswith((".json", ".yaml", ".yml")) or not (m := _CONFIG_NAME.search(name)):
        return
    c.add("zero_stage", int(m.group(1)), "config_file_name", src, line)
    if "offload" in name.lower():
        c.add("offload_optimizer", "nvme" if "nvme" in name.lower() else "cpu", "config_file_name", src, line)


def _sbatch_claims(c: _Claims, sc: LaunchScript, src: int) -> None:
    """#SBATCH: nodes, tasks per node and the GPUs granted (`--gres=gpu:N` / `--gpus-per-node` per node,
    `--gpus` in all)."""
    o, sb = "sbatch", sc.sbatch
    nodes = line = None
    for key in ("nodes", "N"):
        if key in sb:
            nodes, line = _int(sb[key].value.split("-")[0]), sb[key].line
            break
    c.add("nodes", nodes, o, src, line)
    per_node = None
    for key in ("gpus-per-node", "gres"):
        if key in sb:
            m = re.search(r"gpu(?::[A-Za-z]\w*)?:(\d+)", "gpu:" + sb[key].value if key != "gres" else sb[key].value)
            if m:
                per_node, line = int(m.group(1)), sb[key].line
                break
    tasks = _int(sb["ntasks-per-node"].value) if "ntasks-per-node" in sb else None
    if tasks and not (sc.spawns_per_gpu and per_node and per_node > tasks):
        c.add("gpus_per_node", tasks, o, src, sb["ntasks-per-node"].line)
    elif per_node:
        c.add("gpus_per_node", per_node, o, src, line)
    if per_node:
        c.add("allocated_gpus", per_node * (nodes or 1), o, src, line)
    elif "gpus" in sb:
        c.add("allocated_gpus", _int(sb["gpus"].value.split(":")[-1]), o, src, sb["gpus"].line)


def _stated_claims(c: _Claims, stated: pl.DataFrame) -> None:
    """The settings a text states in words: its largest GPU count and its largest node count, each with the sentence
    that states it, and the ZeRO stage where it names one only. The largest: a thread that compares one GPU with
    eight is about the eight (and a count the program printed outranks it)."""
    rows = stated.filter(pl.col("quantity") == "setting")
    top: dict[str, tuple[int, int, int]] = {}
    for column, fact in (("gpus", "world_size"), ("nodes", "nodes")):
        found = rows.filter(pl.col(column).is_not_null()).sort(column, descending=True, maintain_order=True)
        if found.height:
            top[fact] = (int(found[column][0]), int(found["source"][0]), int(found["line"][0]))
    if "world_size" in top and "nodes" in top and top["nodes"][0] > top["world_size"][0]:
        del top["nodes"]  # more nodes than GPUs: the cluster's size, not the run's
    for fact, (value, src, line) in top.items():
        c.add(fact, value, "stated_in_text", src, line)
    stages = stated.filter(pl.col("quantity") == "zero_stage")
    if stages.height and stages["value"].n_unique() == 1:  # one stage named throughout; two are a comparison
        c.add("zero_stage", int(stages["value"][0]), "stated_in_text", int(stages["source"][0]),
              int(stages["line"][0]))
    # the model's size, the GPU model and its memory, an offload: one value named throughout (two are a comparison),
    # and an offload not where two stages are compared; the stated frame's number decoded (None: nothing claimed)
    decode: dict[str, Callable[[float], Any]] = {
        "model_params": int, "gpu_name": lambda v: STATED_GPUS[int(v)], "gpu_memory_gb": float,
        "offload_optimizer": OFFLOAD_DEVICES.get, "offload_param": OFFLOAD_DEVICES.get}
    for fact, value_of in decode.items():
        said = stated.filter(pl.col("quantity") == fact)
        if said.height and said["value"].n_unique() == 1 and not (fact.startswith("offload")
                                                                  and stages["value"].n_unique() > 1):
            c.add(fact, value_of(float(said["value"][0])), "stated_in_text", int(said["source"][0]),
                  int(said["line"][0]))


def _wandb_claims(c: _Claims, run: Any, src: int) -> None:
    """W&B config (the HF integration logs TrainingArguments and the model config) and run metadata."""
    o, cfg, env = "wandb_config", run.config, run.environment
    # each fact's `wandb` keys (parsers/fact_table.py): the first that holds a value of the fact's type (a count
    # not below 0: HF's `max_steps: -1` means none). The HF integration logs TrainingArguments and the model config.
    for fact, keys in WANDB_FACTS.items():
        kind = BY_NAME[fact].type
        read = (_int(cfg.get(k)) if kind == "int" else _bool(cfg.get(k)) for k in keys)
        c.add(fact, next((v for v in read if v is not None and (kind != "int" or v >= 0)), None), o, src)
    c.add("model_params", _int(run.summary.get("model/num_parameters")), o, src)
    # the HF integration's run summary holds the Trainer's summary rates (hf_summary_rates), with or without `train/`
    def summary(key: str) -> float | None:
        return _float(run.summary.get(key)) or _float(run.summary.get("train/" + key))

    samples, steps = summary("train_samples_per_second"), summary("train_steps_per_second")
    if samples and steps:
        c.add("hf_summary_rates", (samples, steps), "hf_summary_rates", src)
    quant = cfg.get("quantization_config") if isinstance(cfg.get("quantization_config"), dict) else {}
    compute = str(quant.get("bnb_4bit_compute_dtype") or "") if _bool(quant.get("load_in_4bit")) else \
        ("float16" if _bool(quant.get("load_in_8bit")) else "")
    if _bool(cfg.get("bf16")):
        c.add("precision", "bf16", o, src)
    elif _bool(cfg.get("fp16")):
        c.add("precision", "fp16", o, src)
    elif compute in ("float16", "bfloat16"):
        # QLoRA / 8-bit: the quantized layers' matmuls run in their compute dtype whatever the Trainer flags say
        # (bitsandbytes' bnb_4bit_compute_dtype; LLM.int8() computes in fp16).
        c.add("precision", {"float16": "fp16", "bfloat16": "bf16"}[compute], o, src)
    elif cfg.get("bf16") is not None and cfg.get("fp16") is not None:
        c.add("precision", "fp32", o, src)
    gpus = env.get("gpu_nvidia") or []
    if gpus and isinstance(gpus, list) and isinstance(gpus[0], dict):
        c.add("gpu_name", gpus[0].get("name"), "wandb_metadata", src)
    c.add("gpu_name", env.get("gpu_type") or env.get("gpu"), "wandb_metadata", src)
    c.add("gpus_per_node", _int(env.get("gpu_count")), "wandb_metadata", src)
    total = _float(gpus[0].get("memoryTotal")) if gpus and isinstance(gpus[0], dict) else None
    c.add("gpu_memory_gb", round(total / 2**30, 1) if total else None, "wandb_metadata", src)
    c.add("hostname", env.get("host") or run.run.get("host"), "wandb_metadata", src)
    if cfg.get("transformers_version"):
        c.add("version.transformers", str(cfg["transformers_version"]), o, src)
    if env.get("cuda_version"):
        c.add("version.cuda", str(env["cuda_version"]), "wandb_metadata", src)


def _nccl(frame: pl.DataFrame, c: _Claims) -> NcclFacts:
    if frame.height == 0:
        return NcclFacts()
    msgs = frame.select("msg", "nccl_host", "source", "line")
    network = msgs.filter(pl.col("msg").str.starts_with("Using network ")).select(
        pl.col("msg").str.extract(r"Using network (\w+)"))
    net = network.to_series().drop_nulls()
    no_ib = msgs.filter(pl.col("msg").str.contains(r"NET/IB ?: No device found|Failed to open libibverbs|"
                                                   r"call to devices\(\) returned 0"))
    ib_using = msgs.filter(pl.col("msg").str.contains(r"NET/IB ?: Using"))
    ib_found = True if ib_using.height else (False if no_ib.height else None)
    transports = (
        msgs.select(pl.col("msg").str.extract(r" via (P2P/\w+|SHM|NET/[A-Za-z]+|P2P)")).to_series().drop_nulls()
        .value_counts().sort("count", "msg", descending=[True, False]).rows()  # ties by name, run after run
    )
    env = dict(
        msgs.select(pl.col("msg").str.extract_groups(r"^(?P<k>[A-Z][A-Z0-9_]+) set by environment to (?P<v>\S+?)\.?$"))
        .unnest("msg").drop_nulls().unique(subset="k", keep="first", maintain_order=True).rows()
    )
    # Every communicator prints its size; the largest is the world (tensor, pipeline and data-parallel groups are
    # sub-communicators).
    comm = msgs.select(pl.col("msg").str.extract_groups(
        r"nRanks (?P<n>\d+) nNodes (?P<nodes>\d+) localRanks (?P<local>\d+)")).unnest("msg").drop_nulls()
    comm = comm.select(pl.all().cast(pl.Int64, strict=False)).drop_nulls().sort("n", descending=True)
    old = msgs.select(pl.col("msg").str.extract(r"rank \d+ nranks (\d+)").cast(pl.Int64, strict=False)).to_series().drop_nulls()
    n_ranks = whole(comm["n"][0]) if comm.height else (whole(old.max()) if old.len() else None)
    n_nodes = int(comm["nodes"][0]) if comm.height else None
    local = int(comm["local"][0]) if comm.height else None
    version = msgs.select(pl.col("msg").str.extract(r"NCCL version ([\d.]+(?:\+cuda[\d.]+)?)")).to_series().drop_nulls()
    hosts = _distinct_hosts(frame["nccl_host"].drop_nulls())
    devs = frame.filter(pl.col("dev").is_not_null()).group_by(pl.col("nccl_host").fill_null("")).agg(
        pl.col("dev").n_unique())["dev"]
    local_devices = int(number(devs.max())) if devs.len() else None
    src = int(frame["source"][0])
    c.add("world_size", n_ranks, "nccl", src)
    c.add("nodes", n_nodes, "nccl", src)
    c.add("gpus_per_node", local, "nccl", src)
    if version.len():
        c.add("version.nccl", version[0], "nccl", src)
    return NcclFacts(version=version[0] if version.len() else None, network=net[0] if net.len() else None,
                     ib_device_found=ib_found, transports={k: int(v) for k, v in transports}, env=env, hosts=hosts,
                     n_ranks=n_ranks, n_nodes=n_nodes, local_ranks=local, local_devices=local_devices)


def _distinct_hosts(names: pl.Series) -> tuple[str, ...]:
    """The hosts NCCL's `host:pid:tid [dev]` prefixes name. A prefix glued to the text before it without a newline
    (`... npyazwus2f200000DQ:22476:...`) reads as a longer name ending in a real host's: that is the same host."""
    counts = dict(names.value_counts().iter_rows())
    real = [h for h in counts if not any(h != o and h.endswith(o) and counts[o] >= counts[h] for o in counts)]
    return tuple(sorted(real))


def _topology_from_hosts(c: _Claims, nccl: NcclFacts) -> None:
    for h in nccl.hosts:
        c.add("hostname", h, "nccl", -1)
    if len(nccl.hosts) > 1:
        c.add("nodes", len(nccl.hosts), "nccl_hosts", -1)


def _env(inp: FactInputs, c: _Claims) -> dict[str, Evidence]:
    env: dict[str, Evidence] = {}
    # Launch scripts state intent most directly; then launcher echoes and dumps in logs; NCCL's own echo last.
    for src, script in inp.scripts:
        for key, s in script.env.items():
            env.setdefault(key, Evidence(s.value, "launch_script", src, s.line))
    if inp.env.height:
        first = inp.env.select("key", "value", "source", "line").unique(subset="key", keep="first", maintain_order=True)
        for r in first.to_dicts():
            env.setdefault(r["key"], Evidence(r["value"], "log", r["source"], r["line"]))
    for r in _fact_rows(inp.facts):
        if r["key"].startswith("env."):
            env.setdefault(r["key"][4:], Evidence(r["value"], r["origin"], r["source"], r["line"]))
    if inp.nccl.height:
        rows = inp.nccl.filter(pl.col("msg").str.contains(r"set by environment to")).select(
            pl.col("msg").str.extract_groups(r"^(?P<k>[A-Z][A-Z0-9_]+) set by environment to (?P<v>\S+?)\.?$")
            .alias("g"), "source", "line").unnest("g").drop_nulls()
        for r in rows.to_dicts():
            env.setdefault(r["k"], Evidence(r["v"], "nccl", r["source"], r["line"]))
    return env


def _hf_block(kv: list[dict[str, Any]]) -> dict[str, int]:
    """The values of the first `***** Running training *****` block (eval blocks reuse `Num examples`)."""
    start = next((r for r in kv if r["key"] == "hf.running_training"), None)
    out: dict[str, int] = {}
    for r in kv:
        if not r["key"].startswith("hf.") or r["key"] == "hf.running_training":
            continue
        if start and (r["source"] != start["source"] or not 0 < r["line"] - start["line"] <= 12):
            continue
        name = r["key"][3:]
        if name not in out and (v := _int(r["value"])) is not None:
            out[name] = v
    return out


def _accelerate_view(inp: FactInputs, kv: list[dict[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for _, cfg in inp.accelerate_configs:
        out.update(cfg)
    for r in kv:
        if r["key"].startswith("accelerate."):
            out.setdefault("log." + r["key"][len("accelerate."):], r["value"])
    return out


def _repr_field(text: Any, key: str) -> str | None:
    if text is None:
        return None
    m = re.search(r"(?:^|\s)" + re.escape(key) + r"=([^\s]+)", str(text))
    return m.group(1) if m else None


def _bool(v: Any) -> bool | None:
    if isinstance(v, bool):
        return v
    if v is None:
        return None
    s = str(v).strip().lower()
    if s in ("true", "1", "yes"):
        return True
    if s in ("false", "0", "no", "none"):
        return False
    return None


def _float(v: Any) -> float | None:
    try:
        return float(str(v).replace(",", "")) if v is not None else None
    except ValueError:
        return None


def _int(v: Any) -> int | None:
    f = _float(v)
    return int(f) if f is not None and f == f and abs(f) != float("inf") else None


def _scaled(text: str | None) -> int | None:
    """`169.73 K` / `2.78 B` -> an integer count."""
    if not text:
        return None
    m = re.match(r"([\d.]+)\s*([KMGBT]?)", text)
    if not m:
        return None
    mult = {"": 1, "K": 1e3, "M": 1e6, "G": 1e9, "B": 1e9, "T": 1e12}[m.group(2)]
    return int(float(m.group(1)) * mult)


def dig(cfg: dict[str, Any], key: str) -> tuple[bool, Any]:
    node: Any = cfg
    for part in key.split("."):
        if not isinstance(node, dict) or part not in node:
            return False, None
        node = node[part]
    return True, node


def _engine_value(engine: dict[str, Any], key: str) -> tuple[bool, Any]:
    """The engine's printed config: flat keys, and ZeRO's settings as one repr string (`zero_config ...
    offload_optimizer=DeepSpeedZeroOffloadOptimizerConfig(device='cpu', ..., pin_memory=True, ...)`)."""
    parts = key.split(".")
    if len(parts) == 1 and key in engine:
        return True, engine[key]
    if parts[0] != "zero_optimization" or "zero_config" not in engine:
        return False, None
    text = str(engine["zero_config"])
    if len(parts) == 3:
        m = re.search(re.escape(parts[1]) + r"=\w+\((.*?)\)", text)
        if not m:
            return False, None
        text = m.group(1)
    # The repr names fields as DeepSpeed's config model does: its JSON aliases `stage3_prefetch_bucket_size`,
    # `stage3_gather_16bit_weights_on_model_save`, ... drop the prefix there (deepspeed/runtime/zero/config.py).
    for name in dict.fromkeys((parts[-1], parts[-1].removeprefix("stage3_"))):
        m = re.search(r"(?:^|[\s(,])" + re.escape(name) + r"=([^,\s)]+)", text)
        if m:
            return True, m.group(1).strip("'\"")
    return False, None
