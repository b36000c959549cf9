"""End-to-end: the real server process, the wyoming client, espeak-ng speech."""

from __future__ import annotations

import asyncio

import numpy as np
import pytest
from wyoming.audio import AudioChunk, AudioStart
from wyoming.info import Describe, Info

from tools import offline
from tools.client import assert_streaming_order, connect
from tools.speech import Speech
from wyoming_qwen3.model.format import SAMPLE_RATE
from wyoming_qwen3.model.qwen import QwenAsrModel
from wyoming_qwen3.server.stream.audio import AudioNormalizer

from .conftest import SCRIPT_TEXT, run, transcribe

SENTENCE = "turn on the kitchen lights"
LONG_SENTENCE = "please turn on the lights in the kitchen and then set the living room to twenty degrees"


def test_describe_returns_streaming_asr_info(tiny_server) -> None:
    async def describe() -> Info:
        async with connect(tiny_server.host, tiny_server.port) as conn:
            await conn.write_event(Describe().event())
            event = await conn.read_event()
            assert event is not None and Info.is_type(event.type)
            return Info.from_event(event)

    info = run(describe())
    assert len(info.asr) == 1
    program = info.asr[0]
    assert program.name == "qwen3-asr"
    assert program.supports_transcript_streaming is True
    assert program.installed and program.version and program.attribution.url
    (model,) = program.models
    assert model.languages == ["en"]  # the tiny model declares English only
    assert model.installed and model.attribution.name


def test_transcript_matches_offline_greedy_transcription(tiny_server, tiny_model, speech) -> None:
    """16 kHz speech through the server gives the offline greedy text of the same samples."""
    utterance = speech(SENTENCE, "-r", "16000")
    assert utterance.rate == 16000 and utterance.seconds < 2.0  # shorter than two steps: nothing committed early
    result = run(transcribe(tiny_server, utterance, language="en"))
    assert_streaming_order(result)

    samples = np.frombuffer(utterance.audio, dtype="<i2").astype(np.float32) / 32768.0
    expected = offline.transcribe(QwenAsrModel.load(tiny_model, "cpu"), samples, language="English")
    assert expected.text, "the random model wrote nothing; pick another sentence"
    # The server sends words: whitespace runs (the random model writes odd ones) become one space.
    assert result.transcript.data["text"] == " ".join(expected.text.split())
    assert result.transcript.data["language"] == "en"


@pytest.mark.parametrize(
    ("label", "sox_args"),
    [
        ("22.05 kHz mono", ()),
        ("stereo", ("-c", "2")),
        ("8-bit", ("-b", "8")),
        ("48 kHz stereo 32-bit", ("-r", "48000", "-c", "2", "-b", "32")),
    ],
)
def test_any_audio_format_is_converted(tiny_server, tiny_model, speech, label: str, sox_args: tuple[str, ...]) -> None:
    """The server transcribes exactly what the conversion makes of each format (the tiny server holds every
    token to the end, so its transcript is the offline one of the same samples)."""
    utterance = speech(SENTENCE, *sox_args)
    result = run(transcribe(tiny_server, utterance, language="en"))
    assert_streaming_order(result)
    normalizer = AudioNormalizer(AudioStart(utterance.rate, utterance.width, utterance.channels))
    step = int(utterance.rate * 0.1) * utterance.width * utterance.channels  # the chunks the client sent
    samples = np.concatenate(
        [
            normalizer.convert(
                AudioChunk(utterance.rate, utterance.width, utterance.channels, utterance.audio[i : i + step])
            )
            for i in range(0, len(utterance.audio), step)
        ]
    )
    assert abs(samples.shape[0] / SAMPLE_RATE - utterance.seconds) < 0.01, label
    expected = offline.transcribe(QwenAsrModel.load(tiny_model, "cpu"), samples, language="English").text
    assert expected, "the random model wrote nothing; pick another sentence"
    assert result.transcript.data["text"] == " ".join(expected.split()), label


def test_stereo_is_transcribed_like_mono(tiny_server, speech) -> None:
    mono = run(transcribe(tiny_server, speech(SENTENCE), language="en"))
    stereo = run(transcribe(tiny_server, speech(SENTENCE, "-c", "2"), language="en"))
    assert stereo.transcript.data["text"] == mono.transcript.data["text"]


def test_words_stream_while_audio_still_arrives(scripted_server, speech) -> None:
    utterance = speech(LONG_SENTENCE)
    assert utterance.seconds > 4
    # Twice real time: 0.1 s of audio every 0.05 s.
    result = run(transcribe(scripted_server, utterance, language="en", pace=0.05))
    assert_streaming_order(result)
    assert result.transcript.data["text"] == SCRIPT_TEXT
    assert result.audio_stop_s is not None
    assert result.first_time("transcript-chunk") < result.audio_stop_s, "no partial words before audio-stop"
    assert len(result.chunks) >= 1


def test_two_concurrent_clients_get_their_own_transcripts(tiny_server, speech) -> None:
    first, second = speech(SENTENCE), speech("what is the weather like today")
    # The language forced: a random model's detected language would depend on when steps run.
    alone = [run(transcribe(tiny_server, s, language="en")).transcript.data["text"] for s in (first, second)]
    assert alone[0] != alone[1], "the random model gave both sentences the same text"

    async def both() -> list[str]:
        results = await asyncio.gather(
            transcribe(tiny_server, first, pace=0.01, language="en"),
            transcribe(tiny_server, second, pace=0.01, language="en"),
        )
        for result in results:
            assert_streaming_order(result)
        return [r.transcript.data["text"] for r in results]

    assert run(both()) == alone


def test_disconnect_mid_stream_frees_the_session(tiny_server, speech) -> None:
    mark = tiny_server.log_mark()
    utterance: Speech = speech(LONG_SENTENCE)

    async def hang_up() -> None:
        async with connect(tiny_server.host, tiny_server.port) as conn:
            await conn.write_event(AudioStart(utterance.rate, utterance.width, utterance.channels).event())
            quarter = len(utterance.audio) // 4 // 2 * 2
            await conn.write_event(
                AudioChunk(utterance.rate, utterance.width, utterance.channels, utterance.audio[:quarter]).event()
            )
            await asyncio.sleep(0.5)

    run(hang_up())
    result = run(transcribe(tiny_server, speech(SENTENCE)))
    assert_streaming_order(result)
    assert "mid-stream, session freed" in tiny_server.log(mark)


def test_the_model_is_warmed_up_before_ready(tiny_server) -> None:
    log = tiny_server.log()
    assert log.index("Warmed up in") < log.index("Ready")
