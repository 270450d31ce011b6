"""Secrets out of everything we print: reports may be posted publicly.

Found by structure first, so that a vendor nobody listed is still caught:
- the value of any name that says it holds a credential (an environment variable, a JSON/YAML/dict key, a
  command-line flag, an HTTP header, a URL query parameter), judged by the name's word parts against a broad
  vocabulary (token, key, secret, pass, pwd, auth, sig, cookie, session, dsn, webhook, private ...), also after any
  `word:` prefix (`node1: HF_TOKEN=...`, `INFO:root:password=...`);
- URL userinfo, the path of webhook URLs, whole `Cookie:` headers, any `Authorization` scheme's value, private-key
  blocks of any kind;
- the password position of any command-line tool (`-p X`, `-P X`, `-w X`, `-a X`, `user:pass` / `user%pass` given
  to a user flag, `config set NAME VALUE`, `login TOKEN`), connection strings in any scheme and in `key=value;`
  form (a quoted value is read for pairs too), Go and Oracle DSNs;
- YAML whose credential key holds its value on the lines below (a nested mapping, a list, a `|` / `>` block
  scalar), `name: <credential name>` entries with their `value:`, a Kubernetes Secret's `data:` / `stringData:`;
- URL- and form-encoded pairs (decoded once), escaped JSON, quoted name-value sequences (argv lists, gRPC
  metadata), XML elements and `key=` / `value=` attributes;
- strings that look random (mixed case and digits, high Shannon entropy, not words run together), wherever they are;
- and the vendor formats of detect-secrets' plugins (Stripe, SendGrid, Twilio, Slack, Discord, npm, PyPI, Azure,
  IBM, Mailchimp, ...) beside the project's own list.

Numbers and `$VAR` references are never masked, nor 40- or 64-hex strings under a name that reads as a commit,
revision or digest (tests/test_secret_families.py holds the families, line by line).

`text` is the one pass every output string goes through (reports/document.py applies it to the whole document, the
CLI to stdout, stderr and `parse`'s outputs, the server to every answer).
"""
from __future__ import annotations

import functools
import re
from typing import Any
from urllib.parse import quote, unquote

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
    # Any `Authorization` scheme (Bearer, Basic, Digest, Negotiate, AWS4-HMAC-SHA256, ApiKey ...), its scheme word
    # kept: the rest of the value to the line's end or a closing quote; quoted parts (Digest's) belong to it.
    r"(?i)((?<![\w-])(?:proxy-)?authorization[ \t]*[:=][ \t]*(?:[A-Za-z][\w-]*(?:[ \t]+|%20)(?=\S))?)"
    r"(?:\"[^\"\n]*\"|[^\s'\"][^\n'\"]*)+",
    r"(?i)\b(bearer\s+)[A-Za-z0-9._~+/=-]{16,}",
    # A whole cookie header: every pair in it is session state.
    r"(?i)\b((?:set-)?cookie\s*[:=]\s*)[^\n'\"]+",
    # URL credentials: `scheme://user:pw@host`, an empty user (`redis://:pw@host`), `/` or `@` in the password: up to
    # the last `@` before the host name.
    r"(?<=://)[^\s:/?#@]*:[^\s]*(?=@[A-Za-z0-9.\-\[\]]+(?::\d+)?(?:[/\s?#'\")\],;]|$))",
    # A webhook URL is its own credential: everything after the hook's path word (Slack's /services/, Discord's
    # /api/webhooks/, Teams' /webhookb2/, any hooks.* host).
    r"(?i)(?<=://)((?:[\w-]+\.)*hooks?\.[\w.-]+/|[^\s/]+/(?:[^\s/]+/)*?(?:web)?hooks?\w*/)[^\s'\"<>)\]]+",
    # mysql's and sshpass's `-p`, the password attached to it too (`-pX`); any other tool's `-p X`: _password_flags.
    r"(?i)\b((?:sshpass|mysql\w*|mariadb\w*)\b[^\n|;&]*?\s-p\s?)(?![\s$])[^\s'\"]+",
    # `user:pass`, `user%pass` (smbclient), `user,pass` (lftp) given to a user or auth flag of any tool; a numeric
    # `uid:gid` is not a password.
    r"(?i)((?<![\w-])(?:-u|-U|--user|--username|--auth|--creds|--credentials|--login)(?:=|[ \t]+)['\"]?"
    r"[^\s:%,'\"]+[:%,])(?!\d+(?:[\s'\"]|$))[^\s'\"]+",
    # Go's DSN without a scheme (`user:pass@tcp(host:3306)/db`), Oracle's `user/pass@db` to its tools.
    r"((?<![\w/])[\w.-]+:)[^\s@:/]+(?=@(?:tcp6?|unix|udp)\()",
    r"(?i)(\b(?:sqlplus|rman|expdp|impdp|sqlldr|connect)[ \t]+(?:-\w+[ \t]+)*[\w$#.-]+/)[^\s@/]+(?=@)",
    # openssl's `-passin pass:X`, `-passout pass:X`.
    r"(?i)(\bpass:)[^\s'\"]+",
    # A token given as the argument of a login (`cargo login X`, `wandb login X`); a registry's host name (with a
    # dot) is not one.
    r"(?i)(\blogin[ \t]+)(?![-$<])(?=[^\s.]*[0-9])[^\s.'\"|;&]{8,}(?=[\s'\"|;&]|$)",
    # poetry's `http-basic.<repo> <user> <password>` and htpasswd's `-b file user password`.
    r"(?i)(\bhttp-basic\.\S+[ \t]+\S+[ \t]+)[^\s'\"]+",
    r"(?i)(\bhtpasswd\b(?:[ \t]+-\w+)*[ \t]+-\w*b\w*(?:[ \t]+-\w+)*[ \t]+\S+[ \t]+\S+[ \t]+)[^\s'\"]+",
    # A Kubernetes Secret's literal: `--from-literal=key=value` is a secret whatever the key.
    r"(\B--from-literal=[^=\s]+=)[^\s'\"]+",
    r"(?i)(?<=aws_secret_access_key)(\s*[=:]\s*)\S+",
))
# NAME=value / NAME: value / Name-With-Dashes: value, the value bare or quoted (spaces inside quotes belong to it).
# A bare value stops at `&` (a URL's next query parameter) and at quotes, brackets and separators.
# Spaces and tabs only around the separator: a YAML key with no value (`wandb:`) does not take the next line's key
# for its value.
_PAIR = re.compile(r"(?<![\w.-])([A-Za-z_][\w.-]*)([ \t]*[=:][ \t]*)(?:\"([^\"\n]*)\"|'([^'\n]*)'|"
                   r"([^\s'\",;}\]&]+))")
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


