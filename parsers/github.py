"""GitHub issue threads as a source (issue 24): an issue, pull request or discussion URL -> its posts through the
GitHub API -> the pasted blocks and attached files in them, each a named source.

    https://github.com/OWNER/REPO/issues/N            the body and every comment
    https://github.com/OWNER/REPO/pull/N              the conversation (review comments on diff lines are not read)
    https://github.com/OWNER/REPO/discussions/N       body, comments and replies (GraphQL: needs a token)
    ...#issuecomment-ID / #discussioncomment-ID       that one comment
    ...#issue-ID                                      that thread's body alone (the id the API gives the issue)

The REST base is GITHUB_API_URL (default https://api.github.com; GitHub Enterprise https://HOST/api/v3), GraphQL is
GITHUB_GRAPHQL_URL, the web host is GITHUB_SERVER_URL (the names GitHub Actions sets). GITHUB_TOKEN or GH_TOKEN is
sent as a bearer token to the API host only, never to attachment storage. Shapes and limits:
../shared/reference/github.md. Plain urllib, like the raw-log download: three GET shapes, one POST, one PATCH.

A post's pieces, in order: fenced blocks (``` or ~~~), `<details>` blocks (the text around fences inside them), the
rest of the post where it holds log-looking lines, and linked text attachments (user attachments, repository
files, gists, blob links) downloaded with the raw-log size cap and timeout; zips are opened for the same suffixes.
Each piece is written to a temporary file with a suffix the readers know (a ```json block is a config) and named by
where it sits: `#5014 comment 3 (alice) block 2`.
"""
from __future__ import annotations

import contextlib
import contextvars
import json
import os
import re
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from diagnose.parsers.errors import InputError
from diagnose.parsers.sources import (GZIP_RATIO_CAP, GZIP_RATIO_FLOOR, MAX_DOWNLOAD_BYTES, Input, HostRedirects,
                                      archive_inputs, download)

API_TIMEOUT_S = 20.0
MAX_COMMENT_PAGES = 30  # 3,000 comments: past that a thread is not a bug report
MAX_ATTACHMENTS = 40  # per thread; more is a thread of screenshots and wheels, not of logs
MAX_ZIP_MEMBERS = 50
MAX_GIST_FILES = 20  # per gist: a gist of hundreds of files is a dataset, not a paste
# A whole thread, every post, block and attachment together: what it may bring in bytes, and how long its downloads
# may take (past either, the rest is skipped and the report says where the cut fell). Reading what came is linear
# in its bytes, so the byte budget bounds that too.
THREAD_MAX_BYTES = 1 << 30
THREAD_MAX_S = 300.0
ATTACHMENT_SUFFIXES = (".log", ".txt", ".out", ".err", ".json", ".yaml", ".yml", ".sh", ".gz", ".zip", ".tgz", ".tar",
                       ".csv", ".ipynb")  # a metrics export; a notebook in the repository (parsers/notebook.py)
# The suffix a fenced block's info string gives its temporary file, so that the readers sniff it as what it is.
_INFO_SUFFIX = {"json": ".json", "jsonc": ".json", "yaml": ".yaml", "yml": ".yaml", "bash": ".sh", "sh": ".sh",
                "shell": ".sh", "zsh": ".sh", "console": ".log", "text": ".log", "txt": ".log", "log": ".log",
                "python": ".py", "py": ".py", "toml": ".toml", "diff": ".diff"}
MARKER = "<!-- diagnose: training-run report -->"  # the hidden line by which `comment` finds its own reply

_THREAD = re.compile(r"^/(?P<owner>[\w.-]+)/(?P<repo>[\w.-]+)/(?P<kind>issues|pull|discussions)/(?P<n>\d+)"
                     r"(?:/[\w./-]*)?/?$")
_FRAGMENT = re.compile(r"^(?:(?P<what>issuecomment|discussioncomment|issue|discussion)-(?P<id>\d+))?$")


