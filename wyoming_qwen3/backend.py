"""The interface every speech backend implements.

A backend loads one model and makes sessions; a session is one utterance. The
handler gives a session audio (16 kHz mono float32) and gets back the words it
has *committed*: words it will never take back. ``finish`` flushes the rest.
All session methods run on the backend's inference thread, never on the event
loop.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class SessionOptions:
    """What one utterance is transcribed with."""

    #: Qwen3-ASR language name ("English"), or None to detect it.
    language: str | None = None
    #: Free text for the system prompt: names and terms that bias the spelling.
    context: str = ""


@dataclass(frozen=True)
class TimedWord:
    """A word and its time in the utterance, in seconds from the first sample."""

    text: str
    start: float
    end: float


@dataclass(frozen=True)
class FinalWords:
    """What ``finish`` returns: the words not committed before, and the language."""

    words: list[str]
    #: Qwen3-ASR language name, forced or detected; '' when unknown.
    language: str


class StreamingSession(ABC):
    """One utterance being transcribed while it is spoken."""

    @abstractmethod
    def feed(self, audio: np.ndarray) -> list[str]:
        """Add samples; return the words newly committed (maybe none)."""

    @abstractmethod
    def finish(self) -> FinalWords:
        """No more audio: return every word not yet committed."""


class Backend(ABC):
    """A loaded model that makes sessions."""

    def __init__(self, name: str) -> None:
        #: Shown in ``info`` and logs.
        self.name = name
        #: One inference at a time: torch already spreads one forward pass over
        #: all cores (or the GPU), so two sessions at once only slow both down.
        self.executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="inference")

    @property
    @abstractmethod
    def supported_languages(self) -> list[str]:
        """Qwen3-ASR names of the languages this model speaks."""

    @abstractmethod
    def create_session(self, options: SessionOptions) -> StreamingSession:
        """Start transcribing one utterance."""
