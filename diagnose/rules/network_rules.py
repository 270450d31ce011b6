"""Communication: transport, intra-node paths, overlap, per-micro-step traffic, stragglers, topology
(causes.md C2, C11, C12, C13, C16, C17)."""
from __future__ import annotations

from typing import TYPE_CHECKING

import polars as pl

from diagnose import stragglers
from diagnose.metrics import Metrics
from diagnose.parsers.scalars import number
from diagnose.rules import Change, Ctx, Evidence, Finding, Fix, rule
from diagnose.scaling import spoken

if TYPE_CHECKING:
    from diagnose.parsers.facts import RunFacts
    from diagnose.planner import Plan

COMM_BOUND_SHARE = 0.4  # allreduce > 40% of the timed step: compute cannot hide it (causes.md C2/C12, HTA's
#                         "communication-dominated" kernel breakdown)
COMM_SIGNIFICANT_SHARE = 0.2  # above this, overlap and traffic settings matter for speed
# Data parallelism within a node or over a good fabric keeps 90% and more of linear scaling (PyTorch DDP, Li et al.,
# VLDB 2020); under 75%, a quarter of every GPU's time goes to what the added GPUs brought: the gradient exchange.
SCALING_EFFICIENCY = 0.75
# the input rule's cut (timing_rules.DATA_WAIT_SHARE; not imported: importing it would change the rules' registration
# order, which orders the rules table and ties): a waiting loader explains poor scaling instead
DATA_WAIT_SHARE = 0.25
SOCKET_LINES = r"Using network|NET/IB ?: No device|Failed to open libibverbs|via NET/Socket"  # NCCL's verdict lines
# nvidia-smi's utilisation is the share of its last sample period in which a kernel ran: a GPU at a few percent runs
# nothing, one at half or more is working (NVIDIA's nvidia-smi documentation, "Utilization").
SMI_IDLE_PCT = 5
SMI_BUSY_PCT = 50
STRAGGLER_FACTOR = 1.2  # a rank 20% slower than the median rank (nvidia-resiliency-ext straggler detection default)


def _nccl_lines(ctx: Ctx, pattern: str, limit: int = 3) -> list[Evidence]:
    rows = ctx.model.frames["nccl"].filter(pl.col("msg").str.contains(pattern)).head(limit)
    return [Evidence(f"NCCL INFO {r['msg']}", ctx.model.source_name(r["source"]), r["line"])
            for r in rows.iter_rows(named=True)]


@rule("nccl-socket-transport", "NCCL runs over TCP sockets between nodes instead of InfiniBand/RoCE",
      detects="A multi-node run whose NCCL output says `Using network Socket`, `NET/IB : No device found`, "
              "`Failed to open libibverbs`, or with NCCL_IB_DISABLE=1 set.",
      why="Sockets give a few GB/s where IB/RoCE gives 25-50 GB/s per NIC; every gradient reduction and, under "
          "ZeRO-3, every parameter gather crosses the slow link. Multi-node steps become many times slower than "
          "single-node ones.",
      evidence="NCCL_DEBUG=INFO output (the `Using network` verdict, IB device lines, channel transports) or the "
               "environment. Single-node runs are exempt: sockets are not used inside a node.",
      fix="NCCL_IB_DISABLE=0, the right NCCL_IB_HCA / NCCL_SOCKET_IFNAME, the EFA/IB plugin where the cluster "
          "needs one; verify with nccl-tests all_reduce_perf.",
      drivers=("nccl_transport", "env.NCCL_IB_DISABLE", "nodes"), scenario="synthetic/multinode_socket", costs=("socket communication",))
def nccl_socket_transport(ctx: Ctx) -> Finding | None:
    f, n = ctx.facts, ctx.facts.nccl
    nodes = max(f.nodes or 0, n.n_nodes or 0) or None
    ib_off = (ctx.env("NCCL_IB_DISABLE") or "").strip() == "1"
    socket = n.network == "Socket" or n.ib_device_found is False or "NET/Socket" in n.transports
    if nodes == 1 or not (socket or ib_off):  # inside one node NCCL never uses the network
        return None
    # IB was meant to be used: NCCL_IB_* settings other than disabling it, or a run known to span nodes.
    ib_meant = any(k.startswith("NCCL_IB_") and not (k == "NCCL_IB_DISABLE" and ib_off) for k in f.env) \
        or bool(nodes and nodes > 1)
    if not ib_meant and not ib_off:
        return _socket_if_multinode(ctx)
    evidence = _nccl_lines(ctx, SOCKET_LINES)
    changes = []
    if ib_off:
        evidence.insert(0, ctx.env_evidence("NCCL_IB_DISABLE"))
        changes.append(Change("env", "NCCL_IB_DISABLE", "1", "0"))
    if ctx.env("NCCL_SOCKET_IFNAME"):
        evidence.append(ctx.env_evidence("NCCL_SOCKET_IFNAME"))
    # No IB device found: which HCA to name is the cluster's to say (ibstat); the fix text says so, no made-up value.
    return ctx.finding(
        title="NCCL runs over TCP sockets between nodes",
        severity="critical",
        confidence="high" if n.network or ib_off else "medium",
        explains_slowdown=True,
        summary=f"This {str(nodes) + '-node ' if nodes else ''}run moves its collectives over TCP sockets "
                f"({'IB disabled by NCCL_IB_DISABLE=1' if ib_off else 'no usable IB/RoCE device'}): inter-node "
                "bandwidth is a small fraction of what the fabric offers.",
        evidence=tuple(evidence),
        fix=Fix("Put NCCL on the InfiniBand/RoCE fabric and check it with nccl-tests.", tuple(changes),
                "Inter-node collectives at fabric speed; multi-node steps often 3-10x faster."),
    )


