"""The package's layout keeps its promises: the Wyoming side, the home and the mlx backend load without torch."""

from __future__ import annotations

import pkgutil
import subprocess
import sys

import wyoming_qwen3.home
import wyoming_qwen3.server
import wyoming_qwen3.server.stream

TORCH_FREE = [
    *(f"wyoming_qwen3.server.{m.name}" for m in pkgutil.iter_modules(wyoming_qwen3.server.__path__)),
    *(f"wyoming_qwen3.server.stream.{m.name}" for m in pkgutil.iter_modules(wyoming_qwen3.server.stream.__path__)),
    "wyoming_qwen3.__main__",
    *(f"wyoming_qwen3.home.{m.name}" for m in pkgutil.iter_modules(wyoming_qwen3.home.__path__)),
    "wyoming_qwen3.backends.base",
    "wyoming_qwen3.backends.loading",
    "wyoming_qwen3.backends.mlx.backend",
    "wyoming_qwen3.backends.simulkv.settings",
    "wyoming_qwen3.model.catalogue",
    "wyoming_qwen3.model.format",
]


def test_the_server_side_and_the_mlx_backend_import_no_torch() -> None:
    assert "wyoming_qwen3.server.handler" in TORCH_FREE and len(TORCH_FREE) > 15
    code = (
        "import importlib, sys\n"
        f"for name in {TORCH_FREE!r}: importlib.import_module(name)\n"
        "heavy = sorted(m for m in ('torch', 'transformers') if m in sys.modules)\n"
        "print(','.join(heavy))\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "", f"imported: {result.stdout}"


def test_the_simulkv_backend_does_import_torch() -> None:
    """The check above can see torch: loading simulkv brings it in."""
    code = "import sys, wyoming_qwen3.backends.simulkv.backend; print('torch' in sys.modules)"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert result.stdout.strip() == "True", result.stderr
