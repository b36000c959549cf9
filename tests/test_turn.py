"""The end of a turn: the final pass run during the trailing silence, and the server ending turns itself.

The demo model hears real speech (espeak-ng, held-out voices); a client that ends
commands as Home Assistant 2026.11 does (``tools.ha_client``) streams in real time
and reads at once, and closes on the transcript.
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from wyoming.asr import Transcribe
from wyoming.audio import AudioChunk, AudioStart, AudioStop
from wyoming.client import AsyncTcpClient
from wyoming.event import Event
from wyoming.info import Describe

from tools.client import assert_streaming_order, describe, stream
from tools.final_pass_audio import final_pass_audio
from tools.ha_client import LEAD_SECONDS, Turn, command, room_noise, streamed_audio
from tools.speech import as_speech, pcm16, speak, trimmed
from wyoming_qwen3.backends.base import FinalDelta, SessionOptions, Speculation, StreamingSession
from wyoming_qwen3.model.catalogue import resolve_model
from wyoming_qwen3.model.format import SAMPLE_RATE
from wyoming_qwen3.server.settings import HandlerConfig
from wyoming_qwen3.server.stream.silero import CHUNK_SAMPLES, LocalDetector
from wyoming_qwen3.server.stream.turn import StreamLimits, TurnSettings

from .conftest import ServerProcess, serving, start_server
from .test_handler import WordsBackend, WordsSession, exchange

DEMO = resolve_model("demo", [], Path("."))
HELDOUT = json.loads((DEMO.path / "heldout.json").read_text())["utterances"]


def server(tmp_path_factory: pytest.TempPathFactory, name: str, *flags: str) -> Iterator[ServerProcess]:
    process = start_server(Path("demo"), tmp_path_factory.mktemp("logs") / f"{name}.log", "--debug", *flags)
    yield process
    process.stop()


@pytest.fixture(scope="module")
def speculating(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    yield from server(tmp_path_factory, "speculating")


@pytest.fixture(scope="module")
def plain(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    yield from server(tmp_path_factory, "plain", "--no-speculate")


@pytest.fixture(scope="module")
def endpointing(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    yield from server(tmp_path_factory, "endpointing", "--endpointing")


def connection_lines(process: ServerProcess, mark: int) -> list[str]:
    """The log lines of the stream begun after ``mark``, once its connection's end is logged (or 10 s passed)."""
    deadline = time.monotonic() + 10
    while True:
        log = process.log(mark)
        found = re.search(r"([\d.]+:\d+): transcribe", log)
        lines = [line for line in log.splitlines() if found and f"{found.group(1)}:" in line]
        if any("closed" in line or "lost" in line for line in lines) or time.monotonic() > deadline:
            return lines


def spoken(index: int) -> np.ndarray:
    return speak(HELDOUT[index]["text"], HELDOUT[index]["voice"], 165, 50)


def paused(first: str, second: str, pause: float) -> np.ndarray:
    """A command spoken in two parts, with a pause of a room's noise between them."""
    return np.concatenate([speak(first, "en-us", 165, 50), room_noise(pause, 7), speak(second, "en-us", 165, 50)])


def test_the_final_pass_run_in_the_silence_is_the_one_audio_stop_would_run(speculating, plain) -> None:
    """Home Assistant's 0.7 s of silence, then audio-stop: the transcript is the same with the early pass."""
    for index in range(3):
        mark = speculating.log_mark()
        early = asyncio.run(command(speculating.host, speculating.port, spoken(index), fixed_stop=True))
        late = asyncio.run(command(plain.host, plain.port, spoken(index), fixed_stop=True))
        assert early.error is None and late.error is None
        assert early.text == late.text and early.text, (early, late)
        assert not early.before_stop  # Home Assistant's VAD ends the turn here, not the server
        assert "the final pass starts early" in speculating.log(mark)


def test_an_early_final_pass_is_thrown_away_when_speech_resumes(speculating) -> None:
    """A pause mid-command: the pass run in it is discarded, and the command comes out whole, once, in chunks
    that add up to it. (That the session is left as it was is tests/test_simulkv.py's; the steps here run
    when the audio comes, so their text may differ a little from a server without early passes.)"""
    audio = paused("set a timer for", "twenty minutes", 0.8)
    mark = speculating.log_mark()
    reply = asyncio.run(stream(speculating.host, speculating.port, as_speech(audio), language="en"))
    log = speculating.log(mark)
    # The resumed speech's first chunk may be only possible speech to Silero (its onset): either way the pass goes.
    assert "; the early final pass is thrown away" in log, log
    assert_streaming_order(reply)
    words = reply.text.split()
    assert words[:4] == ["set", "a", "timer", "for"] and words[-1] == "minutes" and words.count("timer") == 1


