"""The `diagnose` command line: the composition root (parsers -> diagnose -> reports).

Exit codes (stable): 0 done; 1 findings at or above --fail-on; 2 bad input or usage; 3 internal error.
"""
from __future__ import annotations

import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Optional

import typer
from rich.console import Console

from diagnose.parsers.errors import InputError
from diagnose.reports.formats import FORMATS, by_suffix, strict_json, suffix_list

# Nothing of polars, plotly or the analysis is imported to print the help or the version (issue 35): each command
# imports what it runs.
if TYPE_CHECKING:
    from diagnose.compare import Side
    from diagnose.parsers.run_model import RunModel
    from diagnose.pipeline import Analysis, Options
    from diagnose.parsers.sources import Run
    from diagnose.reports.config_patch import ConfigPatch

EXIT_OK, EXIT_FINDINGS, EXIT_INPUT, EXIT_INTERNAL = 0, 1, 2, 3
PROGRESS_MIN_BYTES = 64 * 1024 * 1024  # below this a progress bar only flickers

app = typer.Typer(
    name="diagnose",
    help="Tell why a distributed training run was slow and which config change fixes it.\n\n"
         "SOURCES may be any mix of log files (any name, .gz too), directories, '-' for stdin, http(s) URLs of raw "
         "logs, W&B runs, GitHub issue / pull request / discussion URLs (their pasted logs and attachments), "
         "DeepSpeed config JSON, accelerate config YAML, trainer_state.json and launch scripts. The kind of each file "
         "is sniffed from its content.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


def _flag_metavar() -> None:
    """This typer (0.29) shows every flag as `--force <bool>`, as if it took a value: a flag shows no type."""
    import typer.core

    for cls in {typer.core.TyperOption, getattr(typer.core, "_TyperParameter", typer.core.TyperOption)}:
        shown = getattr(cls, "display_type_rich", None)
        if shown is None:  # an older typer: its help has no type column
            continue

        def display(self: object, ctx: object, _shown: object = shown) -> object:
            return "" if getattr(self, "is_flag", False) else _shown(self, ctx)  # type: ignore[operator]  # typer's

        cls.display_type_rich = display  # type: ignore[method-assign]  # typer's help renderer, patched once


_flag_metavar()
err = Console(stderr=True, highlight=False, soft_wrap=True)  # a path in a message is never broken across lines
out = Console(highlight=False, soft_wrap=True)

SourcesArg = Annotated[list[str], typer.Argument(help="Logs, configs, launch scripts, directories, URLs, W&B runs, "
                                                      "GitHub threads or '-'.",
                                                 show_default=False)]
# The options several commands share, declared once (issue 34): each the pipeline's option of the same name.
GpuMemory = Annotated[Optional[float], typer.Option("--gpu-memory", help="GB per GPU for the planner when the logs "
                                                    "do not name the GPU.")]
SeqLen = Annotated[Optional[int], typer.Option("--seq-len", help="Sequence length in tokens, where the sources do not "
                                               "say (for tokens/s, MFU and the planner's activations).")]
Refresh = Annotated[bool, typer.Option("--refresh", help="Refetch W&B runs instead of using the local cache.")]
RedactHosts = Annotated[bool, typer.Option("--redact-hosts", help="Also mask hostnames and IP addresses.")]
# The format registry's names (reports/formats.py), not a list written out here.
FormatName = Annotated[Optional[str], typer.Option("--format", "-f", help=" | ".join(FORMATS) + ". Default: from -o's "
                                                   f"suffix ({suffix_list()}), else text to the terminal.")]


def _fail(message: str, code: int = EXIT_INPUT) -> typer.Exit:
    _stderr(f"diagnose: error: {message}")  # one line, never wrapped; URL credentials masked
    return typer.Exit(code)


def _stderr(line: str) -> None:
    """One line to stderr, redacted and inert (a file name's escape sequences are shown, not obeyed)."""
    from diagnose.reports import inert, redact

    sys.stderr.write(inert.text(redact.text(line).replace("\n", " ")) + "\n")


def load(sources: list[str], refresh: bool = False) -> RunModel:
    """Parse, showing progress on an interactive terminal: a bar of bytes for large logs, and for W&B runs a line
    per download stage, the history's with a bar of rows."""
    from diagnose.parsers import parse as _parse_sources

    total = sum(Path(s).stat().st_size for s in sources if Path(s).is_file())
    if not err.is_terminal:
        return _parse_sources(sources, refresh=refresh)
    from diagnose.parsers.wandb_api import parse_ref

    wandb = any(parse_ref(s) for s in sources)
    if not wandb and total < PROGRESS_MIN_BYTES:
        return _parse_sources(sources, refresh=refresh)
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TaskID, TimeElapsedColumn

    with Progress("[progress.description]{task.description}", BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  console=err, transient=True) as bar:
        stages: dict[str, tuple[TaskID, int | None]] = {}  # W&B stage -> its line and size

        def fetched(what: str, done: int, of: int | None) -> None:
            if what not in stages:
                for task, size in stages.values():  # the stage before has ended
                    bar.update(task, completed=size or 1, total=size or 1)
                stages[what] = (bar.add_task(f"W&B: {what}", total=of), of)
            task, _ = stages[what]
            stages[what] = (task, of)
            bar.update(task, completed=done, total=of)

        lines_read = [0]
        logs = bar.add_task("reading logs (MB)", total=total // 1_000_000) if total >= PROGRESS_MIN_BYTES else None

        def progress(n: int, lines: int = 0) -> None:
            lines_read[0] += lines
            if logs is not None:
                bar.update(logs, advance=n / 1_000_000,
                               description=f"reading logs: {lines_read[0]:,} lines, MB")
        return _parse_sources(sources, progress=progress if logs is not None else None, refresh=refresh,
                             fetch_progress=fetched if wandb else None)


@app.command()
def parse(
    sources: Annotated[Optional[list[str]], typer.Argument(help="Logs, configs, launch scripts, directories, URLs, "
                                                           "W&B runs or '-'.", show_default=False)] = None,
    format: Annotated[str, typer.Option("--format", "-f", help="json or text.")] = "text",
    out_dir: Annotated[Optional[Path], typer.Option("--out", help="Write each frame as <DIR>/<frame>.parquet "
                                                    "and the run facts as <DIR>/facts.json.")] = None,
    no_redact: Annotated[bool, typer.Option("--no-redact", help="Show secret-looking env values.")] = False,
    schema: Annotated[bool, typer.Option("--schema", help="Print the run model's frame schema and exit.")] = False,
    refresh: Refresh = False,
    force: Annotated[bool, typer.Option("--force", help="Write into an --out folder that already holds a parse.")] = False,
) -> None:
    """Read SOURCES into the run model and summarise it (frames, run facts, unparsed lines)."""
    if schema:
        from diagnose.parsers.schema import describe

        out.print(describe(), markup=False)
        return
    if not sources:
        raise _fail("no SOURCES given; `diagnose parse --help` shows what they can be")
    if format not in ("json", "text"):
        raise _fail(f"--format must be json or text, not {format!r}")
    if len(runs := _runs_or_exit(sources)) > 1:  # parse has one run model to give: say so rather than merge silently
        _stderr(f"diagnose: warning: {len(runs)} runs found ({', '.join(r.name for r in runs[:4])}"
                f"{', ...' if len(runs) > 4 else ''}); they are read as one model here, `diagnose report` reports each")
    if out_dir is not None:
        _check_out_dir(out_dir, sources, force)
    model = _load_or_exit(sources, refresh)
    from diagnose.reports import run_json

    doc = run_json.summary(model, redact_secrets=not no_redact)
    if out_dir is not None:
        try:
            out_dir.mkdir(exist_ok=True)
            for name, frame in model.frames.items():
                (run_json.redacted_frame(frame) if not no_redact else frame).write_parquet(out_dir / f"{name}.parquet")
            (out_dir / "facts.json").write_text(strict_json(doc))
        except OSError as e:
            raise _fail(f"{out_dir}: cannot write ({e.strerror or e})") from None
    if format == "json":
        _emit(strict_json(doc))
    else:
        from diagnose.reports.terminal import render_parse

        _writing(lambda: render_parse(doc, out))


def _load_or_exit(sources: list[str], refresh: bool = False) -> RunModel:
    try:
        model = load(sources, refresh)
    except InputError as e:
        raise _fail(str(e)) from None
    _tell_skipped(model)
    return model


def _tell_skipped(model: RunModel) -> None:
    if model.skipped:  # one line for all of them; the report's sources table lists each
        listed = "; ".join(f"{s.name} ({s.why})" for s in model.skipped[:5])
        more = f"; and {len(model.skipped) - 5} more" if len(model.skipped) > 5 else ""
        _stderr(f"diagnose: skipped {len(model.skipped)} input(s): {listed}{more}")


def _output_format(output: Optional[Path], format: Optional[str]) -> str:
    """--format, else -o's suffix, else text; an -o name whose suffix names no format is a usage error (it used to
    write HTML into `report.pdf`). Formats and their suffixes: reports/formats.py."""
    if format is None and output is not None:
        chosen = by_suffix(output.suffix)
        if chosen is None:
            raise _fail(f"-o {output}: {'no' if not output.suffix else 'unknown'} suffix; use {suffix_list()}, "
                        "or name the format with --format")
        return chosen.name
    fmt = format or "text"
    if fmt not in FORMATS:
        raise _fail(f"--format must be one of {', '.join(FORMATS)}, not {fmt!r}")
    return fmt


@app.command()
def report(
    sources: SourcesArg,
    output: Annotated[Optional[Path], typer.Option("-o", "--output", help="Write the report here (format from the "
                                                   "suffix: .html, .md, .json, .txt).")] = None,
    format: FormatName = None,
    fail_on: Annotated[Optional[str], typer.Option("--fail-on", help="Exit 1 when a finding at or above this "
                                                   "severity exists: critical | warning.")] = None,
    force: Annotated[bool, typer.Option("--force", help="Overwrite an existing report file.")] = False,
    no_redact: Annotated[bool, typer.Option("--no-redact", help="Keep secrets (tokens, keys) in the report.")] = False,
    redact_hosts: Annotated[bool, typer.Option("--redact-hosts", help="Also mask hostnames and IP addresses "
                                               "(consistently: same host, same alias).")] = False,
    gpu_memory: GpuMemory = None,
    refresh: Refresh = False,
    images: Annotated[Optional[Path], typer.Option("--images", help="Also write each chart as a PNG into DIR (needs "
                                                   "the `images` extra: kaleido, and a Chromium on PATH).")] = None,
    run: Annotated[Optional[str], typer.Option("--run", help="When a directory holds several runs, report only the "
                                               "one whose name ends with this.")] = None,
    seq_len: SeqLen = None,
    write_config: Annotated[Optional[Path], typer.Option(
        "--write-config", metavar="DIR",
        help="Also write the run's DeepSpeed JSON, accelerate YAML and launch script with the recommended changes "
             "applied into DIR (keys' order, comments and quoting kept), plus recommended.patch, a unified diff "
             "against the originals that `git apply` takes from their folder. The originals are never touched; an "
             "existing DIR needs --force.")] = None,
) -> None:
    """Diagnose SOURCES: why the run was slow, the exact fixes, the ZeRO plan; as text, JSON, Markdown or HTML.

    A single directory that holds several runs (run subdirectories, several job ids, several W&B runs) is reported
    run by run: a section per run in every format, `runs: [...]` in JSON; --run picks one."""
    if output is not None and str(output) == "-":  # `-o -`: the report to stdout, in --format (default text)
        output, to_stdout = None, True
    else:
        to_stdout = False
    fmt = _output_format(output, format)
    if fail_on not in (None, "critical", "warning"):
        raise _fail(f"--fail-on must be critical or warning, not {fail_on!r}")
    _check_output(output, sources, force)
    if write_config is not None and write_config.exists() and not force:
        raise _fail(f"{write_config} exists; pass --force to write into it")
    options = _options(seq_len=seq_len, gpu_memory_gb=gpu_memory, redact_secrets=not no_redact,
                       redact_hosts=redact_hosts, run=run, refresh=refresh)
    analysis = _analyse_or_exit(sources, options)
    if write_config is not None:
        if len(analysis.runs) > 1:
            raise _fail(f"--write-config needs one run; the sources hold {len(analysis.runs)}: pick one with --run")
        _write_config(write_config, analysis.runs[0].model, analysis.runs[0].patch, force)
    if images is not None:  # first, so that the Markdown links them
        base = output.parent if output is not None else Path.cwd()
        for i, r in enumerate(analysis.runs):
            written = _write_images(images, r.model, r.diagnosis, prefix=f"run{i + 1}-" if len(analysis.runs) > 1
                                    else "")
            r.document["images"] = [{"name": name, "title": title, "path": Path(os.path.relpath(path, base)).as_posix()}
                                    for name, title, path in written]
    several = len(analysis.runs) > 1
    if fmt == "text" and output is None and not to_stdout:
        from diagnose.reports import terminal

        for i, r in enumerate(analysis.runs, 1):
            if several:
                out.rule(f"run {i} of {len(analysis.runs)}: {r.name}")
            _writing(lambda: terminal.render(r.document, out))
    else:
        text = analysis.render(fmt)
        if output is None:
            _emit(text)
        else:
            _write_atomic(output, text, force)
            size = f" ({len(text.encode()) / 1e6:.1f} MB)" if len(text) > 1e6 else ""
            err.print(f"wrote {output}{size}" + (f" ({len(analysis.runs)} runs)" if several else ""))
            if not several:
                out.print(analysis.runs[0].document["verdict"], markup=False)  # the answer, without opening the file
    if fail_on:
        levels = ("critical",) if fail_on == "critical" else ("critical", "warning")
        if any(f.severity in levels for f in analysis.findings):
            raise typer.Exit(EXIT_FINDINGS)


_OPTION_FLAGS = {"seq_len": "--seq-len", "gpu_memory_gb": "--gpu-memory"}  # pipeline option -> the flag that sets it


def _options(**given: object) -> Options:
    from diagnose.pipeline import Options

    try:
        return Options(**given)  # type: ignore[arg-type]  # the flags' values, checked by Options itself
    except ValueError as e:  # "seq_len must be positive": said with the flag's name
        field, _, why = str(e).partition(" ")
        raise _fail(f"{_OPTION_FLAGS.get(field, field)} {why}") from None


def _analyse_or_exit(sources: list[str], options: Options, on_runs: Callable[[list[Run]], None] | None = None
                     ) -> Analysis:
    """The pipeline (diagnose/pipeline.py) with the command line's reading: progress on a terminal, one stderr line
    for the runs a directory holds, the inputs each run skipped and the runs skipped whole."""
    from diagnose.pipeline import analyse

    def found(runs: list[Run]) -> None:
        if len(runs) > 1 and options.run is None:
            _stderr(f"diagnose: {len(runs)} runs found: reporting each on its own (--run NAME picks one)")
            urls = [r.sources[0] for r in runs if len(r.sources) == 1 and r.sources[0].startswith("http")]
            if len(urls) == len(runs):  # a thread's runs, each selectable by its post's URL
                _stderr(f"diagnose: to compare two of them: diagnose compare {urls[0]} {urls[1]}")

    try:
        analysis = analyse(sources, options, reader=_load_telling_skipped, on_runs=on_runs or found)
    except OSError as e:  # the directory could not be walked
        raise _fail(f"{sources[0]}: {e.strerror or e}") from None
    except InputError as e:
        if e.source == options.run:
            raise _fail(f"--run {options.run!r} {e.why}") from None
        raise _fail(str(e)) from None
    if analysis.skipped:
        _stderr(f"diagnose: skipped {len(analysis.skipped)} (nothing recognisable, or not read): "
                + "; ".join(f"{name} ({why})" for name, why in analysis.skipped[:5])
                + ("; ..." if len(analysis.skipped) > 5 else ""))
    return analysis


def _load_telling_skipped(sources: list[str], refresh: bool) -> RunModel:
    model = load(sources, refresh)
    _tell_skipped(model)
    return model


def _write_config(folder: Path, model: RunModel, patch: ConfigPatch | None, force: bool) -> None:
    """The corrected config files and recommended.patch into FOLDER: the pipeline's patch (reports/config_patch.py)."""
    if patch is None:
        raise _fail("--write-config: the run was not analysed with its config files")
    try:
        folder.mkdir(parents=True, exist_ok=True)
        sources = {os.path.realpath(s.name) for s in model.sources}
        for f in patch.files:
            target = folder / f.relpath
            if os.path.realpath(target) in sources:
                raise _fail(f"{target} is one of the sources; --write-config never writes over an input")
            target.parent.mkdir(parents=True, exist_ok=True)
            _write_atomic(target, f.after, True)
        _write_atomic(folder / "recommended.patch", patch.patch, True)
    except OSError as e:
        raise _fail(f"{folder}: {e.strerror or e}") from None
    err.print(f"wrote {len(patch.files)} corrected file(s) and {folder / 'recommended.patch'}"
              + "".join(f"\n  not written: {n}" for n in patch.notes), markup=False)


def _write_images(directory: Path, model: RunModel, diagnosis: object, prefix: str = "") -> list[tuple[str, str, Path]]:
    """PNG charts for places that take no HTML (a GitHub comment): kaleido drives a local Chromium, one session for
    every chart (one per chart took ~3 s each). -> (name, title, path) per chart."""
    import plotly.io as pio

    from diagnose.reports import charts

    try:
        import kaleido  # noqa: F401
    except ImportError:
        raise _fail("--images needs kaleido: pip install 'diagnose-training[images]'") from None
    directory.mkdir(parents=True, exist_ok=True)
    figs = charts.figures(model, diagnosis)  # type: ignore[arg-type]  # the report command's own Diagnosis
    paths = [directory / f"{prefix}{name}.png" for name, _ in figs]
    # kaleido returns a chart it failed to render (a render that timed out on a loaded machine) instead of raising:
    # the charts without a file are rendered once more, and a chart still missing is an error, not a silent gap.
    todo = list(range(len(figs)))
    for _ in range(2):
        try:
            pio.write_images([figs[i][1] for i in todo], [paths[i] for i in todo], width=1000,
                             height=[int(figs[i][1].layout.height or 320) for i in todo], scale=1)
        except Exception as e:  # kaleido found no browser, or it failed to start  # noqa: BLE001
            raise _fail(f"--images: could not render PNGs ({str(e).splitlines()[0][:160]}); is chromium installed?")
        todo = [i for i in todo if not paths[i].is_file()]
        if not todo:
            break
    if todo:
        raise _fail(f"--images: could not render {', '.join(paths[i].name for i in todo)} (kaleido gave no image)")
    err.print(f"wrote {len(figs)} chart image(s) to {directory}")
    return [(name, str(fig.layout.title.text or name), path) for (name, fig), path in zip(figs, paths)]


def _check_out_dir(folder: Path, sources: list[str], force: bool) -> None:
    """`parse --out DIR` follows -o's rules: a folder (not a file), whose parent exists, holding no earlier parse
    unless --force, and never an input's folder when that would replace an input."""
    from diagnose.parsers.sources import input_files

    if folder.exists() and not folder.is_dir():
        raise _fail(f"--out {folder}: a file, not a folder")
    if not folder.parent.is_dir():
        raise _fail(f"--out {folder}: {folder.parent} does not exist (create it first)")
    from diagnose.parsers.schema import FRAMES

    written = [folder / "facts.json", *(folder / f"{name}.parquet" for name in FRAMES)]
    inputs = input_files(sources)
    if any(os.path.realpath(p) in inputs for p in written):
        raise _fail(f"--out {folder}: would write over one of the inputs")
    if not force and any(p.exists() for p in written):
        raise _fail(f"--out {folder} already holds a parse; pass --force to overwrite it")


def _check_output(output: Optional[Path], sources: list[str], force: bool) -> None:
    """Before any reading: an output never replaces one of the inputs (with or without --force), an existing one
    needs --force, and its folder must exist (a typo is not a new directory tree)."""
    if output is None:
        return
    from diagnose.parsers.sources import input_files

    if os.path.realpath(output) in input_files(sources):
        raise _fail(f"{output} is one of the inputs; write the output elsewhere")
    _only_a_file(output)
    if output.exists() and not force:
        raise _fail(f"{output} exists; pass --force to overwrite it")
    if not output.parent.is_dir():
        why = "is not a directory" if output.parent.exists() else "does not exist (create it first)"
        raise _fail(f"cannot write {output}: {output.parent} {why}")


def _only_a_file(path: Path) -> None:
    """-o writes regular files: a device node (`/dev/null` as root), a FIFO, a socket or a directory is never
    replaced by one, with or without --force (`-o -` is stdout)."""
    import stat

    try:
        mode = os.stat(path).st_mode
    except OSError:
        return  # nothing there (or a dangling link): a new file
    if not stat.S_ISREG(mode):
        kind = ("a directory" if stat.S_ISDIR(mode) else "a FIFO" if stat.S_ISFIFO(mode) else
                "a device" if stat.S_ISCHR(mode) or stat.S_ISBLK(mode) else "not a regular file")
        raise _fail(f"-o {path} is {kind}: the output is written as a regular file only (`-o -` writes to stdout)")


def _write_atomic(path: Path, text: str, force: bool = True) -> None:
    """Write to a temporary file beside the target, then put it in place in one step: with `force` by rename,
    without it by a hard link, which fails if the target appeared meanwhile (no check-then-write race). Any path
    problem (a directory, a parent that is a file, no permission, a full disk) is exit 2 naming the path."""
    import errno
    import os
    import tempfile

    tmp = None
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)  # mkstemp makes 0600; a report is meant to be shared
        _only_a_file(path)  # again, just before the rename: a FIFO made meanwhile is not replaced either
        if path.is_dir():
            raise IsADirectoryError(errno.EISDIR, "is a directory")
        if force:
            os.replace(tmp, path)
        else:
            try:
                os.link(tmp, path)
            except FileExistsError:
                raise _fail(f"{path} exists; pass --force to overwrite it") from None
            os.unlink(tmp)
        tmp = None
    except OSError as e:
        raise _fail(f"{path}: cannot write the report ({e.strerror or e})") from None
    finally:
        if tmp is not None:
            Path(tmp).unlink(missing_ok=True)


@app.command()
def compare(
    baseline: Annotated[Optional[str], typer.Argument(help="The run to compare against: a log, a run's directory, "
                                                      "a W&B run URL or offline run directory.",
                                                      show_default=False)] = None,
    candidate: Annotated[Optional[str], typer.Argument(help="The run to compare with it, given the same way.",
                                                       show_default=False)] = None,
    baseline_files: Annotated[Optional[list[str]], typer.Option("--baseline", "-b", help="Another file of the "
                                                                "baseline (repeatable: logs, configs, scripts).",
                                                                show_default=False)] = None,
    candidate_files: Annotated[Optional[list[str]], typer.Option("--candidate", "-c", help="Another file of the "
                                                                 "candidate (repeatable).", show_default=False)] = None,
    output: Annotated[Optional[Path], typer.Option("-o", "--output", help="Write the comparison here (format from "
                                                   "the suffix: .html, .md, .json, .txt; '-' for stdout).")] = None,
    format: FormatName = None,
    force: Annotated[bool, typer.Option("--force", help="Overwrite an existing file.")] = False,
    no_redact: Annotated[bool, typer.Option("--no-redact", help="Keep secrets (tokens, keys) in the output.")] = False,
    redact_hosts: RedactHosts = False,
    gpu_memory: GpuMemory = None,
    seq_len: SeqLen = None,
    refresh: Refresh = False,
) -> None:
    """Compare two runs: what changed (facts, config, environment), what it cost (step time, throughput, the time
    breakdown), and which change explains it. Each side is read and diagnosed as `report` does; exit codes as
    `report`."""
    sides = [([baseline] if baseline else []) + list(baseline_files or []),
             ([candidate] if candidate else []) + list(candidate_files or [])]
    if not sides[0] or not sides[1]:
        raise _fail("compare needs a BASELINE and a CANDIDATE (positional, or --baseline / --candidate files)")
    to_stdout = output is not None and str(output) == "-"
    if to_stdout:
        output = None
    fmt = _output_format(output, format)
    _check_output(output, [*sides[0], *sides[1]], force)
    from diagnose.compare import compare as run_compare
    from diagnose.reports import compare_doc

    # One side at a time: the first run's frames are let go before the second is read (a side keeps its facts,
    # metrics and findings).
    baseline_side, candidate_side = (_side(files, label, refresh, gpu_memory, seq_len)
                                     for files, label in zip(sides, ("baseline", "candidate")))
    cmp = run_compare(baseline_side, candidate_side)
    doc = compare_doc.build(cmp, redact_secrets=not no_redact, redact_hosts=redact_hosts)
    if fmt == "text" and output is None and not to_stdout:
        compare_doc.render_terminal(doc, out)
        return
    text = FORMATS[fmt].compare(doc, lambda: compare_doc.figures(cmp))
    if output is None:
        _emit(text)
    else:
        _write_atomic(output, text, force)
        err.print(f"wrote {output}")


@app.command()
def comment(
    url: Annotated[Optional[str], typer.Argument(help="The GitHub issue, pull request or discussion to answer "
                                                "(read as a source too).", show_default=False)] = None,
    sources: Annotated[Optional[list[str]], typer.Argument(help="More sources read into every run of the thread "
                                                          "(logs, configs, scripts).", show_default=False)] = None,
    post: Annotated[bool, typer.Option("--post", help="Post the reply (needs GITHUB_TOKEN or GH_TOKEN); without it, "
                                       "a dry run prints what would be posted.")] = False,
    show_hosts: Annotated[bool, typer.Option("--show-hosts", help="Keep hostnames and IP addresses (masked by "
                                             "default in a reply meant for a public thread).")] = False,
    event: Annotated[Optional[Path], typer.Option("--event", help="A GitHub Actions event payload (GITHUB_EVENT_PATH)"
                                                  ": answer the issue it names, if it asks for a report.")] = None,
    label: Annotated[str, typer.Option("--label", help="With --event: an issue carrying this label asks for a "
                                       "report.")] = "diagnose",
    keyword: Annotated[str, typer.Option("--keyword", help="With --event: an issue body or a new comment holding "
                                         "this text asks for a report.")] = "/diagnose",
    gpu_memory: GpuMemory = None,
    seq_len: SeqLen = None,
) -> None:
    """Answer a GitHub thread with its report: read the thread's pasted logs and attached files, render the Markdown
    report, and post it as one comment (a hidden marker makes later runs edit that comment instead of adding one).

    A dry run by default: the reply goes to stdout. Secrets and hostnames are masked, @mentions and issue references
    made inert, the body kept under GitHub's 65,536 characters. --event is what the GitHub Action (action.yml)
    runs: exit 0 without posting when the event does not ask for a report, and a reply saying what to paste when
    the thread holds nothing to read."""
    import json

    from diagnose import reply

    if event is not None:
        try:
            payload = json.loads(event.read_text(encoding="utf-8"))
        except (OSError, ValueError) as e:
            raise _fail(f"{event}: not a readable event payload ({getattr(e, 'strerror', None) or e})") from None
        name = os.environ.get("GITHUB_EVENT_NAME") or ("issue_comment" if "comment" in payload else "issues")
        trigger = reply.from_event(name, payload if isinstance(payload, dict) else {}, label=label, keyword=keyword)
        if trigger.url is None:
            _stderr(f"diagnose: not answering: {trigger.why}")
            raise typer.Exit(EXIT_OK)
        _stderr(f"diagnose: answering {trigger.url}: {trigger.why}")
        sources = [url] + list(sources or []) if url else list(sources or [])
        url = trigger.url
    if url is None:
        raise _fail("comment needs the thread's URL (or --event with an Actions payload)")
    try:
        answer = reply.prepare(url, list(sources or []), show_hosts=show_hosts, seq_len=seq_len,
                               gpu_memory_gb=gpu_memory, guide_when_empty=event is not None)
        if not post:
            _emit(answer.body)
            last = answer.earlier[-1] if answer.earlier else None
            _stderr("diagnose: dry run: " + (f"would edit comment {last.id or last.node_id} if posting as its "
                                              f"author {last.author}, else post a new comment" if last is not None
                                              else "would post a new comment") + f" on {answer.ref.thread_url} "
                    f"({len(answer.body):,} characters, {len(answer.runs)} run(s)); --post posts it")
            return
        where, edited = reply.post(answer)
    except InputError as e:
        raise _fail(str(e)) from None
    except ValueError as e:
        raise _fail(str(e)) from None
    _stderr(("diagnose: edited " if edited else "diagnose: posted ") + where)


def _side(files: list[str], label: str, refresh: bool, gpu_memory: Optional[float],
          seq_len: Optional[int] = None) -> Side:
    """Read and diagnose one side of a comparison through the pipeline; keep what the comparison needs, not the
    frames."""
    from diagnose.compare import Side

    def one_run(runs: list[Run]) -> None:
        if len(runs) > 1:
            raise _fail(f"the {label} {files[0]} holds {len(runs)} runs ({', '.join(r.name for r in runs[:4])}); "
                        "name one run's directory or files")

    options = _options(gpu_memory_gb=gpu_memory, seq_len=seq_len, refresh=refresh, all_clocks=True)
    one = _analyse_or_exit(files, options, on_runs=one_run).runs[0]
    return Side(" ".join(files), one.model.facts, one.diagnosis, tuple(s.name for s in one.model.sources))


def _runs_or_exit(sources: list[str]) -> list[Run]:
    from diagnose.parsers.sources import runs_of

    try:
        return runs_of(sources)
    except OSError as e:
        raise _fail(f"{sources[0]}: {e.strerror or e}") from None


@app.command()
def serve(
    host: Annotated[str, typer.Option("--host", help="Interface to listen on. Loopback by default: anything else "
                                      "lets others on the network upload, and reports may hold internal details.")]
    = "127.0.0.1",
    port: Annotated[int, typer.Option("--port", help="TCP port.")] = 8000,
    max_upload_mb: Annotated[float, typer.Option("--max-upload-mb", help="Largest upload accepted (HTTP 413 past "
                                                 "it).")] = 512.0,
    keep_minutes: Annotated[float, typer.Option("--keep-minutes", help="How long reports stay downloadable; "
                                                "all are deleted at shutdown.")] = 60.0,
    workers: Annotated[int, typer.Option("--workers", help="Analyses run at once (a thread pool off the event "
                                         "loop).")] = 2,
    queue: Annotated[Optional[int], typer.Option("--queue", help="Analyses that may wait for a worker before "
                                                 "uploads are refused with HTTP 503 and Retry-After (default 20).")] = None,
    token: Annotated[Optional[str], typer.Option("--token", envvar="DIAGNOSE_TOKEN", help="Require this token "
                                                 "(the header `Authorization: Bearer T`, exactly) for uploads and "
                                                 "stored reports; also read from DIAGNOSE_TOKEN. The page asks "
                                                 "for it.")] = None,
    no_redact: Annotated[bool, typer.Option("--no-redact", help="Keep secrets in the reports.")] = False,
    body_timeout: Annotated[float, typer.Option("--body-timeout", help="Seconds an upload's body may take to "
                                                "arrive; a slower (trickling) client gets HTTP 408.")] = 120.0,
    no_access_log: Annotated[bool, typer.Option("--no-access-log", help="Do not log one line per request to "
                                                "stderr.")] = False,
    github_token_for_uploads: Annotated[bool, typer.Option(
        "--github-token-for-uploads", help="Read GitHub threads for uploaders with this process's GITHUB_TOKEN "
        "when they send none (off: a thread is read with the uploader's own token, or none).")] = False,
) -> None:
    """Serve an upload page and API: drop a run's logs, configs and launch script (or paste a W&B run or GitHub issue
    URL) in the browser and get the report, with the Markdown one click away. API: POST /api/diagnose (multipart
    `files`, optional `wandb`: a W&B run or a GitHub thread URL), GET /reports/{id}[.md|.json], GET /healthz."""
    from diagnose.serve import ServeConfig, run

    if not 1 <= port <= 65535:
        raise _fail(f"--port {port}: a TCP port is 1-65535")
    if workers < 1 or max_upload_mb <= 0 or keep_minutes <= 0 or (queue is not None and queue < 0) \
            or body_timeout <= 0:
        raise _fail("--workers must be >= 1, --max-upload-mb, --keep-minutes and --body-timeout > 0, --queue >= 0")
    if token is not None and not token.strip():  # `--token ""` must not quietly turn authentication off
        raise _fail("--token is empty: give a token, or leave the option (and DIAGNOSE_TOKEN) out for no token")
    if token is not None and token != token.strip():
        raise _fail("--token has spaces around it: they would have to be sent too; give the token alone")
    if host not in ("127.0.0.1", "localhost", "::1"):
        err.print(f"diagnose serve: warning: listening on {host}: anyone who can reach it can upload, and reports "
                  "may hold internal details (hostnames, paths, config)" + ("" if token else "; consider --token"))
    config = ServeConfig(max_upload_mb=max_upload_mb, keep_minutes=keep_minutes, workers=workers, queue=queue,
                         token=token, redact_secrets=not no_redact, body_timeout_s=body_timeout,
                         access_log=not no_access_log, github_token_for_uploads=github_token_for_uploads)
    try:
        run(config, host, port, lambda line: err.print(line))
    except (OSError, OverflowError) as e:
        raise _fail(f"cannot listen on {host}:{port}: {getattr(e, 'strerror', None) or e}") from None


@app.command()
def plan(
    params: Annotated[float, typer.Option("--params", help="Parameter count, e.g. 2.78e9.")],
    gpus: Annotated[int, typer.Option("--gpus", help="Data-parallel GPUs in total.")],
    gpus_per_node: Annotated[Optional[int], typer.Option("--gpus-per-node", help="GPUs per node (traffic inside "
                                                         "a node is cheaper than across nodes).")] = None,
    gpu_memory: Annotated[Optional[float], typer.Option("--gpu-memory", help="GB per GPU (unset: an 80 GB card "
                                                        "is assumed, and the plan says so).")] = None,
    seq_len: Annotated[Optional[int], typer.Option("--seq-len", help="Sequence length in tokens (with the model "
                                                   "shape and micro-batch: activation memory).")] = None,
    micro_batch: Annotated[Optional[int], typer.Option("--micro-batch", help="Micro-batch per GPU, in "
                                                       "sequences.")] = None,
    hidden: Annotated[Optional[int], typer.Option("--hidden", help="Hidden size (model width).")] = None,
    layers: Annotated[Optional[int], typer.Option("--layers", help="Transformer layers.")] = None,
    heads: Annotated[Optional[int], typer.Option("--heads", help="Attention heads.")] = None,
    grad_accum: Annotated[int, typer.Option("--grad-accum", help="Gradient accumulation steps (ZeRO-2/3 reduce "
                                            "gradients every micro-step, ZeRO-1 once per step).")] = 1,
    optimizer: Annotated[str, typer.Option("--optimizer", help="adamw | adam8bit")] = "adamw",
    activation_checkpointing: Annotated[bool, typer.Option("--activation-checkpointing", help="Activations are "
                                                           "recomputed in backward (about a layer's worth kept).")]
    = False,
    precision: Annotated[str, typer.Option("--precision", help="bf16 | fp16 | fp32 (fp32 keeps 4-byte weights and "
                                           "gradients and twice the activations).")] = "bf16",
    zero_stage: Annotated[Optional[int], typer.Option("--zero-stage", help="The stage the run uses now (0 for "
                                                      "plain data parallel): marked in the plan, and the basis of "
                                                      "--peak-memory.")] = None,
    offload: Annotated[bool, typer.Option("--offload", help="The run now offloads to the CPU.")] = False,
    peak_memory: Annotated[Optional[float], typer.Option("--peak-memory", help="GB per GPU the run peaked at under "
                                                         "--zero-stage: the plan then works from that measurement, "
                                                         "as `report` does.")] = None,
    format: Annotated[str, typer.Option("--format", "-f", help="text | json")] = "text",
) -> None:
    """Choose a ZeRO stage before the run: memory and traffic per stage, in the DeepSpeed maintainers' order."""
    from diagnose.planner import ASSUMED_GPU_GB, OPTIMIZER_BYTES, PRECISIONS, as_dict, plan as make_plan

    if optimizer not in OPTIMIZER_BYTES:
        raise _fail(f"--optimizer must be one of {', '.join(OPTIMIZER_BYTES)}, not {optimizer!r}")
    if precision not in PRECISIONS:
        raise _fail(f"--precision must be one of {', '.join(PRECISIONS)}, not {precision!r}")
    if params <= 0 or gpus <= 0 or (gpu_memory is not None and gpu_memory <= 0):
        raise _fail("--params, --gpus and --gpu-memory must be positive")
    if zero_stage is not None and zero_stage not in (0, 1, 2, 3):
        raise _fail(f"--zero-stage must be 0, 1, 2 or 3, not {zero_stage}")
    if peak_memory is not None and (zero_stage is None or peak_memory <= 0):
        raise _fail("--peak-memory needs --zero-stage (the stage it was measured under) and a positive value")
    p = make_plan(params, gpus, gpus_per_node, gpu_memory or ASSUMED_GPU_GB, optimizer, grad_accum, seq_len,
                  micro_batch, hidden, layers, heads, activation_checkpointing, measured_peak_gb=peak_memory,
                  current=(zero_stage, offload) if zero_stage is not None else None,
                  gpu_memory_known=gpu_memory is not None, precision=precision)
    if format == "json":
        _emit(strict_json(as_dict(p)))
        return
    if format != "text":
        raise _fail(f"--format must be text or json, not {format!r}")
    from diagnose.reports.terminal import render_plan

    render_plan(p, params, gpus, optimizer, out)


@app.command()
def rules(rule_id: Annotated[Optional[str], typer.Argument(help="A rule id to explain.")] = None) -> None:
    """List every rule, or explain one: what it detects, why it slows training, the evidence it needs, the fix."""
    from diagnose.rules import load_all

    registry = load_all()
    if rule_id is None:
        for each in registry.values():
            out.print(f"{each.id:<36} {each.title}", markup=False)
        return
    r = registry.get(rule_id)
    if r is None:
        raise _fail(f"no rule {rule_id!r}; `diagnose rules` lists them")
    out.print(f"{r.id}: {r.title}\n\nWhat it detects\n  {r.detects}\n\nWhy it slows training\n  {r.why}\n\n"
              f"Evidence it needs\n  {r.evidence}\n\nThe fix\n  {r.fix}", markup=False)


def _version(value: bool) -> None:
    if value:
        from diagnose import __version__

        _emit(f"diagnose {__version__}\n")
        raise typer.Exit(EXIT_OK)


@app.callback()
def _root(
    show_version: Annotated[bool, typer.Option("--version", callback=_version, is_eager=True,
                                               help="Print the version and exit.")] = False,
) -> None:
    """Tell why a distributed training run was slow and which config change fixes it."""


def _emit(text: str) -> None:
    _writing(lambda: (sys.stdout.write(text), sys.stdout.flush()))


def _writing(write: Callable[[], object]) -> None:
    """Run a write to stdout; a full disk or a closed pipe is exit 2 with one line (click would exit 1 silently)."""
    try:
        write()
    except OSError as e:
        _write_failed(e)


def _write_failed(e: OSError) -> None:
    """One line and exit 2; stdout is pointed at /dev/null so that Python's own flush at exit stays quiet."""
    try:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    except (OSError, ValueError):
        pass
    what = "the output" if isinstance(e, BrokenPipeError) or e.filename is None else str(e.filename)
    _stderr(f"diagnose: error: cannot write {what}: {e.strerror or e}")
    sys.exit(EXIT_INPUT)


def main() -> None:
    try:
        rc = app(standalone_mode=False)
        sys.stdout.flush()  # a full disk or a closed pipe shows here, inside the handlers, not at exit
        if isinstance(rc, int) and rc:
            sys.exit(rc)
    except typer.Exit as e:
        try:
            sys.stdout.flush()
        except OSError as write_error:
            _write_failed(write_error)
        sys.exit(e.exit_code)
    except OSError as e:  # writing the output failed (full disk, broken pipe), or the environment refused a file
        _write_failed(e)
    except (typer.Abort, KeyboardInterrupt):
        err.print("diagnose: aborted")
        sys.exit(130)
    except Exception as e:  # click usage errors and anything unexpected: one line, no traceback
        if hasattr(e, "show") and hasattr(e, "exit_code"):  # click's usage errors (typer vendors click)
            e.show()
            sys.exit(EXIT_INPUT)
        first = (str(e).strip().splitlines() or [""])[0]
        sys.stderr.write(f"diagnose: internal error: {type(e).__name__}: {first}\n")
        sys.exit(EXIT_INTERNAL)
    sys.exit(EXIT_OK)
