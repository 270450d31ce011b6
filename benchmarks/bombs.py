"""Hostile inputs against `diagnose report`, `diagnose serve` and `diagnose comment`: peak RSS and time for each
(issue 21, must 2; issue 32, must 9).

The inputs, written once into --dir (reused while their sizes match):
  line-250mb.log     one 250 MB line, no newline
  line-1gb.log       one 1 GB line
  line-1gb.log.gz    the same line gzipped
  zeros-10gb.gz      10 GB of zeros in ~10 MB (gzip members of 1 MiB each)
  newlines-2gib.gz   2 GiB of newlines, the same way
  tqdm-300mb.log     300 MB of tqdm redraws separated by carriage returns, no newline
  blank-1gb.log      1 GB of newlines, uncompressed
  cr-100mb.log       100 MiB of bare carriage returns; cr-500mb.log 500 MiB; cr-100mb.log.gz the first gzipped
  newlines-2gib.zip  2 GiB of newlines in a zip beside a real log; zeros-2gib.tar.gz 2 GiB of zeros in a tar.gz

Each is given to `diagnose report FILE --format json -o OUT` in a fresh process (peak RSS from wait4) and uploaded to
a running server (its RSS sampled from /proc every 50 ms, and 2 s after it answered: what it still holds); the gzip
files also go up twice at once. Then hostile GitHub threads (THREADS) are read by `diagnose comment URL` from the
API's loopback stand-in. Prints the exit code or HTTP status, the first line of the answer, seconds and peak RSS,
against the bars: 1 GiB and 30 s.

    python benchmarks/bombs.py [--dir /tmp/diagnose-bombs] [--only NAME ...] [--no-server] [--threads NAME ...]
"""
from __future__ import annotations

import argparse
import gzip
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RSS_BAR_MB = 1024
TIME_BAR_S = 30.0
HELD_AFTER_S = 2.0
MiB = 1 << 20


