"""Command-line SOURCES -> readable inputs: files, .gz, directories, `-` (stdin), http(s) URLs of raw logs.

The kind of each input (log, DeepSpeed config, accelerate config, trainer_state.json, launch script) is sniffed
from its content. Inputs are only ever opened for reading.
"""
from __future__ import annotations

import codecs
import gzip
import io
import os
import re
import shutil
import stat
import sys
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request
import zlib
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

from diagnose.parsers.archives import MAX_MEMBERS, ArchiveError, archive_kind, unpack
from diagnose.parsers.errors import InputError
from diagnose.parsers.html_text import html_to_text, is_html
from diagnose.parsers.notebook import is_notebook, notebook_to_text

MAX_DOWNLOAD_BYTES = 512 * 1024 * 1024  # a raw log attachment larger than this is not a paste; ask for the file
DOWNLOAD_TIMEOUT_S = 20.0  # per read
DOWNLOAD_DEADLINE_S = 300.0  # for a whole body: 512 MiB at 1.7 MB/s
SNIFF_BYTES = 64 * 1024
# A directory walk reads every file whose content is text, whatever its name (`.o123`, `.jsonl`, `metrics.json`,
# an MMEngine `.py` config): binary files and program source are listed as skipped, with why.
SKIP_DIRS = {".git", "__pycache__", "node_modules", ".venv", "venv", "checkpoints"}


@dataclass(frozen=True)
class Input:
    name: str  # as the user named it (path, URL, `-`)
    path: Path | None  # local file to read (a temp file for downloads and stdin)
    explicit: bool  # named on the command line (errors are fatal) vs found in a directory (skipped quietly)
    wandb: object | None = None  # a parsers.wandb_api.WandbRef: fetched through the W&B API instead of read
    skip: str = ""  # why it was not read, where that was known before reading (an archive's member left out)


def resolve(sources: list[str], tmpdir: Path) -> list[Input]:
    from diagnose.parsers.wandb_api import parse_ref

    inputs: list[Input] = []
    for src in sources:
        ref = parse_ref(src)
        if ref is not None:
            inputs.append(Input(src, None, True, ref))
        elif src == "-":
            inputs.append(Input("<stdin>", _spool_stdin(tmpdir), True))
        elif src.startswith(("http://", "https://")):
            got = download(src, tmpdir)
            inputs.extend(archive_inputs(src, got, tmpdir) or [Input(src, got, True)])
        else:
            inputs.extend(_local(src, tmpdir))
    return inputs


def _local(src: str, tmpdir: Path | None = None) -> Iterator[Input]:
    path = Path(src)
    if not path.exists():
        raise InputError(src, "no such file or directory")
    if tmpdir is not None and stat.S_ISFIFO(path.stat().st_mode):  # `<(zcat log.gz)`, a named pipe: a stream
        yield Input(src, _spool_fifo(src, tmpdir), True)
        return
    if path.is_dir():
        from diagnose.parsers.wandb_offline import foreign_files, is_legacy_run_dir

        if is_legacy_run_dir(path):
            yield Input(src, path, True)
            yield from (Input(str(f), f, False) for f in foreign_files(path))
            return
        found = sorted(_walk(path, unread=True))
        if not found:
            raise InputError(src, "directory holds no log, config or launch-script files")
        for f in found:
            yield Input(str(f), f, False)
        return
    if tmpdir is not None and path.is_file() and (members := archive_inputs(src, path, tmpdir)):
        yield from members
        return
    yield Input(src, path, True)  # an unreadable file is skipped when it is read, like any other unreadable input


