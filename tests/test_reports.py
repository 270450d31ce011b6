"""Reports in every format: content, the JSON contract, redaction of planted secrets, escaping of hostile lines,
GitHub's comment limit, exit codes and safe writing."""
from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from conftest import SAMPLES, analysed, run_cli
from diagnose.engine import diagnose
from diagnose.parsers import parse
from diagnose.reports import document, markdown

SEED = SAMPLES / "synthetic" / "seed_zero3_launch_blocking"
ALL_RUNS = sorted(str(p.relative_to(SAMPLES)) for p in SAMPLES.rglob("*") if p.is_dir()
                  and any(f.suffix in (".log", ".out") for f in p.iterdir()) and "wandb" not in p.parts)

SECRETS = {
    "wandb": "WANDB_API_KEY=4f3c2b1a0d9e8f7a6b5c4d3e2f1a0b9c8d7e6f5a",
    "hf": "hf_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789",
    "github": "ghp_aBcDeFgHiJkLmNoPqRsTuVwXyZ0123456789ab",
    "github_pat": "github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOP",
    "openai": "sk-proj-abcdefghijklmnopqrstuvwxyz012345",
    "anthropic": "sk-ant-api03-abcdefghijklmnopqrstuvwxyz0123",
    "aws_id": "AKIAIOSFODNN7EXAMPLE",
    "aws_secret": "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
    "slack": "xoxb-123456789012-1234567890123-abcdefghijklmnop",
    "bearer": "Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.c2lnbmF0dXJl",
    "url": "https://alice:s3cr3tpass@example.com/data",
    "env_token": "MY_SERVICE_TOKEN=plainvalue123",
    "password": "DB_PASSWORD=hunter2hunter2",
    "pem": "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA7\n-----END RSA PRIVATE KEY-----",
}
SECRET_VALUES = ["4f3c2b1a0d9e8f7a6b5c4d3e2f1a0b9c8d7e6f5a", "hf_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789",
                 "ghp_aBcDeFgHiJkLmNoPqRsTuVwXyZ0123456789ab", "github_pat_11ABCDEFG", "sk-proj-abcdefghij",
                 "sk-ant-api03", "AKIAIOSFODNN7EXAMPLE", "wJalrXUtnFEMI", "xoxb-123456789012", "eyJhbGciOiJIUzI1NiJ9",
                 "s3cr3tpass", "plainvalue123", "hunter2hunter2", "MIIEowIBAAKCAQEA7"]
HOSTILE = ['<script>alert("pwned")</script>', '<img src=x onerror="alert(1)">', "```\n# injected heading",
           "](javascript:alert(1))"]


def _planted(tmp_path: Path) -> Path:
    """The seed run plus a launch script and log lines that carry every kind of secret and hostile markup."""
    run = tmp_path / "run"
    shutil.copytree(SEED, run)
    script = run / "train.sh"
    exports = "\n".join(f"export {v}" for k, v in SECRETS.items() if k in ("wandb", "env_token", "password"))
    script.write_text(script.read_text().replace("export NCCL_DEBUG=INFO", exports + "\nexport NCCL_DEBUG=INFO"))
    log = run / "slurm-1234.out"
    extra = [f"[2026-11-20 09:00:00,000] [WARNING] [x.py:1:f] {v}" for v in SECRETS.values()]
    extra += ["Traceback (most recent call last):", f"ValueError: {HOSTILE[0]} {HOSTILE[1]}"]
    log.write_text(log.read_text() + "\n".join(extra) + "\n")
    # hostile text where reports do show log content: env values, file names
    hostile_env = "\n".join(f"export NCCL_HOSTILE_{i}='{h}'" for i, h in enumerate(HOSTILE))
    script.write_text(script.read_text() + hostile_env + "\n")
    (run / 'x<img src=x onerror="alert(2)">.log').write_text(log.read_text().splitlines()[5] + "\n")
    return run


