"""One front door: sources -> runs -> run model -> diagnosis -> report document, for the CLI, the server, `compare` and
the Python API alike (they are thin shells over `analyse`).

    import diagnose
    a = diagnose.analyse("logs/")              # a file, a directory, a W&B run, or a list of them
    a.findings                                 # the findings, most important first
    a.write("report.html")                     # the format from the suffix (reports/formats.py)

A single directory that holds several runs gives one RunAnalysis per run, never merged; the options apply to each
the same way.
"""
from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from diagnose.engine import Diagnosis
from diagnose.engine import diagnose as run_diagnosis
from diagnose.findings import Finding
from diagnose.parsers.errors import InputError
from diagnose.parsers.facts import with_user_claims
from diagnose.parsers.github import Thread, parse_thread_url
from diagnose.parsers.run_model import RunModel, Skipped
from diagnose.parsers.sources import Input, Run, runs_of
from diagnose.reports import document as documents
from diagnose.reports.config_patch import ConfigPatch
from diagnose.reports.formats import FORMATS, Rendered, by_suffix


@dataclass(frozen=True)
class Options:
    """How to analyse: the same for one run or several."""

    seq_len: int | None = None  # tokens per sample, where the sources do not say (theirs wins: it is what ran)
    gpu_memory_gb: float | None = None  # GB per GPU for the planner, where the logs do not name the GPU
    redact_secrets: bool = True
    redact_hosts: bool = False
    run: str | None = None  # of a directory's several runs, only the one whose name ends with this
    refresh: bool = False  # refetch W&B runs instead of using the cache
    all_clocks: bool = False  # every step clock the run has (compare picks a common one)

    def __post_init__(self) -> None:
        if self.seq_len is not None and self.seq_len <= 0:
            raise ValueError("seq_len must be positive")
        if self.gpu_memory_gb is not None and self.gpu_memory_gb <= 0:
            raise ValueError("gpu_memory_gb must be positive")


@dataclass(frozen=True)
class RunAnalysis:
    name: str
    model: RunModel
    diagnosis: Diagnosis
    document: dict[str, Any]
    patch: ConfigPatch | None = None  # the recommended changes in the run's own config files (reports/config_patch.py)

    @property
    def findings(self) -> tuple[Finding, ...]:
        return tuple(self.diagnosis.findings)

    def rendered(self) -> Rendered:
        from diagnose.reports import chart_data, charts

        return Rendered(self.name, self.document, lambda: charts.figures(self.model, self.diagnosis),
                        lambda: chart_data.drawn_in_markdown(self.model, self.diagnosis))


@dataclass(frozen=True)
class Analysis:
    """What `analyse` found: one RunAnalysis per run (several only for a directory of runs), and the runs skipped
    because nothing in them was recognisable (name and why)."""

    runs: tuple[RunAnalysis, ...]
    skipped: tuple[tuple[str, str], ...] = field(default=())
    threads: tuple[Thread, ...] = field(default=())  # the GitHub threads read, as fetched (their posts, our replies)

    @property
    def findings(self) -> tuple[Finding, ...]:
        return tuple(f for r in self.runs for f in r.findings)

    @property
    def verdict(self) -> str:
        return "\n".join(r.diagnosis.verdict for r in self.runs)

    @property
    def document(self) -> dict[str, Any]:
        """The JSON contract: one run's document, or `{"schema_version", "runs": [...]}` for several."""
        if len(self.runs) == 1:
            return self.runs[0].document
        return {"schema_version": self.runs[0].document["schema_version"],
                "runs": [{"name": r.name, **r.document} for r in self.runs]}

    def render(self, fmt: str = "md") -> str:
        if fmt not in FORMATS:
            raise ValueError(f"unknown format {fmt!r}: one of {', '.join(FORMATS)}")
        f = FORMATS[fmt]
        return f.report(self.runs[0].rendered()) if len(self.runs) == 1 else f.runs([r.rendered() for r in self.runs])

    def write(self, path: str | os.PathLike[str], fmt: str | None = None) -> Path:
        """The report into `path`, in `fmt` or the format its suffix names."""
        path = Path(path)
        chosen = FORMATS.get(fmt) if fmt else by_suffix(path.suffix)
        if chosen is None:
            raise ValueError(f"{path}: name a format (fmt=...) or use a suffix a format has")
        path.write_text(self.render(chosen.name), encoding="utf-8")
        return path


Reader = Callable[[list[str], bool], RunModel]  # (sources, refresh) -> run model


def _read(sources: list[str], refresh: bool) -> RunModel:
    from diagnose.parsers import parse

    return parse(sources, refresh=refresh)


