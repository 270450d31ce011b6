"""`diagnose serve`: an upload page and API that return the report for dropped logs or a W&B run URL.

Starlette on uvicorn: a handful of routes needs no request models or OpenAPI (FastAPI's reasons to exist), and
Starlette gives the raw request stream, which the upload parser (python-multipart's streaming MultipartParser)
writes straight to disk. Each upload goes to a private temporary directory under generated names (the client's file
name is only a label); the analysis runs in a bounded thread pool off the event loop; reports live under
unguessable ids and are deleted after --keep-minutes and at shutdown.
"""
from __future__ import annotations

import asyncio
import contextlib
import re
import secrets
import shutil
import tempfile
import time
from collections.abc import AsyncIterator, Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from python_multipart.exceptions import MultipartParseError
from python_multipart.multipart import MultipartParser, parse_options_header
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import FileResponse, HTMLResponse, JSONResponse, Response
from starlette.routing import Route

from diagnose.parsers.errors import InputError

# The page and the reports run their own inline scripts (plotly.js is inlined) and load nothing from elsewhere.
CSP = ("default-src 'none'; script-src 'unsafe-inline' 'unsafe-eval'; style-src 'unsafe-inline'; img-src data:; "
       "font-src data:; connect-src 'self'; frame-src 'self' blob:; form-action 'self'; base-uri 'none'")
FIELD_MAX_BYTES = 64 * 1024  # a form field (the W&B URL) is a line, not a file
MAX_FILES = 200
# Analyses allowed to wait by default before new uploads are refused with 503 (and Retry-After): a burst of 20
# uploads queues whole (issue 35: with 4 per worker, 2 workers answered half of such a burst 503). A waiting upload
# holds its temporary files on disk, not memory.
DEFAULT_QUEUE = 20
RETRY_AFTER_S = 10
SWEEP_S = 30.0


@dataclass(frozen=True)
class ServeConfig:
    max_upload_mb: float = 512.0
    keep_minutes: float = 60.0
    workers: int = 2
    queue: int | None = None  # analyses allowed to wait (default DEFAULT_QUEUE)
    token: str | None = None
    redact_secrets: bool = True
    # An upload's whole body must arrive within this many seconds: a client that trickles bytes is cut off (its
    # connection and its temporary files freed) instead of holding a queue slot.
    body_timeout_s: float = 120.0
    access_log: bool = True
    # A GitHub thread is read with the token the uploader sends (the `github_token` field; none: public threads
    # only), never with this process's GITHUB_TOKEN, unless the server is started to lend it to every upload.
    github_token_for_uploads: bool = False


@dataclass
class _Report:
    created: float
    directory: Path


@dataclass
class _State:
    config: ServeConfig
    root: Path
    pool: ThreadPoolExecutor
    reports: dict[str, _Report] = field(default_factory=dict)
    pending: int = 0  # analyses running or waiting


