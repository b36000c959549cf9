"""script/setup's torch: the build each machine needs, and the user's override (the choice, not the download)."""

from __future__ import annotations

import importlib.machinery
import importlib.util
import os
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "script" / "torch-choice"


def torch_choice() -> ModuleType:
    loader = importlib.machinery.SourceFileLoader("torch_choice", str(SCRIPT))
    spec = importlib.util.spec_from_loader("torch_choice", loader)
    assert spec is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["torch_choice"] = module  # dataclasses look their module up by name
    loader.exec_module(module)
    return module


CHOICE = torch_choice()
CPU = ["--index-url", "https://download.pytorch.org/whl/cpu", "torch==2.13.0"]


def choose(system: str = "Linux", driver: str | None = None, reachable: bool = True, **environment: str):  # noqa: ANN201
    return CHOICE.choose(CHOICE.Machine(system, driver, reachable), environment)


def test_linux_without_an_nvidia_gpu_gets_the_cpu_build_from_torchs_index() -> None:
    choice = choose()
    assert choice.pip_arguments == CPU and not choice.warning


def test_where_torchs_index_cannot_be_reached_the_default_index_is_used_with_a_warning() -> None:
    choice = choose(reachable=False)
    assert choice.pip_arguments == ["torch==2.13.0"]
    assert "CUDA build" in choice.warning and "TORCH_REQUIREMENT=" in choice.warning


def test_an_nvidia_gpu_gets_pypis_cuda_build() -> None:
    choice = choose(driver="580.65.06")
    assert choice.pip_arguments == ["torch==2.13.0"] and not choice.warning


def test_an_older_nvidia_driver_is_told_which_index_serves_it() -> None:
    choice = choose(driver="550.127.05")
    assert choice.pip_arguments == ["torch==2.13.0"]
    assert "TORCH_INDEX_URL=https://download.pytorch.org/whl/cu126" in choice.warning


def test_macos_gets_pypis_torch() -> None:
    assert choose("Darwin", reachable=False).pip_arguments == ["torch==2.13.0"]


@pytest.mark.parametrize("system", ["Linux", "Darwin"])
@pytest.mark.parametrize("driver", [None, "580.65.06"])
def test_the_users_override_wins(system: str, driver: str | None) -> None:
    index = "https://download.pytorch.org/whl/cu126"
    assert choose(system, driver, TORCH_INDEX_URL=index).pip_arguments == ["--index-url", index, "torch==2.13.0"]
    wheel = "/wheels/torch-2.13.0+cpu-cp311-cp311-manylinux_2_28_x86_64.whl"
    assert choose(system, driver, TORCH_REQUIREMENT=wheel).pip_arguments == [wheel]
    both = choose(system, driver, TORCH_REQUIREMENT="torch==2.9.1", TORCH_INDEX_URL=index)
    assert both.pip_arguments == ["--index-url", index, "torch==2.9.1"]


def test_the_driver_is_read_in_a_container_without_nvidia_smi() -> None:
    closed = "NVRM version: NVIDIA UNIX x86_64 Kernel Module  550.127.05  Tue Oct  8 03:22:07 UTC 2024\n"
    open_module = "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.65.06  Release Build\n"
    assert CHOICE.kernel_module_version(closed) == "550.127.05"
    assert CHOICE.kernel_module_version(open_module) == "580.65.06"


def run_script(tmp_path: Path, *, nvidia_smi: str | None, **environment: str) -> subprocess.CompletedProcess[str]:
    """script/torch-choice as script/setup runs it, with a stand-in nvidia-smi on PATH (or none)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    if nvidia_smi is not None:
        (bin_dir / "nvidia-smi").write_text(f"#!/bin/sh\necho {nvidia_smi}\n")
        (bin_dir / "nvidia-smi").chmod(0o755)
    env = {"PATH": f"{bin_dir}:/usr/bin:/bin", **environment}
    return subprocess.run(
        [sys.executable, str(SCRIPT)], capture_output=True, text=True, env=env, timeout=60
    )  # fmt: skip


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the detection runs on Linux")
def test_the_script_reads_nvidia_smi_and_prints_pips_arguments(tmp_path: Path) -> None:
    gpu = run_script(tmp_path, nvidia_smi="580.65.06")
    assert gpu.returncode == 0 and gpu.stdout.split() == ["torch==2.13.0"]
    assert "CUDA build (NVIDIA driver 580.65.06)" in gpu.stderr
    override = run_script(tmp_path, nvidia_smi="580.65.06", TORCH_INDEX_URL="https://example.invalid/cpu")
    assert override.stdout.split() == ["--index-url", "https://example.invalid/cpu", "torch==2.13.0"]


def test_the_old_variable_is_refused_with_its_new_name(tmp_path: Path) -> None:
    result = run_script(tmp_path, nvidia_smi=None, TORCH_SPEC="torch==2.13.0")
    assert result.returncode == 2 and "TORCH_REQUIREMENT" in result.stderr and not result.stdout


def test_setup_installs_what_the_choice_prints() -> None:
    setup = (ROOT / "script" / "setup").read_text(encoding="utf-8")
    assert "script/torch-choice" in setup and '"${torch_arguments[@]}"' in setup
    assert os.access(SCRIPT, os.X_OK)
