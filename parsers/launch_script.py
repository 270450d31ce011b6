"""Bash / sbatch launch scripts: exported and inline environment variables, #SBATCH directives, launcher flags.

Only what the script states is recorded; nothing is executed or expanded beyond `$VAR` references to variables
the script itself assigned.
"""
from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field

from diagnose.parsers.prefixes import LAUNCH_PREFIX

MAX_COMMAND_CHARS = 64 * 1024  # shlex's tokenizer is quadratic in a token's length: 2 MB took 150 s
_ASSIGN = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
_BARE_VAR = re.compile(r"\$\{?[A-Za-z_][A-Za-z0-9_]*\}?")
_VAR_REF = re.compile(r"\$\{?([A-Za-z_][A-Za-z0-9_]*)\}?")
LAUNCHERS = ("deepspeed", "torchrun", "accelerate", "srun", "mpirun", "horovodrun", "python", "python3")
# Flags worth keeping, per launcher (value-taking unless listed in _BOOL_FLAGS).
_BOOL_FLAGS = {"--use_deepspeed", "--gradient_checkpointing", "--bf16", "--fp16", "--tf32", "--multi_gpu",
               "--no_python", "--standalone", "--deepspeed_multinode_launcher"}


# Commands that run the command after them: what follows is read as the command.
_WRAPPERS = ("nohup", "exec", "time", "stdbuf", "nice", "ionice", "taskset")


@dataclass(frozen=True)
class Setting:
    value: str
    line: int


@dataclass
class LaunchScript:
    env: dict[str, Setting] = field(default_factory=dict)
    sbatch: dict[str, Setting] = field(default_factory=dict)
    launcher: str | None = None
    launcher_flags: dict[str, Setting] = field(default_factory=dict)
    script_args: dict[str, Setting] = field(default_factory=dict)
    commands: list[tuple[int, str]] = field(default_factory=list)
    # torchrun / torch.distributed.run / deepspeed / accelerate launch anywhere outside comments: each Slurm task
    # then starts one process per GPU, so `--ntasks-per-node` counts launchers, not processes
    spawns_per_gpu: bool = False


_PER_GPU_LAUNCHER = re.compile(r"(?:^|[\s\"'=;&(])(?:torchrun|python3?\s+(?:-u\s+)?-m\s+torch\.distributed\.(?:run|launch)|"
                               r"deepspeed|accelerate\s+launch)\s", re.M)


def looks_like_script(text: str) -> bool:
    head = text[:4096]
    if re.match(r"#!.*\b(?:ba|z|da)?sh\b", head):
        return True
    if "#SBATCH" in head:
        return True
    if re.search(r"^\[?\d{4}-\d\d-\d\d[ T]\d\d:\d\d", head, re.M):  # a timestamped log, not a script
        return False
    return bool(_LAUNCH_LINE.search(head))


# Within one line only: `[ \t]`, never `\s`, which would run over newlines from every line start (quadratic on a
# text of blank lines: 65,536 of them took a minute).
_SP = r"[ \t]"
_LAUNCH_LINE = re.compile(
    rf"(?:^|&&|;){_SP}*(?:export{_SP}+[A-Za-z_]\w*=|(?:env{_SP}+)?(?:[A-Z_][A-Z0-9_]*=\S*{_SP}+)*(?:deepspeed|"
    rf"torchrun|accelerate{_SP}+launch|srun|mpirun|horovodrun|python3?(?:{_SP}+-m{_SP}+torch\.distributed\.\w+)?){_SP}+"
    r"(?:-{1,2}\w|\S+\.py\b))", re.M)


# Shell lines inside a log: `set -x` traces (`+ export X=1`, `++ srun ...`), prompts (`$ torchrun ...`), and
# commands a wrapper echoed before running them.
_EMBEDDED = re.compile(
    r"^" + LAUNCH_PREFIX + rf"(?:\++ |\$ )?((?:nohup{_SP}+)?(?:(?:bash|sh){_SP}+-c{_SP}+[\"']\(?{_SP}*)?"
    rf"(?:export{_SP}+[A-Za-z_]\w*=|#SBATCH{_SP}|(?:[A-Z_][A-Z0-9_]*=\S*{_SP}+)*(?:srun{_SP}|mpirun{_SP}|"
    rf"horovodrun{_SP}|deepspeed{_SP}|torchrun{_SP}|accelerate{_SP}+launch{_SP}|python3?{_SP}+(?:-u{_SP}+)?-m{_SP}+"
    rf"torch\.distributed\.\w+{_SP})|[A-Z_][A-Z0-9_]*=\S*{_SP}*$).*)$", re.M)
