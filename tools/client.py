"""One Wyoming client for tests and benchmarks: stream an utterance as a satellite does, and time the reply.

It uses the ``wyoming`` package's own client: ``transcribe``, ``audio-start``,
audio chunks paced against the clock (10 ms of 16 kHz 16-bit mono is the 320
bytes Home Assistant sends), ``audio-stop``, while a reader collects every
event with the time it arrived (seconds from the first audio chunk).
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field

from wyoming.asr import Transcribe
from wyoming.audio import AudioChunk, AudioStart, AudioStop
from wyoming.client import AsyncTcpClient
from wyoming.event import Event
from wyoming.info import Describe

from .speech import Speech


@dataclass
class Reply:
    """Every event of one utterance, with the time each arrived (seconds from the first audio)."""

    events: list[Event] = field(default_factory=list)
    times: list[float] = field(default_factory=list)
    #: When the last audio chunk was written, and audio-stop (None if not sent).
    last_audio_s: float = 0.0
    audio_stop_s: float | None = None

    @property
    def types(self) -> list[str]:
        return [e.type for e in self.events]

    @property
    def chunks(self) -> list[str]:
        return [e.data["text"] for e in self.events if e.type == "transcript-chunk"]

    @property
    def transcript(self) -> Event:
        return next(e for e in self.events if e.type == "transcript")

    @property
    def text(self) -> str:
        return str(self.transcript.data["text"])

    def first_time(self, event_type: str) -> float | None:
        return next((t for e, t in zip(self.events, self.times, strict=True) if e.type == event_type), None)

    @property
    def first_chunk_s(self) -> float | None:
        return self.first_time("transcript-chunk")

    @property
    def final_latency_s(self) -> float:
        """End of audio -> the final transcript."""
        transcript_s = self.first_time("transcript")
        assert transcript_s is not None, self.types
        return transcript_s - self.last_audio_s

    @property
    def partial_before_end(self) -> bool:
        """Whether words arrived while the speaker was still speaking."""
        return self.first_chunk_s is not None and self.first_chunk_s < self.last_audio_s


async def describe(host: str, port: int, timeout: float = 10.0) -> Event:
    """The server's ``info``."""
    async with connect(host, port) as client:
        await client.write_event(Describe().event())
        while True:
            event = await asyncio.wait_for(client.read_event(), timeout)
            if event is None or event.type == "info":
                assert event is not None, "the server closed the connection"
                return event


def connect(host: str, port: int) -> AsyncTcpClient:
    return AsyncTcpClient(host, port)


async def read_until(
    client: AsyncTcpClient, reply: Reply, last: str = "transcript-stop", began: float | None = None, timeout: float = 60
) -> None:
    """Read events into ``reply`` until one of type ``last`` or an ``error``; times are from ``began``."""
    began = time.perf_counter() if began is None else began
    while True:
        event = await asyncio.wait_for(client.read_event(), timeout)
        assert event is not None, f"the server closed the connection after {reply.types}"
        reply.events.append(event)
        reply.times.append(time.perf_counter() - began)
        if event.type in (last, "error"):
            return


async def stream(
    host: str,
    port: int,
    speech: Speech,
    *,
    language: str | None = None,
    names: list[str] | None = None,
    chunk_seconds: float = 0.01,
    speed: float | None = 1.0,
    send_stop: bool = True,
    last: str = "transcript-stop",
    timeout: float = 120.0,
    hang_up_after_s: float | None = None,
) -> Reply:
    """Send one utterance in ``chunk_seconds`` chunks at ``speed`` x real time (None: as fast as possible),
    and read until the ``last`` event type (or an ``error``). ``hang_up_after_s``: send that much audio, then
    close the connection, no ``audio-stop``, nothing read (a satellite that drops mid-command)."""
    reply = Reply()
    frame = speech.width * speech.channels
    step = max(1, int(speech.rate * chunk_seconds)) * frame
    audio = speech.audio if hang_up_after_s is None else speech.audio[: int(hang_up_after_s * speech.rate) * frame]
    async with connect(host, port) as client:
        await client.write_event(Transcribe(language=language, transcript_names=names).event())
        await client.write_event(AudioStart(speech.rate, speech.width, speech.channels).event())
        began = time.perf_counter()
        reader = asyncio.create_task(read_until(client, reply, last, began, timeout))
        try:
            for index, start in enumerate(range(0, len(audio), step)):
                if reader.done():
                    break
                chunk = AudioChunk(speech.rate, speech.width, speech.channels, audio[start : start + step])
                await client.write_event(chunk.event())
                if speed is not None:  # paced against the clock, not by sleeping per chunk, so the rate holds
                    delay = began + (index + 1) * chunk_seconds / speed - time.perf_counter()
                    if delay > 0:
                        await asyncio.sleep(delay)
            reply.last_audio_s = time.perf_counter() - began
            if hang_up_after_s is not None:
                return reply
            if send_stop and not reader.done():
                reply.audio_stop_s = time.perf_counter() - began
                await client.write_event(AudioStop().event())
            await reader
        finally:
            reader.cancel()
    return reply


def assert_streaming_order(reply: Reply) -> None:
    """transcript-start, chunk*, transcript, transcript-stop, and the chunks concatenate to the text."""
    types = reply.types
    assert "error" not in types, reply.events
    assert types[0] == "transcript-start"
    assert types[-2:] == ["transcript", "transcript-stop"]
    assert set(types[1:-2]) <= {"transcript-chunk"}
    assert "".join(reply.chunks) == reply.text
    assert all(reply.chunks)
