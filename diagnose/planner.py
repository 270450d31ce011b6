"""The ZeRO planner: model-state memory and communication per stage, and a stage chosen in the order the
DeepSpeed maintainers recommend (no ZeRO -> gradient accumulation / activation checkpointing -> ZeRO-1 -> ZeRO-2
-> ZeRO-3 -> offload -> lower-precision optimizer states).

Memory model: ZeRO paper (Rajbhandari et al., arXiv:1910.02054, section 3): mixed-precision Adam keeps 2 bytes of
fp16/bf16 weights, 2 bytes of gradients and K = 12 bytes of optimizer state (fp32 master, momentum, variance) per
parameter; the partitioned part is divided by the data-parallel degree Nd. DeepSpeed's own estimator
(`estimate_zero2_model_states_mem_needs`, `..._zero3_...`) uses 18 instead of 14 for the partitioned part (it adds
fp32 gradients); we show it beside ours. 8-bit Adam keeps m and v in 1 byte each: K = 4 + 2 = 6 (Dettmers et al.).
Activations per layer: s*b*h*(34 + 5*a*s/h) bytes without recompute, ~2*s*b*h with full checkpointing
(Korthikanti et al., arXiv:2205.05198). Communication per step (elements, ring): DDP / ZeRO-1 / ZeRO-2 move 2x the
parameters, ZeRO-3 3x (1.5x DDP); ZeRO-2/3 communicate every micro-step, so gradient accumulation G multiplies
their traffic per optimizer step while DDP (no_sync) and ZeRO-1 reduce once at the boundary.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

GB = 1e9
ASSUMED_GPU_GB = 80.0  # with the GPU unknown, the plan is worked for an 80 GB card and says so
# The share of a card a run may fill with model states and activations: 90%. The rest is the CUDA context,
# NCCL's buffers and the caching allocator's fragmentation (PyTorch's memory notes; DeepSpeed's estimator prints
# needs with no headroom). One fraction for the estimated and the measured plan alike, so `plan` and `report` agree.
USABLE_FRACTION = 0.9
MEASURED_FRACTION = USABLE_FRACTION  # the measured plan's limit: states + (measured peak - current states)
# With the activations unknown (no sequence length, micro-batch or model shape), a stage must leave at least this
# share of the card for them to count as fitting, and the advice says it is conditional on them.
ACTIVATION_RESERVE_FRACTION = 0.1
MIN_TOKENS_PER_GPU = 4096  # a smaller micro-batch is offered only down to ~4k tokens per GPU (see small-micro-batch)
BYTES_PER_PARAM_WEIGHTS = 2
BYTES_PER_PARAM_GRADS = 2
OPTIMIZER_BYTES = {"adamw": 12, "adam": 12, "adam8bit": 6}
# Training in fp32 keeps 4-byte weights and gradients and no fp32 master copy (4 of the optimizer's bytes), and its
# activations and gradient messages are twice as large as in bf16 / fp16 (the ZeRO paper's K counts the master).
FP32_BYTES_PER_PARAM = 4
MASTER_COPY_BYTES = 4
PRECISIONS = ("bf16", "fp16", "fp32")


@dataclass(frozen=True)
class StagePlan:
    name: str  # ddp | zero1 | zero2 | zero3 | zero2+offload | zero3+offload
    stage: int
    offload: str | None
    model_states_gb: float
    deepspeed_estimate_gb: float
    activations_gb: float | None
    total_gb: float | None
    fits: bool
    comm_gb_per_step: float | None  # per GPU per optimizer step
    note: str
    # fits only at this smaller micro-batch (with proportionally more accumulation); None: fits as it is, or not
    fits_micro_batch: int | None = None
    # False where `fits` rests on unknown activations (the model states fit with ACTIVATION_RESERVE_FRACTION to
    # spare): shown as "unknown", not "yes"
    fits_known: bool = True

    @property
    def verdict(self) -> str:
        """yes | no | unknown | with micro-batch N: what the planner can say of this stage."""
        if self.fits_micro_batch and not self.fits:
            return f"with micro-batch {self.fits_micro_batch}"
        return ("yes" if self.fits_known else "unknown") if self.fits else "no"


@dataclass(frozen=True)
class Plan:
    params: float
    gpus: int
    gpus_per_node: int
    gpu_memory_gb: float
    optimizer: str
    grad_accum: int
    activation_checkpointing: bool
    stages: tuple[StagePlan, ...]
    recommended: str
    recommended_stage: int
    steps: tuple[str, ...] = field(default_factory=tuple)  # the recommendation, reason by reason
    memory_basis: str = "estimated"  # "measured": from the run's peak memory; "estimated": activations modelled
    gpu_memory_known: bool = True  # False: gpu_memory_gb is an assumption, and the advice says so
    # The micro-batch / accumulation change the recommended stage needs to fit the measured memory (None: none)
    recommended_micro_batch: int | None = None
    recommended_grad_accum: int | None = None
    precision: str = "bf16"
    current_stage: str | None = None  # the option the run used (ddp, zero1, ... zero3+offload), where known


def as_dict(p: Plan) -> dict[str, object]:
    """The plan as JSON: its fields, and each stage's verdict (yes / no / unknown / with micro-batch N)."""
    out = dataclasses.asdict(p)
    for row, stage in zip(out["stages"], p.stages):
        row["verdict"] = stage.verdict
    return out


