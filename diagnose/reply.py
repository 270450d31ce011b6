"""A reply in the thread (issue 24): the Markdown report for a GitHub thread, posted as one comment that later runs
edit instead of adding another (a hidden marker finds it), and the trigger of the GitHub Action.

What is posted is meant for a public thread: secrets are redacted as in every report, hostnames too unless the
caller keeps them, @mentions and issue references are inert (reports/markdown.py), and the body stays under
GitHub's 65,536 characters.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from diagnose.parsers import github
from diagnose.parsers.errors import InputError
from diagnose.pipeline import Analysis, Options, analyse

LIMIT = 65_536  # characters GitHub accepts in a comment body (reference/github.md)
CUT_NOTE = "\n\n_(cut to fit a GitHub comment: run `diagnose report` on the thread for the whole report)_\n"


@dataclass(frozen=True)
class Earlier:
    """A comment of the thread that carries the marker: our earlier reply if its author is who posts now."""

    id: int | None
    author: str
    node_id: str | None = None


@dataclass(frozen=True)
class Reply:
    ref: github.ThreadRef
    body: str
    earlier: tuple[Earlier, ...]  # the comments (never the body) that carry the marker, in thread order
    runs: tuple[str, ...]  # the runs the report holds, by name
    discussion: str | None = None  # discussions: the discussion's node id, where a new reply goes

    def ours(self, login: str | None) -> Earlier | None:
        """The last marked comment `login` wrote: the one a post edits. A marker quoted by anyone else (a
        maintainer, a bot of another app, an attacker) is never a reason to edit their comment."""
        if login is None:
            return None
        return next((e for e in reversed(self.earlier) if github.same_login(e.author, login)), None)


GUIDANCE = (f"{github.MARKER}\n## diagnose: training-run report\n\nNothing in this thread reads as a training "
            "run's output yet. For a report, paste the run's log in a fenced block (three backticks before and "
            "after it) or attach it as a `.log` or `.txt` file (`.gz` and `.zip` work too), with the DeepSpeed JSON, "
            "accelerate YAML or launch script if there is one; then ask again. Logs from every rank, with "
            "`wall_clock_breakdown` on, say the most.\n")


def prepare(url: str, sources: list[str] | tuple[str, ...] = (), *, show_hosts: bool = False,
            seq_len: int | None = None, gpu_memory_gb: float | None = None, guide_when_empty: bool = False) -> Reply:
    """The reply for the thread. A thread with nothing to read is an InputError, or, with `guide_when_empty` (the
    Action, which answers a person who asked), a short reply saying what to paste."""
    ref = github.parse_thread_url(url)
    if ref is None:
        raise InputError(url, "not a GitHub issue, pull request or discussion URL")
    found: list[str] = []  # each run's URL (its first post), in order
    try:
        analysis = analyse([url, *sources], Options(redact_hosts=not show_hosts, seq_len=seq_len,
                                                    gpu_memory_gb=gpu_memory_gb),
                           on_runs=lambda runs: found.extend(r.sources[0] for r in runs))
    except InputError as e:
        if not guide_when_empty or isinstance(e, github.GitHubError):  # the API's refusals are not the thread's
            raise
        return _reply(ref, GUIDANCE, github.fetch(ref), ())
    return _reply(ref, body(analysis, found), analysis.threads[0], tuple(r.name for r in analysis.runs))


def _reply(ref: github.ThreadRef, text: str, thread: github.Thread, runs: tuple[str, ...]) -> Reply:
    """The reply, with the thread's marked comments: which of them is ours is decided when posting (who posts)."""
    marked = tuple(Earlier(p.id, p.author, p.node_id) for p in thread.posts
                   if p.index > 0 and github.MARKER in p.body and (p.id is not None or p.node_id is not None))
    return Reply(ref, text, marked, runs, thread.node_id)


def body(analysis: Analysis, run_urls: list[str] | tuple[str, ...] = ()) -> str:
    """The reply: the marker, the report, and for a thread of several runs the command that compares two."""
    offer = ""
    if len(analysis.runs) > 1 and len(run_urls) == len(analysis.runs):
        offer = (f"This thread holds {len(analysis.runs)} runs, reported one by one below. To compare two of them: "
                 f"`diagnose compare {run_urls[0]} {run_urls[1]}`\n\n")
    text = github.MARKER + "\n" + offer + analysis.render("md")
    if len(text) >= LIMIT:
        cut = text[: LIMIT - len(CUT_NOTE) - 64].rsplit("\n", 1)[0]
        text = cut + _close_fence(cut) + CUT_NOTE
    return text


