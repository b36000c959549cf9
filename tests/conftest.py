"""Shared fixtures: model folders, synthesized speech, and real server processes."""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine, Iterator
from pathlib import Path
from typing import Any

import pytest

from tools.client import Reply, stream
from tools.in_process import serving
from tools.netns import Lan, NamespacesUnavailable, ip, stand_in_lan
from tools.random_model import build_random_model
from tools.server_process import ServerProcess, start_server
from tools.speech import Speech, require_tools, speak_pcm

__all__ = ["Lan", "ServerProcess", "ip", "run", "serving", "start_server", "transcribe"]

SCRIPT_TEXT = "turn on the lights"
#: The stand-in LAN's hosts.
SERVER_ADDRESS = "10.254.0.1"
CLIENT_ADDRESS = "10.254.0.2"


@pytest.fixture(scope="session")
def tiny_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Random weights: the transcript depends on the audio, but means nothing."""
    return build_random_model(tmp_path_factory.mktemp("tiny"), "tiny")


@pytest.fixture(scope="session")
def scripted_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Writes SCRIPT_TEXT for any audio, so every hypothesis agrees."""
    return build_random_model(tmp_path_factory.mktemp("scripted"), "tiny", script=SCRIPT_TEXT)


class SpeechMaker:
    """espeak-ng speech (22.05 kHz mono 16-bit), converted with sox when asked; each made once per session."""

    def __init__(self) -> None:
        try:
            require_tools()
        except RuntimeError as err:
            pytest.fail(str(err))
        self._made: dict[tuple[str, tuple[str, ...], str], Speech] = {}

    def __call__(self, text: str, *sox_args: str, voice: str = "en-us") -> Speech:
        key = (text, sox_args, voice)
        if key not in self._made:
            self._made[key] = speak_pcm(text, *sox_args, voice=voice)
        return self._made[key]


@pytest.fixture(scope="session")
def speech() -> SpeechMaker:
    return SpeechMaker()


@pytest.fixture(scope="session")
def tiny_server(tiny_model: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    # A border longer than any utterance holds every token until audio-stop, so
    # the random model's transcript is the offline one whatever the timing. float32, not the CPU's
    # default int8: dynamic int8 scales each call's activations by their own range, so a step over the
    # cache and one offline pass round differently, and random weights turn that into other tokens.
    server = start_server(
        tiny_model, tmp_path_factory.mktemp("logs") / "tiny.log", "--border-seconds", "1000", "--quantize", "none"
    )
    yield server
    server.stop()


@pytest.fixture(scope="session")
def scripted_server(scripted_model: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    """The scripted model, with a low cap and timeout for the bad-input tests.

    The scripted model writes its text whatever the audio, so a cut of the stream window
    (which drops the text of the audio it cuts) would make it write the text again; no
    stream here is long enough to be cut (tests/test_simulkv.py tests the cuts).
    """
    server = start_server(
        scripted_model,
        tmp_path_factory.mktemp("logs") / "scripted.log",
        "--max-audio-seconds",
        "8",
        "--stream-window",
        "8",
        "--audio-timeout",
        "1.5",
    )
    yield server
    server.stop()


def transcribe(
    server: ServerProcess, speech: Speech, *, chunk_seconds: float = 0.1, pace: float | None = None, **options: Any
) -> Coroutine[Any, Any, Reply]:
    """One utterance to a test server in ``chunk_seconds`` chunks, ``pace`` seconds apart (default: at once)."""
    speed = chunk_seconds / pace if pace else None
    return stream(server.host, server.port, speech, chunk_seconds=chunk_seconds, speed=speed, **options)


def run(coroutine):  # noqa: ANN001, ANN201 - a tiny helper for sync tests
    return asyncio.run(asyncio.wait_for(coroutine, timeout=120))


# -- a stand-in LAN: network namespaces the test makes, so no packet leaves this machine ----------


@pytest.fixture()
def lan() -> Iterator[Lan]:
    try:
        with stand_in_lan(SERVER_ADDRESS, CLIENT_ADDRESS) as made:
            yield made
    except NamespacesUnavailable as err:
        pytest.skip(f"{err}; run the tests as root (CI does)")