@pytest.mark.parametrize("fmt", ["json", "md", "html", "txt"])
def test_no_planted_secret_survives(tmp_path: Path, fmt: str) -> None:
    run = _planted(tmp_path)
    out = tmp_path / f"report.{fmt}"
    proc = run_cli("report", str(run), "-o", str(out))
    assert proc.returncode == 0, proc.stderr
    text = out.read_text()
    for secret in SECRET_VALUES:
        assert secret not in text, secret
    if fmt != "txt":  # the env table names every variable; only values a finding needs are shown (issue 32)
        assert "WANDB_API_KEY" in text and "CUDA_LAUNCH_BLOCKING=1" in text
    if fmt == "json":
        env = json.loads(text)["run"]["env"]
        assert env["WANDB_API_KEY"] is None and env["NCCL_DEBUG"] is None and env["CUDA_LAUNCH_BLOCKING"] == "1"
    assert "CUDA_LAUNCH_BLOCKING" in text  # still diagnosed


def test_no_redact_keeps_them(tmp_path: Path) -> None:
    run = _planted(tmp_path)
    proc = run_cli("report", str(run), "--format", "json", "--no-redact")
    assert "plainvalue123" in proc.stdout


def test_hostile_lines_stay_inert_in_html(tmp_path: Path) -> None:
    """Escaping does not rest on redaction: with --no-redact every env value is shown, each one inert."""
    run = _planted(tmp_path)
    out = tmp_path / "r.html"
    assert run_cli("report", str(run), "--no-redact", "-o", str(out)).returncode == 0
    html = out.read_text()
    assert '<script>alert("pwned")</script>' not in html and "<img src=x" not in html
    assert "&lt;script&gt;alert(" in html and "&lt;img src=x onerror=" in html
    assert html.count("<script") == html.count("</script>") == 1 + html.count('class="chart')


def test_hostile_lines_stay_inert_in_markdown(tmp_path: Path) -> None:
    run = _planted(tmp_path)
    text = run_cli("report", str(run), "--format", "md", "--no-redact").stdout
    # Inside fenced blocks GitHub shows text verbatim; everywhere else markup must arrive escaped.
    outside = re.sub(r"^(`{3,})[a-z]*\n.*?^\1$", "", text, flags=re.M | re.S)
    outside = re.sub(r"`[^`\n]*`", "", outside)  # inline code spans are verbatim too
    assert "<script>" not in outside and "<img" not in outside
    assert 'x<img src=x onerror="alert(2)">.log`' in text  # shown, as code
    for fence_open in re.findall(r"^(`{3,})diff$", text, re.M):
        assert fence_open == "```"


def test_redact_hosts_is_consistent(tmp_path: Path) -> None:
    doc = json.loads(run_cli("report", str(SEED), "--format", "json", "--redact-hosts").stdout)
    text = json.dumps(doc)
    assert "gpu-node-1" not in text and "10.0.0.1" not in text
    assert doc["run"]["hostnames"] == ["host-1", "host-2", "host-3", "host-4"]


def test_json_contract() -> None:
    proc = run_cli("report", str(SEED), "--format", "json")
    doc = json.loads(proc.stdout)
    assert doc["schema_version"] == 1
    run = doc["run"]
    assert set(run) >= {"world_size", "nodes", "gpus_per_node", "gpu_name", "model_params", "zero_stage",
                        "offload_optimizer", "offload_param", "micro_batch_per_gpu", "grad_accum_steps", "precision",
                        "nccl_transport", "env", "versions"}
    assert (run["world_size"], run["nodes"], run["gpus_per_node"], run["zero_stage"]) == (16, 4, 4, 3)
    assert run["gpu_name"] == "NVIDIA A100-SXM4-80GB" and run["model_params"] == 2_779_683_840
    assert run["nccl_transport"] == "ib" and run["env"]["CUDA_LAUNCH_BLOCKING"] == "1"
    assert doc["metrics"]["steps"]["p50_s"] == pytest.approx(18, rel=0.05)
    f0 = doc["findings"][0]
    assert f0["id"] == "cuda-launch-blocking" and f0["explains_slowdown"] is True
    assert {"id", "title", "severity", "confidence", "explains_slowdown", "evidence", "fix"} <= set(f0)
    assert f0["fix"]["changes"] == [{"target": "env", "key": "CUDA_LAUNCH_BLOCKING", "before": "1", "after": None}]
    # The log's MaxMemAllocated (73.4 GB under ZeRO-3) rules out plain data parallel and ZeRO-1 as they are: the
    # planner offers ZeRO-1 with half the micro-batch and twice the accumulation (same global batch).
    plan = doc["plan"]
    assert (plan["memory_basis"], plan["recommended"], plan["recommended_micro_batch"],
            plan["recommended_grad_accum"]) == ("measured", "zero1", 2, 8)
    assert any("13.2 + 35.3 = 48.5 GB fits" in line for line in plan["steps"])
    rec = {(c["target"], c["key"]): c["after"] for c in doc["recommended_changes"]}
    # The HF Trainer owns the batch keys: its flags move with the JSON's literals (diagnose/frameworks.py).
    assert rec == {("env", "CUDA_LAUNCH_BLOCKING"): None, ("ds_config", "zero_optimization.stage"): 1,
                   ("ds_config", "train_micro_batch_size_per_gpu"): 2, ("ds_config", "gradient_accumulation_steps"): 8,
                   ("trainer_args", "per_device_train_batch_size"): 2, ("trainer_args", "gradient_accumulation_steps"): 8}
    assert len(doc["recommended_changes"]) == len(rec)  # one value per key


