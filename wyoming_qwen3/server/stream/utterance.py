"""One utterance on a connection, from ``audio-start`` to the final transcript: the turn's decisions carried out.

The decisions are ``turn.Turn``'s; this does what they say, with the tasks and
threads they need. Audio is converted here and handed to the turn; the VAD
(``speech_activity``) hears it on a worker thread, at most half a second
behind, and each chunk goes to the model or is held back as the turn says.
Streaming steps run on the backend's inference thread while more audio
arrives, each taking all the audio that came during the one before, and their
committed text goes out as ``transcript-chunk`` deltas (``transcript``). The
early final pass runs there too, behind every other stream's work. The final
transcript is sent once: at ``audio-stop``, when the server ends the turn
itself (endpointing), at the cap, or when the client stops sending audio.
"""

from __future__ import annotations

import asyncio
import logging
from concurrent.futures import Future

import numpy as np
from wyoming.audio import AudioChunk
from wyoming.error import Error

from ...backends.base import Backend, FinalDelta, SessionOptions, Speculation, StreamingSession
from ...backends.inference import EARLY, FINAL, STEP
from ...model.format import SAMPLE_RATE
from ...model.languages import language_code
from .audio import SPEECH_LEVEL_DBFS, AudioNormalizer
from .emission_log import EmissionLog
from .silero import VadProcessError
from .speech_activity import SpeechActivity
from .transcript import Send, TranscriptSender
from .turn import (
    UNSIFTED,
    Action,
    EndReason,
    FinalSource,
    StreamLimits,
    Turn,
    TurnSettings,
    Verdict,
    final_from_early_pass,
)

_LOGGER = logging.getLogger(__name__)

__all__ = ["Send", "Utterance"]

#: The most audio the VAD takes in one go off the event loop (Silero: about 13 ms of CPU); audio-stop stops it after
#: the chunk under way.
_VAD_BATCH_SAMPLES = SAMPLE_RATE // 2


