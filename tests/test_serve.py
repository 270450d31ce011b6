"""`diagnose serve`: the real server (uvicorn, a free port, a subprocess), driven over HTTP by httpx and through its
page by a real headless Chromium."""
from __future__ import annotations

import gzip
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest

from conftest import ROOT, SAMPLES, run_cli

SEED = SAMPLES / "synthetic" / "seed_zero3_launch_blocking"
SEED_FILES = [SEED / "slurm-1234.out", SEED / "ds_config.json", SEED / "train.sh"]
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
NO_CHROMIUM = "Debian's chromium is not installed (tests/install_chromium.py installs it as root)"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextmanager
def server(tmp: Path, *args: str) -> Iterator[str]:
    """The server in its own process, with its temporary files under `tmp`; stopped (SIGINT, as Ctrl-C) after."""
    with server_process(tmp, *args) as (base, _):
        yield base


@contextmanager
def server_process(tmp: Path, *args: str) -> Iterator[tuple[str, subprocess.Popen[str]]]:
    port = _free_port()
    env = {**os.environ, "TMPDIR": str(tmp)}
    proc = subprocess.Popen([sys.executable, "-m", "diagnose", "serve", "--port", str(port), *args], cwd=ROOT,
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    base = f"http://127.0.0.1:{port}"
    try:
        for _ in range(200):
            try:
                if httpx.get(f"{base}/healthz", timeout=1).status_code == 200:
                    break
            except httpx.TransportError:
                time.sleep(0.05)
        else:
            raise AssertionError(f"server did not start: {proc.stderr.read() if proc.stderr else ''}")
        yield base, proc
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()


def _upload(base: str, files: list[Path], names: list[str] | None = None, **kw: object) -> httpx.Response:
    parts = [("files", ((names[i] if names else f.name), f.read_bytes())) for i, f in enumerate(files)]
    return httpx.post(f"{base}/api/diagnose", files=parts, timeout=120, **kw)  # type: ignore[arg-type]


def _cli_verdict(files: list[Path]) -> str:
    proc = run_cli("report", *map(str, files), "--format", "json", "-o", "-")
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)["verdict"]


def _applies(tmp_path: Path, patch: str) -> None:
    """The patch as the page says to apply it, in a copy of the uploaded files."""
    work = tmp_path / "apply"
    work.mkdir()
    for f in SEED_FILES:
        shutil.copy(f, work / f.name)
    (work / "recommended.patch").write_text(patch)
    proc = subprocess.run(["git", "apply", "--unidiff-zero", "recommended.patch"], cwd=work, capture_output=True,
                          text=True)
    assert proc.returncode == 0, proc.stderr
    assert '"stage": 1' in (work / "ds_config.json").read_text()


@pytest.mark.slow
def test_upload_gives_the_report_and_its_three_formats(tmp_path: Path) -> None:
    with server(tmp_path) as base:
        r = _upload(base, SEED_FILES)
        assert r.status_code == 200, r.text
        doc = r.json()
        assert doc["verdict"] == _cli_verdict(SEED_FILES)
        assert "CUDA_LAUNCH_BLOCKING" in doc["verdict"]
        assert [s["name"] for s in doc["sources"]][:3] == ["slurm-1234.out", "ds_config.json", "train.sh"]
        url = doc["report_url"]
        assert url.startswith("/reports/") and len(url.rsplit("/", 1)[1]) >= 20  # unguessable
        page = httpx.get(base + url)
        assert page.status_code == 200 and "default-src 'none'" in page.headers["content-security-policy"]
        assert "CUDA_LAUNCH_BLOCKING" in page.text and 'id="verdict"' in page.text
        md = httpx.get(base + url + ".md")
        assert md.status_code == 200 and md.text.startswith("## diagnose: training-run report")
        js = httpx.get(base + url + ".json").json()
        assert js == {k: v for k, v in doc.items() if k not in ("report_url", "has_patch")}
        patch = httpx.get(base + url + ".patch")  # the uploaded configs with the recommended changes
        assert doc["has_patch"] and patch.status_code == 200 and "\n--- a/ds_config.json" in patch.text
        assert '+    "stage": 1,' in patch.text and "-export CUDA_LAUNCH_BLOCKING=1" in patch.text
        # the changed lines only (a public output quotes nothing else of the user's files), and it still applies
        assert not [ln for ln in patch.text.splitlines() if ln.startswith(" ")]
        _applies(tmp_path, patch.text)
        assert httpx.get(base + "/reports/" + "A" * 24).status_code == 404
        front = httpx.get(base + "/")
        assert front.status_code == 200 and 'type="file"' in front.text and "content-security-policy" in front.headers
    assert not list(tmp_path.glob("diagnose-serve-*")), "uploads and reports are deleted at shutdown"


