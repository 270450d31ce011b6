"""Ingest speed and memory against a floor measured in the same run: GNU grep over the same file.

Writes a seeded 16-rank DeepSpeed log (pdsh host prefixes; step, throughput, timer, tqdm and noise lines, most lines
matching a kind), then times `diagnose parse FILE --format json` and `grep -cE '<anchors>' FILE > out` (output to a
file: /dev/null lets grep stop early). Prints MB/s for both, the time ratio and diagnose's peak RSS.

    python benchmarks/ingest.py [--size-gib 1.0] [--keep]
"""
from __future__ import annotations

import argparse
import os
import random
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

GREP_ANCHORS = ["step=", "RunningAvgSamplesPerSec", "time \\(ms\\)", "it/s\\]", "s/it\\]"]


def write_log(path: Path, size: int, seed: int = 1234) -> int:
    rng = random.Random(seed)
    hosts = [f"10.0.0.{i + 1}" for i in range(4)]
    written = 0
    step = 0
    with open(path, "w", buffering=1 << 22) as out:
        while written < size:
            step += 1
            lines = []
            sec = step % 60
            for rank in range(16):
                host = hosts[rank // 4]
                ts = f"2026-11-29 10:{(step // 60) % 60:02d}:{sec:02d},{rng.randrange(1000):03d}"
                fwd, bwd = rng.uniform(80, 120), rng.uniform(160, 240)
                lines.append(f"{host}: [{ts}] [INFO] [logging.py:123:log_dist] [Rank {rank}] step={step}, skipped=0, "
                             f"lr=[{rng.uniform(1e-5, 3e-4):.6e}], mom=[[0.9, 0.95]]")
                lines.append(f"{host}: [{ts}] [INFO] [timer.py:264:stop] epoch=0/micro_step={step}/global_step="
                             f"{step}, RunningAvgSamplesPerSec={rng.uniform(90, 110)}, CurrSamplesPerSec="
                             f"{rng.uniform(80, 120)}, MemAllocated=41.2GB, MaxMemAllocated=73.9GB")
                lines.append(f"{host}: [Rank {rank}] time (ms) | fwd_microstep: {fwd:.2f} | bwd_microstep: {bwd:.2f} | "
                             f"bwd_inner_microstep: {bwd * 0.7:.2f} | bwd_allreduce_microstep: {bwd * 0.3:.2f} | "
                             f"step_microstep: {rng.uniform(20, 40):.2f}")
                lines.append(f"{host}: [Rank {rank}] time (ms) | fwd: {fwd:.2f} | bwd: {bwd:.2f} | bwd_inner: "
                             f"{bwd * 0.7:.2f} | bwd_allreduce: {bwd * 0.3:.2f} | step: {rng.uniform(20, 40):.2f}")
                if rank % 4 == 0:
                    lines.append(f"{host}: \r {step % 100:3d}%|#####     | {step}/100000 [01:00<10:00, "
                                 f"{rng.uniform(1, 3):.2f}s/it]")
                lines.append(f"{host}: some user output from rank {rank}: tokens={rng.randrange(1 << 20)} ok")
            block = "\n".join(lines) + "\n"
            out.write(block)
            written += len(block)
    return written


def timed(cmd: list[str], stdout: Path) -> tuple[float, int]:
    """Wall seconds and peak RSS (bytes) of one child process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    t0 = time.perf_counter()
    with open(stdout, "wb") as out:
        subprocess.run(cmd, stdout=out, check=True, env={**os.environ, "LC_ALL": "C"})
    wall = time.perf_counter() - t0
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    return wall, max(peak, before) * 1024


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--size-gib", type=float, default=1.0)
    ap.add_argument("--keep", action="store_true", help="keep the generated log")
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="diagnose-bench-"))
    log = tmp / "train-16rank.log"
    t0 = time.perf_counter()
    size = write_log(log, int(args.size_gib * (1 << 30)))
    print(f"wrote {size / 1e6:.0f} MB in {time.perf_counter() - t0:.1f}s: {log}", flush=True)
    mb = size / 1e6
    # Warm the page cache so both tools read from memory.
    subprocess.run(["cat", str(log)], stdout=subprocess.DEVNULL, check=True)
    grep_s, _ = timed(["grep", "-cE", "|".join(GREP_ANCHORS), str(log)], tmp / "grep.out")
    diag_s, rss = timed([sys.executable, "-m", "diagnose", "parse", str(log), "--format", "json"], tmp / "diag.json")
    print(f"grep -cE         {grep_s:7.2f} s  {mb / grep_s:8.1f} MB/s")
    print(f"diagnose parse   {diag_s:7.2f} s  {mb / diag_s:8.1f} MB/s  peak RSS {rss / 1e6:.0f} MB "
          f"({rss / size:.2f}x the file)")
    print(f"ratio diagnose/grep {diag_s / grep_s:.2f}")
    if not args.keep:
        for p in tmp.iterdir():
            p.unlink()
        tmp.rmdir()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