def activations_gb(seq_len: int | None, micro_batch: int | None, hidden: int | None, layers: int | None,
                   heads: int | None, checkpointing: bool, precision: str = "bf16") -> float | None:
    if not seq_len or not micro_batch or not hidden or not layers:
        return None
    s, b, h, L = seq_len, micro_batch, hidden, layers
    a = heads or max(1, h // 128)
    per_layer = 2 * s * b * h if checkpointing else s * b * h * (34 + 5 * a * s / h)
    return per_layer * L * (2 if precision == "fp32" else 1) / GB


def plan(params: float, gpus: int, gpus_per_node: int | None = None, gpu_memory_gb: float = 80.0,
         optimizer: str = "adamw", grad_accum: int = 1, seq_len: int | None = None, micro_batch: int | None = None,
         hidden: int | None = None, layers: int | None = None, heads: int | None = None,
         activation_checkpointing: bool = False, measured_peak_gb: float | None = None,
         current: tuple[int, bool] | None = None, gpu_memory_known: bool = True,
         measured_fraction: float = MEASURED_FRACTION, precision: str | None = None) -> Plan:
    """`measured_peak_gb` with `current` (the run's ZeRO stage, offloaded or not) switches to measured memory.
    `precision` None: mixed precision (bf16 / fp16), the planner's usual case."""
    precision = precision if precision in PRECISIONS else "bf16"
    nd = max(1, gpus)
    k = OPTIMIZER_BYTES.get(optimizer, 12)
    w, g = BYTES_PER_PARAM_WEIGHTS, BYTES_PER_PARAM_GRADS
    if precision == "fp32":
        w = g = FP32_BYTES_PER_PARAM
        k -= MASTER_COPY_BYTES
    budget = gpu_memory_gb * USABLE_FRACTION
    act = activations_gb(seq_len, micro_batch, hidden, layers, heads, activation_checkpointing, precision)
    act_ckpt = activations_gb(seq_len, micro_batch, hidden, layers, heads, True, precision)
    psi = params
    ga = max(1, grad_accum)
    ring = 2 * (nd - 1) / nd if nd > 1 else 0.0  # ring all-reduce moves 2(n-1)/n of the data per GPU
    comm_ddp = ring * psi * w / GB  # gradients in 16-bit, once per optimizer step
    rows = [
        ("ddp", 0, None, (w + g + k) * psi, (w + g + k) * psi, comm_ddp, "plain data parallel: nothing partitioned"),
        ("zero1", 1, None, (w + g) * psi + k * psi / nd, (w + g) * psi + (k + 4) * psi / nd, comm_ddp,
         "optimizer states partitioned; gradients reduced once per optimizer step, like DDP"),
        ("zero2", 2, None, w * psi + (g + k) * psi / nd, w * psi + (g + k + 4) * psi / nd, comm_ddp * ga,
         "gradients partitioned too; reduce-scatter every micro-step"),
        ("zero3", 3, None, (w + g + k) * psi / nd, (w + g + k + 4) * psi / nd, 1.5 * comm_ddp * ga,
         "parameters partitioned too: all-gathers in forward and backward of every micro-step (1.5x DDP)"),
        ("zero2+offload", 2, "cpu", w * psi + g * psi / nd, w * psi + g * psi / nd, comm_ddp * ga,
         "optimizer states (and the Adam step) moved to the CPU; weights and a gradient partition stay: PCIe "
         "traffic and a CPU Adam step every optimizer step"),
        ("zero3+offload", 3, "cpu", 0.0, 0.0, 1.5 * comm_ddp * ga,
         "parameters, gradients and optimizer states all moved to the CPU (0 GB persistent; layers are fetched "
         "as they run): the slowest option, for models that fit nowhere else"),
    ]
    stages = []
    reserve = gpu_memory_gb * ACTIVATION_RESERVE_FRACTION
    for name, stage, offload, states, ds_states, comm, note in rows:
        total = states / GB + act if act is not None else None
        need = total if total is not None else states / GB + reserve
        fits = need <= budget
        stages.append(StagePlan(name, stage, offload, states / GB, ds_states / GB, act, total, fits,
                                comm if nd > 1 else 0.0, note, fits_known=act is not None or not fits))
    mb_ga: tuple[int | None, int | None] = (None, None)
    basis = "estimated"
    cur = next((s for s in stages if current and s.stage == current[0] and (s.offload is not None) == current[1]),
               None)
    if measured_peak_gb is not None and cur is not None:
        basis = "measured"
        stages, recommended, steps, mb_ga = _recommend_measured(stages, cur, measured_peak_gb, gpu_memory_gb,
                                                                micro_batch, ga, seq_len, measured_fraction)
    else:
        recommended, steps = _recommend(stages, budget, act, act_ckpt, activation_checkpointing, optimizer)
    rec = next(s for s in stages if s.name == recommended) if recommended in {s.name for s in stages} else None
    return Plan(params, nd, gpus_per_node or nd, gpu_memory_gb, optimizer, ga, activation_checkpointing,
                tuple(stages), recommended, rec.stage if rec else 3, tuple(steps), basis, gpu_memory_known,
                mb_ga[0], mb_ga[1], precision, cur.name if cur is not None else None)


def _recommend_measured(stages: list[StagePlan], cur: StagePlan, peak: float, gpu_gb: float, mb: int | None,
                        ga: int, seq: int | None, fraction: float = MEASURED_FRACTION
                        ) -> tuple[list[StagePlan], str, list[str], tuple[int | None, int | None]]:
    """Stages from the measured peak: other memory = peak - the current stage's model states, assumed to scale with
    the micro-batch (activations dominate it). The first stage in the maintainers' order that fits as it is, or with
    a smaller micro-batch and proportionally more accumulation (not below MIN_TOKENS_PER_GPU), wins."""
    limit = fraction * gpu_gb
    other = max(0.0, peak - cur.model_states_gb)
    steps = [f"Measured: peak {peak:.1f} GB per GPU under the run's {cur.name}, of which {cur.model_states_gb:.1f} GB "
             f"are model states, so {other:.1f} GB is the rest (activations, buffers); a stage fits when its states "
             f"plus that stay under {limit:.0f} GB ({fraction:.0%} of {gpu_gb:.0f} GB)."]
    refit = []
    for s in stages:
        need = s.model_states_gb + other
        # The configuration the run used fits: its measured peak proves it, whatever the limit's margin says.
        proven = s.name == cur.name
        refit.append(dataclasses.replace(s, total_gb=need, fits=need <= limit or proven, activations_gb=other,
                                         fits_known=True))
    by = {s.name: s for s in refit}
    for name in ("ddp", "zero1", "zero2", "zero3", "zero2+offload", "zero3+offload"):
        s = by[name]
        label = "No ZeRO (plain data parallel)" if name == "ddp" else name
        if s.fits:
            steps.append(f"{label}: {s.model_states_gb:.1f} + {other:.1f} = {s.total_gb:.1f} GB <= {limit:.0f} GB: "
                         "fits as it is." + (" It is the current configuration." if s is by.get(cur.name) else ""))
            return refit, name, steps, (None, None)
        smaller = _smaller_micro_batch(s.model_states_gb, other, limit, mb, seq)
        if smaller is not None and mb:
            new_other = other * smaller / mb
            new_ga = ga * mb // smaller
            # At that micro-batch every stage that holds no more model states fits too.
            refit = [dataclasses.replace(x, fits_micro_batch=smaller)
                     if not x.fits and x.model_states_gb + new_other <= limit else x for x in refit]
            steps.append(f"{label}: {s.model_states_gb:.1f} + {other:.1f} = {s.total_gb:.1f} GB > {limit:.0f} GB as "
                         f"it is; with micro-batch {smaller} (from {mb}) and gradient accumulation {new_ga} (from "
                         f"{ga}), the same global batch, the rest scales to {new_other:.1f} GB: "
                         f"{s.model_states_gb:.1f} + {new_other:.1f} = {s.model_states_gb + new_other:.1f} GB fits.")
            return refit, name, steps, (smaller, new_ga)
        steps.append(f"{label}: {s.model_states_gb:.1f} + {other:.1f} = {s.total_gb:.1f} GB > {limit:.0f} GB"
                     + (" even with a smaller micro-batch" if mb else "") + "; next option.")
    return refit, cur.name, steps + ["Nothing fits better than the current configuration."], (None, None)


def _smaller_micro_batch(states: float, other: float, limit: float, mb: int | None, seq: int | None) -> int | None:
    """The largest halving of the micro-batch under which states + other x (mb'/mb) fits, if any."""
    if not mb or mb < 2:
        return None
    cand = mb // 2
    while cand >= 1:
        if seq and cand * seq < MIN_TOKENS_PER_GPU:
            return None
        if states + other * cand / mb <= limit:
            return cand
        cand //= 2
    return None


def _recommend(stages: list[StagePlan], budget: float, act: float | None, act_ckpt: float | None,
               ckpt_on: bool, optimizer: str) -> tuple[str, list[str]]:
    by = {s.name: s for s in stages}
    steps: list[str] = []
    for name in ("ddp", "zero1", "zero2", "zero3"):
        s = by[name]
        label = "No ZeRO (plain data parallel)" if name == "ddp" else f"ZeRO-{s.stage}"
        if s.fits:
            if s.activations_gb is not None:
                steps.append(f"{label}: model states {s.model_states_gb:.1f} GB + activations "
                             f"{s.activations_gb:.1f} GB fit in {budget:.0f} GB usable per GPU. Use it; higher "
                             "stages only add communication.")
            else:
                steps.append(f"{label}: model states {s.model_states_gb:.1f} GB fit in {budget:.0f} GB usable per "
                             f"GPU if the activations take under {budget - s.model_states_gb:.1f} GB: they are not "
                             "included (sequence length, micro-batch, hidden size and layers give them). Use it if "
                             "they do; higher stages only add communication.")
            return name, steps
        # Recomputation costs compute (about a third more backward); a later stage that moves no more data per
        # step and fits as it is costs nothing: ZeRO-1 partitions the optimizer states at DDP's traffic.
        free = next((t for t in stages[stages.index(s) + 1:4] if t.fits and t.comm_gb_per_step is not None
                     and s.comm_gb_per_step is not None and t.comm_gb_per_step <= s.comm_gb_per_step * 1.0001), None)
        if free is not None:
            steps.append(f"{label}: needs {s.total_gb or s.model_states_gb:.1f} GB per GPU, more than {budget:.0f} GB "
                         f"usable; ZeRO-{free.stage} fits as it is at the same traffic per step, so it comes before "
                         "activation checkpointing.")
            continue
        if act is not None and not ckpt_on and act_ckpt is not None and s.model_states_gb + act_ckpt <= budget:
            z1 = by["zero1"]
            if name == "ddp" and z1.comm_gb_per_step == s.comm_gb_per_step and z1.model_states_gb < s.model_states_gb:
                # With recomputation needed either way, ZeRO-1 holds the same activations in less room at the same
                # traffic (its reduce-scatter and all-gather move what DDP's all-reduce moves).
                steps.append(f"{label}: fits only with activation checkpointing ({s.model_states_gb:.1f} GB states "
                             f"+ {act_ckpt:.1f} GB activations); ZeRO-1 with the same checkpointing needs "
                             f"{z1.model_states_gb + act_ckpt:.1f} GB at the same traffic per step: use it (or a smaller "
                             "micro-batch with more gradient accumulation) rather than a higher ZeRO stage.")
                return "zero1", steps
            steps.append(f"{label}: fits with activation checkpointing ({s.model_states_gb:.1f} GB states + "
                         f"{act_ckpt:.1f} GB activations); prefer that, or a smaller micro-batch with more gradient "
                         f"accumulation, over a higher ZeRO stage.")
            return name, steps
        steps.append(f"{label}: needs {s.total_gb or s.model_states_gb:.1f} GB per GPU, more than {budget:.0f} GB "
                     f"usable; next option.")
    moved = {"zero2+offload": "the optimizer states (and its step)",
             "zero3+offload": "the parameters, gradients and optimizer states (layers are fetched as they run)"}
    for name in ("zero2+offload", "zero3+offload"):
        s = by[name]
        if s.fits:
            steps.append(f"{name}: fits by moving {moved[name]} to the CPU ({s.model_states_gb:.1f} GB of model "
                         "states left per GPU; expect a slow optimizer step).")
            return name, steps
    if optimizer != "adam8bit":
        steps.append("Nothing fits with 32-bit Adam states: try an 8-bit optimizer (--optimizer adam8bit) or more GPUs.")
    else:
        steps.append("Nothing fits even with 8-bit optimizer states: more GPUs or a smaller model are needed.")
    return "none", steps
