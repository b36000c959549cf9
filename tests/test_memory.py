"""Freed memory goes back to the operating system: utterances' reference cycles are collected when their
connection closes, and the holes they leave in glibc's heap are not kept."""

from __future__ import annotations

import asyncio
import gc
import platform
import weakref

import numpy as np
import pytest

from tools.client import stream
from tools.in_process import serving
from tools.server_process import memory_kib
from wyoming_qwen3.backends.base import SessionOptions, StreamingSession
from wyoming_qwen3.server.memory import return_free_memory

from .test_handler import WordsBackend


def resident_mib() -> float:
    return memory_kib("self") / 1024


@pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="malloc_trim is glibc's")
def test_the_holes_freed_arrays_leave_in_the_heap_go_back_to_the_system() -> None:
    # 64 KiB arrays, under glibc's mmap threshold, so they live in the heap; every other one freed leaves holes that
    # glibc keeps (the last one pins the heap's top).
    arrays = [np.ones(16 * 1024, np.float32) for _ in range(3200)]
    del arrays[:-1:2]
    before = resident_mib()
    assert return_free_memory()
    assert before - resident_mib() > 50, (before, resident_mib())
    del arrays


class RecordingBackend(WordsBackend):
    """Keeps a weak reference to each session it makes."""

    def __init__(self) -> None:
        super().__init__()
        self.sessions: list[weakref.ref[StreamingSession]] = []

    def create_session(self, options: SessionOptions) -> StreamingSession:
        session = super().create_session(options)
        self.sessions.append(weakref.ref(session))
        return session


def test_an_utterance_is_freed_when_its_connection_closes(speech) -> None:
    """Its objects end in reference cycles (a cancelled task's error holds the frame that holds the utterance):
    with the automatic collector off, only the server's own collection at disconnect frees them."""
    backend = RecordingBackend()
    audio = speech("turn on the kitchen light")

    async def scenario() -> None:
        async with serving(backend) as port:
            for _ in range(3):
                reply = await stream("127.0.0.1", port, audio, language="en", speed=None)
                assert reply.text.endswith("world")
            for _ in range(100):  # the handler's disconnect runs after the client has closed
                if all(ref() is None for ref in backend.sessions):
                    break
                await asyncio.sleep(0.02)

    gc.disable()
    try:
        asyncio.run(scenario())
    finally:
        gc.enable()
        backend.executor.shutdown()
    assert len(backend.sessions) == 3
    assert [ref() for ref in backend.sessions] == [None, None, None]
