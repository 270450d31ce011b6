"""A GitHub thread's pieces -> the training runs it holds (issue 24).

A thread mixes runs: a user's slow run, the fast baseline they compare it with, another user's "same here", a
maintainer's suggested config. They are kept apart by comment and author: a post whose pieces print training steps
starts a run; a post without steps (a config, a launch script, an environment dump) joins its author's latest run,
or their next one; a post by someone who never posts a run is not read into anyone's run (a maintainer's
suggestion is not what ran). A thread with no steps anywhere is one run of all its pieces (configs can still be
diagnosed). The runs are offered to `compare` by their posts' URLs.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from diagnose.parsers import github
from diagnose.parsers.errors import InputError
from diagnose.parsers.run_model import RunModel, build
from diagnose.parsers.sources import Input


@dataclass(frozen=True)
class ThreadRun:
    name: str  # `#5014 comment 3 (alice)`, plus the posts that joined it
    url: str  # the first post's URL: `diagnose report URL` reads this run's first post alone
    inputs: tuple[Input, ...]
    # the run read already, where telling posts apart read it whole (a run of one post): each input is read once
    # (issue 35: a thread with a 200 MB attachment read it twice)
    model: RunModel | None = None


@dataclass(frozen=True)
class ThreadRuns:
    thread: github.Thread
    runs: tuple[ThreadRun, ...]
    skipped: tuple[tuple[str, str], ...]  # (where, why)


def read(ref: github.ThreadRef, tmpdir: Path) -> ThreadRuns:
    thread = github.fetch(ref)
    posts = github.selected(thread)
    found = github.pieces(thread, posts, tmpdir)
    skipped = list(found.skipped)
    if not found.pieces:
        raise InputError(ref.url, "no pasted block, log-looking text or text attachment in "
                         + ("this comment" if ref.comment_id else "the thread"))
    by_post: dict[github.Post, list[Input]] = {}  # in the order the posts sit
    for p in found.pieces:
        by_post.setdefault(p.post, []).append(p.input)
    order = list(by_post)
    if len(order) == 1:
        return ThreadRuns(thread, (_run(thread, order, by_post),), tuple(skipped))
    groups: list[list[github.Post]] = []
    pending: dict[str, list[github.Post]] = {}  # an author's posts without steps, before their first run
    latest: dict[str, list[github.Post]] = {}  # an author's latest run
    models: dict[github.Post, RunModel] = {}
    for post in order:
        if (model := _with_steps(by_post[post])) is not None:
            models[post] = model
            group = pending.pop(post.author, []) + [post]
            groups.append(group)
            latest[post.author] = group
        elif post.author in latest:
            latest[post.author].append(post)
        else:
            pending.setdefault(post.author, []).append(post)
    if not groups:
        return ThreadRuns(thread, (_run(thread, order, by_post),), tuple(skipped))
    for author, posts in pending.items():
        for post in posts:
            skipped.append((f"#{thread.ref.number} {post.label} ({author})",
                            "no training output, and its author posted no run: not read into another's run"))
    return ThreadRuns(thread, tuple(_run(thread, g, by_post, models) for g in groups), tuple(skipped))


def _with_steps(inputs: list[Input]) -> RunModel | None:
    """The post read, where it prints training steps; None where it prints none."""
    try:
        model = build(inputs)
    except InputError:
        return None
    return model if model.frames["steps"].height > 0 else None


def _run(thread: github.Thread, posts: list[github.Post], by_post: dict[github.Post, list[Input]],
         models: dict[github.Post, RunModel] | None = None) -> ThreadRun:
    first = posts[0]
    name = f"#{thread.ref.number} {first.label} ({first.author})" + (
        " with " + ", ".join(p.label for p in posts[1:]) if len(posts) > 1 else "")
    model = (models or {}).get(first) if len(posts) == 1 else None
    return ThreadRun(name, post_url(thread, first), tuple(i for p in posts for i in by_post[p]), model)


def post_url(thread: github.Thread, post: github.Post) -> str:
    """The URL that selects this post alone: its comment anchor, or the thread's `#issue-ID` for the body."""
    if post.index == 0 and " reply " not in post.label:
        anchor = "discussion" if thread.ref.kind == "discussions" else "issue"
        return f"{thread.ref.thread_url}#{anchor}-{thread.id}" if thread.id is not None else thread.ref.thread_url
    if post.url:
        return post.url
    return f"{thread.ref.thread_url}#issuecomment-{post.id}"