def archive_inputs(src: str, path: Path, tmpdir: Path, cap: int | None = None,
                   max_members: int = MAX_MEMBERS) -> list[Input]:
    """A zip or tar archive's files, unpacked into the run's temporary folder and named inside the archive's name
    (`logs.zip/rank0/train.log`), those left out carrying why (Input.skip); [] for a file that is no archive. Its
    files are read as a folder's are. `cap`: the bytes it may unpack to in all (GZIP_ABSOLUTE_CAP; a thread's
    budget leaves less)."""
    try:
        kind = archive_kind(head_bytes(path, 512))
    except OSError:
        return []
    if kind is None:
        return []
    dest = Path(tempfile.mkdtemp(prefix="archive-", dir=tmpdir))
    try:
        left_out = unpack(path, kind, dest, GZIP_RATIO_CAP, GZIP_RATIO_FLOOR,
                          GZIP_ABSOLUTE_CAP if cap is None else cap, max_members)
    except ArchiveError as e:
        raise InputError(src, str(e)) from None
    found = sorted(_walk(dest, unread=True))
    if not found and not left_out:
        raise InputError(src, "archive holds no log, config or launch-script files")
    return [Input(f"{src}/{f.relative_to(dest).as_posix()}", f, False) for f in found] + \
        [Input(f"{src}/{member}" if member else src, None, False, skip=why) for member, why in left_out]


def input_files(sources: list[str]) -> set[str]:
    """The real paths of every local file the sources name or a directory walk would read: what no output may
    replace."""
    found: set[str] = set()
    for src in sources:
        path = Path(src)
        if path.is_dir():
            found.update(os.path.realpath(f) for f in _walk(path))
        elif path.exists():
            found.add(os.path.realpath(path))
    return found


def _walk(root: Path, unread: bool = False) -> Iterator[Path]:
    """The files under `root` that are read: text that is not one of our own reports. `unread`: also the files
    that are not (binary, program source), so that reading lists them as skipped with why."""
    from diagnose.parsers.wandb_offline import find_run_files, foreign_files

    for dirpath, dirnames, filenames in os.walk(root):
        here = Path(dirpath)
        # A W&B directory or run directory: its transaction log holds everything, the console output too, so its
        # files/output.log is not read a second time; a file W&B does not write there is read as any other.
        runs = find_run_files(here) if here.name == "wandb" or here.name.startswith(("run-", "offline-run-")) else []
        if runs:
            for run in runs:
                yield run
                if run.is_dir():
                    yield from foreign_files(run)
            dirnames[:] = []
            continue
        dirnames[:] = sorted(d for d in dirnames if d not in SKIP_DIRS and not d.startswith("."))
        for name in sorted(filenames):
            p = Path(dirpath) / name
            if not p.is_file() and not p.is_dir() and p.exists():
                yield p  # a FIFO, socket or device: listed as skipped when read, never opened here
            elif p.is_file() and os.access(p, os.R_OK) and not is_own_report(head := head_bytes(p)):
                if unread or not (is_binary(head) or is_program(head, p)):
                    yield p


# Program source is not a log or a config: Python that compiles, with top-level definitions beside imports (a config
# file in Python, such as MMEngine's `model = dict(...)`, has no definitions; a log that pastes the training script
# before its output does not compile).
_DEFINITION = re.compile(rb"^(?:async\s+)?(?:def|class)\s+\w+", re.M)
_IMPORT = re.compile(rb"^(?:import\s+\w|from\s+[\w.]+\s+import\s)", re.M)
PROGRAM_MAX_BYTES = 4 * 1024 * 1024  # a larger file is no script: read as a log


def is_program(head: bytes, path: Path | None = None) -> bool:
    if not (_DEFINITION.search(head) and _IMPORT.search(head)):
        return False
    if path is None or path.stat().st_size > PROGRAM_MAX_BYTES:
        return False
    try:
        compile(path.read_bytes(), str(path), "exec", dont_inherit=True)
    except (SyntaxError, ValueError):
        return False
    return True


# What `diagnose report` and `compare` write, in each format: a report saved into the folder it reports on
# (`diagnose report logs/ -o logs/report.md`) is output, not a log, and is not read back on the next run (its quoted
# evidence lines would count twice). Named on the command line, it is read like any file.
_OWN_REPORT = re.compile(rb"\A\s*(?:## diagnose: (?:training-run report|comparing two training runs)\n"
                         rb"|# Run 1 of \d+: .*\n\n## diagnose: training-run report"
                         rb"|<!DOCTYPE html>\s*<html[^>]*>\s*<head>\s*<meta charset=\"utf-8\">\s*"
                         rb"<meta name=\"generator\" content=\"diagnose\">"
                         rb"|\{\s*\"schema_version\": \d+,\s*\"(?:verdict|runs|kind)\""
                         rb"|\xe2\x95\xad(?:\xe2\x94\x80)+ diagnose \xe2\x94\x80)")


