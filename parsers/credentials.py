"""Which names hold credentials: an environment variable, a config key, a flag, a header or a URL parameter, judged
by its word parts. A fact about names that the redactor (reports/redact.py) and the analysis that quotes config values
(diagnose/compare.py: a changed password is named, never shown) both need, kept in one place."""
from __future__ import annotations

import functools
import re

# Word parts that say a name holds a credential. Matched as whole parts of the name (split at `_ - .`, spaces and
# camelCase): `hub_token`, `X-Api-Key`, `sessionToken`, `DB_PASS`, `SENTRY_DSN`, `sig`, `SLACK_WEBHOOK_URL`.
SECRET_PARTS = frozenset({
    "token", "key", "apikey", "secret", "secrets", "pass", "passwd", "password", "passphrase", "pwd", "pw", "auth",
    "authorization", "sig", "signature", "credential", "credentials", "cred", "creds", "cookie", "cookies", "session",
    "sessionid", "dsn", "webhook", "private", "privatekey", "bearer", "otp", "salt", "sas", "jwt", "pat",
    "accesskey", "secretkey", "accesstoken", "refreshtoken", "clientsecret", "storepass", "keypass", "srcstorepass",
    "deststorepass",
})
# The longer words also inside a part, for names glued together: PGPASSWORD, MYSECRET, APITOKEN, HOOKSECRET.
_SECRET_INFIX = re.compile(r"passw(?:or)?d|secret|credential|apikey|webhook|passphrase|privatekey|"
                           r"token(?!iz|s\b|s_)|cookie", re.I)
# A part that says the name counts, orders or names things rather than holding a secret: `max_new_tokens` has no
# credential part; `pad_token`, `num_key_value_heads`, `sort_key`, `key_file`, `token_path` have one but are not.
CONTEXT_PARTS = frozenset({
    "pad", "eos", "bos", "unk", "sep", "cls", "mask", "max", "min", "num", "n", "total", "per", "new", "special",
    "length", "len", "size", "count", "limit", "prefix", "sort", "primary", "foreign", "type", "types", "column",
    "file", "path", "dir", "name", "names", "heads", "dim", "id", "ids", "cache", "index", "map",
    "timeout", "expiry", "expires", "lifetime", "ttl", "level", "enabled", "enable", "required", "mode",
})
_PARTS = re.compile(r"[-_.\s]+|(?<=[a-z0-9])(?=[A-Z])")


@functools.lru_cache(maxsize=4096)
def is_secret_name(name: str) -> bool:
    """A name (env variable, key, flag, header, query parameter) whose value is a credential."""
    bare = name.strip().lstrip("-").strip("'\"")
    parts = [p.lower() for p in _PARTS.split(bare) if p]
    if not parts:
        return False
    if not (SECRET_PARTS.intersection(parts) or any(_SECRET_INFIX.search(p) for p in parts)):
        return False
    if parts == ["key"]:  # a field called `key` names something (a config key, a sort key); `api_key` holds one
        return False
    # `token_path`'s and `pad_token`'s value is not a credential; `hub_token`'s is.
    return not CONTEXT_PARTS.intersection(parts)
