"""Every performance figure of the project, each as a ratio to a floor measured in the same round, written to
docs/performance.md (issue 35, must 8).

    python benchmarks/run_all.py [--runs 3] [--sizes 10 100 1024] [--quick] [--only startup,ingest,...]
                                 [--out docs/performance.md]

A round measures a floor and then the figures that are held to it, each in a fresh process (wall seconds, CPU
seconds as user + system from wait4, and the child's peak RSS), so a slow hour on a shared machine moves floor and
figure together. Each figure is given as min / median / max over --runs rounds, of its own value and of its ratio
to its floor. The floors:

  startup   `python -c pass`: `diagnose --version`, `diagnose --help` and a report of the smallest sample
  ingest    the benchmark log of benchmarks/ingest.py at each size: `cat`, `grep -cE` with the line kinds' anchors,
            and the polars floor (the lines read into a frame plus one `str.extract`) against `diagnose parse` and
            `diagnose report`; then the growth exponent of time and memory across the sizes (a least-squares slope
            of log time, log RSS on log size: 1.0 is linear)
  wandb     wandb's own reader (`wandb.Api().run(...).scan_history()`, the real client against the loopback W&B
            stand-in of tests/wandb_standin.py) against `diagnose parse` of the same run through the same client;
            the history requests each made are counted (the run's history is read once)
  thread    a log attached to an issue of the loopback GitHub stand-in (tests/github_standin.py), against the same
            file read locally
  folder    a folder of 36 runs: the Markdown report against the JSON report
  files     3,000 logs of 2 KB in one folder: `grep -rcE` against `diagnose report`

The bars are the issues' (named in BARS); the table says which rounds met them. --quick takes the small sizes and
a smaller W&B run and thread, for a check that the harness runs (the figures it writes are not the ones to quote).
"""
from __future__ import annotations

import argparse
import math
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
sys.path.insert(0, str(ROOT / "tests"))

import ingest as ingest_bench  # noqa: E402
import small_files  # noqa: E402

PY = sys.executable
DIAGNOSE = [PY, "-m", "diagnose"]
MB = 1 << 20
SMALLEST_SAMPLE = ROOT / "sample_logs" / "ds_zero0"
GREP = ["grep", "-cE", "|".join(ingest_bench.GREP_ANCHORS)]
POLARS_FLOOR = """
import sys
import polars as pl
frame = pl.read_lines(sys.argv[1], name="text")
print(frame.select(pl.col("text").str.extract(r"step=(\\d+)", 1).count()).item())
"""


@dataclass(frozen=True)
class Run:
    wall: float
    cpu: float
    rss: int  # bytes


@dataclass(frozen=True)
class Bar:
    limit: float
    source: str


# The issues' bars: figure key -> the ratio it must stay under, and where that comes from.
BARS = {
    "startup.version": Bar(15, "issue 35, must 3"),
    "startup.help": Bar(25, "issue 35, must 3"),
    "ingest.parse_grep": Bar(13, "issue 30, must 10: the 1 GB log, 2 cores"),
    "ingest.report_polars_cpu": Bar(3, "issue 35, must 2: the 1 GB log"),
    "ingest.report_parse_cpu": Bar(1.3, "issue 35, must 1"),
    "ingest.rss_file": Bar(1.5, "issue 30, must 10; issue 35, must 2"),
    "thread.local": Bar(1.2, "issue 35, must 4"),
    "folder.md_json_cpu": Bar(1.3, "issue 35, must 5"),
}


TIMEOUT_S = 600  # a child that takes longer is killed and named (the 1 GB report takes under a minute)


def measure(cmd: list[str], stdout: Path | None = None, env: dict[str, str] | None = None,
            cwd: Path = ROOT) -> Run:
    """One fresh process: wall seconds, user + system CPU seconds and peak RSS of this child alone (wait4). Its
    stderr goes to a file, not a pipe: a helper it starts (wandb's service) may hold a pipe open after it exits."""
    t0 = time.perf_counter()
    with open(stdout or os.devnull, "wb") as out, tempfile.TemporaryFile() as err:
        child = subprocess.Popen(cmd, stdout=out, stderr=err, cwd=cwd, env={**(env or os.environ), "LC_ALL": "C"})
        guard = threading.Timer(TIMEOUT_S, child.kill)
        guard.start()
        _, status, usage = os.wait4(child.pid, 0)
        wall = time.perf_counter() - t0
        guard.cancel()
        err.seek(0)
        said = err.read().decode("utf-8", "replace").strip()[-300:]
    child.returncode = os.waitstatus_to_exitcode(status)
    if child.returncode != 0:
        why = f"took over {TIMEOUT_S} s: killed" if wall >= TIMEOUT_S else f"exited {child.returncode}: {said}"
        raise SystemExit(f"{' '.join(map(str, cmd))} {why}")
    return Run(wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss * 1024)