# A number is a setting (`TOKEN_BUDGET=4096`, `max_tokens: 2048`), and `$VAR` / `${VAR}` a reference to a value the
# text does not hold: neither is a secret.
_NOT_SECRET_VALUE = re.compile(r"[-+]?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?|\$\{?\w+\}?")


def _hides_nothing(value: str) -> bool:
    """A value with nothing to mask: a function word, a boolean, a number, a reference, or already masked."""
    value = value.strip()
    return (value.lower() in _NOT_A_VALUE or value.startswith(MASK[:-1]) or MASK in value
            or _NOT_SECRET_VALUE.fullmatch(value) is not None)


def _masked(m: re.Match[str], secret: bool, groups: tuple[int, ...]) -> str:
    if not secret:
        return m.group(0)
    group = next((g for g in groups if m.group(g) is not None), None)
    if _hides_nothing(m.group(group) if group is not None else ""):
        return m.group(0)
    start, end = m.span(group if group is not None else 0)
    return m.string[m.start():start] + MASK + m.string[end:m.end()]


def _pair(m: re.Match[str]) -> str:
    # In a URL's query a bare `key` is an API key (`?key=AIza...`); elsewhere it names something.
    query_key = m.group(1).lower() == "key" and m.start() > 0 and m.string[m.start() - 1] in "?&"
    if query_key or is_secret_name(m.group(1)):
        return _masked(m, True, (3, 4, 5))
    # `node1: HF_TOKEN=x`, `INFO:root:password=x`, a quoted connection string (`DB="Host=h;Password=x"`): the value
    # of a pair may itself hold pairs.
    group = next((g for g in (5, 3, 4) if m.group(g) is not None), None)
    value = m.group(group) if group is not None else ""
    if value and ("=" in value or ":" in value):
        at = group if group is not None else 0
        start, end = m.start(at) - m.start(), m.end(at) - m.start()
        return m.group(0)[:start] + _PAIR.sub(_pair, value) + m.group(0)[end:]
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
    return float(_plugin(cls).calculate_shannon_entropy(token))  # type: ignore[attr-defined]  # detect-secrets: untyped


@functools.lru_cache(maxsize=None)
def _vendor_plugins() -> tuple[object, ...]:
    """detect-secrets' vendor detectors: the formats our own list does not name. Its keyword and entropy plugins are
    left out (the structural rules above cover them for logs), and its public-IP one (hosts are not secrets)."""
    from detect_secrets.core.plugins.util import get_mapping_from_secret_type_to_class

    skip = {"IPPublicDetector", "KeywordDetector", "Base64HighEntropyString", "HexHighEntropyString"}
    kinds: list[Any] = list(get_mapping_from_secret_type_to_class().values())
    return tuple(kind() for kind in kinds if kind.__name__ not in skip)


