"""Choosing and loading the backend the command line asks for.

Torch is imported here only once simulkv is chosen, so that the Wyoming side
and the mlx backend start without it.
"""

from __future__ import annotations

import argparse

from ..model.catalogue import ResolvedModel
from .base import Backend
from .mlx.availability import MlxUnavailableError, check_mlx_available, mlx_available

BACKENDS = ("auto", "simulkv", "mlx")


class BackendLoadError(Exception):
    """The backend cannot serve this model with these options; the message says why."""


def choose_backend(kind: str) -> str:
    """Resolve ``auto``, and refuse mlx where it cannot run (before any download)."""
    if kind == "auto":
        return "mlx" if mlx_available() else "simulkv"
    if kind == "mlx":
        try:
            check_mlx_available()
        except MlxUnavailableError as err:
            raise BackendLoadError(str(err)) from err
    return kind


def create_backend(kind: str, model: ResolvedModel, options: argparse.Namespace) -> Backend:
    """Load the model behind the chosen backend."""
    if kind == "mlx":
        from .mlx.backend import MlxBackend

        try:
            return MlxBackend(str(model.path))
        except Exception as err:  # the library raises many types; all mean "cannot serve"
            raise BackendLoadError(f"mlx-qwen3-asr cannot load {model.path}: {err}") from err
    from .simulkv.backend import SimulKvBackend

    try:
        return SimulKvBackend.from_options(model, options)
    except ValueError as err:  # an encoder window the model does not know, int8 off the CPU, a bad heads file
        raise BackendLoadError(str(err)) from err
