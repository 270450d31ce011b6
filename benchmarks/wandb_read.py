"""Reading a 100k-step W&B offline run: the real wandb client writes it (WANDB_MODE=offline), then we time our
`.wandb` reader and the whole `diagnose parse` of the run directory.

    python benchmarks/wandb_read.py [--steps 100000] [--keep] [--run DIR]

Each figure is the best of --repeat reads, each in a fresh process (imports included), since this machine's
timings swing by 30% between runs.
"""
from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
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
    ap.add_argument("--run", type=Path, help="time an existing offline run directory instead of writing one")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="diagnose-wandb-bench-"))
    if args.run:
        run_dir = args.run
    else:
        (tmp / "writer.py").write_text(WRITER.format(steps=args.steps))
        env = {**os.environ, "HOME": str(tmp), "WANDB_MODE": "offline", "WANDB_DIR": str(tmp), "WANDB_SILENT": "true"}
        subprocess.run([sys.executable, str(tmp / "writer.py")], env=env, check=True, cwd=tmp)
        run_dir = next((tmp / "wandb").glob("offline-run-*"))
    wfile = next(run_dir.glob("run-*.wandb"))
    print(f"run: {wfile} ({wfile.stat().st_size / 1e6:.1f} MB)")
    read = [_child(READ.format(root=ROOT, path=wfile)) for _ in range(args.repeat)]
    parse = [_child(PARSE.format(root=ROOT, path=run_dir)) for _ in range(args.repeat)]
    best_read = min(read, key=lambda r: r[0])
    rows = best_read[1]
    tries = ", ".join(f"{r[0]:.2f}" for r in read)
    print(f"reader (first read in a fresh process): best {best_read[0]:.2f}s of {tries}"
          f" for {rows} history rows ({rows / best_read[0]:,.0f} rows/s)")
    print(f"diagnose parse of the run directory: best {min(p[0] for p in parse):.2f}s of "
          f"{', '.join(f'{p[0]:.2f}' for p in parse)}, steps frame {parse[0][1]} rows")
    if not args.keep:
        shutil.rmtree(tmp)
    return 0


READ = """
import sys, time
sys.path.insert(0, "{root}")
from pathlib import Path
from diagnose.parsers import wandb_offline
t0 = time.perf_counter()
run = wandb_offline.read(Path("{path}"))
print(time.perf_counter() - t0, run.history.height)
"""
PARSE = """
import sys, time
sys.path.insert(0, "{root}")
from diagnose.parsers import parse
t0 = time.perf_counter()
model = parse(["{path}"])
print(time.perf_counter() - t0, model.frames["steps"].height)
"""


def _child(code: str) -> tuple[float, int]:
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True).stdout.split()
    return float(out[0]), int(out[1])


if __name__ == "__main__":
    raise SystemExit(main())
