"""Commit the units on which consecutive hypotheses agree (local agreement, n=2).

Backends that re-transcribe a buffer get a new hypothesis of the whole buffer
each time, as a list of text units (``text_units.split_units``: words, or
characters of scripts written without spaces). A unit is committed once two
hypotheses in a row agree on it and on every unit before it, and it is not the
hypothesis' last unit (which may still grow: " kit" -> " kitchen", "lights" ->
"lights."). Committed units are never taken back; the final hypothesis
supplies whatever was not committed.

When a backend cuts the front of its buffer, ``restart`` says which committed
units are still heard in what is left.
"""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass, field


def comparable(unit: str) -> str:
    """A unit as hypotheses are compared: case, spaces, punctuation and symbols of any script ignored
    (" Lights." == "lights", "灯。" == "灯")."""
    return "".join(c for c in unit.casefold() if unicodedata.category(c)[0] not in "PSZ").strip()


def agreed_length(first: list[str], second: list[str]) -> int:
    """How many units at the start of both lists agree."""
    length = 0
    for a, b in zip(first, second, strict=False):
        if comparable(a) != comparable(b):
            break
        length += 1
    return length


@dataclass
class LocalAgreement:
    """Turns a sequence of buffer hypotheses into append-only committed units."""

    #: Committed units whose audio is still in the buffer, as first heard.
    settled: list[str] = field(default_factory=list)
    _previous: list[str] = field(default_factory=list)
    #: The committed unit the last cut fell inside, whose end the buffer may still hold.
    straddled: str | None = None

    def update(self, hypothesis: list[str]) -> list[str]:
        """Take the next hypothesis of the buffer; return newly committed units."""
        hypothesis = self.after_cut(hypothesis)
        previous, self._previous = self._previous, hypothesis
        settled = len(self.settled)
        if agreed_length(hypothesis, self.settled) < settled:
            return []  # this hypothesis revised a committed unit: wait for one that agrees
        agreed = min(agreed_length(previous, hypothesis), len(hypothesis) - 1)
        if agreed <= settled:
            return []
        new_units = hypothesis[settled:agreed]
        self.settled.extend(new_units)
        return new_units

    def flush(self, hypothesis: list[str]) -> list[str]:
        """The final hypothesis of the buffer: return the units after the committed ones."""
        hypothesis = self.after_cut(hypothesis)
        self._previous = hypothesis
        return hypothesis[len(self.settled) :]

    def restart(self, carried: list[str], straddled: str | None = None) -> None:
        """The buffer was cut: only ``carried`` (committed units) are still in it; start agreeing afresh.

        ``straddled`` is a committed unit the cut fell inside: what is left of it
        may be heard again at the start of the buffer, and is then skipped.
        """
        self.settled = list(carried)
        self._previous = []
        self.straddled = straddled

    def after_cut(self, hypothesis: list[str]) -> list[str]:
        """The hypothesis without the rest of a straddled unit at its start."""
        if not hypothesis or self.straddled is None:
            return hypothesis
        first, straddled = comparable(hypothesis[0]), comparable(self.straddled)
        if self.settled and first == comparable(self.settled[0]):
            return hypothesis
        return hypothesis[1:] if first and straddled.endswith(first) else hypothesis
