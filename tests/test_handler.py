"""The handler's own failures: stdio served like a socket, a session that cannot start, a log that cannot
be written, and a dropped stream that must stop computing."""

from __future__ import annotations

import asyncio
import gc
import io
import logging
import shutil
import subprocess
import threading
from pathlib import Path

import numpy as np
import pytest
from wyoming.asr import Transcribe
from wyoming.audio import AudioChunk, AudioStart, AudioStop
from wyoming.client import AsyncTcpClient
from wyoming.event import Event, read_event, write_event
from wyoming.info import Describe

from tools.speech import Speech, pcm16, speak
from wyoming_qwen3.backends.base import Backend, FinalDelta, SessionOptions, StreamingSession
from wyoming_qwen3.model.format import SAMPLE_RATE
from wyoming_qwen3.server.settings import HandlerConfig
from wyoming_qwen3.server.stream.audio import AudioNormalizer
from wyoming_qwen3.server.stream.silero import CHUNK_SAMPLES, VadProcessError
from wyoming_qwen3.server.stream.speech_activity import DetectorPool, SpeechActivity
from wyoming_qwen3.server.stream.turn import TurnSettings
from wyoming_qwen3.server.stream.utterance import Send, Utterance

from .conftest import SCRIPT_TEXT, serving
from .test_scheduling import STEP_SECONDS, SlowBackend

ROOT = Path(__file__).resolve().parent.parent


def loud(seconds: float) -> bytes:
    samples = np.random.default_rng(0).normal(0, 0.2, int(seconds * SAMPLE_RATE))
    return (samples.clip(-1, 1) * 32767).astype("<i2").tobytes()


def utterance_events(pcm: bytes, chunk_bytes: int = 3200) -> list[Event]:
    chunks = [AudioChunk(SAMPLE_RATE, 2, 1, pcm[i : i + chunk_bytes]).event() for i in range(0, len(pcm), chunk_bytes)]
    return [Transcribe(language="en").event(), AudioStart(SAMPLE_RATE, 2, 1).event(), *chunks, AudioStop().event()]


async def exchange(port: int, events: list[Event], until: str, pace: float = 0.0) -> list[Event]:
    """Send ``events`` (``pace`` seconds apart), then read until an event of type ``until``."""
    received: list[Event] = []
    async with AsyncTcpClient("127.0.0.1", port) as client:
        for event in events:
            await client.write_event(event)
            await asyncio.sleep(pace)
        while True:
            event = await asyncio.wait_for(client.read_event(), 10)
            assert event is not None, f"closed after {[e.type for e in received]}"
            received.append(event)
            if event.type == until:
                return received


# -- stdio ----------------------------------------------------------------------------


def test_stdio_reads_strictly_answers_bad_input_and_ends_with_one_line(scripted_model: Path, speech) -> None:
    """``--uri stdio://`` runs the same reader as a socket: a malformed line is answered, not the end."""
    utterance: Speech = speech("turn on the lights", "-r", "16000")
    stdin = io.BytesIO()
    stdin.write(b"this is not json\n")
    for event in [Describe().event(), *utterance_events(utterance.audio)]:
        write_event(event, stdin)
    result = subprocess.run(
        [str(ROOT / "script" / "run"), "--uri", "stdio://", "--model", str(scripted_model), "--device", "cpu"],
        input=stdin.getvalue(),
        capture_output=True,
        timeout=120,
    )
    log = result.stderr.decode(errors="replace")
    assert result.returncode == 0, log
    stdout = io.BytesIO(result.stdout)
    events = []
    while (event := read_event(stdout)) is not None:
        events.append(event)
    types = [e.type for e in events]
    assert types[:3] == ["error", "info", "transcript-start"], types
    assert events[0].data["code"] == "malformed-event"
    assert types[-2:] == ["transcript", "transcript-stop"] and events[-2].data["text"] == SCRIPT_TEXT
    assert "Ready" in log and "Traceback" not in log
    ends = [line for line in log.splitlines() if "client: closed by the client" in line]
    assert len(ends) == 1 and ends[0].startswith("INFO"), log


