"""When inference runs: steps at the machine's own pace, nothing but the final pass after audio-stop.

A backend whose every step takes a second (unless told that the speaker has
finished) stands in for a CPU that cannot keep up; the real handler serves it
on loopback and a wyoming client streams 10 ms chunks in real time, as Home
Assistant does.
"""

from __future__ import annotations

import asyncio
import threading
import time
from dataclasses import dataclass, field

import numpy as np
from wyoming.asr import Transcribe
from wyoming.audio import AudioChunk, AudioStart, AudioStop
from wyoming.client import AsyncTcpClient

from wyoming_qwen3.backends.base import Backend, FinalDelta, SessionOptions, StreamingSession
from wyoming_qwen3.backends.inference import FINAL, STEP, InferenceExecutor
from wyoming_qwen3.model.format import SAMPLE_RATE

from .conftest import serving

STEP_SECONDS = 1.0


@dataclass
class Call:
    kind: str
    samples: int
    started: float


@dataclass
class SlowSession(StreamingSession):
    calls: list[Call] = field(default_factory=list)
    speaker_finished: threading.Event = field(default_factory=threading.Event)

    def feed(self, audio: np.ndarray) -> str:
        self.calls.append(Call("step", audio.shape[0], time.monotonic()))
        self.speaker_finished.wait(STEP_SECONDS)  # a step ends early once told, as simulkv's does
        return "word " if len(self.calls) == 1 else ""

    def stop_early(self) -> None:
        self.speaker_finished.set()

    def finish(self, audio: np.ndarray | None = None) -> FinalDelta:
        self.calls.append(Call("final", 0 if audio is None else audio.shape[0], time.monotonic()))
        time.sleep(0.2)
        return FinalDelta("end", "English")


class SlowBackend(Backend):
    def __init__(self) -> None:
        super().__init__("slow")
        self.sessions: list[SlowSession] = []

    @property
    def supported_languages(self) -> list[str]:
        return ["English"]

    def create_session(self, options: SessionOptions) -> SlowSession:
        self.sessions.append(SlowSession())
        return self.sessions[-1]


async def stream_in_real_time(port: int, seconds: float) -> tuple[float, float]:
    """Stream loud noise in 10 ms chunks at real-time pace; (audio-stop time, transcript time)."""
    pcm = (np.random.default_rng(0).normal(0, 0.2, int(seconds * SAMPLE_RATE)) * 32767).astype("<i2").tobytes()
    async with AsyncTcpClient("127.0.0.1", port) as client:
        await client.write_event(Transcribe(language="en").event())
        await client.write_event(AudioStart(SAMPLE_RATE, 2, 1).event())
        began = time.monotonic()
        for index, start in enumerate(range(0, len(pcm), 320)):
            await client.write_event(AudioChunk(SAMPLE_RATE, 2, 1, pcm[start : start + 320]).event())
            await asyncio.sleep(max(0.0, began + (index + 1) * 0.01 - time.monotonic()))
        stopped = time.monotonic()
        await client.write_event(AudioStop().event())
        while True:
            event = await client.read_event()
            assert event is not None
            if event.type == "transcript":
                return stopped, time.monotonic()


def test_slow_steps_take_all_new_audio_and_none_runs_after_audio_stop() -> None:
    backend = SlowBackend()

    async def main() -> tuple[float, float]:
        async with serving(backend) as port:
            return await stream_in_real_time(port, 3.2)

    stopped, transcript = asyncio.run(main())
    backend.executor.shutdown()
    calls = backend.sessions[0].calls
    steps = [c for c in calls if c.kind == "step"]
    assert [c.kind for c in calls] == ["step"] * len(steps) + ["final"]
    # At its own pace: each step took all the audio that came during the one before (not 320 steps).
    assert 2 <= len(steps) <= 5  # about one a second (4 when the client keeps real time)
    assert sum(c.samples for c in calls) == int(3.2 * SAMPLE_RATE)
    # Nothing but the final pass after audio-stop, and the step under way was told to end early.
    assert all(c.started < stopped for c in steps)
    assert calls[-1].samples > 0  # the audio of the last step's second went straight into the final pass
    assert transcript - stopped < 0.2 + 0.5


def test_a_final_pass_goes_ahead_of_queued_steps() -> None:
    executor = InferenceExecutor()
    gate = threading.Event()
    order: list[str] = []
    executor.submit(gate.wait)  # a step under way
    futures = [executor.submit_with_priority(STEP, order.append, f"step {i}") for i in range(3)]
    futures.append(executor.submit_with_priority(FINAL, order.append, "final"))
    gate.set()
    for future in futures:
        future.result(timeout=5)
    executor.shutdown()
    assert order == ["final", "step 0", "step 1", "step 2"]


def test_shutdown_cancels_what_is_queued() -> None:
    executor = InferenceExecutor()
    gate = threading.Event()
    executor.submit(gate.wait)
    queued = executor.submit(time.sleep, 0)
    executor.shutdown(wait=False, cancel_futures=True)
    gate.set()
    assert queued.cancelled()
