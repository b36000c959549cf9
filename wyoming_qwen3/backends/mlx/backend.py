"""The mlx backend: Qwen3-ASR on Apple Silicon through ``mlx-qwen3-asr``.

Each second of new audio, the buffer is transcribed again and its text units
(words, or characters of scripts written without spaces) are committed by
local agreement. The text is the model's own ``result.text``: punctuation,
digits ("2:30") and Chinese or Japanese without spaces, as the model wrote them.

No word timestamps are asked for: ``return_timestamps=True`` makes the library
build its forced aligner (``Qwen/Qwen3-ForcedAligner-0.6B``), a second 0.6B
model fetched from the hub on first use and run over the whole buffer every
step, and the aligner's words lose punctuation and split CJK per character.
Timing is needed only to cut a long buffer, so the cut is made where the audio
is quietest (a pause), and the text of the audio before the cut comes from one
transcription of that part alone:

- per step: one transcription of the buffer (at most ``max_buffer_seconds``);
- per cut (a buffer longer than ``max_buffer_seconds``): one transcription of
  the part cut off, whose units not yet committed are committed then.

Matched against the source of mlx-qwen3-asr 0.4 (``Session.transcribe``,
``parse_asr_output``, ``join_text_parts``; moona3k/mlx-qwen3-asr at 03d1ab9).
``Session``'s own streaming API (``init_streaming``/``feed_audio``) is not used:
its ``stable_text`` could not be checked to be append-only without a Mac.
"""

from __future__ import annotations

import copy
import logging
from typing import Any, Protocol

import numpy as np

from ...model.format import SAMPLE_RATE, SAMPLES_PER_FRAME, without_undecoded
from ...model.languages import LANGUAGE_NAMES
from ...model.text_units import joined, split_units
from ..base import Backend, FinalDelta, SessionOptions, Speculation, StreamingSession
from .local_agreement import LocalAgreement, agreed_length, comparable

_LOGGER = logging.getLogger(__name__)

#: What mlx-qwen3-asr reports as the language when it has none.
_NO_LANGUAGE = ("", "unknown")


class TranscribingSession(Protocol):
    """What this backend needs of ``mlx_qwen3_asr.Session``."""

    def transcribe(self, audio: Any, *, context: str = "", language: str | None = None) -> Any: ...


