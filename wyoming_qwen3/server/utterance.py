"""One utterance on a connection, from ``audio-start`` to the final transcript.

Audio is converted, bounded and buffered here; streaming steps run on the
backend's inference thread while more audio arrives, each taking all the audio
that came during the one before, and their committed text goes out as
``transcript-chunk`` deltas. No step runs until the stream holds speech
(``SPEECH_LEVEL_DBFS``); a stream that never does gets an empty transcript
without decoding.

The model hears the silence after speech only up to ``kept_silence_seconds``
(``turn``); the rest is held back, and goes to the model only if speech
resumes, or if a looser test hears possible speech in it (``speech_activity``:
a soft last word that Silero misses; then nothing more is held back until
the speaker speaks as loud as before). Once the model has heard all it will, the final pass runs at once (a
speculation): it is the pass ``audio-stop`` would run, on the same audio, ready
before it comes. Speech that resumes throws it away, and the steps go on with
the held audio. The final transcript is sent once: at ``audio-stop``, when the
server ends the turn itself (endpointing), at the cap, or when the client stops
sending audio.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from concurrent.futures import Future

import numpy as np
from wyoming.asr import Transcript, TranscriptChunk, TranscriptStart, TranscriptStop
from wyoming.audio import AudioChunk
from wyoming.error import Error
from wyoming.event import Event

from ..backends.base import Backend, FinalDelta, SessionOptions, Speculation, StreamingSession
from ..backends.inference import EARLY, FINAL, STEP
from ..model.format import SAMPLE_RATE
from ..model.languages import language_code
from .audio import SPEECH_LEVEL_DBFS, AudioNormalizer, loudest_frame_dbfs
from .emission_log import EmissionLog
from .settings import StreamLimits
from .silero import VadProcessError
from .speech_activity import Heard, SpeechActivity
from .turn import TurnSettings

_LOGGER = logging.getLogger(__name__)

#: The most audio the VAD takes in one go off the event loop (Silero: about 13 ms of CPU); audio-stop stops it after
#: the chunk under way.
_VAD_BATCH_SAMPLES = SAMPLE_RATE // 2

#: Sends one event to the client; raises OSError once the client is gone.
Send = Callable[[Event], Awaitable[None]]


class Utterance:
    """One stream in flight: its session, buffered audio, the text sent, and its tasks."""

    def __init__(
        self,
        session: StreamingSession,
        normalizer: AudioNormalizer,
        options: SessionOptions,
        *,
        backend: Backend,
        limits: StreamLimits,
        send: Send,
        client: str,
        activity: SpeechActivity,
        turn: TurnSettings | None = None,
        emission_log: EmissionLog | None = None,
    ) -> None:
        self._session = session
        self._normalizer = normalizer
        self._options = options
        self._backend = backend
        self._limits = limits
        self._send = send
        self._client = client
        self._turn = turn or TurnSettings()
        #: Where speech stops and starts.
        self._activity = activity
        #: Silence past ``kept_silence_seconds`` after the last speech: given to the model only if speech resumes.
        self._held: list[np.ndarray] = []
        #: Whether such silence is held back: not once a pause held possible speech.
        self._holding = True
        #: Audio the VAD has not reached yet, and the task running it over the audio (see _listen).
        self._unheard: list[np.ndarray] = []
        self._listener: asyncio.Task[None] | None = None
        #: The final pass started early on the audio so far, while it stands (speech has not resumed): on the
        #: inference thread behind every step and final pass, cancelled when speech resumes or the client leaves.
        self._speculation: Future[Speculation | None] | None = None
        self._emission_log = emission_log
        self._pending: list[np.ndarray] = []
        self._received_samples = 0
        #: Samples handed to the session: the speech its committed text was decided on.
        self._fed_samples = 0
        #: Set once any 10 ms frame reached SPEECH_LEVEL_DBFS; until then no step runs.
        self._speech_detected = False
        #: The text sent in transcript-chunk events so far.
        self._sent = ""
        self._started = False
        #: Set once the final transcript is due (or the stream was dropped): no step starts after it.
        self.finishing = False
        #: Set once the final transcript went out, or the stream was dropped.
        self.done = False
        #: Set once finish has returned, or the stream was dropped.
        self._ended = asyncio.Event()
        loop = asyncio.get_running_loop()
        self._last_audio_time = loop.time()
        self._step_task: asyncio.Task[None] | None = None
        #: The step the task above waits for on the inference thread.
        self._step: Future[str] | None = None
        self._watchdog = asyncio.create_task(self._watch_for_silence())

    @property
    def mid_stream(self) -> bool:
        """Whether the stream was still taking audio."""
        return not self.finishing

    async def add(self, chunk: AudioChunk) -> None:
        """Take one chunk (dropped quietly once finishing); raises AudioFormatError for audio it cannot read."""
        if self.finishing:
            return
        samples = self._normalizer.convert(chunk)
        self._last_audio_time = asyncio.get_running_loop().time()
        cap = int(self._limits.max_audio_seconds * SAMPLE_RATE)
        samples = samples[: max(cap - self._received_samples, 0)]
        self._received_samples += samples.shape[0]
        if samples.shape[0]:
            self._speech_detected = self._speech_detected or loudest_frame_dbfs(samples) >= SPEECH_LEVEL_DBFS
            self._unheard.append(samples)
            if self._listener is None or self._listener.done():
                self._listener = asyncio.create_task(self._listen())
        if self._received_samples >= cap:
            _LOGGER.warning(
                "%s: stream passed the %.0f s cap; sending the transcript of the first %.0f s",
                self._client,
                self._limits.max_audio_seconds,
                self._limits.max_audio_seconds,
            )
            await self.finish()

    async def _listen(self) -> None:
        """Silero over the audio as it comes, off the event loop; then each chunk to the model or held back.

        A client that sends faster than real time is not held up by it: audio the VAD has not reached
        by audio-stop goes straight to the final pass, which waits for the chunk under way only. Nothing
        awaits this task's result, so whatever it raises ends here: a client gone while the server sent
        the turn it ended is the handler's to log, anything else fails the stream with its traceback.
        """
        try:
            await self._listen_until_heard()
        except OSError:
            return
        except Exception:
            await self._fail()

    async def _listen_until_heard(self) -> None:
        while self._unheard and not self.finishing:
            taken, size = 0, 0
            while taken < len(self._unheard) and size < _VAD_BATCH_SAMPLES:
                size += self._unheard[taken].shape[0]
                taken += 1
            batch = self._unheard[:taken]
            del self._unheard[:taken]
            try:
                if size < self._activity.samples_to_next_chunk:
                    # No whole chunk for Silero: nothing to compute, so no thread (at 16 streams, a thread and the
                    # VAD's process for every 10 ms chunk cost the event loop 1600 hand-offs a second).
                    verdicts = self._hear(batch)
                else:
                    verdicts = await asyncio.to_thread(self._hear, batch)
            except VadProcessError as err:  # the process is started again at the next request
                _LOGGER.warning("%s: the VAD failed (%s); this audio goes to the model unsifted", self._client, err)
                verdicts = [(False, Heard(speech=True, possible_speech=True))] * len(batch)
            for samples, (silent_long, heard) in zip(batch, verdicts, strict=False):
                self._route(samples, silent_long, heard)
            if self.finishing:
                self._unheard[:0] = batch[len(verdicts) :]  # not reached: to the final pass, unsifted
                return
            if self._turn.endpointing and self._turn_ended():
                await self.finish()
                return
            self._step_or_speculate()

    def _hear(self, batch: list[np.ndarray]) -> list[tuple[bool, Heard]]:
        """On a worker thread: for each chunk until the stream is finishing, whether the model had heard all it will
        of a silence before it, and what the VAD heard in it (one listener at a time touches the activity)."""
        activity, kept = self._activity, self._turn.kept_silence_seconds
        verdicts = []
        for samples in batch:
            if self.finishing:
                break  # audio-stop waits for this: the rest goes to the final pass unsifted
            silent_long = activity.heard_speech and activity.silence_seconds >= kept
            verdicts.append((silent_long, activity.add(samples)))
        return verdicts

    def _route(self, samples: np.ndarray, silent_long: bool, heard: Heard) -> None:
        """Buffer the samples for the model, or hold them back: silence past what the model hears of it."""
        silent_long = silent_long and self._holding
        # Possible speech in a held pause (a soft last word that Silero misses), or soft speech, goes to the model
        # with the pause, and so does everything after it until the speaker speaks as loud as before: the final
        # pass then hears what it would if nothing had been held back, however the stream ends. (Holding again
        # 0.3 s after the soft word left the transcript of a server holding nothing back in 6 of 40 soft last
        # words, 4 of them a word short: the demo model needs the room after a soft word; script/benchmark
        # soft-tail.)
        if heard.speech or (silent_long and heard.possible_speech):
            if self._speculation is not None:
                _LOGGER.debug(
                    "%s: %s; the early final pass is thrown away",
                    self._client,
                    "speech resumed" if heard.speech else "possible speech in the pause",
                )
                self._speculation.cancel()
                self._speculation = None
            if heard.speech and not heard.soft:
                # Speech as loud as the speaker's: the sparing goes on (the onset of a word that resumes a pause is
                # possible speech before Silero calls it speech; it ended the sparing in 73 of 100 paused commands,
                # and with it the early pass: those turns waited the longer silence, 1354 ms at the median).
                self._holding = True
            elif silent_long:  # possible speech, or soft speech, after a pause the model was spared
                self._holding = False
            self._pending += self._held  # the pause goes to the model after all, in order
            self._held.clear()
        elif silent_long:
            self._held.append(samples)
            return
        self._pending.append(samples)

    @property
    def _held_samples(self) -> int:
        return sum(part.shape[0] for part in self._held)

    def _step_or_speculate(self) -> None:
        """Start a step on buffered audio; or, once the model has heard all it will of the silence, the final pass."""
        if not self._speech_detected or not (self._step_task is None or self._step_task.done()):
            return  # a step that ends calls this again
        if self._pending:
            self._step_task = asyncio.create_task(self._run_steps())
        elif self._held and self._turn.speculate and self._speculation is None:
            # Nothing is left to feed: the final pass at audio-stop would hear just what the model has.
            self._speculation = self._backend.executor.submit_with_priority(EARLY, self._session.speculate)
            self._speculation.add_done_callback(self._retrieve)
            _LOGGER.debug("%s: the speaker is silent: the final pass starts early", self._client)

    def _retrieve(self, task: Future[Speculation | None]) -> None:
        """A failed speculation is logged here (the final pass runs normally then), not as never retrieved."""
        if not task.cancelled() and task.exception() is not None:
            _LOGGER.warning("%s: the early final pass failed: %r", self._client, task.exception())

    def _turn_ended(self) -> bool:
        """With endpointing: whether the speaker has finished, or never started within the bound."""
        activity = self._activity
        if not activity.heard_speech:
            return activity.samples >= self._turn.no_speech_seconds * SAMPLE_RATE
        if self._speculation is not None and not self._speculation.done():
            return False  # what the speaker would get decides how long a silence ends the turn: wait for it
        return activity.silence_seconds >= self._turn.silence_to_end(self._standing_speculation())

    def _standing_speculation(self) -> Speculation | None:
        """The early final pass's transcript, once it is done and still stands."""
        task = self._speculation
        if task is None or not task.done() or task.cancelled() or task.exception() is not None:
            return None
        return task.result()

    async def _run_steps(self) -> None:
        """Feed buffered audio to the session until none is left or the stream ends, sending committed text.

        Each step takes all the audio that came during the one before, so a slow machine
        streams at its own pace; once the stream is finishing, what is left goes to the final pass.
        """
        while self._pending and not self.finishing:
            audio = np.concatenate(self._pending)
            self._pending.clear()
            self._fed_samples += audio.shape[0]
            try:
                self._step = self._backend.executor.submit_stepwise(STEP, self._session.feed_stepwise, audio)
                delta = await asyncio.wrap_future(self._step)
            except Exception:
                await self._fail()
                return
            try:
                await self._send_text(delta)
            except OSError:
                return  # the client is gone; the handler logs it and drops the stream
        if not self.finishing:
            self._step_or_speculate()

    async def finish(self) -> None:
        """Send the final transcript; runs once per stream, whoever asks first, and returns once it is sent (a
        second caller, audio-stop after the server ended the turn, waits for it: the client's next request is
        answered after the transcript)."""
        if self.finishing:
            await self._ended.wait()
            return
        self.finishing = True
        try:
            await self._finish()
        finally:
            self._ended.set()

    async def _finish(self) -> None:
        self._session.stop_early()  # a step under way ends at its next token
        if self._watchdog is not asyncio.current_task():
            self._watchdog.cancel()
        await self.until_heard()  # the VAD's chunk under way (it stops there), no more
        if self._step is not None:
            # A step still queued behind other streams' runs now, as the final pass would: told that the speaker
            # has finished, it only adds its audio for the final pass (at 16 streams it waited up to 370 ms).
            self._backend.executor.promote(self._step)
        if self._step_task is not None:
            await asyncio.wait([self._step_task])
        if self.done:
            return  # dropped, or failed, meanwhile
        if self._unheard:
            # Audio the VAD never reached (a client faster than real time) goes to the final pass unsifted, and
            # so does the pause held before it, so the model hears the stream whole; no early pass covers it.
            if self._speculation is not None:
                self._speculation.cancel()
                self._speculation = None
            self._pending += self._held + self._unheard
            self._held.clear()
            self._unheard.clear()
        if self._received_samples == 0:
            _LOGGER.warning("%s: empty audio stream; sending an empty transcript", self._client)
        elif not self._speech_detected:
            _LOGGER.info("%s: no speech (no 10 ms frame above %.0f dBFS); not decoded", self._client, SPEECH_LEVEL_DBFS)
        pending = np.concatenate(self._pending) if self._pending else None
        self._pending.clear()
        # The held pause (silence or steady noise only: possible speech would have been fed) is not heard.
        self._fed_samples = self._received_samples - self._held_samples
        try:
            if not self._speech_detected:
                final: FinalDelta | None = FinalDelta(text="", language=self._options.language or "")
            else:
                final = await self._speculated()
            if final is None:
                # Straight into the final pass, ahead of other streams' queued steps: the user is waiting.
                future = self._backend.executor.submit_stepwise(FINAL, self._session.finish_stepwise, pending)
                final = await asyncio.wrap_future(future)
        except Exception:
            await self._fail()
            return
        if self.done:
            return
        self.done = True
        language = language_code(final.language) if final.language else None
        await self._send_text(final.text, language, final=True)
        _LOGGER.info(
            "%s: transcript (%s, %.2f s heard of %.2f s): %s",
            self._client,
            final.language or "?",
            self._fed_samples / SAMPLE_RATE,
            self._received_samples / SAMPLE_RATE,
            self._sent,
        )
        if not self._sent and self._speech_detected and self._options.context:
            # The demo model of 2026-12-05 returned nothing for commands with 20 similar names in its context.
            _LOGGER.warning(
                "%s: the model wrote nothing for the sound it heard, with %d bytes of names and terms in its context; "
                "if this repeats, the context may be the cause",
                self._client,
                len(self._options.context.encode()),
            )
        await self._send(Transcript(text=self._sent, language=language).event())
        await self._send(TranscriptStop().event())

    async def _speculated(self) -> FinalDelta | None:
        """The final delta from the early final pass, when it stands: the model has heard nothing since (speech
        would have thrown it away), and it extends the text sent. None: run the final pass now."""
        task = self._speculation
        if task is None:
            return None
        if not task.done() and not self._backend.executor.is_running(task):
            # Still queued (other streams kept the thread busy): the final pass is the same pass on the same
            # audio, and it joins the batch under way at once, where the early one would wait for it to end.
            task.cancel()
            return None
        self._backend.executor.promote(task)  # the user now waits for it
        try:
            speculation = await asyncio.wrap_future(task)
        except Exception:  # logged by _retrieve; the final pass runs normally
            return None
        if speculation is None or not speculation.text.startswith(self._sent):
            return None
        return FinalDelta(text=speculation.text[len(self._sent) :], language=speculation.language)

    async def until_heard(self) -> None:
        """Wait for the VAD batch under way, if any: after it, nothing of this stream touches the detector."""
        listener = self._listener
        if listener is not None and listener is not asyncio.current_task():
            await asyncio.wait([listener])

    def drop(self) -> None:
        """Stop the stream without a transcript: the client left, or started another."""
        self.finishing = self.done = True
        self._ended.set()
        # A step under way ends at its next token: it would hold the shared inference thread
        # for nothing (2-3 s of CPU on the 0.6B shape).
        self._session.stop_early()
        for task in (self._step_task, self._watchdog, self._speculation):
            if task is not None and task is not asyncio.current_task():
                task.cancel()

    async def _fail(self) -> None:
        """A model call failed: a bug or an exhausted device. Logged with its traceback; the client is told."""
        _LOGGER.exception("%s: transcription failed", self._client)
        self.drop()
        try:
            await self._send(
                Error(text="Transcription failed; see the server log", code="transcription-failed").event()
            )
        except OSError:
            pass  # the client is gone too

    async def _send_text(self, delta: str, language: str | None = None, final: bool = False) -> None:
        if not self._started:
            self._started = True
            forced = language or (language_code(self._options.language) if self._options.language else None)
            await self._send(TranscriptStart(language=forced).event())
        if not delta:
            return
        self._sent += delta
        await self._send(TranscriptChunk(text=delta).event())
        if self._emission_log is not None:
            await self._log_emission(delta, final)

    async def _log_emission(self, delta: str, final: bool) -> None:
        """Write the units sent, off the event loop; a failed write stops this stream's log, nothing else."""
        assert self._emission_log is not None
        try:
            await asyncio.to_thread(self._emission_log.write, delta, self._fed_samples / SAMPLE_RATE, final)
        except OSError as err:
            _LOGGER.warning(
                "%s: cannot write the emission log (%s); not logging this stream further", self._client, err
            )
            self._emission_log = None

    async def _watch_for_silence(self) -> None:
        """Finish a stream whose client stopped sending audio without audio-stop."""
        loop = asyncio.get_running_loop()
        timeout = self._limits.audio_timeout_seconds
        while (remaining := self._last_audio_time + timeout - loop.time()) > 0:
            await asyncio.sleep(remaining)
        if not self.finishing:
            _LOGGER.warning(
                "%s: no audio for %.1f s and no audio-stop; sending the transcript so far", self._client, timeout
            )
            try:
                await self.finish()
            except OSError:
                pass  # the client is gone; the handler logs it
