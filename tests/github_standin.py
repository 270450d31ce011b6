"""A loopback stand-in for the GitHub REST and GraphQL APIs and for github.com's attachment downloads (issue 24,
must 5), built from the response shapes GitHub documents (../shared/reference/github.md): an issue with its
fields, comments paginated by a `Link: <...>; rel="next"` header, a single comment, a gist, a discussion through
GraphQL, attachments that answer with a redirect to signed storage, comment creation (201) and edits (200), a 403
rate-limit answer with its headers, and 404 for anything else. The code under test reaches it through
GITHUB_API_URL / GITHUB_SERVER_URL / GITHUB_GRAPHQL_URL, never the network."""
from __future__ import annotations

import json
import re
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlparse

PER_PAGE_CAP = 2  # pages of two comments, so that a short thread already needs the Link header
DRIP_S = 0.2


@dataclass
class Repo:
    issues: dict[int, dict[str, Any]] = field(default_factory=dict)
    comments: dict[int, list[dict[str, Any]]] = field(default_factory=dict)  # issue number -> comments
    files: dict[str, bytes] = field(default_factory=dict)  # attachment path -> bytes
    gists: dict[str, dict[str, Any]] = field(default_factory=dict)
    discussions: dict[int, dict[str, Any]] = field(default_factory=dict)
    rate_limited: bool = False
    # Hostile answers: a redirect or a `Link: next` to another host (`localhost`, where the API is 127.0.0.1), an
    # attachment that drips a byte at a time. Whatever reaches `/elsewhere` was sent where it must not go.
    redirect_elsewhere: set[str] = field(default_factory=set)  # paths answered with a redirect to localhost
    link_elsewhere: bool = False
    drip: dict[str, bytes] = field(default_factory=dict)  # path -> body sent one byte every DRIP_S
    requests: list[tuple[str, str, str | None]] = field(default_factory=list)  # (method, path, authorization)
    next_id: int = 9000


def user(login: str, kind: str = "User") -> dict[str, Any]:
    return {"login": login, "id": abs(hash(login)) % 10**7, "type": kind,
            "html_url": f"https://github.com/{login}"}


