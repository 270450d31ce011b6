"""Secrets out of everything we print: reports may be posted publicly.

Found by structure first, so that a vendor nobody listed is still caught:
- the value of any name that says it holds a credential (an environment variable, a JSON/YAML/dict key, a
  command-line flag, an HTTP header, a URL query parameter), judged by the name's word parts against a broad
  vocabulary (token, key, secret, pass, pwd, auth, sig, cookie, session, dsn, webhook, private ...), also after any
  `word:` prefix (`node1: HF_TOKEN=...`, `INFO:root:password=...`);
- URL userinfo, the path of webhook URLs, whole `Cookie:` headers, passwords given to the usual short flags
  (`mysql -pX`, `sshpass -p X`, `redis-cli -a X`, `curl -u user:X`), private-key blocks of any kind;
- strings that look random (mixed case and digits, high Shannon entropy, not words run together), wherever they are;
- and the vendor formats of detect-secrets' plugins (Stripe, SendGrid, Twilio, Slack, Discord, npm, PyPI, Azure,
  IBM, Mailchimp, ...) beside the project's own list.

`text` is the one pass every output string goes through (reports/document.py applies it to the whole document, the
CLI to stdout, stderr and `parse`'s outputs, the server to every answer).
"""
from __future__ import annotations

import functools
import re

from diagnose.parsers.credentials import is_secret_name

MASK = "[REDACTED]"

# `use_auth_token: true`, `hub_private_repo: false` say whether, not what: booleans are kept (numbers are not).
_NOT_A_VALUE = {"", "none", "null", "true", "false", "yes", "no", "[redacted]", "***", "<hidden>",
                # the words a sentence puts after a credential's name (`needs a token: set GITHUB_TOKEN`, `--token is
                # empty`): a message of the tool's own, or a thread's prose, holds no credential there
                "is", "are", "was", "set", "or", "and", "the", "a", "an", "to", "for", "of", "in", "on", "from", "with",
                "not", "empty", "unset", "missing", "required", "needed", "given"}

# Every kind of name is judged the same way (parsers/credentials.py); the two names callers use.
is_secret_env = is_secret_name
is_secret_key = is_secret_name


def env_value(name: str, value: str) -> str:
    return MASK if is_secret_name(name) and value else text(value)


_NOT_ALNUM = r"(?<![A-Za-z0-9])"
_PATTERNS: tuple[re.Pattern[str], ...] = tuple(re.compile(p) for p in (
    # Any private-key block (RSA, EC, OPENSSH, ENCRYPTED, PGP ... BLOCK), its body lines with it.
    r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY[A-Z ]*-----[\s\S]*?(?:-----END [A-Z0-9 ]*PRIVATE KEY[A-Z ]*-----|$)",
    _NOT_ALNUM + r"hf_[A-Za-z0-9]{20,}",  # Hugging Face
    _NOT_ALNUM + r"gh[pousr]_[A-Za-z0-9]{30,}",  # GitHub classic tokens
    _NOT_ALNUM + r"github_pat_[A-Za-z0-9_]{40,}",
    _NOT_ALNUM + r"sk-(?:ant-|proj-)?[A-Za-z0-9_-]{20,}",  # OpenAI / Anthropic style
    _NOT_ALNUM + r"(?:sk|rk|pk)_(?:live|test)_[A-Za-z0-9]{16,}",  # Stripe
    _NOT_ALNUM + r"(?:AKIA|ASIA)[A-Z0-9]{16}",  # AWS access key id
    _NOT_ALNUM + r"xox[abeoprs](?:\.xox[a-z])?-[A-Za-z0-9-]{10,}",  # Slack bot/user/app/refresh (xoxe) tokens
    _NOT_ALNUM + r"glpat-[A-Za-z0-9_-]{20,}",  # GitLab
    _NOT_ALNUM + r"npm_[A-Za-z0-9]{36}",
    _NOT_ALNUM + r"AIza[0-9A-Za-z_-]{35}",  # Google API key
    _NOT_ALNUM + r"eyJ[A-Za-z0-9_-]{10,}\.eyJ[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}",  # JWT
    r"(?i)(?<=authorization:)(\s*(?:bearer |basic |token )?)\S+",
    r"(?i)\b(bearer\s+)[A-Za-z0-9._~+/=-]{16,}",
    # A whole cookie header: every pair in it is session state.
    r"(?i)\b((?:set-)?cookie\s*[:=]\s*)[^\n'\"]+",
    # URL credentials: `scheme://user:pw@host`, an empty user (`redis://:pw@host`), `/` or `@` in the password: up to
    # the last `@` before the host name.
    r"(?<=://)[^\s:/?#@]*:[^\s]*(?=@[A-Za-z0-9.\-\[\]]+(?::\d+)?(?:[/\s?#'\")\],;]|$))",
    # A webhook URL is its own credential: everything after the hook's path word (Slack's /services/, Discord's
    # /api/webhooks/, Teams' /webhookb2/, any hooks.* host).
    r"(?i)(?<=://)((?:[\w-]+\.)*hooks?\.[\w.-]+/|[^\s/]+/(?:[^\s/]+/)*?(?:web)?hooks?\w*/)[^\s'\"<>)\]]+",
    # Passwords given to the usual short flags.
    r"(?i)\b((?:sshpass|mysql\w*|mariadb\w*)\b[^\n|;&]*?\s-p\s?)(?!\s)[^\s'\"]+",
    r"(?i)\b(redis-cli\b[^\n|;&]*?\s-a\s+)[^\s'\"]+",
    r"(?i)\b(curl\b[^\n|;&]*?\s(?:-u|--user)\s+[^\s:'\"]*:)[^\s'\"]+",
    r"(?i)(?<=aws_secret_access_key)(\s*[=:]\s*)\S+",
))
# NAME=value / NAME: value / Name-With-Dashes: value, the value bare or quoted (spaces inside quotes belong to it).
# A bare value stops at `&` (a URL's next query parameter) and at quotes, brackets and separators.
_PAIR = re.compile(r"(?<![\w.-])([A-Za-z_][\w.-]*)(\s*[=:]\s*)(?:\"([^\"\n]*)\"|'([^'\n]*)'|([^\s'\",;}\]&]+))")
# "key": "value" (JSON, Python dict reprs)
_QUOTED_KEY = re.compile(r"([\"'])([A-Za-z_][\w.-]*)\1(\s*:\s*)(?:\"((?:[^\"\\\n]|\\.)*)\"|'([^'\n]*)'|"
                         r"([^\s,}\]{\[][^\s,}\]]*))")
