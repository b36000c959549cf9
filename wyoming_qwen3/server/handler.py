"""One Wyoming connection: reading events, their order, and the answers to bad input.

Event order for one utterance (Wyoming 1.10 streaming):

    client: transcribe -> audio-start -> audio-chunk ... -> audio-stop
    server: transcript-start -> transcript-chunk ... -> transcript -> transcript-stop

The utterance itself (``stream.utterance.Utterance``) buffers the audio, runs the
streaming steps and sends the transcript; this handler parses each event,
keeps the order, and answers what cannot be served with an ``error`` event.
While inference runs it keeps reading, so ``describe`` is answered and audio
is buffered meanwhile.

Every way a connection ends (closed, reset, idle, stalled) is logged as one
info line; tracebacks are kept for bugs.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from wyoming.asr import Transcribe
from wyoming.audio import AudioChunk, AudioStart, AudioStop
from wyoming.error import Error
from wyoming.event import Event
from wyoming.info import Describe, Info
from wyoming.ping import Ping, Pong
from wyoming.server import AsyncEventHandler

from ..backends.base import Backend, SessionOptions
from ..model.languages import UnknownLanguageError, resolve_language
from .context import MAX_CONTEXT_BYTES, MAX_CONTEXT_ENTRIES, bounded_entries, compose_context
from .memory import return_free_memory
from .protocol import IdleTimeoutError, MalformedEventError, StalledEventError, read_event
from .settings import HandlerConfig
from .stream.audio import AudioFormatError, AudioNormalizer
from .stream.emission_log import EmissionLog
from .stream.speech_activity import DetectorPool, SpeechActivity
from .stream.utterance import Utterance

_LOGGER = logging.getLogger(__name__)

#: What a client's event becomes once parsed.
Message = Describe | Ping | Transcribe | AudioStart | AudioChunk | AudioStop
_MESSAGE_TYPES: tuple[type[Message], ...] = (Describe, Ping, Transcribe, AudioStart, AudioChunk, AudioStop)


def parse(event: Event) -> Message | None:
    """The message of a known event type (None for an unknown type); KeyError, TypeError or
    ValueError for one whose fields are missing or of the wrong kind."""
    message_type = next((t for t in _MESSAGE_TYPES if t.is_type(event.type)), None)
    if message_type is None:
        return None
    message = message_type.from_event(event)
    if isinstance(message, Transcribe):
        for value, what in ((message.transcript_names, "names"), (message.transcript_terms, "terms")):
            if value is not None and not (isinstance(value, list) and all(isinstance(v, str) for v in value)):
                raise TypeError(f"transcript_{what} must be a list of strings")
        if message.language is not None and not isinstance(message.language, str):
            raise TypeError("language must be a string")
    return message


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
        detectors: DetectorPool,
    ) -> None:
        super().__init__(reader, writer)
        self._info_event = info.event()
        self._backend = backend
        self._config = config
        #: What the next stream is transcribed with, as its transcribe said (None: no transcribe, the defaults).
        self._options: SessionOptions | None = None
        self._stream: Utterance | None = None
        # After an error, audio is dropped quietly until the next audio-start:
        # one error per stream, not one per 10 ms chunk.
        self._dropping_audio = False
        # Set by a transcribe that was refused (unknown language): the audio
        # that follows it is not transcribed with some other language instead.
        self._refused = False
        self._connected = True
        #: Set by ``stop``: the connection ends after the event under way.
        self._stopping = False
        #: Set once the connection has ended, its session freed and its end logged.
        self.ended = asyncio.Event()
        #: The VAD, taken from the server's pool at the connection's first stream, reset for each, and
        #: given back when the connection ends (None until then).
        self._detectors = detectors
        self._detector: Any = None
        peer = writer.get_extra_info("peername")
        self._client = f"{peer[0]}:{peer[1]}" if isinstance(peer, tuple) else "client"

    def _default_options(self) -> SessionOptions:
        """A stream with no transcribe before it: the server's language and context (and the home's names)."""
        return SessionOptions(language=self._config.default_language, context=self._context([], names_sent=False))

    def _context(self, entries: list[str], names_sent: bool) -> str:
        """The context for a request with ``entries`` (``context``), with what it took of the home's names logged."""
        context, chosen = compose_context(self._config, entries, names_sent)
        if chosen is not None:
            _LOGGER.debug("%s: the home's names: %s", self._client, chosen.describe(self._config.home_names_bytes))
        return context

    # -- reading --------------------------------------------------------------

    async def run(self) -> None:
        """AsyncEventHandler.run's loop (read, handle, disconnect, close), with answers for malformed input,
        timeouts, and one log line however the connection ends.

        wyoming's own reads with ``async_read_event``, which takes a malformed line for the end of the input
        (the connection closes without a word: tests/test_bad_input.py) and waits forever on a client that
        stops mid-event; so this reads with ``protocol.read_event``, and ``stop`` says when to end.
        """
        reason = "closed by the client"
        try:
            while not self._stopping:
                try:
                    event = await read_event(
                        self.reader, self._config.idle_timeout_seconds, self._config.event_timeout_seconds
                    )
                except IdleTimeoutError as err:
                    if self._stream is not None and not self._stream.finishing:
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
                    if self._stopping:
                        reason = "closed: the server is stopping"
                    break
                if not await self.handle_event(event):
                    reason = "connection lost while sending"
                    break
            else:  # stop() came while an event was being handled (a step under way), not during a read
                reason = "closed: the server is stopping"
        except OSError as err:  # reset, broken pipe, unreachable: the client is gone
            reason = f"connection lost ({err.strerror or type(err).__name__})"
        except Exception:  # a bug: keep its traceback, and free what the connection held
            _LOGGER.exception("%s: closing the connection after an unexpected error", self._client)
            reason = "closed after an unexpected error"
        finally:
            mid_stream = self._stream is not None and self._stream.mid_stream
            await self.disconnect()
            self.writer.close()
            _LOGGER.info("%s: %s%s", self._client, reason, "; mid-stream, session freed" if mid_stream else "")
            self.ended.set()

    async def stop(self) -> None:
        """The server is stopping (AsyncServer.stop): the read under way ends, and so does the connection."""
        self._stopping = True
        await super().stop()

    async def handle_event(self, event: Event) -> bool:
        try:
            message = parse(event)
        except (KeyError, TypeError, ValueError, AttributeError) as err:
            _LOGGER.warning("%s: malformed %s event: %r", self._client, event.type, err)
            await self._send_error(f"Malformed {event.type} event: {err!r}", "malformed-event")
            return True
        try:
            if message is None:
                _LOGGER.warning("%s: ignoring unknown event type '%s'", self._client, event.type)
            elif isinstance(message, Describe):
                await self.write_event(self._info_event)
            elif isinstance(message, Ping):
                await self.write_event(Pong(text=message.text).event())
            elif isinstance(message, Transcribe):
                await self._on_transcribe(message)
            elif isinstance(message, AudioStart):
                await self._on_audio_start(message)
            elif isinstance(message, AudioChunk):
                await self._on_audio_chunk(message)
            else:
                await self._on_audio_stop()
        except OSError:
            return False
        return True

    async def disconnect(self) -> None:
        self._connected = False
        stream = self._stream
        self._drop_stream()
        if self._detector is not None:
            if stream is not None:
                await stream.until_heard()  # its VAD batch under way is the last use of the detector
            await self._detectors.give_back(self._detector)
            self._detector = None
        await asyncio.to_thread(return_free_memory)  # what the connection's utterances freed (``memory``)

    # -- events ---------------------------------------------------------------

    async def _on_transcribe(self, request: Transcribe) -> None:
        if self._stream is not None and not self._stream.done:
            _LOGGER.warning("%s: transcribe during a stream; the stream is dropped", self._client)
        self._drop_stream()
        try:
            language = (
                resolve_language(request.language, self._backend.supported_languages)
                if request.language
                else self._config.default_language
            )
        except UnknownLanguageError as err:
            _LOGGER.warning("%s: %s", self._client, err)
            await self._send_error(str(err), "unknown-language")
            self._options = None
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
        if self._config.home is not None:
            self._config.home.refresh_soon()  # read while the command is spoken: the next one gets the change
        commands = self._config.turn.commands
        if commands is not None and language is not None and self._config.turn.endpointing:
            commands.of(language)  # Home Assistant's, loaded while the command is spoken where they are not yet
        context = self._context(entries, names_sent=bool(request.transcript_names))
        self._options = SessionOptions(language=language, context=context)
        _LOGGER.debug("%s: transcribe %s", self._client, self._options)

    async def _on_audio_start(self, start: AudioStart) -> None:
        previous = self._stream
        if previous is not None and not previous.done:
            _LOGGER.warning("%s: audio-start during a stream; the old stream is dropped", self._client)
        self._drop_stream()
        if previous is not None:
            await previous.until_heard()  # the connection's one detector is the new stream's next
        self._dropping_audio = True  # until a stream starts below
        if self._refused:
            return
        try:
            normalizer = AudioNormalizer(start)
        except AudioFormatError as err:
            _LOGGER.warning("%s: %s", self._client, err)
            await self._send_error(str(err), "bad-audio-format")
            return
        options, self._options = self._options or self._default_options(), None
        loop = asyncio.get_running_loop()
        try:
            session = await loop.run_in_executor(self._backend.executor, self._backend.create_session, options)
        except Exception:  # out of device memory, or a bug: either way this stream cannot be served
            _LOGGER.exception("%s: cannot start a transcription", self._client)
            await self._send_error("Transcription failed; see the server log", "transcription-failed")
            return
        if self._detector is None:
            self._detector = await self._detectors.take()
        activity = SpeechActivity(self._detector)
        target = self._config.emission_log
        self._stream = Utterance(
            session,
            normalizer,
            options,
            backend=self._backend,
            limits=self._config.limits,
            send=self.write_event,
            client=self._client,
            turn=self._config.turn,
            activity=activity,
            emission_log=EmissionLog.for_utterance(target) if target is not None else None,
        )
        self._dropping_audio = False
        _LOGGER.debug(
            "%s: audio-start %s Hz, %s bytes, %s channels", self._client, start.rate, start.width, start.channels
        )

    async def _on_audio_chunk(self, chunk: AudioChunk) -> None:
        stream = self._stream
        if stream is None:
            if not self._dropping_audio:
                _LOGGER.warning("%s: audio-chunk before audio-start", self._client)
                await self._send_error("audio-chunk before audio-start", "no-audio-start")
                self._dropping_audio = True
            return
        try:
            await stream.add(chunk)
        except AudioFormatError as err:
            _LOGGER.warning("%s: %s; the stream is dropped", self._client, err)
            await self._send_error(str(err), "bad-audio")
            self._drop_stream()
            self._dropping_audio = True

    async def _on_audio_stop(self) -> None:
        stream = self._stream
        if stream is None:
            if not self._dropping_audio:
                _LOGGER.warning("%s: audio-stop without audio-start", self._client)
                await self._send_error("audio-stop without audio-start", "no-audio-start")
            self._dropping_audio = False
            self._refused = False
            return
        await stream.finish()  # at once if the stream was finished already (cap, timeout) or dropped
        self._stream = None

    def _drop_stream(self) -> None:
        stream, self._stream = self._stream, None
        if stream is not None and not stream.done:
            stream.drop()

    async def _send_error(self, text: str, code: str) -> None:
        if self._connected:
            try:
                await self.write_event(Error(text=text, code=code).event())
            except OSError:
                self._connected = False