# ---- structure beyond `name=value` ------------------------------------------------------------------------------

# A commit, revision or digest is an address, not a credential: 40 or 64 hex digits after such a name (`commit:`,
# `git_sha=`, `--revision`, `@sha256:`) are set aside before the masks and put back after them.
_REVISION = re.compile(r"(?i)(?:\b(?:commit|sha(?:1|256|512)?|revision|rev|hash|digest|checksum|git|ref|oid|etag|"
                       r"blob|tree|parent|head|version|build|image)[\w-]*[\"']?[ \t]*[:=@ ][ \t]*[\"']?"
                       r"(?:sha(?:1|256|512):)?|@sha256:)([0-9a-f]{64}|[0-9a-f]{40})(?![0-9A-Za-z])")
_HELD = "\x00{}\x00"
_HELD_RE = re.compile("\x00(\\d+)\x00")


def _hold_revisions(s: str) -> tuple[str, list[str]]:
    held: list[str] = []

    def hold(m: re.Match[str]) -> str:
        held.append(m.group(1))
        return m.group(0)[:m.start(1) - m.start()] + _HELD.format(len(held) - 1)

    return _REVISION.sub(hold, s), held


# The password position of any command-line tool: `-p X`, `-P X`, `-w X`, `-a X` (mysql, sqlcmd, ldapsearch, docker,
# helm, twine, redis-cli, az ...). Tools whose short flags mean something else are left alone (Slurm's partition,
# pdsh's host list, tee's append), as are numbers, ports, paths, flags and `$VAR` references.
_SHORT_PASSWORD_FLAG = re.compile(r"(?<![\w-])(-[pPwa][ \t]+)(?![-$<>|&;#(])([^\s'\"]+)")
_FLAG_NOT_A_PASSWORD = frozenset({
    "mkdir", "cp", "mv", "ls", "ln", "install", "rsync", "scp", "ssh", "tar", "grep", "egrep", "fgrep", "rg", "sed",
    "awk", "sort", "uniq", "wc", "head", "tail", "cat", "tee", "xargs", "nc", "ps", "top", "kill", "strace", "perf",
    "ulimit", "uname", "free", "df", "du", "srun", "sbatch", "salloc", "squeue", "#sbatch", "pdsh", "clush", "pdcp",
    "docker-run", "nvidia-smi", "read", "git", "bash", "sh", "set", "patch", "diff", "taskset", "numactl", "date",
    "touch", "chmod", "chown", "find", "lsof", "netstat", "ss", "ping", "iperf", "iperf3", "htop", "watch", "zcat",
    # a training launch line's short flags are its options (the launch script is what a report's diff quotes)
    "python", "python3", "torchrun", "deepspeed", "accelerate", "mpirun", "horovodrun", "jsrun", "aprun", "pip",
})
_SEGMENT = re.compile(r"[^\n|;&]+")
_COMMAND_WORD = re.compile(r"[ \t]*(?:(?:sudo|env|exec|time|nohup)[ \t]+|[A-Za-z_]\w*=\S*[ \t]+)*(\S+)")
_PORT_OR_PATH = re.compile(r"[\d:.,\[\]-]+|[./~].*|.*/.*|\$.*|[\w-]+\.[A-Za-z]{1,5}")  # ... or a file name


def _password_flags(s: str) -> str:
    if not ("-p" in s or "-P" in s or "-w" in s or "-a" in s):
        return s

    def segment(m: re.Match[str]) -> str:
        text = m.group(0)
        word = _COMMAND_WORD.match(text)
        tool = word.group(1).rsplit("/", 1)[-1].lower() if word else ""
        tool = "python" if re.fullmatch(r"python[\d.]*", tool) else tool
        if tool in _FLAG_NOT_A_PASSWORD or (tool == "docker" and re.match(r"\s*docker\s+(?:run|create|exec)", text)):
            return text
        return _SHORT_PASSWORD_FLAG.sub(lambda f: f.group(0) if _PORT_OR_PATH.fullmatch(f.group(2)) or
                                        f.group(2).startswith(MASK[:-1]) else f.group(1) + MASK, text)

    return _SEGMENT.sub(segment, s)