# `+ LAUNCHER='python -m ...'`: traced assignments
_TRACE = re.compile(r"^" + LAUNCH_PREFIX + r"\++ ([A-Za-z_]\w*=.*)$", re.M)


def embedded_script(text: str) -> str | None:
    """The launch commands a log carries, as a script with the log's line numbers (other lines left blank);
    None when there are none."""
    # A command continued over lines (`nohup bash -c \` then `"(torchrun ...`) is matched as one line: each
    # backslash-newline becomes two spaces, so offsets, and the line numbers counted from them, stay the original's.
    joined = text.replace("\\\n", "  ")
    found = sorted((m.start(), m.group(1)) for rx in (_EMBEDDED, _TRACE) for m in rx.finditer(joined))
    keep: dict[int, str] = {}
    line, pos = 0, 0
    for start, command in found:  # line numbers counted once through the text, not once per match
        line += text.count("\n", pos, start)
        pos = start
        keep[line] = command
    if not keep:
        return None
    lines = [""] * (max(keep) + 1)
    for i, kept in keep.items():
        lines[i] = kept
    return "\n".join(lines)


def parse_script(text: str) -> LaunchScript:
    out = LaunchScript()
    out.spawns_per_gpu = bool(_PER_GPU_LAUNCHER.search(re.sub(r"(?m)^[ \t]*#.*$", "", text[:MAX_COMMAND_CHARS * 4])))
    shell_vars: dict[str, str] = {}
    for lineno, logical in _logical_lines(text):
        if len(logical) > MAX_COMMAND_CHARS:  # no launch command is this long; shlex would take minutes on it
            continue
        if logical.startswith("#SBATCH"):
            for key, value in _flag_pairs(_split(logical[len("#SBATCH"):])):
                out.sbatch[key] = Setting(value, lineno)
            continue
        stripped = re.sub(r"(^|\s)#.*$", "", logical).strip()
        if not stripped:
            continue
        for command in commands_of(stripped):
            _command(command, lineno, out, shell_vars)
    return out


def commands_of(line: str) -> list[str]:
    """One logical line's commands, split at `&&`, `||` and `;` outside quotes: `nohup bash -c "(torchrun ...);
    cleanup"` is one command whose quoted word holds two."""
    out, buf, quote, i = [], [], "", 0
    while i < len(line):
        c = line[i]
        if quote:
            if c == quote:
                quote = ""
            elif c == "\\" and quote == '"' and i + 1 < len(line):
                buf.append(c)
                i += 1
                c = line[i]
        elif c in "'\"":
            quote = c
        elif c == ";" or line.startswith(("&&", "||"), i):
            out.append("".join(buf).strip())
            buf = []
            i += 1 if c == ";" else 2
            continue
        buf.append(c)
        i += 1
    out.append("".join(buf).strip())
    return [c for c in out if c]


def _logical_lines(text: str) -> list[tuple[int, str]]:
    out: list[tuple[int, str]] = []
    buf, start = "", 0
    for i, raw in enumerate(text.splitlines(), start=1):
        line = raw.rstrip()
        if not buf:
            start = i
        if line.endswith("\\"):
            buf += line[:-1] + " "
            continue
        out.append((start, (buf + line).strip()))
        buf = ""
    if buf:
        out.append((start, buf.strip()))
    return out


def _split(text: str) -> list[str]:
    try:
        return shlex.split(text, comments=False)
    except ValueError:  # unbalanced quotes in a fragment: fall back to whitespace
        return text.split()


