"""Seeded mutations of the sample logs and configs through the whole pipeline (parse, diagnose, every report format),
as a long run: each case must end as a report or an InputError (exit 2 at the CLI), never another exception; its
Markdown and terminal text must hold no raw control character; inputs stay byte-identical. tests/test_fuzz.py runs
the first 240 seeds; this script runs as many as asked and writes the figures into docs/fuzz.md.

    python benchmarks/fuzz.py [--seeds 10000] [--write docs/fuzz.md]
"""
from __future__ import annotations

import argparse
import collections
import gzip
import hashlib
import io
import json
import multiprocessing
import os
import random
import re
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = ROOT / "sample_logs"
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


def _overflow(rng: random.Random, b: bytes) -> bytes:
    """Numbers past 64 bits where numbers are read (`localRanks 99999999999999999999`, `step=1e400`)."""
    big = rng.choice([b"99999999999999999999", b"184467440737095516160", b"-99999999999999999999", b"1e400",
                      b"340282366920938463463374607431768211457"])
    return re.sub(rb"(?<![\w.])\d+(?![\w.])", lambda m: big if rng.random() < 0.3 else m.group(0), b)


def _controls(rng: random.Random, b: bytes) -> bytes:
    """Terminal and bidi controls inside lines: OSC window titles, screen clears, BEL, right-to-left overrides."""
    lines = b.split(b"\n")
    evil = [b"\x1b]0;pwned\x07", b"\x1b[2J\x1b[H", b"\x07", b"\xe2\x80\xae", b"\x1b]8;;http://x\x1b\\", b"\x08\x08"]
    return b"\n".join(line + rng.choice(evil) + line[: rng.randrange(0, 20)] if rng.random() < 0.3 else line
                      for line in lines)


def _prefixes(rng: random.Random, b: bytes) -> bytes:
    """Launcher prefixes on every line, some of them damaged."""
    prefix = rng.choice([b"node1: ", b"[1,0]<stdout>:", b"[rank3]: ", b"0: ", b"[default0]:", b"gpu-7:1234:5678 [0] "])
    return b"\n".join(prefix[: rng.randrange(len(prefix) + 1)] + line for line in b.split(b"\n"))


def _redraws(rng: random.Random, b: bytes) -> bytes:
    """Lines joined by carriage returns (a terminal capture of progress bars), in part or whole."""
    return b.replace(b"\n", b"\r") if rng.random() < 0.5 else re.sub(rb"\n(?=.)", lambda m: rng.choice(
        [b"\r", b"\n"]), b)


def _stamps(rng: random.Random, b: bytes) -> bytes:
    """Impossible and extreme timestamps: year 0000 or 9999, hour 25, a clock that runs backwards, epoch 0."""
    year = rng.choice([b"0000", b"9999", b"1900", b"2200", b"0001"])
    b = re.sub(rb"\b20\d\d(?=-\d\d-\d\d)", lambda m: year if rng.random() < 0.5 else m.group(0), b)
    b = re.sub(rb"\b\d\d:\d\d:\d\d\b", lambda m: rng.choice([b"25:61:99", b"00:00:00", b"23:59:60", m.group(0)]), b)
    lines = b.split(b"\n")
    for _ in range(rng.randrange(1, 5)):
        lines.insert(rng.randrange(len(lines) + 1), rng.choice([b"0 step 1 loss 2.0", b"[0000-00-00 00:00:00,000] x",
                                                                 b"1e20: iter 1", b"99999999999 step 2"]))
    return b"\n".join(lines)


def _duplicates(rng: random.Random, b: bytes) -> bytes:
    """Duplicate keys in configs (YAML and JSON lines repeated with another value) and repeated log lines."""
    out = []
    for line in b.split(b"\n"):
        out.append(line)
        if rng.random() < 0.3:
            out.append(re.sub(rb"\d+", lambda m: str(int(m.group(0)) + 1).encode(), line))
    return b"\n".join(out)


