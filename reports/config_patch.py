"""The recommended configuration applied to the user's own files (issue 20): the DeepSpeed JSON edited in place
(keys' order, indentation and comments kept), the accelerate YAML through a round-trip YAML library (comments and
quoting kept), the launch script changed only on the lines that set what changes; and one unified diff of them
against the original paths that `git apply` takes from the sources' common folder. Nothing here touches the
originals: the caller writes the results elsewhere.
"""
from __future__ import annotations

import difflib
import io
import json
import os
import re
from dataclasses import dataclass
from typing import Any

from diagnose.findings import Change
from diagnose.parsers import jsonc
from diagnose.parsers.run_model import RunModel


@dataclass(frozen=True)
class PatchedFile:
    source: str  # the path as it was read
    relpath: str  # relative to the sources' common folder: the patch's path
    before: str
    after: str


@dataclass(frozen=True)
class ConfigPatch:
    files: tuple[PatchedFile, ...]
    notes: tuple[str, ...]  # changes that had no file of the run's to go to, and why
    patch: str
    written: tuple[Change, ...] = ()  # the changes the files now hold


def _patchable(name: str) -> bool:
    """A source a patch can name: a file the user gave (a path, an upload's name), not a URL's attachment or stdin."""
    return bool(name) and "://" not in name and name != "-" and not name.startswith("<")


def build(model: RunModel, changes: tuple[Change, ...]) -> ConfigPatch:
    """Each change applied to the first config source of its kind, from the text the run model kept when it read it
    (RunModel.configs: nothing is read again, and only what was given is written into); what has no file is named in
    `notes`."""
    by_kind: dict[str, str] = {}
    for s in model.sources:
        if s.kind in ("ds_config", "accelerate_config", "launch_script") and s.kind not in by_kind \
                and s.name in model.configs and _patchable(s.name):
            by_kind[s.kind] = s.name
    texts: dict[str, str] = {name: model.configs[name] for name in by_kind.values()}
    edited = dict(texts)
    notes: list[str] = []
    written: list[Change] = []
    for ch in changes:
        kind = {"ds_config": "ds_config", "accelerate": "accelerate_config"}.get(ch.target, "launch_script")
        path = by_kind.get(kind)
        if kind == "ds_config" and (ch.filled_by or ch.after == "auto") and (
                path is None or _filled_in(edited[path], ch.key.split("."))):
            continue  # the framework fills the key from its arguments (diagnose/frameworks.py): nothing to write
        if path is None:
            notes.append(f"{ch.key}: no {kind.replace('_', ' ')} among the sources to write it into")
            continue
        if _new_trainer_flag(model, ch, edited[path]):
            notes.append(f"{ch.key}: add `--{ch.key}{'' if ch.after is True else f' {_flag_value(ch.after)}'}` to "
                         f"the training command if its script takes the Trainer's arguments (HfArgumentParser); "
                         f"{path} does not pass it now, and a script with a parser of its own would refuse it")
            continue
        try:
            after = _apply(kind, edited[path], ch)
        except (ValueError, KeyError, TypeError) as e:
            notes.append(f"{ch.key}: not written into {path} ({e})")
            continue
        if after != edited[path]:
            written.append(ch)
        else:
            notes.append(f"{ch.key}: {path} has no line that sets it")
        edited[path] = after
    root = _common_folder(list(texts))
    out = tuple(PatchedFile(p, os.path.relpath(os.path.abspath(p), root), texts[p], edited[p])
                for p in texts if edited[p] != texts[p])
    return ConfigPatch(out, tuple(notes), unified(out), tuple(written))


def _common_folder(paths: list[str]) -> str:
    if not paths:
        return "."
    return os.path.commonpath([os.path.dirname(os.path.abspath(p)) for p in paths])