@dataclass(frozen=True)
class ThreadRef:
    owner: str
    repo: str
    kind: str  # issues | pull | discussions
    number: int
    url: str  # as given
    comment_id: int | None = None  # one comment (#issuecomment-ID, #discussioncomment-ID)
    body_only: bool = False  # the thread's body alone (#issue-ID)

    @property
    def thread_url(self) -> str:
        return f"{server_url()}/{self.owner}/{self.repo}/{self.kind}/{self.number}"


@dataclass(frozen=True)
class Post:
    index: int  # 0 the body, k the k-th comment (a discussion reply: its comment's index)
    label: str  # `body`, `comment 3`, `comment 3 reply 1`
    author: str
    body: str
    url: str
    id: int | None = None
    node_id: str | None = None  # GraphQL's id (discussions: what a reply edits)


@dataclass(frozen=True)
class Thread:
    ref: ThreadRef
    title: str
    id: int | None  # the issue's id (#issue-ID selects the body)
    posts: tuple[Post, ...]
    node_id: str | None = None  # GraphQL's id of a discussion (what a reply is added to)


@dataclass(frozen=True)
class Piece:
    post: Post
    name: str  # `#5014 comment 3 (alice) block 2`
    input: Input


@dataclass
class Pieces:
    pieces: list[Piece] = field(default_factory=list)
    skipped: list[tuple[str, str]] = field(default_factory=list)  # (where, why): attachments that did not come


def server_url() -> str:
    return os.environ.get("GITHUB_SERVER_URL", "https://github.com").rstrip("/")


def api_url() -> str:
    return os.environ.get("GITHUB_API_URL", "https://api.github.com").rstrip("/")


def graphql_url() -> str:
    if os.environ.get("GITHUB_GRAPHQL_URL"):
        return os.environ["GITHUB_GRAPHQL_URL"]
    base = api_url()
    return base[: -len("/v3")] + "/graphql" if base.endswith("/api/v3") else base + "/graphql"


# The token of one analysis where it is not the process's own: the server reads a thread with the uploader's token
# (or none), never with its GITHUB_TOKEN, unless started to (diagnose/serve.py). A context variable: each worker
# thread of the server sets its own.
_TOKEN: contextvars.ContextVar[tuple[str | None] | None] = contextvars.ContextVar("github_token", default=None)


def token() -> str | None:
    given = _TOKEN.get()
    if given is not None:
        return given[0]
    return os.environ.get("GITHUB_TOKEN") or os.environ.get("GH_TOKEN") or None


@contextlib.contextmanager
def using_token(value: str | None) -> Iterator[None]:
    """Within the block, the API is called with `value` (None: with no token), whatever the environment holds."""
    reset = _TOKEN.set((value or None,))
    try:
        yield
    finally:
        _TOKEN.reset(reset)


def _api_host(host: str) -> bool:
    return host == (urlparse(api_url()).hostname or "") or host == (urlparse(graphql_url()).hostname or "")


def attachment_host(host: str) -> bool:
    """Where a thread's attachments may be fetched from, redirects included: GitHub's web host, its raw-content
    and release hosts, and the S3 buckets user attachments are stored in."""
    host = host.lower()
    return (host in {h.split(":")[0] for h in _web_hosts()} or host == "codeload.github.com"
            or host.endswith(".githubusercontent.com") or host == "githubusercontent.com"
            or bool(re.fullmatch(r"github-production-[\w-]+\.s3(?:\.[\w-]+)?\.amazonaws\.com", host)))


def _web_hosts() -> set[str]:
    return {"github.com", "www.github.com", urlparse(server_url()).netloc}


