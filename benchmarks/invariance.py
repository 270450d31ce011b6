"""Does the verdict stay put when the same run is printed differently? Every labelled case (../shared/corpus/real
and the project's samples) is re-printed the ways copies of one run differ in the wild, and each copy's verdict is
compared with the original's: the top-3 finding ids (as a set), whether any finding raises an alarm (explains a
slowdown at warning or above), and the run facts the case is labelled with.

The transformations (issue 19, must 8):
  a  every log line prefixed, consistently per rank, as srun `N: `, torchrun `[defaultN]:`, mpirun
     `[1,N]<stdout>:` and pdsh `host: ` (four variants, each counted)
  b  the log wrapped as an issue body: prose, the log in a fence inside `<details>`, saved as `.md`
  c  the launch script or config pasted into the log file before the log (the separate file removed)
  d  the log renamed `.md`, `.txt`, `.out` and with no suffix (four variants)
  e  CRLF line ends
  f  ANSI colours around log levels and whole lines
  g  the first and last 10% of lines dropped: a labelled fact whose evidence line was dropped is not compared, and
     a change that rests on a fact or finding whose only evidence was dropped is counted apart as excused
  h  a progress-bar redraw (a data-loading bar, no newline) glued before every fifth line
  i  gzip
  j  posted to a GitHub issue (logs in fences inside <details>, configs attached, scripts in ```bash fences) and
     read back through the API of a loopback stand-in (tests/github_standin.py)

    python benchmarks/invariance.py [--set real|samples|all] [--only a,b,...] [--json]

Prints, per transformation and overall, the share of (case, variant) pairs whose verdict and facts did not change,
and lists the pairs that changed. A crash (anything but a clean InputError) counts as a change and is named.
"""
from __future__ import annotations

import argparse
import gzip
import hashlib
import json
import os
import re
import shutil
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import accuracy  # noqa: E402

CONFIG_SUFFIXES = {".json", ".yaml", ".yml"}
SCRIPT_SUFFIXES = {".sh", ".bash", ".sbatch", ".slurm"}
_RANK = re.compile(r"\[Rank (\d+)\]|\[rank(\d+)\]:")


@dataclass(frozen=True)
class Verdict:
    top: frozenset[str]
    alarm: bool
    facts: tuple[tuple[str, object], ...]
    evidence_lines: tuple[tuple[str, int | None], ...]  # (fact, line) of each labelled fact's evidence
    refused: str | None = None
    # every run fact the run model settled on, with its evidence line; and each finding's evidence lines
    all_facts: tuple[tuple[str, object, int | None], ...] = ()
    finding_lines: tuple[tuple[str, tuple[int, ...]], ...] = ()


_IS_LOG: dict[tuple[str, bytes], bool] = {}  # (name, digest of the bytes) -> is_log, kept for the process


def is_log(path: Path) -> bool:
    """A case's log files, as the tool itself reads them (a config or launch script is not printed through a
    launcher's prefixes or pasted as an issue's log, whatever its name). Each variant is staged from the same
    files, so the answer is kept by name and content: reading every staged copy again was 40% of the run."""
    from diagnose.parsers import InputError, parse

    if path.suffix.lower() in CONFIG_SUFFIXES | SCRIPT_SUFFIXES:
        return False
    key = (path.name, hashlib.blake2b(path.read_bytes(), digest_size=16).digest())
    if key not in _IS_LOG:
        try:
            _IS_LOG[key] = parse([str(path)]).sources[0].kind in ("log", "launch_script")
        except InputError:
            _IS_LOG[key] = True  # nothing recognisable: text all the same
    return _IS_LOG[key]


# ---- the transformations: (case folder) -> None, rewriting the folder in place --------------------------------

def _logs(folder: Path) -> list[Path]:
    return [p for p in sorted(folder.rglob("*")) if p.is_file() and "wandb" not in p.parts and is_log(p)]


def _rewrite(folder: Path, text_fn: Callable[[str], str]) -> None:
    for p in _logs(folder):
        p.write_bytes(text_fn(p.read_bytes().decode("utf-8", "replace")).encode())


def _rank_of(line: str, last: int) -> int:
    m = _RANK.search(line)
    return int(m.group(1) or m.group(2)) if m else last


def _prefix(fmt: Callable[[int], str]) -> Callable[[Path], None]:
    def apply(folder: Path) -> None:
        def text(t: str) -> str:
            out, rank = [], 0
            for line in t.split("\n"):
                rank = _rank_of(line, 0)
                out.append(fmt(rank) + line if line else line)
            return "\n".join(out)
        _rewrite(folder, text)
    return apply


