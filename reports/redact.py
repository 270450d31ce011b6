"""Secrets out of everything we print: reports may be posted publicly.

Patterns follow the token formats of each vendor; a value of an environment variable whose name says it is a
secret is masked whatever it looks like.
"""
from __future__ import annotations

import re

MASK = "[REDACTED]"
SECRET_ENV_NAME = re.compile(r"TOKEN|SECRET|PASSWORD|PASSWD|API_KEY|APIKEY|KEY", re.I)
# Names that contain KEY but carry no secret.
NOT_SECRET_ENV = {"WANDB_KEY_PREFIX"}

_PATTERNS: tuple[re.Pattern[str], ...] = tuple(re.compile(p) for p in (
    r"-----BEGIN [A-Z ]*PRIVATE KEY-----[\s\S]*?(?:-----END [A-Z ]*PRIVATE KEY-----|$)",
    r"\bhf_[A-Za-z0-9]{20,}\b",  # Hugging Face
    r"\bgh[pousr]_[A-Za-z0-9]{30,}\b",  # GitHub classic tokens
    r"\bgithub_pat_[A-Za-z0-9_]{40,}\b",
    r"\bsk-(?:ant-|proj-)?[A-Za-z0-9_-]{20,}\b",  # OpenAI / Anthropic style
    r"\b(?:AKIA|ASIA)[A-Z0-9]{16}\b",  # AWS access key id
    r"\bxox[abprs]-[A-Za-z0-9-]{10,}\b",  # Slack
    r"(?i)(?<=authorization:)(\s*(?:bearer |basic |token )?)\S+",
    r"(?i)\b(bearer\s+)[A-Za-z0-9._~+/=-]{16,}",
    r"(?<=://)[^/\s:@]+:[^/\s@]+(?=@)",  # URL credentials
    r"(?i)(?<=aws_secret_access_key)(\s*[=:]\s*)\S+",
))
_ENV_ASSIGN = re.compile(r"\b([A-Za-z_][A-Za-z0-9_]*)(\s*[=:]\s*)(['\"]?)([^\s'\"]+)\3")
# A bare 40-hex W&B key (the format `wandb login` stores) anywhere near the word wandb or netrc.
_WANDB_KEY = re.compile(r"\b(?:local-)?[0-9a-f]{40}\b")


def is_secret_env(name: str) -> bool:
    return name.upper() not in NOT_SECRET_ENV and bool(SECRET_ENV_NAME.search(name))


def env_value(name: str, value: str) -> str:
    return MASK if is_secret_env(name) and value else value


def text(s: str) -> str:
    """Mask every secret pattern and every `SECRET_NAME=value` assignment in free text."""
    for pat in _PATTERNS:
        s = pat.sub(lambda m: m.group(1) + MASK if m.lastindex else MASK, s)
    s = _ENV_ASSIGN.sub(lambda m: m.group(0) if not is_secret_env(m.group(1))
                        else f"{m.group(1)}{m.group(2)}{m.group(3)}{MASK}{m.group(3)}", s)
    return _WANDB_KEY.sub(MASK, s)
