"""Reproducible installs: the lock agrees with pyproject.toml, and the install is the small native one."""

from __future__ import annotations

from importlib import metadata
from pathlib import Path

from packaging.utils import canonicalize_name

from tools import lockfile

#: What qwen-asr 0.0.6 dragged in (2 GB of venv); transformers' own Qwen3-ASR needs none of it.
NOT_WANTED = ["gradio", "flask", "fastapi", "nagisa", "dynet38", "soynlp", "librosa", "av", "pandas", "scikit-learn"]


def test_the_lock_agrees_with_pyproject() -> None:
    assert lockfile.problems() == []


def test_a_changed_dependency_without_a_new_lock_is_caught(tmp_path: Path) -> None:
    pyproject = tmp_path / "pyproject.toml"
    text = (lockfile.ROOT / "pyproject.toml").read_text(encoding="utf-8")
    pyproject.write_text(text.replace('"numpy>=1.26"', '"numpy>=99"'), encoding="utf-8")
    found = lockfile.problems(pyproject=pyproject)
    assert any("run script/lock" in p for p in found) and any("numpy" in p for p in found), found


def test_the_install_is_the_native_one() -> None:
    """This environment is script/setup's (the package and its dev extra, from the lock)."""
    installed = {canonicalize_name(d.metadata["Name"]) for d in metadata.distributions()}
    assert "transformers" in installed and "wyoming-qwen3" in installed
    assert [name for name in NOT_WANTED if canonicalize_name(name) in installed] == []
    assert [name for name in NOT_WANTED if canonicalize_name(name) in lockfile.read_pins()] == []
    assert "qwen-asr" not in installed
    pins = lockfile.read_pins()
    for name in installed & set(pins):  # what script/setup installed came from the lock
        assert metadata.version(name) == pins[name], name
