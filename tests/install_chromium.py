"""What the browser tests need beyond pip: Debian's chromium (issue 32, must 8). The README's test command runs this
before pytest, and `.ci/run` runs that command: as root with apt-get it installs the package; where it cannot (not
root, no apt-get, no network), it says why and the browser tests skip with that reason. Never fails the command."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys

PACKAGE = "chromium"


def found() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser")


def main() -> int:
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
