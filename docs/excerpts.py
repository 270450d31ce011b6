"""Regenerate the README's excerpts from the current code, so they cannot drift from what the tool prints.

Each block between a `<!-- excerpt: NAME -->` line and the next `<!-- /excerpt -->` line is replaced by NAME's
output: `diagnose ARGS` (run from the repository root), `pairs-table` (the verdict of each recorded compare pair),
`rules-table` (the rule registry) or `formats-table` (the format registry).

    python docs/excerpts.py           # rewrite README.md in place
    python docs/excerpts.py --check   # exit 1 and name the blocks that differ (tests/test_readme.py runs this)
"""
from __future__ import annotations

import argparse
import json
import re
import shlex
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
BLOCK = re.compile(r"(<!-- excerpt: (?P<name>.+?) -->\n)(?P<body>.*?)(<!-- /excerpt -->)", re.DOTALL)
PAIRS = ("zero3", "offload", "one_rank", "slow_rank", "ga4")


def diagnose(args: list[str]) -> str:
    done = subprocess.run([sys.executable, "-m", "diagnose", *args], cwd=ROOT, capture_output=True, text=True,
                          check=True)
    return done.stdout


def pairs_table() -> str:
    rows = ["| candidate | verdict | explained by |", "|---|---|---|"]
    for name in PAIRS:
        doc = json.loads(diagnose(["compare", "sample_logs/pairs/base", f"sample_logs/pairs/{name}", "-f", "json",
                                   "-o", "-"]))
        explained = "; ".join(e["text"] for e in doc["explained_by"][:2])
        rows.append(f"| `{name}` | {doc['verdict']} | {explained} |")
    return "\n".join(rows) + "\n"


def rules_table() -> str:
    """The rule registry (diagnose/rules), as `diagnose rules ID` explains each."""
    sys.path.insert(0, str(ROOT))
    from diagnose.rules import load_all

    rows = ["| rule | finding | what it detects |", "|---|---|---|"]
    rows += [f"| `{r.id}` | {r.title} | {r.detects.replace('|', '/')} |" for r in load_all().values()]
    return "\n".join(rows) + "\n"


def formats_table() -> str:
    """The format registry (reports/formats.py): what --format and -o's suffix take."""
    sys.path.insert(0, str(ROOT))
    from diagnose.reports.formats import FORMATS

    rows = ["| `--format` | `-o` suffixes | what |", "|---|---|---|"]
    rows += [f"| `{f.name}` | {', '.join(f'`{s}`' for s in f.suffixes)} | {f.description} |" for f in FORMATS.values()]
    return "\n".join(rows) + "\n"


def render(name: str) -> str:
    if name == "pairs-table":
        return pairs_table()
    if name == "rules-table":
        return rules_table()
    if name == "formats-table":
        return formats_table()
    if not name.startswith("diagnose "):
        raise SystemExit(f"unknown excerpt {name!r}")
    text = diagnose(shlex.split(name)[1:])
    return text if text.endswith("\n") else text + "\n"


def regenerate(readme: str) -> tuple[str, list[str]]:
    changed: list[str] = []

    def one(m: re.Match[str]) -> str:
        body = "\n" + render(m["name"]) + "\n"
        if body != m["body"]:
            changed.append(m["name"])
        return m.group(1) + body + m.group(4)

    return BLOCK.sub(one, readme), changed


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--check", action="store_true", help="only report blocks that differ (exit 1)")
    args = ap.parse_args()
    text = README.read_text()
    new, changed = regenerate(text)
    if args.check:
        for name in changed:
            print(f"README.md: the excerpt of `{name}` differs from the code's output; run python docs/excerpts.py")
        return 1 if changed else 0
    README.write_text(new)
    print(f"README.md: {len(changed)} excerpt(s) regenerated")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