ISSUE_HEAD = ("### Describe the bug\n\nTraining is much slower than I expected and I cannot tell why. The full "
              "output of the run is below; happy to provide more.\n\n<details>\n<summary>training log</summary>\n\n```\n")
ISSUE_TAIL = "\n```\n\n</details>\n\n### System info\n\nSee the log above. Thanks for any help!\n"


def issue_body(folder: Path) -> None:
    for p in _logs(folder):
        body = ISSUE_HEAD + p.read_text(errors="replace") + ISSUE_TAIL
        p.unlink()
        p.with_suffix(".md").write_text(body)


def pasted_context(folder: Path) -> None:
    logs = _logs(folder)
    if not logs:
        return
    extra = [p for p in sorted(folder.iterdir()) if p.is_file() and p not in logs
             and p.suffix.lower() in CONFIG_SUFFIXES | SCRIPT_SUFFIXES | {""}]
    head = "".join(f"{p.name}:\n{p.read_text(errors='replace').rstrip()}\n\n" for p in extra)
    target = max(logs, key=lambda p: p.stat().st_size)
    target.write_text(head + target.read_text(errors="replace"))
    for p in extra:
        p.unlink()


def _rename(suffix: str) -> Callable[[Path], None]:
    def apply(folder: Path) -> None:
        for p in _logs(folder):
            new = p.with_name(p.stem + suffix) if suffix else p.with_name(p.stem + "_log")
            if new != p and not new.exists():
                p.rename(new)
    return apply


def crlf(folder: Path) -> None:
    _rewrite(folder, lambda t: t.replace("\r\n", "\n").replace("\n", "\r\n"))


def ansi(folder: Path) -> None:
    def text(t: str) -> str:
        t = re.sub(r"\[(INFO|WARNING|ERROR|DEBUG)\]", lambda m: f"[\x1b[32m{m.group(1)}\x1b[0m]", t)
        return "\n".join(f"\x1b[1m{line}\x1b[0m" if i % 7 == 3 and line else line
                         for i, line in enumerate(t.split("\n")))
    _rewrite(folder, text)


DROP = 0.10


def trimmed(folder: Path) -> None:
    def text(t: str) -> str:
        lines = t.split("\n")
        cut = int(len(lines) * DROP)
        return "\n".join(lines[cut: len(lines) - cut] if cut else lines)
    _rewrite(folder, text)


BAR = "Map: 100%|██████████| 1000/1000 [00:01<00:00, 912.35 examples/s]"


def glued_bars(folder: Path) -> None:
    _rewrite(folder, lambda t: "\n".join(BAR + line if i % 5 == 2 and line else line
                                         for i, line in enumerate(t.split("\n"))))


def gzipped(folder: Path) -> None:
    for p in _logs(folder):
        with open(p, "rb") as src, gzip.open(p.with_name(p.name + ".gz"), "wb") as dst:
            shutil.copyfileobj(src, dst)
        p.unlink()


_STANDIN: list[object] = []  # the loopback GitHub stand-in (tests/github_standin.py), started on first use
THREAD_URL = "thread.url"  # left in a case folder by (j): the thread the case was posted to


def _standin() -> object:
    if not _STANDIN:
        sys.path.insert(0, str(ROOT / "tests"))
        from github_standin import StandIn

        s = StandIn().__enter__()
        os.environ.update(s.env())
        os.environ.pop("GITHUB_TOKEN", None)
        os.environ.pop("GH_TOKEN", None)
        _STANDIN.append(s)
    return _STANDIN[0]


def posted_thread(folder: Path) -> None:
    """(j) The case posted to a GitHub issue the way users do: every log in a fence inside `<details>`, each config
    attached as a file, each script pasted in a ```bash fence; then read back through the API (the stand-in)."""
    from diagnose.reports.markdown import fence

    s = _standin()
    logs = _logs(folder)
    files = [p for p in sorted(folder.rglob("*")) if p.is_file() and "wandb" not in p.parts]
    body = [ISSUE_HEAD.split("<details>")[0]]
    for p in logs:
        body.append(f"<details>\n<summary>{p.name}</summary>\n\n{fence(p.read_text(errors='replace'))}\n\n"
                    "</details>\n")
    for p in files:
        if p in logs:
            continue
        if p.suffix.lower() in CONFIG_SUFFIXES:
            body.append(f"[{p.name}]({s.attach(p.name, p.read_bytes())})\n")  # type: ignore[attr-defined]
        else:
            body.append(f"{p.name}:\n\n{fence(p.read_text(errors='replace'), 'bash')}\n")
    number = len(s.state.issues) + 1  # type: ignore[attr-defined]
    s.add_issue(number, "Training is slow", "\n".join(body), "user")  # type: ignore[attr-defined]
    for p in files:
        p.unlink()
    (folder / THREAD_URL).write_text(f"{s.url}/{s.owner}/{s.repo_name}/issues/{number}")  # type: ignore[attr-defined]