def parse_thread_url(text: str) -> ThreadRef | None:
    """An issue, pull request or discussion URL on github.com or GITHUB_SERVER_URL's host; None for anything else."""
    if not text.startswith(("http://", "https://")):
        return None
    url = urlparse(text)
    if url.netloc not in _web_hosts():
        return None
    m = _THREAD.match(url.path)
    if m is None:
        return None
    f = _FRAGMENT.match(url.fragment)
    what, ident = (f.group("what"), int(f.group("id"))) if f and f.group("id") else (None, None)
    return ThreadRef(m["owner"], m["repo"], m["kind"], int(m["n"]), text,
                     comment_id=ident if what in ("issuecomment", "discussioncomment") else None,
                     body_only=what in ("issue", "discussion"))


# ---- HTTP -------------------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Answer:
    status: int
    headers: dict[str, str]
    data: Any


class GitHubError(InputError):
    """The API refused or failed: one line that says why and what to do."""


# The API's redirects (a renamed repository) stay on the API host, where the token may go.
_API_OPENER = urllib.request.build_opener(HostRedirects(_api_host))


def request(method: str, url: str, payload: dict[str, Any] | None = None, *, what: str) -> Answer:
    """One API call with the token (when set), GitHub's media type and version; errors as one line."""
    headers = {"Accept": "application/vnd.github+json", "X-GitHub-Api-Version": "2022-11-28",
               "User-Agent": "diagnose"}
    if (t := token()) is not None:
        headers["Authorization"] = f"Bearer {t}"
    body = None if payload is None else json.dumps(payload).encode()
    if body is not None:
        headers["Content-Type"] = "application/json"
    if not _api_host(urlparse(url).hostname or ""):  # the token goes to the API host alone
        raise GitHubError(what, f"not a GitHub API address ({urlparse(url).hostname}): not requested")
    req = urllib.request.Request(url, data=body, headers=headers, method=method)
    try:
        with _API_OPENER.open(req, timeout=API_TIMEOUT_S) as resp:
            raw = resp.read(MAX_DOWNLOAD_BYTES + 1)
            hdrs = {k.lower(): v for k, v in resp.headers.items()}
            return Answer(resp.status, hdrs, json.loads(raw) if raw.strip() else None)
    except urllib.error.HTTPError as e:
        raise GitHubError(what, _why(e)) from None
    except (urllib.error.URLError, TimeoutError, OSError) as e:
        raise GitHubError(what, f"GitHub API unreachable at {urlparse(url).netloc} "
                                f"({getattr(e, 'reason', e)})") from None
    except ValueError:
        raise GitHubError(what, "the GitHub API answered with something that is not JSON") from None


def _why(e: urllib.error.HTTPError) -> str:
    h = {k.lower(): v for k, v in (e.headers or {}).items()}
    if e.code in (403, 429) and (h.get("x-ratelimit-remaining") == "0" or e.code == 429):
        reset = h.get("x-ratelimit-reset")
        when = (f" until {time.strftime('%H:%M UTC', time.gmtime(int(reset)))}" if reset and reset.isdigit()
                else "")
        hint = "" if token() else "; set GITHUB_TOKEN for 5,000 an hour (60 without one)"
        return f"GitHub API rate limit reached{when}{hint}"
    if e.code == 401:
        return "GitHub refused the token (HTTP 401): check GITHUB_TOKEN / GH_TOKEN"
    if e.code == 404:
        return ("not found on GitHub (HTTP 404)" + ("" if token() else
                                                    "; a private repository needs GITHUB_TOKEN"))
    if e.code == 403:
        return "GitHub refused the request (HTTP 403): the token lacks the permission" + (
            "" if token() else "; set GITHUB_TOKEN")
    return f"GitHub API answered HTTP {e.code} {e.reason}"


def _next_link(headers: dict[str, str]) -> str | None:
    """The next page, if it is on the API host (the token goes with it); a `Link` elsewhere is not followed."""
    m = re.search(r'<([^>]+)>;\s*rel="next"', headers.get("link", ""))
    return m.group(1) if m and _api_host(urlparse(m.group(1)).hostname or "") else None


# ---- the thread -------------------------------------------------------------------------------------------------

