"""The trained demo model: held-out commands in held-out voices come out as the right words."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from training.corpus import speak
from training.demo_model import word_errors
from wyoming_qwen3.models import resolve_model
from wyoming_qwen3.qwen import QwenAsrModel

from .conftest import ServerProcess, Speech, run, start_server
from .wyoming_client import assert_streaming_order, transcribe

DEMO = resolve_model("demo", [], Path("."))
HELDOUT = json.loads((DEMO.path / "heldout.json").read_text())["utterances"][:8]


@pytest.fixture(scope="module")
def demo_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    server = start_server(Path("demo"), tmp_path_factory.mktemp("logs") / "demo.log")
    yield server
    server.stop()


@pytest.fixture(scope="module")
def heldout_speech() -> list[tuple[str, np.ndarray]]:
    return [(u["text"], speak(u["text"], u["voice"], 165, 50)) for u in HELDOUT]


def as_speech(samples: np.ndarray) -> Speech:
    return Speech(16000, 2, 1, (np.clip(samples, -1, 1) * 32767).astype("<i2").tobytes())


def test_heldout_commands_are_transcribed_offline(heldout_speech) -> None:
    model = QwenAsrModel.load(DEMO.path, "cpu")
    errors = words = 0
    for text, samples in heldout_speech:
        e, n = word_errors(text, model.transcribe(samples).text.lower())
        errors, words = errors + e, words + n
    assert errors / words < 0.10


def test_heldout_commands_stream_through_the_server_as_offline(demo_server, heldout_speech) -> None:
    model = QwenAsrModel.load(DEMO.path, "cpu")
    errors = words = 0
    for text, samples in heldout_speech:
        # 0.5 s chunks, each well apart, so each makes exactly one step whatever the machine's speed.
        result = run(transcribe(demo_server, as_speech(samples), language="en", chunk_seconds=0.5, pace=0.1))
        assert_streaming_order(result)
        streamed = result.transcript.data["text"]
        assert streamed == " ".join(model.transcribe(samples, language="English").text.split())
        e, n = word_errors(text, streamed.lower())
        errors, words = errors + e, words + n
    assert errors / words < 0.10