TRANSFORMS: dict[str, tuple[tuple[str, Callable[[Path], None]], ...]] = {
    "a": (("srun", _prefix(lambda r: f"{r}: ")), ("torchrun", _prefix(lambda r: f"[default{r}]:")),
          ("mpirun", _prefix(lambda r: f"[1,{r}]<stdout>:")), ("pdsh", _prefix(lambda r: "gpu-node1: "))),
    "b": (("issue", issue_body),),
    "c": (("pasted", pasted_context),),
    "d": (("md", _rename(".md")), ("txt", _rename(".txt")), ("out", _rename(".out")), ("none", _rename(""))),
    "e": (("crlf", crlf),),
    "f": (("ansi", ansi),),
    "g": (("trimmed", trimmed),),
    "h": (("bars", glued_bars),),
    "i": (("gzip", gzipped),),
    "j": (("thread", posted_thread),),
}


# ---- running a case -----------------------------------------------------------------------------------------

def _stage(sources: list[str], dest: Path) -> Path:
    """Copy a case's files (or a sample's folder) into `dest`, flat for real cases."""
    dest.mkdir(parents=True, exist_ok=True)
    for s in sources:
        p = Path(s)
        if p.is_dir():
            shutil.copytree(p, dest, dirs_exist_ok=True)
        else:
            shutil.copy2(p, dest / p.name)
    return dest


def verdict(folder: Path, label: dict) -> Verdict:
    from diagnose.engine import diagnose
    from diagnose.parsers import InputError, parse

    want = label.get("facts") or {}
    sources = [str(folder)]
    if (folder / THREAD_URL).exists():  # (j): the thread, and what could not be posted (a W&B run directory)
        url = (folder / THREAD_URL).read_text()
        (folder / THREAD_URL).unlink()
        sources = [url] + ([str(folder)] if any(p.is_file() for p in folder.rglob("*")) else [])
    try:
        model = parse(sources)
    except InputError as e:
        return Verdict(frozenset(), False, (), (), refused=str(e))
    d = diagnose(model)
    top = frozenset(f.id for f in d.findings[: accuracy.TOP])
    alarm = any(f.explains_slowdown and f.severity in ("critical", "warning") for f in d.findings)
    facts = tuple((k, getattr(model.facts, k, None)) for k in sorted(want))
    lines = tuple((k, model.facts.evidence[k].line if k in model.facts.evidence else None) for k in sorted(want))
    every = tuple((k, getattr(model.facts, k, None), ev.line) for k, ev in sorted(model.facts.evidence.items())
                  if hasattr(model.facts, k))
    found = tuple((f.id, tuple(e.line for e in f.evidence if e.line)) for f in d.findings)
    return Verdict(top, alarm, facts, lines, all_facts=every, finding_lines=found)


@dataclass(frozen=True)
class Outcome:
    case: str
    transform: str
    variant: str
    same: bool
    why: str = ""
    excused: bool = False  # (g): what changed rests on a fact or finding whose only evidence was dropped


def dropped_evidence(base: Verdict, got: Verdict, kept: range) -> list[str]:
    """(g) The base's facts and findings whose evidence lines all fell in the dropped part and that changed or went:
    a verdict that follows from them is excused, as the issue excuses such facts."""
    now = {k: v for k, v, _ in got.all_facts}
    out = [f"{k} (line {line})" for k, v, line in base.all_facts
           if line is not None and line not in kept and now.get(k) != v]
    still = {fid for fid, _ in got.finding_lines}
    out += [f"{fid} (lines {', '.join(map(str, lines[:3]))})" for fid, lines in base.finding_lines
            if fid in base.top and fid not in still and lines and all(x not in kept for x in lines)]
    return out


def compare(base: Verdict, got: Verdict, transform: str, kept_lines: range | None = None) -> str:
    """'' when the verdict held, else what changed."""
    if got.refused:
        return f"refused: {got.refused}"
    why = []
    if got.top != base.top:
        why.append(f"top {sorted(base.top)} -> {sorted(got.top)}")
    if got.alarm != base.alarm:
        why.append(f"alarm {base.alarm} -> {got.alarm}")
    lines = dict(base.evidence_lines)
    for (k, v), (_, w) in zip(base.facts, got.facts):
        if v != w and not (kept_lines is not None and lines.get(k) is not None and lines[k] not in kept_lines):
            why.append(f"{k} {v} -> {w}")
    return "; ".join(why)


