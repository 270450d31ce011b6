"""Peak dense throughput per GPU model and precision, for MFU. TFLOP/s, from the vendors' datasheets
(dense, no sparsity): A100 SXM/PCIe 312 bf16/fp16, 19.5 fp32 (156 with TF32); H100 SXM 989, H100 PCIe 756;
H200 989 (same SM as H100 SXM); V100 125 fp16 (no bf16); A10G 70 (datasheet 125 w/ sparsity -> 70 dense approx.);
L4 121; L40S 362; A6000 155; RTX 4090 165 (fp16 w/ fp32 accumulate 82.6 -> 165 with fp16 accumulate)."""
from __future__ import annotations

import re

PEAK_TFLOPS: dict[str, dict[str, float]] = {
    "H200": {"bf16": 989.0, "fp16": 989.0, "fp32": 67.0, "tf32": 494.0},
    "H100 SXM": {"bf16": 989.0, "fp16": 989.0, "fp32": 67.0, "tf32": 494.0},
    "H100 PCIe": {"bf16": 756.0, "fp16": 756.0, "fp32": 51.0, "tf32": 378.0},
    "A100": {"bf16": 312.0, "fp16": 312.0, "fp32": 19.5, "tf32": 156.0},
    "V100": {"fp16": 125.0, "fp32": 15.7},
    "A10G": {"bf16": 70.0, "fp16": 70.0, "fp32": 31.2},
    "L4": {"bf16": 121.0, "fp16": 121.0, "fp32": 30.3},
    "L40S": {"bf16": 362.0, "fp16": 362.0, "fp32": 91.6},
    "A6000": {"bf16": 155.0, "fp16": 155.0, "fp32": 38.7},
    "RTX 4090": {"bf16": 165.0, "fp16": 165.0, "fp32": 82.6},
}
MEMORY_GB = {"H200": 141.0, "H100": 80.0, "A100-80": 80.0, "A100": 40.0, "V100": 32.0, "A10G": 24.0, "L4": 24.0,
             "L40S": 48.0, "A6000": 48.0, "RTX 4090": 24.0}


def gpu_model(name: str | None) -> str | None:
    """`NVIDIA A100-SXM4-80GB` -> `A100`; `NVIDIA H100 80GB HBM3` -> `H100 SXM`."""
    if not name:
        return None
    n = name.upper()
    if "H200" in n:
        return "H200"
    if "H100" in n:
        return "H100 PCIe" if "PCIE" in n else "H100 SXM"
    for model in ("A100", "V100", "A10G", "L40S", "L4", "A6000", "RTX 4090"):
        if model.upper() in n:
            return model
    return None


# GPUs without tensor cores, where mixed precision buys no matmul speed: Pascal and older (GeForce 10-series and
# Titan X/Xp, whose fp16 runs at 1/64 of fp32; Tesla P4/P40, K80, M40/M60; P100 doubles fp16 but has no tensor
# cores) and Turing's GTX 16-series. Volta (V100, Titan V) and later, and Turing's RTX/T4, have them.
_NO_TENSOR_CORES = re.compile(r"GTX\s*(?:9\d\d|10\d\d|16\d\d)|TITAN\s*X|\bP(?:4|40|100)\b|\bK(?:20|40|80)\b|"
                              r"\bM(?:40|60)\b|QUADRO\s*P\d", re.I)


def has_tensor_cores(name: str | None) -> bool | None:
    """False for the GPU models above, True for a model of the peak table, None where the name says neither."""
    if not name:
        return None
    if _NO_TENSOR_CORES.search(name):
        return False
    return True if gpu_model(name) is not None else None


def peak_tflops(name: str | None, precision: str | None) -> float | None:
    model = gpu_model(name)
    if model is None or precision is None:
        return None
    return PEAK_TFLOPS[model].get(precision)


def memory_gb(name: str | None) -> float | None:
    if not name:
        return None
    m = re.search(r"(\d+)\s*GB", name.upper())
    if m:
        return float(m.group(1))
    model = gpu_model(name)
    return MEMORY_GB.get(model.split()[0]) if model else None