def test_info_says_who_ends_the_turn(speculating, endpointing) -> None:
    default = asyncio.run(describe(speculating.host, speculating.port)).data["asr"][0]
    ending = asyncio.run(describe(endpointing.host, endpointing.port)).data["asr"][0]
    assert default["requires_external_vad"] is True  # Home Assistant's VAD ends the turn
    assert ending["requires_external_vad"] is False  # the server does


def test_the_server_ends_the_turn_before_audio_stop(endpointing) -> None:
    """No audio-stop comes (the client runs no VAD); the transcript arrives, the client closes at once."""
    for index in range(2):
        mark = endpointing.log_mark()
        turn = asyncio.run(command(endpointing.host, endpointing.port, spoken(index), silence_seconds=None))
        assert turn.error is None and turn.before_stop and turn.audio_stop_s is None
        assert turn.text and turn.from_speech_end_ms is not None and turn.from_speech_end_ms < 2000
        lines = connection_lines(endpointing, mark)
        ends = [line for line in lines if "closed" in line or "lost" in line]
        assert len(ends) == 1 and ends[0].startswith("INFO") and "closed by the client" in ends[0], lines
        assert "Traceback" not in endpointing.log(mark)


def test_a_pause_after_a_word_that_cannot_end_a_command_does_not_end_the_turn(endpointing) -> None:
    audio = paused("set a timer for", "twenty minutes", 0.8)
    turn = asyncio.run(command(endpointing.host, endpointing.port, audio, silence_seconds=None))
    assert turn.text is not None and turn.text.split()[-1] == "minutes", turn


@pytest.mark.parametrize("first, second", [("open the dining room", "curtains"), ("turn on the kitchen", "lights")])
def test_a_pause_after_words_that_are_no_whole_command_does_not_end_the_turn(endpointing, first, second) -> None:
    """Nothing in the words says a command goes on, but the model folder's grammar has no such command: the turn
    waits the longer silence (it ended in the pause before: "open the dining room")."""
    turn = asyncio.run(command(endpointing.host, endpointing.port, paused(first, second, 0.8), silence_seconds=None))
    assert turn.text is not None and turn.text.split()[-1] == second, turn
    # And once the command is whole, the short silence ends it: the resumed speech's onset (possible speech
    # before Silero calls it speech) does not stop the early pass (it waited the longer 1.25 s before).
    assert turn.from_speech_end_ms is not None and turn.from_speech_end_ms < 900, turn
    assert "sounds complete only as one of the model's commands" in endpointing.log(0)


def loud_speech() -> bytes:
    return pcm16(np.concatenate([speak("turn on the kitchen lights"), room_noise(1.5, 3)]))


def test_audio_after_the_server_ended_the_turn_is_dropped_quietly(caplog: pytest.LogCaptureFixture) -> None:
    backend = WordsBackend()
    config = HandlerConfig(turn=TurnSettings(endpointing=True, incomplete_silence_seconds=0.5))
    pcm = loud_speech()
    chunks = [AudioChunk(SAMPLE_RATE, 2, 1, pcm[i : i + 320]).event() for i in range(0, len(pcm), 320)]

    async def main() -> list[Event]:
        async with serving(backend, config) as port:
            start = [Transcribe(language="en").event(), AudioStart(SAMPLE_RATE, 2, 1).event()]
            # All the audio, audio-stop long after the turn ended, then a question on the same connection.
            return await exchange(port, [*start, *chunks, AudioStop().event(), Describe().event()], until="info")

    with caplog.at_level(logging.INFO):
        events = asyncio.run(main())
    backend.executor.shutdown()
    types = [e.type for e in events]
    assert types[-1] == "info" and "error" not in types, types
    assert types.count("transcript") == 1 and types.index("transcript-stop") < types.index("info")
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING], caplog.text


class SlowFinalSession(WordsSession):
    def finish(self, audio: np.ndarray | None = None) -> FinalDelta:
        time.sleep(1.5)
        return super().finish(audio)

    def speculate(self, audio: np.ndarray | None = None) -> Speculation | None:
        return None  # no early pass: the final pass runs when the turn ends


