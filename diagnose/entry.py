"""The `diagnose` command's entry point (issue 35): `diagnose --version` is answered before the command line's
libraries load (typer, rich: ~100 ms); everything else goes to diagnose.cli."""
from __future__ import annotations

import sys


def main() -> None:
    if sys.argv[1:] == ["--version"]:
        from diagnose import __version__

        sys.stdout.write(f"diagnose {__version__}\n")
        return
    from diagnose.cli import main as cli_main

    cli_main()
