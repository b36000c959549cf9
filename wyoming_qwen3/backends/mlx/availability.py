"""Whether the mlx backend can run here: macOS on Apple Silicon with ``mlx-qwen3-asr`` importable."""

from __future__ import annotations

import platform
import sys


class MlxUnavailableError(RuntimeError):
    """The mlx backend was asked for where it cannot run."""


def is_apple_silicon() -> bool:
    return sys.platform == "darwin" and platform.machine() == "arm64"


def mlx_import_error() -> str | None:
    """Why ``mlx-qwen3-asr`` cannot be used here, or None when it can."""
    if not is_apple_silicon():
        return f"{sys.platform}/{platform.machine()} is not macOS on Apple Silicon"
    try:
        import mlx_qwen3_asr  # noqa: F401
    except ImportError as err:
        return f"mlx-qwen3-asr cannot be imported ({err})"
    return None


def mlx_available() -> bool:
    """True on Apple Silicon with ``mlx-qwen3-asr`` importable."""
    return mlx_import_error() is None


def check_mlx_available() -> None:
    """Raise MlxUnavailableError, naming the fix, when mlx cannot be used here."""
    problem = mlx_import_error()
    if problem is not None:
        raise MlxUnavailableError(
            "the mlx backend needs macOS on Apple Silicon with the 'mlx' extra "
            f"(pip install 'wyoming-qwen3[mlx]'), but {problem}; use --backend simulkv"
        )
