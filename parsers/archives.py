"""A zip or tar archive of logs (`logs.zip`, `run.tar.gz` attached to an issue) -> a folder of its files, read as any
folder is. Only regular files come out, under names made safe (no absolute path, no `..`, no link); what comes out
is capped in all and against each member's compressed size, as a gzip stream is (a bomb is left out, not
unpacked)."""
from __future__ import annotations

import stat
import tarfile
import zipfile
from collections.abc import Iterator
from pathlib import Path, PurePosixPath
from typing import IO, Literal

ArchiveKind = Literal["zip", "tar"]
MAX_MEMBERS = 10_000  # files taken from one archive; the rest are left out


class ArchiveError(ValueError):
    pass


def archive_kind(head: bytes) -> ArchiveKind | None:
    """What the first bytes of a file (gzip read through, as sources.head_bytes gives them) say it is."""
    if head[:4] in (b"PK\x03\x04", b"PK\x05\x06"):
        return "zip"
    if head[257:262] == b"ustar":
        return "tar"
    return None


def safe_name(name: str) -> PurePosixPath | None:
    """A member's path inside the folder it unpacks to, or None where it would leave it or names nothing."""
    parts = [p for p in PurePosixPath(name.replace("\\", "/")).parts if p not in ("", ".", "/")]
    if not parts or ".." in parts or ":" in parts[0]:
        return None
    return PurePosixPath(*parts)


def unpack(path: Path, kind: ArchiveKind, dest: Path, ratio_cap: float, ratio_floor: int, cap: int,
           max_members: int = MAX_MEMBERS) -> list[tuple[str, str]]:
    """The archive's regular files written under `dest` -> the (member, why) of those left out. A member that
    expands more than `ratio_cap` times its compressed size (a zip's, stated or not: the bytes read count) once past
    `ratio_floor` is left out, as are those past `cap` bytes in all (member "" then: the rest). A tar's members
    have no compressed size of their own: the archive's size stands for them all. Raises ArchiveError where nothing
    could be read."""
    skipped: list[tuple[str, str]] = []
    total, taken = 0, 0
    try:
        members = _members(path, kind)
        for name, compressed, fh in members:
            if taken >= max_members:
                skipped.append(("", f"past {max_members} files; the rest skipped"))
                break
            bomb = ratio_floor + int(ratio_cap * max(compressed, 1))
            with fh:
                size = _write(fh, dest / name, min(cap - total, bomb) + 1)
            if size is None:
                continue
            if size > bomb:
                skipped.append((str(name), f"expands more than {ratio_cap:g}x: not read"))
                if kind == "tar":
                    break  # the archive's ratio is past its cap: every member after is as suspect
                continue
            total += size
            if total > cap:
                skipped.append(("", f"unpacks past the {cap >> 20} MiB cap; the rest skipped"))
                break
            taken += 1
    except (zipfile.BadZipFile, tarfile.TarError, EOFError, OSError, NotImplementedError, RuntimeError) as e:
        if taken == 0:
            raise ArchiveError(f"not a readable {kind} archive ({e})") from None
        skipped.append(("", f"cut short ({e}); the rest skipped"))
    return skipped


def _members(path: Path, kind: ArchiveKind) -> Iterator[tuple[PurePosixPath, int, IO[bytes]]]:
    """(safe name, compressed size, open member) for each regular file of the archive."""
    if kind == "zip":
        with zipfile.ZipFile(path) as zf:
            for info in zf.infolist():
                mode = info.external_attr >> 16
                if info.is_dir() or stat.S_ISLNK(mode) or info.flag_bits & 0x1:  # a link or an encrypted file
                    continue
                if (name := safe_name(info.filename)) is not None:
                    yield name, info.compress_size, zf.open(info)
        return
    size = path.stat().st_size
    with tarfile.open(path, "r:*") as tf:
        for member in tf:
            if member.isreg() and (name := safe_name(member.name)) is not None \
                    and (fh := tf.extractfile(member)) is not None:
                yield name, size, fh


def _write(src: IO[bytes], to: Path, limit: int) -> int | None:
    """One member copied out block by block, up to `limit` bytes -> the bytes it held (the file is removed where
    that reached the limit: it is not read); None where its path is taken (a file of the archive holds a folder's
    name)."""
    try:
        to.parent.mkdir(parents=True, exist_ok=True)
        if to.exists() and not to.is_file():
            return None
        size = 0
        with open(to, "wb") as out:
            while size < limit and (block := src.read(min(1 << 20, limit - size))):
                out.write(block)
                size += len(block)
    except OSError:
        return None
    if size >= limit:
        to.unlink(missing_ok=True)
    return size