def test_markdown_fits_a_github_comment() -> None:
    model = parse([str(SEED)])
    doc = document.build(model, diagnose(model))
    doc["findings"] = doc["findings"] * 200  # a pathological report
    text = markdown.render(doc)
    assert len(text) < markdown.GITHUB_LIMIT and "shortened to fit a GitHub comment" in text


@pytest.mark.slow
def test_a_markdown_report_of_many_runs_says_it_is_too_long_for_a_comment(tmp_path: Path) -> None:
    """Each run's section fits a comment; twelve together do not, and the text says so first, with how to split."""
    for i in range(12):
        shutil.copytree(SAMPLES / "ds_zero0", tmp_path / f"run{i:02d}")
    text = run_cli("report", str(tmp_path), "-f", "md").stdout
    assert len(text) > 65_536
    first = text.splitlines()[0]
    assert first.startswith("> **Too long for one GitHub comment:**") and "for 12 runs" in first
    assert "RUN_FOLDER -f md" in first
    one = run_cli("report", str(tmp_path / "run00"), "-f", "md").stdout
    assert "Too long for one GitHub comment" not in one


@pytest.mark.parametrize("run", ALL_RUNS)
def test_every_sample_renders_every_format(run: str) -> None:
    """In-process (issue 34): each sample analysed once and rendered in every format; the command line's own path
    is the smoke test below, one process per format."""
    analysis = analysed(SAMPLES / run)
    for fmt in ("json", "md", "text"):
        assert len(analysis.render(fmt)) > 200, fmt
    html = analysis.render("html")
    assert len(html) > 200
    assert html.count("* plotly.js (basic - minified) v") == 1 and len(html) < 2_000_000  # plotly.js inlined once
    assert html.count("Plotly.newPlot") == html.count('class="chart') and "<script src=" not in html


def test_charts_carry_the_house_template_as_if_plotly_had_validated_it() -> None:
    """charts.new_figure sets plotly_white without validating it again for each figure: each chart's JSON is what
    plotly gives with `template="plotly_white"`, and the registered template is left as it was."""
    import plotly.graph_objects as go
    import plotly.io as pio

    from diagnose.reports import charts

    registered = pio.templates[charts.TEMPLATE].to_plotly_json()
    figs = analysed(SAMPLES / "ds_zero1_straggler").runs[0].rendered().figures()
    assert len(figs) >= 3
    for name, fig in figs:
        validated = go.Figure(fig.to_dict()["data"], layout={**fig.to_dict()["layout"], "template": charts.TEMPLATE})
        assert json.loads(fig.to_json()) == json.loads(validated.to_json()), name
    assert pio.templates[charts.TEMPLATE].to_plotly_json() == registered


@pytest.mark.parametrize("fmt", ["json", "md", "html", "txt"])
def test_the_command_line_writes_each_format(tmp_path: Path, fmt: str) -> None:
    """The smoke test of each format as a user's process runs it; the other CLI tests run in the test's process."""
    out = tmp_path / f"r.{fmt}"
    proc = run_cli("report", str(SAMPLES / "fault_raise"), "-o", str(out), process=True)
    assert proc.returncode == 0, proc.stderr
    assert out.stat().st_size > 200 and f"wrote {out}" in proc.stderr


