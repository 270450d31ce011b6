"""The `diagnose` command line: the composition root (parsers -> diagnose -> reports).

Exit codes (stable): 0 done; 1 findings at or above --fail-on; 2 bad input or usage; 3 internal error.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.console import Console

from parsers import InputError, RunModel, parse as parse_sources
from parsers.schema import describe
from reports import run_json

EXIT_OK, EXIT_FINDINGS, EXIT_INPUT, EXIT_INTERNAL = 0, 1, 2, 3
PROGRESS_MIN_BYTES = 64 * 1024 * 1024  # below this a progress bar only flickers

app = typer.Typer(
    name="diagnose",
    help="Tell why a distributed training run was slow and which config change fixes it.\n\n"
         "SOURCES may be any mix of log files (any name, .gz too), directories, '-' for stdin, http(s) URLs of raw "
         "logs, DeepSpeed config JSON, accelerate config YAML, trainer_state.json and launch scripts. The kind of "
         "each file is sniffed from its content.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
err = Console(stderr=True, highlight=False)
out = Console(highlight=False, soft_wrap=True)

SourcesArg = Annotated[list[str], typer.Argument(help="Logs, configs, launch scripts, directories, URLs or '-'.",
                                                 show_default=False)]


def _fail(message: str, code: int = EXIT_INPUT) -> typer.Exit:
    sys.stderr.write(f"diagnose: error: {message}\n")  # one line, never wrapped
    return typer.Exit(code)


def load(sources: list[str]) -> RunModel:
    """Parse with a progress bar on an interactive terminal when the inputs are large."""
    total = sum(Path(s).stat().st_size for s in sources if Path(s).is_file())
    if total < PROGRESS_MIN_BYTES or not err.is_terminal:
        return parse_sources(sources)
    from rich.progress import BarColumn, DownloadColumn, Progress, TransferSpeedColumn

    with Progress("[progress.description]{task.description}", BarColumn(), DownloadColumn(), TransferSpeedColumn(),
                  console=err, transient=True) as bar:
        task = bar.add_task("reading logs", total=total)
        return parse_sources(sources, progress=lambda n: bar.advance(task, n))


@app.command()
def parse(
    sources: SourcesArg,
    format: Annotated[str, typer.Option("--format", "-f", help="json or text.")] = "text",
    out_dir: Annotated[Optional[Path], typer.Option("--out", help="Write each frame as <DIR>/<frame>.parquet "
                                                    "and the run facts as <DIR>/facts.json.")] = None,
    no_redact: Annotated[bool, typer.Option("--no-redact", help="Show secret-looking env values.")] = False,
    schema: Annotated[bool, typer.Option("--schema", help="Print the run model's frame schema and exit.")] = False,
) -> None:
    """Read SOURCES into the run model and summarise it (frames, run facts, unparsed lines)."""
    if schema:
        out.print(describe(), markup=False)
        return
    if format not in ("json", "text"):
        raise _fail(f"--format must be json or text, not {format!r}")
    model = _load_or_exit(sources)
    doc = run_json.summary(model, redact_secrets=not no_redact)
    if out_dir is not None:
        out_dir.mkdir(parents=True, exist_ok=True)
        for name, frame in model.frames.items():
            frame.write_parquet(out_dir / f"{name}.parquet")
        (out_dir / "facts.json").write_text(json.dumps(doc, indent=2, default=str) + "\n")
    if format == "json":
        sys.stdout.write(json.dumps(doc, indent=2, default=str) + "\n")
    else:
        _print_text(doc)


def _load_or_exit(sources: list[str]) -> RunModel:
    try:
        return load(sources)
    except InputError as e:
        raise _fail(str(e)) from None


def _print_text(doc: dict) -> None:
    f = doc["facts"]
    out.print("[bold]Sources[/bold]")
    for s in doc["sources"]:
        extra = f", {s['lines']} lines, {s['recognised']} recognised" if s["kind"] == "log" else ""
        out.print(f"  {s['name']} ({s['kind']}{extra})", markup=False)
    out.print("[bold]Frames[/bold]  " + ", ".join(f"{k}={v}" for k, v in doc["frames"].items()))
    out.print(f"[bold]Unparsed lines[/bold]  {doc['unparsed_lines']}")
    keys = ("world_size", "nodes", "gpus_per_node", "launcher", "zero_stage", "offload_optimizer", "offload_param",
            "precision", "micro_batch_per_gpu", "grad_accum_steps", "train_batch_size", "model_params", "backend")
    out.print("[bold]Run facts[/bold]")
    for k in keys:
        if f.get(k) is not None:
            out.print(f"  {k:<20} {f[k]}", markup=False)
    if f["versions"]:
        out.print("  versions             " + ", ".join(f"{k} {v}" for k, v in f["versions"].items()), markup=False)
    if f["env"]:
        out.print("  env                  " + " ".join(f"{k}={v}" for k, v in f["env"].items()), markup=False)


@app.callback()
def _root() -> None:
    """Tell why a distributed training run was slow and which config change fixes it."""


def main() -> None:
    try:
        rc = app(standalone_mode=False)
        if isinstance(rc, int) and rc:
            sys.exit(rc)
    except typer.Exit as e:
        sys.exit(e.exit_code)
    except (typer.Abort, KeyboardInterrupt):
        err.print("diagnose: aborted")
        sys.exit(130)
    except Exception as e:  # click usage errors and anything unexpected: one line, no traceback
        if hasattr(e, "show") and hasattr(e, "exit_code"):  # click's usage errors (typer vendors click)
            e.show()
            sys.exit(EXIT_INPUT)
        sys.stderr.write(f"diagnose: internal error: {type(e).__name__}: {e}\n")
        sys.exit(EXIT_INTERNAL)
    sys.exit(EXIT_OK)