def fetch(ref: ThreadRef) -> Thread:
    if ref.kind == "discussions":
        return _discussion(ref)
    base = f"{api_url()}/repos/{ref.owner}/{ref.repo}"
    issue = request("GET", f"{base}/issues/{ref.number}", what=ref.url).data
    posts = [Post(0, "body", _login(issue), issue.get("body") or "", issue.get("html_url") or ref.url,
                  issue.get("id"))]
    url: str | None = f"{base}/issues/{ref.number}/comments?per_page=100"
    pages = 0
    while url and pages < MAX_COMMENT_PAGES:
        answer = request("GET", url, what=ref.url)
        for c in answer.data or []:
            posts.append(Post(len(posts), f"comment {len(posts)}", _login(c), c.get("body") or "",
                              c.get("html_url") or "", c.get("id")))
        url, pages = _next_link(answer.headers), pages + 1
    return Thread(ref, issue.get("title") or "", issue.get("id"), tuple(posts))


ACTIONS_LOGIN = "github-actions[bot]"  # who a workflow's GITHUB_TOKEN posts as


def whoami(what: str) -> str | None:
    """The login the token posts as: `GET /user` for a personal token; an Actions token (which `GET /user` refuses)
    posts as github-actions[bot]; an app's installation token as DIAGNOSE_BOT_LOGIN where that names its bot. None
    where it cannot be told (then nothing is edited: a new comment is posted)."""
    try:
        login = (request("GET", f"{api_url()}/user", what=what).data or {}).get("login")
        if login:
            return str(login)
    except GitHubError:
        pass
    if os.environ.get("DIAGNOSE_BOT_LOGIN"):
        return os.environ["DIAGNOSE_BOT_LOGIN"]
    return ACTIONS_LOGIN if os.environ.get("GITHUB_ACTIONS") == "true" else None


def same_login(a: str, b: str) -> bool:
    """GraphQL names a bot `github-actions` where REST says `github-actions[bot]`."""
    return a.removesuffix("[bot]").lower() == b.removesuffix("[bot]").lower()


def _login(obj: dict[str, Any]) -> str:
    user = obj.get("user") or obj.get("author") or {}
    return str(user.get("login") or "ghost")


_DISCUSSION = """query($owner: String!, $repo: String!, $n: Int!, $cursor: String) {
  repository(owner: $owner, name: $repo) { discussion(number: $n) { id databaseId title body url author { login }
    comments(first: 100, after: $cursor) { nodes { id databaseId body url author { login }
      replies(first: 100) { nodes { databaseId body url author { login } } } }
      pageInfo { hasNextPage endCursor } } } } }"""


def _discussion(ref: ThreadRef) -> Thread:
    if token() is None:
        raise GitHubError(ref.url, "GitHub serves discussions only through its GraphQL API, which needs a token: "
                                   "set GITHUB_TOKEN")
    posts: list[Post] = []
    cursor, title, ident, node = None, "", None, None
    for _ in range(MAX_COMMENT_PAGES):
        answer = request("POST", graphql_url(), {"query": _DISCUSSION, "variables": {
            "owner": ref.owner, "repo": ref.repo, "n": ref.number, "cursor": cursor}}, what=ref.url).data or {}
        if answer.get("errors"):
            raise GitHubError(ref.url, "GitHub GraphQL: " + str(answer["errors"][0].get("message", "error"))[:160])
        d = ((answer.get("data") or {}).get("repository") or {}).get("discussion")
        if d is None:
            raise GitHubError(ref.url, "not found on GitHub (no such discussion)")
        if not posts:
            title, ident, node = d.get("title") or "", d.get("databaseId"), d.get("id")
            posts.append(Post(0, "body", _login(d), d.get("body") or "", d.get("url") or ref.url, ident))
        for c in d["comments"]["nodes"]:
            k = sum(1 for p in posts if p.label.startswith("comment ") and " reply " not in p.label) + 1
            posts.append(Post(k, f"comment {k}", _login(c), c.get("body") or "", c.get("url") or "",
                              c.get("databaseId"), c.get("id")))
            for j, r in enumerate((c.get("replies") or {}).get("nodes") or [], 1):
                posts.append(Post(k, f"comment {k} reply {j}", _login(r), r.get("body") or "", r.get("url") or "",
                                  r.get("databaseId")))
        info = d["comments"]["pageInfo"]
        if not info.get("hasNextPage"):
            break
        cursor = info.get("endCursor")
    return Thread(ref, title, ident, tuple(posts), node)


