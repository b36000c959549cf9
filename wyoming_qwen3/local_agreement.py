"""Commit words on which consecutive hypotheses agree (local agreement, n=2).

Backends that re-transcribe a growing buffer get a new hypothesis of the whole
buffer each time. A word is committed once two hypotheses in a row agree on it
and on every word before it; committed words are never taken back, and the
final hypothesis supplies whatever was not committed.
"""

from __future__ import annotations

from dataclasses import dataclass, field


def common_prefix(first: list[str], second: list[str]) -> list[str]:
    """The longest run of equal words at the start of both lists."""
    length = 0
    for a, b in zip(first, second, strict=False):
        if a != b:
            break
        length += 1
    return first[:length]


@dataclass
class LocalAgreement:
    """Turns a sequence of hypotheses into append-only committed words."""

    committed: list[str] = field(default_factory=list)
    _previous: list[str] = field(default_factory=list)

    def update(self, hypothesis: list[str]) -> list[str]:
        """Take the next hypothesis of the whole buffer; return newly committed words."""
        agreed = common_prefix(self._previous, hypothesis)
        self._previous = hypothesis
        if len(agreed) <= len(self.committed) or agreed[: len(self.committed)] != self.committed:
            return []
        new_words = agreed[len(self.committed) :]
        self.committed.extend(new_words)
        return new_words

    def flush(self, hypothesis: list[str]) -> list[str]:
        """The final hypothesis: return the words after the committed ones."""
        self._previous = hypothesis
        return hypothesis[len(self.committed) :]
