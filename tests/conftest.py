"""Shared fixtures: model folders, synthesized speech, and real server processes."""

from __future__ import annotations

import asyncio
import shutil
import subprocess
import wave
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from benchmarks.server import ServerProcess, start_server
from wyoming_qwen3.random_model import build_random_model

__all__ = ["ServerProcess", "start_server"]

SCRIPT_TEXT = "turn on the lights"


@pytest.fixture(scope="session")
def tiny_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Random weights: the transcript depends on the audio, but means nothing."""
    return build_random_model(tmp_path_factory.mktemp("tiny"), "tiny")


@pytest.fixture(scope="session")
def scripted_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Writes SCRIPT_TEXT for any audio, so every hypothesis agrees."""
    return build_random_model(tmp_path_factory.mktemp("scripted"), "tiny", script=SCRIPT_TEXT)


@dataclass(frozen=True)
class Speech:
    """PCM audio read from a WAV file."""

    rate: int
    width: int
    channels: int
    audio: bytes

    @property
    def seconds(self) -> float:
        return len(self.audio) / (self.rate * self.width * self.channels)


def read_wav(path: Path) -> Speech:
    with wave.open(str(path), "rb") as wav:
        return Speech(wav.getframerate(), wav.getsampwidth(), wav.getnchannels(), wav.readframes(wav.getnframes()))


class SpeechMaker:
    """espeak-ng speech (22.05 kHz mono 16-bit), converted with sox when asked."""

    def __init__(self, folder: Path) -> None:
        if not (shutil.which("espeak-ng") and shutil.which("sox")):
            pytest.fail("espeak-ng and sox are needed: script/test installs them")
        self.folder = folder

    def __call__(self, text: str, *sox_args: str, voice: str = "en-us") -> Speech:
        name = f"{abs(hash((text, sox_args, voice)))}"
        source = self.folder / f"{name}-espeak.wav"
        if not source.exists():
            subprocess.run(["espeak-ng", "-v", voice, "-w", str(source), text], check=True)
        if not sox_args:
            return read_wav(source)
        converted = self.folder / f"{name}-sox.wav"
        # wavpcm: plain PCM headers, which the wave module reads (not WAVE_FORMAT_EXTENSIBLE).
        subprocess.run(["sox", str(source), *sox_args, "-t", "wavpcm", str(converted)], check=True)
        return read_wav(converted)


@pytest.fixture(scope="session")
def speech(tmp_path_factory: pytest.TempPathFactory) -> SpeechMaker:
    return SpeechMaker(tmp_path_factory.mktemp("speech"))


@pytest.fixture(scope="session")
def tiny_server(tiny_model: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    # A border longer than any utterance holds every token until audio-stop, so
    # the random model's transcript is the offline one whatever the timing.
    server = start_server(tiny_model, tmp_path_factory.mktemp("logs") / "tiny.log", "--border-seconds", "1000")
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


def run(coroutine):  # noqa: ANN001, ANN201 - a tiny helper for sync tests
    return asyncio.run(asyncio.wait_for(coroutine, timeout=120))