# --flag value / --flag=value / -flag value
_FLAG = re.compile(r"(?<![\w-])(--?[A-Za-z][\w.-]*)(=|\s+)(?:\"([^\"\n]*)\"|'([^'\n]*)'|([^\s\"'-][^\s]*))")
# A bare 40-hex W&B key (the format `wandb login` stores).
_WANDB_KEY = re.compile(r"\b(?:local-)?[0-9a-f]{40}\b")
# Random-looking strings: 20+ characters of base64's alphabet (a `/` may follow a URL's `//`), or 32+ hex digits.
_RANDOM_CANDIDATE = re.compile(r"(?<![A-Za-z0-9+])(?:[A-Za-z0-9+][A-Za-z0-9+/]{19,}={0,2}|[0-9a-fA-F]{32,})"
                               r"(?![A-Za-z0-9+])")
# Shannon entropy (bits per character) above which such a string is random: 20 random base62 characters measure
# ~4.0, 32 hex digits ~3.7; checked with detect-secrets' own calculation.
ENTROPY_BASE64 = 3.6
ENTROPY_HEX = 3.0
# Words are made of common letter pairs: a third or more of an identifier's (`Qwen2MoeSparseMoeBlock`, a path's
# `gpfsscratch`) adjacent letter pairs are among English's most frequent bigrams, against ~9% of random letters'.
COMMON_BIGRAMS = frozenset(
    "th he in er an re on at en nd ti es or te of ed is it al ar st to nt ng se ha as ou io le ve co me de hi ri ro ic "
    "ne ea ra ce li ch ll be ma si om ur ca el ta la ns di fo ho pe ec pr no ct us ac ot il tr ly".split())
WORDY_SHARE = 0.4
# A class name is capitalised words: most of it in `Word` runs, against ~15% of a random mixed-case string.
_CAMEL_WORD = re.compile(r"[A-Z][a-z]{2,}")
CAMEL_SHARE = 0.6
CAMEL_WORDY_SHARE = 0.15  # with word-like runs, fewer common pairs are enough
MIN_RANDOM_LOWER = 24  # lower case and digits only (base36 keys) need more length to tell from a word run


def _masked(m: re.Match[str], secret: bool, groups: tuple[int, ...]) -> str:
    if not secret:
        return m.group(0)
    group = next((g for g in groups if m.group(g) is not None), None)
    value = m.group(group).strip() if group is not None else ""
    if value.lower() in _NOT_A_VALUE or value.startswith(MASK[:-1]):  # nothing to hide, or already hidden
        return m.group(0)
    start, end = m.span(group)
    return m.string[m.start():start] + MASK + m.string[end:m.end()]