def analyse(sources: str | os.PathLike[str] | Sequence[str | os.PathLike[str]], options: Options | None = None, *,
            reader: Reader | None = None, inputs: Sequence[Input] | None = None,
            on_runs: Callable[[list[Run]], None] | None = None) -> Analysis:
    """Read, diagnose and document SOURCES. `reader` replaces how sources are read (the CLI's progress display);
    `inputs` are already-resolved inputs (the server's uploads, read as one run); `on_runs` hears the runs the sources hold before any is read (the CLI says how many, compare refuses several).

    Raises InputError when nothing is readable (in every run of a directory)."""
    options = options or Options()
    if isinstance(sources, (str, os.PathLike)):
        sources = [sources]
    names = [str(s) for s in sources]
    if any(parse_thread_url(n) for n in names):
        return _threads(names, options, on_runs, list(inputs or ()))
    if inputs is not None:
        from diagnose.parsers import run_model

        model = run_model.build(list(inputs))
        return Analysis((_one("upload", model, options),))
    runs = runs_of(names)
    if on_runs is not None:
        on_runs(runs)
    if options.run is not None:
        chosen = [r for r in runs if r.name.rstrip("/").endswith(options.run.rstrip("/"))]
        if len(chosen) != 1:
            raise InputError(options.run, f"matches {len(chosen)} of the runs: " + ", ".join(r.name for r in runs))
        runs = chosen
    read = reader or _read
    if len(runs) == 1:
        model = read(list(runs[0].sources) if options.run is not None else names, options.refresh)
        return Analysis((_one(runs[0].name, model, options),))
    done, skipped = [], []
    for r in runs:
        try:
            model = read(list(r.sources), options.refresh)
        except InputError as e:
            skipped.append((r.name, e.why))
            continue
        done.append(_one(r.name, model, options))
    if not done:
        raise InputError(names[0], "no run in the directory held anything recognisable")
    return Analysis(tuple(done), tuple(skipped))


def _threads(names: list[str], options: Options, on_runs: Callable[[list[Run]], None] | None, extra: list[Input]) -> Analysis:
    """GitHub threads among the sources (parsers/threads.py): a run per post that prints steps, with its author's
    configs; the other sources (and `extra`, already-resolved inputs such as uploads) are context read into every
    run."""
    from diagnose.parsers import run_model, threads
    from diagnose.parsers.sources import resolve, temp_dir

    refs = {n: parse_thread_url(n) for n in names}
    with temp_dir() as tmp:
        read = [threads.read(ref, Path(tmp)) for ref in refs.values() if ref is not None]
        found = [r for t in read for r in t.runs]
        context = extra + resolve([n for n, ref in refs.items() if ref is None], Path(tmp))
        if on_runs is not None:
            on_runs([Run(r.name, (r.url,)) for r in found])
        if options.run is not None:
            found = [r for r in found if options.run in (r.name, r.url) or r.name.endswith(options.run)]
            if len(found) != 1:
                raise InputError(options.run, f"matches {len(found)} of the thread's runs")
        # What the thread did not give (an attachment that did not come, the cut of its byte or time budget) is
        # named in each of its runs' reports, beside the sources they read.
        cut = tuple(Skipped(where, why) for t in read for where, why in t.skipped)
        # a run of one post was read whole already, to tell the posts apart: it is not read again
        done = [_one(r.name, _with_skipped(r.model if r.model is not None and not context
                                           else run_model.build(list(r.inputs) + context), cut), options)
                for r in found]
    return Analysis(tuple(done), tuple(x for t in read for x in t.skipped), tuple(t.thread for t in read))


def _with_skipped(model: RunModel, skipped: tuple[Skipped, ...]) -> RunModel:
    return dataclasses.replace(model, skipped=model.skipped + skipped) if skipped else model


def _one(name: str, model: RunModel, options: Options) -> RunAnalysis:
    from diagnose.reports import config_patch

    facts = with_user_claims(model.facts, seq_len=options.seq_len, gpu_memory_gb=options.gpu_memory_gb)
    model = dataclasses.replace(model, facts=facts) if facts is not model.facts else model
    diagnosis = run_diagnosis(model, all_clocks=options.all_clocks)
    # the recommended changes written into the run's own configs, once: the report's diffs, --write-config and
    # the server's stored patch are this one
    patch = config_patch.build(model, diagnosis.recommendation.changes)
    doc = documents.build(model, diagnosis, redact_secrets=options.redact_secrets,
                          redact_hosts=options.redact_hosts, patch=patch)
    return RunAnalysis(name, model, diagnosis, doc, patch)
