"""What a user installs (issue 22, must 6): the sdist and the wheel built by hatchling as `pip` would, holding one
top-level import package, `diagnose`, under a distribution name of our own, and working from the wheel alone."""
from __future__ import annotations

import os
import re
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

from conftest import ROOT, SAMPLES

# One test worker runs this module, so that its module-scoped fixture is built once (pytest-xdist's loadgroup).
pytestmark = pytest.mark.xdist_group("test_package")

pytest.importorskip("hatchling")

DISTRIBUTION = "diagnose-training"


def _hatchling(target: str, out: Path, cwd: Path) -> Path:
    proc = subprocess.run([sys.executable, "-m", "hatchling", "build", "-t", target, "-d", str(out)], cwd=cwd,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    (built,) = out.glob("*.whl" if target == "wheel" else "*.tar.gz")
    return built


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The sdist from the checkout, and the wheel from that sdist (the path `pip install` of a release takes)."""
    out = tmp_path_factory.mktemp("dist")
    sdist = _hatchling("sdist", out, ROOT)
    with tarfile.open(sdist) as tar:
        tar.extractall(out / "unpacked", filter="data")
    (tree,) = (out / "unpacked").iterdir()
    wheel = _hatchling("wheel", out / "wheel", tree)
    return {"sdist": sdist, "wheel": wheel}


def test_the_wheel_claims_one_import_package_and_its_own_distribution_name(built: dict[str, Path]) -> None:
    with zipfile.ZipFile(built["wheel"]) as whl:
        names = whl.namelist()
        dist_info = next(n.split("/")[0] for n in names if n.endswith(".dist-info/METADATA"))
        metadata = whl.read(f"{dist_info}/METADATA").decode()
        entry_points = whl.read(f"{dist_info}/entry_points.txt").decode()
    from diagnose import __version__

    assert {n.split("/")[0] for n in names} == {"diagnose", dist_info}
    assert re.search(r"^Name: diagnose-training$", metadata, re.M)
    assert re.search(rf"^Version: {re.escape(__version__)}$", metadata, re.M)
    assert re.search(r"^diagnose = diagnose\.entry:main$", entry_points, re.M)
    # The card's folders are mapped under the package, with their data files, and only once.
    for path in ("diagnose/parsers/lines.py", "diagnose/reports/html.py", "diagnose/reports/templates/report.html.j2",
                 "diagnose/reports/static/plotly-basic.min.js", "diagnose/rules/__init__.py"):
        assert path in names
    assert len(names) == len(set(names))
    assert not [n for n in names if "__pycache__" in n or n.startswith(("parsers/", "reports/", "tests/"))]


def test_the_sdist_keeps_the_repository_layout(built: dict[str, Path]) -> None:
    with tarfile.open(built["sdist"]) as tar:
        names = {m.name.split("/", 1)[1] for m in tar.getmembers() if "/" in m.name}
    assert {"parsers/lines.py", "reports/html.py", "diagnose/cli.py", "hatch_build.py", "pyproject.toml"} <= names
    # The checkout's symlinks are not copied in as a second set of files.
    assert not [n for n in names if n.startswith(("diagnose/parsers/", "diagnose/reports/"))]


def test_the_wheel_alone_runs_a_report(built: dict[str, Path], tmp_path: Path) -> None:
    """Unpacked ahead of the checkout on the path, the wheel's own package answers `--version` and writes an HTML
    report from a sample log (the templates and plotly.js come from inside it)."""
    site = tmp_path / "site"
    with zipfile.ZipFile(built["wheel"]) as whl:
        whl.extractall(site)
    env = {**os.environ, "PYTHONPATH": str(site)}
    where = subprocess.run([sys.executable, "-c", "import diagnose.reports.html as h, diagnose.parsers.lines as l; "
                            "print(h.__file__); print(l.__file__)"], env=env, cwd=tmp_path, capture_output=True,
                           text=True, timeout=60)
    assert where.returncode == 0, where.stderr
    assert all(Path(p).is_relative_to(site) for p in where.stdout.split()), where.stdout
    version = subprocess.run([sys.executable, "-m", "diagnose", "--version"], env=env, cwd=tmp_path,
                             capture_output=True, text=True, timeout=60)
    assert version.returncode == 0 and version.stdout.startswith("diagnose ")
    out = tmp_path / "report.html"
    report = subprocess.run([sys.executable, "-m", "diagnose", "report", str(SAMPLES / "ds_zero3_offload"),
                             "-o", str(out)], env=env, cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert report.returncode == 0, report.stderr
    html = out.read_text()
    assert "Plotly.register" in html and "<th>ZeRO stage</th><td>3</td>" in html