@pytest.mark.slow
def test_bad_uploads_get_one_sentence_and_the_right_status(tmp_path: Path) -> None:
    big = tmp_path / "big.log"
    big.write_bytes(b"x" * (2 * 1024 * 1024))
    binary = tmp_path / "model.bin"
    binary.write_bytes(bytes(range(256)) * 64)
    noise = tmp_path / "notes.txt"
    noise.write_text("nothing to see\n")
    with server(tmp_path, "--max-upload-mb", "1") as base:
        too_big = _upload(base, [big])
        assert too_big.status_code == 413 and "larger than 1 MB" in too_big.json()["error"]
        r = _upload(base, [binary])
        assert r.status_code == 400 and r.json()["error"] == "model.bin: binary file, not a log, config or launch script"
        r = _upload(base, [noise])  # text nothing recognises: a report that says so (issue 30, must 8)
        assert r.status_code == 200 and r.json()["verdict"].startswith("Not enough to tell")
        empty = tmp_path / "empty.log"
        empty.write_bytes(b"")
        r = _upload(base, [empty])
        assert r.status_code == 400 and r.json()["error"] == "empty.log: empty: no text to read"
        r = httpx.post(f"{base}/api/diagnose", data={"other": "x"}, files=[("x", ("", b""))], timeout=30)
        assert r.status_code == 400
        r = httpx.post(f"{base}/api/diagnose", content=b"{}", headers={"content-type": "application/json"})
        assert r.status_code == 400 and "multipart/form-data" in r.json()["error"]
    with server(tmp_path, "--token", "s3cret-t0ken") as base:
        assert _upload(base, SEED_FILES).status_code == 401
        ok = _upload(base, SEED_FILES, headers={"Authorization": "Bearer s3cret-t0ken"})
        assert ok.status_code == 200 and "CUDA_LAUNCH_BLOCKING" in ok.json()["verdict"]


@pytest.mark.parametrize("field", [str(SEED / "slurm-1234.out"), "-", "file:///etc/passwd", "/etc/passwd",
                                   "../../etc/passwd", "http://127.0.0.1:9/ent/proj/runs/abc",
                                   "https://evil.example/ent/proj/runs/abc", "https://wandb.ai/ent/proj"])
def test_the_wandb_field_takes_a_run_reference_and_nothing_else(field: str) -> None:
    """Issue 21: the page's W&B field never names a server path, stdin, a file: URL or another host."""
    from diagnose.serve import wandb_field
    from diagnose.parsers.errors import InputError

    with pytest.raises(InputError):
        wandb_field(field)


def test_the_wandb_field_accepts_runs_on_the_configured_host(monkeypatch: pytest.MonkeyPatch) -> None:
    from diagnose.serve import wandb_field

    assert wandb_field("ent/proj/runs/abc123").run_id == "abc123"  # type: ignore[attr-defined]
    assert wandb_field("https://wandb.ai/ent/proj/runs/abc").entity == "ent"  # type: ignore[attr-defined]
    monkeypatch.setenv("WANDB_BASE_URL", "https://wandb.corp.example")
    assert wandb_field("https://wandb.corp.example/ent/proj/runs/abc").base_url == "https://wandb.corp.example"  # type: ignore[attr-defined]


def test_a_server_path_in_the_wandb_field_is_refused_by_the_real_server(tmp_path: Path) -> None:
    with server(tmp_path) as base:
        for field in (str(SEED / "slurm-1234.out"), "-"):
            r = httpx.post(f"{base}/api/diagnose", data={"wandb": field}, files=[("files", ("", b""))], timeout=30)
            assert r.status_code == 400 and "not a W&B run" in r.json()["error"], r.text
            assert "CUDA_LAUNCH_BLOCKING" not in r.text


