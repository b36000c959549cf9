"""The commands a model folder says its speakers give (``grammar.json``): whether a text is one of them, whole.

A speaker who pauses mid-command ("open the dining room" ... "curtains") has so
far said words that can sound finished. On the held-out pause corpus (pauses
after every word; ``script/benchmark completeness``, docs/performance.md), the
sentences of the commands themselves told a whole command from a paused one
where nothing else did: 0 of 100 pauses judged complete, 97 of 100 whole
commands; the model's end probability and a list of unfinished endings judged
46 of 100 pauses complete, Home Assistant's grammar with names as wildcards 13,
Smart Turn v3.2 71. The demo model ships the grammar it was trained on.

The file, one grammar per language: ``{"grammars": [{"language": "English", "templates":
["turn on the {area} {device}", ...], "slots": {"area": ["kitchen", ...], ...}}, ...]}``. A language
written without spaces (Chinese: ``"打开{area}的{device}"``) is matched with its spaces ignored.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from enum import Enum
from pathlib import Path

from .text_units import is_unspaced, words_of

GRAMMAR_FILE = "grammar.json"

_SLOT = re.compile(r"\{(\w+)\}")


class GrammarError(ValueError):
    """A grammar file that cannot be read, said in one line."""


class Judgement(Enum):
    """What a grammar says of a text."""

    INCOMPLETE = "incomplete"
    COMPLETE = "complete"
    #: A whole command that a longer one begins with ("turn on the kitchen" ... "lights").
    CONTINUES = "continues"


@dataclass(frozen=True)
class Grammar:
    """Sentences as templates with slots; a text is a command when it is one of them, whole."""

    #: Qwen3-ASR language name of the sentences: other languages are not judged by it.
    language: str
    patterns: tuple[re.Pattern[str], ...]
    #: Written without spaces: texts are matched with theirs removed.
    unspaced: bool = False

    @classmethod
    def from_dict(cls, data: object) -> Grammar:
        if not isinstance(data, dict):
            raise GrammarError("not an object")
        language, templates, slots = data.get("language"), data.get("templates"), data.get("slots")
        if not isinstance(language, str) or not language:
            raise GrammarError("'language' must name a language")
        if not isinstance(templates, list) or not all(isinstance(t, str) and t.strip() for t in templates):
            raise GrammarError("'templates' must be a list of sentences")
        if not isinstance(slots, dict) or not all(
            isinstance(values, list) and all(isinstance(v, str) and v.strip() for v in values)
            for values in slots.values()
        ):
            raise GrammarError("'slots' must map each slot name to a list of words")
        unspaced = any(is_unspaced(c) for c in "".join(templates))
        joiner = "" if unspaced else " "

        def words(text: str) -> list[str]:
            """A template's words and slots (its characters and slots where no spaces are written)."""
            if not unspaced:
                return words_of(text).split()
            return [part for part in re.split(r"(\{\w+\})", words_of(text, unspaced=True)) if part]

        alternatives = {
            name: "|".join(re.escape(joiner.join(words(v))) for v in values) for name, values in slots.items()
        }
        patterns = []
        for template in templates:
            parts = []
            for word in words(template):
                slot = _SLOT.fullmatch(word)
                if slot is None and ("{" in word or "}" in word):
                    raise GrammarError(f"template {template!r}: a slot must be a word of its own: {word!r}")
                if slot is not None and slot[1] not in alternatives:
                    raise GrammarError(f"template {template!r} uses a slot with no values: {slot[1]}")
                parts.append(f"(?:{alternatives[slot[1]]})" if slot else re.escape(word))
            patterns.append(re.compile(joiner.join(parts)))
        return cls(language, tuple(patterns), unspaced)

    def is_command(self, text: str) -> bool:
        """Whether ``text`` is one of the sentences, whole."""
        words = words_of(text, self.unspaced)
        return any(pattern.fullmatch(words) for pattern in self.patterns)

    def judge(self, text: str) -> Judgement:
        """``is_command`` as a judgement: the model's own commands say nothing of longer ones."""
        return Judgement.COMPLETE if self.is_command(text) else Judgement.INCOMPLETE


@dataclass(frozen=True)
class Grammars:
    """A model folder's commands, one grammar per language."""

    grammars: tuple[Grammar, ...]

    @classmethod
    def from_dict(cls, data: object) -> Grammars:
        if not isinstance(data, dict) or not isinstance(data.get("grammars"), list) or not data["grammars"]:
            raise GrammarError("'grammars' must be a list of grammars, one per language")
        grammars = []
        for index, grammar in enumerate(data["grammars"]):
            try:
                grammars.append(Grammar.from_dict(grammar))
            except GrammarError as err:
                raise GrammarError(f"grammar {index + 1}: {err}") from err
        return cls(tuple(grammars))

    @classmethod
    def load(cls, folder: Path) -> Grammars | None:
        """The grammars of a model folder; None where it has none."""
        path = folder / GRAMMAR_FILE
        if not path.is_file():
            return None
        try:
            return cls.from_dict(json.loads(path.read_text(encoding="utf-8")))
        except (OSError, json.JSONDecodeError, GrammarError) as err:
            raise GrammarError(f"{path}: {err}") from err

    def of(self, language: str) -> Grammar | None:
        """The grammar of a language (a Qwen3-ASR language name), None where there is none."""
        return next((g for g in self.grammars if g.language == language), None)

    @property
    def languages(self) -> list[str]:
        return [g.language for g in self.grammars]
