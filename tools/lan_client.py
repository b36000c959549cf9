"""A Home Assistant stand-in on another host of a test LAN (run inside the client's namespace).

It browses ``_wyoming._tcp.local.`` with the real zeroconf, connects the moment the
service is discovered (once: a refused connection is a failure, not retried),
asks ``describe``, sends a 16 kHz 16-bit mono WAV the way Home Assistant does
(``transcribe`` with the language, real-time 10 ms chunks of 320 bytes,
``audio-stop``), and prints one JSON line with what it saw. It then waits for the
announcement's withdrawal and prints a second line.

    python -m tools.lan_client WAV_FILE LANGUAGE
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
import wave

from zeroconf import InterfaceChoice, IPVersion, ServiceStateChange, Zeroconf
from zeroconf.asyncio import AsyncServiceBrowser, AsyncServiceInfo, AsyncZeroconf

from tools.client import describe, stream
from tools.speech import Speech
from wyoming_qwen3.server.discovery import SERVICE_TYPE


async def converse(host: str, port: int, audio: bytes, language: str) -> dict:
    """``describe``, then one utterance in real-time 10 ms chunks; the event types and the transcript."""
    info = await describe(host, port)
    reply = await stream(host, port, Speech(16000, 2, 1, audio), language=language)
    transcript = reply.text if "transcript" in reply.types else None
    return {"types": [info.type, *reply.types], "transcript": transcript}


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
