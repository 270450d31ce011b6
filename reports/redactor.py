"""Secrets, hosts and the sources' folder taken out of every string of a document, and control characters made
inert: the one pass a document goes through before any format renders it (reports/document.py, the parse summary of
reports/run_json.py, compare_doc.py). Its own module, so that `diagnose parse` redacts without importing the
analysis that document.py builds on."""
from __future__ import annotations

import re
from typing import Any

from diagnose.reports import inert, redact


class Redactor:
    def __init__(self, enabled: bool, hosts: tuple[str, ...] = (), redact_hosts: bool = False,
                 folder: str | None = None) -> None:
        self.enabled = enabled
        # Paths are shown relative to the sources' common folder: `/home/me/runs/42/slurm.out` reads `slurm.out`
        # (a posted report need not carry a home directory, and reads the same on every machine).
        self.folder = folder.rstrip("/") + "/" if folder else None
        self.aliases: dict[str, str] = {}
        if redact_hosts:
            for h in hosts:
                self.aliases.setdefault(h, f"host-{len(self.aliases) + 1}")
        self.redact_hosts = redact_hosts

    def __call__(self, value: Any) -> Any:
        if isinstance(value, str):
            out = value.replace(self.folder, "") if self.folder else value
            out = inert.text(redact.text(out) if self.enabled else out)
            if self.redact_hosts:
                for host, alias in sorted(self.aliases.items(), key=lambda kv: -len(kv[0])):
                    out = out.replace(host, alias)
                out = re.sub(r"\b(?:\d{1,3}\.){3}\d{1,3}\b", lambda m: self._alias(m.group(0)), out)
            return out
        if isinstance(value, dict):
            # A Kubernetes Secret read as a config: its `data` / `stringData` are secrets whatever their keys.
            secret_kind = self.enabled and value.get("kind") == "Secret"
            return {self(k) if isinstance(k, str) and self.redact_hosts else inert.text(k) if isinstance(k, str) else k:
                    redact.MASK if self._secret_key(k, v) or (self.enabled and v and (
                        k == "stringData" or (secret_kind and k == "data"))) else self(v)
                    for k, v in value.items()}
        if isinstance(value, (list, tuple)):
            return [self(v) for v in value]
        return value

    def _secret_key(self, key: Any, value: Any) -> bool:
        """A structured value under a secret-looking key (`api_key`, `HF_TOKEN`, `password`) is masked whole."""
        return (self.enabled and isinstance(key, str) and isinstance(value, (str, int, float)) and value != ""
                and not isinstance(value, bool) and (redact.is_secret_key(key) or (key.isupper()
                                                                                   and redact.is_secret_env(key))))

    def _alias(self, host: str) -> str:
        return self.aliases.setdefault(host, f"host-{len(self.aliases) + 1}")

    def env(self, name: str, value: str) -> str:
        return str(self(redact.env_value(name, value) if self.enabled else value))
