"""W&B run references -> the run's data through the real `wandb.Api`, cached as parquet for finished runs.

References: `https://wandb.ai/<entity>/<project>/runs/<id>[/<tab>][?query]`, `entity/project/runs/id`,
`entity/project/id`, and self-hosted hosts (`https://wandb.example.com/<entity>/...` -> that host's API). Errors
come back as InputError with one clear line; the client's own retry loop is bounded by a timeout (its default waits
19 s and more), and an unreachable host is detected by a TCP pre-flight first.
"""
from __future__ import annotations

import base64
import json
import os
import re
import socket
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import polars as pl

from diagnose.parsers import wandb_history
from diagnose.parsers.errors import InputError
from diagnose.parsers.wandb_offline import WandbRun

API_TIMEOUT_S = 10  # wandb.Api(timeout=...): the "fail within 10 s" for an unreachable service
PREFLIGHT_TIMEOUT_S = 3.0
RATE_LIMIT_RETRIES = (1.0, 2.0, 4.0)  # seconds of backoff before giving up on HTTP 429
FULL_HISTORY_MAX = 10_000  # above this many rows the sampled history would hide stalls: scan the parquet history
PUBLIC_HOSTS = {"wandb.ai", "app.wandb.ai", "www.wandb.ai"}
DEFAULT_CACHE = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "diagnose" / "wandb"

_PATH = re.compile(r"^/?(?P<entity>[\w.-]+)/(?P<project>[\w.-]+)/(?:runs/)?(?P<run>[\w-]+)(?:/[\w-]*)?/?$")


@dataclass(frozen=True)
class WandbRef:
    entity: str
    project: str
    run_id: str
    base_url: str | None  # None: the client's configured default (WANDB_BASE_URL or the public cloud)

    @property
    def path(self) -> str:
        return f"{self.entity}/{self.project}/{self.run_id}"


def parse_ref(text: str) -> WandbRef | None:
    """A run URL or `entity/project/[runs/]id`; None when `text` is not a W&B reference."""
    if text.startswith(("http://", "https://")):
        url = urlparse(text)
        if "/reports/" in url.path:
            raise InputError(text, "this is a W&B report, not a run: open the report and pass the URL of each run "
                                   "(…/runs/<id>) instead")
        m = re.match(r"^/(?P<entity>[\w.-]+)/(?P<project>[\w.-]+)/runs/(?P<run>[\w-]+)(?:/[\w-]*)?/?$", url.path)
        if not m:
            return None
        host = url.hostname or ""
        base = None if host in PUBLIC_HOSTS else f"{url.scheme}://{url.netloc}"
        return WandbRef(m["entity"], m["project"], m["run"], base)
    if os.path.exists(text) or text.count("/") not in (2, 3):
        return None
    m = _PATH.match(text)
    if not m or (text.count("/") == 3 and "/runs/" not in text):
        return None
    return WandbRef(m["entity"], m["project"], m["run"], None)


def cache_dir(ref: WandbRef, root: Path | None = None) -> Path:
    host = urlparse(ref.base_url).netloc if ref.base_url else "default"
    return (root or Path(os.environ.get("DIAGNOSE_CACHE_DIR", DEFAULT_CACHE))) / host / ref.entity / ref.project / ref.run_id


def load_cached(directory: Path) -> WandbRun | None:
    meta_path = directory / "meta.json"
    if not meta_path.is_file():
        return None
    meta = json.loads(meta_path.read_text())
    run = WandbRun(run=meta["run"], config=meta["config"], summary=meta["summary"], environment=meta["environment"])
    if (directory / "history.parquet").is_file():
        run.history = pl.read_parquet(directory / "history.parquet")
    if (directory / "system.parquet").is_file():
        run.stats = pl.read_parquet(directory / "system.parquet").to_dicts()
    if (directory / "output.log").is_file():
        run.output = (directory / "output.log").read_text(errors="replace").split("\n")
    return run


def save_cache(directory: Path, run: WandbRun, state: str) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    meta = {"run": run.run, "config": run.config, "summary": run.summary, "environment": run.environment,
            "state": state}
    (directory / "meta.json").write_text(json.dumps(meta, default=str))
    if run.history.height:
        run.history.write_parquet(directory / "history.parquet")
    if run.stats:
        pl.from_dicts(run.stats, infer_schema_length=None).write_parquet(directory / "system.parquet")
    (directory / "output.log").write_text("\n".join(run.output))