def is_own_report(head: bytes) -> bool:
    return _OWN_REPORT.match(head) is not None


_JOB_ID = re.compile(r"(?:slurm|job)[-_.]?(\d{3,})|[-_.](\d{5,})\.(?:out|err|log)$", re.I)
# Suffixes of files that hold a run's output (job-id logs, the several-runs split); configs and scripts are context.
_LOG_LIKE = {".log", ".out", ".output", ".err", ".error", ".txt", ".gz", ".stdout", ".stderr", ".md", ".markdown", "",
             ".jsonl"}


def file_suffix(path: Path) -> str:
    """The file's extension, lower case; "" for none, and for a dot inside a name (`lr-3.0e-4-baseline`), which no
    extension looks like."""
    suffix = path.suffix.lower()
    return suffix if re.fullmatch(r"\.[a-z0-9]{1,10}", suffix) else ""


@dataclass(frozen=True)
class Run:
    """One training run found in a directory: its name (the directory or job id) and its files."""

    name: str
    sources: tuple[str, ...]


def runs_of(sources: Sequence[str]) -> list[Run]:
    """The runs a single directory holds (find_runs); any other sources are one run."""
    sources = [str(s) for s in sources]
    if len(sources) == 1 and Path(sources[0]).is_dir():
        return find_runs(Path(sources[0]))
    return [Run(" ".join(sources), tuple(sources))]


def find_runs(root: Path) -> list[Run]:
    """The runs a directory holds. Two or more subdirectories that hold files are separate runs (each looked into
    the same way, so `sample_logs/synthetic/` gives one run per scenario); files at a level with run
    subdirectories are shared context (configs, scripts) unless they are logs, which form a run of their own; in
    one directory, logs named with two or more job ids (`slurm-1234.out`, `slurm-1235.out`) are a run per id.
    A W&B directory of several run directories gives a run per directory. One run -> a list of one."""
    from diagnose.parsers.wandb_offline import find_run_files, is_legacy_run_dir

    # A W&B run directory is one run: its files/ and logs/ folders are parts of it, not runs of their own.
    if is_legacy_run_dir(root) or (root.name.startswith(("run-", "offline-run-")) and find_run_files(root)):
        return [Run(str(root), (str(root),))]
    subdirs = [d for d in sorted(root.iterdir()) if d.is_dir() and d.name not in SKIP_DIRS
               and not d.name.startswith(".") and not d.is_symlink()] if root.is_dir() else []
    with_files = [d for d in subdirs if next(iter(_walk(d)), None) is not None]
    readable = set(_walk_shallow(root))
    own = [p for p in sorted(root.iterdir()) if p.is_file() and p in readable]
    if len(with_files) >= 2:
        runs = [run for d in with_files for run in find_runs(d)]
        logs = [p for p in own if file_suffix(p) in _LOG_LIKE]
        context = tuple(str(p) for p in own if p not in logs)
        runs = [Run(r.name, r.sources + context) for r in runs]
        return ([Run(str(root), tuple(str(p) for p in own))] if logs else []) + runs
    by_job: dict[str, list[Path]] = {}
    for p in own:
        m = _JOB_ID.search(p.name)
        if m and file_suffix(p) in _LOG_LIKE:
            by_job.setdefault(m.group(1) or m.group(2), []).append(p)
    if len(by_job) >= 2:
        shared = tuple(str(p) for p in own if not any(p in v for v in by_job.values()))
        extra = tuple(str(d) for d in with_files)
        return [Run(f"{root / ('job ' + job)}", tuple(str(p) for p in files) + shared + extra)
                for job, files in sorted(by_job.items())]
    return [Run(str(root), (str(root),))]


def _walk_shallow(root: Path) -> Iterator[Path]:
    """The files of one directory level that a walk would read."""
    for p in _walk(root):
        if p.parent == root:
            yield p


FIFO_WRITER_WAIT_S = 10.0  # a named pipe with nobody writing to it would block forever