# A URL- or form-encoded string (`password%3Dx%26...`, `api%5Fkey=x`, a redirect URL inside a query): decoded once,
# read for `name=value` pairs, and each secret value masked in the string in every form it may take there.
_ENCODED_HINT = re.compile(r"%(?:3[Dd]|5[Ff]|2[Dd])")
_DECODED_PAIR = re.compile(r"([A-Za-z_][\w.-]*)=(?=([^\s&'\"]+))")  # a value may hold the next pair


def _encoded_pairs(s: str) -> str:
    if not _ENCODED_HINT.search(s):
        return s
    for m in _DECODED_PAIR.finditer(unquote(s)):
        value = m.group(2)
        if len(value) < 4 or not is_secret_name(m.group(1)) or _hides_nothing(value):
            continue
        for form in sorted({quote(value, safe=""), quote(value), value}, key=len, reverse=True):
            s = s.replace(form, MASK)
    return s


# JSON escaped inside a string (`"{\"api_key\": \"x\"}"`), a sequence of quoted name and value (argv lists'
# `'--hub_token', 'x'`, gRPC metadata's `('authorization', 'Bearer x')`), XML elements and attributes.
_ESCAPED_JSON = re.compile(r'\\"([A-Za-z_][\w.-]*)\\"(\s*:\s*\\")((?:[^"\\\n]|\\[^"])*)(?=\\")')
# (the value in a lookahead: in `'a.py', '--hub_token', 'x'` each quoted item is a name for the next one)
_QUOTED_SEQUENCE = re.compile(r"([\"'])(-{0,2}[A-Za-z_][\w.-]*)\1\s*,\s*(?=([\"'])([^\"'\n]*)\3)")
_XML_ELEMENT = re.compile(r"<([A-Za-z_][\w:.-]*)(\s[^<>]*)?>([^<]*)(?=</\1\s*>)")
_XML_NAMED = re.compile(r"<[A-Za-z_][\w:.-]*\s[^<>]*?\b(?:name|key)\s*=\s*([\"'])([^\"'<>]+)\1[^<>]*>")
_XML_VALUE = re.compile(r"(\bvalue\s*=\s*([\"']))([^\"'<>]*)(?=\2)")
# `<entry name="token">x</entry>`: the element's text under a credential's name
_XML_NAMED_TEXT = re.compile(r"(<[A-Za-z_][\w:.-]*\s[^<>]*?\b(?:name|key)\s*=\s*([\"'])([^\"'<>]+)\2[^<>]*(?<!/)>)"
                             r"([^<]+)(?=</)")


def _structured(s: str) -> str:
    if '\\"' in s:
        s = _ESCAPED_JSON.sub(lambda m: _masked(m, is_secret_name(m.group(1)), (3,)), s)
    if "," in s:
        spans = [m.span(4) for m in _QUOTED_SEQUENCE.finditer(s)
                 if is_secret_name(m.group(2)) and not _hides_nothing(m.group(4))]
        for start, end in reversed(spans):
            s = s[:start] + MASK + s[end:]
    if "<" in s:
        s = _XML_ELEMENT.sub(lambda m: _masked(m, is_secret_name(m.group(1).rsplit(":", 1)[-1]), (3,)), s)

        def named(m: re.Match[str]) -> str:  # `<add key="ApiKey" value="x"/>`
            return _XML_VALUE.sub(lambda v: _masked(v, True, (3,)), m.group(0)) if is_secret_name(m.group(2)) \
                else m.group(0)

        s = _XML_NAMED.sub(named, s)
        s = _XML_NAMED_TEXT.sub(lambda m: m.group(1) + (MASK if is_secret_name(m.group(3)) and not _hides_nothing(
            m.group(4)) else m.group(4)), s)
    return s


# `config set NAME VALUE` of any tool (npm, poetry, aws, rclone, git ...): a value after a credential's name, the name
# judged by its last part (`//registry.npmjs.org/:_authToken`, `pypi-token.pypi`, `user.password`).
_CONFIG_COMMAND = re.compile(r"(?i)\bconfig(?:ure)?\b[^\n|;&]*")
_WORD = re.compile(r"\S+")


def _config_set(s: str) -> str:
    if "onfig" not in s:
        return s

    def command(m: re.Match[str]) -> str:
        words = list(_WORD.finditer(m.group(0)))
        text = m.group(0)
        for a, b in reversed(list(zip(words, words[1:]))):
            name = a.group(0).strip("'\"")
            parts = [p for p in re.split(r"[.:/]", name) if p]
            value = b.group(0).strip("'\"")
            if name.startswith("-") or not parts or not any(is_secret_name(p) for p in parts[-2:]):
                continue
            if value.startswith("-") or _hides_nothing(value):
                continue
            text = text[:b.start()] + MASK + text[b.end():]
        return text

    return _CONFIG_COMMAND.sub(command, s)


