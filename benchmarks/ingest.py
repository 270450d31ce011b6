"""Ingest speed and memory against a floor measured in the same run: GNU grep over the same file.

Writes a seeded 16-rank DeepSpeed log (pdsh host prefixes; step, throughput, timer, tqdm and noise lines, most lines
matching a kind), then times `diagnose parse FILE --format json` (or `report`) and `grep -cE '<anchors>' FILE > out`
(output to a file: /dev/null lets grep stop early). Prints MB/s for both, the time ratio and diagnose's peak RSS.

With several sizes, the largest log is written once and the smaller ones are its prefixes (the same seed writes the
same lines), and one row per size shows how time and peak RSS grow with the log:

    python benchmarks/ingest.py [--size 1.0] [--command parse|report|compare] [--keep]
    python benchmarks/ingest.py --size 0.5 1 2 4 8 --command report
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


def timed_fresh(cmd: list[str], stdout: Path) -> tuple[float, int]:
    """Wall seconds and peak RSS (bytes) of this child alone (os.wait4): RUSAGE_CHILDREN keeps the largest child so
    far, so a smaller run after a bigger one would report the bigger one's peak."""
    t0 = time.perf_counter()
    with open(stdout, "wb") as out:
        child = subprocess.Popen(cmd, stdout=out, env={**os.environ, "LC_ALL": "C"})
        _, status, usage = os.wait4(child.pid, 0)
        child.returncode = os.waitstatus_to_exitcode(status)
    wall = time.perf_counter() - t0
    if child.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} exited {child.returncode}")
    return wall, usage.ru_maxrss * 1024


def timed(cmd: list[str], stdout: Path) -> tuple[float, int]:
    """Wall seconds and peak RSS (bytes) of one child process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    t0 = time.perf_counter()
    with open(stdout, "wb") as out:
        subprocess.run(cmd, stdout=out, check=True, env={**os.environ, "LC_ALL": "C"})
    wall = time.perf_counter() - t0
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    return wall, max(peak, before) * 1024


def prefix(src: Path, dest: Path, size: int) -> int:
    """The first `size` bytes of src, cut back to a line end."""
    with open(src, "rb") as fh, open(dest, "wb") as out:
        left = size
        while left > 0 and (block := fh.read(min(left, 1 << 24))):
            left -= len(block)
            if left <= 0:
                block = block[: block.rfind(b"\n") + 1]
            out.write(block)
    return dest.stat().st_size


def diagnose_cmd(command: str, log: Path) -> list[str]:
    if command == "report":
        return [sys.executable, "-m", "diagnose", "report", str(log), "--format", "json", "-o", "-"]
    if command == "compare":  # the log against itself: two large sides, read one after the other
        return [sys.executable, "-m", "diagnose", "compare", str(log), str(log), "--format", "json", "-o", "-"]
    return [sys.executable, "-m", "diagnose", "parse", str(log), "--format", "json"]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--size", type=float, nargs="+", default=[1.0], help="log sizes in GiB (default 1)")
    ap.add_argument("--command", choices=["parse", "report", "compare"], default="parse", help="what diagnose runs")
    ap.add_argument("--keep", action="store_true", help="keep the generated logs")
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="diagnose-bench-"))
    sizes = sorted(args.size)
    biggest = tmp / f"train-16rank-{sizes[-1]:g}g.log"
    t0 = time.perf_counter()
    written = write_log(biggest, int(sizes[-1] * (1 << 30)))
    print(f"wrote {written / 1e6:.0f} MB in {time.perf_counter() - t0:.1f}s: {biggest}", flush=True)
    print(f"{'log MB':>8} {'grep s':>7} {'grep MB/s':>9} {'diagnose ' + args.command + ' s':>17} {'MB/s':>6} "
          f"{'ratio':>6} {'peak RSS MB':>11} {'RSS/file':>8}", flush=True)
    for gib in sizes:
        log = biggest if gib == sizes[-1] else tmp / f"train-16rank-{gib:g}g.log"
        size = written if log == biggest else prefix(biggest, log, int(gib * (1 << 30)))
        mb = size / 1e6
        # Warm the page cache so both tools read from memory (as far as it holds the file).
        subprocess.run(["cat", str(log)], stdout=subprocess.DEVNULL, check=True)
        grep_s, _ = timed(["grep", "-cE", "|".join(GREP_ANCHORS), str(log)], tmp / "grep.out")
        diag_s, rss = timed_fresh(diagnose_cmd(args.command, log), tmp / "diag.json")
        print(f"{mb:8.0f} {grep_s:7.2f} {mb / grep_s:9.1f} {diag_s:17.2f} {mb / diag_s:6.1f} {diag_s / grep_s:6.2f} "
              f"{rss / 1e6:11.0f} {rss / size:8.2f}", flush=True)
        if not args.keep and log != biggest:
            log.unlink()
    if not args.keep:
        for p in tmp.iterdir():
            p.unlink()
        tmp.rmdir()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