def _close_fence(text: str) -> str:
    """The line that closes a code fence the cut left open (else the note would render as code)."""
    fence = None
    for line in text.split("\n"):
        m = re.match(r"^ {0,3}(`{3,}|~{3,})", line)
        if m is None:
            continue
        if fence is None:
            fence = m.group(1)
        elif m.group(1)[0] == fence[0] and len(m.group(1)) >= len(fence) and not line.strip()[len(m.group(1)):]:
            fence = None
    return "" if fence is None else "\n" + fence


def post(reply: Reply) -> tuple[str, bool]:
    """Post the reply, or edit our earlier one (a marked comment the posting identity wrote); -> the comment's URL
    and whether it was an edit."""
    if github.token() is None:
        raise InputError(reply.ref.url, "posting needs a token: set GITHUB_TOKEN or GH_TOKEN (the dry run needs none)")
    ours = reply.ours(github.whoami(reply.ref.url))
    if reply.ref.kind == "discussions":
        return _post_discussion(reply, ours), ours is not None
    base = f"{github.api_url()}/repos/{reply.ref.owner}/{reply.ref.repo}/issues"
    if ours is not None and ours.id is not None:
        answer = github.request("PATCH", f"{base}/comments/{ours.id}", {"body": reply.body}, what=reply.ref.url)
    else:
        answer = github.request("POST", f"{base}/{reply.ref.number}/comments", {"body": reply.body},
                                what=reply.ref.url)
    return str((answer.data or {}).get("html_url") or reply.ref.thread_url), ours is not None and ours.id is not None


_ADD = """mutation($id: ID!, $body: String!) {
  addDiscussionComment(input: {discussionId: $id, body: $body}) { comment { id url } } }"""
_UPDATE = """mutation($id: ID!, $body: String!) {
  updateDiscussionComment(input: {commentId: $id, body: $body}) { comment { id url } } }"""


def _post_discussion(reply: Reply, earlier: Earlier | None) -> str:
    """Discussions take replies through GraphQL: add a comment to the discussion, or update ours."""
    discussion, ours = reply.discussion, (earlier.node_id if earlier is not None else None)
    if ours is not None:
        mutation, target, key = _UPDATE, ours, "updateDiscussionComment"
    elif discussion is not None:
        mutation, target, key = _ADD, discussion, "addDiscussionComment"
    else:
        raise InputError(reply.ref.url, "GitHub did not give the discussion's id; nothing posted")
    answer = github.request("POST", github.graphql_url(), {"query": mutation, "variables": {
        "id": target, "body": reply.body}}, what=reply.ref.url).data or {}
    if answer.get("errors"):
        raise InputError(reply.ref.url, "GitHub GraphQL: " + str(answer["errors"][0].get("message", "error"))[:160])
    comment = ((answer.get("data") or {}).get(key) or {}).get("comment") or {}
    return str(comment.get("url") or reply.ref.thread_url)


@dataclass(frozen=True)
class Trigger:
    url: str | None  # the thread to answer; None: the event does not ask for a report
    why: str


def from_event(event: str, payload: dict[str, Any], *, label: str, keyword: str) -> Trigger:
    """Whether an `issues` or `issue_comment` event asks for a report: the issue carries `label`, or the new text
    holds `keyword`. Our own replies (the marker) and bots never trigger one, so a reply cannot answer itself."""
    issue = payload.get("issue") or {}
    url = issue.get("html_url")
    if not url:
        return Trigger(None, f"the {event or 'unknown'} event names no issue")
    if event == "issue_comment":
        comment = payload.get("comment") or {}
        if payload.get("action") not in (None, "created", "edited"):
            return Trigger(None, f"comment {payload.get('action')}: nothing to answer")
        text = comment.get("body") or ""
        if github.MARKER in text or (comment.get("user") or {}).get("type") == "Bot":
            return Trigger(None, "a bot's comment (or our own reply): not answered")
        if keyword and keyword in text:
            return Trigger(url, f"the comment holds {keyword!r}")
        return Trigger(None, f"the comment does not hold {keyword!r}")
    if event == "issues":
        labels = {str(x.get("name")) for x in issue.get("labels") or []}
        if label and label in labels and (payload.get("action") != "labeled"
                                          or (payload.get("label") or {}).get("name") == label):
            return Trigger(url, f"the issue carries the label {label!r}")
        if keyword and keyword in (issue.get("body") or ""):
            return Trigger(url, f"the issue body holds {keyword!r}")
        return Trigger(None, f"neither the label {label!r} nor {keyword!r} in the issue")
    return Trigger(None, f"the {event or 'unknown'} event is not one this answers (issues, issue_comment)")