class MlxSession(StreamingSession):
    """One utterance over a bounded buffer, cut at pauses."""

    def __init__(
        self,
        asr: TranscribingSession,
        options: SessionOptions,
        step_seconds: float = 1.0,
        max_buffer_seconds: float = 15.0,
    ) -> None:
        self._asr = asr
        self._options = options
        self._step_samples = int(step_seconds * SAMPLE_RATE)
        self._max_buffer_samples = int(max_buffer_seconds * SAMPLE_RATE)
        self._buffer = np.zeros(0, dtype=np.float32)
        #: Seconds of audio cut from the front of the buffer so far.
        self._offset = 0.0
        self._unheard = 0
        self._agreement = LocalAgreement()
        #: The latest hypothesis of the buffer, in units; None when the buffer has not been heard.
        self._hypothesis: list[str] | None = None
        self._language = options.language or ""
        self._sent = ""

    @property
    def offset_seconds(self) -> float:
        return self._offset

    def _transcribe(self, audio: np.ndarray) -> list[str]:
        result = self._asr.transcribe(audio, context=self._options.context, language=self._options.language)
        language = str(getattr(result, "language", "") or "")
        if language not in _NO_LANGUAGE:
            self._language = language
        return split_units(without_undecoded(str(getattr(result, "text", "") or "")))  # each a whole transcription

    def _send(self, units: list[str]) -> str:
        delta = joined(self._sent, units)
        self._sent += delta
        return delta

    def _append(self, audio: np.ndarray) -> None:
        self._buffer = np.concatenate([self._buffer, audio.astype(np.float32, copy=False)])
        self._unheard += audio.shape[0]

    def feed(self, audio: np.ndarray) -> str:
        self._append(audio)
        if self._unheard < self._step_samples:
            return ""
        self._unheard = 0
        self._hypothesis = self._transcribe(self._buffer)
        delta = self._send(self._agreement.update(self._hypothesis))
        if self._buffer.shape[0] > self._max_buffer_samples:
            delta += self._cut()
        return delta

    def _cut(self) -> str:
        """Cut the buffer at its quietest point between a third and two thirds of it.

        The part cut off is transcribed alone: its units after those already
        committed are committed now (their audio is leaving). Committed units
        beyond its text were heard after the cut, and stay committed in the
        buffer that is left.
        """
        length = self._buffer.shape[0]
        cut = quietest_point(self._buffer, length // 3, 2 * length // 3)
        head = self._agreement.after_cut(self._transcribe(self._buffer[:cut]))
        settled = self._agreement.settled
        agreed = agreed_length(settled, head)
        forced: list[str] = []
        straddled = None
        if agreed == len(settled):
            forced = head[agreed:]
        elif agreed == len(head) - 1 and comparable(settled[agreed]).startswith(comparable(head[agreed])):
            straddled = settled[agreed]  # the cut fell inside this committed unit
            agreed += 1
        elif agreed < len(head):
            _LOGGER.debug("The text before the cut, %r, differs from the committed %r", head, settled)
        self._agreement.restart(settled[agreed:], straddled)
        self._buffer = self._buffer[cut:]
        self._offset += cut / SAMPLE_RATE
        self._hypothesis = None  # what is left is heard on its own at the next step, or at finish
        _LOGGER.debug("Cut the buffer at %.2f s; %.2f s left", self._offset, self._buffer.shape[0] / SAMPLE_RATE)
        return self._send(forced)

    def speculate(self, audio: np.ndarray | None = None) -> Speculation:
        # The final pass on a copy: the buffer is replaced, never changed in place; the agreement is copied whole.
        twin = copy.copy(self)
        twin._agreement = copy.deepcopy(self._agreement)
        twin.finish(audio)
        return Speculation(twin._sent, twin._language)

    def finish(self, audio: np.ndarray | None = None) -> FinalDelta:
        if audio is not None:
            self._append(audio)
        if self._buffer.shape[0] == 0:
            return FinalDelta("", self._language)
        if self._hypothesis is None or self._unheard:
            self._hypothesis = self._transcribe(self._buffer)
        return FinalDelta(self._send(self._agreement.flush(self._hypothesis)), self._language)


def quietest_point(samples: np.ndarray, start: int, end: int, window_seconds: float = 0.1) -> int:
    """The sample in ``[start, end)`` at the centre of the quietest ``window_seconds`` (a pause to cut at)."""
    start, end = max(0, start), min(samples.shape[0], end)
    frames = (end - start) // SAMPLES_PER_FRAME
    if frames < 1:
        return start
    energy = np.mean(
        np.square(samples[start : start + frames * SAMPLES_PER_FRAME].reshape(frames, -1), dtype=np.float64), 1
    )
    width = max(1, min(frames, int(window_seconds * 100)))
    smoothed = np.convolve(energy, np.ones(width), mode="valid")
    best = int(np.argmin(smoothed))
    return start + (best * SAMPLES_PER_FRAME) + width * SAMPLES_PER_FRAME // 2


class MlxBackend(Backend):
    """``mlx_qwen3_asr.Session`` behind the backend interface."""

    def __init__(self, model: str, asr: TranscribingSession | None = None) -> None:
        super().__init__("mlx")
        if asr is None:
            # Loaded on the inference thread, which then owns the model for every call: MLX 0.31+
            # binds lazily built arrays to the thread that made them (mlx-qwen3-asr issue #16).
            asr = self.executor.submit(_load_session, model).result()
        self._asr = asr
        info = getattr(asr, "model_info", None) or {}
        self._languages = list(info.get("support_languages") or LANGUAGE_NAMES.values())

    @property
    def supported_languages(self) -> list[str]:
        return self._languages

    def create_session(self, options: SessionOptions) -> MlxSession:
        return MlxSession(self._asr, options)


def _load_session(model: str) -> TranscribingSession:
    import mlx.core as mx
    import mlx_qwen3_asr

    # float16 activations; a quantized checkpoint (4/8-bit) keeps its packed weights.
    session: TranscribingSession = mlx_qwen3_asr.Session(model, dtype=mx.float16)
    return session
