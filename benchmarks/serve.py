"""`diagnose serve` against the CLI on the same files, and its memory under concurrent uploads.

1. Latency: the seed-like scenario's files (and a 100 MB 16-rank log) uploaded to a running server, from the request
   to the JSON answer, against `diagnose report FILES --format json` in a fresh process (the ratio; the server has
   its imports warm, the CLI pays them each time).
2. Memory: 8 concurrent uploads of a 100 MB log; the server's peak RSS (sampled from /proc every 50 ms).

    python benchmarks/serve.py [--log-mb 100] [--concurrent 8] [--workers 2]
"""
from __future__ import annotations

import argparse
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parent.parent
SEED = ROOT / "sample_logs" / "synthetic" / "seed_zero3_launch_blocking"
SEED_FILES = [SEED / "slurm-1234.out", SEED / "ds_config.json", SEED / "train.sh"]


def rss_mb(pid: int) -> float:
    with open(f"/proc/{pid}/status") as fh:
        for line in fh:
            if line.startswith("VmRSS"):
                return int(line.split()[1]) / 1024
    return 0.0


def upload(base: str, files: list[Path]) -> float:
    t0 = time.perf_counter()
    r = httpx.post(f"{base}/api/diagnose", files=[("files", (f.name, f.open("rb"))) for f in files], timeout=600)
    r.raise_for_status()
    return time.perf_counter() - t0


def cli(files: list[Path]) -> float:
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-m", "diagnose", "report", *map(str, files), "--format", "json", "-o", "-"],
                   cwd=ROOT, stdout=subprocess.DEVNULL, check=True)
    return time.perf_counter() - t0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--log-mb", type=float, default=100)
    ap.add_argument("--concurrent", type=int, default=8)
    ap.add_argument("--workers", type=int, default=2)
    args = ap.parse_args()
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from ingest import write_log

    tmp = Path(tempfile.mkdtemp(prefix="diagnose-serve-bench-"))
    log = tmp / "train-16rank.log"
    write_log(log, int(args.log_mb * 1e6))
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.Popen([sys.executable, "-m", "diagnose", "serve", "--port", str(port), "--workers",
                             str(args.workers), "--queue", str(args.concurrent)], cwd=ROOT,
                            env={**os.environ, "TMPDIR": str(tmp)}, stderr=subprocess.DEVNULL)
    base = f"http://127.0.0.1:{port}"
    try:
        for _ in range(200):
            try:
                httpx.get(f"{base}/healthz", timeout=1)
                break
            except httpx.TransportError:
                time.sleep(0.05)
        idle = rss_mb(proc.pid)
        for name, files in (("seed-like scenario (3 files)", SEED_FILES), (f"{args.log_mb:g} MB 16-rank log", [log])):
            upload(base, files)  # warm: the first request imports the analysis modules
            served = min(upload(base, files) for _ in range(3))
            direct = min(cli(files) for _ in range(3))
            print(f"{name:32} serve {served:6.2f} s   CLI {direct:6.2f} s   ratio serve/CLI {served / direct:.2f}")
        peak = [rss_mb(proc.pid)]
        done = threading.Event()

        def sample() -> None:
            while not done.is_set():
                peak[0] = max(peak[0], rss_mb(proc.pid))
                time.sleep(0.05)

        threading.Thread(target=sample, daemon=True).start()
        t0 = time.perf_counter()
        with ThreadPoolExecutor(args.concurrent) as pool:
            list(pool.map(lambda _: upload(base, [log]), range(args.concurrent)))
        wall = time.perf_counter() - t0
        done.set()
        print(f"{args.concurrent} concurrent uploads of {args.log_mb:g} MB ({args.workers} workers): {wall:.1f} s, "
              f"server RSS idle {idle:.0f} MB, peak {peak[0]:.0f} MB")
    finally:
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=30)
        for p in sorted(tmp.rglob("*"), reverse=True):
            p.unlink() if p.is_file() else p.rmdir()
        tmp.rmdir()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
