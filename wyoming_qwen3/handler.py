"""One Wyoming connection: describe, transcribe, and streamed transcripts.

Event order for one utterance (Wyoming 1.10 streaming):

    client: transcribe -> audio-start -> audio-chunk ... -> audio-stop
    server: transcript-start -> transcript-chunk ... -> transcript -> transcript-stop

Chunks are the backend's append-only text deltas (whole words, or whole
characters in languages written without spaces), so the chunks concatenate
exactly to the final transcript.
Inference runs on the backend's thread; while it runs this handler keeps
reading events, so ``describe`` is answered and audio is buffered meanwhile.
No step runs until the stream holds speech (``SPEECH_LEVEL_DBFS``), and a
stream that never does gets an empty transcript without decoding.

Every way a connection ends (closed, reset, idle, stalled) is logged as one
info line; tracebacks are kept for bugs.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from wyoming.asr import Transcribe, Transcript, TranscriptChunk, TranscriptStart, TranscriptStop
from wyoming.audio import AudioChunk, AudioStart, AudioStop
from wyoming.error import Error
from wyoming.event import Event
from wyoming.info import Describe, Info
from wyoming.ping import Ping, Pong
from wyoming.server import AsyncEventHandler

from .audio import SPEECH_LEVEL_DBFS, AudioFormatError, AudioNormalizer, loudest_frame_dbfs
from .backend import Backend, FinalText, SessionOptions, StreamingSession
from .emission_log import EmissionLog
from .inference import FINAL
from .languages import UnknownLanguageError, language_code, resolve_language
from .protocol import IdleTimeoutError, MalformedEventError, StalledEventError, read_event
from .qwen import SAMPLE_RATE

_LOGGER = logging.getLogger(__name__)


@dataclass(frozen=True)
class HandlerConfig:
    """Server-wide settings every connection shares."""

    #: Qwen3-ASR name used when ``transcribe`` names none; None detects it.
    default_language: str | None = None
    #: Context for every utterance, before the client's names and terms.
    context: str = ""
    #: Audio beyond this is not transcribed: the transcript is sent at the cap. A stream's
    #: cost per second is bounded (simulkv's stream window), so the cap is for runaway streams.
    max_audio_seconds: float = 60.0
    #: A stream with no audio for this long is finished as if audio-stop came.
    audio_timeout_seconds: float = 10.0
    #: A connection with no event for this long, and no stream in flight, is closed.
    #: Home Assistant sends ``describe`` every 30 s; four times that never cuts it.
    idle_timeout_seconds: float = 120.0
    #: An event whose first byte came must be complete this much later.
    event_timeout_seconds: float = 10.0
    #: A JSON-lines file, or a folder for one file per utterance, of every unit sent.
    emission_log: Path | None = None


#: Names and terms a client may send: whole entries are kept, in order, while
#: they fit. Qwen3-ASR's tokenizer is byte-level BPE, so 512 bytes are at most
#: 512 prompt tokens (about 130 for English names), prefilled once per utterance:
#: on the 0.6B model on 2 CPU cores about 1 s (float32) for 100 tokens.
MAX_CONTEXT_ENTRIES = 64
MAX_CONTEXT_BYTES = 512


@dataclass
class AudioStream:
    """One utterance in flight on this connection."""

    session: StreamingSession
    normalizer: AudioNormalizer
    options: SessionOptions
    received_samples: int = 0
    #: Samples handed to the session: the speech its committed text was decided on.
    fed_samples: int = 0
    emission_log: EmissionLog | None = None
    #: Set once any 10 ms frame reached SPEECH_LEVEL_DBFS; until then no step runs.
    heard_speech: bool = False
    pending: list[np.ndarray] = field(default_factory=list)
    #: The text sent in transcript-chunk events so far.
    sent: str = ""
    started: bool = False
    finishing: bool = False
    last_audio_time: float = 0.0
    step_task: asyncio.Task | None = None
    watchdog: asyncio.Task | None = None


def bounded_entries(names: list[str] | None, terms: list[str] | None) -> tuple[list[str], int]:
    """The client's names, then its terms, as many whole ones as the bounds allow; and how many were dropped."""
    entries = [entry.strip() for entry in [*(names or []), *(terms or [])] if entry.strip()]
    kept: list[str] = []
    size = 0
    for entry in entries[:MAX_CONTEXT_ENTRIES]:
        size += len(entry.encode("utf-8")) + 2  # with its ", " separator
        if size > MAX_CONTEXT_BYTES:
            break
        kept.append(entry)
    return kept, len(entries) - len(kept)


