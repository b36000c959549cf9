"""Freed memory goes back to the operating system: utterances' reference cycles are collected when their
connection closes, and the holes they leave in glibc's heap are not kept."""

from __future__ import annotations

import asyncio
import gc
import platform
import weakref
from dataclasses import replace

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


@pytest.mark.parametrize("speed", [None, 1.0])
def test_an_utterance_is_freed_when_its_connection_closes(speech, speed: float | None) -> None:
    """Its objects end in reference cycles (a cancelled task's error holds the frame that holds the utterance):
    with the automatic collector off, only the server's own collection at disconnect frees them, while the server
    runs. (The inference thread kept its last call, and with it the last utterance, until the next command: this
    failed at once for the last of the three.) At once as a fast client sends, and in real time, with an early
    final pass in the trailing silence."""
    backend = RecordingBackend()
    audio = speech("turn on the kitchen light")
    # 0.6 s of silence after the speech: the early pass runs in it.
    trailing = bytes(int(0.6 * audio.rate) * audio.width * audio.channels)

    async def scenario() -> list[StreamingSession | None]:
        async with serving(backend) as port:
            for _ in range(3):
                sent = replace(audio, audio=audio.audio + trailing) if speed else audio
                reply = await stream("127.0.0.1", port, sent, language="en", speed=speed)
                assert reply.text.endswith("world")
            for _ in range(100):  # the handler's disconnect runs after the client has closed
                if all(ref() is None for ref in backend.sessions):
                    break
                await asyncio.sleep(0.02)
            return [ref() for ref in backend.sessions]

    gc.disable()
    try:
        alive = asyncio.run(scenario())
    finally:
        gc.enable()
        backend.executor.shutdown()
    assert len(backend.sessions) == 3
    assert alive == [None, None, None]