_BASES: dict[tuple[str, tuple[str, ...]], tuple[Verdict, int]] = {}  # each case's own verdict, read once a process


def _base(name: str, sources: list[str], label: dict, tmp: Path) -> tuple[Verdict, int]:
    """The case as it is: its verdict and its longest log's line count (the test runs the transformations in
    groups, one process reading each case's original once for all of them)."""
    key = (name, tuple(sources))
    if key not in _BASES:
        base_dir = _stage(sources, tmp / "base" / "case")
        n_lines = max((len(p.read_bytes().split(b"\n")) for p in _logs(base_dir)), default=0)
        _BASES[key] = (verdict(base_dir, label), n_lines)
    return _BASES[key]


def run_case(name: str, sources: list[str], label: dict, only: set[str]) -> list[Outcome]:
    out = []
    with tempfile.TemporaryDirectory(prefix="invariance-") as tmp:
        base, n_lines = _base(name, sources, label, Path(tmp))
        if base.refused:
            return [Outcome(name, "base", "base", False, f"refused: {base.refused}")]
        for key, variants in TRANSFORMS.items():
            if key not in only:
                continue
            for variant, fn in variants:
                folder = _stage(sources, Path(tmp) / f"{key}-{variant}" / "case")
                excused = False
                try:
                    fn(folder)
                    cut = int(n_lines * DROP)
                    kept = range(cut + 1, n_lines - cut + 1) if key == "g" else None
                    got = verdict(folder, label)
                    why = compare(base, got, key, kept)
                    if why and kept is not None and (lost := dropped_evidence(base, got, kept)):
                        excused, why = True, f"{why} [its evidence was dropped: {'; '.join(lost[:3])}]"
                except Exception as e:  # noqa: BLE001 - a crash is a change, named
                    why = f"crash: {type(e).__name__}: {str(e).splitlines()[0][:120] if str(e) else ''}"
                out.append(Outcome(name, key, variant, not why, why, excused))
                shutil.rmtree(folder.parent, ignore_errors=True)
    return out


def run(which: str, only: set[str]) -> list[Outcome]:
    sets = ("real", "samples") if which == "all" else (which,)
    return [o for s in sets for case in accuracy.cases(s) for o in run_case(*case, only)]


def summary(outcomes: list[Outcome]) -> dict[str, object]:
    """Shares over the pairs that could hold: a (g) pair whose change rests on dropped evidence is counted apart
    (`excused`), neither same nor changed."""
    per: dict[str, dict[str, int]] = {}
    for o in outcomes:
        row = per.setdefault(o.transform, {"same": 0, "total": 0, "excused": 0})
        if o.excused:
            row["excused"] += 1
            continue
        row["total"] += 1
        row["same"] += o.same
    total = sum(r["total"] for r in per.values())
    same = sum(r["same"] for r in per.values())
    return {"overall": same / total if total else None, "same": same, "total": total,
            "excused": sum(r["excused"] for r in per.values()),
            "per_transform": {k: {**v, "share": v["same"] / v["total"] if v["total"] else None}
                              for k, v in sorted(per.items())},
            "crashes": sum(1 for o in outcomes if o.why.startswith("crash")),
            "changed": [f"{o.case} [{o.transform}/{o.variant}]: {o.why}" for o in outcomes
                        if not o.same and not o.excused],
            "excused_pairs": [f"{o.case} [{o.transform}/{o.variant}]: {o.why}" for o in outcomes if o.excused]}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--set", choices=("real", "samples", "all"), default="all")
    ap.add_argument("--only", default=",".join(TRANSFORMS), help="transformations to run, e.g. a,e,i")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    outcomes = run(args.set, set(args.only.split(",")))
    if not outcomes:
        print(f"invariance: no labelled case found for --set {args.set} (is ../shared/corpus beside the checkout?)",
              file=sys.stderr)
        return 2
    s = summary(outcomes)
    if args.json:
        print(json.dumps(s, indent=2))
        return 0
    print(f"== invariance ({args.set}): {s['same']}/{s['total']} unchanged = {s['overall']:.1%}, "
          f"{s['crashes']} crashes, {s['excused']} excused (their evidence was dropped)")
    for k, v in s["per_transform"].items():  # type: ignore[union-attr]
        print(f"  {k}  {v['same']:>4}/{v['total']:<4} {v['share']:.1%}" + (f"  ({v['excused']} excused)"
                                                                            if v["excused"] else ""))
    for line in s["changed"]:  # type: ignore[union-attr]
        print("  changed: " + line)
    for line in s["excused_pairs"]:  # type: ignore[union-attr]
        print("  excused: " + line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
