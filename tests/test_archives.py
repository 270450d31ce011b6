"""A zip or tar archive of logs is read as the folder it holds; what would leave that folder, links and bombs are
not unpacked."""
from __future__ import annotations

import io
import shutil
import tarfile
import zipfile
from pathlib import Path

import pytest
from conftest import SAMPLES

from diagnose.parsers import InputError, parse
from diagnose.parsers.archives import safe_name

RUN = SAMPLES / "ds_zero1_straggler"


def _frames(sources: list[str]) -> tuple[list, list]:
    m = parse(sources)
    steps = m.frames["steps"].sort("rank", "global_step", "line")
    return steps["step_time_s"].to_list(), sorted(s.name.rsplit("/", 1)[-1] for s in m.sources)


@pytest.mark.parametrize("fmt", ["zip", "gztar", "tar"])
def test_an_archive_of_a_run_reads_as_its_folder(tmp_path: Path, fmt: str) -> None:
    folder = tmp_path / "run"
    shutil.copytree(RUN, folder)
    archive = Path(shutil.make_archive(str(tmp_path / "logs"), fmt, tmp_path, "run"))
    before = archive.read_bytes()
    times, names = _frames([str(folder)])
    got_times, got_names = _frames([str(archive)])
    assert got_times == times and len(times) > 0
    assert got_names == names
    assert {s.name for s in parse([str(archive)]).sources} >= {f"{archive}/run/train.log"}
    assert archive.read_bytes() == before  # inputs are never modified


def test_names_that_leave_the_folder_links_and_bombs_are_left_out(tmp_path: Path) -> None:
    good = "".join(f"step {10 * i}: loss 2.4, time 850.0ms\n" for i in range(1, 41))
    zipped = tmp_path / "hostile.zip"
    with zipfile.ZipFile(zipped, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("../../escaped.log", good)
        z.writestr("/abs/train.log", good)
        z.writestr("big.log", b"\n" * (80 << 20))  # 80 MiB of newlines in about 80 KB
    m = parse([str(zipped)])
    assert not (tmp_path.parent / "escaped.log").exists() and not Path("/abs/train.log").exists()
    assert [s.name for s in m.sources if s.kind == "log"] == [f"{zipped}/abs/train.log"]
    assert [(s.name, s.why) for s in m.skipped] == [(f"{zipped}/big.log", "expands more than 200x: not read")]
    assert m.frames["steps"]["step_time_s"].median() == pytest.approx(0.85)
    tarred = tmp_path / "link.tar"
    with tarfile.open(tarred, "w") as t:
        link = tarfile.TarInfo("passwd.log")
        link.type, link.linkname = tarfile.SYMTYPE, "/etc/passwd"
        t.addfile(link)
        data = good.encode()
        info = tarfile.TarInfo("run/train.log")
        info.size = len(data)
        t.addfile(info, io.BytesIO(data))
    assert [s.name for s in parse([str(tarred)]).sources] == [f"{tarred}/run/train.log"]
    # an archive of nothing readable, or no archive at all behind the magic, is one line
    broken = tmp_path / "broken.zip"
    broken.write_bytes(b"PK\x03\x04" + b"\x00" * 64)
    with pytest.raises(InputError, match="broken.zip"):
        parse([str(broken)])


def test_safe_names() -> None:
    assert str(safe_name("logs/rank0/train.log")) == "logs/rank0/train.log"
    assert str(safe_name("/abs/x.log")) == "abs/x.log" and str(safe_name("a\\b.log")) == "a/b.log"
    assert safe_name("../x.log") is None and safe_name("a/../../x.log") is None and safe_name("C:/x.log") is None
    assert safe_name("./") is None
