"""A Home Assistant stand-in on another host of a test LAN (run inside the client's namespace).

It browses ``_wyoming._tcp.local.`` with the real zeroconf, connects the moment the
service is discovered (once: a refused connection is a failure, not retried),
asks ``describe``, sends a 16 kHz 16-bit mono WAV the way Home Assistant does
(``transcribe`` with the language, real-time 10 ms chunks of 320 bytes,
``audio-stop``), and prints one JSON line with what it saw. It then waits for the
announcement's withdrawal and prints a second line.

    python tests/lan_client.py WAV_FILE LANGUAGE
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
import wave

from wyoming.asr import Transcribe
from wyoming.audio import AudioChunk, AudioStart, AudioStop
from wyoming.client import AsyncTcpClient
from wyoming.info import Describe
from zeroconf import InterfaceChoice, IPVersion, ServiceStateChange, Zeroconf
from zeroconf.asyncio import AsyncServiceBrowser, AsyncServiceInfo, AsyncZeroconf

SERVICE_TYPE = "_wyoming._tcp.local."
CHUNK_BYTES = 320  # 10 ms of 16 kHz 16-bit mono: what Home Assistant sends


async def converse(host: str, port: int, audio: bytes, language: str) -> dict:
    """One describe and one utterance on one connection; the event types and the transcript."""
    types: list[str] = []
    transcript = None
    async with AsyncTcpClient(host, port) as client:
        await client.write_event(Describe().event())
        info = await asyncio.wait_for(client.read_event(), 10)
        types.append(info.type if info else "closed")
        await client.write_event(Transcribe(language=language).event())
        await client.write_event(AudioStart(16000, 2, 1).event())
        start = time.monotonic()
        for index, offset in enumerate(range(0, len(audio), CHUNK_BYTES)):
            await client.write_event(AudioChunk(16000, 2, 1, audio[offset : offset + CHUNK_BYTES]).event())
            await asyncio.sleep(max(0.0, start + (index + 1) * 0.01 - time.monotonic()))
        await client.write_event(AudioStop().event())
        while True:
            event = await asyncio.wait_for(client.read_event(), 60)
            types.append(event.type if event else "closed")
            if event is None or event.type in ("transcript-stop", "error"):
                break
            if event.type == "transcript":
                transcript = event.data.get("text")
    return {"types": types, "transcript": transcript}


async def main(wav_path: str, language: str) -> None:
    with wave.open(wav_path, "rb") as wav:
        assert (wav.getframerate(), wav.getsampwidth(), wav.getnchannels()) == (16000, 2, 1)
        audio = wav.readframes(wav.getnframes())

    changes: asyncio.Queue[tuple[str, ServiceStateChange]] = asyncio.Queue()

    def on_change(zeroconf: Zeroconf, service_type: str, name: str, state_change: ServiceStateChange) -> None:
        changes.put_nowait((name, state_change))

    aiozc = AsyncZeroconf(interfaces=InterfaceChoice.All, ip_version=IPVersion.V4Only)
    browser = AsyncServiceBrowser(aiozc.zeroconf, [SERVICE_TYPE], handlers=[on_change])
    print(json.dumps({"browsing": True}), flush=True)
    try:
        name, change = await asyncio.wait_for(changes.get(), 180)
        assert change is ServiceStateChange.Added, change
        info = AsyncServiceInfo(SERVICE_TYPE, name)
        assert await info.async_request(aiozc.zeroconf, 5000), f"{name} did not resolve"
        report: dict = {"name": name, "addresses": info.parsed_addresses(), "port": info.port}
        try:
            report.update(await converse(info.parsed_addresses()[0], int(info.port or 0), audio, language))
        except OSError as err:  # ConnectionRefusedError among them
            report["connect_error"] = repr(err)
        print(json.dumps(report), flush=True)

        deadline = time.monotonic() + 30
        removed = False
        while not removed and time.monotonic() < deadline:
            try:
                gone, change = await asyncio.wait_for(changes.get(), deadline - time.monotonic())
            except TimeoutError:
                break
            removed = gone == name and change is ServiceStateChange.Removed
        print(json.dumps({"removed": removed}), flush=True)
    finally:
        await browser.async_cancel()
        await aiozc.async_close()


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2]))
