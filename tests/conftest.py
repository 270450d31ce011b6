from __future__ import annotations

import functools
import importlib
import io
import os
import subprocess
import sys
from pathlib import Path

import pytest

# With several xdist workers, one a core, the cores are full: each worker's polars runs its operations on one
# thread. Most frames in the tests are small, and a thread pool's dispatch is then most of each operation's cost
# (`pytest -m "not slow"` on 2 cores: 92 -> 83 s). Set before anything imports polars; children inherit it.
if int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "0")) > 1:
    os.environ.setdefault("POLARS_MAX_THREADS", "1")

ROOT = Path(__file__).resolve().parents[1]
SAMPLES = ROOT / "sample_logs"
CORPUS = ROOT.parent / "shared" / "corpus"


@functools.cache
def analysed(path: Path):  # type: ignore[no-untyped-def]  # -> diagnose.pipeline.Analysis
    """Each sample read and diagnosed once per test run, whichever tests ask (issue 34): the analysis is frozen data,
    and the renderers only read it."""
    import diagnose

    return diagnose.analyse(Path(path))


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The tests marked `longest` first, in their order: pytest-xdist hands tests out in collection order, and one of
    them begun last would keep a worker busy after the others finish (the invariance groups sit late in the
    alphabet)."""
    items.sort(key=lambda item: item.get_closest_marker("longest") is None)


def run_cli(*args: str, stdin: bytes | None = None, timeout: float = 120, env: dict[str, str] | None = None,
            process: bool = False, environ: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """`diagnose ARGS` run in this process: the entry point with argv, streams, working directory and environment of
    its own, its exit status from SystemExit (issue 34: a CLI process costs ~0.6 s of start-up and imports, most of a
    small report). `process=True` runs a real child, for what only a process shows: start-up, signals, pipes and file
    descriptors, imports; each output format keeps one such smoke test (test_reports.py). `env` is added to this
    process's environment; `environ` replaces it; `timeout` bounds a child only."""
    if environ is not None:
        env = None
    if process or args[:1] == ("serve",):  # a server runs until stopped: a child can be stopped at the timeout
        proc = subprocess.run([sys.executable, "-m", "diagnose", *args], input=stdin, capture_output=True,
                              timeout=timeout, cwd=ROOT, env=environ if environ is not None else
                              {**os.environ, **env} if env else None)
        return subprocess.CompletedProcess(proc.args, proc.returncode, proc.stdout.decode("utf-8", "replace"),
                                           proc.stderr.decode("utf-8", "replace"))
    return _in_process(list(args), stdin, environ if environ is not None else {**os.environ, **(env or {})})


def _in_process(args: list[str], stdin: bytes | None, environ: dict[str, str]) -> subprocess.CompletedProcess[str]:
    from diagnose.entry import main

    out, err = io.BytesIO(), io.BytesIO()
    # The streams a child gets: UTF-8, strict on stdout and backslashreplace on stderr (Python's defaults), no
    # terminal, and stdin at its end unless given.
    streams = (io.TextIOWrapper(io.BytesIO(stdin or b""), encoding="utf-8"),
               io.TextIOWrapper(out, encoding="utf-8", write_through=True),
               io.TextIOWrapper(err, encoding="utf-8", errors="backslashreplace", write_through=True))
    saved = (sys.stdin, sys.stdout, sys.stderr, sys.argv, os.getcwd(), dict(os.environ))
    sys.stdin, sys.stdout, sys.stderr = streams
    sys.argv = ["diagnose", *args]
    os.chdir(ROOT)
    os.environ.clear()
    os.environ.update(environ)
    code: int | str | None = 0
    try:
        main()
    except SystemExit as e:
        code = e.code
    finally:
        for stream in streams[1:]:
            stream.flush()
        sys.stdin, sys.stdout, sys.stderr, sys.argv = saved[:4]
        os.chdir(saved[4])
        os.environ.clear()
        os.environ.update(saved[5])
    text_err = err.getvalue().decode("utf-8", "replace")
    if isinstance(code, str):  # sys.exit("message"): Python prints it and exits 1
        text_err, code = text_err + code + "\n", 1
    return subprocess.CompletedProcess(["diagnose", *args], code or 0, out.getvalue().decode("utf-8", "replace"),
                                       text_err)


def bench(name: str):  # type: ignore[no-untyped-def]  # -> the module benchmarks/NAME.py
    """A benchmark module (`accuracy`, `invariance`, `fuzz`), imported once a process under its own name, so that
    every test shares its caches and its dataclasses find their module."""
    if str(ROOT / "benchmarks") not in sys.path:
        sys.path.insert(0, str(ROOT / "benchmarks"))
    return importlib.import_module(name)


def diagnosed(sources: tuple[str, ...]):  # type: ignore[no-untyped-def]  # -> (RunModel, Diagnosis)
    """A run's model and diagnosis, read once a process whichever test asks: benchmarks/accuracy.py's cache, which the
    corpus tests share (a test reading many runs through it goes in their xdist group, "corpus"). An unreadable run
    raises its InputError each time."""
    return bench("accuracy").read(sources)


def case_files(case: Path) -> tuple[str, ...]:
    """A real corpus case's inputs: every file but its label."""
    return tuple(str(f) for f in sorted(case.iterdir()) if f.name != "truth.json")


@pytest.fixture(scope="session")
def corpus() -> Path:
    if not CORPUS.is_dir():
        pytest.skip("../shared/corpus is not beside the checkout")
    return CORPUS
