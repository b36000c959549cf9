"""Word and character error rates, as every figure of the project computes them: lower case, punctuation to spaces.

Languages written without spaces (Mandarin) are scored by characters, spaces ignored.
"""

from __future__ import annotations

from collections.abc import Callable


def word_errors(reference: str, hypothesis: str) -> tuple[int, int]:
    """(edit distance in words, reference words)."""
    return edit_distance(reference.split(), hypothesis.split())


def edit_distance(ref: list[str], hyp: list[str]) -> tuple[int, int]:
    """(edit distance, length of the reference)."""
    row = list(range(len(hyp) + 1))
    for i, r in enumerate(ref, 1):
        previous, row[0] = row[0], i
        for j, h in enumerate(hyp, 1):
            previous, row[j] = row[j], min(row[j] + 1, row[j - 1] + 1, previous + (r != h))
    return row[-1], len(ref)


def normalize(text: str) -> str:
    """Lower case, punctuation to spaces: how transcripts are compared with their references."""
    return " ".join(text.lower().replace(",", " ").replace(".", " ").replace("?", " ").split())


def wer(pairs: list[tuple[str, str]]) -> float:
    """Word error rate of (reference, hypothesis) pairs, both normalized."""
    return _error_rate(pairs, str.split)


def cer(pairs: list[tuple[str, str]]) -> float:
    """Character error rate of (reference, hypothesis) pairs, normalized, spaces ignored."""
    return _error_rate(pairs, lambda text: list(text.replace(" ", "")))


def _error_rate(pairs: list[tuple[str, str]], units: Callable[[str], list[str]]) -> float:
    """Edit distance over the reference's length, in ``units`` of the normalized texts, over all pairs."""
    errors = total = 0
    for reference, hypothesis in pairs:
        e, n = edit_distance(units(normalize(reference)), units(normalize(hypothesis)))
        errors, total = errors + e, total + n
    return errors / max(total, 1)
