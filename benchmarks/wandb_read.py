"""Reading a 100k-step W&B offline run: the real wandb client writes it (WANDB_MODE=offline), then we time our
`.wandb` reader and the whole `diagnose parse` of the run directory.

    python benchmarks/wandb_read.py [--steps 100000] [--keep]
"""
from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
WRITER = """
import wandb
run = wandb.init(project="bench", settings=wandb.Settings(x_stats_sampling_interval=1.0))
for i in range({steps}):
    run.log({{"train/loss": 5.0 - i * 1e-5, "train/learning_rate": 1e-4, "train/global_step": i + 1,
             "train/grad_norm": 1.0, "train/epoch": i / 1000}}, step=i)
run.finish()
"""


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--steps", type=int, default=100_000)
    ap.add_argument("--keep", action="store_true")
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="diagnose-wandb-bench-"))
    (tmp / "writer.py").write_text(WRITER.format(steps=args.steps))
    env = {**os.environ, "HOME": str(tmp), "WANDB_MODE": "offline", "WANDB_DIR": str(tmp), "WANDB_SILENT": "true"}
    t0 = time.perf_counter()
    subprocess.run([sys.executable, str(tmp / "writer.py")], env=env, check=True, cwd=tmp)
    run_dir = next((tmp / "wandb").glob("offline-run-*"))
    wfile = next(run_dir.glob("run-*.wandb"))
    print(f"wandb wrote {args.steps} steps in {time.perf_counter() - t0:.1f}s: {wfile.stat().st_size / 1e6:.1f} MB")
    sys.path.insert(0, str(ROOT))
    from parsers import parse, wandb_offline

    t0 = time.perf_counter()
    run = wandb_offline.read(wfile)
    read_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    model = parse([str(run_dir)])
    parse_s = time.perf_counter() - t0
    print(f"reader: {read_s:.2f}s for {len(run.history)} history rows ({len(run.history) / read_s:,.0f} rows/s)")
    print(f"diagnose parse of the run directory: {parse_s:.2f}s, steps frame {model.frames['steps'].height} rows")
    if not args.keep:
        shutil.rmtree(tmp)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
