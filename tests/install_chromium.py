"""What the browser tests need beyond pip: Debian's chromium (issue 32, must 8) and mermaid's browser bundle from
the npm registry (issue 31, must 6: the Markdown charts are rendered by the library GitHub renders them with). The
README's test command runs this before pytest, and `.ci/run` runs that command: as root with apt-get it installs the
package; where it cannot (not root, no apt-get, no network), it says why and the browser tests skip with that reason.
Never fails the command."""
from __future__ import annotations

import base64
import hashlib
import io
import os
import shutil
import subprocess
import sys
import tarfile
import urllib.request
from pathlib import Path

PACKAGE = "chromium"
# mermaid 11, the major version GitHub renders ```mermaid blocks with; the registry's integrity hash pins the bytes.
MERMAID_VERSION = "11.17.2"
MERMAID_TARBALL = f"https://registry.npmjs.org/mermaid/-/mermaid-{MERMAID_VERSION}.tgz"
MERMAID_SHA512 = "V6K3C8EBdEsPFZXSKMJe6ppQOENxuHARr9GvHX4hh47lAbhMRD9qf4oEK7LoaRQxULMa80/qt5gHO73aCleBBg=="
MERMAID_JS = Path(__file__).resolve().parent / ".browser" / f"mermaid-{MERMAID_VERSION}.min.js"


def fetch_mermaid() -> str:
    """Download the tarball, check it against the registry's sha512, keep only dist/mermaid.min.js (the bundle a
    page loads with one script tag). -> what happened, in a line."""
    if MERMAID_JS.is_file():
        return f"mermaid {MERMAID_VERSION}: {MERMAID_JS}"
    try:
        with urllib.request.urlopen(MERMAID_TARBALL, timeout=120) as r:
            data = r.read()
    except OSError as e:
        return f"mermaid {MERMAID_VERSION} could not be downloaded ({e}): the Mermaid rendering test will be skipped"
    got = base64.b64encode(hashlib.sha512(data).digest()).decode()
    if got != MERMAID_SHA512:
        return f"mermaid {MERMAID_VERSION}: the download does not match the registry's sha512; not kept"
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as tar:
        member = tar.extractfile("package/dist/mermaid.min.js")
        if member is None:
            return f"mermaid {MERMAID_VERSION}: the tarball has no dist/mermaid.min.js"
        MERMAID_JS.parent.mkdir(parents=True, exist_ok=True)
        tmp = MERMAID_JS.with_suffix(".part")
        tmp.write_bytes(member.read())
        tmp.replace(MERMAID_JS)
    return f"mermaid {MERMAID_VERSION} fetched: {MERMAID_JS}"


def found() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser")


def main() -> int:
    print(fetch_mermaid())
    return install_chromium()


def install_chromium() -> int:
    if found():
        return 0
    if not shutil.which("apt-get"):
        print(f"{PACKAGE} is not installed and there is no apt-get here: the browser tests will be skipped")
        return 0
    if os.geteuid() != 0:
        print(f"{PACKAGE} is not installed and this is not root: the browser tests will be skipped "
              f"(as root: apt-get install {PACKAGE})")
        return 0
    print(f"installing Debian's {PACKAGE} for the browser tests ...", flush=True)
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    for cmd in (["apt-get", "update", "-qq"], ["apt-get", "install", "-y", "-qq", PACKAGE]):
        done = subprocess.run(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        if done.returncode != 0:
            last = (done.stderr.strip().splitlines() or ["no message"])[-1]
            print(f"{' '.join(cmd)} failed ({last}): the browser tests will be skipped")
            return 0
    print(f"{PACKAGE} installed: {found()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