class UploadError(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


def label(file_name: bytes | str | None, n: int) -> str:
    """A client's file name as a label only: its last path component, printable, at most 120 characters."""
    text = file_name.decode("utf-8", "replace") if isinstance(file_name, bytes) else (file_name or "")
    base = re.split(r"[\\/]", text)[-1]
    base = re.sub(r"[^\w.+\-@ ]", "_", base).strip(" .")[:120]
    return base or f"upload-{n}"


class _MultipartSink:
    """Receives a multipart body as it streams in: each file part to its own generated name in `directory`."""

    def __init__(self, boundary: bytes, directory: Path, max_bytes: int) -> None:
        self.directory = directory
        self.max_bytes = max_bytes
        self.received = 0
        self.files: list[tuple[str, Path]] = []  # (label, path on disk)
        self.fields: dict[str, str] = {}
        self._headers: dict[bytes, bytes] = {}
        self._name = b""
        self._value = b""
        self._out: Any = None
        self._field_name: str | None = None
        self._field = bytearray()
        self.parser = MultipartParser(boundary, {
            "on_part_begin": self._begin, "on_header_field": self._header_field,
            "on_header_value": self._header_value, "on_header_end": self._header_end,
            "on_headers_finished": self._headers_done, "on_part_data": self._data, "on_part_end": self._end,
            "on_end": self._finished})
        self.complete = False  # the closing boundary arrived: a body cut or garbled before it is no upload

    def feed(self, chunk: bytes) -> None:
        self.received += len(chunk)
        if self.received > self.max_bytes:
            raise UploadError(413, f"upload larger than {self.max_bytes // (1024 * 1024)} MB")
        self.parser.write(chunk)

    def _finished(self) -> None:
        self.complete = True

    def _begin(self) -> None:
        self._headers, self._out, self._field_name, self._field = {}, None, None, bytearray()

    def _header_field(self, data: bytes, start: int, end: int) -> None:
        self._name += data[start:end]

    def _header_value(self, data: bytes, start: int, end: int) -> None:
        self._value += data[start:end]

    def _header_end(self) -> None:
        self._headers[self._name.lower()] = self._value
        self._name, self._value = b"", b""

    def _headers_done(self) -> None:
        _, options = parse_options_header(self._headers.get(b"content-disposition", b""))
        name = options.get(b"name", b"").decode("utf-8", "replace")
        if b"filename" in options:
            if len(self.files) >= MAX_FILES:
                raise UploadError(400, f"more than {MAX_FILES} files in one upload")
            path = self.directory / f"{len(self.files):03d}-{secrets.token_hex(6)}"
            self.files.append((label(options[b"filename"], len(self.files)), path))
            self._out = open(path, "wb")  # noqa: SIM115 - closed at the part's end
        else:
            self._field_name = name

    def _data(self, data: bytes, start: int, end: int) -> None:
        if self._out is not None:
            self._out.write(data[start:end])
        elif self._field_name is not None:
            self._field += data[start:end]
            if len(self._field) > FIELD_MAX_BYTES:
                raise UploadError(400, f"form field {self._field_name!r} is too long")

    def _end(self) -> None:
        if self._out is not None:
            self._out.close()
            self._out = None
        elif self._field_name is not None:
            self.fields[self._field_name] = self._field.decode("utf-8", "replace").strip()

    def close(self) -> None:
        if self._out is not None:
            self._out.close()


def wandb_field(text: str) -> object:
    """The page's URL field, validated as a run reference and nothing else: a GitHub thread on github.com (or
    GITHUB_SERVER_URL) -> its ThreadRef (issue 24), a run URL on the W&B host this server is configured for
    (WANDB_BASE_URL, else wandb.ai) or `entity/project/[runs/]id` -> a WandbRef. Never a server path, `-`, a
    `file:` URL or any other URL; the server's file system is not consulted (no path can be probed)."""
    import os
    from urllib.parse import urlparse

    from diagnose.parsers.wandb_api import _PATH, PUBLIC_HOSTS, WandbRef, parse_ref

    from diagnose.parsers.github import parse_thread_url

    text = text.strip()
    if (thread := parse_thread_url(text)) is not None:  # github.com (or GITHUB_SERVER_URL) only, read by its API
        return thread
    if text.startswith(("http://", "https://")):
        ref = parse_ref(text)
        if ref is None:
            raise InputError(text[:200], "neither a W&B run URL (https://wandb.ai/<entity>/<project>/runs/<id>) nor "
                                         "a GitHub issue, pull request or discussion URL")
        configured = os.environ.get("WANDB_BASE_URL")
        host = urlparse(ref.base_url).netloc if ref.base_url else None
        allowed = urlparse(configured).netloc if configured else None
        public = {h for h in PUBLIC_HOSTS} | {"api.wandb.ai"}
        if host != allowed and not (host is None and (allowed is None or allowed in public)):
            raise InputError(text[:200], "a W&B run on another host than the one this server reads from")
        return ref
    m = _PATH.match(text)
    if m is None or text.startswith("/") or text.count("/") not in (2, 3) or ".." in text \
            or (text.count("/") == 3 and "/runs/" not in text):
        raise InputError(text[:200], "not a W&B run (a run URL, or entity/project/run)")
    return WandbRef(m["entity"], m["project"], m["run"], None)


def analyse(files: list[tuple[str, Path]], wandb: str | None, out: Path, redact_secrets: bool,
            workdir: Path, github_token: str | None = None) -> dict[str, Any]:
    """The report for one upload, through the same pipeline as `diagnose report`: written in every format the
    registry holds (reports/formats.py) into `out`, with the recommended config patch."""
    from diagnose.pipeline import Options
    from diagnose.pipeline import analyse as run_pipeline
    from diagnose.parsers.sources import Input
    from diagnose.reports import config_patch, redact
    from diagnose.reports.formats import FORMATS

    from diagnose.parsers.github import ThreadRef

    inputs = [Input(name, path, True) for name, path in files]
    threads: list[str] = []
    if wandb:
        ref = wandb_field(wandb)
        if isinstance(ref, ThreadRef):
            threads.append(ref.url)
        else:
            inputs.append(Input(wandb, None, True, ref))
    from diagnose.parsers import github

    with github.using_token(github_token):  # the uploader's, or the server's where it lends its own (ServeConfig)
        analysis = run_pipeline(threads, Options(redact_secrets=redact_secrets), inputs=inputs)
    one = analysis.runs[0]
    out.mkdir(parents=True)
    for fmt in FORMATS.values():
        (out / f"report{fmt.suffixes[0]}").write_text(analysis.render(fmt.name))
    # The uploaded configs with the recommended changes, as a patch (`diagnose report --write-config` on the
    # command line); redacted like every output of the server.
    # Stored and served by link, it is a public output: the changed lines only (config_patch.PUBLIC_CONTEXT).
    patch = one.patch
    if patch is not None and patch.patch:
        body = (f"# The changed lines only: apply in the folder of the uploaded files with\n"
                f"#   {config_patch.PUBLIC_APPLY} recommended.patch\n"
                + config_patch.unified(patch.files, config_patch.PUBLIC_CONTEXT))
        (out / "recommended.patch").write_text(redact.text(body) if redact_secrets else body)
    return {**one.document, "has_patch": bool(patch is not None and patch.patch)}


def create_app(config: ServeConfig) -> Starlette:
    state: _State | None = None

    def st() -> _State:
        assert state is not None
        return state

    def authorised(request: Request) -> bool:
        """Exactly `Authorization: Bearer <token>`, compared in constant time; no query parameter, no other scheme."""
        if not config.token:
            return True
        expected = f"Bearer {config.token}".encode()
        return secrets.compare_digest(request.headers.get("authorization", "").encode(), expected)

    def error(status: int, message: str, headers: dict[str, str] | None = None, *, from_input: bool = True
              ) -> JSONResponse:
        """One sentence; one that quotes the client's input is redacted and made inert like any report text."""
        from diagnose.reports import inert, redact

        text = inert.text(redact.text(message)) if from_input else message
        return JSONResponse({"error": text}, status_code=status, headers=headers)

    def unauthorised() -> JSONResponse:
        return error(401, "this server needs its access token: send the header `Authorization: Bearer` followed by "
                          "the token given to `diagnose serve --token`", {"WWW-Authenticate": "Bearer"},
                     from_input=False)

    async def page(request: Request) -> Response:
        from diagnose.reports.html import upload_page

        return HTMLResponse(upload_page(token_required=bool(config.token), max_upload_mb=config.max_upload_mb,
                                        github_token_lent=config.github_token_for_uploads),
                            headers={"Content-Security-Policy": CSP})

    async def healthz(request: Request) -> Response:
        return JSONResponse({"ok": True, "pending": st().pending, "reports": len(st().reports)})

    async def diagnose_upload(request: Request) -> Response:
        s = st()
        if not authorised(request):
            return unauthorised()
        max_bytes = int(config.max_upload_mb * 1024 * 1024)
        length = request.headers.get("content-length")
        if length and length.isdigit() and int(length) > max_bytes:
            return error(413, f"upload larger than {config.max_upload_mb:g} MB")
        ctype, options = parse_options_header(request.headers.get("content-type", ""))
        if ctype != b"multipart/form-data" or b"boundary" not in options:
            return error(400, "send multipart/form-data: files in `files`, a W&B run in `wandb`")
        capacity = config.workers + (config.queue if config.queue is not None else DEFAULT_QUEUE)
        if s.pending >= capacity:
            return error(503, f"busy: every worker and queue slot is taken; try again in {RETRY_AFTER_S} s",
                         {"Retry-After": str(RETRY_AFTER_S)})
        s.pending += 1
        upload = Path(tempfile.mkdtemp(prefix="upload-", dir=s.root))
        sink = _MultipartSink(options[b"boundary"], upload, max_bytes)
        try:
            try:
                async with asyncio.timeout(config.body_timeout_s):
                    async for chunk in request.stream():
                        sink.feed(chunk)
            except TimeoutError:
                return error(408, f"the upload did not arrive within {config.body_timeout_s:g} s",
                             {"Connection": "close"}, from_input=False)
            except MultipartParseError as e:
                return error(400, f"not a well-formed multipart/form-data body ({e})")
            finally:
                sink.close()
            if not sink.complete:
                return error(400, "not a well-formed multipart/form-data body (it ends before its closing boundary)")
            wandb = sink.fields.get("wandb") or None
            if not sink.files and not wandb:
                return error(400, "no files and no W&B run given")
            rid = secrets.token_urlsafe(18)
            out = s.root / "reports" / rid
            loop = asyncio.get_running_loop()
            given = sink.fields.get("github_token") or None
            if config.github_token_for_uploads and given is None:
                from diagnose.parsers.github import token as own_token

                given = own_token()
            doc = await loop.run_in_executor(s.pool, analyse, sink.files, wandb, out, config.redact_secrets, upload,
                                             given)
            s.reports[rid] = _Report(time.monotonic(), out)
            return JSONResponse({**doc, "report_url": f"/reports/{rid}"})
        except UploadError as e:
            return error(e.status, str(e))
        except InputError as e:
            return error(400, str(e))
        except Exception as e:  # noqa: BLE001 - the server stays up; the cause goes back as one line
            return error(500, f"internal error: {type(e).__name__}: {e}")
        finally:
            s.pending -= 1
            shutil.rmtree(upload, ignore_errors=True)

    async def report(request: Request) -> Response:
        if not authorised(request):
            return unauthorised()
        name = request.path_params["name"]
        rid, _, suffix = name.partition(".")
        entry = st().reports.get(rid)
        from diagnose.reports.formats import FORMATS

        downloads = {f.suffixes[0][1:]: (f"report{f.suffixes[0]}", f.media_type) for f in FORMATS.values()}
        kind = {**downloads, "": downloads["html"], "patch": ("recommended.patch", "text/x-diff; charset=utf-8")
                }.get(suffix)
        if entry is None or kind is None or not (entry.directory / kind[0]).is_file():
            return error(404, "no such report (reports are kept for a limited time)")
        return FileResponse(entry.directory / kind[0], media_type=kind[1],
                            headers={"Content-Security-Policy": CSP, "X-Content-Type-Options": "nosniff"})

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        nonlocal state
        root = Path(tempfile.mkdtemp(prefix="diagnose-serve-"))
        root.chmod(0o700)
        state = _State(config, root, ThreadPoolExecutor(max_workers=config.workers, thread_name_prefix="analyse"))
        sweeper = asyncio.create_task(_sweep(state))
        try:
            yield
        finally:
            sweeper.cancel()
            state.pool.shutdown(wait=False, cancel_futures=True)
            shutil.rmtree(root, ignore_errors=True)

    app = Starlette(routes=[
        Route("/", page), Route("/healthz", healthz), Route("/api/diagnose", diagnose_upload, methods=["POST"]),
        Route("/reports/{name}", report),
    ], lifespan=lifespan)
    if config.access_log:
        app.add_middleware(_AccessLog)
    return app


class _AccessLog:
    """One line per request on stderr: client, method, path (never the query string, which may carry a secret),
    status, bytes of the answer and milliseconds. Uvicorn's own access log prints the query string; it is off."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        import sys

        start = time.monotonic()
        status, size = [0], [0]

        async def sending(message: dict[str, Any]) -> None:
            if message["type"] == "http.response.start":
                status[0] = message["status"]
            elif message["type"] == "http.response.body":
                size[0] += len(message.get("body", b""))
            await send(message)

        try:
            await self.app(scope, receive, sending)
        finally:
            from diagnose.reports import inert

            client = (scope.get("client") or ("-", 0))[0]
            path = inert.text(scope.get("path", ""))[:200]
            sys.stderr.write(f"{time.strftime('%Y-%m-%d %H:%M:%S')} {client} {scope.get('method', '-')} {path} "
                             f"{status[0] or '-'} {size[0]} {1000 * (time.monotonic() - start):.0f} ms\n")


async def _sweep(state: _State) -> None:
    """Delete reports older than --keep-minutes."""
    while True:
        await asyncio.sleep(SWEEP_S)
        limit = time.monotonic() - state.config.keep_minutes * 60
        for rid, entry in list(state.reports.items()):
            if entry.created < limit:
                del state.reports[rid]
                shutil.rmtree(entry.directory, ignore_errors=True)


def run(config: ServeConfig, host: str, port: int, announce: Callable[[str], None]) -> None:
    """Serve until stopped. Raises OSError where the address cannot be listened on (in use, not ours, no such
    host), before anything is announced: uvicorn would log a traceback and exit on its own."""
    import socket

    import uvicorn

    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    socket.create_server((host, port), family=family).close()
    announce(f"diagnose serve: http://{host}:{port}/ (reports kept {config.keep_minutes:g} min; Ctrl-C stops)")
    uvicorn.run(create_app(config), host=host, port=port, log_level="warning", access_log=False)