# A structural secret (issue 32's families) planted in an input: whatever is read of it, no output may hold it.
SECRET_MARK = "Zq7Xw"
_SECRET_SHAPES = [
    "mysql -u root -p {v} analytics", "docker login -u bob -p {v} registry.example.com", "ldapsearch -x -w {v}",
    "wandb:\n  api_key: {v}", "password: |\n  {v}", "Server=db;User ID=sa;Password={v};",
    "jdbc:sqlserver://db:1433;password={v}", "fetch https://alice:{v}@files.example.com/x",
    "body=user%3Dbob%26password%3D{v}", "argv=['train.py', '--hub_token', '{v}']", "<password>{v}</password>",
    "Authorization: Negotiate {v}", "kind: Secret\ndata:\n  anything: {v}", "--from-literal=x={v}",
    "npm config set //registry.npmjs.org/:_authToken {v}", "export HF_TOKEN={v}", '{{"api_key": "{v}"}}',
    "metadata=[('x-api-key', '{v}')]", "sshpass -p {v} ssh node2", "smbclient //fs/s -U bob%{v}",
]


def _secrets(rng: random.Random, b: bytes) -> bytes:
    lines = b.split(b"\n")
    for _ in range(rng.randrange(1, 4)):
        value = f"{SECRET_MARK}{rng.randrange(10**6):06d}pw"
        shape = rng.choice(_SECRET_SHAPES).format(v=value).encode()
        lines.insert(rng.randrange(len(lines) + 1), shape)
    return b"\n".join(lines)


