"""Secrets out of everything we print: reports may be posted publicly.

Patterns follow the token formats of each vendor; a value whose key says it is a secret (an environment variable,
a JSON or YAML key, a command-line flag) is masked whatever it looks like. `text` is the one pass every output
string goes through (reports/document.py applies it to the whole document, the CLI to stderr and to `parse`'s
output).
"""
from __future__ import annotations

import re

MASK = "[REDACTED]"
SECRET_ENV_NAME = re.compile(r"TOKEN|SECRET|PASSWORD|PASSWD|API_KEY|APIKEY|KEY|CREDENTIAL|PRIVATE", re.I)
# Names that contain KEY but carry no secret.
NOT_SECRET_ENV = {"WANDB_KEY_PREFIX", "KEY_PREFIX", "SORT_KEY", "KEYS", "MONKEY", "HOTKEY", "KEYBOARD", "KEY_COLUMN"}
# Flags and config keys are matched by whole name parts: `--hub_token X`, `--api-key=X`, `"password": "..."`, but not
# `--tokenizer_name` or `max_new_tokens`.
_SECRET_PART = re.compile(r"(?:^|[-_.])(?:token|secret|password|passwd|pwd|api[-_]?key|apikey|access[-_]?key|"
                          r"private[-_]?key|secret[-_]?key|auth[-_]?token|credentials?)(?:$|[-_.])", re.I)
_NOT_SECRET_KEYS = {"key_prefix", "sort_key", "primary_key", "tokenizer", "keys"}

_NOT_ALNUM = r"(?<![A-Za-z0-9])"
_PATTERNS: tuple[re.Pattern[str], ...] = tuple(re.compile(p) for p in (
    r"-----BEGIN [A-Z ]*PRIVATE KEY-----[\s\S]*?(?:-----END [A-Z ]*PRIVATE KEY-----|$)",
    _NOT_ALNUM + r"hf_[A-Za-z0-9]{20,}",  # Hugging Face
    _NOT_ALNUM + r"gh[pousr]_[A-Za-z0-9]{30,}",  # GitHub classic tokens
    _NOT_ALNUM + r"github_pat_[A-Za-z0-9_]{40,}",
    _NOT_ALNUM + r"sk-(?:ant-|proj-)?[A-Za-z0-9_-]{20,}",  # OpenAI / Anthropic style
    _NOT_ALNUM + r"(?:AKIA|ASIA)[A-Z0-9]{16}",  # AWS access key id
    _NOT_ALNUM + r"xox[abeoprs](?:\.xox[a-z])?-[A-Za-z0-9-]{10,}",  # Slack bot/user/app/refresh (xoxe) tokens
    _NOT_ALNUM + r"glpat-[A-Za-z0-9_-]{20,}",  # GitLab
    _NOT_ALNUM + r"npm_[A-Za-z0-9]{36}",
    _NOT_ALNUM + r"AIza[0-9A-Za-z_-]{35}",  # Google API key
    _NOT_ALNUM + r"eyJ[A-Za-z0-9_-]{10,}\.eyJ[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}",  # JWT
    r"(?i)(?<=authorization:)(\s*(?:bearer |basic |token )?)\S+",
    r"(?i)\b(bearer\s+)[A-Za-z0-9._~+/=-]{16,}",
    # URL credentials: `scheme://user:pw@host`, an empty user (`redis://:pw@host`), `/` or `@` in the password: up to
    # the last `@` before the host name.
    r"(?<=://)[^\s:/?#@]*:[^\s]*(?=@[A-Za-z0-9.\-\[\]]+(?::\d+)?(?:[/\s?#'\")\],;]|$))",
    r"(?i)(?<=aws_secret_access_key)(\s*[=:]\s*)\S+",
))
# NAME=value / NAME: value, the value bare or quoted (spaces inside quotes belong to the value).
_ENV_ASSIGN = re.compile(r"\b([A-Za-z_][A-Za-z0-9_]*)(\s*[=:]\s*)(?:\"([^\"\n]*)\"|'([^'\n]*)'|([^\s'\",;}\]]+))")
# "key": "value" (JSON, Python dict reprs)
_QUOTED_KEY = re.compile(r"([\"'])([A-Za-z_][\w.-]*)\1(\s*:\s*)(?:\"((?:[^\"\\\n]|\\.)*)\"|'([^'\n]*)'|"
                         r"([^\s,}\]{\[][^\s,}\]]*))")
# --flag value / --flag=value
_FLAG = re.compile(r"(?<![\w-])(--?[A-Za-z][\w.-]*)(=|\s+)(?:\"([^\"\n]*)\"|'([^'\n]*)'|([^\s\"'-][^\s]*))")
# A bare 40-hex W&B key (the format `wandb login` stores).
_WANDB_KEY = re.compile(r"\b(?:local-)?[0-9a-f]{40}\b")


def is_secret_env(name: str) -> bool:
    return name.upper() not in NOT_SECRET_ENV and bool(SECRET_ENV_NAME.search(name))


def is_secret_key(name: str) -> bool:
    """A config key or flag whose value is a secret, by its name's parts."""
    bare = name.lstrip("-")
    return bare.lower() not in _NOT_SECRET_KEYS and bool(_SECRET_PART.search(bare))


def _secret_name(name: str) -> bool:
    """Upper-case names read as environment variables (any TOKEN / KEY / SECRET in them); others by name parts."""
    return is_secret_env(name) if name.isupper() else is_secret_key(name)


def env_value(name: str, value: str) -> str:
    return MASK if is_secret_env(name) and value else text(value)


def _masked(m: re.Match[str], name: str, secret: bool, groups: tuple[int, ...]) -> str:
    if not secret:
        return m.group(0)
    group = next((g for g in groups if m.group(g) is not None), None)
    if group is None or m.group(group).strip().lower() in ("", "none", "null"):
        return m.group(0)
    start, end = m.span(group)
    return m.string[m.start():start] + MASK + m.string[end:m.end()]


def text(s: str) -> str:
    """Mask every secret pattern, every `SECRET_NAME=value`, `"secret_key": value` and `--secret-flag value`."""
    for pat in _PATTERNS:
        s = pat.sub(lambda m: m.group(1) + MASK if m.lastindex else MASK, s)
    s = _ENV_ASSIGN.sub(lambda m: _masked(m, m.group(1), _secret_name(m.group(1)), (3, 4, 5)), s)
    s = _QUOTED_KEY.sub(lambda m: _masked(m, m.group(2), is_secret_key(m.group(2)) or is_secret_env(m.group(2)),
                                          (4, 5, 6)), s)
    s = _FLAG.sub(lambda m: _masked(m, m.group(1), is_secret_key(m.group(1)), (3, 4, 5)), s)
    return _WANDB_KEY.sub(MASK, s)