@dataclass
class Figure:
    """One row of the document: a figure and its floor, one Run each per round."""

    section: str
    name: str
    what: str
    floor_name: str
    unit: str = "s"  # s | MB | x
    figure: list[float] = field(default_factory=list)
    floor: list[float] = field(default_factory=list)
    bar: str = ""  # a key of BARS
    note: str = ""

    def add(self, value: float, floor: float) -> None:
        self.figure.append(value)
        self.floor.append(floor)

    @property
    def ratios(self) -> list[float]:
        return [v / f for v, f in zip(self.figure, self.floor) if f > 0]


def spread(values: list[float], fmt: str = "{:.2f}") -> str:
    if not values:
        return "-"
    lo, mid, hi = min(values), statistics.median(values), max(values)
    if len(values) == 1 or lo == hi:
        return fmt.format(mid)
    return f"{fmt.format(lo)} / {fmt.format(mid)} / {fmt.format(hi)}"


def slope(xs: list[float], ys: list[float]) -> float:
    """The least-squares slope of log y on log x: 1.0 grows linearly, 0 not at all."""
    lx, ly = [math.log(x) for x in xs], [math.log(y) for y in ys]
    mx, my = statistics.fmean(lx), statistics.fmean(ly)
    den = sum((a - mx) ** 2 for a in lx)
    return sum((a - mx) * (b - my) for a, b in zip(lx, ly)) / den if den else float("nan")


# ---- the sections ----------------------------------------------------------------------------------------------


def startup(runs: int) -> list[Figure]:
    version = Figure("startup", "diagnose --version", "wall", "python -c pass", bar="startup.version")
    help_ = Figure("startup", "diagnose --help", "wall", "python -c pass", bar="startup.help")
    report = Figure("startup", f"diagnose report {SMALLEST_SAMPLE.relative_to(ROOT)} (JSON)", "wall",
                    "python -c pass")
    for cmd in (["--version"], ["--help"]):  # a first run warms the page cache: not timed
        measure([*DIAGNOSE, *cmd])
    for _ in range(runs):
        floor = min(measure([PY, "-c", "pass"]).wall for _ in range(3))
        version.add(measure([*DIAGNOSE, "--version"]).wall, floor)
        help_.add(measure([*DIAGNOSE, "--help"]).wall, floor)
        report.add(measure([*DIAGNOSE, "report", str(SMALLEST_SAMPLE), "--format", "json", "-o", "-"]).wall, floor)
    return [version, help_, report]


