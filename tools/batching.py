"""Streams run alone and the same streams batched on the inference thread, delta by delta (tests and benchmarks).

``together`` holds the inference thread while each round's feeds are queued, so
that they run as one batch: stream k joins at round ``starts[k]``, each feed takes
``FEED_SAMPLES`` (several steps' worth, as a slow machine's steps do), and a
stream whose audio is over queues its final pass.
"""

from __future__ import annotations

import threading
from typing import Any

import numpy as np

from wyoming_qwen3.backends.base import Backend, SessionOptions, StreamingSession
from wyoming_qwen3.backends.inference import FINAL, STEP, InferenceExecutor
from wyoming_qwen3.model.format import SAMPLE_RATE

FEED_SAMPLES = int(0.3 * SAMPLE_RATE)


def blocked(executor: InferenceExecutor) -> threading.Event:
    """Hold the inference thread until the event is set, so that what is submitted meanwhile queues."""
    gate = threading.Event()
    executor.submit(gate.wait)
    return gate


def alone(backend: Backend, audio: np.ndarray) -> list[str]:
    """One stream by itself: the delta of each feed, then the final delta."""
    session = backend.create_session(SessionOptions(language="English"))
    deltas = [session.feed(audio[i : i + FEED_SAMPLES]) for i in range(0, len(audio), FEED_SAMPLES)]
    return [*deltas, session.finish().text]


def together(backend: Backend, audios: list[np.ndarray], starts: list[int]) -> list[list[str]]:
    """The same streams at once, batched: each stream's deltas as ``alone`` gives them."""
    sessions: list[StreamingSession] = [backend.create_session(SessionOptions(language="English")) for _ in audios]
    deltas: list[list[str]] = [[] for _ in audios]
    feeds = [-(-len(audio) // FEED_SAMPLES) for audio in audios]
    for round_index in range(max(start + count + 1 for start, count in zip(starts, feeds, strict=True))):
        gate = blocked(backend.executor)
        futures: list[tuple[int, Any]] = []
        for index, (session, audio, start) in enumerate(zip(sessions, audios, starts, strict=True)):
            offset = (round_index - start) * FEED_SAMPLES
            if 0 <= offset < len(audio):
                piece = audio[offset : offset + FEED_SAMPLES]
                futures.append((index, backend.executor.submit_stepwise(STEP, session.feed_stepwise, piece)))
            elif offset >= len(audio) and len(deltas[index]) == feeds[index]:
                futures.append((index, backend.executor.submit_stepwise(FINAL, session.finish_stepwise, None)))
        gate.set()
        for index, future in futures:
            result = future.result(timeout=60)
            deltas[index].append(result if isinstance(result, str) else result.text)
    return deltas


def batch_sizes(backend: Backend) -> list[int]:
    """Record the size of every batched pass the backend runs from now on (the list grows as they run)."""
    sizes: list[int] = []
    forward_batch = backend.executor._forward_batch
    assert forward_batch is not None, "this backend batches nothing"

    def recording(requests: list[Any]) -> list[Any]:
        sizes.append(len(requests))
        return forward_batch(requests)

    backend.executor._forward_batch = recording
    return sizes
