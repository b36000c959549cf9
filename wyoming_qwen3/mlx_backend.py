"""The mlx backend: Qwen3-ASR on Apple Silicon through ``mlx-qwen3-asr``.

Each second of new audio, the bounded buffer is transcribed again with word
timestamps and words are committed by local agreement. When the buffer grows
past ``max_buffer_seconds`` its front is cut at the end of the last committed
word, so each inference stays bounded and timestamps keep their offset.

``mlx_qwen3_asr.Session`` also has a native streaming API (``init_streaming``,
``feed_audio``, ``finish_streaming``). It is not used: it re-decodes in 2 s
chunks and reports a ``stable_text`` string without word times, whose
append-only guarantee could not be checked without a Mac; the ``transcribe``
path below gives word times and runs through the same committer that the tests
exercise on Linux, so both backends stream the same way.
"""

from __future__ import annotations

import logging
import platform
import sys
from typing import Any, Protocol

import numpy as np

from .backend import Backend, FinalText, SessionOptions, StreamingSession, TimedWord
from .languages import LANGUAGE_NAMES
from .local_agreement import LocalAgreement, comparable
from .qwen import SAMPLE_RATE

_LOGGER = logging.getLogger(__name__)

#: A word of a trimmed-off committed word may be heard again at the cut; one
#: that starts this close to the cut and repeats the last committed word is dropped.
_REPEAT_WINDOW_SECONDS = 0.5


class TranscribingSession(Protocol):
    """What this backend needs of ``mlx_qwen3_asr.Session``."""

    def transcribe(
        self, audio: Any, *, context: str = "", language: str | None = None, return_timestamps: bool = False
    ) -> Any: ...


def timed_words(result: Any, offset: float, duration: float) -> list[TimedWord]:
    """Words of a transcription result, timed from the utterance start.

    Segments (``{text, start, end}``) may hold several words; their time is
    shared out evenly. Without segments, the text's words share the buffer.
    """
    segments = getattr(result, "segments", None)
    if not segments:
        segments = [{"text": getattr(result, "text", "") or "", "start": 0.0, "end": duration}]
    words: list[TimedWord] = []
    for segment in segments:
        parts = str(segment.get("text", "")).split()
        start, end = float(segment.get("start", 0.0)), float(segment.get("end", 0.0))
        step = (end - start) / len(parts) if parts else 0.0
        for index, part in enumerate(parts):
            words.append(TimedWord(part, offset + start + index * step, offset + start + (index + 1) * step))
    return words


