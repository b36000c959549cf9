"""What the Home Assistant add-on installs: wheels of the server and of the demo model, built from the tree.

The Supervisor builds the add-on with ``addon/`` as its whole context, so the
code comes in as wheels committed there (``addon/wheels``), with the lock the
tests ran on. Two distributions, so that a release of the code adds its own
200 KB to the repository's history and not the demo model's 4.5 MB again: the
demo model's wheel changes only when the model does, and git stores an
unchanged file once. A fixed timestamp makes a build repeatable; wheels are
compared by what they hold, member by member, not by their bytes.

The Supervisor rebuilds an installed add-on only when ``addon/config.yaml``'s
version changes, and shows ``addon/CHANGELOG.md``: a wheel, once committed,
never changes under its name (``package`` refuses, and the tests look through
the history), so changed code needs a new version.

``python -m tools.addon_payload`` (``script/addon-package``) writes the payload.
"""

from __future__ import annotations

import argparse
import io
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
ADDON = ROOT / "addon"
WHEELS = ADDON / "wheels"
CHANGELOG = ADDON / "CHANGELOG.md"
#: Each distribution's project folder, and what of it a build reads.
PROJECTS: dict[str, tuple[Path, tuple[str, ...]]] = {
    "wyoming_qwen3": (ROOT, ("pyproject.toml", "LICENSE", "wyoming_qwen3")),
    "wyoming_qwen3_demo": (ROOT / "demo-model", ("pyproject.toml", "wyoming_qwen3_demo")),
}
#: 1980-01-01, the earliest time a zip can hold: the same tree gives the same wheel.
SOURCE_DATE_EPOCH = "315532800"
_LEFT_OUT = shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info", "build")


class PayloadError(Exception):
    """The payload cannot be written as asked; the message says what to do."""


def build(out: Path) -> list[Path]:
    """Build every distribution's wheel from a copy of its files into ``out`` (the tree is left untouched)."""
    wheels = []
    with tempfile.TemporaryDirectory() as scratch:
        for name, (project, parts) in PROJECTS.items():
            source = Path(scratch) / name
            source.mkdir()
            for part in parts:
                if (project / part).is_dir():
                    shutil.copytree(project / part, source / part, ignore=_LEFT_OUT)
                else:
                    shutil.copy2(project / part, source / part)
            before = set(out.glob("*.whl"))
            subprocess.run(
                [sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--wheel-dir", str(out), str(source)],
                check=True,
                env={**os.environ, "SOURCE_DATE_EPOCH": SOURCE_DATE_EPOCH, "PIP_DISABLE_PIP_VERSION_CHECK": "1"},
            )
            (made,) = set(out.glob("*.whl")) - before
            wheels.append(made)
    return wheels


def contents(wheel: Path | bytes) -> dict[str, bytes]:
    """Each member of a wheel (a file, or its bytes) and its bytes (not its timestamp)."""
    with zipfile.ZipFile(io.BytesIO(wheel) if isinstance(wheel, bytes) else wheel) as archive:
        return {member: archive.read(member) for member in archive.namelist()}


def committed_versions(wheel: Path) -> list[tuple[str, bytes]]:
    """Every commit that wrote ``wheel`` (a file in the tree), newest first, with what it wrote there.

    Empty where the file was never committed, or the tree is no git checkout."""
    path = wheel.resolve().relative_to(ROOT).as_posix()

    def git(*arguments: str) -> bytes:
        return subprocess.run(["git", "-C", str(ROOT), *arguments], capture_output=True, check=True).stdout

    try:
        commits = git("log", "--format=%H", "--", path).decode().split()
        return [(commit, git("show", f"{commit}:{path}")) for commit in commits]
    except (OSError, subprocess.CalledProcessError):
        return []


def differences(committed: Path, fresh: Path) -> list[str]:
    """How the wheels in ``committed`` differ from those in ``fresh``, one line each ([] when they agree)."""
    old = {wheel.name: wheel for wheel in committed.glob("*.whl")}
    new = {wheel.name: wheel for wheel in fresh.glob("*.whl")}
    found = [f"{name}: not built from the tree any more" for name in sorted(old.keys() - new.keys())]
    found += [f"{name}: missing" for name in sorted(new.keys() - old.keys())]
    for name in sorted(old.keys() & new.keys()):
        was, now = contents(old[name]), contents(new[name])
        changed = sorted(member for member in was.keys() | now.keys() if was.get(member) != now.get(member))
        if changed:
            found.append(f"{name}: {', '.join(changed[:5])}{' ...' if len(changed) > 5 else ''} differ")
    return found


def changelog_versions() -> list[str]:
    """The versions ``addon/CHANGELOG.md`` has entries for (``## VERSION`` headings), newest first."""
    lines = CHANGELOG.read_text(encoding="utf-8").splitlines() if CHANGELOG.is_file() else []
    return [line[3:].split()[0] for line in lines if line.startswith("## ") and len(line) > 3]


def package(version: str) -> list[Path]:
    """Write fresh wheels and the lock into ``addon/``; refuse to give changed contents an old version."""
    if version not in changelog_versions()[:1]:
        raise PayloadError(f"addon/CHANGELOG.md has no entry for {version} at its top: say what changed first")
    with tempfile.TemporaryDirectory() as scratch:
        fresh = Path(scratch)
        build(fresh)
        stale = [
            f"{wheel.name} (committed in {commit[:9]})"
            for wheel in sorted(fresh.glob("*.whl"))
            for commit, data in committed_versions(WHEELS / wheel.name)[:1]
            if contents(data) != contents(wheel)
        ]
        if stale:
            raise PayloadError(
                "a wheel of a version already committed would change, and an installed add-on would not be "
                "rebuilt: set a new version (wyoming_qwen3/__init__.py and addon/config.yaml, or "
                "demo-model/pyproject.toml for the model):\n" + "\n".join(stale)
            )
        shutil.rmtree(WHEELS, ignore_errors=True)
        WHEELS.mkdir(parents=True)
        written = [Path(shutil.copy2(wheel, WHEELS)) for wheel in sorted(fresh.glob("*.whl"))]
    shutil.copy2(ROOT / "requirements.lock", ADDON / "requirements.lock")
    return written


def main() -> None:
    parser = argparse.ArgumentParser(description="Write the add-on's wheels and lock into addon/.")
    parser.parse_args()
    sys.path.insert(0, str(ROOT))
    import wyoming_qwen3

    try:
        written = package(wyoming_qwen3.__version__)
    except PayloadError as err:
        sys.exit(f"addon-package: {err}")
    for wheel in written:
        print(f"{wheel.relative_to(ROOT)}: {wheel.stat().st_size / 1024:.0f} KiB")


if __name__ == "__main__":
    main()