def _pathological(rng: random.Random, b: bytes) -> bytes:
    """Lines built to make a backtracking or quadratic pattern slow: long runs of one separator or one prefix."""
    piece = rng.choice([b" ", b"[", b"=", b":", b"1:", b"\t", b"-", b"%3D", b"<a ", b"\\'", b"a=", b"`", b"{", b"|",
                        b"0.", b"e", b"--x ", b"\r\n"])
    lines = b.split(b"\n")
    at = rng.randrange(len(lines) + 1)
    return b"\n".join(lines[:at] + [piece * (65_536 // len(piece)) + b"x", b"\n" * rng.randrange(0, 65_536)]
                      + lines[at:])


MUTATIONS: list[Callable[[random.Random, bytes], bytes]] = [
    _truncate, _flip, _invalid_utf8, _nuls, _line_ends, _ansi, _huge, _wrong_types, _nesting, _gzip, _overflow,
    _controls, _prefixes, _redraws, _stamps, _duplicates, _secrets, _pathological]


# Raw control characters that must not reach a terminal, Markdown or text output.
RAW_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f\u202a-\u202e\u2066-\u2069]")


def run_case(seed: int, tmp: Path) -> str:
    """One seeded case -> "report" or "input_error"; raises on anything else (the bug the fuzz looks for)."""
    from diagnose.engine import diagnose
    from diagnose.parsers import InputError, parse
    from diagnose.reports import document, html, markdown, run_json, terminal
    from rich.console import Console

    rng = random.Random(seed)
    base = rng.choice(BASES)
    mutate = MUTATIONS[seed % len(MUTATIONS)]
    data = mutate(rng, base.read_bytes())
    path = tmp / f"case{seed}{base.suffix if mutate is not _gzip else '.gz'}"
    path.write_bytes(data)
    digest = hashlib.sha256(data).hexdigest()
    try:
        try:
            model = parse([str(path)])
        except InputError:
            return "input_error"
        d = diagnose(model)
        doc = document.build(model, d)
        md = markdown.render(doc)
        page = html.render(doc, [])
        buf = io.StringIO()
        terminal.render(doc, Console(file=buf, width=120, color_system=None, force_terminal=False))
        for name, text in (("markdown", md), ("terminal", buf.getvalue())):
            if (m := RAW_CONTROL.search(text)) is not None:
                raise AssertionError(f"seed {seed} ({mutate.__name__}): raw {m.group(0)!r} in the {name} output")
        if mutate is _secrets:
            parsed = json.dumps(run_json.summary(model), default=str)
            for name, text in (("markdown", md), ("html", page), ("terminal", buf.getvalue()),
                               ("json", json.dumps(doc, default=str)), ("parse json", parsed)):
                if SECRET_MARK in text:
                    at = text.index(SECRET_MARK)
                    raise AssertionError(f"seed {seed}: a planted secret in the {name} output: "
                                         f"{text[max(0, at - 60):at + 20]!r}")
        return "report"
    finally:
        if hashlib.sha256(path.read_bytes()).hexdigest() != digest:
            raise AssertionError(f"seed {seed} changed its input")
        path.unlink()


def _timed_case(seed: int) -> tuple[int, str, float, str]:
    """One case in a worker process: (seed, outcome, seconds, the failure's line or "")."""
    start = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        try:
            return seed, run_case(seed, Path(tmp)), time.perf_counter() - start, ""
        except Exception as e:  # noqa: BLE001 - the finding this script exists for
            first = str(e).splitlines()[0][:200] if str(e) else ""
            return seed, "failure", time.perf_counter() - start, f"{type(e).__name__}: {first}"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seeds", type=int, default=10_000)
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="worker processes (default: the cores)")
    ap.add_argument("--write", type=Path, default=None, help="write the figures as Markdown here (docs/fuzz.md)")
    args = ap.parse_args()
    sys.path.insert(0, str(ROOT))
    outcomes: collections.Counter[str] = collections.Counter()
    by_mutation: dict[str, collections.Counter[str]] = collections.defaultdict(collections.Counter)
    failures: list[str] = []
    slowest: dict[str, float] = {}  # per mutation, the longest case: a super-linear pattern shows here
    start = time.perf_counter()
    with multiprocessing.get_context("fork").Pool(args.jobs) as pool:
        for done, (seed, outcome, seconds, failure) in enumerate(pool.imap_unordered(_timed_case, range(args.seeds),
                                                                                     chunksize=20), 1):
            name = MUTATIONS[seed % len(MUTATIONS)].__name__.lstrip("_")
            if failure:
                failures.append(f"seed {seed} ({name}): {failure}")
                print(failure, file=sys.stderr, flush=True)
            outcomes[outcome] += 1
            by_mutation[name][outcome] += 1
            slowest[name] = max(slowest.get(name, 0.0), seconds)
            if done % 500 == 0:
                print(f"{done} cases, {dict(outcomes)}", file=sys.stderr, flush=True)
    wall = time.perf_counter() - start
    lines = [f"# Fuzzing: {args.seeds:,} seeded inputs", "",
             f"`python benchmarks/fuzz.py --seeds {args.seeds}` ({args.jobs} worker processes): {wall:.0f} s. "
             "Each case is a sample log or config mutated one way, read, diagnosed and rendered (JSON document, Markdown, HTML, terminal text). Bar: "
             "a report or a one-line input error, never another exception; no raw control character in Markdown "
             "or terminal text; the input unchanged.", "",
             f"- reports: {outcomes['report']:,}", f"- input errors (exit 2): {outcomes['input_error']:,}",
             f"- failures: {outcomes['failure']:,}", "",
             "| mutation | reports | input errors | failures | slowest case |", "|---|---:|---:|---:|---:|"]
    for name in sorted(by_mutation):
        c = by_mutation[name]
        lines.append(f"| {name} | {c['report']} | {c['input_error']} | {c['failure']} | {slowest[name]:.2f} s |")
    if failures:
        lines += ["", "Failures:", ""] + [f"- {f}" for f in failures[:50]]
    text = "\n".join(lines) + "\n"
    print(text)
    if args.write:
        args.write.write_text(text)
    return 1 if failures else 0


if __name__ == "__main__":
    raise SystemExit(main())
