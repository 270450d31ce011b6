"""Seeded mutations of the sample logs and configs through the whole pipeline (parse, diagnose, every report format).

Each mutation must end as a report or as an InputError (exit 2 at the CLI), never another exception (exit 3 with
a traceback's worth of surprise); inputs stay byte-identical. `DIAGNOSE_FUZZ_SEEDS=2000 pytest tests/test_fuzz.py`
runs more locally; CI runs the default. In-process, so a few hundred cases take seconds, not minutes of startups.
"""
from __future__ import annotations

import gzip
import hashlib
import os
import random
import resource
from collections.abc import Callable
from pathlib import Path

from conftest import SAMPLES
from diagnose.engine import diagnose
from parsers import InputError, parse
from reports import document, html, markdown

SEEDS = int(os.environ.get("DIAGNOSE_FUZZ_SEEDS", "240"))
BASES = [
    SAMPLES / "ds_zero0" / "train.log", SAMPLES / "ds_zero3_offload" / "train.log",
    SAMPLES / "hf_trainer_ddp_bf16" / "train.log", SAMPLES / "synthetic" / "seed_zero3_launch_blocking" / "slurm-1234.out",
    SAMPLES / "ds_zero2_bf16" / "ds_config.json", SAMPLES / "hf_trainer_ddp_bf16" / "accelerate.yaml",
    SAMPLES / "hf_trainer_fp32_gradckpt" / "trainer_state.json", SAMPLES / "ds_zero2_debug_env" / "launch.sh",
    next((SAMPLES / "hf_trainer_ddp_bf16" / "wandb").rglob("*.wandb")),
]


def _truncate(rng: random.Random, b: bytes) -> bytes:
    return b[: rng.randrange(0, max(1, len(b)))]


def _flip(rng: random.Random, b: bytes) -> bytes:
    a = bytearray(b)
    for _ in range(rng.randrange(1, 64)):
        if a:
            a[rng.randrange(len(a))] = rng.randrange(256)
    return bytes(a)


def _invalid_utf8(rng: random.Random, b: bytes) -> bytes:
    i = rng.randrange(0, max(1, len(b)))
    return b[:i] + b"\xff\xfe\xc3\x28\xa0\xa1" * rng.randrange(1, 50) + b[i:]


def _nuls(rng: random.Random, b: bytes) -> bytes:
    i = rng.randrange(0, max(1, len(b)))
    return b[:i] + b"\x00" * rng.randrange(1, 20000) + (b[i:] if rng.random() < 0.5 else b"")


def _line_ends(rng: random.Random, b: bytes) -> bytes:
    return b.replace(b"\n", rng.choice([b"\r\n", b"\r", b"\n\n", b"\r\r\n"]))


def _ansi(rng: random.Random, b: bytes) -> bytes:
    lines = b.split(b"\n")
    return b"\n".join(b"\x1b[31m\x1b[1A\r" + line + b"\x1b[0m" if rng.random() < 0.3 else line for line in lines)


def _huge(rng: random.Random, b: bytes) -> bytes:
    i = rng.randrange(0, max(1, len(b)))
    big = rng.choice([b"9" * 400 + b".5", b"1e999", b"-1e308", b"nan", b"x" * 2_000_000, b"[" * 5000])
    return b[:i] + big + b[i:]


def _wrong_types(rng: random.Random, b: bytes) -> bytes:
    return rng.choice([b"[1, 2, 3]", b'"a string"', b"null", b'{"log_history": 5}', b'{"zero_optimization": [1]}',
                       b'{"train_batch_size": {"a": 1}, "fp16": "yes"}', b"num_processes: [a]\ndistributed_type: 3\n"
                       b"compute_environment: {x: 1}\n", b"distributed_type: &a [*a]\nnum_processes: 1\n"])


def _nesting(rng: random.Random, b: bytes) -> bytes:
    n = rng.choice([50, 500, 50_000])
    return rng.choice([b'{"fp16": ' + b"[" * n + b"]" * n + b"}", b"num_processes: 1\ndistributed_type: x\nk: "
                       + b"[" * n + b"]" * n])


def _gzip(rng: random.Random, b: bytes) -> bytes:
    z = gzip.compress(b)
    return rng.choice([z, z[: rng.randrange(10, max(11, len(z)))], z[:10] + _flip(rng, z[10:])])


MUTATIONS: list[Callable[[random.Random, bytes], bytes]] = [
    _truncate, _flip, _invalid_utf8, _nuls, _line_ends, _ansi, _huge, _wrong_types, _nesting, _gzip]


def _digest(paths: list[Path]) -> list[str]:
    return [hashlib.sha256(p.read_bytes()).hexdigest() for p in paths]


def test_fuzzed_inputs_end_in_a_report_or_a_clean_input_error(tmp_path: Path) -> None:
    before = _digest(BASES)
    outcomes = {"report": 0, "input_error": 0}
    for seed in range(SEEDS):
        rng = random.Random(seed)
        base = rng.choice(BASES)
        mutate = MUTATIONS[seed % len(MUTATIONS)]
        data = mutate(rng, base.read_bytes())
        path = tmp_path / f"case{seed}{base.suffix if mutate is not _gzip else '.gz'}"
        path.write_bytes(data)
        digest = hashlib.sha256(data).hexdigest()
        try:
            model = parse([str(path)])
        except InputError:
            outcomes["input_error"] += 1
        else:
            d = diagnose(model)
            doc = document.build(model, d)
            markdown.render(doc)
            html.render(doc, [])
            outcomes["report"] += 1
        assert hashlib.sha256(path.read_bytes()).hexdigest() == digest, f"seed {seed} changed its input"
        path.unlink()
    assert _digest(BASES) == before
    assert outcomes["report"] > 0 and outcomes["input_error"] > 0, outcomes
    # the whole run's peak, in-process: bounded although some cases hold 2 MB lines and 20k NULs
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss < 1_500_000  # KiB