def selected(thread: Thread) -> list[Post]:
    """The posts the URL names: one comment, the body alone, or all (our own earlier replies left out)."""
    posts = [p for p in thread.posts if MARKER not in p.body]
    if thread.ref.comment_id is not None:
        chosen = [p for p in posts if p.id == thread.ref.comment_id]
        if not chosen:
            raise GitHubError(thread.ref.url, f"no comment {thread.ref.comment_id} in this thread")
        return chosen
    if thread.ref.body_only:
        return posts[:1]
    return posts


# ---- pieces of a post -------------------------------------------------------------------------------------------

_FENCE = re.compile(r"^(?P<indent>[ \t]{0,3})(?P<fence>`{3,}|~{3,})(?P<info>[^\n`]*)\n(?P<body>.*?)"
                    r"(?:\n[ \t]{0,3}(?P=fence)[`~]*[ \t]*(?=\n|\Z)|\Z)", re.M | re.S)
_DETAILS = re.compile(r"<details\b[^>]*>(?P<body>.*?)(?:</details\s*>|\Z)", re.S | re.I)
_SUMMARY = re.compile(r"<summary\b[^>]*>.*?</summary\s*>", re.S | re.I)
_TAG = re.compile(r"</?(?:details|summary|pre|code|br|p|div|b|i|em|strong|sub|sup)\b[^>]*>", re.I)
# A line that a training run printed rather than a person wrote: a timestamp, a log level, NCCL, a metrics dict, a
# progress bar, an environment assignment, a launcher command, a metric and its number (`loss 4.23`, `lr=3e-4`).
_LOGGISH = re.compile(r"\d{4}-\d\d-\d\d[ T]\d\d:\d\d|\[(?:INFO|WARNING|ERROR|DEBUG)|\b(?:INFO|WARNING|ERROR):|NCCL |"
                      r"\{'(?:loss|train_runtime|eval_loss)'|it/s\]|s/it\]|"
                      r"^[ \t]*(?:export[ \t]+)?[A-Z][A-Z0-9_]{2,}=\S|"
                      r"\b(?:deepspeed|torchrun|accelerate launch|srun|mpirun)\b.*--|iteration[ \t]+\d+[ \t]*/|"
                      r"\b(?:loss|lr|grad_norm)\b[ \t]*[=:]?[ \t]*[-+]?\d", re.M)
# (Within a line only: `\s*` after `^` would run over every following newline from each line start, quadratic in a
# post of 65,536 blank lines.)
LOGGISH_LINES = 2  # the rest of a post counts as a paste when this many of its lines look printed
_LINK = re.compile(r"https?://[^\s<>()\[\]\"'`]+")


@dataclass(frozen=True)
class _Text:
    suffix: str
    text: str


def blocks(body: str) -> tuple[list[_Text], str]:
    """(fenced and <details> blocks in the order they sit, the text outside them). A fence left open (a paste cut
    short) runs to the end; a `<details>` inside a fence is log text, not a block."""
    text = body.replace("\r\n", "\n")
    found: list[tuple[int, _Text]] = []
    spans: list[tuple[int, int]] = []
    for m in _FENCE.finditer(text):
        info = (m.group("info").strip().split() or [""])[0].lower()
        found.append((m.start(), _Text(_INFO_SUFFIX.get(info, ".log"), m.group("body"))))
        spans.append((m.start(), m.end()))
    fenced = list(spans)
    for d in _DETAILS.finditer(text):
        if any(a <= d.start() < b for a, b in fenced):
            continue
        inner = _TAG.sub("", _SUMMARY.sub("", _FENCE.sub("\n", d.group("body")))).strip()
        if inner:
            found.append((d.start(), _Text(".log", inner)))
        spans.append((d.start(), d.end()))
    rest, at = [], 0
    for a, b in sorted(spans):
        if a > at:
            rest.append(text[at:a])
        at = max(at, b)
    rest.append(text[at:])
    return [t for _, t in sorted(found, key=lambda x: x[0])], "\n".join(rest)


