"""Shared fixtures: model folders, synthesized speech, and real server processes."""

from __future__ import annotations

import asyncio
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import wave
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from wyoming_qwen3.random_model import build_random_model

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


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@dataclass
class ServerProcess:
    """A real wyoming-qwen3 process listening on loopback."""

    process: subprocess.Popen
    host: str
    port: int
    log_path: Path

    @property
    def uri(self) -> str:
        return f"tcp://{self.host}:{self.port}"

    def log(self) -> str:
        return self.log_path.read_text(encoding="utf-8", errors="replace")

    def stop(self) -> int:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        return self.process.returncode


def start_server(model: Path, log_path: Path, *extra: str, timeout: float = 120.0) -> ServerProcess:
    """Start the server and wait until it accepts connections."""
    port = free_port()
    command = [
        sys.executable,
        "-m",
        "wyoming_qwen3",
        "--uri",
        f"tcp://127.0.0.1:{port}",
        "--model",
        str(model),
        "--device",
        "cpu",
        "--debug",
        *extra,
    ]
    log_file = log_path.open("wb")
    env = {**os.environ, "PYTHONUNBUFFERED": "1", "HF_HUB_OFFLINE": "1"}
    process = subprocess.Popen(command, stdout=log_file, stderr=subprocess.STDOUT, env=env)
    server = ServerProcess(process, "127.0.0.1", port, log_path)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"server exited with {process.returncode}:\n{server.log()}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return server
        except OSError:
            time.sleep(0.2)
    server.stop()
    raise RuntimeError(f"server did not start within {timeout} s:\n{server.log()}")


@pytest.fixture(scope="session")
def tiny_server(tiny_model: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    # A border longer than any utterance holds every token until audio-stop, so
    # the random model's transcript is the offline one whatever the timing.
    server = start_server(tiny_model, tmp_path_factory.mktemp("logs") / "tiny.log", "--border-seconds", "1000")
    yield server
    server.stop()


@pytest.fixture(scope="session")
def scripted_server(scripted_model: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    """The scripted model, with a low cap and timeout for the bad-input tests."""
    server = start_server(
        scripted_model,
        tmp_path_factory.mktemp("logs") / "scripted.log",
        "--max-audio-seconds",
        "8",
        "--audio-timeout",
        "1.5",
    )
    yield server
    server.stop()


def run(coroutine):  # noqa: ANN001, ANN201 - a tiny helper for sync tests
    return asyncio.run(asyncio.wait_for(coroutine, timeout=120))