def build_context(base: str, entries: list[str]) -> str:
    """System-prompt context: the server's context, then the client's names and terms."""
    return ", ".join(part for part in [base.strip(), *entries] if part)


class Qwen3EventHandler(AsyncEventHandler):
    """Serves one client connection."""

    def __init__(
        self,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        *,
        info: Info,
        backend: Backend,
        config: HandlerConfig,
    ) -> None:
        super().__init__(reader, writer)
        self._info_event = info.event()
        self._backend = backend
        self._config = config
        self._options = self._default_options()
        self._stream: AudioStream | None = None
        # After an error or the cap, audio is dropped quietly until the next
        # audio-start: one error per stream, not one per 10 ms chunk.
        self._dropping_audio = False
        # Set by a transcribe that was refused (unknown language): the audio
        # that follows it is not transcribed with some other language instead.
        self._refused = False
        self._connected = True
        peer = writer.get_extra_info("peername")
        self._client = f"{peer[0]}:{peer[1]}" if isinstance(peer, tuple) else "client"

    def _default_options(self) -> SessionOptions:
        return SessionOptions(language=self._config.default_language, context=self._config.context)

    # -- reading --------------------------------------------------------------

    async def run(self) -> None:
        """Like AsyncEventHandler.run, with answers for malformed input, timeouts,
        and one log line however the connection ends."""
        self._is_running = True
        reason = "closed by the client"
        try:
            while self._is_running:
                try:
                    event = await read_event(
                        self.reader, self._config.idle_timeout_seconds, self._config.event_timeout_seconds
                    )
                except IdleTimeoutError as err:
                    if self._stream is not None:
                        continue  # a stream in flight is bounded by its own audio timeout
                    reason = f"closed: {err}"
                    break
                except StalledEventError as err:
                    await self._send_error(f"Timed out: {err}", "event-timeout")
                    reason = f"closed: {err}"
                    break
                except MalformedEventError as err:
                    _LOGGER.warning("%s: malformed event: %s", self._client, err)
                    await self._send_error(f"Malformed event: {err}", "malformed-event")
                    if err.fatal:
                        reason = "closed after a malformed event"
                        break
                    continue
                if event is None:
                    if not self._is_running:
                        reason = "closed: the server is stopping"
                    break
                if not await self.handle_event(event):
                    reason = "connection lost while sending"
                    break
        except OSError as err:  # reset, broken pipe, unreachable: the client is gone
            reason = f"connection lost ({err.strerror or type(err).__name__})"
        finally:
            mid_stream = self._stream is not None and not self._stream.finishing
            await self.disconnect()
            self.writer.close()
            _LOGGER.info("%s: %s%s", self._client, reason, "; mid-stream, session freed" if mid_stream else "")

    async def handle_event(self, event: Event) -> bool:
        try:
            if Describe.is_type(event.type):
                await self.write_event(self._info_event)
            elif Ping.is_type(event.type):
                await self.write_event(Pong(text=Ping.from_event(event).text).event())
            elif Transcribe.is_type(event.type):
                await self._on_transcribe(Transcribe.from_event(event))
            elif AudioStart.is_type(event.type):
                await self._on_audio_start(AudioStart.from_event(event))
            elif AudioChunk.is_type(event.type):
                await self._on_audio_chunk(AudioChunk.from_event(event))
            elif AudioStop.is_type(event.type):
                await self._on_audio_stop()
            else:
                _LOGGER.warning("%s: ignoring unknown event type '%s'", self._client, event.type)
        except (KeyError, TypeError, AttributeError) as err:
            _LOGGER.warning("%s: malformed %s event: %r", self._client, event.type, err)
            await self._send_error(f"Malformed {event.type} event: {err!r}", "malformed-event")
        except OSError:
            return False
        return True

    async def disconnect(self) -> None:
        self._connected = False
        await self._drop_stream()

    # -- events ---------------------------------------------------------------

    async def _on_transcribe(self, request: Transcribe) -> None:
        if self._stream is not None:
            _LOGGER.warning("%s: transcribe during a stream; the stream is dropped", self._client)
            await self._drop_stream()
        for value, what in ((request.transcript_names, "names"), (request.transcript_terms, "terms")):
            if value is not None and not (isinstance(value, list) and all(isinstance(v, str) for v in value)):
                raise TypeError(f"transcript_{what} must be a list of strings")
        try:
            language = (
                resolve_language(request.language, self._backend.supported_languages)
                if request.language
                else self._config.default_language
            )
        except UnknownLanguageError as err:
            _LOGGER.warning("%s: %s", self._client, err)
            await self._send_error(str(err), "unknown-language")
            self._options = self._default_options()
            self._refused = True
            return
        self._refused = False
        entries, dropped = bounded_entries(request.transcript_names, request.transcript_terms)
        if dropped:
            _LOGGER.warning(
                "%s: kept %d names and terms, dropped %d beyond the bound (%d entries, %d bytes)",
                self._client,
                len(entries),
                dropped,
                MAX_CONTEXT_ENTRIES,
                MAX_CONTEXT_BYTES,
            )
        self._options = SessionOptions(language=language, context=build_context(self._config.context, entries))
        _LOGGER.debug("%s: transcribe %s", self._client, self._options)

    async def _on_audio_start(self, start: AudioStart) -> None:
        if self._stream is not None:
            _LOGGER.warning("%s: audio-start during a stream; the old stream is dropped", self._client)
            await self._drop_stream()
        if self._refused:
            self._dropping_audio = True
            return
        try:
            normalizer = AudioNormalizer(start)
        except AudioFormatError as err:
            _LOGGER.warning("%s: %s", self._client, err)
            await self._send_error(str(err), "bad-audio-format")
            self._dropping_audio = True
            return
        options, self._options = self._options, self._default_options()
        loop = asyncio.get_running_loop()
        session = await loop.run_in_executor(self._backend.executor, self._backend.create_session, options)
        stream = AudioStream(session=session, normalizer=normalizer, options=options)
        if self._config.emission_log is not None:
            stream.emission_log = EmissionLog.for_utterance(self._config.emission_log)
        stream.last_audio_time = loop.time()
        stream.watchdog = asyncio.create_task(self._watch_for_silence(stream))
        self._stream = stream
        self._dropping_audio = False
        _LOGGER.debug(
            "%s: audio-start %s Hz, %s bytes, %s channels", self._client, start.rate, start.width, start.channels
        )

    async def _on_audio_chunk(self, chunk: AudioChunk) -> None:
        stream = self._stream
        if stream is None or stream.finishing:
            if stream is None and not self._dropping_audio:
                _LOGGER.warning("%s: audio-chunk before audio-start", self._client)
                await self._send_error("audio-chunk before audio-start", "no-audio-start")
                self._dropping_audio = True
            return
        try:
            samples = stream.normalizer.convert(chunk)
        except Exception as err:  # AudioFormatError, or audioop's own error type
            _LOGGER.warning("%s: %s; the stream is dropped", self._client, err)
            await self._send_error(str(err), "bad-audio")
            await self._drop_stream()
            self._dropping_audio = True
            return

        stream.last_audio_time = asyncio.get_running_loop().time()
        cap = int(self._config.max_audio_seconds * SAMPLE_RATE)
        room = cap - stream.received_samples
        if samples.shape[0] > room:
            samples = samples[: max(room, 0)]
        stream.received_samples += samples.shape[0]
        if samples.shape[0]:
            stream.pending.append(samples)
            stream.heard_speech = stream.heard_speech or loudest_frame_dbfs(samples) >= SPEECH_LEVEL_DBFS
        if stream.received_samples >= cap:
            _LOGGER.warning(
                "%s: stream passed the %.0f s cap; sending the transcript of the first %.0f s",
                self._client,
                self._config.max_audio_seconds,
                self._config.max_audio_seconds,
            )
            self._dropping_audio = True
            await self._finish_stream(stream)
            return
        if stream.heard_speech and (stream.step_task is None or stream.step_task.done()):
            stream.step_task = asyncio.create_task(self._run_steps(stream))

    async def _on_audio_stop(self) -> None:
        stream = self._stream
        if stream is None:
            if not self._dropping_audio:
                _LOGGER.warning("%s: audio-stop without audio-start", self._client)
                await self._send_error("audio-stop without audio-start", "no-audio-start")
            self._dropping_audio = False
            self._refused = False
            return
        await self._finish_stream(stream)

    # -- transcription ----------------------------------------------------------

    async def _run_steps(self, stream: AudioStream) -> None:
        """Feed buffered audio to the session until none is left or the stream ends, sending committed text.

        Each step takes all the audio that came during the one before, so a slow machine
        streams at its own pace; once the stream is finishing, what is left goes to the final pass.
        """
        loop = asyncio.get_running_loop()
        while stream.pending and self._stream is stream and not stream.finishing:
            audio = np.concatenate(stream.pending)
            stream.pending.clear()
            stream.fed_samples += audio.shape[0]
            try:
                delta = await loop.run_in_executor(self._backend.executor, stream.session.feed, audio)
            except Exception:
                _LOGGER.exception("%s: transcription failed", self._client)
                await self._send_error("Transcription failed; see the server log", "transcription-failed")
                await self._drop_stream()
                return
            try:
                await self._send_text(stream, delta)
            except OSError:
                return  # the client is gone; the read loop logs it and frees the stream

    async def _finish_stream(self, stream: AudioStream) -> None:
        """Flush the session and send the final transcript; runs once per stream."""
        if stream.finishing:
            return
        stream.finishing = True
        stream.session.stop_early()  # a step under way ends at its next token
        if stream.watchdog is not None and stream.watchdog is not asyncio.current_task():
            stream.watchdog.cancel()
        if stream.step_task is not None:
            await asyncio.wait([stream.step_task])
        if self._stream is not stream:
            return  # dropped or disconnected meanwhile
        if stream.received_samples == 0:
            _LOGGER.warning("%s: empty audio stream; sending an empty transcript", self._client)
        elif not stream.heard_speech:
            _LOGGER.info("%s: no speech (no 10 ms frame above %.0f dBFS); not decoded", self._client, SPEECH_LEVEL_DBFS)
        pending = np.concatenate(stream.pending) if stream.pending else None
        stream.pending.clear()
        stream.fed_samples = stream.received_samples
        try:
            if stream.heard_speech:
                # Straight into the final pass, ahead of other streams' queued steps: the user is waiting.
                future = self._backend.executor.submit_with_priority(FINAL, stream.session.finish, pending)
                final = await asyncio.wrap_future(future)
            else:
                final = FinalText(text="", language=stream.options.language or "")
        except Exception:
            _LOGGER.exception("%s: transcription failed", self._client)
            await self._send_error("Transcription failed; see the server log", "transcription-failed")
            await self._drop_stream()
            return
        if self._stream is not stream:
            return
        self._stream = None
        language = language_code(final.language) if final.language else None
        await self._send_text(stream, final.text, language, final=True)
        text = stream.sent
        _LOGGER.info(
            "%s: transcript (%s, %.2f s): %s",
            self._client,
            final.language or "?",
            stream.received_samples / SAMPLE_RATE,
            text,
        )
        await self.write_event(Transcript(text=text, language=language).event())
        await self.write_event(TranscriptStop().event())

    async def _send_text(
        self, stream: AudioStream, delta: str, language: str | None = None, final: bool = False
    ) -> None:
        if not stream.started:
            stream.started = True
            forced = language or (language_code(stream.options.language) if stream.options.language else None)
            await self.write_event(TranscriptStart(language=forced).event())
        if delta:
            stream.sent += delta
            await self.write_event(TranscriptChunk(text=delta).event())
            if stream.emission_log is not None:
                stream.emission_log.write(delta, stream.fed_samples / SAMPLE_RATE, final)

    async def _watch_for_silence(self, stream: AudioStream) -> None:
        """Finish a stream whose client stopped sending audio without audio-stop."""
        loop = asyncio.get_running_loop()
        timeout = self._config.audio_timeout_seconds
        while True:
            remaining = stream.last_audio_time + timeout - loop.time()
            if remaining <= 0:
                break
            await asyncio.sleep(remaining)
        if self._stream is stream and not stream.finishing:
            _LOGGER.warning(
                "%s: no audio for %.1f s and no audio-stop; sending the transcript so far", self._client, timeout
            )
            self._dropping_audio = True
            try:
                await self._finish_stream(stream)
            except OSError:
                pass  # the client is gone; the read loop logs it

    async def _drop_stream(self) -> None:
        stream, self._stream = self._stream, None
        if stream is None:
            return
        stream.finishing = True
        for task in (stream.step_task, stream.watchdog):
            if task is not None and task is not asyncio.current_task():
                task.cancel()

    async def _send_error(self, text: str, code: str) -> None:
        if self._connected:
            try:
                await self.write_event(Error(text=text, code=code).event())
            except OSError:
                self._connected = False