# -- a session that cannot start --------------------------------------------------------


class UnstartableBackend(Backend):
    """Its sessions fail to start, as a CUDA device out of memory does (or a bug)."""

    def __init__(self, error: Exception) -> None:
        super().__init__("unstartable")
        self.error = error

    @property
    def supported_languages(self) -> list[str]:
        return ["English"]

    def create_session(self, options: SessionOptions) -> StreamingSession:
        raise self.error


@pytest.mark.parametrize("error", [RuntimeError("CUDA out of memory"), TypeError("a bug")])
def test_a_session_that_cannot_start_is_an_error_event_and_the_connection_goes_on(
    error: Exception, caplog: pytest.LogCaptureFixture
) -> None:
    backend = UnstartableBackend(error)

    async def main() -> list[Event]:
        async with serving(backend) as port:
            return await exchange(port, [*utterance_events(loud(0.5)), Describe().event()], until="info")

    with caplog.at_level(logging.INFO):
        events = asyncio.run(main())
    backend.executor.shutdown()
    assert [e.type for e in events] == ["error", "info"]  # one error; the audio after it dropped quietly
    assert events[0].data["code"] == "transcription-failed"
    failures = [r for r in caplog.records if "cannot start a transcription" in r.getMessage()]
    assert len(failures) == 1 and failures[0].exc_info is not None  # a traceback: this is not bad input
    assert not any("alformed" in r.getMessage() for r in caplog.records)


# -- an emission log that cannot be written -------------------------------------------------


class WordsBackend(Backend):
    """Commits "hello" at its first step and "world" at the end."""

    def __init__(self) -> None:
        super().__init__("words")

    @property
    def supported_languages(self) -> list[str]:
        return ["English"]

    def create_session(self, options: SessionOptions) -> StreamingSession:
        return WordsSession()


class WordsSession(StreamingSession):
    def __init__(self) -> None:
        self.steps = 0

    def feed(self, audio: np.ndarray) -> str:
        self.steps += 1
        return "hello" if self.steps == 1 else ""

    def finish(self, audio: np.ndarray | None = None) -> FinalDelta:
        return FinalDelta(" world", "English")