def _socket_if_multinode(ctx: Ctx) -> Finding:
    """NCCL fell back to sockets, and the logs do not say whether the run spans nodes."""
    evidence = _nccl_lines(ctx, SOCKET_LINES)
    return ctx.finding(
        title="NCCL found no InfiniBand/RoCE device and uses TCP sockets",
        severity="warning",
        confidence="medium",
        explains_slowdown=True,
        summary="NCCL found no usable IB/RoCE device and chose TCP sockets. If this run spans nodes, every "
                "inter-node collective runs at a small fraction of the fabric's bandwidth; inside one node "
                "it does not matter.",
        evidence=tuple(evidence),
        fix=Fix("If the nodes have IB/RoCE, make the device visible to NCCL (containers: /dev/infiniband "
                "and IPC_LOCK) and check it with nccl-tests all_reduce_perf.", (),
                "Inter-node collectives at fabric speed."),
    )


@rule("gloo-collectives", "GPU gradients are all-reduced through Gloo, not NCCL",
      detects="A GPU job whose collectives cannot use NCCL: Horovod built without NCCL tensor operations "
              "(`horovodrun --check-build` shows `[ ] NCCL`).",
      why="Gloo reduces GPU tensors by copying them to host memory and over TCP: per-GPU throughput drops as soon as "
          "a second GPU joins, and more with every node.",
      evidence="Horovod's build table; the launch command and device lines for a GPU job.",
      fix="Rebuild Horovod with NCCL (HOROVOD_GPU_OPERATIONS=NCCL pip install --no-cache-dir horovod) and check "
          "`horovodrun --check-build` shows `[X] NCCL`.",
      drivers=(), scenario="synthetic/gloo_horovod", costs=("communication",))
def gloo_collectives(ctx: Ctx) -> Finding | None:
    f = ctx.facts
    if f.horovod_nccl is not False or (f.world_size is not None and f.world_size < 2):
        return None
    ev = [e for e in (ctx.fact_evidence("horovod_nccl", "Horovod NCCL tensor operations"),) if e]
    return ctx.finding(
        severity="critical",
        confidence="high",
        explains_slowdown=True,
        summary="Horovod was built without NCCL, so every gradient all-reduce goes through Gloo: GPU "
                "tensors are copied to host memory and reduced over TCP.",
        evidence=tuple(ev),
        fix=Fix("Rebuild Horovod with NCCL: HOROVOD_GPU_OPERATIONS=NCCL pip install --no-cache-dir "
                "horovod; `horovodrun --check-build` then shows [X] NCCL.", (),
                "Collectives on NCCL: per-GPU throughput close to the single-GPU figure inside a node."),
    )


@rule("p2p-disabled", "GPU peer-to-peer disabled inside a node",
      detects="NCCL_P2P_DISABLE=1 (or NCCL choosing SHM over P2P between GPUs of one node).",
      why="Without P2P, intra-node traffic bounces through host memory instead of NVLink/PCIe peer copies: "
          "several times less bandwidth for every collective.",
      evidence="The variable in the environment or NCCL's `set by environment` echo; `via SHM` channel lines.",
      fix="Unset NCCL_P2P_DISABLE on NVLink machines (it is a workaround for some consumer GPUs); set "
          "NCCL_P2P_LEVEL instead of disabling P2P when a specific path is broken.",
      drivers=("env.NCCL_P2P_DISABLE",), scenario="synthetic/p2p_disabled", costs=("communication",))