def _spool_fifo(src: str, tmpdir: Path) -> Path:
    """Copy a named pipe to a temporary file, failing (not hanging) when no writer shows up."""
    import fcntl
    import select

    dest = tmpdir / f"fifo-{len(list(tmpdir.iterdir()))}.log"
    fd = os.open(src, os.O_RDONLY | os.O_NONBLOCK)  # opening for reading never blocks this way
    try:
        ready, _, _ = select.select([fd], [], [], FIFO_WRITER_WAIT_S)
        first = os.read(fd, 1 << 16) if ready else b""
        if not first:
            raise InputError(src, f"a named pipe with no writer (nothing in {FIFO_WRITER_WAIT_S:.0f} s)")
        fcntl.fcntl(fd, fcntl.F_SETFL, fcntl.fcntl(fd, fcntl.F_GETFL) & ~os.O_NONBLOCK)
        with open(dest, "wb") as out:
            out.write(first)
            while block := os.read(fd, 1 << 20):
                out.write(block)
    finally:
        os.close(fd)
    return dest


def _spool_stdin(tmpdir: Path) -> Path:
    dest = tmpdir / "stdin.log"
    with open(dest, "wb") as out:
        shutil.copyfileobj(sys.stdin.buffer, out)
    return dest


class HostRedirects(urllib.request.HTTPRedirectHandler):
    """Redirects followed only to hosts `allowed` accepts; any other is an error, not a request."""

    def __init__(self, allowed: Callable[[str], bool]) -> None:
        self.allowed = allowed

    def redirect_request(self, req: urllib.request.Request, fp: Any, code: int, msg: str, headers: Any,
                         newurl: str) -> urllib.request.Request | None:
        host = urllib.parse.urlparse(newurl).hostname or ""
        if not self.allowed(host):
            raise urllib.error.URLError(f"redirected to {host or newurl!r}, a host it is not fetched from")
        return super().redirect_request(req, fp, code, msg, headers, newurl)


def download(url: str, tmpdir: Path, *, max_bytes: int = MAX_DOWNLOAD_BYTES, deadline: float | None = None,
             allowed_hosts: Callable[[str], bool] | None = None) -> Path:
    """Fetch a raw log with a size cap, a timeout per read and one for the whole body (DOWNLOAD_DEADLINE_S, or the
    monotonic `deadline` given: a server that sends a byte now and then is cut off); a gzip body is kept
    compressed (sniffed later). With `allowed_hosts`, redirects go only to the hosts it accepts."""
    dest = tmpdir / f"download-{len(list(tmpdir.iterdir()))}.log"
    req = urllib.request.Request(url, headers={"User-Agent": "diagnose/0.1"})
    until = time.monotonic() + DOWNLOAD_DEADLINE_S
    until = min(deadline, until) if deadline else until
    cap = f"larger than the {max_bytes / 2**20:g} MiB download cap; download it and pass the file"
    opener = urllib.request.build_opener(HostRedirects(allowed_hosts or (lambda host: True)))
    try:
        with opener.open(req, timeout=DOWNLOAD_TIMEOUT_S) as resp, open(dest, "wb") as out:
            length = resp.headers.get("Content-Length")
            if length and length.isdigit() and int(length) > max_bytes:
                raise InputError(url, cap)
            total = 0
            # read1: what has arrived, at most 1 MiB (read(n) waits for all n bytes, however slowly they come)
            while block := resp.read1(1 << 20):
                total += len(block)
                if total > max_bytes:
                    raise InputError(url, cap)
                out.write(block)
                if time.monotonic() > until:
                    raise InputError(url, f"still downloading after {DOWNLOAD_DEADLINE_S:g} s (or past the thread's "
                                          "time budget); download it and pass the file")
    except urllib.error.HTTPError as e:
        raise InputError(url, f"HTTP {e.code} {e.reason}") from None
    except (urllib.error.URLError, TimeoutError, OSError) as e:
        reason = getattr(e, "reason", e)
        raise InputError(url, f"download failed ({reason})") from None
    return dest


