"""Stream one utterance to a Wyoming server as Home Assistant does, and time the reply."""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field

import numpy as np
from wyoming.asr import Transcribe
from wyoming.audio import AudioChunk, AudioStart, AudioStop
from wyoming.client import AsyncTcpClient

RATE, WIDTH, CHANNELS = 16000, 2, 1


def pcm16(samples: np.ndarray) -> bytes:
    """Float samples in [-1, 1] as 16-bit PCM."""
    return (np.clip(samples, -1, 1) * 32767).astype("<i2").tobytes()


@dataclass
class Reply:
    """The transcript of one utterance and when things happened (seconds from the first audio)."""

    text: str = ""
    chunks: list[str] = field(default_factory=list)
    first_chunk_s: float | None = None
    last_audio_s: float = 0.0
    transcript_s: float = 0.0

    @property
    def final_latency_s(self) -> float:
        return self.transcript_s - self.last_audio_s

    @property
    def partial_before_end(self) -> bool:
        """Whether words arrived while the speaker was still speaking."""
        return self.first_chunk_s is not None and self.first_chunk_s < self.last_audio_s


async def stream(
    host: str, port: int, audio: bytes, *, chunk_ms: int = 10, speed: float = 1.0, language: str | None = "en"
) -> Reply:
    """Send 16 kHz 16-bit mono ``audio`` in ``chunk_ms`` chunks at ``speed`` x real time."""
    reply = Reply()
    step = RATE * WIDTH * chunk_ms // 1000
    async with AsyncTcpClient(host, port, read_timeout=120) as client:
        await client.write_event(Transcribe(language=language).event())
        await client.write_event(AudioStart(RATE, WIDTH, CHANNELS).event())
        began = time.perf_counter()

        async def read() -> None:
            while True:
                event = await client.read_event()
                if event is None:
                    raise ConnectionError("server closed the connection")
                now = time.perf_counter() - began
                if event.type == "transcript-chunk":
                    reply.chunks.append(event.data["text"])
                    if reply.first_chunk_s is None:
                        reply.first_chunk_s = now
                elif event.type == "transcript":
                    reply.text, reply.transcript_s = event.data["text"], now
                elif event.type == "transcript-stop":
                    return
                elif event.type == "error":
                    raise RuntimeError(event.data.get("text"))

        reader = asyncio.create_task(read())
        for index, start in enumerate(range(0, len(audio), step)):
            await client.write_event(AudioChunk(RATE, WIDTH, CHANNELS, audio[start : start + step]).event())
            # Pace against the clock, not by sleeping per chunk, so the rate holds.
            delay = began + (index + 1) * chunk_ms / 1000 / speed - time.perf_counter()
            if delay > 0:
                await asyncio.sleep(delay)
        reply.last_audio_s = time.perf_counter() - began
        await client.write_event(AudioStop().event())
        await reader
    return reply
