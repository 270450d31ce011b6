"""Secrets planted in every kind of input never reach any output: the four report formats, `parse` (JSON, the
parquet frames and facts.json it writes) and stderr. Every planted value is unique, so a leak of any part of the
pipeline shows as that value found in an output."""
from __future__ import annotations

import json
import re
from pathlib import Path

import polars as pl
import pytest

from conftest import SAMPLES, run_cli

# (secret value, how it is written into an input). The values are fakes in each vendor's shape.
SECRETS = {
    "hf": "hf_AbCdEfGhIjKlMnOpQrStUvWx01",
    "gh": "ghp_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789",
    "ghpat": "github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyzABCDEFGHIJ",
    "openai": "sk-proj-AbCdEfGhIjKlMnOpQrStUv",
    "anthropic": "sk-ant-AbCdEfGhIjKlMnOpQrStUvWx",
    "aws_id": "AKIAABCDEFGHIJKLMNOP",
    "aws_secret": "wJalrXUtnFEMIK7MDENGbPxRfiCYEXAMPLEKEY01",
    "slack": "xoxb-1234567890-abcdefghijklmnop",
    "slack_refresh": "xoxe-1-ABCDEFGHIJKLMNOPQRSTUVWXYZ",
    "gitlab": "glpat-AbCdEfGhIjKlMnOpQrSt",
    "google": "AIzaSyAbCdEfGhIjKlMnOpQrStUvWxYz0123456",
    "jwt": "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c",
    "wandb": "0123456789abcdef0123456789abcdef01234567",
    "bearer": "AbCdEfGhIjKlMnOpQrStUvWx.yz",
    "url_pw": "urlPassw0rdXyz",
    "url_pw_empty_user": "redisPassw0rdXyz",
    "url_pw_slash": "pa/ss@w0rdXyz",
    "db_url": "dbPassw0rdXyz",
    "env_password": "envPassw0rdXyz",
    "env_quoted": "quoted secret with spaces",
    "env_secret": "envSecretValueXyz",
    "json_password": "jsonPassw0rdXyz",
    "json_wandb_key": "jsonWandbKeyXyz",
    "yaml_token": "yamlTokenValueXyz",
    "flag_password": "flagPassw0rdXyz",
    "flag_hub_token": "flagHubTokenXyz",
    "flag_api_key": "flagApiKeyXyz",
    "authz": "authzHeaderValueXyz",
    "private_key": "MIIEvQIBADANBgkqhkiG9w0BAQEFAASC",
    "wandb_cfg": "wandbCfgSecretXyz",
    "wandb_meta": "wandbMetaSecretXyz",
    "wandb_console": "wandbConsoleSecretXyz",
    "filename": "hf_FileNameTokenAbCdEfGhIjKl",
}


def _plant(root: Path) -> list[str]:
    s = SECRETS
    run = root / "run"
    run.mkdir()
    log_lines = [
        f"export HF_TOKEN={s['hf']}",
        f"GITHUB_TOKEN={s['gh']} python train.py",
        f"[2024-01-01 10:00:00,000] [INFO] [runner.py:607:main] cmd = deepspeed train.py --hub_token {s['flag_hub_token']}"
        f" --password {s['flag_password']} --api-key={s['flag_api_key']} --deepspeed ds.json",
        f"token in a version: deepspeed 0.14.0+{s['ghpat']}",
        f"OPENAI_API_KEY={s['openai']} ANTHROPIC_API_KEY={s['anthropic']}",
        f"aws_access_key_id = {s['aws_id']}",
        f"aws_secret_access_key = {s['aws_secret']}",
        f"notify {s['slack']} and refresh {s['slack_refresh']}",
        f"GITLAB {s['gitlab']} google {s['google']}",
        f"session {s['jwt']}",
        f"wandb: W&B API key is configured: {s['wandb']}",
        f"Authorization: Bearer {s['bearer']}",
        f"headers={{'Authorization': '{s['authz']}'}}",
        f"fetching https://alice:{s['url_pw']}@example.com/data.tar",
        f"cache at redis://:{s['url_pw_empty_user']}@cache.internal:6379/0",
        f"DATABASE_URL=postgres://bob:{s['url_pw_slash']}@db.internal/prod",
        f"os.environ['DB_PASSWORD']={s['env_password']}",
        f"MY_SECRET=\"{s['env_quoted']}\"",
        f"{{\"password\": \"{s['json_password']}\", \"user\": \"x\"}}",
        "-----BEGIN PRIVATE KEY-----", s["private_key"], "-----END PRIVATE KEY-----",
        "[2024-01-01 10:00:01,000] [INFO] [logging.py:96:log_dist] [Rank 0] step=10, skipped=0, lr=[0.0001], "
        "mom=[(0.9, 0.999)]",
    ]
    (run / "train.log").write_text("\n".join(log_lines) + "\n")
    (run / "launch.sh").write_text(f"#!/bin/bash\nexport WANDB_API_KEY={s['wandb']}\nexport MY_APP_SECRET="
                                   f"{s['env_secret']}\nDATABASE_URL=mysql://u:{s['db_url']}@db/x\n"
                                   "deepspeed --num_gpus 2 train.py --deepspeed ds.json\n")
    (run / "ds_config.json").write_text(json.dumps({
        "train_micro_batch_size_per_gpu": 4, "zero_optimization": {"stage": 2},
        "wandb": {"enabled": True, "api_key": s["json_wandb_key"]}, "password": s["json_password"]}))
    (run / "accelerate.yaml").write_text("compute_environment: LOCAL_MACHINE\ndistributed_type: MULTI_GPU\n"
                                         f"num_machines: 1\nnum_processes: 2\nhub_token: {s['yaml_token']}\n")
    files = run / "wandb" / "run-20260101_000000-sec00001" / "files"
    files.mkdir(parents=True)
    (files / "config.yaml").write_text(f"wandb_version: 1\nhub_token:\n  value: {s['wandb_cfg']}\n"
                                       "per_device_train_batch_size:\n  value: 4\n")
    (files / "wandb-metadata.json").write_text(json.dumps({"host": "node1", "gpu_count": 2, "args": [
        "--hub_token", s["wandb_meta"]], "gpu": "NVIDIA A100-SXM4-80GB"}))
    (files / "wandb-summary.json").write_text('{"_runtime": 10}')
    (files / "output.log").write_text(f"export HF_TOKEN={s['wandb_console']}\n")
    (run / f"node-{s['filename']}.log").write_text((SAMPLES / "ds_zero0" / "train.log").read_text())
    return [str(run)]