def head_bytes(path: Path, n: int = SNIFF_BYTES) -> bytes:
    """The first n bytes of the file's text: gzip read through, UTF-16 as UTF-8."""
    with open(path, "rb") as fh:
        head = fh.read(n)
        if (encoding := utf16_encoding(head)) is not None:
            return codecs.decode(head[:len(head) - len(head) % 2], encoding, "replace").encode("utf-8")[:n]
        if head[:2] != b"\x1f\x8b":
            return head
        # A gzip stream's first n bytes, from as much of the file as that takes: a decompressor object returns
        # what it has where the file is cut short, and never more than n bytes however well it compresses.
        fh.seek(0)
        inflate = zlib.decompressobj(16 + zlib.MAX_WBITS)
        out = b""
        try:
            while len(out) < n and (block := fh.read(1 << 16)):
                out += inflate.decompress(block, n - len(out))
                while inflate.unconsumed_tail and len(out) < n:
                    out += inflate.decompress(inflate.unconsumed_tail, n - len(out))
        except zlib.error:
            return out or head  # corrupt: what came out, else the raw bytes (sniffed as binary)
        return out


def is_binary(head: bytes) -> bool:
    """NUL bytes or mostly non-text bytes (checkpoints, tensors, archives) in the first block. A run of NULs at the
    end is what a crashed node leaves in its log, not a sign of a binary file; so is one between two stretches of
    text, where the job was started again and appended to the same file (a binary file's NULs are scattered)."""
    head = _NUL_RUN.sub(b"", head.rstrip(b"\x00"))
    if not head:
        return False
    if b"\x00" in head:
        return True
    sample = head[:8192]
    control = len(sample.translate(None, _TEXT_BYTES))  # bytes.translate deletes in C: no Python loop per byte
    return (len(sample) - control) / len(sample) < 0.85


# A crashed write's hole: file-system blocks of zeros (512 bytes and up) are what the page cache had not written back.
_NUL_RUN = re.compile(rb"\x00{512,}")
_TEXT_BYTES = bytes([9, 10, 13, 27, *range(32, 256)])


# A compressed input is checked as it streams, against a ratio and an absolute cap, and refused the moment it passes
# either. Real logs compress 10-50x (NCCL INFO spam towards 100x); 200x over the bytes read so far, once past
# GZIP_RATIO_FLOOR (below it a small file's header and first lines can compress better than the log as a whole),
# is a bomb: 10 GB of zeros in a 10 MB file is refused after 64 MiB, not after 2 GB.
GZIP_RATIO_CAP = 200
GZIP_RATIO_FLOOR = 64 * 1024 * 1024
# Whatever the ratio: the size the report's memory guard is measured at (README, performance); a larger log should
# be passed uncompressed, where its size is known before reading.
GZIP_ABSOLUTE_CAP = 8 * 1024 * 1024 * 1024


class _CappedGzip(io.RawIOBase):
    """A gzip stream that stops with an InputError past its caps, and ends quietly (marking `truncated`) where a
    crashed writer cut the file short."""

    def __init__(self, path: Path) -> None:
        self._raw = open(path, "rb")  # noqa: SIM115 - closed with the stream
        self._gz = gzip.GzipFile(fileobj=self._raw, mode="rb")
        self._name = str(path)
        self._read = 0
        self.truncated = False

    def readable(self) -> bool:
        return True

    def readinto(self, buf: "memoryview | bytearray") -> int:  # type: ignore[override]  # io's stub: WriteableBuffer
        try:
            data = self._gz.read1(len(buf))  # one block at a time: a cut stream still gives what came before
        except (EOFError, zlib.error) as e:  # cut short mid-stream: keep what was read, say so
            self.truncated = True
            if isinstance(e, zlib.error) and self._read == 0:
                raise InputError(self._name, f"corrupt gzip ({e})") from None
            return 0
        except gzip.BadGzipFile as e:
            raise InputError(self._name, f"corrupt gzip ({e})") from None
        self._read += len(data)
        if self._read > GZIP_ABSOLUTE_CAP:
            raise InputError(self._name, f"expands past {GZIP_ABSOLUTE_CAP >> 30} GiB: refused (pass a log this "
                                         "large uncompressed)")
        if self._read > GZIP_RATIO_FLOOR and self._read > GZIP_RATIO_CAP * max(self._raw.tell(), 1):
            raise InputError(self._name, f"expands more than {GZIP_RATIO_CAP}x ({self._read >> 20} MiB from "
                                         f"{max(self._raw.tell(), 1) >> 10} KiB): refused as a compression bomb")
        buf[: len(data)] = data
        return len(data)

    def close(self) -> None:
        self._gz.close()
        self._raw.close()
        super().close()