def ingest(runs: int, tmp: Path, sizes_mb: list[int]) -> tuple[list[Figure], list[str]]:
    biggest = tmp / "train-16rank.log"
    written = ingest_bench.write_log(biggest, max(sizes_mb) * MB)
    figures: list[Figure] = []
    growth: dict[str, list[tuple[float, float, float]]] = {"parse": [], "report": []}  # (MB, wall, rss)
    for size in sorted(sizes_mb):
        log = biggest if size == max(sizes_mb) else tmp / f"train-{size}mb.log"
        n = written if log == biggest else ingest_bench.prefix(biggest, log, size * MB)
        label = f"{n / 1e6:,.0f} MB log"
        parse_grep = Figure("ingest", f"parse, {label}", "wall", "grep -cE",
                            bar="ingest.parse_grep" if size >= 1024 else "")
        parse_cat = Figure("ingest", f"parse, {label}", "wall", "cat")
        report_polars = Figure("ingest", f"report, {label}", "CPU", "polars floor (CPU)",
                               bar="ingest.report_polars_cpu" if size >= 1024 else "")
        report_parse = Figure("ingest", f"report, {label}", "CPU", "parse (CPU)", bar="ingest.report_parse_cpu")
        rss = Figure("ingest", f"report peak RSS, {label}", "MB", "the file's size", unit="MB",
                     bar="ingest.rss_file" if size >= 1024 else "")  # below, the interpreter's own RSS is most of it
        json_size = Figure("ingest", f"report JSON, {label}", "KB", "-", unit="KB")
        for _ in range(runs):
            subprocess.run(["cat", str(log)], stdout=subprocess.DEVNULL, check=True)  # the page cache warm
            cat = measure(["cat", str(log)])
            grep = measure([*GREP, str(log)], tmp / "grep.out")
            floor = measure([PY, "-c", POLARS_FLOOR, str(log)])
            parse = measure([*DIAGNOSE, "parse", str(log), "--format", "json"], tmp / "parse.json")
            report = measure([*DIAGNOSE, "report", str(log), "--format", "json", "-o", "-"], tmp / "report.json")
            parse_grep.add(parse.wall, grep.wall)
            parse_cat.add(parse.wall, cat.wall)
            report_polars.add(report.cpu, floor.cpu)
            report_parse.add(report.cpu, parse.cpu)
            rss.add(report.rss / 1e6, n / 1e6)
            json_size.add((tmp / "report.json").stat().st_size / 1e3, 1.0)
            growth["parse"].append((n / 1e6, parse.wall, parse.rss / 1e6))
            growth["report"].append((n / 1e6, report.wall, report.rss / 1e6))
        figures += [parse_grep, parse_cat, report_polars, report_parse, rss, json_size]
        if log != biggest:
            log.unlink()
    biggest.unlink()
    notes = []
    if len(sizes_mb) > 1:
        for command, rows in growth.items():
            xs = sorted({r[0] for r in rows})
            spans = [(xs[0], xs[-1])] + ([(xs[-2], xs[-1])] if len(xs) > 2 else [])
            said = []
            for lo, hi in spans:
                part = [r for r in rows if lo <= r[0] <= hi]
                x = [r[0] for r in part]
                said.append(f"from {lo:,.0f} to {hi:,.0f} MB as size^{slope(x, [r[1] for r in part]):.2f} in time "
                            f"and size^{slope(x, [r[2] for r in part]):.2f} in peak RSS")
            notes.append(f"`{command}` grows {'; '.join(said)} (least squares over every round; 1.00 is linear, "
                         "0 flat: at the smallest size the interpreter's start-up and imports are most of it)")
    return figures, notes


# It ends without the client's atexit teardown, which waits on wandb-core and, a round in a few, waited past its
# ten-minute idle timeout here: the floor is the read, not the wait.
WANDB_FLOOR = """
import os, sys, wandb
run = wandb.Api(timeout=60).run(sys.argv[1])
print(sum(1 for _ in run.scan_history(page_size=1000)), flush=True)
os._exit(0)
"""


def wandb_run(runs: int, tmp: Path, rows: int) -> list[Figure]:
    from wandb_standin import StandIn

    history = [{"_step": i, "_runtime": 0.5 * i, "_timestamp": 1.7e9 + 0.5 * i, "train/loss": 5.0 - i * 1e-5,
                "train/learning_rate": 1e-4, "train/global_step": i + 1, "train/epoch": i / 1000}
               for i in range(rows)]
    system = [{"_runtime": 10.0 * i, "_timestamp": 1.7e9 + 10 * i, "system.gpu.0.gpu": 50.0} for i in range(20)]
    figure = Figure("wandb", f"parse of a {rows:,}-row W&B run", "wall", "wandb scan_history")
    reads = Figure("wandb", "history requests", "requests", "wandb scan_history's", unit="x")
    with StandIn("bench1", {"train_micro_batch_size_per_gpu": 8}, {"train/loss": 4.0}, history, system,
                 "step 1\n", {"host": "vm", "gpu_count": 1}) as standin:
        counted: list[str] = []
        answer = standin.answer

        def counting(query: str, variables: dict[str, object]) -> tuple[int, object]:
            if "parquetHistory" in query or "history(samples" in query:
                counted.append(query)
            return answer(query, variables)

        standin.answer = counting  # type: ignore[method-assign]
        for i in range(runs):
            env = {k: v for k, v in os.environ.items() if not k.startswith("WANDB_")}
            home = tmp / f"wandb-home-{i}"
            home.mkdir()
            env.update(HOME=str(home), WANDB_BASE_URL=standin.url, WANDB_API_KEY="x" * 40, WANDB_SILENT="true",
                       DIAGNOSE_CACHE_DIR=str(home / "cache"))
            counted.clear()
            floor = measure([PY, "-c", WANDB_FLOOR, f"e/p/{standin.run_id}"], env=env)
            floor_reads = len(counted)
            counted.clear()
            got = measure([*DIAGNOSE, "parse", f"e/p/{standin.run_id}", "--format", "json", "--refresh"],
                          tmp / "wandb.json", env=env)
            figure.add(got.wall, floor.wall)
            reads.add(len(counted), max(floor_reads, 1))
    return [figure, reads]