# Called as (what is being fetched, items done, items in all or None) while a run downloads.
FetchProgress = Callable[[str, int, "int | None"], None]
PROGRESS_EVERY_ROWS = 1000


def fetch(ref: WandbRef, refresh: bool = False, cache_root: Path | None = None,
          progress: FetchProgress | None = None) -> WandbRun:
    """The run's config, summary, metadata, history, system metrics and console output; cached once finished."""
    directory = cache_dir(ref, cache_root)
    if not refresh:
        cached = load_cached(directory)
        if cached is not None:
            return cached
    report = progress or (lambda what, done, total: None)
    name = f"W&B run {ref.path}"
    base = ref.base_url or os.environ.get("WANDB_BASE_URL") or "https://api.wandb.ai"
    _preflight(name, base)
    report("connecting to W&B", 0, None)
    _host_check(name, base, os.environ.get("WANDB_API_KEY"))
    api = _api(name, ref)
    key = getattr(api, "api_key", None) or os.environ.get("WANDB_API_KEY")

    def probe() -> int | None:
        return _probe_status(base, key, ref)

    wrun = _call(name, lambda: api.run(ref.path), probe)
    out = WandbRun(run={"run_id": wrun.id, "entity": ref.entity, "project": ref.project, "display_name": wrun.name,
                        "state": wrun.state},
                   config=dict(wrun.config), summary=dict(wrun.summary._json_dict))
    rows = wrun.historyLineCount or 0
    report("history rows", 0, rows or None)
    if rows > FULL_HISTORY_MAX:
        history = _call(name, lambda: _counted(wrun.scan_history(page_size=1000), rows, report), probe)
    else:
        history = _call(name, lambda: wrun.history(samples=max(rows, 1), pandas=False), probe)
    report("history rows", len(history), rows or None)
    out.history = wandb_history.from_rows(history)
    report("system metrics", 0, None)
    out.stats = _call(name, lambda: wrun.history(stream="system", pandas=False), probe)
    report("metadata and console output", 0, None)
    out.environment = _metadata(name, wrun)
    out.output = _console(name, wrun)
    if wrun.state in ("finished", "crashed", "failed", "killed"):
        save_cache(directory, out, wrun.state)
    return out


def _preflight(name: str, base: str) -> None:
    url = urlparse(base)
    port = url.port or (443 if url.scheme == "https" else 80)
    try:
        socket.create_connection((url.hostname or "", port), timeout=PREFLIGHT_TIMEOUT_S).close()
    except OSError as e:
        raise InputError(name, f"cannot reach the W&B API at {base} ({e.strerror or e}); check the network, or "
                               "WANDB_BASE_URL for a self-hosted server") from None


def _graphql_request(base: str, key: str | None, payload: dict[str, Any]) -> urllib.request.Request:
    """A plain POST to the W&B GraphQL endpoint, authenticated the way the client does (basic auth, user `api`)."""
    headers = {"Content-Type": "application/json", "User-Agent": "diagnose"}
    if key:
        headers["Authorization"] = "Basic " + base64.b64encode(f"api:{key}".encode()).decode()
    return urllib.request.Request(base.rstrip("/") + "/graphql", data=json.dumps(payload).encode(), headers=headers,
                                  method="POST")


HOST_CHECK_TIMEOUT_S = 5.0  # with the 3 s connect, a host that never answers is named within 10 s in all


def _host_check(name: str, base: str, key: str | None) -> None:
    """One GraphQL request before the client's own (which retries until its deadline and then blames the key):
    a host that does not answer, a host that is not a W&B API (404), or a key the API rejects (401), each named."""
    request = _graphql_request(base, key, {"query": "query Viewer { viewer { id } }"})
    try:
        with urllib.request.urlopen(request, timeout=HOST_CHECK_TIMEOUT_S):
            return
    except urllib.error.HTTPError as e:
        if e.code == 404:
            raise InputError(name, f"{base} is not a W&B API (HTTP 404 on /graphql); check WANDB_BASE_URL or the "
                                   "run URL's host") from None
        if e.code == 401 and key:
            raise InputError(name, "W&B did not accept the API key (HTTP 401)") from None
    except (TimeoutError, socket.timeout):
        raise InputError(name, f"the W&B host at {base} accepted the connection but did not answer within "
                               f"{HOST_CHECK_TIMEOUT_S:.0f} s") from None
    except urllib.error.URLError as e:
        if isinstance(e.reason, (TimeoutError, socket.timeout)):
            raise InputError(name, f"the W&B host at {base} accepted the connection but did not answer within "
                                   f"{HOST_CHECK_TIMEOUT_S:.0f} s") from None
    except OSError:
        pass  # the client's own call says what is wrong