@pytest.fixture(scope="module")
def outputs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    root = tmp_path_factory.mktemp("secrets")
    sources = _plant(root)
    out: dict[str, str] = {}
    for fmt in ("json", "md", "html", "text"):
        proc = run_cli("report", *sources, "--format", fmt)
        assert proc.returncode == 0, proc.stderr
        out[f"report.{fmt}"], out[f"report.{fmt}.stderr"] = proc.stdout, proc.stderr
    frames = root / "frames"
    proc = run_cli("parse", *sources, "--format", "json", "--out", str(frames))
    assert proc.returncode == 0, proc.stderr
    out["parse.json"], out["parse.stderr"] = proc.stdout, proc.stderr
    out["facts.json"] = (frames / "facts.json").read_text()
    for p in frames.glob("*.parquet"):
        out[p.name] = pl.read_parquet(p).write_csv()
    bad_url = run_cli("report", f"http://alice:{SECRETS['url_pw']}@127.0.0.1:9/train.log")
    assert bad_url.returncode == 2
    out["url.stderr"] = bad_url.stderr
    return out


@pytest.mark.parametrize("name", sorted(SECRETS))
def test_no_planted_secret_in_any_output(outputs: dict[str, str], name: str) -> None:
    leaks = [where for where, text in outputs.items() if SECRETS[name] in text]
    assert leaks == []


def test_the_inputs_were_read(outputs: dict[str, str]) -> None:
    doc = json.loads(outputs["report.json"])
    kinds = sorted(s["kind"] for s in doc["sources"])
    assert kinds == ["accelerate_config", "ds_config", "launch_script", "log", "log", "wandb_run"]
    assert "[REDACTED]" in outputs["report.md"] and "[REDACTED]" in outputs["parse.json"]


def test_no_redact_is_the_only_way_off(tmp_path: Path) -> None:
    sources = _plant(tmp_path)
    proc = run_cli("report", *sources, "--format", "json", "--no-redact")
    assert SECRETS["hf"] in proc.stdout


def test_markdown_and_html_are_inert(tmp_path: Path) -> None:
    hostile = "<img src=x onerror=alert(1)> @octocat @acme/admins [click](javascript:alert(1)) **bold** `tick`"
    log = tmp_path / "train.log"
    log.write_text(f"[INFO|trainer.py:698] 2025-01-28 13:36:26,786 >> Using cpu_amp half precision backend {hostile}\n"
                   f"export NCCL_SOCKET_IFNAME='{hostile}'\n")
    (tmp_path / "ds.json").write_text(json.dumps({"train_micro_batch_size_per_gpu": 1,
                                                  "optimizer": {"type": "<script>alert(1)</script>"}}))
    md = run_cli("report", str(tmp_path), "--format", "md").stdout
    assert "Training runs on the CPU" in md  # the hostile line is quoted as evidence...
    # Inside code blocks and spans GitHub renders nothing and links no one; everywhere else nothing may be raw.
    rendered = re.sub(r"(`{3,})[^\n]*\n.*?\n\1", "", md, flags=re.S)
    rendered = re.sub(r"`[^`\n]*`", "", rendered)
    assert "@\u200boctocat" in rendered
    for raw in ("<img", "<script", "@octocat", "@acme/admins"):
        assert raw not in rendered  # ...but nothing in it renders, links or pings
    assert not re.search(r"(?<!\\)\]\(javascript:", rendered) and "\\*\\*bold\\*\\*" in rendered
    html = run_cli("report", str(tmp_path), "--format", "html").stdout
    assert "<img src=x" not in html and "<script>alert(1)" not in html
