"""What part of a growing transcript may be sent: whole units, as an append-only string.

Text is a string, never a word list. Where a language separates words with
spaces a unit is a word, and the last one is held back while the transcript can
still grow (" kit" may become " kitchen"). Chinese, Cantonese, Japanese and Thai
are written without spaces: each of their characters is a unit of its own, so
"打开客厅的灯" streams character by character, and nothing is inserted between
them. Decoded text from an incomplete UTF-8 sequence on (U+FFFD, when a
character's bytes are split over tokens) waits for the next token or the end.
"""

from __future__ import annotations

import logging
import re
import unicodedata
from dataclasses import dataclass

from .format import UNDECODED

_LOGGER = logging.getLogger(__name__)

#: Code point ranges of scripts written without spaces between words.
_UNSPACED_RANGES = (
    (0x0E00, 0x0E7F),  # Thai
    (0x3040, 0x30FF),  # Hiragana, Katakana
    (0x31F0, 0x31FF),  # Katakana phonetic extensions
    (0x3400, 0x4DBF),  # CJK Extension A
    (0x4E00, 0x9FFF),  # CJK Unified Ideographs
    (0xF900, 0xFAFF),  # CJK Compatibility Ideographs
    (0xFF66, 0xFF9F),  # Halfwidth Katakana
    (0x20000, 0x3134F),  # CJK Extensions B-G
)


def is_unspaced(character: str) -> bool:
    """Whether a character belongs to a script written without spaces (a unit on its own)."""
    code = ord(character)
    return any(low <= code <= high for low, high in _UNSPACED_RANGES) or (
        # CJK punctuation (。，、「」) ends a unit too.
        0x3000 <= code <= 0x303F or 0xFF00 <= code <= 0xFF65 and unicodedata.category(character).startswith("P")
    )


def normalize(text: str) -> str:
    """One space for every run of whitespace, none at the ends: the transcript as sent."""
    return " ".join(text.split())


#: Dropped when texts are compared with command lists: a transcript's "twenty-five" or quoted name matches a
#: list's "twenty five" and bare name.
_PUNCTUATION = re.compile(r"[-.,!?;:。，、！？；：\"“”]")


def words_of(text: str, unspaced: bool = False) -> str:
    """Case folded, punctuation dropped, one space between words (none where the language writes none): how
    transcripts are compared with a model's grammar and a home's sentence templates."""
    words = _PUNCTUATION.sub(" ", text.casefold()).split()
    return "".join(words) if unspaced else " ".join(words)


def complete_units(text: str, final: bool) -> str:
    """The longest prefix of normalized ``text`` that ends a unit (all of it when ``final``).

    Appending to ``text`` never changes this prefix, so successive results
    only grow: their differences are the append-only deltas a client receives.
    """
    text = normalize(text)
    if final:
        return text  # as the offline pass reads it (parse_output dropped the bytes that make no character)
    end = text.find(UNDECODED)
    if end >= 0:
        text = text[:end]
    for index in range(len(text), 0, -1):
        if index < len(text) and text[index] == " ":
            return text[:index]  # a unit ends before a space
        if is_unspaced(text[index - 1]) and _closed(text, index):
            return text[:index]  # or after a character of an unspaced script
    return ""


def _closed(text: str, index: int) -> bool:
    """Whether no combining mark can still join the character before ``index``.

    Thai writes vowels and tone marks as combining characters after their
    consonant ("ปิ" is "ป" + "ิ"), so a Thai character at the very end waits.
    """
    if index < len(text):
        return not unicodedata.category(text[index]).startswith("M")
    return not 0x0E00 <= ord(text[index - 1]) <= 0x0E7F


def begins_unit(before: str, piece: str) -> bool:
    """Whether text ``piece`` (a token's, or a character with its leading space) starts a unit after ``before``.

    A unit begins at a space, at a character of a script written without
    spaces, and right after one.
    """
    return bool(piece) and (piece[0].isspace() or is_unspaced(piece[0]) or (bool(before) and is_unspaced(before[-1])))


#: A word with its leading space, or one character of a script written without spaces.
_UNIT = re.compile(r"\s*\S")


def split_units(delta: str) -> list[str]:
    """The units of a delta, each with its leading space; they concatenate to the delta."""
    units: list[str] = []
    for match in _UNIT.finditer(delta):
        piece = match.group()
        if not units or begins_unit(units[-1], piece):
            units.append(piece)
        else:
            units[-1] += piece
    if units:
        units[-1] += delta[len("".join(units)) :]  # trailing spaces, if any
    return units


def joined(sent: str, units: list[str]) -> str:
    """The delta that appends ``units`` to the text ``sent``.

    Units keep the spacing they were heard with; at the seam one space goes
    between words, none between characters of scripts written without spaces.
    """
    text = normalize("".join(units))
    if sent and text and not (is_unspaced(sent[-1]) and is_unspaced(text[0])):
        return " " + text
    return text


@dataclass
class SentText:
    """The text a session has sent so far, and the deltas that extend it."""

    text: str = ""

    def advance(self, transcript: str, final: bool) -> str:
        """The delta that brings what was sent up to the complete units of ``transcript``."""
        units = complete_units(transcript, final)
        if not units.startswith(self.text):
            # Committed text is never taken back, so this means a bug: send nothing wrong.
            _LOGGER.warning("Transcript %r no longer starts with the text sent, %r", units, self.text)
            return ""
        delta, self.text = units[len(self.text) :], units
        return delta