def _api(name: str, ref: WandbRef) -> Any:
    import wandb
    from wandb.errors import AuthenticationError, UsageError

    overrides = {"base_url": ref.base_url} if ref.base_url else {}
    try:
        return wandb.Api(overrides=overrides, timeout=API_TIMEOUT_S)
    except UsageError:
        raise InputError(name, "no W&B API key: set WANDB_API_KEY or run `wandb login`") from None
    except AuthenticationError as e:  # a 401 was named by _host_check; anything else is not the key's fault
        raise InputError(name, f"the W&B API could not confirm the API key ({_first_line(e)})") from None


def _counted(rows: Iterable[dict[str, Any]], total: int, report: FetchProgress) -> list[dict[str, Any]]:
    out = []
    for row in rows:
        out.append(row)
        if len(out) % PROGRESS_EVERY_ROWS == 0:
            report("history rows", len(out), total)
    return out


def _probe_status(base: str, key: str | None, ref: WandbRef) -> int | None:
    """One plain GraphQL request for the run, to tell why wandb-core gave up: it retries HTTP 429 and 5xx answers
    itself until its deadline and then reports only a timeout. The HTTP status, or None when the server answered."""
    request = _graphql_request(base, key, {
        "query": "query Probe($entity: String, $project: String!, $name: String!) "
                 "{ project(name: $project, entityName: $entity) { run(name: $name) { id } } }",
        "variables": {"entity": ref.entity, "project": ref.project, "name": ref.run_id}})
    try:
        with urllib.request.urlopen(request, timeout=PREFLIGHT_TIMEOUT_S):
            return None
    except urllib.error.HTTPError as e:
        return e.code
    except (urllib.error.URLError, OSError):
        return None


def _call(name: str, fn: Any, probe: Callable[[], int | None] | None = None) -> Any:
    from wandb.errors import CommError

    for delay in (*RATE_LIMIT_RETRIES, None):
        try:
            return fn()
        except CommError as e:
            msg = _first_line(e)
            low = msg.lower()
            if ("429" in low or "rate limit" in low or "too many requests" in low) and delay is not None:
                time.sleep(delay)
                continue
            if "could not find run" in low or "not found" in low:
                raise InputError(name, "run not found (check entity, project and run id)") from None
            if "permission" in low or "unauthorized" in low or "forbidden" in low:
                raise InputError(name, "no permission to read this run with the configured API key") from None
            if "429" in low or "rate limit" in low or "too many requests" in low:
                raise InputError(name, "rate limited by the W&B API; try again in a minute") from None
            if "did not respond in time" in low or "timed out" in low:
                # wandb-core retries 429 and 5xx answers itself (with backoff) until the deadline, so both end here
                status = probe() if probe else None
                if status == 429:
                    raise InputError(name, f"rate limited by the W&B API (HTTP 429 for {API_TIMEOUT_S} s of retries "
                                           "with backoff); try again in a minute") from None
                if status is not None and status >= 500:
                    raise InputError(name, f"the W&B API kept failing with HTTP {status} for {API_TIMEOUT_S} s of "
                                           "retries; the service may be down, try again later") from None
                raise InputError(name, f"the W&B API did not answer within {API_TIMEOUT_S} s (the server is down "
                                       "or overloaded; try again later)") from None
            raise InputError(name, f"W&B API error: {msg}") from None
    raise AssertionError("unreachable")


def _metadata(name: str, wrun: Any) -> dict[str, Any]:
    try:
        meta = wrun.metadata
    except Exception:  # a run without wandb-metadata.json  # noqa: BLE001
        return {}
    return dict(meta or {})


def _console(name: str, wrun: Any) -> list[str]:
    from wandb.errors import CommError

    with tempfile.TemporaryDirectory(prefix="diagnose-wandb-") as tmp:
        try:
            f = wrun.file("output.log")
            if not getattr(f, "url", None):
                return []
            f.download(root=tmp, replace=True)
        except (CommError, ValueError, OSError):
            return []
        path = Path(tmp) / "output.log"
        return path.read_text(errors="replace").split("\n") if path.is_file() else []


def _first_line(e: BaseException) -> str:
    return (str(e).strip().splitlines() or [type(e).__name__])[0]