def test_a_hostile_file_name_is_only_a_label_and_gz_uploads_are_read(tmp_path: Path) -> None:
    gz = tmp_path / "train.log.gz"
    gz.write_bytes(gzip.compress((SAMPLES / "ds_zero0" / "train.log").read_bytes()))
    before = set(tmp_path.parent.iterdir())
    with server(tmp_path) as base:
        r = _upload(base, [SAMPLES / "ds_zero0" / "train.log", gz], names=["../../x", "train.log.gz"])
        assert r.status_code == 200, r.text
        names = [s["name"] for s in r.json()["sources"]]
        assert names == ["x", "train.log.gz"]
        assert all(s["recognised"] > 100 for s in r.json()["sources"])
    assert set(tmp_path.parent.iterdir()) == before  # nothing written outside the server's own temporary directory
    assert not (ROOT / "x").exists() and not (tmp_path / "x").exists()


@pytest.mark.slow
def test_eight_concurrent_uploads_each_get_their_own_report(tmp_path: Path) -> None:
    runs = ["ds_zero0", "ds_zero2_bf16", "ds_zero3_ckpt", "ds_zero3_offload", "ds_zero1_straggler",
            "ds_zero2_debug_env", "hf_trainer_fp32_gradckpt", "ds_zero2_ga4_overlap_off"]
    uploads = {run: sorted(p for p in (SAMPLES / run).iterdir() if p.is_file()) for run in runs}
    with server(tmp_path, "--workers", "2") as base:
        with ThreadPoolExecutor(8) as pool:
            answers = dict(zip(runs, pool.map(lambda run: _upload(base, uploads[run]), runs)))
        for run, r in answers.items():
            assert r.status_code == 200, (run, r.text)
            assert r.json()["verdict"] == _cli_verdict(uploads[run]), run
        assert len({r.json()["report_url"] for r in answers.values()}) == 8


@pytest.mark.slow
def test_a_full_queue_is_refused_and_health_answers_while_busy(tmp_path: Path) -> None:
    log = tmp_path / "long.log"
    log.write_bytes((SAMPLES / "ds_zero0" / "train.log").read_bytes() * 400)  # ~18 MB: seconds of analysis
    with server(tmp_path, "--workers", "1", "--queue", "0") as base:
        with ThreadPoolExecutor(4) as pool:
            futures = [pool.submit(_upload, base, [log]) for _ in range(3)]
            time.sleep(0.5)
            t0 = time.monotonic()
            health = httpx.get(f"{base}/healthz", timeout=5)
            health_s = time.monotonic() - t0
            answers = [f.result() for f in futures]
    codes = sorted(r.status_code for r in answers)
    assert codes.count(200) >= 1 and 503 in codes
    refused = next(r for r in answers if r.status_code == 503)
    assert refused.headers["retry-after"] == "10" and "busy" in refused.json()["error"]
    assert health.status_code == 200 and health_s < 2.0


@pytest.mark.slow
def test_the_default_queue_takes_a_burst_of_twenty(tmp_path: Path) -> None:
    """Issue 35: with the defaults (2 workers), 20 uploads at once all wait their turn; none is answered 503."""
    log = SAMPLES / "ds_zero0" / "train.log"
    with server(tmp_path) as base, ThreadPoolExecutor(20) as pool:
        answers = list(pool.map(lambda _: _upload(base, [log]), range(20)))
    assert [r.status_code for r in answers] == [200] * 20