def thread(runs: int, tmp: Path, mb: int) -> list[Figure]:
    from github_standin import StandIn

    log = tmp / "attached.log"
    ingest_bench.write_log(log, mb * MB)
    figure = Figure("thread", f"report of an issue with a {log.stat().st_size / 1e6:,.0f} MB log attached", "wall",
                    "the same log read locally", bar="thread.local")
    with StandIn() as gh:
        gh.add_issue(1, "slow steps", "Steps are slow on 16 ranks, log attached:\n\n" + gh.attach(
            "train.log", log.read_bytes()), "alice")
        url = f"{gh.url}/{gh.owner}/{gh.repo_name}/issues/1"
        env = {k: v for k, v in os.environ.items() if k not in ("GITHUB_TOKEN", "GH_TOKEN")} | gh.env()
        for _ in range(runs):
            local = measure([*DIAGNOSE, "report", str(log), "--format", "json", "-o", "-"], tmp / "local.json")
            remote = measure([*DIAGNOSE, "report", url, "--format", "json", "-o", "-"], tmp / "thread.json", env=env)
            figure.add(remote.wall, local.wall)
    log.unlink()
    return [figure]


def folder(runs: int, tmp: Path) -> list[Figure]:
    """36 runs: the samples that hold a log, copied round-robin into run folders of their own."""
    samples = sorted(p.parent for p in (ROOT / "sample_logs").glob("*/train.log"))
    where = tmp / "runs"
    for i in range(36):
        shutil.copytree(samples[i % len(samples)], where / f"run{i:02d}")
    figure = Figure("folder", "Markdown report of 36 runs", "CPU", "JSON report (CPU)", bar="folder.md_json_cpu")
    for _ in range(runs):
        js = measure([*DIAGNOSE, "report", str(where), "--format", "json", "-o", str(tmp / "runs.json"), "--force"])
        md = measure([*DIAGNOSE, "report", str(where), "--format", "md", "-o", str(tmp / "runs.md"), "--force"])
        figure.add(md.cpu, js.cpu)
    shutil.rmtree(where)
    return [figure]


def files(runs: int, tmp: Path, count: int) -> list[Figure]:
    where = tmp / "small"
    where.mkdir()
    small_files.write_files(where, count, 2048)
    figure = Figure("files", f"report of {count:,} logs of 2 KB in one folder", "wall", "grep -rcE")
    for _ in range(runs):
        grep = measure(["grep", "-rcE", "|".join(small_files.GREP_ANCHORS), str(where)])
        got = measure([*DIAGNOSE, "report", str(where), "--format", "json", "-o", "-"])
        figure.add(got.wall, grep.wall)
    shutil.rmtree(where)
    return [figure]


# ---- the document ----------------------------------------------------------------------------------------------

TITLES = {"startup": "Start-up", "ingest": "Reading and reporting one large log", "wandb": "A W&B run",
          "thread": "A GitHub thread with an attachment", "folder": "Many runs", "files": "Many small files"}


def _value(f: Figure, values: list[float]) -> str:
    if f.unit == "MB":
        return spread(values, "{:,.0f}") + " MB"
    if f.unit == "KB":
        return spread(values, "{:,.0f}") + " KB"
    if f.unit == "x":
        return spread(values, "{:,.0f}")
    return spread(values, "{:.3f}" if max(values, default=1) < 1 else "{:.2f}") + " s"


PACKAGES = ("diagnose", "parsers", "reports")  # compileall does not follow diagnose/'s links to the other two


def compile_bytecode() -> None:
    """The package's bytecode written once, as `pip install` writes it for an installed package: an editable
    install under PYTHONDONTWRITEBYTECODE=1 (as on this project's machines) would otherwise compile every module
    from source in every process measured, ~0.25 s that no installed copy pays."""
    import compileall

    for package in PACKAGES:
        compileall.compile_dir(ROOT / package, quiet=1, force=False)


