"""Commit words on which consecutive hypotheses agree (local agreement, n=2).

Backends that re-transcribe a buffer get a new hypothesis of the whole buffer
each time. A word is committed once two hypotheses in a row agree on it and on
every word before it; committed words are never taken back, and the final
hypothesis supplies whatever was not committed.

When a backend trims the front of its buffer, the committed words whose audio
was cut no longer appear in hypotheses: ``trim`` says how many, and only the
committed words still in the buffer are compared.
"""

from __future__ import annotations

import string
from dataclasses import dataclass, field

_PUNCTUATION = str.maketrans("", "", string.punctuation + "。，、？！")


def comparable(word: str) -> str:
    """A word as hypotheses are compared: case and punctuation ignored ("Lights." == "lights")."""
    return word.casefold().translate(_PUNCTUATION)


def agreed_length(first: list[str], second: list[str]) -> int:
    """How many words at the start of both lists agree."""
    length = 0
    for a, b in zip(first, second, strict=False):
        if comparable(a) != comparable(b):
            break
        length += 1
    return length


@dataclass
class LocalAgreement:
    """Turns a sequence of buffer hypotheses into append-only committed words."""

    committed: list[str] = field(default_factory=list)
    #: How many of the last committed words are still in the buffer.
    in_buffer: int = 0
    _previous: list[str] = field(default_factory=list)

    @property
    def _committed_in_buffer(self) -> list[str]:
        return self.committed[len(self.committed) - self.in_buffer :]

    def update(self, hypothesis: list[str]) -> list[str]:
        """Take the next hypothesis of the buffer; return newly committed words."""
        previous, self._previous = self._previous, hypothesis
        settled = self._committed_in_buffer
        if agreed_length(hypothesis, settled) < len(settled):
            return []  # this hypothesis revised a committed word: wait for one that agrees
        agreed = agreed_length(previous, hypothesis)
        if agreed <= len(settled):
            return []
        new_words = hypothesis[len(settled) : agreed]
        self.committed.extend(new_words)
        self.in_buffer += len(new_words)
        return new_words

    def flush(self, hypothesis: list[str]) -> list[str]:
        """The final hypothesis of the buffer: return the words after the committed ones."""
        self._previous = hypothesis
        return hypothesis[self.in_buffer :]

    def trim(self, words: int) -> None:
        """The buffer lost the audio of its first ``words`` committed words."""
        words = min(words, self.in_buffer)
        self.in_buffer -= words
        self._previous = self._previous[words:]

    def force_commit(self, words: list[str]) -> None:
        """Commit words (of the buffer, after those committed) without agreement."""
        self.committed.extend(words)
        self.in_buffer += len(words)
