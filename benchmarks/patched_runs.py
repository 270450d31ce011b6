"""Proof that the advice holds: each recorded sample's original sources, and then its patched sources, started with
the real trainer for 2 steps on the CPU (issue 31, must 3).

For every sample that sample_logs/record/record.py recorded (DeepSpeed, torchrun, accelerate + HF Trainer), this
runs `diagnose report SAMPLE --write-config DIR`, lays out the run folder as the recording did
(/tmp/diagnose-rec/NAME, the same absolute paths the launch script names), and runs the launch script twice with
the step count cut to 2: once with the sample's own files, once with the files the patch wrote. For each run it
records whether the job started and finished its steps (exit status 0 and a step line read back by diagnose) and
the global batch the trainer printed, against the one the report promises (the run's own where the
recommendation keeps it). Needs the `record` extra (torch CPU, deepspeed, transformers, accelerate):

    python benchmarks/patched_runs.py --python /path/to/record-venv/bin/python [--only NAME ...] [--out docs/...]

It prints a Markdown table (docs/accuracy.md keeps the last one). It is not a test: the trainers are not test
dependencies; tests/test_framework_rules.py checks the same rules without them.
"""
from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = ROOT / "sample_logs"
sys.path.insert(0, str(SAMPLES / "record"))
import record  # noqa: E402 - the recording's own scenarios and run folder

from diagnose.parsers import parse  # noqa: E402
from diagnose.engine import diagnose  # noqa: E402
from diagnose.recommend import global_batch  # noqa: E402

STEPS = 2
TIMEOUT_S = 600
_STEP_FLAGS = re.compile(r"(--(?:steps|max_steps)[ =])\d+")


@dataclass(frozen=True)
class Launch:
    ok: bool
    seconds: float
    global_batch: int | None
    note: str


def _launch(name: str, files: dict[str, Path], py: Path, log: Path) -> Launch:
    run_dir = record.WORK / name
    shutil.rmtree(run_dir, ignore_errors=True)
    run_dir.mkdir(parents=True)
    for fname in ("ds_config.json", "accelerate.yaml"):
        if fname in files:
            shutil.copy(files[fname], run_dir / fname)
    script = _STEP_FLAGS.sub(lambda m: f"{m.group(1)}{STEPS}", files["launch.sh"].read_text())
    (run_dir / "launch.sh").write_text(script)
    env = {"PATH": f"{py.parent}:/usr/bin:/bin", "PYTHONUNBUFFERED": "1", "HF_HUB_OFFLINE": "1",
           "WANDB_MODE": "offline", "WANDB_DIR": str(run_dir), "DS_ACCELERATOR": "cpu", "HOME": str(run_dir)}
    t0 = time.time()
    with open(log, "wb") as out:
        try:
            rc = subprocess.call(["bash", str(run_dir / "launch.sh")], cwd=record.WORK, env=env, stdout=out,
                                 stderr=subprocess.STDOUT, timeout=TIMEOUT_S)
        except subprocess.TimeoutExpired:
            rc = -1
    seconds = time.time() - t0
    model = parse([str(log)])
    steps = model.frames["steps"].height
    tail = log.read_text(errors="replace").strip().splitlines()[-1:] or [""]
    note = "" if rc == 0 else f"exit {rc}: {tail[0][:160]}"
    return Launch(rc == 0 and steps > 0, seconds, model.facts.train_batch_size, note)


def _promised(sample: Path, cli: list[str]) -> tuple[int | None, int | None, Path]:
    """(the run's global batch, the one the recommendation gives, the folder the patched files were written to)."""
    out = Path(tempfile.mkdtemp(prefix="diagnose-patched-")) / "fixed"
    subprocess.run([*cli, "report", str(sample), "--write-config", str(out), "-o", str(out.parent / "report.json")],
                   check=True, capture_output=True)
    model = parse([str(sample)])
    d, facts = diagnose(model), model.facts
    before, after = global_batch(facts), global_batch(facts, d.recommendation.changes)
    product = (lambda s: s[0] * s[1] * s[2] if s else None)
    return product(before), product(after), out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--python", type=Path, required=True, help="the record venv's python (torch, deepspeed, ...)")
    ap.add_argument("--only", nargs="*", default=None)
    ap.add_argument("--diagnose", default=None, help="the diagnose command that writes the patch (default: this "
                    "checkout's; another version's, to measure before a change)")
    args = ap.parse_args()
    cli = args.diagnose.split() if args.diagnose else [sys.executable, "-m", "diagnose"]
    record.WORK.mkdir(parents=True, exist_ok=True)
    for script in ("train_ds.py", "train_hf.py"):
        shutil.copy(record.HERE / script, record.WORK / script)
    rows = ["| sample | files the patch changes | original starts | patched starts | global batch: run / "
            "promised / patched run printed |", "|---|---|---|---|---|"]
    logs = Path(tempfile.mkdtemp(prefix="diagnose-patched-logs-"))
    for sc in record.SCENARIOS:
        if args.only is not None and sc.name not in args.only:
            continue
        sample = SAMPLES / sc.name
        own = {p.name: p for p in sample.iterdir() if p.name in ("ds_config.json", "accelerate.yaml", "launch.sh")}
        before, promised, fixed = _promised(sample, cli)
        changed = sorted(p.name for p in fixed.iterdir() if p.name != "recommended.patch") if fixed.exists() else []
        original = _launch(sc.name, own, args.python, logs / f"{sc.name}.original.log")
        if changed:
            patched = _launch(sc.name, {**own, **{n: fixed / n for n in changed}}, args.python,
                              logs / f"{sc.name}.patched.log")
            shown = f"{'yes' if patched.ok else 'NO'} ({patched.seconds:.0f} s){' ' + patched.note if patched.note else ''}"
            printed = patched.global_batch
        else:
            shown, printed = "no patch", original.global_batch
        rows.append(f"| {sc.name} | {', '.join(changed) or '-'} | {'yes' if original.ok else 'NO'} "
                    f"({original.seconds:.0f} s){' ' + original.note if original.note else ''} | {shown} | "
                    f"{before} / {promised} / {printed} |")
        print(rows[-1], flush=True)
    print("\n".join(rows))
    print(f"\nlogs: {logs}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