class Utterance:
    """One stream in flight: its turn, its session, the audio on its way to the model, and its tasks."""

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
        loop = asyncio.get_running_loop()
        self._loop = loop
        self._session = session
        self._normalizer = normalizer
        self._options = options
        self._backend = backend
        self._client = client
        self._turn = Turn(turn or TurnSettings(), limits, last_audio_at=loop.time())
        self._transcript = TranscriptSender(
            send,
            client,
            forced_language=language_code(options.language) if options.language else None,
            emission_log=emission_log,
        )
        #: Where speech stops and starts; touched by one listener at a time, on a worker thread.
        self._activity = activity
        #: Audio the VAD has not reached yet; audio held back from the model; audio given to it, not yet stepped on.
        self._unheard: list[np.ndarray] = []
        self._held: list[np.ndarray] = []
        self._fed: list[np.ndarray] = []
        #: Samples given to the session: what its committed text was decided on.
        self._fed_samples = 0
        #: Set once the final transcript went out, or the stream was dropped.
        self.done = False
        #: Set once finish has returned, or the stream was dropped.
        self._answered = asyncio.Event()
        #: The task running the VAD over the audio, the one running steps, and the step it waits for.
        self._listener: asyncio.Task[None] | None = None
        self._step_task: asyncio.Task[None] | None = None
        self._step: Future[str] | None = None
        #: The final pass started early, while the turn is in its EARLY_PASS phase: on the inference thread behind
        #: every step and final pass, cancelled when the turn throws it away or the client leaves.
        self._early_pass: Future[Speculation | None] | None = None
        self._watchdog = asyncio.create_task(self._watch_for_silence())

    @property
    def finishing(self) -> bool:
        """Whether the turn has ended (the final transcript is due, or the stream was dropped)."""
        return self._turn.ended

    @property
    def mid_stream(self) -> bool:
        """Whether the stream was still taking audio."""
        return not self._turn.ended

    async def add(self, chunk: AudioChunk) -> None:
        """Take one chunk (dropped quietly once the turn has ended); raises AudioFormatError for audio it cannot
        read."""
        if self._turn.ended:
            return
        samples = self._turn.take(self._normalizer.convert(chunk), self._loop.time())
        if samples.shape[0]:
            self._unheard.append(samples)
            if self._listener is None or self._listener.done():
                self._listener = asyncio.create_task(self._listen())
        if self._turn.at_cap:
            await self.finish(EndReason.CAP)

    # -- the VAD, and what its verdicts say ----------------------------------------------------------------------

    async def _listen(self) -> None:
        """Silero over the audio as it comes, off the event loop; then each chunk where the turn says.

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
        while self._unheard and not self._turn.ended:
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
                verdicts = [UNSIFTED] * len(batch)
            for samples, verdict in zip(batch, verdicts, strict=False):
                self._carry_out(self._turn.route(verdict), [samples])
            if self._turn.ended:
                self._unheard[:0] = batch[len(verdicts) :]  # not reached: to the final pass, unsifted
                return
            if (reason := self._turn.endpoint(self._activity.samples, self._activity.silence_seconds)) is not None:
                await self.finish(reason)
                return
            self._start_next_work()

    def _hear(self, batch: list[np.ndarray]) -> list[Verdict]:
        """On a worker thread: the VAD's verdict on each chunk until the turn has ended (audio-stop waits for this:
        the rest goes to the final pass unsifted)."""
        activity, verdicts = self._activity, []
        for samples in batch:
            if self._turn.ended:
                break
            silence = activity.silence_seconds  # before this chunk
            verdicts.append(Verdict(activity.add(samples), silence_before=silence))
        return verdicts

    def _carry_out(self, actions: tuple[Action, ...], chunks: list[np.ndarray]) -> None:
        """Do what the turn said of ``chunks``: feed, hold back, release the held audio, throw the early pass away."""
        for action in actions:
            if action is Action.DISCARD_EARLY_PASS:
                _LOGGER.debug("%s: the model hears more; the early final pass is thrown away", self._client)
                self._cancel_early_pass()
            elif action is Action.RELEASE:
                self._fed += self._held  # the pause goes to the model after all, in order
                self._held.clear()
            elif action is Action.HOLD:
                self._held += chunks
            elif action is Action.FEED:
                self._fed += chunks

    def _cancel_early_pass(self) -> None:
        if self._early_pass is not None:
            self._early_pass.cancel()
            self._early_pass = None

    # -- the inference thread ----------------------------------------------------------------------------------

    def _start_next_work(self) -> None:
        """A step on the audio fed, or the early final pass, where the turn says one is due."""
        step_running = self._step_task is not None and not self._step_task.done()
        work = self._turn.next_work(bool(self._fed), step_running)
        if work is Action.STEP:
            self._step_task = asyncio.create_task(self._run_steps())
        elif work is Action.EARLY_PASS:
            future = self._backend.executor.submit_with_priority(EARLY, self._session.speculate)
            self._early_pass = future
            future.add_done_callback(self._on_early_pass_done)
            _LOGGER.debug("%s: the speaker is silent: the final pass starts early", self._client)

    def _on_early_pass_done(self, future: Future[Speculation | None]) -> None:
        """On the inference thread (or whichever cancelled it): the rest on the event loop."""
        try:
            self._loop.call_soon_threadsafe(self._early_pass_finished, future)
        except RuntimeError:  # the loop has closed: no one waits for this stream any more
            pass

    def _early_pass_finished(self, future: Future[Speculation | None]) -> None:
        """On the event loop: the turn is told what the early pass gave; a failed one is logged here (the final pass
        runs normally then), not as never retrieved."""
        failed = not future.cancelled() and future.exception() is not None
        if failed:
            _LOGGER.warning("%s: the early final pass failed: %r", self._client, future.exception())
        if future is self._early_pass:
            self._turn.early_pass_finished(None if failed or future.cancelled() else future.result())

    async def _run_steps(self) -> None:
        """Step on the audio fed until none is left or the turn ends, sending committed text.

        Each step takes all the audio that came during the one before, so a slow machine
        streams at its own pace; once the turn has ended, what is left goes to the final pass.
        """
        while self._fed and not self._turn.ended:
            audio = np.concatenate(self._fed)
            self._fed.clear()
            self._fed_samples += audio.shape[0]
            try:
                self._step = self._backend.executor.submit_stepwise(STEP, self._session.feed_stepwise, audio)
                delta = await asyncio.wrap_future(self._step)
            except Exception:
                await self._fail()
                return
            try:
                await self._transcript.add(delta, self._fed_samples / SAMPLE_RATE)
            except OSError:
                return  # the client is gone; the handler logs it and drops the stream
        self._start_next_work()

    # -- the end ------------------------------------------------------------------------------------------------

    async def finish(self, reason: EndReason = EndReason.AUDIO_STOP) -> None:
        """End the turn and send the final transcript; runs once per stream, whoever asks first, and returns once it
        is sent (a second caller, audio-stop after the server ended the turn, waits for it: the client's next
        request is answered after the transcript)."""
        if not self._turn.end(reason):
            await self._answered.wait()
            return
        if reason is EndReason.CAP:
            cap = self._turn.limits.max_audio_seconds
            _LOGGER.warning(
                "%s: stream passed the %.0f s cap; sending the transcript of the first %.0f s", self._client, cap, cap
            )
        elif reason is EndReason.AUDIO_TIMEOUT:
            _LOGGER.warning(
                "%s: no audio for %.1f s and no audio-stop; sending the transcript so far",
                self._client,
                self._turn.limits.audio_timeout_seconds,
            )
        try:
            await self._finish()
        finally:
            self._answered.set()

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
            self._carry_out(self._turn.release_unheard(), self._unheard)
            self._unheard = []
        received = self._turn.received_samples
        if received == 0:
            _LOGGER.warning("%s: empty audio stream; sending an empty transcript", self._client)
        source = self._turn.final_source
        if received and source is FinalSource.NOTHING_TO_DECODE:
            _LOGGER.info("%s: no speech (no 10 ms frame above %.0f dBFS); not decoded", self._client, SPEECH_LEVEL_DBFS)
        audio = np.concatenate(self._fed) if self._fed else None
        self._fed.clear()
        # The held pause (silence or steady noise only: possible speech would have been fed) is not heard.
        self._fed_samples = received - sum(part.shape[0] for part in self._held)
        try:
            final = await self._final(source, audio)
        except Exception:
            await self._fail()
            return
        if self.done:
            return
        self.done = True
        language = language_code(final.language) if final.language else None
        await self._transcript.add(final.text, self._fed_samples / SAMPLE_RATE, language, final=True)
        sent = self._transcript.sent
        _LOGGER.info(
            "%s: transcript (%s, %.2f s heard of %.2f s): %s",
            self._client,
            final.language or "?",
            self._fed_samples / SAMPLE_RATE,
            received / SAMPLE_RATE,
            sent,
        )
        if not sent and source is not FinalSource.NOTHING_TO_DECODE and self._options.context:
            # The demo model of 2026-12-05 returned nothing for commands with 20 similar names in its context.
            _LOGGER.warning(
                "%s: the model wrote nothing for the sound it heard, with %d bytes of names and terms in its context; "
                "if this repeats, the context may be the cause",
                self._client,
                len(self._options.context.encode()),
            )
        await self._transcript.close(language)

    async def _final(self, source: FinalSource, audio: np.ndarray | None) -> FinalDelta:
        """The rest of the transcript, from where the turn says: nothing, the early pass, or the final pass now."""
        if source is FinalSource.NOTHING_TO_DECODE:
            return FinalDelta(text="", language=self._options.language or "")
        if source is FinalSource.EARLY_PASS and (final := await self._from_early_pass()) is not None:
            return final
        # Straight into the final pass, ahead of other streams' queued steps: the user is waiting.
        future = self._backend.executor.submit_stepwise(FINAL, self._session.finish_stepwise, audio)
        return await asyncio.wrap_future(future)

    async def _from_early_pass(self) -> FinalDelta | None:
        """The final delta from the early pass, where it gives one (None: run the final pass now)."""
        task = self._early_pass
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
        except Exception:  # logged when it finished; the final pass runs normally
            return None
        return final_from_early_pass(speculation, self._transcript.sent)

    async def until_heard(self) -> None:
        """Wait for the VAD batch under way, if any: after it, nothing of this stream touches the detector."""
        listener = self._listener
        if listener is not None and listener is not asyncio.current_task():
            await asyncio.wait([listener])

    def drop(self) -> None:
        """Stop the stream without a transcript: the client left, or started another."""
        self._turn.end(EndReason.DROPPED)
        self.done = True
        self._answered.set()
        # A step under way ends at its next token: it would hold the shared inference thread
        # for nothing (2-3 s of CPU on the 0.6B shape).
        self._session.stop_early()
        for task in (self._step_task, self._watchdog, self._early_pass):
            if task is not None and task is not asyncio.current_task():
                task.cancel()

    async def _fail(self) -> None:
        """A model call failed: a bug or an exhausted device. Logged with its traceback; the client is told."""
        _LOGGER.exception("%s: transcription failed", self._client)
        self.drop()
        try:
            await self._transcript.send(
                Error(text="Transcription failed; see the server log", code="transcription-failed").event()
            )
        except OSError:
            pass  # the client is gone too

    async def _watch_for_silence(self) -> None:
        """End the turn of a client that stopped sending audio without audio-stop."""
        while not self._turn.timed_out(self._loop.time()):
            if self._turn.ended:
                return
            await asyncio.sleep(self._turn.idle_deadline - self._loop.time())
        try:
            await self.finish(EndReason.AUDIO_TIMEOUT)
        except OSError:
            pass  # the client is gone; the handler logs it