class MlxSession(StreamingSession):
    """One utterance over a bounded, trimmed buffer."""

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
        #: The latest hypothesis of the buffer; None before the first inference.
        self._hypothesis: list[TimedWord] | None = None
        self._committed_times: list[TimedWord] = []
        self._language = options.language or ""
        self._sent_any = False

    @property
    def buffer_seconds(self) -> float:
        return self._buffer.shape[0] / SAMPLE_RATE

    @property
    def offset_seconds(self) -> float:
        return self._offset

    @property
    def committed_words(self) -> list[TimedWord]:
        """Committed words with their times, for logs and tests."""
        return list(self._committed_times)

    def _transcribe_buffer(self) -> list[TimedWord]:
        self._unheard = 0
        result = self._asr.transcribe(
            self._buffer, context=self._options.context, language=self._options.language, return_timestamps=True
        )
        self._language = getattr(result, "language", "") or self._language
        words = timed_words(result, self._offset, self.buffer_seconds)
        if self._offset > 0 and self._agreement.in_buffer == 0 and self._committed_times:
            # Right after a cut, the model may hear the end of the last committed word again.
            last = self._committed_times[-1]
            while (
                words
                and words[0].start < self._offset + _REPEAT_WINDOW_SECONDS
                and (words[0].end <= self._offset or comparable(words[0].text) == comparable(last.text))
            ):
                words = words[1:]
        self._hypothesis = words
        return words

    def _commit(self, words: list[TimedWord]) -> list[str]:
        self._committed_times.extend(words)
        return [w.text for w in words]

    def _delta(self, words: list[str]) -> str:
        """Committed words as an append-only delta of the transcript (words joined by spaces)."""
        delta = " ".join(words)
        if delta and self._sent_any:
            delta = " " + delta
        self._sent_any = self._sent_any or bool(delta)
        return delta

    def feed(self, audio: np.ndarray) -> str:
        return self._delta(self._feed_words(audio))

    def _feed_words(self, audio: np.ndarray) -> list[str]:
        self._buffer = np.concatenate([self._buffer, audio.astype(np.float32, copy=False)])
        self._unheard += audio.shape[0]
        if self._unheard < self._step_samples:
            return []
        words = self._transcribe_buffer()
        texts = self._agreement.update([w.text for w in words])
        settled = self._agreement.in_buffer - len(texts)
        committed = self._commit(words[settled : settled + len(texts)])
        while self._buffer.shape[0] > self._max_buffer_samples:
            offset = self._offset
            committed += self._trim()
            if self._offset == offset:
                break  # a word spans the cut point: try again next step
        return committed

    def _trim(self) -> list[str]:
        """Cut the buffer's front at the end of its last committed word.

        When nothing in the buffer has been agreed on, the words of its first
        half are committed as they stand (or, where none ends there, the
        silence before the first word is dropped), so that no word is lost and
        the buffer stays bounded.
        """
        forced: list[str] = []
        if self._agreement.in_buffer > 0:
            cut_time = self._committed_times[-1].end
        else:
            half = self._offset + self.buffer_seconds / 2
            heard = self._hypothesis or []
            words = [w for w in heard if w.end <= half]
            if words:
                self._agreement.force_commit([w.text for w in words])
                forced = self._commit(words)
                cut_time = words[-1].end
            else:
                # Only silence before the first word heard (if any): drop it.
                cut_time = min([half] + [w.start for w in heard[:1]])
        cut = max(0, min(int(round((cut_time - self._offset) * SAMPLE_RATE)), self._buffer.shape[0]))
        self._buffer = self._buffer[cut:]
        self._offset += cut / SAMPLE_RATE
        # The committed words were the hypothesis' first words; their audio is gone.
        dropped = self._agreement.in_buffer
        self._hypothesis = (self._hypothesis or [])[dropped:]
        self._agreement.trim(dropped)
        _LOGGER.debug("Trimmed buffer at %.2f s; %.2f s left", self._offset, self.buffer_seconds)
        return forced

    def finish(self) -> FinalText:
        return FinalText(text=self._delta(self._finish_words()), language=self._language)

    def _finish_words(self) -> list[str]:
        if self._buffer.shape[0] == 0:
            return []
        words = self._hypothesis
        if words is None or self._unheard:
            words = self._transcribe_buffer()
        settled = self._agreement.in_buffer
        rest = self._agreement.flush([w.text for w in words])
        self._commit(words[settled:])
        return rest


class MlxBackend(Backend):
    """``mlx_qwen3_asr.Session`` behind the backend interface."""

    def __init__(self, model: str, asr: TranscribingSession | None = None) -> None:
        super().__init__("mlx")
        if asr is None:
            asr = self.executor.submit(_load_session, model).result()
        self._asr = asr
        info = getattr(asr, "model_info", None) or {}
        self._languages = list(info.get("support_languages") or LANGUAGE_NAMES.values())

    @property
    def supported_languages(self) -> list[str]:
        return self._languages

    def create_session(self, options: SessionOptions) -> MlxSession:
        return MlxSession(self._asr, options)


class MlxUnavailableError(RuntimeError):
    """The mlx backend was asked for where it cannot run."""


def is_apple_silicon() -> bool:
    return sys.platform == "darwin" and platform.machine() == "arm64"


def mlx_available() -> bool:
    """True on Apple Silicon with ``mlx-qwen3-asr`` installed."""
    if not is_apple_silicon():
        return False
    try:
        import mlx_qwen3_asr  # noqa: F401
    except ImportError:
        return False
    return True


def check_mlx_available() -> None:
    """Raise MlxUnavailableError, naming the fix, when mlx cannot be used here."""
    if not mlx_available():
        where = "this Mac" if is_apple_silicon() else f"{sys.platform}/{platform.machine()}"
        raise MlxUnavailableError(
            "the mlx backend needs macOS on Apple Silicon with the 'mlx' extra "
            f"(pip install 'wyoming-qwen3[mlx]'), which {where} does not have; use --backend simulkv"
        )


def _load_session(model: str) -> TranscribingSession:
    # Loaded on the inference thread, which then owns the model for every call.
    import mlx.core as mx
    import mlx_qwen3_asr

    return mlx_qwen3_asr.Session(model, dtype=mx.float16)