def open_input(path: Path) -> BinaryIO:
    """The file's bytes as UTF-8 text: gzip read through (capped), UTF-16 turned into UTF-8 as it streams."""
    fh = open(path, "rb")
    head = fh.read(UTF16_SNIFF_BYTES)
    if head[:2] == b"\x1f\x8b":
        fh.close()
        return io.BufferedReader(_CappedGzip(path), buffer_size=1 << 20)
    fh.seek(0)
    if (encoding := utf16_encoding(head)) is not None:
        return io.BufferedReader(_Utf16(fh, encoding), buffer_size=1 << 20)
    if is_html(head) and os.fstat(fh.fileno()).st_size <= HTML_MAX_BYTES:
        with fh:
            return io.BytesIO(html_to_text(fh.read()))
    if is_notebook(head) and os.fstat(fh.fileno()).st_size <= HTML_MAX_BYTES:
        text = notebook_to_text(fh.read())
        if text is not None:
            fh.close()
            return io.BytesIO(text)
        fh.seek(0)  # JSON that is no notebook: read as it is
    return fh


# A saved web page is read for the text it shows (parsers/html_text.py), a notebook for its cells and outputs
# (parsers/notebook.py), whole: one larger is read as it is.
HTML_MAX_BYTES = 64 * 1024 * 1024
# Windows PowerShell 5's `>` and `Out-File` write UTF-16 (little-endian, with a byte-order mark): a log saved that way
# has a NUL after every ASCII character and would read as a binary file. It is read as the text it is.
UTF16_SNIFF_BYTES = 4096
UTF16_NUL_SHARE = 0.9  # without a byte-order mark: at least 90% of the bytes on one side of each pair are NUL


def utf16_encoding(head: bytes) -> str | None:
    """The codec of a UTF-16 text's first bytes (its byte-order mark, else ASCII text with a NUL beside each
    character), or None."""
    sample = head[:UTF16_SNIFF_BYTES - UTF16_SNIFF_BYTES % 2]
    even, odd = sample[2::2], sample[3::2]
    if head[:2] in (b"\xff\xfe", b"\xfe\xff"):
        # The mark says the order (the codec drops it), where a NUL stands beside a character (a line end's, if
        # nothing else): `\xff\xfe` before plain bytes is a UTF-8 file's damage, read as such.
        high, low = (odd, even) if head[:2] == b"\xff\xfe" else (even, odd)
        return "utf-16" if high.count(0) > low.count(0) else None
    if len(sample) < 4:
        return None
    share = len(even) * UTF16_NUL_SHARE
    if odd.count(0) >= share and even.count(0) == 0:
        return "utf-16-le"
    if even.count(0) >= share and odd.count(0) == 0:
        return "utf-16-be"
    return None


class _Utf16(io.RawIOBase):
    """A UTF-16 file's text as UTF-8 bytes, decoded as it is read (an odd last byte becomes U+FFFD)."""

    def __init__(self, raw: BinaryIO, encoding: str) -> None:
        self._raw = raw
        self._decode = codecs.getincrementaldecoder(encoding)(errors="replace")
        self._pending = b""
        self._done = False

    def readable(self) -> bool:
        return True

    def readinto(self, buf: "memoryview | bytearray") -> int:  # type: ignore[override]  # io's stub: WriteableBuffer
        while not self._pending and not self._done:
            block = self._raw.read(1 << 20)
            self._done = not block
            self._pending = self._decode.decode(block, final=self._done).encode("utf-8")
        n = min(len(buf), len(self._pending))
        buf[:n] = self._pending[:n]
        self._pending = self._pending[n:]
        return n

    def close(self) -> None:
        self._raw.close()
        super().close()


def gzip_truncated(fh: BinaryIO) -> bool:
    raw = getattr(fh, "raw", None)
    return bool(getattr(raw, "truncated", False))


def read_text(path: Path) -> str:
    with open_input(path) as fh:
        return io.TextIOWrapper(fh, encoding="utf-8", errors="replace").read()


def temp_dir() -> tempfile.TemporaryDirectory[str]:
    return tempfile.TemporaryDirectory(prefix="diagnose-")
