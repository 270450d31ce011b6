"""Secrets planted in every kind of input never reach any output: the four report formats, `parse` (JSON, the
parquet frames and facts.json it writes) and stderr. Every planted value is unique, so a leak of any part of the
pipeline shows as that value found in an output."""
from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import httpx

import polars as pl
import pytest

from conftest import SAMPLES, run_cli

# One test worker runs this module, so that its module-scoped fixture is built once (pytest-xdist's loadgroup).
pytestmark = pytest.mark.xdist_group("test_secrets")

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


# Shapes beyond any vendor list, each under a telling name and under a neutral one where the shape allows: the redactor
# must find them by structure (the name's parts, a URL's userinfo, query or webhook path, a header, a short flag, a
# key block) or by looking random. Values are unique so that a leak points at its shape.
SHAPES: dict[str, tuple[str, str]] = {  # name -> (value, the line that carries it; {v} is the value)
    "stripe_live": ("sk_live_51HqLyjWDarjtT1zdp7dcXq9", "charge with {v}"),
    "stripe_restricted": ("rk_live_51HqLyjWDarjtT1zdp7dcXr8", "STRIPE={v}"),
    "sendgrid": ("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", "mail via {v}"),
    "twilio_sk": ("SK0123456789abcdef0123456789abcdef", "sms={v}"),
    "mailchimp": ("0123456789abcdef0123456789abcdef-us12", "list key {v}"),
    "telegram": ("123456789:AAHk3jX9qL2mN4vB8zR1tY6wE3uI0oPpAsD", "bot {v}"),
    "pypi": ("pypi-AgEIcHlwaS5vcmcCJDAwMDAwMDAwLTAwMDAtMDAwMC0wMDAwLTAwMDAwMDAwMDAwMAACJXsicGVybWlzc2lvbnMiOiAidXNlciJ9",
             "twine upload -p {v}"),
    "slack_webhook": ("T00000000/B00000000/XXXXXXXXXXXXXXXXXXXXXXXX", "NOTIFY_URL=https://hooks.slack.com/services/{v}"),
    "discord_webhook": ("112233445566778899/AbCdEfGhIjKlMnOpQrStUv-wx_yz0123456789",
                        "posting to https://discord.com/api/webhooks/{v}"),
    "teams_webhook": ("a1b2c3d4-e5f6@tenant/IncomingWebhook/0f0e0d0c/abcd",
                      "teams: https://acme.webhook.office.com/webhookb2/{v}"),
    "azure_sas": ("kL5mN8pQ2rS9tU4vW7xY1zA3bC6dE0fG%3D", "https://acct.blob.core.windows.net/c/ckpt.pt?sv=2022-11-02&se=2026"
                  "-12-31&sr=b&sp=r&sig={v}"),
    "aws_presigned": ("9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
                      "https://b.s3.amazonaws.com/x?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Signature={v}&X-Amz-Expires=60"),
    "aws_session": ("IQoJb3JpZ2luX2VjEJr//////////wEaCXVzLWVhc3QtMSJHMEUCIQD", "X-Amz-Security-Token={v}"),
    "gcs_signed": ("1a2b3c4d5e6f70819283746556473829aabbccddeeff00112233445566778899",
                   "gs url https://storage.googleapis.com/b/o?X-Goog-Signature={v}"),
    "azure_conn": ("Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==",
                   "DefaultEndpointsProtocol=https;AccountName=acct;AccountKey={v};EndpointSuffix=core.windows.net"),
    "sentry_dsn": ("0123456789abcdef0123456789abcdfe", "SENTRY_DSN=https://{v}@o12345.ingest.sentry.io/678"),
    "sentry_dsn_neutral": ("fedcba9876543210fedcba9876543210", "errors go to https://{v}@o12345.ingest.sentry.io/679"),
    "cookie": ("sid=s%3AxYz123abcDEF456.ghiJKL789mnoPQR", "Cookie: {v}; theme=dark"),
    "set_cookie": ("AbCdEf123456GhIjKl7890", "Set-Cookie: session={v}; HttpOnly"),
    "api_key_header": ("hdrApiKeyValueQ7xK9", "X-API-Key: {v}"),
    "auth_token_header": ("hdrAuthTokenValueP2mN", "X-Auth-Token: {v}"),
    "basic_auth": ("dXNlcjpodW50ZXIyaHVudGVyMg==", "Authorization: Basic {v}"),
    "query_token": ("qTokenValue7xK9pL2", "GET https://api.example.com/v1/data?token={v}&page=2"),
    "query_access_token": ("qAccessTok3nValue", "fetch https://example.com/cb?code=1&access_token={v}"),
    "query_key": ("qKeyValueAbc123", "https://maps.example.com/api?key={v}&q=x"),
    "query_apikey": ("qApiKeyValueDef456", "https://example.com/x?apikey={v}"),
    "mysql_short": ("mysqlPw0rd123", "mysql -u root -p{v} training_db"),
    "sshpass": ("sshPassw0rd99", "sshpass -p {v} ssh node2"),
    "redis_cli": ("redisCliPw42x", "redis-cli -h cache -a {v} ping"),
    "curl_user": ("curlUserPw77", "curl -u alice:{v} https://example.com/upload"),
    "env_db_pass": ("envDbPassVal1", "export DB_PASS={v}"),
    "env_pwd": ("envMysqlPwdVal2", "MYSQL_PWD={v} mysqldump x"),
    "env_pw": ("envSmtpPwVal3", "SMTP_PW={v}"),
    "env_auth": ("envRedisAuthVal4", "REDIS_AUTH={v}"),
    "env_cookie": ("envCookieVal5", "SESSION_COOKIE={v}"),
    "env_salt": ("envSigningSaltVal6", "SIGNING_SALT={v}"),
    "env_pgpassword": ("envPgPasswordVal7", "PGPASSWORD={v} psql"),
    "env_dsn": ("postgresql://u@db/x?sslpassword=envDsnVal8", "DATABASE_DSN={v}"),
    "yaml_passphrase": ("yamlPassphraseVal9", "passphrase: {v}"),
    "yaml_webhook": ("yamlWebhookVal10", "webhook_url: {v}"),
    "yaml_credential": ("yamlCredVal11", "credentials: {v}"),
    "yaml_session": ("yamlSessionVal12", "session_token: {v}"),
    "dict_repr": ("dictReprPwVal13", "{{'user': 'x', 'passwd': '{v}'}}"),
    "camel_key": ("camelApiKeyVal14", "apiKey={v}"),
    "flag_passwd": ("flagPasswdVal15", "--passwd={v}"),
    "flag_single_dash": ("flagSingleDashVal16", "-password {v}"),
    "flag_client_secret": ("flagClientSecretVal17", "--client-secret {v}"),
    "flag_sig": ("flagSigVal18", "--sig {v}"),
    "prefixed_env": ("prefixedEnvVal19", "node1: HUB_TOKEN={v}"),
    "prefixed_logger": ("prefixedLoggerVal20", "INFO:root:password={v}"),
    "prefixed_host": ("prefixedHostVal21", "gpu-node-3: export WANDB_API_KEY={v}"),
    "kubectl_literal": ("kubeLiteralVal22", "kubectl create secret generic s --from-literal=password={v}"),
    "neutral_env_random": ("Q7xK9pL2mN4vB8zR1tY6wE3uI0", "export RUN_CFG={v}"),
    "neutral_flag_random": ("Zr4Tq8Wn2Bv6Yp0Lm3Kj7Hg5Fd", "python train.py --run-tag {v}"),
    "neutral_yaml_random": ("mN3bV7cX1zL9kJ5hG2fD8sA4qW", "extra: {v}"),
    "neutral_hex": ("a3f9c2e8b1d74f6e9c0a5b3d8e7f1c2a", "id_hash={v}"),
    "neutral_base36": ("k3j9x2m8q1w7z4v6n0p5r3t8y2u1", "note {v}"),
    "neutral_quoted": ("Xy7Kp2Qm9Lz4Nv8Bw3Ct6Rj1", "value \"{v}\""),
    "openssh_key": ("b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW",
                    "-----BEGIN OPENSSH PRIVATE KEY-----\n{v}\n-----END OPENSSH PRIVATE KEY-----"),
    "ec_key": ("MHcCAQEEIBkg4LVWM9nuwNSk3yByxZpYRTBnVJk5ehMvBmMpL6TqoAoGCCqGSM49AwEHoUQDQgAE",
               "-----BEGIN EC PRIVATE KEY-----\n{v}\n-----END EC PRIVATE KEY-----"),
    "pgp_key": ("lQOYBGV0ZXN0AQgAu7Jx9Kq2Lm4Nv8Bw3Ct6Rj1Xy7Kp2Qm9Lz4Nv8Bw3Ct6Rj1",
                "-----BEGIN PGP PRIVATE KEY BLOCK-----\n{v}\n-----END PGP PRIVATE KEY BLOCK-----"),
    "encrypted_key": ("MIIFHDBOBgkqhkiG9w0BBQ0wQTApBgkqhkiG9w0BBQwwHAQIuV8pYqK3Lm4CAggA",
                      "-----BEGIN ENCRYPTED PRIVATE KEY-----\n{v}\n-----END ENCRYPTED PRIVATE KEY-----"),
    "key_body_alone": ("MIIEpAIBAAKCAQEA3Tz2mr7SZiAMfQyuvBjM9Oi3Zk6sKRbVq8Xh2Lw4Nc5Pd", "{v}"),
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
    (run / "more.log").write_text("\n".join(line.format(v=v) for v, line in SHAPES.values()) + "\n" + log_lines[-1]
                                  + "\n")
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
    query = run_cli("report", f"http://127.0.0.1:9/train.log?token={SHAPES['query_token'][0]}")
    assert query.returncode == 2
    out["query.stderr"] = query.stderr
    # compare, both ways round, in every format: the other side's secrets differ from these (the headline and the
    # attribution name what changed)
    other = root / "other"
    shutil.copytree(SAMPLES / "ds_zero0", other)
    (other / "launch.sh").write_text("#!/bin/bash\nexport WANDB_API_KEY=0000000000aaaaaaaaaa0000000000aaaaaaaaaa\n"
                                     "export MY_APP_SECRET=otherSecretValue\ndeepspeed train.py\n")
    for fmt in ("json", "md", "html", "text"):
        proc = run_cli("compare", str(other), *sources, "--format", fmt)
        assert proc.returncode in (0, 1), proc.stderr
        out[f"compare.{fmt}"], out[f"compare.{fmt}.stderr"] = proc.stdout, proc.stderr
    # the server: its answer, the stored report in each format and the patch
    from test_serve import server

    files = [f for f in sorted(Path(sources[0]).rglob("*")) if f.is_file()]
    with server(root / "serve") as base:
        handles = [("files", (f.name, f.open("rb"))) for f in files]
        r = httpx.post(f"{base}/api/diagnose", files=handles, timeout=120)
        for _, (_, fh) in handles:
            fh.close()
        assert r.status_code == 200, r.text
        out["serve.response"] = r.text
        url = r.json()["report_url"]
        for suffix in ("", ".md", ".json", ".patch"):
            out[f"serve.report{suffix}"] = httpx.get(f"{base}{url}{suffix}", timeout=30).text
        out["serve.error"] = httpx.post(f"{base}/api/diagnose", data={"wandb": f"https://x/?token="
                                        f"{SHAPES['query_access_token'][0]}"}, files={"x": ("", b"")}, timeout=30).text
    return out


PLANTED = {**SECRETS, **{name: value for name, (value, _) in SHAPES.items()}}


@pytest.mark.parametrize("name", sorted(SHAPES))
def test_each_shape_is_masked_in_its_line(name: str) -> None:
    """Most shapes sit on lines no report quotes: the redactor itself is held to each, on its own line and in a
    pasted block with the others."""
    from diagnose.reports import redact

    value, line = SHAPES[name]
    assert value not in redact.text(line.format(v=value))
    block = "\n".join(line.format(v=v) for v, line in SHAPES.values())
    assert value not in redact.text(block)


def test_shapes_are_not_masked_where_nothing_is_secret() -> None:
    """The same lines' ordinary neighbours stay readable: the evidence a report quotes is not masked away."""
    from diagnose.reports import redact

    kept = ["[2024-01-01 10:00:01,000] [INFO] [logging.py:96:log_dist] [Rank 0] step=10, skipped=0, lr=[0.0001]",
            "RunningAvgSamplesPerSec=259.1, CurrSamplesPerSec=275.3, MemAllocated=41.2GB, MaxMemAllocated=73.9GB",
            "export CUDA_LAUNCH_BLOCKING=1", "NCCL_SOCKET_IFNAME=eth0", "max_new_tokens=512 pad_token=<pad>",
            "tokenizer_name_or_path=meta-llama/Llama-2-7b-hf", "Qwen2MoeSparseMoeBlock", "num_key_value_heads: 8",
            "/data/Llama2/ckpt/global_step10000/mp_rank_00_model_states.pt", "use_auth_token=True",
            "TOKENIZERS_PARALLELISM=false", "sort_key: loss", "https://wandb.ai/acme/proj/runs/3f2a9xk1"]
    assert [redact.text(t) for t in kept] == kept


def test_random_values_under_neutral_names_are_masked() -> None:
    """Property: a random credential-like value (alphabet, length and wrapping drawn at random) under a name that
    says nothing is masked wherever it sits, because it looks random, not because of its name or vendor. Telling
    random from written text is statistical: the bar is 99% of 2,000 draws (measured: 99.8%; the misses are short
    base64 cut into pieces by `/` and random strings that happen to read like words)."""
    import random
    import string

    from diagnose.reports import redact

    rng = random.Random(2026)
    alphabets = [string.ascii_letters + string.digits, string.ascii_letters + string.digits + "+/",
                 "0123456789abcdef", string.ascii_lowercase + string.digits]
    names = ["RUN_CFG", "extra", "--run-tag", "x", "node_label", "MY_VAR", "id", "data"]
    wraps = ["{n}={v}", "{n}: {v}", "{n} {v}", "{n}='{v}'", '"{n}": "{v}"', "got {v} from {n}", "https://h/{v}/x"]
    drawn, missed = 0, []
    while drawn < 2000:
        alphabet = rng.choice(alphabets)
        value = "".join(rng.choice(alphabet) for _ in range(rng.randint(32, 64)))
        if not (any(c.isdigit() for c in value) and any(c.isalpha() for c in value)):
            continue
        drawn += 1
        line = rng.choice(wraps).format(n=rng.choice(names), v=value)
        if value in redact.text(line):
            missed.append(line)
    assert len(missed) <= 20, missed


def test_over_sixty_shapes_are_planted() -> None:
    assert len(PLANTED) >= 90 and len(SHAPES) >= 60


@pytest.mark.parametrize("name", sorted(PLANTED))
@pytest.mark.slow
def test_no_planted_secret_in_any_output(outputs: dict[str, str], name: str) -> None:
    value = PLANTED[name]
    leaks = [where for where, text in outputs.items() if value in text]
    assert leaks == []


def test_the_inputs_were_read(outputs: dict[str, str]) -> None:
    doc = json.loads(outputs["report.json"])
    kinds = sorted(s["kind"] for s in doc["sources"])
    assert kinds == ["accelerate_config", "ds_config", "launch_script", "log", "log", "log", "wandb_run"]
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