class SlowFinalBackend(WordsBackend):
    def create_session(self, options: SessionOptions) -> StreamingSession:
        return SlowFinalSession()


def test_audio_stop_during_the_servers_own_final_pass_is_answered_after_the_transcript() -> None:
    """The server ended the turn and its final pass runs; audio-stop and describe come meanwhile: the transcript
    goes out before the info, as the client asked in that order."""
    backend = SlowFinalBackend()
    config = HandlerConfig(turn=TurnSettings(endpointing=True, incomplete_silence_seconds=0.5))
    pcm = loud_speech()
    chunks = [AudioChunk(SAMPLE_RATE, 2, 1, pcm[i : i + 320]).event() for i in range(0, len(pcm), 320)]

    async def main() -> list[Event]:
        async with serving(backend, config) as port, AsyncTcpClient("127.0.0.1", port) as client:
            for event in [Transcribe(language="en").event(), AudioStart(SAMPLE_RATE, 2, 1).event(), *chunks]:
                await client.write_event(event)
            await asyncio.sleep(1.0)  # the server has ended the turn: its final pass (1.5 s) runs
            await client.write_event(AudioStop().event())
            await client.write_event(Describe().event())
            received: list[Event] = []
            while not received or received[-1].type != "info":
                event = await asyncio.wait_for(client.read_event(), 10)
                assert event is not None
                received.append(event)
            return received

    events = asyncio.run(main())
    backend.executor.shutdown()
    types = [e.type for e in events]
    assert types.count("transcript") == 1 and types.index("transcript-stop") < types.index("info"), types


def test_a_stream_without_speech_gets_an_empty_transcript_after_the_bound() -> None:
    backend = WordsBackend()
    config = HandlerConfig(turn=TurnSettings(endpointing=True, no_speech_seconds=1.0))
    pcm = pcm16(room_noise(4.0, 5))
    chunks = [AudioChunk(SAMPLE_RATE, 2, 1, pcm[i : i + 320]).event() for i in range(0, len(pcm), 320)]

    async def main() -> list[Event]:
        async with serving(backend, config) as port:
            start = [Transcribe(language="en").event(), AudioStart(SAMPLE_RATE, 2, 1).event()]
            return await exchange(port, [*start, *chunks], until="transcript-stop")  # no audio-stop

    events = asyncio.run(main())
    backend.executor.shutdown()
    transcript = next(e for e in events if e.type == "transcript")
    assert transcript.data["text"] == ""


class HearingBackend(WordsBackend):
    """Counts the samples its sessions are given: what the model would hear."""

    def __init__(self) -> None:
        super().__init__()
        self.heard: list[int] = []

    def create_session(self, options: SessionOptions) -> StreamingSession:
        heard = self.heard
        heard.append(0)

        class Hearing(WordsSession):
            def feed(self, audio: np.ndarray) -> str:
                heard[-1] += audio.shape[0]
                return super().feed(audio)

            def finish(self, audio: np.ndarray | None = None) -> FinalDelta:
                heard[-1] += 0 if audio is None else audio.shape[0]
                return super().finish(audio)

            def speculate(self, audio: np.ndarray | None = None) -> Speculation:
                return Speculation("hello world", "English", 0.1)  # unsure it is over: the long silence ends it

        return Hearing()


def soft_last_word(softer_db: float | None) -> tuple[np.ndarray, int]:
    """ "switch on the speaker in the" ... 0.5 s of the room ... "hall" ``softer_db`` softer (None: no word), then
    0.7 s of the room, what Home Assistant streams before its audio-stop; and where the speech ends."""
    head = trimmed(speak("switch on the speaker in the"))
    parts = [room_noise(0.3, 1), head, room_noise(0.5, 2)]
    if softer_db is not None:
        tail = trimmed(speak("hall")) * 10 ** (-softer_db / 20)
        parts.append(tail + room_noise(tail.shape[0] / SAMPLE_RATE, 3))
    speech_end = sum(part.shape[0] for part in (parts if softer_db is not None else parts[:2]))
    return np.concatenate([*parts, room_noise(0.7, 4)]), speech_end