def _command(command: str, lineno: int, out: LaunchScript, shell_vars: dict[str, str]) -> None:
    words = _split(command)
    if not words:
        return
    if words[0] in ("export", "declare", "local", "readonly"):
        for word in words[1:]:
            if _ASSIGN.match(word):
                key, value = word.split("=", 1)
                value = _expand(value, shell_vars)
                shell_vars[key] = value
                out.env[key] = Setting(value, lineno)
        return
    i = 0
    inline: dict[str, str] = {}
    while i < len(words) and _ASSIGN.match(words[i]):
        key, value = words[i].split("=", 1)
        inline[key] = _expand(value, shell_vars)
        i += 1
    rest = words[i:]
    if rest and rest[0] == "env":  # `env A=1 B=2 cmd`
        rest = rest[1:]
        while rest and _ASSIGN.match(rest[0]):
            key, value = rest[0].split("=", 1)
            inline[key] = _expand(value, shell_vars)
            rest = rest[1:]
    if not rest:  # plain shell assignment: a variable for later `$VAR` use, and env if it was exported before
        shell_vars.update(inline)
        for key, value in inline.items():
            if key in out.env or key.isupper():
                out.env[key] = Setting(value, lineno)
        return
    for key, value in inline.items():
        out.env[key] = Setting(value, lineno)
    while rest and rest[0] in _WRAPPERS:  # `nohup torchrun ...`, `exec deepspeed ...`
        rest = rest[1:]
    if rest[:2] in (["bash", "-c"], ["sh", "-c"]) and len(rest) > 2:  # `nohup bash -c "(torchrun ...); ..."`
        for inner in commands_of(rest[2]):
            _command(inner.strip().strip("()").strip(), lineno, out, shell_vars)
        return
    _launcher(rest, lineno, out, shell_vars)


def _launcher(words: list[str], lineno: int, out: LaunchScript, shell_vars: dict[str, str]) -> None:
    prog = words[0].rsplit("/", 1)[-1]
    args = words[1:]
    if prog in ("python", "python3"):
        while args and args[0] in ("-u", "-O", "-B", "-E", "-s", "-OO"):  # interpreter switches before `-m`
            args = args[1:]
    if prog == "accelerate" and args[:1] == ["launch"]:
        args = args[1:]
    elif prog in ("python", "python3") and args[:2] in (["-m", "torch.distributed.run"], ["-m", "torch.distributed.launch"]):
        prog, args = "torchrun", args[2:]
    elif prog in ("python", "python3") and args[:2] == ["-m", "deepspeed.launcher.runner"]:
        prog, args = "deepspeed", args[2:]
    if prog not in LAUNCHERS:
        return
    out.commands.append((lineno, " ".join(words)))
    # A bare `$DISTRIBUTED_ARGS` word splits into words after expansion, as the shell does; a quoted string that
    # holds variables (`bash -c '$LAUNCHER --node_rank ...'`) stays one word.
    args = [w for a in args for w in (_split(_expand(a, shell_vars)) if _BARE_VAR.fullmatch(a) else
                                      [_expand(a, shell_vars)])]
    launcher_args, script_args = _split_at_script(prog, args)
    if prog not in ("python", "python3"):
        if out.launcher is None or prog != "srun":
            out.launcher = prog
        for key, value in _flag_pairs(launcher_args):
            out.launcher_flags[f"{prog}.{key}"] = Setting(value, lineno)
    if script_args and script_args[0].rsplit("/", 1)[-1] in LAUNCHERS:  # srun deepspeed ... / srun torchrun ...
        _launcher(script_args, lineno, out, shell_vars)
        return
    if script_args[:2] in (["bash", "-c"], ["sh", "-c"]) and len(script_args) > 2:  # srun bash -c '$LAUNCHER ...'
        for command in re.split(r"\s*(?:&&|\|\||;)\s*", script_args[2]):
            _command(command, lineno, out, shell_vars)
        return
    for key, value in _flag_pairs(script_args[1:] if script_args else []):
        out.script_args[key] = Setting(value, lineno)


def _split_at_script(prog: str, args: list[str]) -> tuple[list[str], list[str]]:
    """Launcher flags come before the first positional argument (the training script or a nested launcher)."""
    i = 0
    while i < len(args):
        a = args[i]
        if a.startswith("-"):
            if "=" in a or a in _BOOL_FLAGS or i + 1 >= len(args) or args[i + 1].startswith("-"):
                i += 1
            else:
                i += 2
            continue
        if prog in ("python", "python3") and i == 0:
            return [], args
        return args[:i], args[i:]
    return args, []


def _flag_pairs(args: list[str]) -> list[tuple[str, str]]:
    pairs: list[tuple[str, str]] = []
    i = 0
    while i < len(args):
        a = args[i]
        if a.startswith("-"):
            key = a.lstrip("-")
            if "=" in key:
                key, value = key.split("=", 1)
                pairs.append((key, value))
                i += 1
            elif i + 1 < len(args) and not args[i + 1].startswith("-"):
                pairs.append((key, args[i + 1]))
                i += 2
            else:
                pairs.append((key, "true"))
                i += 1
        else:
            i += 1
    return pairs


def _expand(value: str, shell_vars: dict[str, str]) -> str:
    return _VAR_REF.sub(lambda m: shell_vars.get(m.group(1), m.group(0)), value)