# YAML: a credential key whose value is on the lines below (a nested mapping, a list, a `|` or `>` block scalar), a
# `name: <credential name>` entry with its `value:` (Kubernetes and CI env lists), a Secret's `data:` / `stringData:`.
_YAML_KEY = re.compile(r"^([ \t]*)(-[ \t]+)?([\"']?)([A-Za-z_][\w.-]*)\3[ \t]*:(?:[ \t]+(.*?))?[ \t]*$")
_YAML_BLOCK_HEAD = re.compile(r"(?:[|>][+-]?\d*)?(?:[ \t]*#.*)?")
_YAML_HINT = re.compile(r"(?m):[ \t]*(?:[|>][+-]?\d*)?[ \t]*$|^[ \t]*-?[ \t]*(?:name|key)[ \t]*:")


def _yaml_blocks(s: str) -> str:
    if "\n" not in s or not _YAML_HINT.search(s):
        return s
    lines = s.split("\n")
    secret_kind = bool(re.search(r"(?m)^[ \t]*kind:[ \t]*['\"]?Secret\b", s))
    out = list(lines)
    i = 0
    while i < len(lines):
        m = _YAML_KEY.match(lines[i])
        if not m:
            i += 1
            continue
        indent = len(m.group(1)) + (len(m.group(2)) if m.group(2) else 0)
        key, value = m.group(4), m.group(5) or ""
        block = not value or _YAML_BLOCK_HEAD.fullmatch(value)
        nested = (is_secret_name(key) or key == "stringData" or (key == "data" and secret_kind)) and block
        if nested:
            j = i + 1
            while j < len(lines) and (not lines[j].strip() or _indent(lines[j]) > len(m.group(1))):
                out[j] = _mask_yaml_line(lines[j])
                j += 1
            i = j
            continue
        if key in ("name", "key") and is_secret_name(value.strip("'\"")):
            # the entry's `value:` among its siblings (same indentation, until the entry ends)
            j = i + 1
            while j < len(lines) and lines[j].strip() and _indent(lines[j]) >= indent \
                    and not lines[j].lstrip().startswith("- "):
                v = _YAML_KEY.match(lines[j])
                if v and v.group(4) == "value":
                    out[j] = _mask_yaml_line(lines[j])
                j += 1
        i += 1
    return "\n".join(out)


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" \t"))


def _mask_yaml_line(line: str) -> str:
    """A nested line's value masked: `key: value` keeps its key, `- item` its dash, a block scalar's text goes."""
    body = line.strip()
    if not body or body.startswith("#") or MASK in body:
        return line
    lead = line[:_indent(line)]
    m = _YAML_KEY.match(line)
    if m:
        value = m.group(5) or ""
        if not value or _YAML_BLOCK_HEAD.fullmatch(value) or _hides_nothing(value):
            return line
        return line[:m.start(5)] + MASK
    if body.startswith("- "):
        return lead + "- " + MASK
    return lead + MASK


_VENDOR_HINT = re.compile(r"[A-Za-z0-9+/]{16}|-----BEGIN|://")  # a string without one holds no vendor token


@functools.lru_cache(maxsize=65536)
def text(s: str) -> str:
    """Mask every secret pattern, every pair whose name says it holds a credential, every random-looking string and
    every vendor token detect-secrets knows."""
    if not s:
        return s
    s, held = _hold_revisions(s)
    s = _yaml_blocks(s)
    for pat in _PATTERNS:
        s = pat.sub(lambda m: m.group(1) + MASK if m.lastindex else MASK, s)
    s = _PAIR.sub(_pair, s)
    s = _QUOTED_KEY.sub(lambda m: _masked(m, is_secret_name(m.group(2)), (4, 5, 6)), s)
    s = _FLAG.sub(lambda m: _masked(m, is_secret_name(m.group(1)), (3, 4, 5)), s)
    s = _structured(s)
    s = _encoded_pairs(s)
    s = _password_flags(s)
    s = _config_set(s)
    s = _WANDB_KEY.sub(MASK, s)
    if _VENDOR_HINT.search(s):
        for plugin in _vendor_plugins():
            for found in set(plugin.analyze_string(s)):  # type: ignore[attr-defined]  # detect-secrets: untyped
                if isinstance(found, str) and len(found) >= 8 and found in s:
                    s = s.replace(found, MASK)
        s = _RANDOM_CANDIDATE.sub(_random_token, s)
    return _HELD_RE.sub(lambda m: held[int(m.group(1))] if int(m.group(1)) < len(held) else m.group(0), s) \
        if held else s