def p2p_disabled(ctx: Ctx) -> Finding | None:
    value = ctx.env("NCCL_P2P_DISABLE")
    t = ctx.facts.nccl.transports
    gpus_here = ctx.facts.gpus_per_node or ctx.facts.nccl.local_devices or 1
    shm_only = t.get("SHM", 0) > 0 and not any(k.startswith("P2P") for k in t) and gpus_here > 1
    if (value or "").strip() != "1" and not shm_only:
        return None
    level = ctx.env("NCCL_P2P_LEVEL")
    disabled = (value or "").strip() == "1"
    evidence = [ctx.env_evidence("NCCL_P2P_DISABLE")] if value else []
    if level:
        evidence.append(ctx.env_evidence("NCCL_P2P_LEVEL"))
    evidence += _nccl_lines(ctx, r"via SHM")
    if disabled:
        fix = Fix("Unset NCCL_P2P_DISABLE.", (Change("env", "NCCL_P2P_DISABLE", value, None),),
                  "Intra-node bandwidth back to NVLink/PCIe P2P speed.")
    elif level:  # e.g. NVL on GPUs without NVLink: P2P is allowed only over links these GPUs lack
        fix = Fix(f"NCCL_P2P_LEVEL={level} limits P2P to paths these GPUs may not have (`nvidia-smi topo -m` "
                  "shows them); unset it and let NCCL choose.", (Change("env", "NCCL_P2P_LEVEL", level, None),),
                  "Intra-node bandwidth back to PCIe/NVLink P2P speed where the topology allows it.")
    else:
        fix = Fix("Nothing in the environment disables P2P: the GPUs or their PCIe topology do not allow it "
                  "(consumer cards such as the RTX 4090 have P2P off in the driver; check `nvidia-smi topo -p2p r`). "
                  "GPUs with NVLink or P2P-capable PCIe switches avoid the host copy.", (),
                  "Intra-node bandwidth of P2P where the hardware allows it.")
    return ctx.finding(
        severity="warning",
        confidence="high" if disabled else "medium",
        explains_slowdown=True,
        summary="Intra-node collectives go through host shared memory instead of GPU peer-to-peer paths.",
        evidence=tuple(evidence),
        fix=fix,
    )


@rule("comm-bound", "Gradient communication dominates the step",
      detects="The wall_clock_breakdown timers show bwd_allreduce above 40% of the timed step; without timers, the "
              "text shows the same training at two GPU (or node) counts scaling under 75%, or says communication "
              "takes 40% of the time.",
      why="Time spent reducing gradients that compute does not hide is time the GPU waits on the network.",
      evidence="DeepSpeed `time (ms) | fwd | bwd | bwd_inner | bwd_allreduce | step` lines; the comms logger's "
               "bus bandwidth when enabled; a thread's times stated per setting, or step lines pasted under each.",
      fix="Larger micro-batch (more compute per byte), overlap_comm, a lower ZeRO stage, gradient accumulation with "
          "ZeRO-1/DDP, or a faster interconnect.",
      drivers=("nodes", "world_size", "nccl_transport", "zero_stage", "overlap_comm"), scenario="synthetic/comm_bound", costs=("communication",))
def comm_bound(ctx: Ctx) -> Finding | None:
    br = ctx.metrics.breakdown
    if not ctx.gpu_run:
        return None
    if br is None:
        return _from_scaling(ctx)
    # Pipeline point-to-point waits are communication too (Megatron forward-recv / backward-send, DeepSpeed's
    # pipe_send_output / pipe_recv_grad).
    p2p = br.shares.get("pipeline_p2p", 0.0)
    share = br.shares.get("allreduce", 0.0) + p2p
    if share < COMM_BOUND_SHARE:
        return None
    ev = [Evidence(f"bwd_allreduce {br.bwd_allreduce_ms or 0:.1f} ms of {br.total_ms:.1f} ms timed per step "
                   f"({br.shares.get('allreduce', 0.0):.0%})"
                   + (f", pipeline send/recv {p2p:.0%}" if p2p else "") + "; median over the run", kind="metric")]
    if ctx.metrics.comm_busbw_gbps is not None:
        ev.append(Evidence(f"comms logger: median bus bandwidth {ctx.metrics.comm_busbw_gbps:.1f} Gbps", kind="metric"))
    changes = []
    if ctx.facts.overlap_comm is False:
        changes.append(Change("ds_config", "zero_optimization.overlap_comm", False, True))
    if ctx.facts.micro_batch_per_gpu:
        changes.append(Change("ds_config", "train_micro_batch_size_per_gpu", ctx.facts.micro_batch_per_gpu,
                              ctx.facts.micro_batch_per_gpu * 2))
    what = "Gradient all-reduce and pipeline send/recv take" if p2p else "Gradient all-reduce takes"
    return ctx.finding(
        title="Communication dominates the step",
        severity="warning",
        confidence="medium",
        explains_slowdown=True,
        summary=f"{what} {share:.0%} of the timed step; the GPUs wait on communication.",
        evidence=tuple(ev),
        fix=Fix("More compute per byte communicated, and overlap what remains.", tuple(changes),
                "Step time approaches compute time as communication is hidden or shrunk."),
        data={"allreduce_share": share},
    )