def links(body: str) -> list[tuple[str, str]]:
    """(download URL, file name) for each text attachment, repository file or gist the post links."""
    server = re.escape(server_url())
    out: list[tuple[str, str]] = []
    for url in dict.fromkeys(u.rstrip(".,;:") for u in _LINK.findall(body)):
        name = url.rsplit("/", 1)[-1].split("?")[0]
        if re.match(server + r"/user-attachments/files/\d+/", url) or \
                re.match(server + r"/[\w.-]+/[\w.-]+/files/\d+/", url):
            out.append((url, name))
        elif m := re.match(server + r"/([\w.-]+/[\w.-]+)/blob/(.+)$", url):
            out.append((f"{server_url()}/{m.group(1)}/raw/{m.group(2)}", name))
        elif url.startswith("https://raw.githubusercontent.com/"):
            out.append((url, name))
        elif m := re.match(r"https://gist\.github\.com/(?:[\w-]+/)?([0-9a-f]{8,})", url):
            out.append((f"gist:{m.group(1)}", m.group(1)))
    return [(u, n) for u, n in out if u.startswith("gist:") or n.lower().endswith(ATTACHMENT_SUFFIXES)]


@dataclass
class _Budget:
    """What is left of a thread's byte and time budget as its pieces come in."""

    bytes_left: int = field(default_factory=lambda: THREAD_MAX_BYTES)
    deadline: float = field(default_factory=lambda: time.monotonic() + THREAD_MAX_S)

    @staticmethod
    def past_bytes() -> str:
        return f"past the thread's {THREAD_MAX_BYTES / 2**20:g} MiB budget: not read"

    def cut(self) -> str | None:
        if self.bytes_left <= 0:
            return self.past_bytes()
        if time.monotonic() > self.deadline:
            return f"past the thread's {THREAD_MAX_S:g} s download budget: not read"
        return None


def pieces(thread: Thread, posts: list[Post], tmpdir: Path) -> Pieces:
    """Every piece of the posts as a temporary file and an Input named by where it sits, within the thread's
    budget (THREAD_MAX_BYTES, THREAD_MAX_S)."""
    out = Pieces()
    budget = _Budget()
    n_attached = 0
    for post in posts:
        where = f"#{thread.ref.number} {post.label} ({post.author})"
        found, rest = blocks(post.body)
        for j, b in enumerate(found, 1):
            _add(out, post, f"{where} block {j}", b.text.encode(), b.suffix, tmpdir, budget)
        prose = _LINK.sub(" ", rest)
        if len(_LOGGISH.findall(prose)) >= LOGGISH_LINES:
            _add(out, post, f"{where} text", rest.encode(), ".md", tmpdir, budget)
        for url, name in links(post.body):
            if n_attached >= MAX_ATTACHMENTS:
                out.skipped.append((f"{where} {name}", f"past {MAX_ATTACHMENTS} attachments in one thread"))
                break
            if (why := budget.cut()) is not None:
                out.skipped.append((f"{where} {name}", why))
                continue
            n_attached += 1
            try:
                _attachment(out, post, where, url, name, tmpdir, budget)
            except InputError as e:
                out.skipped.append((f"{where} {name}", e.why + _private_hint(url)))
    return out


def _private_hint(url: str) -> str:
    return ("; a private repository's attachment may need a browser login, so save it from the browser and pass "
            "the file"
            if "/files/" in url else "")