# A public output (a report, a comment, the server's stored patch) quotes only the lines a change edits: the lines
# around them in a user's script may hold anything (`docker login -p X` two lines above an export). The hunks' line
# numbers say where they go; `git apply --unidiff-zero` applies such a patch.
PUBLIC_CONTEXT = 0
PUBLIC_APPLY = "git apply --unidiff-zero"


def unified(files: tuple[PatchedFile, ...], context: int = 3) -> str:
    """A diff `git apply` accepts: `a/` and `b/` paths, and the marker for a last line without a newline. With
    `context` 0 (PUBLIC_CONTEXT), `git apply --unidiff-zero` takes it."""
    out = []
    for f in files:
        diff = list(difflib.unified_diff(f.before.splitlines(keepends=True), f.after.splitlines(keepends=True),
                                         f"a/{f.relpath}", f"b/{f.relpath}", n=context))
        for line in diff:
            out.append(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n")
    return "".join(out)


def _apply(kind: str, text: str, ch: Change) -> str:
    if kind == "ds_config":
        return set_json(text, ch.key.split("."), ch.after)
    if kind == "accelerate_config":
        return set_yaml(text, ch.key.split("."), ch.after)
    if ch.target == "env":
        return set_env(text, ch.key, ch.after)
    return set_flag(text, ch.key, ch.after)


def _new_trainer_flag(model: RunModel, ch: Change, script: str) -> bool:
    """A Trainer flag the launch command does not pass yet. Scripts built on the HF Trainer often parse their own
    arguments under the Trainer's names, and refuse one they do not define (`error: unrecognized arguments`, seen
    starting a patched recorded run: benchmarks/patched_runs.py); a flag already there is changed in place. Megatron
    and DeepSpeed-Chat parse their full argument sets, so theirs may be added."""
    if ch.target != "trainer_args" or model.facts.framework != "hf_trainer" or ch.after in (False, None):
        return False
    return re.search(r"--" + re.escape(ch.key) + r"(?=[\s=\\]|$)", script) is None


def _filled_in(text: str, path: list[str]) -> bool:
    """Whether a JSON key that the framework fills is left to it: absent, or "auto" (a literal must move with the
    framework's argument, or the run stops at start-up)."""
    try:
        node = jsonc.scan(text)
    except jsonc.JsoncError:
        return False
    for key in path:
        if not node.is_object or key not in node.members:
            return True
        node = node.members[key][1]
    return text[node.start:node.end].strip() == '"auto"'


# ---- DeepSpeed JSON: in place --------------------------------------------------------------------------------

def set_json(text: str, path: list[str], value: Any) -> str:
    """Set a key path in JSON-with-comments text, keeping everything else byte for byte."""
    if value is None:
        raise ValueError("removing a key is not supported")
    root = jsonc.scan(text)
    node, depth = root, 0
    while depth < len(path) and node.is_object and path[depth] in node.members:
        node = node.members[path[depth]][1]
        depth += 1
    if depth == len(path):
        return text[:node.start] + json.dumps(value) + text[node.end:]
    if not node.is_object:
        raise ValueError(f"{'.'.join(path[:depth])} is not an object")
    unit = _indent_unit(text, root)
    indent = _indent_of(text, node) + unit
    rest: Any = value
    for key in reversed(path[depth + 1:]):
        rest = {key: rest}
    body = json.dumps(rest, indent=len(unit) if unit.strip() == "" and "\t" not in unit else None)
    body = body.replace("\n", "\n" + indent) if "\n" in body else body
    member = f'"{path[depth]}": {body}'
    if node.members:
        last = max(node.members.values(), key=lambda kv: kv[1].end)[1]
        return text[:last.end] + f",\n{indent}{member}" + text[last.end:]
    close = node.end - 1
    return text[:close] + f"\n{indent}{member}\n{indent[:-len(unit)] if unit else indent}" + text[close:]


def _indent_of(text: str, node: jsonc.Node) -> str:
    """The indentation of the line an object opens on."""
    line_start = text.rfind("\n", 0, node.start) + 1
    indent = re.match(r"[ \t]*", text[line_start:])
    return indent.group(0) if indent else ""


def _indent_unit(text: str, root: jsonc.Node) -> str:
    """One level of indentation as the file uses it (the top-level keys' indentation); two spaces by default."""
    for kstart, _ in root.members.values():
        line_start = text.rfind("\n", 0, kstart) + 1
        lead = text[line_start:kstart]
        if lead and lead.strip() == "":
            return lead
    return "  "


# ---- accelerate YAML: round trip ---------------------------------------------------------------------------

def set_yaml(text: str, path: list[str], value: Any) -> str:
    from ruamel.yaml import YAML

    y = YAML()
    y.preserve_quotes = True
    data = y.load(text)
    node = data
    for key in path[:-1]:
        node = node.setdefault(key, {})
    old = node.get(path[-1])
    if isinstance(old, str) and hasattr(old, "style"):  # a quoted scalar keeps its quotes
        value = type(old)(str(value))
    node[path[-1]] = value
    out = io.StringIO()
    y.dump(data, out)
    return out.getvalue()


# ---- the launch script: the lines that set it ---------------------------------------------------------------

def set_env(text: str, name: str, value: Any) -> str:
    """`export NAME=...` (or `NAME=...`) lines: changed or removed; a new variable is exported after the header
    (shebang, #SBATCH lines, comments)."""
    pattern = re.compile(r"^([ \t]*)(export[ \t]+)?" + re.escape(name) + r"=[^\n]*\n?", re.M)
    if value is None:
        return pattern.sub("", text)
    if pattern.search(text):
        return pattern.sub(lambda m: f"{m.group(1)}{m.group(2) or ''}{name}={value}\n", text, count=1)
    lines = text.splitlines(keepends=True)
    at = 0
    while at < len(lines) and (lines[at].startswith("#") or not lines[at].strip()):
        at += 1
    return "".join(lines[:at] + [f"export {name}={value}\n"] + lines[at:])


def set_flag(text: str, flag: str, value: Any) -> str:
    """`--flag value` / `--flag=value` / a bare `--flag`: changed in place; added at the end of the command that runs
    a Python script (before a redirection), across `\\` continuations."""
    word = re.escape(flag)
    with_value = re.compile(r"(--" + word + r")(=|[ \t]+)(?![-<>|&;#]|\d?>)([^\s\\]+)")
    bare = re.compile(r"[ \t]?--" + word + r"(?=[\s\\]|$)")
    if with_value.search(text):
        if value is False or value is None:
            return with_value.sub("", text, count=1)
        return with_value.sub(lambda m: f"{m.group(1)}{m.group(2)}{_flag_value(value)}", text, count=1)
    if bare.search(text):
        if value is False or value is None:
            return bare.sub("", text, count=1)
        return text if value is True else bare.sub(f" --{flag} {_flag_value(value)}", text, count=1)
    if value is False or value is None:
        return text
    return _append_flag(text, f"--{flag}" + ("" if value is True else f" {_flag_value(value)}"))


def _flag_value(value: Any) -> str:
    return str(value).lower() if isinstance(value, bool) else str(value)


def _append_flag(text: str, flag: str) -> str:
    lines = text.splitlines(keepends=True)
    target = None
    i = 0
    while i < len(lines):
        start = i
        while i < len(lines) and lines[i].rstrip("\n").rstrip().endswith("\\"):
            i += 1
        command = "".join(lines[start:i + 1])
        if re.search(r"\.py\b", command) and not command.lstrip().startswith("#"):
            target = i
        i += 1
    if target is None:
        raise ValueError("no command that runs a Python script")
    line = lines[target]
    end = len(line.rstrip("\n"))
    m = re.search(r"\s+(?:\d?>|\||&)", line[:end])
    cut = m.start() if m else len(line[:end].rstrip())
    lines[target] = line[:cut] + f" {flag}" + line[cut:]
    return "".join(lines)