@pytest.mark.slow
@pytest.mark.skipif(CHROMIUM is None, reason=NO_CHROMIUM)
def test_the_page_sends_again_when_the_server_is_busy(tmp_path: Path) -> None:
    """A 503 with Retry-After: the page says it will send again, waits, and shows the report once a worker is free."""
    playwright = pytest.importorskip("playwright.sync_api")
    long = tmp_path / "long.log"
    long.write_bytes((SAMPLES / "ds_zero0" / "train.log").read_bytes() * 400)  # seconds of analysis
    with server(tmp_path, "--workers", "1", "--queue", "0") as base, ThreadPoolExecutor(1) as pool, \
            playwright.sync_playwright() as p:
        busy = pool.submit(_upload, base, [long])
        time.sleep(0.5)
        browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox", "--disable-gpu"])
        try:
            page = browser.new_page()
            page.goto(base)
            page.set_input_files("#files", [str(f) for f in SEED_FILES])
            page.click("#analyse")
            page.wait_for_function("document.getElementById('status').textContent.includes('The server is busy')",
                                   timeout=30_000)
            assert "sending again in" in page.inner_text("#status")
            assert busy.result().status_code == 200
            page.wait_for_selector("#result:not([hidden])", timeout=90_000)
            assert page.inner_text("#verdict")
        finally:
            browser.close()


@pytest.mark.skipif(CHROMIUM is None, reason=NO_CHROMIUM)
@pytest.mark.slow
def test_the_page_uploads_and_shows_the_report_in_chromium(tmp_path: Path) -> None:
    playwright = pytest.importorskip("playwright.sync_api")
    with server(tmp_path) as base, playwright.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox", "--disable-gpu"])
        try:
            ctx = browser.new_context(viewport={"width": 1280, "height": 900})
            page = ctx.new_page()
            errors: list[str] = []
            page.on("pageerror", lambda e: errors.append(str(e)))
            page.goto(base + "/")
            page.set_input_files("#files", [str(f) for f in SEED_FILES])
            page.click("#analyse")
            page.wait_for_selector("#result:not([hidden])", timeout=60_000)
            assert "CUDA_LAUNCH_BLOCKING" in page.inner_text("#verdict")
            frame = page.frame_locator("#report")
            assert "CUDA_LAUNCH_BLOCKING" in frame.locator("#verdict").inner_text(timeout=30_000)
            assert page.get_attribute("#download-json", "href").endswith(".json")
            page.click("#copy-md")
            page.wait_for_function("document.getElementById('md').value.length > 100", timeout=10_000)
            assert page.input_value("#md").startswith("## diagnose: training-run report")
            empty = tmp_path / "notes.txt"
            empty.write_text("\n\n")
            page.set_input_files("#files", [str(empty)])
            page.click("#analyse")
            page.wait_for_selector("#error:not([hidden])", timeout=30_000)
            assert page.inner_text("#error").startswith("notes.txt: empty")
            page.screenshot(path=str(tmp_path / "serve.png"), full_page=False)
        finally:
            browser.close()
    assert errors == []


@pytest.mark.slow
def test_the_token_is_checked_exactly_on_uploads_and_stored_reports(tmp_path: Path) -> None:
    token = "s3cret-token-for-tests"
    with server_process(tmp_path, "--token", token) as (base, proc):
        def post(headers: dict[str, str], params: dict[str, str] | None = None) -> httpx.Response:
            return httpx.post(f"{base}/api/diagnose", headers=headers, params=params, timeout=120,
                              files=[("files", (f.name, f.read_bytes())) for f in SEED_FILES])

        for headers, params in (({}, None), ({"Authorization": token}, None), ({"Authorization": f"Bearer  {token}"}, None),
                                ({"Authorization": f"bearer {token}"}, None),
                                ({}, {"token": token}), ({"Authorization": f"Basic {token}"}, None)):
            r = post(headers, params)
            assert r.status_code == 401, (headers, params)
            assert "[REDACTED]" not in r.json()["error"] and "Authorization: Bearer" in r.json()["error"]
        ok = post({"Authorization": f"Bearer {token}"})
        assert ok.status_code == 200, ok.text
        url = ok.json()["report_url"]
        for suffix in ("", ".md", ".json"):
            assert httpx.get(f"{base}{url}{suffix}", timeout=30).status_code == 401
            assert httpx.get(f"{base}{url}{suffix}", params={"token": token}, timeout=30).status_code == 401
            r = httpx.get(f"{base}{url}{suffix}", headers={"Authorization": f"Bearer {token}"}, timeout=30)
            assert r.status_code == 200 and len(r.text) > 100
        assert httpx.get(f"{base}/?token=abc", timeout=10).status_code == 200  # the page itself holds no data
    proc.wait(timeout=15)
    log = proc.stderr.read() if proc.stderr else ""
    # the access log: one line per request, the path without its query string, never the token
    assert " POST /api/diagnose 401 " in log and " POST /api/diagnose 200 " in log and f" GET {url}.md 200 " in log
    assert token not in log and "token=" not in log