def _from_scaling(ctx: Ctx) -> Finding | None:
    """No timers, but the text shows the run at two GPU counts (or says how much of the time communication takes):
    the time the added GPUs did not pay back, with the data loader seen not to wait, is the gradient exchange."""
    m = ctx.metrics
    sc, said = m.scaling, m.comm_stated
    low = sc is not None and sc.efficiency < SCALING_EFFICIENCY
    if not low and not (said is not None and said[0] >= COMM_BOUND_SHARE):
        return None
    if (m.data_wait_share or 0.0) >= DATA_WAIT_SHARE:
        return None
    ev: list[Evidence] = []
    if sc is not None and low:
        what = {"step": "a step", "epoch": "an epoch", "run": "the run"}[sc.basis]
        ev.append(Evidence(f"{what} takes {spoken(sc.small_s)} on {sc.small} {_unit(sc.unit, sc.small)} and "
                           f"{spoken(sc.large_s)} on {sc.large}: {sc.speedup:.2f}x the speed for "
                           f"{sc.large / sc.small:g}x the {sc.unit}, {sc.efficiency:.0%} scaling efficiency",
                           kind="metric"))
        # a stated pair's sentences, or each setting's sentence and the first of its step lines
        seen = dict.fromkeys(sc.evidence)
        ev += [Evidence("as stated" if i < 2 else "the step lines under it", ctx.model.source_name(src), line)
               for i, (src, line) in enumerate(sc.evidence) if (src, line) in seen and seen.pop((src, line)) is None]
    if said is not None and said[0] >= COMM_SIGNIFICANT_SHARE:
        ev.append(Evidence(f"the text says {said[0]:.0%} of the time goes to communication",
                           ctx.model.source_name(said[1]), said[2]))
    summary = (f"The same training runs at {sc.efficiency:.0%} scaling efficiency from {sc.small} to {sc.large} "
               f"{sc.unit}, with no data wait to explain it: the added time is the gradient exchange."
               if sc is not None and low else
               f"The text puts communication at {said[0]:.0%} of the time." if said is not None else "")
    return ctx.finding(
        title="Communication dominates the step",
        severity="warning",
        confidence="low",
        explains_slowdown=True,
        summary=summary,
        evidence=tuple(ev),
        fix=Fix("More compute per byte communicated (a larger per-GPU batch, gradient accumulation), overlap what "
                "remains, and check the path between the GPUs (`nvidia-smi topo -m`, NCCL_DEBUG=INFO).", (),
                "Step time near the single-GPU step as communication is hidden or shrunk."),
        data={"scaling_efficiency": sc.efficiency if sc is not None else None,
              "stated_comm_share": said[0] if said is not None else None},
    )



def _unit(unit: str, n: int) -> str:
    return unit[:-1] if n == 1 and unit.endswith("s") else unit


@rule("overlap-comm-off", "ZeRO communication does not overlap backward compute",
      detects="ZeRO stage 1-3 with zero_optimization.overlap_comm false (DeepSpeed's default outside stage 3).",
      why="Gradient reduction then starts only after backward finishes, adding its full time to every step.",
      evidence="The engine's printed zero_config or the DeepSpeed JSON.",
      fix='"zero_optimization": {"overlap_comm": true, "contiguous_gradients": true}',
      drivers=("overlap_comm",), scenario="ds_zero2_ga4_overlap_off", costs=("communication",))
def overlap_comm_off(ctx: Ctx) -> Finding | None:
    f = ctx.facts
    if f.zero_stage is None or f.zero_stage < 1 or f.overlap_comm is not False:
        return None
    br = ctx.metrics.breakdown
    share = br.shares.get("allreduce", 0.0) if br else None
    explains = bool(share is not None and share >= COMM_SIGNIFICANT_SHARE and ctx.gpu_run)
    ev = [e for e in (ctx.fact_evidence("overlap_comm", "zero_optimization.overlap_comm"),) if e]
    if share is not None:
        ev.append(Evidence(f"bwd_allreduce is {share:.0%} of the timed step", kind="metric"))
    return ctx.finding(
        severity="warning" if explains else "info",
        confidence="medium",
        explains_slowdown=explains,
        summary=f"ZeRO-{f.zero_stage} runs with overlap_comm=false: gradient reduction is serialised after "
                "backward instead of overlapping it.",
        evidence=tuple(ev),
        fix=Fix("Turn on overlap_comm (and contiguous_gradients).",
                (Change("ds_config", "zero_optimization.overlap_comm", False, True),
                 Change("ds_config", "zero_optimization.contiguous_gradients", f.contiguous_gradients, True)),
                "Reduction hides under backward compute; saves up to the allreduce share of the step."),
        data={"allreduce_share": share},
    )


@rule("grad-accum-zero-traffic", "Gradient accumulation multiplies ZeRO-2/3 traffic",
      detects="gradient_accumulation_steps > 1 with ZeRO stage 2 or 3.",
      why="ZeRO-2 reduce-scatters gradients in every micro-step and ZeRO-3 also all-gathers parameters in every "
          "micro-step, so G accumulation steps move G times the data of DDP or ZeRO-1, which reduce once per "
          "optimizer step.",
      evidence="The engine config (gradient_accumulation_steps, zero_optimization_stage); bwd_allreduce_microstep "
               "timers in every micro-step.",
      fix="ZeRO-1 (or plain DDP) when memory allows; otherwise fewer, larger micro-steps.",
      drivers=("grad_accum_steps", "zero_stage"), scenario="ds_zero2_ga4_overlap_off", costs=("communication",))
