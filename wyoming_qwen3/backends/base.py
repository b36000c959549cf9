"""The interface every speech backend implements.

A backend loads one model and makes sessions; a session is one utterance. The
handler gives a session audio (16 kHz mono float32) and gets back the text it
has *committed*, as an append-only string delta it will never take back (whole
words, or whole characters in languages written without spaces; see
``text_units``). ``finish`` returns the rest: the deltas concatenate exactly to
the final transcript.
All session methods run on the backend's inference thread, never on the event
loop.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass

import numpy as np

from ..model.format import SAMPLE_RATE
from .inference import ForwardBatch, InferenceExecutor, Stepwise


@dataclass(frozen=True)
class SessionOptions:
    """What one utterance is transcribed with."""

    #: Qwen3-ASR language name ("English"), or None to detect it.
    language: str | None = None
    #: Free text for the system prompt: names and terms that bias the spelling.
    context: str = ""


@dataclass(frozen=True)
class FinalDelta:
    """What ``finish`` returns: the text not returned before (a delta), and the language."""

    text: str
    #: Qwen3-ASR language name, forced or detected; '' when unknown.
    language: str


@dataclass(frozen=True)
class Speculation:
    """What ``speculate`` returns: the transcript if the speaker has finished, and how sure the model is of that."""

    #: The whole transcript (not a delta), as ``finish`` would make it on the same audio.
    text: str
    #: Qwen3-ASR language name, forced or detected; '' when unknown.
    language: str
    #: The probability the model gave the end of the text after its last token (None: not known).
    end_probability: float | None = None


class StreamingSession(ABC):
    """One utterance being transcribed while it is spoken."""

    @abstractmethod
    def feed(self, audio: np.ndarray) -> str:
        """Add samples; return the text newly committed, appended to what came before (maybe '')."""

    @abstractmethod
    def finish(self, audio: np.ndarray | None = None) -> FinalDelta:
        """The last samples, if any, and no more: return the rest of the transcript.

        Audio given here goes straight into the final pass; no non-final step runs on it.
        """

    def feed_stepwise(self, audio: np.ndarray) -> Stepwise[str]:
        """``feed``, yielding its forward passes for the inference thread to batch with other streams'
        (``inference``). By default it runs them itself."""
        return self.feed(audio)
        yield  # a generator that asks for no pass

    def finish_stepwise(self, audio: np.ndarray | None = None) -> Stepwise[FinalDelta]:
        """``finish``, yielding its forward passes as ``feed_stepwise`` does."""
        return self.finish(audio)
        yield

    def speculate(self, audio: np.ndarray | None = None) -> Speculation | None:
        """The final pass as if the speaker had finished (with ``audio`` added), leaving the session as it was.

        Run while the client streams the trailing silence, so that the transcript is ready
        at audio-stop. The committed text, caches and sent text are untouched: if speech
        resumes, streaming goes on as if this had not run. None: this backend cannot. It runs at
        ``EARLY`` priority and may raise ``Preempted`` between tokens (``InferenceExecutor.should_yield``).
        """
        return None

    def stop_early(self) -> None:
        """The speaker has finished and ``finish`` follows: a step under way may end at its next token.

        Called from another thread than the steps'. Text committed so far stays committed.
        By default nothing: a step runs to its end.
        """
        return


class Backend(ABC):
    """A loaded model that makes sessions."""

    def __init__(self, name: str, forward_batch: ForwardBatch | None = None, max_batch: int = 1) -> None:
        #: Shown in ``info`` and logs.
        self.name = name
        #: One inference at a time, final passes first; streams' passes batched by ``forward_batch`` (``inference``).
        self.executor = InferenceExecutor(forward_batch=forward_batch, max_batch=max_batch)

    @property
    @abstractmethod
    def supported_languages(self) -> list[str]:
        """Qwen3-ASR names of the languages this model speaks."""

    @abstractmethod
    def create_session(self, options: SessionOptions) -> StreamingSession:
        """Start transcribing one utterance."""

    def prepare(self, options: SessionOptions) -> None:
        """Do now what the next session with ``options`` would do first (a new context's prompt), so that it starts
        at once. By default nothing."""
        return

    def warm_up(self) -> None:
        """Transcribe 1 s of faint noise once, so the first command pays no lazy initialisation."""
        session = self.create_session(SessionOptions())
        session.feed(np.random.default_rng(0).normal(0, 0.01, SAMPLE_RATE).astype(np.float32))
        session.finish()
