"""A loopback stand-in for the W&B API that the real wandb 0.31 client talks to over real HTTP.

It answers the GraphQL operations the pinned client sends (../shared/reference/wandb_api_captures/: Viewer,
GetDefaultEntity, Run, RunFullHistory with history / events, RunFiles) and file downloads, from one run's data.
`mode` switches it into the failure answers the tests need.
"""
from __future__ import annotations

import base64
import hashlib
import json
import time
import re
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class StandIn:
    def __init__(self, run_id: str, config: dict[str, Any], summary: dict[str, Any], history: list[dict[str, Any]],
                 system: list[dict[str, Any]], output: str, metadata: dict[str, Any]) -> None:
        self.run_id, self.config, self.summary = run_id, config, summary
        self.history, self.system, self.output, self.metadata = history, system, output, metadata
        # ok | missing | denied | unauthorized | ratelimit-once | ratelimit | servererror | silent | notfound
        self.mode = "ok"
        self.requests: list[str] = []
        self._rate_limited = 0
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.thread = threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def __enter__(self) -> "StandIn":
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()

    def _files(self) -> dict[str, bytes]:
        return {"output.log": self.output.encode(), "wandb-metadata.json": json.dumps(self.metadata).encode(),
                "history.parquet": self._parquet()}

    def _parquet(self) -> bytes:
        if not hasattr(self, "_parquet_bytes"):
            import io

            import polars as pl

            buf = io.BytesIO()
            pl.from_dicts(self.history, infer_schema_length=None).write_parquet(buf)
            self._parquet_bytes = buf.getvalue()
        return self._parquet_bytes

    def answer(self, query: str, variables: dict[str, Any]) -> tuple[int, Any]:
        if self.mode == "unauthorized":
            return 401, {"errors": [{"message": "unauthorized"}]}
        if self.mode == "servererror" and re.search(r"\brun\(name", query):
            return 500, {"errors": [{"message": "internal error"}]}
        if self.mode.startswith("ratelimit") and re.search(r"\brun\(name", query):
            if self.mode == "ratelimit" or self._rate_limited == 0:
                self._rate_limited += 1
                return 429, {"errors": [{"message": "rate limit exceeded"}]}
        if "viewer" in query and "project(" not in query:
            return 200, {"data": {"viewer": {"id": "VXNlcjox", "entity": "e", "username": "u", "email": "u@x.org",
                                             "flags": "{}", "teams": {"edges": []}}}}
        if self.mode == "denied":
            return 200, {"data": None, "errors": [{"message": "input: project permission denied"}]}
        if self.mode == "missing" or (variables.get("name") or variables.get("runName")) != self.run_id:
            return 200, {"data": {"project": {"run": None, "internalId": "UHJvamVjdDox"}}}
        if "parquetHistory" in query:  # scan_history: parquet files the client range-reads
            return 200, {"data": {"project": {"run": {"parquetHistory": {
                "parquetUrls": [f"{self.url}/files/history.parquet"], "liveData": []}}}}}
        if re.search(r"run\(name: \$name\) \{ historyKeys \}", query):
            return 200, {"data": {"project": {"run": {"historyKeys": {"keys": {}, "lastStep": len(self.history) - 1}}}}}
        if "history(samples" in query:
            return 200, {"data": {"project": {"run": {"history": [json.dumps(r) for r in self.history]}}}}
        if "events(samples" in query:
            return 200, {"data": {"project": {"run": {"events": [json.dumps(r) for r in self.system]}}}}
        if "RunFiles" in query or "files(names" in query:
            names = variables.get("fileNames") or list(self._files())
            edges = []
            for i, name in enumerate(n for n in names if n in self._files()):
                body = self._files()[name]
                edges.append({"node": {"id": f"RmlsZTo{i}", "name": name, "url": f"{self.url}/files/{name}",
                                       "directUrl": f"{self.url}/files/{name}", "sizeBytes": len(body),
                                       "mimetype": "text/plain", "updatedAt": "2026-11-29T10:00:00",
                                       "md5": base64.b64encode(hashlib.md5(body).digest()).decode()},
                              "cursor": f"c{i}"})
            return 200, {"data": {"project": {"internalId": "UHJvamVjdDox", "run": {
                "fileCount": len(edges), "files": {"edges": edges, "pageInfo": {"endCursor": "c9",
                                                                                "hasNextPage": False}}}}}}
        if "RunFragment" in query:
            return 200, {"data": {"project": {"run": {
                "projectId": "1", "id": "UnVuOjE=", "tags": [], "name": self.run_id, "displayName": "standin-run",
                "sweepName": None, "state": "finished",
                "config": json.dumps({k: {"value": v, "desc": None} for k, v in self.config.items()}),
                "group": None, "jobType": None, "commit": None, "readOnly": False, "createdAt": "2026-11-29T10:00:00",
                "heartbeatAt": "2026-11-29T10:10:00", "description": None, "notes": None, "systemMetrics": "{}",
                "summaryMetrics": json.dumps(self.summary), "historyLineCount": len(self.history),
                "user": {"name": "u", "username": "u"},
                "historyKeys": {"keys": {}, "lastStep": len(self.history) - 1}}}}}
        return 200, {"data": {}}

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        standin = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                pass

            def _send(self, code: int, body: bytes, ctype: str = "application/json") -> None:
                self.send_response(code)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def do_POST(self) -> None:  # noqa: N802
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length)
                standin.requests.append(f"POST {self.path}")
                if standin.mode == "silent":  # accepts the connection, never answers (bounded: 30 s)
                    time.sleep(30)
                    return None
                if standin.mode == "notfound":  # a web server, not a W&B API
                    return self._send(404, b"<html>not found</html>", "text/html")
                if self.path.startswith("/sdk/"):  # wandb-core's own telemetry
                    return self._send(200, b"{}")
                try:
                    body = json.loads(raw or b"{}")
                except ValueError:
                    return self._send(400, b"{}")
                code, answer = standin.answer(body.get("query", ""), body.get("variables") or {})
                self._send(code, json.dumps(answer).encode())

            def do_GET(self) -> None:  # noqa: N802
                standin.requests.append(f"GET {self.path}")
                name = self.path.split("/files/", 1)[-1].split("?")[0]
                body = standin._files().get(name)
                if body is None:
                    return self._send(404, b"not found", "text/plain")
                rng = self.headers.get("Range")
                if rng and (m := re.match(r"bytes=(\d+)-(\d*)", rng)):
                    start, end = int(m.group(1)), int(m.group(2) or len(body) - 1)
                    part = body[start:end + 1]
                    self.send_response(206)
                    self.send_header("Content-Range", f"bytes {start}-{start + len(part) - 1}/{len(body)}")
                    self.send_header("Content-Length", str(len(part)))
                    self.end_headers()
                    self.wfile.write(part)
                    return
                self._send(200, body, "text/plain")

        return Handler