@pytest.mark.slow
def test_exit_codes_and_overwrite(tmp_path: Path) -> None:
    out = tmp_path / "r.md"
    assert run_cli("report", str(SEED), "-o", str(out)).returncode == 0
    again = run_cli("report", str(SEED), "-o", str(out))
    assert again.returncode == 2 and "--force" in again.stderr
    assert run_cli("report", str(SEED), "-o", str(out), "--force").returncode == 0
    assert run_cli("report", str(SEED), "--fail-on", "critical", "--format", "json").returncode == 1
    healthy = SAMPLES / "ds_zero2_bf16"
    assert run_cli("report", str(healthy), "--fail-on", "warning", "--format", "json").returncode == 0
    assert run_cli("report", str(SEED), "--format", "pdf").returncode == 2
    assert not list(tmp_path.glob(".r.md.*"))  # no temp files left behind


def test_rules_command_prints_the_fixed_shape() -> None:
    proc = run_cli("rules", "zero-stage-too-high")
    assert proc.returncode == 0
    for heading in ("What it detects", "Why it slows training", "Evidence it needs", "The fix"):
        assert heading in proc.stdout
    assert len(run_cli("rules").stdout.splitlines()) >= 20
    assert run_cli("rules", "nope").returncode == 2


@pytest.mark.slow
def test_images_writes_png_charts(tmp_path: Path) -> None:
    pytest.importorskip("kaleido")
    if shutil.which("chromium") is None:
        pytest.skip("kaleido needs a Chromium")
    proc = run_cli("report", str(SEED), "--format", "json", "--images", str(tmp_path / "img"), timeout=180)
    assert proc.returncode == 0, proc.stderr
    pngs = sorted(p.name for p in (tmp_path / "img").glob("*.png"))
    assert "step-time.png" in pngs and all((tmp_path / "img" / p).read_bytes()[:4] == b"\x89PNG" for p in pngs)
    # with Markdown, the PNGs are linked by a path relative to the report
    md = tmp_path / "out" / "report.md"
    md.parent.mkdir()
    proc = run_cli("report", str(SEED), "-o", str(md), "--images", str(tmp_path / "img2"), timeout=180)
    assert proc.returncode == 0, proc.stderr
    text = md.read_text()
    assert "### Charts" in text and "](../img2/step-time.png)" in text
    assert all((tmp_path / "img2" / p).is_file() for p in pngs)


def test_a_chart_kaleido_did_not_write_is_rendered_again_then_named(tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """kaleido hands back a chart it failed to render (a timeout on a loaded machine) instead of raising: the
    command renders the missing ones once more, and names any still missing with exit 2."""
    pytest.importorskip("kaleido")
    import plotly.io as pio
    from typer.testing import CliRunner

    from diagnose.cli import app

    calls: list[list[str]] = []

    def flaky(figs: list[object], paths: list[Path], **_: object) -> None:
        calls.append([Path(p).name for p in paths])
        for p in paths[1:] if len(calls) == 1 else paths:  # the first call drops its first chart
            Path(p).write_bytes(b"\x89PNG")

    monkeypatch.setattr(pio, "write_images", flaky)
    args = ["report", str(SEED), "--format", "json", "-o", str(tmp_path / "r.json")]
    res = CliRunner().invoke(app, [*args, "--images", str(tmp_path / "img")])
    assert res.exit_code == 0, res.output
    assert len(calls) == 2 and calls[1] == calls[0][:1] and "step-time.png" in calls[0]
    monkeypatch.setattr(pio, "write_images", lambda figs, paths, **_: None)  # never an image
    res = CliRunner().invoke(app, [*args, "--force", "--images", str(tmp_path / "img2")])
    assert res.exit_code == 2
    assert "could not render" in res.output and "step-time.png" in res.output and "Traceback" not in res.output


def test_the_html_report_is_small_enough_to_attach(tmp_path: Path) -> None:
    """plotly.js's basic bundle inlined (scatter and bar are all the charts use): the seed-like report <= 2 MB,
    still self-contained."""
    out = tmp_path / "seed.html"
    assert run_cli("report", str(SEED), "-o", str(out)).returncode == 0
    html = out.read_text()
    assert out.stat().st_size <= 2_000_000
    assert "plotly.js (basic - minified)" in html and "window.Plotly = Plotly" in html
    assert html.count('class="chart') >= 3 and "src=\"http" not in html
