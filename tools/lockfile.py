"""``requirements.lock``: the exact versions CI tested, used as pip constraints by script/setup and the images.

The lock records a digest of the dependencies it was resolved from, so that a
change to ``pyproject.toml`` without ``script/lock`` is caught (tests/test_lock.py).
torch is not locked: script/setup installs it first, pinned (``TORCH_SPEC``
picks another build, such as a CUDA wheel).

    python -m tools.lockfile write FREEZE_FILE   (script/lock runs this)
"""

from __future__ import annotations

import hashlib
import json
import sys
import tomllib
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parent.parent
LOCK = ROOT / "requirements.lock"
#: The extras the lock covers: what CI and the benchmarks install (mlx runs on a Mac only).
LOCKED_EXTRAS = ("dev", "bench", "home")
#: Installed before the rest, pinned by script/setup and the Dockerfiles, never from the lock.
UNLOCKED = {"torch", "wyoming-qwen3"}
DIGEST_PREFIX = "# pyproject-dependencies-sha256: "


def locked_requirements(pyproject: Path = ROOT / "pyproject.toml") -> list[Requirement]:
    """The requirements the lock is resolved from: the project's, and its locked extras'."""
    project = tomllib.loads(pyproject.read_text(encoding="utf-8"))["project"]
    texts = [*project["dependencies"], *(t for extra in LOCKED_EXTRAS for t in project["optional-dependencies"][extra])]
    return [Requirement(text) for text in texts]


def digest(requirements: list[Requirement]) -> str:
    return hashlib.sha256(json.dumps(sorted(str(r) for r in requirements)).encode()).hexdigest()


def read_pins(lock: Path = LOCK) -> dict[str, str]:
    """name -> pinned version."""
    pins = {}
    for line in lock.read_text(encoding="utf-8").splitlines():
        if line and not line.startswith("#"):
            name, _, version = line.partition("==")
            pins[canonicalize_name(name)] = version.strip()
    return pins


def read_digest(lock: Path = LOCK) -> str | None:
    for line in lock.read_text(encoding="utf-8").splitlines():
        if line.startswith(DIGEST_PREFIX):
            return line.removeprefix(DIGEST_PREFIX).strip()
    return None


def problems(lock: Path = LOCK, pyproject: Path = ROOT / "pyproject.toml") -> list[str]:
    """Where the lock and pyproject.toml disagree (empty when they agree)."""
    requirements = locked_requirements(pyproject)
    found = []
    if read_digest(lock) != digest(requirements):
        found.append("the lock was resolved from other dependencies than pyproject.toml's: run script/lock")
    pins = read_pins(lock)
    for requirement in requirements:
        name = canonicalize_name(requirement.name)
        if name in UNLOCKED or (requirement.marker is not None and not requirement.marker.evaluate()):
            continue
        if name not in pins:
            found.append(f"{requirement.name} is not in the lock")
        elif not requirement.specifier.contains(pins[name], prereleases=True):
            found.append(f"the lock pins {requirement.name}=={pins[name]}, outside {requirement.specifier}")
    found += [f"{name} is locked but installed separately" for name in UNLOCKED if name in pins]
    return found


def write(freeze: Path, lock: Path = LOCK) -> None:
    """Write the lock from ``pip freeze`` of a fresh install of the project with its locked extras."""
    pins = [
        line.strip()
        for line in freeze.read_text(encoding="utf-8").splitlines()
        if "==" in line and canonicalize_name(line.partition("==")[0]) not in UNLOCKED
    ]
    header = [
        "# The exact versions CI tested: pip constraints for script/setup and the Dockerfiles.",
        "# Made by script/lock from pyproject.toml's dependencies and the extras "
        + ", ".join(LOCKED_EXTRAS)
        + "; torch is installed first, pinned.",
        DIGEST_PREFIX + digest(locked_requirements()),
    ]
    lock.write_text("\n".join([*header, *sorted(pins, key=str.lower)]) + "\n", encoding="utf-8")


if __name__ == "__main__":
    if len(sys.argv) != 3 or sys.argv[1] != "write":
        sys.exit("usage: python -m tools.lockfile write FREEZE_FILE")
    write(Path(sys.argv[2]))
