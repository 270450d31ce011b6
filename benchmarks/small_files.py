"""Many small logs: N files of about 2 KB in one directory (the shape of per-rank or per-job logs kept one file each),
read by `diagnose report DIR`, against `grep -rcE` with the line kinds' anchors over the same directory.

The files are consecutive ~2 KB windows of a bundled sample log (its config dump, steps and timers), so they hold what
real small logs hold. Prints wall seconds, milliseconds per file and the ratio to grep.

    python benchmarks/small_files.py [--files 3000] [--bytes 2048] [--keep]
"""
from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SAMPLE = ROOT / "sample_logs" / "ds_zero1_ga2_torchrun" / "train.log"
GREP_ANCHORS = ["step=", "RunningAvgSamplesPerSec", "time \\(ms\\)", "it/s\\]", "s/it\\]"]


def write_files(out: Path, files: int, size: int) -> int:
    """`files` logs, each the next whole lines of the sample (wrapping around) up to `size` bytes."""
    lines = SAMPLE.read_bytes().splitlines(keepends=True)
    at, total = 0, 0
    for n in range(files):
        buf = bytearray()
        while len(buf) + len(lines[at % len(lines)]) <= size or not buf:
            buf += lines[at % len(lines)]
            at += 1
        (out / f"rank{n:05d}.log").write_bytes(bytes(buf))
        total += len(buf)
    return total


def timed(cmd: list[str]) -> float:
    t0 = time.perf_counter()
    subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    return time.perf_counter() - t0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--files", type=int, default=3000, help="how many logs (default 3000)")
    ap.add_argument("--bytes", type=int, default=2048, help="size of each log (default 2048)")
    ap.add_argument("--keep", action="store_true", help="keep the generated directory")
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="diagnose-small-"))
    total = write_files(tmp, args.files, args.bytes)
    print(f"wrote {args.files} logs, {total / 1e6:.1f} MB: {tmp}", flush=True)
    grep_s = timed(["grep", "-rcE", "|".join(GREP_ANCHORS), str(tmp)])
    diag_s = timed([sys.executable, "-m", "diagnose", "report", str(tmp), "--format", "json", "-o", "-"])
    print(f"grep -rcE         {grep_s:6.2f} s  {grep_s / args.files * 1000:6.2f} ms/file")
    print(f"diagnose report   {diag_s:6.2f} s  {diag_s / args.files * 1000:6.2f} ms/file  "
          f"({diag_s / grep_s:.0f}x grep)")
    if not args.keep:
        shutil.rmtree(tmp)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