def render(figures: list[Figure], notes: dict[str, list[str]], runs: int, took: float, argv: list[str]) -> str:
    import polars as pl

    cpu = next((line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                if line.startswith("model name")), platform.processor()) if Path("/proc/cpuinfo").exists() else ""
    out = ["# Performance", "",
           f"Generated by `python benchmarks/run_all.py{' ' + ' '.join(argv) if argv else ''}` on "
           f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}: {os.cpu_count()} cores ({cpu}), Python "
           f"{platform.python_version()}, polars {pl.__version__}; {runs} rounds, {took / 60:.1f} min. Do not edit "
           "by hand: run it again.", "",
           "Each round measures the floor and then the figure, each in a fresh process, so the two share the "
           "machine's hour. The package's bytecode is compiled first, as `pip install` compiles it. Every cell is "
           "min / median / max over the rounds; the ratio is taken round by round. "
           "A bar is met when every round's ratio is under it. The notes on how each path is built, and the "
           "figures of earlier rounds, are in [performance-history.md](performance-history.md).", ""]
    for section in TITLES:
        rows = [f for f in figures if f.section == section]
        if not rows:
            continue
        out += [f"## {TITLES[section]}", "", "| figure | measure | value | floor | floor value | ratio | bar |",
                "|---|---|---|---|---|---|---|"]
        for f in rows:
            if f.floor_name == "-":
                out.append(f"| {f.name} | {f.what} | {_value(f, f.figure)} | - | - | - | |")
                continue
            floor = Figure(f.section, "", "", "", unit=f.unit)
            bar = ""
            if f.bar:
                b = BARS[f.bar]
                met = all(r <= b.limit for r in f.ratios)
                bar = f"<= {b.limit:g}x ({b.source}): {'met' if met else 'NOT met'}"
            out.append(f"| {f.name} | {f.what} | {_value(f, f.figure)} | {f.floor_name} | "
                       f"{_value(floor, f.floor)} | {spread(f.ratios)}x | {bar} |")
        out += [""] + [f"- {n}" for n in notes.get(section, [])] + ([""] if notes.get(section) else [])
    return "\n".join(out).rstrip() + "\n"


SECTIONS = ("startup", "ingest", "wandb", "thread", "folder", "files")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=3, help="rounds per figure (default 3)")
    ap.add_argument("--sizes", type=int, nargs="+", help="benchmark log sizes in MiB (default 10 100 1024)")
    ap.add_argument("--quick", action="store_true", help="small sizes: a check that the harness runs")
    ap.add_argument("--only", help="comma-separated sections: " + ",".join(SECTIONS))
    ap.add_argument("--out", type=Path, default=ROOT / "docs" / "performance.md", help="where the document goes")
    args = ap.parse_args()
    sizes = args.sizes or ([4, 16] if args.quick else [10, 100, 1024])
    only = set(args.only.split(",")) if args.only else set(SECTIONS)
    unknown = only - set(SECTIONS)
    if unknown:
        ap.error(f"unknown sections: {', '.join(sorted(unknown))}")
    t0 = time.perf_counter()
    compile_bytecode()
    tmp = Path(tempfile.mkdtemp(prefix="diagnose-run-all-"))
    figures: list[Figure] = []
    notes: dict[str, list[str]] = {}
    quick = args.quick
    plan: dict[str, Callable[[], tuple[list[Figure], list[str]]]] = {
        "startup": lambda: (startup(args.runs), []),
        "ingest": lambda: ingest(args.runs, tmp, sizes),
        "wandb": lambda: (wandb_run(args.runs, tmp, 5_000 if quick else 100_000), []),
        "thread": lambda: (thread(args.runs, tmp, 8 if quick else 200), []),
        "folder": lambda: (folder(args.runs, tmp), []),
        "files": lambda: (files(args.runs, tmp, 300 if quick else 3000), []),
    }
    try:
        for name in SECTIONS:
            if name not in only:
                continue
            print(f"{name} ...", file=sys.stderr, flush=True)
            got, notes[name] = plan[name]()
            figures += got
            for f in got:
                against = f" against {f.floor_name} {spread(f.floor)}: {spread(f.ratios)}x" if f.floor_name != "-" else ""
                print(f"  {f.name}: {spread(f.figure)}{against}", file=sys.stderr, flush=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    args.out.write_text(render(figures, notes, args.runs, time.perf_counter() - t0, sys.argv[1:]))
    print(f"wrote {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