def test_an_emission_log_that_cannot_be_written_costs_the_client_nothing(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    folder = tmp_path / "logs"
    folder.mkdir()
    backend = WordsBackend()
    config = HandlerConfig(emission_log=folder / "emissions.jsonl")
    shutil.rmtree(folder)  # the disk goes away after start: every write fails

    async def main() -> list[Event]:
        async with serving(backend, config) as port:
            # Paced, so that the VAD hears the audio and a step commits "hello" before audio-stop (audio the VAD
            # has not reached at audio-stop goes straight to the final pass).
            return await exchange(port, utterance_events(loud(0.5)), until="transcript-stop", pace=0.05)

    with caplog.at_level(logging.INFO):
        events = asyncio.run(main())
    backend.executor.shutdown()
    assert [e.type for e in events] == [
        "transcript-start",
        "transcript-chunk",
        "transcript-chunk",
        "transcript",
        "transcript-stop",
    ]
    assert events[-2].data["text"] == "hello world"
    warnings = [r for r in caplog.records if "cannot write the emission log" in r.getMessage()]
    assert len(warnings) == 1  # once per stream, not per unit
    assert not any("lost" in r.getMessage() for r in caplog.records)


# -- a dropped stream stops computing ---------------------------------------------------------


def test_a_client_that_leaves_mid_step_ends_the_step_at_once() -> None:
    """The one inference thread is shared: a step for a client that left must not hold it (2-3 s of CPU
    on the 0.6B shape); a step ends at its next token once told, as simulkv's does. Only the server's
    telling sets the event (a step left alone returns after STEP_SECONDS without it), so the check waits
    on the event, not on the clock: under a loaded CI the clock gave 0.578 s against a 0.5 s bound."""
    backend = SlowBackend()

    async def main() -> bool:
        async with serving(backend) as port:
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
            stream = io.BytesIO()
            for event in utterance_events(loud(0.5))[:-1]:  # no audio-stop: the client crashes mid-stream
                write_event(event, stream)
            writer.write(stream.getvalue())
            await writer.drain()
            while not (backend.sessions and backend.sessions[0].calls):
                await asyncio.sleep(0.01)  # a step is under way
            writer.transport.abort()
            return await asyncio.to_thread(backend.sessions[0].speaker_finished.wait, 3 * STEP_SECONDS)

    told = asyncio.run(main())
    backend.executor.shutdown()
    assert told, "the step was left to run on"


# -- the VAD's detectors, reused --------------------------------------------------------------


def test_detectors_are_reused_from_connection_to_connection_and_given_back_after_a_hang_up() -> None:
    """A detector per connection, loaded and dropped, grew resident memory without a plateau (about 22 MiB
    every 100 commands): the pool must hand the same one to connection after connection, and get back a
    hung-up connection's once its VAD is done with it."""
    backend = WordsBackend()
    pool = DetectorPool(max_idle=2)

    async def until_idle(count: int) -> None:
        for _ in range(200):  # the handler gives its detector back as the connection closes
            if len(pool._idle) == count:
                return
            await asyncio.sleep(0.01)
        raise AssertionError(f"{len(pool._idle)} detectors idle, expected {count}")

    async def hang_up(port: int) -> None:
        _, writer = await asyncio.open_connection("127.0.0.1", port)
        stream = io.BytesIO()
        for event in utterance_events(loud(0.5))[:-1]:  # no audio-stop
            write_event(event, stream)
        writer.write(stream.getvalue())
        await writer.drain()
        await asyncio.sleep(0.2)
        writer.close()

    async def main() -> None:
        async with serving(backend, detectors=pool) as port:
            used = []
            for _ in range(3):
                events = await exchange(port, utterance_events(loud(0.5)), until="transcript-stop")
                assert events[-2].type == "transcript"
                await until_idle(1)
                used.append(pool._idle[0])
            assert used[0] is used[1] is used[2]  # one detector for three connections one after another
            await asyncio.gather(*(hang_up(port) for _ in range(3)))  # three at once: two more loaded
            await until_idle(2)  # and given back, the third beyond max_idle dropped
            events = await exchange(port, utterance_events(loud(0.5)), until="transcript-stop")
            assert events[-2].type == "transcript"  # served with one of the idle two, given back after
            await until_idle(2)

    asyncio.run(main())
    backend.executor.shutdown()


class NothingBackend(WordsBackend):
    """Writes nothing, whatever it hears: a model a long list of names has confused."""

    def create_session(self, options: SessionOptions) -> StreamingSession:
        return NothingSession()


class NothingSession(WordsSession):
    def feed(self, audio: np.ndarray) -> str:
        return ""

    def finish(self, audio: np.ndarray | None = None) -> FinalDelta:
        return FinalDelta("", "English")


@pytest.mark.parametrize("names", [["living room lamp 1", "living room lamp 2"], None])
def test_nothing_written_for_speech_with_names_in_the_context_is_a_warning(
    names: list[str] | None, caplog: pytest.LogCaptureFixture
) -> None:
    """The demo model of 2026-12-05 returned empty transcripts with 20 similar names in its context, and no log line
    said so. Without names an empty transcript of speech is the model's own (a cough, a word it missed): no
    warning."""
    backend = NothingBackend()
    pcm = pcm16(np.concatenate([speak("turn on the kitchen lights"), np.zeros(SAMPLE_RATE // 2, np.float32)]))
    events = utterance_events(pcm)
    events[0] = Transcribe(language="en", transcript_names=names).event()

    async def main() -> list[Event]:
        async with serving(backend) as port:
            return await exchange(port, events, until="transcript-stop")

    with caplog.at_level(logging.WARNING):
        received = asyncio.run(main())
    backend.executor.shutdown()
    assert received[-2].type == "transcript" and received[-2].data["text"] == ""
    warned = [r.getMessage() for r in caplog.records if "wrote nothing for the sound it heard" in r.getMessage()]
    if names:
        assert len(warned) == 1 and "38 bytes of names and terms" in warned[0], caplog.text
    else:
        assert not warned, caplog.text


class FailingDetector:
    """A detector whose process has died under it."""

    def reset(self) -> None:
        return

    def probabilities(self, chunks: np.ndarray) -> np.ndarray:
        raise VadProcessError("the VAD process is gone (exit -9)")

    def close(self) -> None:
        return


def test_a_vad_that_fails_leaves_the_audio_to_the_model_and_the_stream_its_transcript(
    caplog: pytest.LogCaptureFixture,
) -> None:
    backend = WordsBackend()

    async def main() -> list[Event]:
        async with serving(backend, detectors=DetectorPool(make=FailingDetector)) as port:
            return await exchange(
                port, [Transcribe(language="en").event(), *utterance_events(loud(1.0))], "transcript", pace=0.02
            )

    with caplog.at_level(logging.WARNING):
        events = asyncio.run(main())
    backend.executor.shutdown()
    assert events[-1].type == "transcript" and events[-1].data["text"].endswith("world")
    assert "the VAD failed" in caplog.text and "Traceback" not in caplog.text


class LevelDetector:
    """Speech where a chunk is loud: a VAD whose verdicts a test can write with the audio it sends."""

    def reset(self) -> None:
        return

    def probabilities(self, chunks: np.ndarray) -> np.ndarray:
        rms = np.sqrt(np.mean(np.square(chunks.reshape(-1, CHUNK_SAMPLES)), axis=1))
        return (rms > 0.05).astype(np.float32)

    def close(self) -> None:
        return


class BrokenDetector(LevelDetector):
    """A detector with a bug: not the process failing (VadProcessError), an error nobody planned for."""

    def probabilities(self, chunks: np.ndarray) -> np.ndarray:
        raise IndexError("a bug in the detector")


async def stream_to(utterance: Utterance, pcm: bytes, chunk_bytes: int = 320) -> None:
    """Hand ``pcm`` to the utterance in Home Assistant's 10 ms chunks, 2 ms apart, until it is finishing."""
    for start in range(0, len(pcm), chunk_bytes):
        await utterance.add(AudioChunk(SAMPLE_RATE, 2, 1, pcm[start : start + chunk_bytes]))
        await asyncio.sleep(0.002)
    for _ in range(500):
        if utterance.finishing:
            break
        await asyncio.sleep(0.01)
    await utterance.until_heard()


def an_utterance(send: Send, detector: LevelDetector, backend: Backend) -> Utterance:
    """An utterance whose server ends the turn itself after 0.3 s of silence."""
    return Utterance(
        backend.create_session(SessionOptions(language="English")),
        AudioNormalizer(AudioStart(SAMPLE_RATE, 2, 1)),
        SessionOptions(language="English"),
        backend=backend,
        limits=HandlerConfig().limits,
        send=send,
        client="test",
        activity=SpeechActivity(detector),
        turn=TurnSettings(endpointing=True, incomplete_silence_seconds=0.3),
    )


def test_a_client_gone_when_the_server_ends_the_turn_is_no_lost_exception(caplog: pytest.LogCaptureFixture) -> None:
    """The VAD's listener ends the turn and sends the transcript; the client has gone meanwhile. Nothing awaits
    that task: its OSError once surfaced only as 'Task exception was never retrieved', with a traceback."""
    backend = WordsBackend()
    sent: list[str] = []

    async def gone(event: Event) -> None:
        sent.append(event.type)
        raise ConnectionResetError("the client closed its socket")

    async def main() -> bool:
        utterance = an_utterance(gone, LevelDetector(), backend)
        await stream_to(utterance, loud(0.6) + bytes(2 * SAMPLE_RATE))
        return utterance.done

    with caplog.at_level(logging.DEBUG):
        ended = asyncio.run(main())
        gc.collect()  # where a task dropped with its exception unretrieved says so
    backend.executor.shutdown()
    assert ended and sent, "the server ended the turn and tried to send it"
    assert "never retrieved" not in caplog.text and "Traceback" not in caplog.text, caplog.text


def test_a_fault_in_the_vad_listener_fails_the_stream_rather_than_losing_its_audio(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """An error nobody planned for while the listener routes audio: the client is told, the log has the
    traceback (a bug), and the stream is done; before, the batch vanished with the task."""
    backend = WordsBackend()
    sent: list[Event] = []

    async def send(event: Event) -> None:
        sent.append(event)

    async def main() -> bool:
        utterance = an_utterance(send, BrokenDetector(), backend)
        await stream_to(utterance, loud(0.6))
        return utterance.done

    with caplog.at_level(logging.WARNING):
        done = asyncio.run(main())
        gc.collect()
    backend.executor.shutdown()
    errors = [event.data for event in sent if event.type == "error"]
    assert done and errors == [{"text": "Transcription failed; see the server log", "code": "transcription-failed"}]
    assert "a bug in the detector" in caplog.text and "never retrieved" not in caplog.text


def connection_ends(caplog: pytest.LogCaptureFixture) -> list[str]:
    """The lines that say how a connection ended."""
    return [r.getMessage() for r in caplog.records if "closed" in r.getMessage() or "lost" in r.getMessage()]


async def until_a_connection_ends(caplog: pytest.LogCaptureFixture, seconds: float) -> None:
    """Wait up to ``seconds`` for a connection's end line (the handler logs it after the server's stop returns)."""
    for _ in range(int(seconds / 0.02)):
        if connection_ends(caplog):
            return
        await asyncio.sleep(0.02)


def test_a_stopping_server_ends_each_connection_with_its_one_line(caplog: pytest.LogCaptureFixture) -> None:
    """AsyncServer.stop asks each handler to stop (the handler's own ``stop``, over the library's): the read under
    way ends, the client sees the end, and the log says why."""
    backend = WordsBackend()

    async def main() -> Event | None:
        async with serving(backend) as port:
            client = AsyncTcpClient("127.0.0.1", port)
            await client.connect()
            await client.write_event(Describe().event())
            assert (await asyncio.wait_for(client.read_event(), 5)) is not None  # info: the handler reads
        # The server has stopped: the connection ends without another event, and the handler says why.
        after = await asyncio.wait_for(client.read_event(), 5)
        await until_a_connection_ends(caplog, 2.0)
        return after

    with caplog.at_level(logging.INFO):
        after = asyncio.run(main())
    backend.executor.shutdown()
    ends = connection_ends(caplog)
    assert after is None
    assert len(ends) == 1 and ends[0].endswith("closed: the server is stopping"), caplog.text


class HeldStartBackend(WordsBackend):
    """Its sessions start when the test says so: the handler is inside an event (audio-start) when the server
    stops, as it is inside a step or a VAD batch when ``docker stop`` comes on a busy machine."""

    def __init__(self) -> None:
        super().__init__()
        self.starting = threading.Event()
        self.release = threading.Event()

    def create_session(self, options: SessionOptions) -> StreamingSession:
        self.starting.set()
        self.release.wait(10)
        return super().create_session(options)


def test_a_stop_while_an_event_is_handled_is_logged_as_the_server_stopping(caplog: pytest.LogCaptureFixture) -> None:
    """The stop comes between reads, not during one: the connection's line still says the server stopped it (it
    said "closed by the client", the read loop's default; seen on a loaded 2-core machine, 2026-12-07)."""
    backend = HeldStartBackend()

    async def main() -> None:
        async with serving(backend) as port:
            client = AsyncTcpClient("127.0.0.1", port)
            await client.connect()
            for event in utterance_events(loud(0.5))[:2]:  # transcribe, audio-start
                await client.write_event(event)
            assert await asyncio.to_thread(backend.starting.wait, 10)
        backend.release.set()  # the server has stopped; now the event under way ends
        await until_a_connection_ends(caplog, 5.0)
        await client.disconnect()

    with caplog.at_level(logging.INFO):
        asyncio.run(main())
    backend.executor.shutdown()
    ends = connection_ends(caplog)
    assert len(ends) == 1 and "closed: the server is stopping" in ends[0], caplog.text
