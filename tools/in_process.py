"""The real handler serving a backend in this process, for tests and benchmarks that set what no flag sets.

A stand-in backend, or the demo model with turn settings of the benchmark's own (a
server that holds nothing back, say), behind the same ``Qwen3EventHandler`` the
server runs, on a loopback port.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from pathlib import Path

from wyoming.server import AsyncTcpServer

from tools.server_process import free_port
from wyoming_qwen3.backends.base import Backend
from wyoming_qwen3.backends.simulkv.backend import SimulKvBackend
from wyoming_qwen3.backends.simulkv.settings import (
    ALIGNMENT_HEADS_FILE,
    AlignmentHeads,
    AlignmentPolicy,
    SimulKvSettings,
)
from wyoming_qwen3.model.catalogue import ResolvedModel, resolve_model
from wyoming_qwen3.model.qwen import QwenAsrModel
from wyoming_qwen3.server.handler import Qwen3EventHandler
from wyoming_qwen3.server.info import build_info
from wyoming_qwen3.server.settings import HandlerConfig
from wyoming_qwen3.server.stream.speech_activity import DetectorPool


@contextlib.asynccontextmanager
async def serving(
    backend: Backend, config: HandlerConfig | None = None, detectors: DetectorPool | None = None
) -> AsyncIterator[int]:
    """The real handler serving ``backend`` in this process on a loopback port (yielded); its VAD detectors
    from ``detectors`` (a pool of its own if None), as the server's from its one pool."""
    model = ResolvedModel(backend.name, Path("."), backend.name, "https://example.invalid")
    info = build_info(model, backend.name, backend.supported_languages)
    port = free_port()
    server = AsyncTcpServer("127.0.0.1", port)
    settings = config or HandlerConfig()
    detectors = detectors if detectors is not None else DetectorPool()
    await server.start(
        lambda *a: Qwen3EventHandler(*a, info=info, backend=backend, config=settings, detectors=detectors)
    )
    try:
        yield port
    finally:
        await server.stop()


def demo_backend(quantize: str = "none") -> SimulKvBackend:
    """The demo model with its heads file's policy, as the server runs it (``quantize`` as its flag)."""
    demo = resolve_model("demo", [], Path("."))
    heads = AlignmentHeads.load(demo.path / ALIGNMENT_HEADS_FILE)
    settings = SimulKvSettings(policy=AlignmentPolicy.for_model(heads))
    return SimulKvBackend(QwenAsrModel.load(demo.path, "cpu", quantize=quantize), heads, settings)