def heard_in_real_time(audio: np.ndarray, ending: str) -> int:
    """Samples the model is given of ``audio`` streamed in real time as Home Assistant streams it (after 0.3 s of
    the room), ended by audio-stop 0.7 s after it, by the server's audio timeout, or by its endpoint."""
    backend = HearingBackend()
    endpointing = ending == "the server's endpoint"
    turn = TurnSettings(endpointing=endpointing, incomplete_silence_seconds=1.3)
    config = HandlerConfig(turn=turn, limits=StreamLimits(audio_timeout_seconds=0.5))

    async def main() -> Turn:
        async with serving(backend, config) as port:
            silence = 0.7 if ending == "audio-stop" else None  # None: no audio-stop is sent
            return await command("127.0.0.1", port, audio, silence_seconds=silence, fixed_stop=True, trim=False)

    turn_seen = asyncio.run(main())
    backend.executor.shutdown()
    assert turn_seen.error is None and turn_seen.text == "hello world", turn_seen
    (heard,) = backend.heard
    return heard - int(LEAD_SECONDS * SAMPLE_RATE)


@pytest.mark.parametrize("ending", ["audio-stop", "the audio timeout", "the server's endpoint"])
@pytest.mark.parametrize("softer_db", [25.0, 30.0])
def test_a_soft_last_word_after_a_pause_reaches_the_model_however_the_stream_ends(softer_db, ending) -> None:
    """Silero calls "hall" 25-30 dB softer no speech (0.12-0.52): held back with the pause, it was never heard."""
    audio, speech_end = soft_last_word(softer_db)
    heard = heard_in_real_time(audio, ending)
    assert heard >= speech_end, f"{(speech_end - heard) / SAMPLE_RATE:.2f} s of the word not heard"


def test_a_pause_of_only_the_room_is_still_held_back() -> None:
    """The early final pass stays exact: silence and steady noise past 0.3 s are not given to the model."""
    audio, speech_end = soft_last_word(None)
    heard = heard_in_real_time(audio, "audio-stop")
    assert speech_end < heard < speech_end + 0.6 * SAMPLE_RATE  # the kept 0.3 s, and Silero's lag of ~0.1 s


@pytest.mark.parametrize("softer_db", [None, 25.0, 30.0])
def test_the_training_cut_is_what_the_server_gives_the_model(softer_db: float | None) -> None:
    """The demo model is trained on soft last words cut as the server's final pass hears them
    (``tools.final_pass_audio``, the same turn and VAD without the sockets): it must cut where the server does."""
    audio, _ = soft_last_word(softer_db)
    heard = heard_in_real_time(audio, "audio-stop")
    streamed = streamed_audio(audio, 0.7)  # as ``command`` sends it
    cut = final_pass_audio(streamed, LocalDetector()).shape[0] - int(LEAD_SECONDS * SAMPLE_RATE)
    # The server's VAD hears the stream in batches; the one under way at audio-stop goes to the final pass unsifted.
    assert abs(heard - cut) <= CHUNK_SAMPLES, (
        f"server {heard / SAMPLE_RATE:.2f} s, training cut {cut / SAMPLE_RATE:.2f} s"
    )
    # The room alone is held back; a soft word in the pause unholds the rest of the stream.
    assert (cut < streamed.shape[0] - int(LEAD_SECONDS * SAMPLE_RATE)) is (softer_db is None)


@pytest.mark.parametrize(
    ("text", "language", "end_probability", "complete"),
    [
        ("set a timer for ten minutes", "English", 0.9, True),
        ("set a timer for", "English", 0.9, False),
        ("set a timer for ten minutes", "English", None, False),  # mlx gives no end probability
        ("set a timer for ten minutes", "English", 0.2, False),
        ("stelle einen Timer für", "German", 0.9, False),
        ("stelle einen Timer für zehn Minuten", "German", 0.9, True),
        ("allume la lumière de l'", "French", 0.9, False),
        ("allume l'ampoule", "French", 0.9, True),
        ("zet de lamp in de", "Dutch", 0.9, False),
        ("pon un temporizador de", "Spanish", 0.9, False),
        ("accendi la luce della", "Italian", 0.9, False),
        ("włącz światło w", "Polish", 0.9, False),
        ("liga a luz da", "Portuguese", 0.9, False),
        ("打开客厅的灯", "Chinese", 0.99, False),  # no word list for it yet: only the longer silence ends it
    ],
)
def test_complete_needs_the_models_end_probability_and_the_languages_words(
    text: str, language: str, end_probability: float | None, complete: bool
) -> None:
    assert TurnSettings().sounds_complete(Speculation(text, language, end_probability)) is complete