def _add(out: Pieces, post: Post, name: str, data: bytes, suffix: str, tmpdir: Path, budget: _Budget) -> None:
    if not data.strip():
        return
    if len(data) > budget.bytes_left:
        out.skipped.append((name, budget.past_bytes()))
        budget.bytes_left = 0
        return
    budget.bytes_left -= len(data)
    path = tmpdir / f"piece-{len(out.pieces):04d}{suffix}"
    path.write_bytes(data)
    out.pieces.append(Piece(post, name, Input(name, path, False)))


def _fetch(url: str, tmpdir: Path, budget: _Budget) -> Path:
    """An attachment within what the thread's budget leaves, redirects only to GitHub's attachment hosts."""
    return download(url, tmpdir, max_bytes=min(MAX_DOWNLOAD_BYTES, budget.bytes_left), deadline=budget.deadline,
                    allowed_hosts=attachment_host)


def _attachment(out: Pieces, post: Post, where: str, url: str, name: str, tmpdir: Path, budget: _Budget) -> None:
    if url.startswith("gist:"):
        gist = request("GET", f"{api_url()}/gists/{url[5:]}", what=f"{where} gist {name}").data or {}
        files = [(fname, f) for fname, f in sorted((gist.get("files") or {}).items())
                 if fname.lower().endswith(ATTACHMENT_SUFFIXES + (".md",)) or "." not in fname]
        for fname, f in files[MAX_GIST_FILES:]:
            out.skipped.append((f"{where} gist {fname}", f"past {MAX_GIST_FILES} files in one gist"))
        for fname, f in files[:MAX_GIST_FILES]:
            if (why := budget.cut()) is not None:
                out.skipped.append((f"{where} gist {fname}", why))
                continue
            data = (f.get("content") or "").encode()
            if f.get("truncated") and f.get("raw_url"):
                try:
                    data = _fetch(f["raw_url"], tmpdir, budget).read_bytes()
                except InputError as e:
                    out.skipped.append((f"{where} gist {fname}", e.why))
                    continue
            _add(out, post, f"{where} gist {fname}", data, _suffix(fname), tmpdir, budget)
        return
    fetched = _fetch(url, tmpdir, budget)
    if _unpack(out, post, f"{where} {name}", fetched, tmpdir, budget):
        fetched.unlink()
    elif size := fetched.stat().st_size:  # moved, not read: an attachment may be hundreds of megabytes
        budget.bytes_left -= size
        path = fetched.rename(tmpdir / f"piece-{len(out.pieces):04d}{_suffix(name)}")
        out.pieces.append(Piece(post, f"{where} {name}", Input(f"{where} {name}", path, False)))


def _suffix(name: str) -> str:
    low = name.lower()
    if low.endswith(".gz"):
        return _suffix(low[:-3]) + ".gz" if "." in low[:-3] else ".log.gz"
    suffix = Path(low).suffix
    return suffix if suffix in ATTACHMENT_SUFFIXES or suffix == ".md" else ".log"


def _unpack(out: Pieces, post: Post, where: str, path: Path, tmpdir: Path, budget: _Budget) -> bool:
    """An attached archive's files, each a piece (moved, not read), within what the thread's budget leaves; a member
    that expands past gzip's ratio (sources.GZIP_RATIO_CAP) is listed as skipped and the rest read. -> whether the
    attachment was an archive (sources.archive_inputs)."""
    try:
        members = archive_inputs(where, path, tmpdir, min(MAX_DOWNLOAD_BYTES, budget.bytes_left), MAX_ZIP_MEMBERS)
    except InputError as e:
        out.skipped.append((where, e.why))
        return True
    for inp in members:
        if inp.skip or inp.path is None:
            out.skipped.append((inp.name, inp.skip))
        elif size := inp.path.stat().st_size:
            budget.bytes_left -= size
            out.pieces.append(Piece(post, inp.name, inp))
    return bool(members)