def _write_repeated(path: Path, piece: bytes, size: int) -> None:
    block = piece * (MiB // len(piece) + 1)
    with open(path, "wb") as out:
        left = size
        while left > 0:
            out.write(block[: min(left, MiB)])
            left -= MiB


def _gzip_members(path: Path, piece: bytes, size: int) -> None:
    member = gzip.compress(piece * (MiB // len(piece)), compresslevel=9)
    with open(path, "wb") as out:
        for _ in range(size // MiB):
            out.write(member)


def _gzip_file(src: Path, dest: Path) -> None:
    with open(src, "rb") as fh, gzip.open(dest, "wb", compresslevel=9) as gz:
        while block := fh.read(16 * MiB):
            gz.write(block)


def _zip_bomb(path: Path, size: int) -> None:
    import zipfile

    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as z:
        z.write(ROOT / "sample_logs" / "ds_zero0" / "train.log", "run/train.log")
        with z.open("run/big.log", "w", force_zip64=True) as out:
            block = b"\n" * MiB
            for _ in range(size // MiB):
                out.write(block)


class _Zeros:
    def __init__(self, size: int) -> None:
        self.left = size

    def read(self, n: int = -1) -> bytes:
        n = self.left if n < 0 else min(n, self.left)
        self.left -= n
        return b"\0" * n


def _tar_bomb(path: Path, size: int) -> None:
    import tarfile

    with tarfile.open(path, "w:gz", compresslevel=9) as t:
        info = tarfile.TarInfo("run/zeros.log")
        info.size = size
        t.addfile(info, _Zeros(size))  # read() is all addfile asks of it


def _tqdm(path: Path, size: int) -> None:
    with open(path, "w", buffering=MiB) as out:
        written, n, total = 0, 0, 10_000_000
        while written < size:
            n += 1
            pct = n * 100 // total
            bar = "#" * (pct // 10) + " " * (10 - pct // 10)
            text = f"\r{pct:3d}%|{bar}| {n}/{total} [{n // 3600:02d}:{n % 60:02d}<99:00:00, {1 + n % 7 / 10:.2f}it/s]"
            out.write(text)
            written += len(text)


INPUTS: dict[str, tuple[int, Callable[[Path], None]]] = {
    "line-250mb.log": (250_000_000, lambda p: _write_repeated(p, b"abcdefgh", 250_000_000)),
    "line-1gb.log": (1_000_000_000, lambda p: _write_repeated(p, b"abcdefgh", 1_000_000_000)),
    "line-1gb.log.gz": (0, lambda p: _gzip_file(p.with_suffix(""), p)),
    "zeros-10gb.gz": (0, lambda p: _gzip_members(p, b"\0", 10 * 1024 * MiB)),
    "newlines-2gib.gz": (0, lambda p: _gzip_members(p, b"\n", 2 * 1024 * MiB)),
    "tqdm-300mb.log": (300_000_000, lambda p: _tqdm(p, 300_000_000)),
    "blank-1gb.log": (1_000_000_000, lambda p: _write_repeated(p, b"\n", 1_000_000_000)),
    # issue 32: bare carriage returns (each run of them one redraw), plain and gzipped
    "cr-100mb.log": (100 * MiB, lambda p: _write_repeated(p, b"\r", 100 * MiB)),
    "cr-500mb.log": (500 * MiB, lambda p: _write_repeated(p, b"\r", 500 * MiB)),
    "cr-100mb.log.gz": (0, lambda p: _gzip_file(p.with_suffix(""), p)),
    # archives: a zip of 2 GiB of newlines beside a real log, a tar.gz of 2 GiB of zeros
    "newlines-2gib.zip": (0, lambda p: _zip_bomb(p, 2 * 1024 * MiB)),
    "zeros-2gib.tar.gz": (0, lambda p: _tar_bomb(p, 2 * 1024 * MiB)),
}
# Issue 32: hostile GitHub threads, read by `diagnose comment URL` (a dry run) from a loopback stand-in of the API
# (tests/github_standin.py): one post of 65,536 newlines, a ~100 KB zip attachment of 100 MiB of carriage returns,
# a gist of 300 files, pathological bodies (runs of backticks, `<details>`, `[`).
THREADS = ("65536-newlines", "cr-zip", "gist-300", "pathological")


def make(directory: Path, names: list[str]) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    for name in names:
        path = directory / name
        size, write = INPUTS[name]
        if path.exists() and (size == 0 or path.stat().st_size >= size):
            continue
        if name.endswith(".log.gz"):
            make(directory, [name[:-3]])
        print(f"writing {name} ...", file=sys.stderr, flush=True)
        write(path)


def _thread(gh: object, name: str) -> str:
    """The stand-in thread for one hostile case; its URL."""
    import io
    import zipfile

    base = (ROOT / "sample_logs" / "ds_zero0" / "train.log").read_text()
    fence = "```\n" + base + "\n```"
    n = 100 + THREADS.index(name)
    if name == "65536-newlines":
        gh.add_issue(n, name, fence, "alice")  # type: ignore[attr-defined]
        gh.add_comment(n, "\n" * 65_536, "mallory")  # type: ignore[attr-defined]
    elif name == "cr-zip":
        zipped = io.BytesIO()
        with zipfile.ZipFile(zipped, "w", zipfile.ZIP_DEFLATED) as z:
            z.writestr("train.log", b"\r" * (100 * MiB))
        gh.add_issue(n, name, fence + "\n" + gh.attach("logs.zip", zipped.getvalue()), "alice")  # type: ignore
    elif name == "gist-300":
        gh.state.gists["ab12ab12ab12"] = {"id": "ab12ab12ab12", "files": {  # type: ignore[attr-defined]
            f"rank{i:03d}.log": {"filename": f"rank{i:03d}.log", "content": base, "truncated": False}
            for i in range(300)}}
        gh.add_issue(n, name, "all ranks: https://gist.github.com/alice/ab12ab12ab12", "alice")  # type: ignore
    else:
        body = fence + "\n" + "`" * 65_536 + "\n" + "<details>" * 10_000 + "\n" + "[" * 65_536 + "\n" \
            + "~~~\n" * 20_000 + "loss 1.0\n" * 20_000
        gh.add_issue(n, name, body, "alice")  # type: ignore[attr-defined]
    return f"{gh.url}/{gh.owner}/{gh.repo_name}/issues/{n}"  # type: ignore[attr-defined]


def run_threads(names: tuple[str, ...]) -> list[tuple[str, int, str, float, float]]:
    sys.path.insert(0, str(ROOT / "tests"))
    from github_standin import StandIn

    rows = []
    with StandIn() as gh, tempfile.TemporaryFile() as reply:
        env = {k: v for k, v in os.environ.items() if k not in ("GITHUB_TOKEN", "GH_TOKEN")} | gh.env()
        for name in names:
            url = _thread(gh, name)
            reply.seek(0)
            reply.truncate()
            t0 = time.perf_counter()
            child = subprocess.Popen([sys.executable, "-m", "diagnose", "comment", url], cwd=ROOT, env=env,
                                     stdout=reply, stderr=subprocess.PIPE)
            assert child.stderr is not None
            err = child.stderr.read().decode("utf-8", "replace")
            _, status, usage = os.wait4(child.pid, 0)
            wall = time.perf_counter() - t0
            said = _first_line(err) or f"a reply of {reply.tell():,} bytes"
            rows.append((name, os.waitstatus_to_exitcode(status), said, wall, usage.ru_maxrss / 1024))
    return rows


def _first_line(text: str) -> str:
    return (text.strip().splitlines() or [""])[0][:90]


def run_cli(path: Path, out: Path) -> tuple[int, str, float, float]:
    t0 = time.perf_counter()
    child = subprocess.Popen([sys.executable, "-m", "diagnose", "report", str(path), "--format", "json", "-o",
                              str(out), "--force"], cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    assert child.stderr is not None
    err = child.stderr.read().decode("utf-8", "replace")
    _, status, usage = os.wait4(child.pid, 0)
    wall = time.perf_counter() - t0
    code = os.waitstatus_to_exitcode(status)
    said = _first_line(err)
    if code == 0 and out.exists():
        notes = [s.get("note") for s in json.loads(out.read_text()).get("sources", []) if s.get("note")]
        said = _first_line("; ".join(notes)) or "report written"
    return code, said, wall, usage.ru_maxrss / 1024


def _rss_mb(pid: int) -> float:
    try:
        with open(f"/proc/{pid}/status") as fh:
            return next(int(line.split()[1]) / 1024 for line in fh if line.startswith("VmRSS"))
    except (OSError, StopIteration):
        return 0.0


def _upload(base: str, path: Path) -> tuple[int, str]:
    import httpx

    with open(path, "rb") as fh:
        r = httpx.post(f"{base}/api/diagnose", files=[("files", (path.name, fh))], timeout=300)
    try:
        body = r.json()
        said = body.get("error") or "; ".join(s.get("note", "") for s in body.get("sources", []) if s.get("note"))
    except ValueError:
        said = r.text
    return r.status_code, _first_line(said or "report")


def run_server(paths: list[Path], concurrent: list[Path]) -> list[tuple[str, int, str, float, float]]:
    import httpx

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    tmp = Path(tempfile.mkdtemp(prefix="diagnose-bombs-serve-"))
    proc = subprocess.Popen([sys.executable, "-m", "diagnose", "serve", "--port", str(port), "--max-upload-mb",
                             "1100", "--no-access-log"], cwd=ROOT, env={**os.environ, "TMPDIR": str(tmp)},
                            stderr=subprocess.DEVNULL)
    base = f"http://127.0.0.1:{port}"
    rows = []
    try:
        for _ in range(400):
            try:
                httpx.get(f"{base}/healthz", timeout=1)
                break
            except httpx.TransportError:
                time.sleep(0.05)
        jobs = [(p.name, [p]) for p in paths] + [(f"2 x {p.name} at once", [p, p]) for p in concurrent]
        for name, files in jobs:
            peak = [_rss_mb(proc.pid)]
            done = threading.Event()

            def sample() -> None:
                while not done.is_set():
                    peak[0] = max(peak[0], _rss_mb(proc.pid))
                    time.sleep(0.05)

            sampler = threading.Thread(target=sample, daemon=True)
            sampler.start()
            t0 = time.perf_counter()
            with ThreadPoolExecutor(len(files)) as pool:
                answers = list(pool.map(lambda p: _upload(base, p), files))
            wall = time.perf_counter() - t0
            done.set()
            sampler.join()
            time.sleep(HELD_AFTER_S)  # what the server still holds once it has answered (issue 32)
            held = _rss_mb(proc.pid)
            rows.append((name, answers[0][0], f"{answers[0][1]} (holds {held:.0f} MB after)", wall, peak[0]))
    finally:
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=30)
        subprocess.run(["rm", "-rf", str(tmp)], check=False)
    return rows


def _row(where: str, name: str, code: int, said: str, wall: float, rss: float) -> str:
    ok = "ok" if rss <= RSS_BAR_MB and wall <= TIME_BAR_S else "OVER"
    return f"{where:6} {name:32} {code:>4} {wall:7.1f} s {rss:8.0f} MB  {ok:4}  {said}"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dir", type=Path, default=Path(tempfile.gettempdir()) / "diagnose-bombs")
    ap.add_argument("--only", nargs="*", choices=sorted(INPUTS), default=None)
    ap.add_argument("--no-server", action="store_true")
    ap.add_argument("--threads", nargs="*", choices=THREADS, default=None,
                    help="the hostile threads to read (default all; none with --only)")
    args = ap.parse_args()
    names = args.only or list(INPUTS)
    threads = tuple(args.threads if args.threads is not None else (() if args.only else THREADS))
    make(args.dir, names)
    print(f"{'where':6} {'input':32} {'exit':>4} {'time':>9} {'peak RSS':>11}  bars ({RSS_BAR_MB} MB, "
          f"{TIME_BAR_S:g} s), what it said", flush=True)
    over = 0
    with tempfile.TemporaryDirectory() as tmp:
        for name in names:
            code, said, wall, rss = run_cli(args.dir / name, Path(tmp) / "out.json")
            over += rss > RSS_BAR_MB or wall > TIME_BAR_S
            print(_row("report", name, code, said, wall, rss), flush=True)
    if not args.no_server:
        gz = [args.dir / n for n in names if n.endswith(".log.gz")]
        for name, code, said, wall, rss in run_server([args.dir / n for n in names], gz):
            over += rss > RSS_BAR_MB or wall > TIME_BAR_S
            print(_row("serve", name, code, said, wall, rss), flush=True)
    for name, code, said, wall, rss in run_threads(threads) if threads else []:
        over += rss > RSS_BAR_MB or wall > TIME_BAR_S
        print(_row("thread", name, code, said, wall, rss), flush=True)
    return 1 if over else 0


if __name__ == "__main__":
    raise SystemExit(main())
