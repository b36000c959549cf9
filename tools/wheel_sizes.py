"""What a torch build costs an image: the wheels pip would install for it, with their sizes from the index.

The GPU image installs PyPI's torch, which brings CUDA's libraries as wheels of their own; nothing here
can build that image (no CUDA base, no registry), so its size is read off the index instead: pip
resolves the set without downloading it (``--dry-run --report``), and the index's JSON API (PEP 691)
gives each file's size. ``--install DIR`` also installs the set into DIR and reports its size on disk.

Usage: python -m tools.wheel_sizes 'torch===2.13.0' [--index-url https://pypi.org/simple] [--install DIR]
       (``===`` asks for the release itself, not a local build such as ``2.13.0+cpu``)
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import urllib.request
from pathlib import Path
from urllib.parse import unquote


def resolve(requirement: str, index_url: str) -> list[tuple[str, str]]:
    """(project name, wheel file name) of everything pip would install for ``requirement`` in a new venv."""
    with tempfile.TemporaryDirectory() as folder:
        report = Path(folder) / "report.json"
        subprocess.run(
            [sys.executable, "-m", "pip", "install", "--dry-run", "--quiet", "--ignore-installed"]
            + ["--index-url", index_url, "--report", str(report), requirement],
            check=True,
            env={**os.environ, "PIP_CONFIG_FILE": os.devnull},  # the index asked for, not a local cap
        )
        installs = json.loads(report.read_text())["install"]
    return [(i["metadata"]["name"], unquote(i["download_info"]["url"].rsplit("/", 1)[-1])) for i in installs]


def file_size(index_url: str, project: str, filename: str) -> int:
    """The size in bytes the index states for one of a project's files (PEP 691 JSON)."""
    request = urllib.request.Request(
        f"{index_url.rstrip('/')}/{project.lower()}/", headers={"Accept": "application/vnd.pypi.simple.v1+json"}
    )
    with urllib.request.urlopen(request, timeout=60) as response:
        files = json.load(response)["files"]
    return next(int(f["size"]) for f in files if f["filename"] == filename)


def folder_megabytes(folder: Path) -> float:
    """Bytes of the regular files under ``folder``, in MB (10^6)."""
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file() and not p.is_symlink()) / 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("requirement")
    parser.add_argument("--index-url", default="https://pypi.org/simple")
    parser.add_argument("--install", type=Path, help="also install the set into this new folder and measure it")
    args = parser.parse_args()

    wheels = [
        (name, filename, file_size(args.index_url, name, filename))
        for name, filename in resolve(args.requirement, args.index_url)
    ]
    for name, filename, size in sorted(wheels, key=lambda w: -w[2]):
        print(f"{size / 1e6:9.1f} MB  {name:28} {filename}")
    print(f"{sum(w[2] for w in wheels) / 1e6:9.1f} MB  {len(wheels)} wheels to download")
    if args.install:
        subprocess.run(
            [sys.executable, "-m", "pip", "install", "--quiet", "--no-cache-dir", "--target", str(args.install)]
            + ["--index-url", args.index_url, args.requirement],
            check=True,
            env={**os.environ, "PIP_CONFIG_FILE": os.devnull},
        )
        print(f"{folder_megabytes(args.install):9.1f} MB  installed in {args.install}")


if __name__ == "__main__":
    main()
