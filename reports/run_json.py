"""Run model -> a JSON-able summary (the `diagnose parse --format json` document)."""
from __future__ import annotations

import dataclasses
from typing import Any

import polars as pl

from diagnose.parsers.facts import Evidence, RunFacts
from diagnose.parsers.run_model import RunModel
from diagnose.reports import redact

SCHEMA_VERSION = 1


def facts_dict(facts: RunFacts, model: RunModel, redact_secrets: bool = True) -> dict[str, Any]:
    def ev(e: Evidence) -> dict[str, Any]:
        return {"value": e.value, "origin": e.origin, "source": model.source_name(e.source), "line": e.line}

    out: dict[str, Any] = {}
    for f in dataclasses.fields(facts):
        value = getattr(facts, f.name)
        if f.name == "env":
            out["env"] = {k: (redact.env_value(k, str(v.value)) if redact_secrets else v.value)
                          for k, v in sorted(value.items())}
        elif f.name == "evidence":
            out["evidence"] = {k: ev(v) for k, v in sorted(value.items()) if not k.startswith("hostname")}
        elif f.name == "claims":
            out["claims"] = {k: [ev(x) for x in v] for k, v in value.items()}
        elif dataclasses.is_dataclass(value) and not isinstance(value, type):
            out[f.name] = dataclasses.asdict(value)
        elif isinstance(value, tuple):
            out[f.name] = list(value)
        else:
            out[f.name] = value
    return out


def summary(model: RunModel, redact_secrets: bool = True) -> dict[str, Any]:
    from diagnose.reports.redactor import Redactor

    out: dict[str, Any] = Redactor(redact_secrets)({
        "schema_version": SCHEMA_VERSION,
        "sources": [dataclasses.asdict(s) for s in model.sources],
        "skipped": [{"name": s.name, "why": s.why} for s in model.skipped],
        "frames": {name: frame.height for name, frame in model.frames.items()},
        "sampled": dict(model.thinned),  # frame -> N: other ranks' rows kept 1 in N (parsers/thinning.py)
        "unparsed_lines": model.unrecognised_lines,
        "invalid_utf8": sum(s.invalid_utf8 for s in model.sources),
        "facts": facts_dict(model.facts, model, redact_secrets),
    })
    return out


def redacted_frame(frame: pl.DataFrame) -> pl.DataFrame:
    """Every text column through the redactor (each distinct value once: frames repeat their strings)."""
    cols = []
    for name, dtype in frame.schema.items():
        if dtype in (pl.String, pl.Categorical):
            col = frame[name].cast(pl.String)
            values = col.unique().drop_nulls()
            mapping = dict(zip(values.to_list(), (redact.text(v) for v in values.to_list())))
            if any(k != v for k, v in mapping.items()):
                cols.append(col.replace_strict(mapping, default=None, return_dtype=pl.String).cast(dtype).alias(name))
    out = frame.with_columns(cols) if cols else frame
    if {"key", "value"} <= set(frame.columns):  # env and facts frames: a value under a secret name goes whole
        keys = out["key"].cast(pl.String).unique().drop_nulls().to_list()
        secret_keys = [k for k in keys if redact.is_secret_env(k.rsplit(".", 1)[-1])
                       or redact.is_secret_key(k.rsplit(".", 1)[-1])]
        secret = out["key"].cast(pl.String).is_in(secret_keys)
        out = out.with_columns(pl.when(secret & pl.col("value").is_not_null()).then(pl.lit(redact.MASK))
                               .otherwise(pl.col("value")).alias("value"))
    return out
