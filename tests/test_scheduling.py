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
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
from wyoming.asr import Transcribe
from wyoming.audio import AudioChunk, AudioStart, AudioStop
from wyoming.client import AsyncTcpClient

from tools.ha_client import room_noise
from tools.speech import pcm16, speak, trimmed
from wyoming_qwen3.backends.base import Backend, FinalDelta, SessionOptions, Speculation, StreamingSession
from wyoming_qwen3.backends.inference import EARLY, FINAL, STEP, InferenceExecutor, Preempted
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


class EnglishBackend(Backend):
    @property
    def supported_languages(self) -> list[str]:
        return ["English"]


class SlowBackend(EnglishBackend):
    def __init__(self) -> None:
        super().__init__("slow")
        self.sessions: list[SlowSession] = []

    def create_session(self, options: SessionOptions) -> SlowSession:
        self.sessions.append(SlowSession())
        return self.sessions[-1]


def loud_noise(seconds: float) -> bytes:
    return (np.random.default_rng(0).normal(0, 0.2, int(seconds * SAMPLE_RATE)) * 32767).astype("<i2").tobytes()


async def stream_in_real_time(port: int, pcm: bytes, stop: bool = True) -> tuple[float, float] | None:
    """Stream 16-bit PCM in 10 ms chunks at real-time pace; then audio-stop, and (audio-stop time, transcript
    time); or, without ``stop``, hang up (None)."""
    async with AsyncTcpClient("127.0.0.1", port) as client:
        await client.write_event(Transcribe(language="en").event())
        await client.write_event(AudioStart(SAMPLE_RATE, 2, 1).event())
        began = time.monotonic()
        for index, start in enumerate(range(0, len(pcm), 320)):
            await client.write_event(AudioChunk(SAMPLE_RATE, 2, 1, pcm[start : start + 320]).event())
            await asyncio.sleep(max(0.0, began + (index + 1) * 0.01 - time.monotonic()))
        if not stop:
            return None
        stopped = time.monotonic()
        await client.write_event(AudioStop().event())
        while True:
            event = await client.read_event()
            assert event is not None
            if event.type == "transcript":
                return stopped, time.monotonic()


def test_slow_steps_take_all_new_audio_and_none_runs_after_audio_stop() -> None:
    backend = SlowBackend()

    async def main() -> tuple[float, float] | None:
        async with serving(backend) as port:
            return await stream_in_real_time(port, loud_noise(3.2))

    times = asyncio.run(main())
    assert times is not None
    stopped, transcript = times
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


def yielding_call(executor: InferenceExecutor, log: list[str], name: str, tokens: int = 50) -> Callable[[], str]:
    """An early final pass as simulkv runs one: a token at a time, asking between them whether to give way."""

    def call() -> str:
        log.append(f"{name} starts")
        for _ in range(tokens):
            if executor.should_yield():
                log.append(f"{name} yields")
                raise Preempted
            time.sleep(0.002)
        log.append(f"{name} ends")
        return name

    return call


def test_an_early_pass_gives_way_to_a_step_and_runs_again_after() -> None:
    executor = InferenceExecutor()
    log: list[str] = []
    early = executor.submit_with_priority(EARLY, yielding_call(executor, log, "early"))
    while log != ["early starts"]:
        time.sleep(0.001)
    step = executor.submit(log.append, "step")  # another stream's step, queued after the early pass started
    final = executor.submit_with_priority(FINAL, log.append, "final")
    assert early.result(timeout=5) == "early"
    assert step.done() and final.done()
    executor.shutdown()
    assert log == ["early starts", "early yields", "final", "step", "early starts", "early ends"]


def test_an_early_pass_no_longer_wanted_stops_at_its_next_token_and_is_not_run_again() -> None:
    executor = InferenceExecutor()
    log: list[str] = []
    early = executor.submit_with_priority(EARLY, yielding_call(executor, log, "early", tokens=2000))
    while log != ["early starts"]:
        time.sleep(0.001)
    assert early.cancel()  # speech resumed, or the client left, while it runs
    after = executor.submit(log.append, "next")
    after.result(timeout=5)
    executor.shutdown()
    assert log == ["early starts", "early yields", "next"]


def test_early_passes_queue_behind_steps_until_someone_waits_for_one() -> None:
    executor = InferenceExecutor()
    gate = threading.Event()
    order: list[str] = []
    executor.submit(gate.wait)  # a step under way
    early = executor.submit_with_priority(EARLY, order.append, "early")
    steps = [executor.submit(order.append, f"step {i}") for i in range(2)]
    waited_for = executor.submit_with_priority(EARLY, order.append, "early, then audio-stop")
    executor.promote(waited_for)
    gate.set()
    for future in [early, *steps, waited_for]:
        future.result(timeout=5)
    executor.shutdown()
    assert order == ["early, then audio-stop", "step 0", "step 1", "early"]


@dataclass
class PausingSession(StreamingSession):
    """Steps at once; an early final pass of 2 s (A's) or 0.1 s that asks between tokens whether to give way."""

    backend: PausingBackend
    name: str

    def feed(self, audio: np.ndarray) -> str:
        return ""

    def finish(self, audio: np.ndarray | None = None) -> FinalDelta:
        self.backend.log.append(f"{self.name} final")
        return FinalDelta(self.name, "English")

    def speculate(self, audio: np.ndarray | None = None) -> Speculation:
        tokens = 1000 if self.name == "A" else 50
        yielding_call(self.backend.executor, self.backend.log, f"{self.name} early", tokens)()
        return Speculation(self.name, "English", 1.0)


class PausingBackend(EnglishBackend):
    def __init__(self) -> None:
        super().__init__("pausing")
        self.log: list[str] = []

    def create_session(self, options: SessionOptions) -> PausingSession:
        self.log.append("session")
        return PausingSession(self, "ABCDEF"[self.log.count("session") - 1])


async def speak_then_pause(port: int, pause_seconds: float, stop: bool) -> float | None:
    """Real speech, then the room for ``pause_seconds``, in real time; then audio-stop (the seconds to the
    transcript) or a hang-up (None)."""
    audio = np.concatenate([trimmed(speak("turn on the kitchen lights")), room_noise(pause_seconds, 0)])
    times = await stream_in_real_time(port, pcm16(audio), stop)
    return None if times is None else times[1] - times[0]


def test_an_early_pass_gives_way_to_another_users_final_pass_and_stops_when_its_client_leaves() -> None:
    """A pauses (its early pass starts, 2 s long) and hangs up later; B ends meanwhile. B's final pass runs at
    once, ahead of A's early pass, which then starts again, and stops when A leaves, never to run again."""
    backend = PausingBackend()

    async def main() -> float | None:
        async with serving(backend) as port:
            a = asyncio.create_task(speak_then_pause(port, 1.8, stop=False))
            await asyncio.sleep(0.3)
            b = await speak_then_pause(port, 0.6, stop=True)
            await a
            await asyncio.sleep(0.3)  # the hang-up reaches the server, and its early pass would run on
            return b

    b_seconds = asyncio.run(main())
    backend.executor.shutdown()
    log = [entry for entry in backend.log if entry != "session"]
    assert b_seconds is not None and b_seconds < 0.3, log  # not behind A's 2 s
    first_of_b = next(index for index, entry in enumerate(log) if entry.startswith("B "))
    assert log[0] == "A early starts" and log[first_of_b - 1] == "A early yields", log
    # Left by its client mid-pass: stopped at its next token, and not run again (else it ends before shutdown).
    assert log[-1] == "A early yields" and "A early ends" not in log, log