def test_an_empty_token_is_refused_at_start_up() -> None:
    for bad in ("", "  ", " padded "):
        proc = run_cli("serve", "--token", bad, "--port", str(_free_port()), timeout=30)
        assert proc.returncode == 2 and proc.stderr.count("\n") == 1, proc.stderr
        assert "--token" in proc.stderr


def test_a_trickling_body_times_out_and_a_broken_multipart_is_400(tmp_path: Path) -> None:
    import socket as sockets
    from urllib.parse import urlparse

    with server(tmp_path, "--body-timeout", "2") as base:
        u = urlparse(base)
        with sockets.create_connection((u.hostname, u.port), timeout=30) as conn:
            boundary = "b0undary"
            conn.sendall(f"POST /api/diagnose HTTP/1.1\r\nHost: x\r\nContent-Type: multipart/form-data; boundary="
                         f"{boundary}\r\nContent-Length: 100000\r\n\r\n--{boundary}\r\n".encode())
            start = time.monotonic()
            answer = b""
            while b"\r\n\r\n" not in answer and time.monotonic() - start < 20:
                try:
                    conn.sendall(b"x")  # one byte a second: never done
                except OSError:
                    break
                conn.settimeout(1)
                try:
                    answer += conn.recv(4096)
                except TimeoutError:
                    pass
            assert answer.startswith(b"HTTP/1.1 408"), answer[:200]
            assert time.monotonic() - start < 10
        assert httpx.get(f"{base}/healthz", timeout=5).json()["pending"] == 0  # the slot was given back
        garbage = httpx.post(f"{base}/api/diagnose", content=b"--b\r\nContent-Disposition: form-data; name=\"f\"; "
                             b"filename=\"x\"\r\n\r\nabc\r\n--b-\xff\xff garbage",
                             headers={"Content-Type": "multipart/form-data; boundary=b"}, timeout=30)
        assert garbage.status_code == 400, garbage.text


@pytest.mark.skipif(CHROMIUM is None, reason=NO_CHROMIUM)
@pytest.mark.slow
def test_the_page_with_a_token_and_an_oversize_upload_in_chromium(tmp_path: Path) -> None:
    """With --token the page sends it and shows the stored report fetched with it; an upload over the limit is
    refused by the page before a byte is sent (the access log shows no POST)."""
    playwright = pytest.importorskip("playwright.sync_api")
    token = "page-token-123"
    with server_process(tmp_path, "--token", token, "--max-upload-mb", "0.05") as (base, proc), \
            playwright.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox", "--disable-gpu"])
        try:
            page = browser.new_context(viewport={"width": 1280, "height": 900}).new_page()
            errors: list[str] = []
            page.on("pageerror", lambda e: errors.append(str(e)))
            page.goto(base + "/")
            assert ".gz" in page.inner_text("main")
            big = tmp_path / "big.log"
            big.write_bytes((SAMPLES / "ds_zero0" / "train.log").read_bytes() * 3)  # over 0.05 MB
            page.set_input_files("#files", [str(big)])
            page.fill("#token", token)
            page.click("#analyse")
            page.wait_for_selector("#error:not([hidden])", timeout=10_000)
            assert "over the server's 0.05 MB" in page.inner_text("#error")
            page.set_input_files("#files", [str(SEED / "slurm-1234.out"), str(SEED / "train.sh")])
            page.click("#analyse")
            page.wait_for_selector("#result:not([hidden])", timeout=60_000)
            frame = page.frame_locator("#report")
            assert "CUDA_LAUNCH_BLOCKING" in frame.locator("#verdict").inner_text(timeout=30_000)
            assert page.get_attribute("#download-json", "href").startswith("blob:")
        finally:
            browser.close()
    proc.wait(timeout=15)
    log = proc.stderr.read() if proc.stderr else ""
    assert log.count("POST /api/diagnose") == 1 and " POST /api/diagnose 200 " in log
    assert errors == []
