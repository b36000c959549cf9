"""Talking to the server the way Home Assistant does, with wyoming's own client."""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field

from wyoming.asr import Transcribe
from wyoming.audio import AudioChunk, AudioStart, AudioStop
from wyoming.client import AsyncTcpClient
from wyoming.event import Event

from .conftest import ServerProcess, Speech


@dataclass
class StreamResult:
    """Every event of one utterance, with the time each arrived."""

    events: list[Event] = field(default_factory=list)
    times: list[float] = field(default_factory=list)
    audio_stop_time: float | None = None

    @property
    def types(self) -> list[str]:
        return [e.type for e in self.events]

    @property
    def chunks(self) -> list[str]:
        return [e.data["text"] for e in self.events if e.type == "transcript-chunk"]

    @property
    def transcript(self) -> Event:
        return next(e for e in self.events if e.type == "transcript")

    def first_time(self, event_type: str) -> float:
        return next(t for e, t in zip(self.events, self.times, strict=True) if e.type == event_type)


def client(server: ServerProcess) -> AsyncTcpClient:
    return AsyncTcpClient(server.host, server.port, read_timeout=60)


async def read_until(conn: AsyncTcpClient, result: StreamResult, last_type: str = "transcript-stop") -> None:
    while True:
        event = await conn.read_event()
        assert event is not None, f"server closed the connection after {result.types}"
        result.events.append(event)
        result.times.append(time.monotonic())
        if event.type in (last_type, "error"):
            return


async def transcribe(
    server: ServerProcess,
    speech: Speech,
    *,
    language: str | None = None,
    chunk_seconds: float = 0.1,
    pace: float = 0.0,
    send_stop: bool = True,
    names: list[str] | None = None,
) -> StreamResult:
    """Send one utterance in chunks (``pace`` seconds apart) and collect the reply."""
    result = StreamResult()
    async with client(server) as conn:
        await conn.write_event(Transcribe(language=language, transcript_names=names).event())
        await conn.write_event(AudioStart(speech.rate, speech.width, speech.channels).event())
        reader = asyncio.create_task(read_until(conn, result))
        step = int(speech.rate * chunk_seconds) * speech.width * speech.channels
        for start in range(0, len(speech.audio), step):
            if reader.done():
                break
            chunk = speech.audio[start : start + step]
            await conn.write_event(AudioChunk(speech.rate, speech.width, speech.channels, chunk).event())
            if pace:
                await asyncio.sleep(pace)
        if send_stop and not reader.done():
            result.audio_stop_time = time.monotonic()
            await conn.write_event(AudioStop().event())
        await reader
    return result


def assert_streaming_order(result: StreamResult) -> None:
    """transcript-start, chunk*, transcript, transcript-stop, and the chunks concatenate to the text."""
    types = result.types
    assert "error" not in types, result.events
    assert types[0] == "transcript-start"
    assert types[-2:] == ["transcript", "transcript-stop"]
    assert set(types[1:-2]) <= {"transcript-chunk"}
    assert "".join(result.chunks) == result.transcript.data["text"]
    assert all(result.chunks)