class StandIn:
    def __init__(self, owner: str = "acme", repo: str = "trainer") -> None:
        self.owner, self.repo_name, self.state = owner, repo, Repo()
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.elsewhere = f"http://localhost:{self.server.server_address[1]}"  # the same server by another host name
        # serve_forever polls for shutdown every 0.5 s by default, and each test waited for that at its stop
        self._thread = threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)

    def __enter__(self) -> StandIn:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()

    def env(self) -> dict[str, str]:
        return {"GITHUB_API_URL": self.url, "GITHUB_SERVER_URL": self.url, "GITHUB_GRAPHQL_URL": self.url + "/graphql"}

    # ---- fixtures ---------------------------------------------------------------------------------------------

    def add_issue(self, number: int, title: str, body: str, author: str, pull: bool = False) -> None:
        kind = "pull" if pull else "issues"
        issue = {"id": 2_000_000 + number, "node_id": f"I_kw{number}", "number": number, "title": title,
                 "body": body, "user": user(author), "state": "open", "comments": 0, "labels": [],
                 "html_url": f"{self.url}/{self.owner}/{self.repo_name}/{kind}/{number}",
                 "created_at": "2026-11-30T10:00:00Z", "author_association": "NONE"}
        if pull:
            issue["pull_request"] = {"url": f"{self.url}/repos/{self.owner}/{self.repo_name}/pulls/{number}"}
        self.state.issues[number] = issue
        self.state.comments[number] = []

    def add_comment(self, number: int, body: str, author: str, kind: str = "User") -> int:
        self.state.next_id += 1
        cid = self.state.next_id
        issue = self.state.issues[number]
        self.state.comments[number].append({
            "id": cid, "node_id": f"IC_kw{cid}", "body": body, "user": user(author, kind),
            "html_url": f"{issue['html_url']}#issuecomment-{cid}", "created_at": "2026-11-30T11:00:00Z",
            "author_association": "NONE",
            "issue_url": f"{self.url}/repos/{self.owner}/{self.repo_name}/issues/{number}"})
        issue["comments"] = len(self.state.comments[number])
        return cid

    def attach(self, name: str, data: bytes) -> str:
        """A user attachment: the URL a post links (`/user-attachments/files/ID/NAME`)."""
        path = f"/user-attachments/files/{len(self.state.files) + 17000}/{name}"
        self.state.files[path] = data
        return self.url + path

    # ---- the server -------------------------------------------------------------------------------------------

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        standin = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                pass

            def _send(self, status: int, payload: Any = None, headers: dict[str, str] | None = None,
                      raw: bytes | None = None) -> None:
                data = raw if raw is not None else (b"" if payload is None else json.dumps(payload).encode())
                self.send_response(status)
                self.send_header("Content-Type", "application/octet-stream" if raw is not None
                                 else "application/json; charset=utf-8")
                self.send_header("Content-Length", str(len(data)))
                for k, v in (headers or {}).items():
                    self.send_header(k, v)
                self.end_headers()
                self.wfile.write(data)

            def _body(self) -> Any:
                n = int(self.headers.get("Content-Length") or 0)
                return json.loads(self.rfile.read(n)) if n else None

            def _route(self, method: str) -> None:
                s = standin.state
                url = urlparse(self.path)
                s.requests.append((method, self.path, self.headers.get("Authorization")))
                if s.rate_limited and not url.path.startswith(("/user-attachments", "/storage")):
                    self._send(403, {"message": "API rate limit exceeded for 127.0.0.1.",
                                     "documentation_url": "https://docs.github.com/rest/rate-limit"},
                               {"x-ratelimit-limit": "60", "x-ratelimit-remaining": "0",
                                "x-ratelimit-reset": "1796212800"})
                    return
                repo = f"/repos/{standin.owner}/{standin.repo_name}"
                if url.path in s.redirect_elsewhere:
                    return self._send(302, None, {"Location": f"{standin.elsewhere}/elsewhere{url.path}"})
                if method == "GET" and url.path in s.drip:
                    return self._drip(s.drip[url.path])
                if method == "GET" and url.path == "/user":  # who a token is: GitHub refuses an installation token
                    who = self._who()
                    if who is None:
                        return self._send(401, {"message": "Requires authentication"})
                    if who[1] == "Bot":
                        return self._send(403, {"message": "Resource not accessible by integration"})
                    return self._send(200, user(who[0]))
                if method == "GET" and (m := re.fullmatch(repo + r"/issues/(\d+)", url.path)):
                    issue = s.issues.get(int(m.group(1)))
                    return self._send(200, issue) if issue else self._not_found()
                if method == "GET" and (m := re.fullmatch(repo + r"/issues/(\d+)/comments", url.path)):
                    return self._comments(int(m.group(1)), parse_qs(url.query))
                if method == "POST" and (m := re.fullmatch(repo + r"/issues/(\d+)/comments", url.path)):
                    if not self.headers.get("Authorization"):
                        return self._send(401, {"message": "Requires authentication"})
                    login, kind = self._who() or ("ghost", "User")
                    cid = standin.add_comment(int(m.group(1)), self._body()["body"], login, kind)
                    return self._send(201, s.comments[int(m.group(1))][-1] | {"id": cid})
                if (m := re.fullmatch(repo + r"/issues/comments/(\d+)", url.path)):
                    for comments in s.comments.values():
                        for c in comments:
                            if c["id"] == int(m.group(1)):
                                if method == "PATCH":
                                    c["body"] = self._body()["body"]
                                return self._send(200, c)
                    return self._not_found()
                if method == "GET" and (m := re.fullmatch(r"/gists/(\w+)", url.path)):
                    gist = s.gists.get(m.group(1))
                    return self._send(200, gist) if gist else self._not_found()
                if method == "POST" and url.path == "/graphql":
                    return self._graphql(self._body())
                if method == "GET" and url.path in s.files:  # github.com answers with a redirect to storage
                    return self._send(302, None, {"Location": f"{standin.url}/storage{url.path}?X-Amz-Signature=abc"})
                if method == "GET" and url.path.startswith("/storage/"):
                    if self.headers.get("Authorization"):  # storage refuses a token it was not made for
                        return self._send(400, {"message": "Only one auth mechanism allowed"})
                    data = s.files.get(url.path[len("/storage"):])
                    return self._send(200, raw=data) if data is not None else self._not_found()
                return self._not_found()

            def _drip(self, data: bytes) -> None:
                self.send_response(200)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                try:
                    for i in range(len(data)):
                        self.wfile.write(data[i:i + 1])
                        self.wfile.flush()
                        time.sleep(DRIP_S)
                except OSError:  # the client gave up: what the test wants
                    pass

            def _who(self) -> tuple[str, str] | None:
                """The token's identity: `ghp_<login>` is that user's personal token; an installation token (`ghs_`,
                what a workflow's GITHUB_TOKEN is) posts as github-actions[bot]."""
                auth = self.headers.get("Authorization") or ""
                tok = auth.removeprefix("Bearer ").removeprefix("token ")
                if not tok:
                    return None
                return (tok[4:] or "ghost", "User") if tok.startswith("ghp_") else ("github-actions[bot]", "Bot")

            def _not_found(self) -> None:
                self._send(404, {"message": "Not Found", "documentation_url": "https://docs.github.com/rest"})

            def _comments(self, number: int, query: dict[str, list[str]]) -> None:
                if number not in standin.state.issues:
                    return self._not_found()
                page = int(query.get("page", ["1"])[0])
                per = min(int(query.get("per_page", ["30"])[0]), PER_PAGE_CAP)
                comments = standin.state.comments[number]
                chunk = comments[(page - 1) * per: page * per]
                headers = {}
                if page * per < len(comments):
                    host = standin.elsewhere + "/elsewhere" if standin.state.link_elsewhere else standin.url
                    base = f"{host}/repos/{standin.owner}/{standin.repo_name}/issues/{number}/comments"
                    headers["Link"] = (f'<{base}?per_page={per}&page={page + 1}>; rel="next", '
                                       f'<{base}?per_page={per}&page={-(-len(comments) // per)}>; rel="last"')
                self._send(200, chunk, headers)

            def _graphql(self, payload: dict[str, Any]) -> None:
                if not self.headers.get("Authorization"):
                    return self._send(401, {"message": "This endpoint requires you to be authenticated."})
                v = payload.get("variables") or {}
                if "addDiscussionComment" in payload["query"] or "updateDiscussionComment" in payload["query"]:
                    return self._mutation(payload["query"], v)
                d = standin.state.discussions.get(int(v.get("n", 0)))
                if d is None:
                    return self._send(200, {"data": {"repository": {"discussion": None}},
                                            "errors": [{"type": "NOT_FOUND", "message": "Could not resolve to a "
                                                        "Discussion with the number of %s." % v.get("n")}]})
                self._send(200, {"data": {"repository": {"discussion": d}}})

            def _mutation(self, query: str, v: dict[str, Any]) -> None:
                for d in standin.state.discussions.values():
                    nodes = d["comments"]["nodes"]
                    if "addDiscussionComment" in query and d["id"] == v["id"]:
                        standin.state.next_id += 1
                        n = standin.state.next_id
                        c = {"id": f"DC_kw{n}", "databaseId": n, "body": v["body"], "url": f"{d['url']}"
                             f"#discussioncomment-{n}", "author": {"login": (self._who() or ("ghost",))[0]
                                                                     .removesuffix("[bot]")}, "replies": {"nodes": []}}
                        nodes.append(c)
                        return self._send(200, {"data": {"addDiscussionComment": {"comment": {
                            "id": c["id"], "url": c["url"]}}}})
                    for c in nodes:
                        if "updateDiscussionComment" in query and c.get("id") == v["id"]:
                            c["body"] = v["body"]
                            return self._send(200, {"data": {"updateDiscussionComment": {"comment": {
                                "id": c["id"], "url": c["url"]}}}})
                self._send(200, {"data": None, "errors": [{"type": "NOT_FOUND", "message": "Could not resolve to a "
                                                           "node with the global id of '%s'" % v.get("id")}]})

            def do_GET(self) -> None:  # noqa: N802 - http.server's names
                self._route("GET")

            def do_POST(self) -> None:  # noqa: N802
                self._route("POST")

            def do_PATCH(self) -> None:  # noqa: N802
                self._route("PATCH")

        return Handler
