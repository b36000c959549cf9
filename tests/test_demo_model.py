"""The trained demo model: held-out commands in held-out voices come out as the right words."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from tools import offline
from tools.client import assert_streaming_order
from tools.in_process import demo_backend
from tools.speech import as_speech, speak
from tools.wer import cer, word_errors
from wyoming_qwen3.backends.base import SessionOptions
from wyoming_qwen3.backends.simulkv.backend import SimulKvBackend
from wyoming_qwen3.model.catalogue import resolve_model
from wyoming_qwen3.model.format import SAMPLE_RATE
from wyoming_qwen3.model.qwen import QwenAsrModel
from wyoming_qwen3.model.text_units import is_unspaced

from .conftest import ServerProcess, run, start_server, transcribe

DEMO = resolve_model("demo", [], Path("."))
HELDOUT_SETS = json.loads((DEMO.path / "heldout.json").read_text())
HELDOUT = HELDOUT_SETS["utterances"][:8]
#: Commands that say a made-up name the model never heard in training, with it among 16 others.
NAMED = HELDOUT_SETS["named"][:6]
MANDARIN = HELDOUT_SETS["mandarin"][:4]
#: Seconds between the 0.5 s chunks of a stream compared with the offline transcript, so each chunk makes one
#: step of its own: int8 quantizes each call's activations with one scale, so chunks a slow step lets pile up
#: into one prefill may change a word. 0.1 s was too little once under the full suite on 2 cores (2026-12-07:
#: the Mandarin test, int8 then, failed and passed alone).
STEP_APART = 0.25


@pytest.fixture(scope="module")
def demo_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    server = start_server(Path("demo"), tmp_path_factory.mktemp("logs") / "demo.log")
    yield server
    server.stop()


@pytest.fixture(scope="module")
def float32_demo_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    """The demo model unquantized: its streamed transcript is the offline one exactly, whatever the steps (the
    prompt's and the audio's KV cache are reused exactly), where int8's differs now and then (one scale per
    call's activations): 2026.12.8.1 streamed "把浴室的温度调到分钟" in int8 where offline int8 wrote "...百分之二十",
    and float32 gave the same text both ways on 12 of 12 (2026-12-08)."""
    server = start_server(Path("demo"), tmp_path_factory.mktemp("logs") / "demo-float32.log", "--quantize", "none")
    yield server
    server.stop()


@pytest.fixture(scope="module")
def heldout_speech() -> list[tuple[str, np.ndarray]]:
    return [(u["text"], speak(u["text"], u["voice"], 165, 50)) for u in HELDOUT]


def test_heldout_commands_are_transcribed_offline(heldout_speech) -> None:
    model = QwenAsrModel.load(DEMO.path, "cpu")
    errors = words = 0
    for text, samples in heldout_speech:
        e, n = word_errors(text, offline.transcribe(model, samples).text.lower())
        errors, words = errors + e, words + n
    assert errors / words < 0.10


def server_default_model() -> QwenAsrModel:
    """The demo model loaded with the server's defaults (``--device auto --dtype auto --quantize auto``: int8 on a
    CPU), so that a streamed transcript is compared with the offline one of the same weights (float32's differs
    on a digit now and then: "百分之二十" as "十二十")."""
    return QwenAsrModel.load(DEMO.path, quantize="auto")


def test_heldout_commands_stream_through_the_server_as_offline(demo_server, heldout_speech) -> None:
    model = server_default_model()
    errors = words = 0
    for text, samples in heldout_speech:
        result = run(transcribe(demo_server, as_speech(samples), language="en", chunk_seconds=0.5, pace=STEP_APART))
        assert_streaming_order(result)
        streamed = result.transcript.data["text"]
        assert streamed == " ".join(offline.transcribe(model, samples, language="English").text.split())
        e, n = word_errors(text, streamed.lower())
        errors, words = errors + e, words + n
    assert errors / words < 0.10


def stream_in_halves(backend: SimulKvBackend, samples: np.ndarray) -> tuple[list[str], list[str]]:
    """Words sent while the audio is fed 0.5 s at a time, and the final ones.

    In process, so that what comes early does not depend on the machine's speed.
    """
    session = backend.create_session(SessionOptions(language="English"))
    early = "".join(
        session.feed(samples[start : start + SAMPLE_RATE // 2]) for start in range(0, len(samples), SAMPLE_RATE // 2)
    )
    return early.split(), session.finish().text.split()


def test_heldout_commands_stream_words_before_the_speaker_finishes(heldout_speech) -> None:
    # At the old 2 s border few words came early (7 of 59 held-out commands over 2 s); at 0.5 s with
    # the least probability of 0.9, 55 of 59 do (`script/benchmark wer` counts them).
    backend = demo_backend()
    longer = [(text, samples) for text, samples in heldout_speech if len(samples) > 2 * SAMPLE_RATE]
    early = sum(bool(stream_in_halves(backend, samples)[0]) for _, samples in longer)
    assert len(longer) >= 4 and early >= len(longer) * 3 // 4


def test_a_wrong_early_piece_of_an_unsent_word_does_not_steer_the_final_transcript() -> None:
    # Held-out utterance 55: after 1.5 s the model has committed "si" (confidently, well before the
    # border); kept to the end, the transcript was "side room dim living living room".
    utterance = json.loads((DEMO.path / "heldout.json").read_text())["utterances"][55]
    assert utterance == {"text": "stop the music in the living room", "voice": "en-us+f5"}
    early, final = stream_in_halves(demo_backend(), speak(utterance["text"], utterance["voice"], 165, 50))
    assert " ".join(early + final) == "stop the music in the living room"


def test_a_home_s_own_names_sent_with_transcribe_are_spelled_as_the_list_spells_them(demo_server) -> None:
    # Held-out made-up names in held-out voices, each among 16 others as `transcribe` names: without the
    # list the model spells them by ear ("trupleerk" as "trooplaiplair"), with it as the list does.
    errors = {True: 0, False: 0}
    for utterance in NAMED:
        speech = as_speech(speak(utterance["text"], utterance["voice"], 165, 50))
        for with_names in (True, False):
            names = utterance["context"].split(", ") if with_names else None
            result = run(transcribe(demo_server, speech, language="en", chunk_seconds=0.5, names=names))
            errors[with_names] += word_errors(utterance["text"], result.text)[0]
    assert errors[True] * 2 <= errors[False], errors


def test_mandarin_streams_as_it_transcribes_offline_in_whole_characters(float32_demo_server) -> None:
    model = QwenAsrModel.load(DEMO.path, "cpu")
    pairs = []
    for utterance in MANDARIN:
        samples = speak(utterance["text"], utterance["voice"], 165, 50)
        result = run(transcribe(float32_demo_server, as_speech(samples), language="zh", chunk_seconds=0.5, pace=0.1))
        assert_streaming_order(result)
        assert result.text == offline.transcribe(model, samples, language="Chinese").text
        assert all(is_unspaced(c) for chunk in result.chunks for c in chunk.strip()), result.chunks
        pairs.append((utterance["text"], result.text))
    # Four utterances: one wrong word is 5% ("把浴室的灯调到百分之六" as "把浴室的音机调到百分之六"); 2026.12.8.1's one
    # wrong number is 13% ("百分之二十" as "分钟"); the held-out hundred give 2.8% (`script/benchmark wer --set
    # mandarin`).
    assert cer(pairs) < 0.25