def _pair(m: re.Match[str]) -> str:
    # In a URL's query a bare `key` is an API key (`?key=AIza...`); elsewhere it names something.
    query_key = m.group(1).lower() == "key" and m.start() > 0 and m.string[m.start() - 1] in "?&"
    if query_key or is_secret_name(m.group(1)):
        return _masked(m, True, (3, 4, 5))
    # `node1: HF_TOKEN=x`, `INFO:root:password=x`: the value of a prefix may itself hold a pair.
    value = m.group(5)
    if value and ("=" in value or ":" in value):
        start = m.start(5) - m.start()
        return m.group(0)[:start] + _PAIR.sub(_pair, value)
    return m.group(0)


def looks_random(token: str) -> bool:
    """A string no one would write by hand: a key, a signature, a password generator's output."""
    from detect_secrets.plugins.high_entropy_strings import Base64HighEntropyString, HexHighEntropyString

    if re.fullmatch(r"[0-9a-fA-F]+", token):
        return (len(token) >= 32 and sum(c.isdigit() for c in token) >= 4 and sum(c.isalpha() for c in token) >= 4
                and _entropy(HexHighEntropyString, token) > ENTROPY_HEX)
    body = token.rstrip("=")
    letters = [c for c in body if c.isalpha()]
    if not letters or not any(c.isdigit() for c in body):
        return False
    if not any(c.isupper() for c in letters) and len(body) < MIN_RANDOM_LOWER:
        return False
    pairs = [body[i:i + 2].lower() for i in range(len(body) - 1) if body[i:i + 2].isalpha()]
    common = sum(p in COMMON_BIGRAMS for p in pairs) / len(pairs) if len(pairs) >= 6 else 0.0
    camel = sum(len(w) for w in _CAMEL_WORD.findall(body)) >= CAMEL_SHARE * len(body)  # Qwen2MoeSparseMoeBlock
    if common >= WORDY_SHARE or (camel and common >= CAMEL_WORDY_SHARE):
        return False
    return _entropy(Base64HighEntropyString, body) > ENTROPY_BASE64


def _random_token(m: re.Match[str]) -> str:
    """A candidate masked whole, or, when it is a path (slashes without base64's `+` or `=` padding), segment by
    segment: `/cache/<sha256>/model` keeps its words."""
    token = m.group(0)
    whole = looks_random(token.replace("/", ""))
    if "/" in token and "+" not in token and not token.endswith("="):
        segments = token.split("/")
        named = any(3 <= len(seg) <= 15 and seg.isalpha() for seg in segments)  # `lib`, `issues`, `NVIDIA`
        if named or not whole:
            return "/".join(MASK if len(seg) >= 16 and looks_random(seg) else seg for seg in segments)
    return MASK if whole else token


@functools.lru_cache(maxsize=None)
def _plugin(cls: type) -> object:
    return cls()


def _entropy(cls: type, token: str) -> float:
    return float(_plugin(cls).calculate_shannon_entropy(token))  # type: ignore[attr-defined]


@functools.lru_cache(maxsize=None)
def _vendor_plugins() -> tuple[object, ...]:
    """detect-secrets' vendor detectors: the formats our own list does not name. Its keyword and entropy plugins are
    left out (the structural rules above cover them for logs), and its public-IP one (hosts are not secrets)."""
    from detect_secrets.core.plugins.util import get_mapping_from_secret_type_to_class

    skip = {"IPPublicDetector", "KeywordDetector", "Base64HighEntropyString", "HexHighEntropyString"}
    return tuple(cls() for cls in get_mapping_from_secret_type_to_class().values() if cls.__name__ not in skip)


_VENDOR_HINT = re.compile(r"[A-Za-z0-9+/]{16}|-----BEGIN|://")  # a string without one holds no vendor token


@functools.lru_cache(maxsize=65536)
def text(s: str) -> str:
    """Mask every secret pattern, every pair whose name says it holds a credential, every random-looking string and
    every vendor token detect-secrets knows."""
    if not s:
        return s
    for pat in _PATTERNS:
        s = pat.sub(lambda m: m.group(1) + MASK if m.lastindex else MASK, s)
    s = _PAIR.sub(_pair, s)
    s = _QUOTED_KEY.sub(lambda m: _masked(m, is_secret_name(m.group(2)), (4, 5, 6)), s)
    s = _FLAG.sub(lambda m: _masked(m, is_secret_name(m.group(1)), (3, 4, 5)), s)
    s = _WANDB_KEY.sub(MASK, s)
    if _VENDOR_HINT.search(s):
        for plugin in _vendor_plugins():
            for found in set(plugin.analyze_string(s)):  # type: ignore[attr-defined]
                if isinstance(found, str) and len(found) >= 8 and found in s:
                    s = s.replace(found, MASK)
        s = _RANDOM_CANDIDATE.sub(_random_token, s)
    return s