def grad_accum_zero_traffic(ctx: Ctx) -> Finding | None:
    f = ctx.facts
    if not f.grad_accum_steps or f.grad_accum_steps <= 1 or (f.zero_stage or 0) < 2:
        return None
    plan = ctx.plan
    # The planner decides the stage (with the run's measured memory where it has it): ZeRO-1 only where it fits.
    fits_zero1 = plan is not None and plan.gpu_memory_known and plan.recommended_stage <= 1
    target = plan.recommended_stage if plan is not None else 1
    br = ctx.metrics.breakdown
    share = br.shares.get("allreduce", 0.0) if br else None
    explains = bool(share is not None and share >= COMM_SIGNIFICANT_SHARE and ctx.gpu_run)
    ev = [e for e in (ctx.fact_evidence("grad_accum_steps", "gradient_accumulation_steps"),
                      ctx.fact_evidence("zero_stage", "zero_optimization.stage")) if e]
    changes = [Change("ds_config", "zero_optimization.stage", f.zero_stage, target)]
    if fits_zero1 and plan is not None and plan.recommended_micro_batch is not None:
        changes += [Change("ds_config", "train_micro_batch_size_per_gpu", f.micro_batch_per_gpu,
                           plan.recommended_micro_batch),
                    Change("ds_config", "gradient_accumulation_steps", f.grad_accum_steps,
                           plan.recommended_grad_accum)]
    elif not fits_zero1:  # fewer, larger micro-steps; the recommended config drops it where memory is tight
        changes = [Change("ds_config", "gradient_accumulation_steps", f.grad_accum_steps,
                          max(1, f.grad_accum_steps // 2)),
                   Change("ds_config", "train_micro_batch_size_per_gpu", f.micro_batch_per_gpu,
                          (f.micro_batch_per_gpu or 1) * 2)]
    return ctx.finding(
        severity="warning",
        confidence="high",
        explains_slowdown=explains,
        data={"traffic_gb_per_step": traffic} if (traffic := _traffic(f, plan, target, changes)) else {},
        summary=f"ZeRO-{f.zero_stage} with {f.grad_accum_steps} accumulation steps communicates in every "
                f"micro-step: {f.grad_accum_steps}x the gradient traffic of ZeRO-1/DDP per optimizer step.",
        evidence=tuple(ev),
        fix=Fix(_accum_fix(target, fits_zero1, plan), tuple(changes),
                f"Per-GPU traffic from {traffic[0]:.1f} to {traffic[1]:.1f} GB per optimizer step." if traffic else
                f"Up to {f.grad_accum_steps}x less gradient traffic per optimizer step (one reduction a step instead "
                f"of one per micro-step)."),
    )


def _traffic(f: RunFacts, plan: Plan | None, target: int, changes: list[Change]) -> tuple[float, float] | None:
    """Per GPU per step, the traffic of the configured stage and of what the fix leaves: the planner's rows for a
    stage change; the accumulation ratio for fewer, larger micro-steps (ZeRO-2/3 reduce once per micro-step)."""
    if plan is None:
        return None
    now = next((s for s in plan.stages if s.stage == f.zero_stage and s.offload is None), None)
    if now is None or not now.comm_gb_per_step:
        return None
    if any(c.key == "zero_optimization.stage" and c.after != f.zero_stage for c in changes):
        to = next((s for s in plan.stages if s.stage == target and s.offload is None), None)
        return (now.comm_gb_per_step, to.comm_gb_per_step) if to and to.comm_gb_per_step is not None else None
    accum = next((c.after for c in changes if c.key == "gradient_accumulation_steps"), None)
    if isinstance(accum, int) and f.grad_accum_steps:
        return now.comm_gb_per_step, now.comm_gb_per_step * accum / f.grad_accum_steps
    return None


def _accum_fix(target: int, fits_zero1: bool, plan: object) -> str:
    """The fix in words that match the changes: a lower stage makes accumulation free of extra traffic (and may
    itself need more, smaller micro-steps to fit), else fewer, larger micro-steps."""
    if not fits_zero1:
        return "Fewer, larger micro-steps: each micro-step costs a full reduce-scatter under this stage."
    stage = "ZeRO-1" if target == 1 else "Plain data parallel"
    mb, ga = getattr(plan, "recommended_micro_batch", None), getattr(plan, "recommended_grad_accum", None)
    fit = (f" To fit its memory, it takes micro-batch {mb} x accumulation {ga} (the same global batch): more "
           "accumulation there costs no extra traffic.") if mb is not None else ""
    return f"{stage} reduces gradients only at the accumulation boundary, so accumulation adds no traffic.{fit}"


@rule("straggler", "One rank is slower than the others",
      detects="Per-rank step (timer) medians or per-GPU utilization where one rank is 20% slower than the median, "
              "a Megatron straggler report whose slowest rank's round trip is 20% over the fastest's, or a "
              "comms-logger straggler breakdown where collectives take 20% longer than on the fastest rank.",
      why="Collectives wait for the slowest rank, so one slow GPU, node or link sets everyone's pace.",
      evidence="wall_clock_breakdown timers from every rank (rank prefixes), per-GPU W&B system metrics, "
               "Megatron-LM's straggler report (`--log-straggler`: MnRtt/MxRtt with their ranks), or the "
               "comms logger's `Breakdown with straggler effect` table (comms_logger + log_summary(show_straggler)).",
      fix="Find the slow node (pairwise all_reduce tests, nvidia-smi clocks/temps/power), exclude or repair it; "
          "keep GPUs homogeneous.",
      drivers=(), scenario="synthetic/straggler", costs=("straggler wait",))
def straggler(ctx: Ctx) -> Finding | None:
    m = ctx.metrics
    if (m.imbalance is None or m.imbalance < STRAGGLER_FACTOR) and (m.node_imbalance or 0) >= STRAGGLER_FACTOR:
        slow = max(m.node_step_p50, key=lambda host: m.node_step_p50[host])
        med = sorted(m.node_step_p50.values())[len(m.node_step_p50) // 2]
        return ctx.finding(
            title=f"Node {slow} is {m.node_imbalance:.1f}x slower than the median node",
            severity="warning",
            confidence="medium",
            explains_slowdown=True,
            summary=f"Ranks on {slow} take {m.node_step_p50[slow] * 1000:.0f} ms per timed step "
    f"against a median node's {med * 1000:.0f} ms; every collective waits for them.",
            evidence=(Evidence(", ".join(f"{n}: {v * 1000:.0f} ms" for n, v in sorted(m.node_step_p50.items())),
                               kind="metric"),),
            fix=Fix(f"Check {slow} (clocks, temperature, power cap, NIC) and exclude or fix it.", (),
                    "Every node at the median node's pace."),
            data={"node": slow, "ratio": m.node_imbalance},
        )
    if (m.imbalance is None or m.imbalance < STRAGGLER_FACTOR) and len(m.util_per_gpu) >= 2:
        return _straggler_gpu(ctx, m)
    if m.imbalance is None or m.imbalance < STRAGGLER_FACTOR:
        if (report := stragglers.from_report(ctx.model.frames["rank_extremes"])) is not None:
            return _straggler_report(ctx, report)
        return _straggler_comms(ctx)
    return _straggler_rank(ctx, m)


def _straggler_report(ctx: Ctx, s: stragglers.Stragglers) -> Finding:
    """Megatron's straggler report: the rank with the longest round trip per interval, and its other readings."""
    rows = ctx.model.frames["rank_extremes"].filter(pl.col("rtt_max_rank") == s.rank).sort("rtt_max_ms")
    worst = rows.row(rows.height - 1, named=True)
    cause = ("The same rank every time points to its GPU, its thermals or its link." if s.kind == "persistent"
             else "A slowest rank that moves points to the input: data skew, sequence lengths, the data loader.")
    signals = ("; ".join(s.signals) + ". ") if s.signals else ""
    return ctx.finding(
        title=(f"Rank {s.rank} is the slowest in {s.share:.0%} of Megatron's straggler reports, "
               f"{s.ratio:.2f}x the fastest rank" if s.kind == "persistent" else
               f"The slowest rank moves between reports ({', '.join(map(str, s.moving_ranks))}), "
               f"{s.ratio:.2f}x the fastest"),
        severity="warning",
        confidence="medium",
        explains_slowdown=True,
        summary=(f"Megatron's straggler report puts the longest round trip on rank {s.rank} in {s.share:.0%} of "
                 f"{s.steps} reports; the fastest rank waits about {s.wait_s_per_step * 1000:.0f} ms per iteration "
                 f"for it. {signals}{cause}"),
        evidence=(Evidence(f"MxRtt/Rnk: {worst['rtt_max_ms']:.2f}ms/{s.rank} against MnRtt/Rnk: "
                           f"{worst['rtt_min_ms']:.2f}ms/{worst['rtt_min_rank']}",
                           ctx.model.source_name(worst["source"]), worst["line"]),),
        fix=Fix(f"Check the GPU behind rank {s.rank} (nvidia-smi clocks, temperature, power cap, PCIe/NIC) and "
                "exclude or fix it." if s.kind == "persistent" else
                "Balance the input: pack or bucket sequences by length, check the data loader's workers.", (),
                "Every rank at the fastest rank's pace."),
        data={"rank": s.rank, "ratio": s.ratio, "kind": s.kind},
    )


def _straggler_comms(ctx: Ctx) -> Finding | None:
    """The comms logger's straggler table: comm lat is the fastest rank's, straggler the printing rank's wait."""
    m = ctx.metrics
    if m.comm_straggler_ratio is None or m.comm_straggler_ratio < STRAGGLER_FACTOR:
        return None
    rows = ctx.model.frames["comms"].filter(pl.col("origin") == "comms_straggler").sort("total_straggler_ms",
                                                                                        descending=True)
    worst = rows.row(0, named=True)
    caveat = (" (this DeepSpeed's logger records running totals, so the table's milliseconds are overstated; the "
              "ratio is about right)" if m.comm_running_totals else "")
    return ctx.finding(
        title=f"Collectives wait for a late rank: {m.comm_straggler_ratio:.1f}x the fastest "
 "rank's time",
        severity="warning",
        confidence="medium",
        explains_slowdown=True,
        summary=f"In the comms logger's straggler breakdown, collectives on the printing rank take "
                f"{m.comm_straggler_ratio:.1f}x as long as on the fastest rank, most of the wait in {worst['op']} "
                f"({worst['msg_size']}, {worst['count']} calls){caveat}. Some rank reaches each collective late.",
        evidence=(Evidence(f"Breakdown with straggler effect: {worst['op']} {worst['msg_size']} total comm lat "
                           f"{worst['total_latency_ms']:.2f} ms, total straggler "
                           f"{worst['total_straggler_ms']:.2f} ms",
                           ctx.model.source_name(worst["source"]), worst["line"]),),
        fix=Fix("Find the late rank: enable wall_clock_breakdown on every rank (or per-GPU W&B metrics) and "
                "compare; then check that node's clocks, temperature, power cap, data loading and NIC.", (),
                "Collectives at the fastest rank's pace."),
        data={"ratio": m.comm_straggler_ratio},
    )


def _straggler_rank(ctx: Ctx, m: Metrics) -> Finding:
    slow_rank = max(m.rank_step_p50, key=lambda rank: m.rank_step_p50[rank])
    med = sorted(m.rank_step_p50.values())[len(m.rank_step_p50) // 2]
    return ctx.finding(
        title=f"Rank {slow_rank} is {m.imbalance:.1f}x slower than the median rank",
        severity="warning",
        confidence="medium",
        explains_slowdown=True,
        summary=f"Rank {slow_rank} takes {m.rank_step_p50[slow_rank] * 1000:.0f} ms per step against a median "
                f"of {med * 1000:.0f} ms; every collective waits for it.",
        evidence=(Evidence(", ".join(f"rank {r}: {v * 1000:.0f} ms" for r, v in sorted(m.rank_step_p50.items())),
                           kind="metric"),),
        fix=Fix(f"Inspect the node running rank {slow_rank} (clocks, temperature, power cap, PCIe/NIC) and "
                "exclude it or fix it.", (), "Everyone runs at the median rank's pace."),
        data={"rank": slow_rank, "ratio": m.imbalance},
    )


def _straggler_gpu(ctx: Ctx, m: Metrics) -> Finding | None:
    """W&B per-GPU utilization: the GPU that waits least is the one everyone else waits for (P-one-gpu-different)."""
    util = m.util_per_gpu
    ordered = sorted(util.values())
    med = ordered[len(ordered) // 2]
    odd = max(util, key=lambda g: abs(util[g] - med))
    if med <= 0 or abs(util[odd] - med) / med < STRAGGLER_FACTOR - 1:
        return None
    signals = _gpu_signals(ctx.model.frames["system"], odd)
    return ctx.finding(
        title=f"GPU {odd} behaves differently from the others",
        severity="warning",
        confidence="medium",
        explains_slowdown=True,
        summary=f"GPU {odd} averages {util[odd]:.0f}% utilization against a median of {med:.0f}%: one device (or "
                "its link) paces the collectives." + (" " + "; ".join(signals) + "." if signals else ""),
        evidence=(Evidence(", ".join(f"GPU {g}: {v:.0f}%" for g, v in sorted(util.items())), kind="metric"),),
        fix=Fix(f"Check GPU {odd}'s clocks, temperature and power cap; swap or exclude it.", (),
                "Every GPU at the median's pace."),
        data={"gpu": odd, "signals": signals},
    )


# W&B's per-GPU system metrics that name why one GPU differs: (metric, the telling end, phrase, unit). A GPU that
# also runs the lowest SM clock or power, or the highest temperature, is throttled or capped (Greyhound's slow-GPU
# causes; ../shared/reference/goodput_stragglers.md).
GPU_SIGNALS: tuple[tuple[str, str, str, str], ...] = (
    ("smClock", "min", "the lowest SM clock", "MHz"),
    ("powerWatts", "min", "the lowest power draw", "W"),
    ("temp", "max", "the highest temperature", "C"),
)
GPU_SIGNAL_GAP = 0.05  # 5% from the other GPUs' median: beyond the sampling noise of these gauges


def _gpu_signals(system: pl.DataFrame, gpu: int) -> list[str]:
    out = []
    for metric, end, phrase, unit in GPU_SIGNALS:
        med = (system.filter((pl.col("metric") == metric) & pl.col("gpu").is_not_null())
               .group_by("gpu").agg(pl.col("value").median()).sort("value", descending=end == "max"))
        if med.height < 2 or int(med["gpu"][0]) != gpu:
            continue
        mine, others = number(med["value"][0]), number(med["value"][1:].median())
        if others > 0 and abs(mine - others) / others >= GPU_SIGNAL_GAP:
            out.append(f"it also has {phrase} ({mine:.0f} {unit} against {others:.0f} {unit} on the others)")
    return out


@rule("world-size-mismatch", "What ran disagrees with what was launched or allocated",
      detects="A job that ran with fewer (or more) processes or nodes than its launcher flags or config asked for, "
              "or fewer processes than the GPUs the scheduler granted: world size 1 on a 3-GPU allocation, 8 "
              "processes on 2 x 8 GPUs; or a pasted nvidia-smi whose one process holds every GPU it lists while "
              "some run nothing. A launcher flag that overrides a config file is not a mismatch.",
      why="A job that silently runs on fewer GPUs than intended (or as independent copies per node) is slower by "
          "the missing factor, and each copy may redo the same work.",
      evidence="What the job printed (engine config dump, Megatron arguments, accelerate's Num processes, elastic "
               "and MPI world sizes, NCCL's world communicator) against the launcher's flags, the accelerate "
               "YAML and #SBATCH directives; nvidia-smi's utilisation and process tables.",
      fix="Make num_machines / num_processes / --num_nodes / --nproc_per_node / the hostfile agree with the "
          "allocation.",
      drivers=("world_size", "nodes"), scenario="synthetic/world_size_mismatch")
def world_size_mismatch(ctx: Ctx) -> Finding | None:
    claims = ctx.facts.claims
    for fact in ("world_size", "nodes"):
        evs = [ev for ev in claims.get(fact, []) if isinstance(ev.value, int)]
        ran = max((ev for ev in evs if ev.tier == "job"), key=lambda ev: ev.value, default=None)
        # What was launched: the launcher's flags where it has them, else the config files (a flag overrides a
        # config value); what was allocated: the scheduler's grant.
        launched = next((ev for tier in ("launcher", "config") for ev in evs if ev.tier == tier), None)
        allocated = next((ev for ev in claims.get("allocated_gpus", []) if isinstance(ev.value, int)), None) \
            if fact == "world_size" else next((ev for ev in evs if ev.tier == "scheduler"), None)
        if ran is None:
            continue
        against = [ev for ev in (launched, allocated) if ev is not None and ev.value != ran.value
                   and not (ev is allocated and ran.value > ev.value)]
        if not against:
            continue
        evidence = tuple(Evidence(f"{fact} = {ev.value} ({_where(ev)})",
                                  ctx.model.source_name(ev.source) if ev.source >= 0 else None, ev.line, "config")
                         for ev in (ran, *against))
        changes = []
        acc = [ev for ev in evs if ev.origin == "accelerate_yaml"]
        if acc and launched is acc[0] and acc[0].value != ran.value:
            key = "num_machines" if fact == "nodes" else "num_processes"
            changes.append(Change("accelerate", key, acc[0].value, max(ran.value, acc[0].value)))
        name = fact.replace("_", " ")
        unit = "nodes" if fact == "nodes" else "processes"
        how = "allocated" if against[0] is allocated else "launched"
        return ctx.finding(
            title=f"The job ran with {ran.value} {unit} where {against[0].value} were {how}",
            severity="critical",
            confidence="high",
            explains_slowdown=True,
            summary=f"The {name} the running job printed ({ran.value}) differs from "
                    + " and ".join(f"what the {_where(ev)} says ({ev.value})" for ev in against)
                    + ". Part of the allocation may be idle, or nodes may be training independent copies.",
            evidence=evidence,
            fix=Fix("Make the launcher config match the allocation.", tuple(changes),
                    "All allocated GPUs in one job."),
        )
    return _one_process_on_idle_gpus(ctx)


def _one_process_on_idle_gpus(ctx: Ctx) -> Finding | None:
    """A pasted nvidia-smi whose one compute process holds every GPU it lists while some of them run nothing: the job
    is one process (TensorFlow and a plain script open a context on each visible GPU), not one per GPU. Unless the job
    printed a world size above one itself (the table may be from another moment)."""
    smi = ctx.facts.smi
    if smi is None or any(ev.tier == "job" and isinstance(ev.value, int) and ev.value > 1
                          for ev in ctx.facts.claims.get("world_size", [])):
        return None
    pids = {pid for _, pid in smi.processes}
    gpus = sorted({gpu for gpu, _ in smi.processes})
    idle = [i for i, (_, util) in enumerate(smi.usage) if util <= SMI_IDLE_PCT]
    if len(pids) != 1 or len(gpus) < 2 or not idle or not any(util >= SMI_BUSY_PCT for _, util in smi.usage):
        return None
    pid, name = next(iter(pids)), ctx.model.source_name(smi.source)
    shown = ", ".join(f"GPU {i} {util}% ({used} MiB)" for i, (used, util) in enumerate(smi.usage))
    return ctx.finding(
        title=f"One process (PID {pid}) holds all {len(smi.usage)} GPUs nvidia-smi lists, and {len(idle)} of them "
              "run nothing",
        severity="critical",
        confidence="medium",
        explains_slowdown=True,
        summary=f"nvidia-smi shows one compute process, PID {pid}, on GPUs {', '.join(map(str, gpus))}, with {shown}: "
                "the job runs as one process that opened every visible GPU and computes on one. More GPUs then "
                "change nothing: each needs a process of its own (or the framework's multi-GPU strategy).",
        evidence=(Evidence(f"utilisation: {shown}; processes: PID {pid} on GPUs {', '.join(map(str, gpus))}", name,
                           smi.lines[0] if smi.lines else None, "log"),),
        fix=Fix(f"Launch one process per GPU: torchrun --nproc_per_node={len(smi.usage)} (DDP), horovodrun -np "
                f"{len(smi.usage)}, or the framework's distributed launcher.", (),
                f"Up to {len(smi.usage)}x the throughput, where the data parallelism scales."),
        data={"idle_gpus": len(idle), "gpus": len(smi.usage)},
    )


def _where(ev: object) -> str:
    tier = getattr(ev, "tier", "job")
    return {"job": "job's own output", "launcher": "launch command", "config": "config file",
            "scheduler": "scheduler's allocation"}.get(tier, tier) + f", {getattr(ev, 'origin', '').replace('_', ' ')}"
