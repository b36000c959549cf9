"""Word and character error rates, as every figure of the project computes them: lower case, punctuation to spaces.

Languages written without spaces (Mandarin) are scored by characters, spaces ignored.
"""

from __future__ import annotations


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
    errors = words = 0
    for reference, hypothesis in pairs:
        e, n = word_errors(normalize(reference), normalize(hypothesis))
        errors, words = errors + e, words + n
    return errors / max(words, 1)


def cer(pairs: list[tuple[str, str]]) -> float:
    """Character error rate of (reference, hypothesis) pairs, normalized, spaces ignored."""
    errors = characters = 0
    for reference, hypothesis in pairs:
        e, n = edit_distance(list(normalize(reference).replace(" ", "")), list(normalize(hypothesis).replace(" ", "")))
        errors, characters = errors + e, characters + n
    return errors / max(characters, 1)
