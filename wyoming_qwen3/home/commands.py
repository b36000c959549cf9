"""Home Assistant's own commands for a home: whether a text is one of them, whole, or only its beginning.

With ``--endpointing`` and no ``grammar.json`` in the model folder, a turn ends
after the short silence only when its text is a whole command. The commands are
Home Assistant's sentence templates (``home-assistant-intents``, parsed by
``hassil``, both optional: ``pip install 'wyoming-qwen3[home]'``) for the
language, their lists filled by the home's names, areas and floors, their
numbers spelled as the language spells them (``unicode-rbnf``, as hassil does).
hassil turns the templates into a transducer over words and spaces
(``intents_to_fst``), built once per language; a text is walked through it
character by character, so that a template's word may be part of a spoken one
("fan[s]") and a language written without spaces (Chinese) is matched as it is
written.

A whole command may also begin a longer one: with an entity named "kitchen",
"turn on the kitchen" is a command, and so is "turn on the kitchen lights".
``judge`` says so (``CONTINUES``), and the turn waits a little longer there.
Sentences with a free-text slot (a timer's name, a shopping list's item, a
search) are not in hassil's transducer: such commands read as incomplete and
end after the long silence.
"""

from __future__ import annotations

import logging
import threading
from collections import defaultdict, deque
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from ..model.grammar import Judgement
from ..model.languages import language_code
from ..model.text_units import is_unspaced, words_of
from .names import Home

_LOGGER = logging.getLogger(__name__)

#: Home Assistant's code for a language where it is not the Wyoming one: its Hong Kong Chinese is Cantonese.
_HOME_ASSISTANT_CODES = {"yue": "zh-HK"}


class CommandsUnavailableError(Exception):
    """hassil and home-assistant-intents are not installed, or have no templates for the language."""


def normalized(text: str, unspaced: bool = False) -> str:
    """``words_of`` with a space at each end, so that a phrase is found only as whole words."""
    return f" {words_of(text, unspaced)} "


@dataclass(frozen=True)
class Templates:
    """One language's sentence templates as hassil's transducer, with what a home's names fill in."""

    language: str
    unspaced: bool
    #: state -> its arcs, (label, next state); a label is "" (nothing), " " (a space), "<skip>", a word or "{slot}".
    arcs: dict[int, tuple[tuple[str, int], ...]]
    final: frozenset[int]
    #: The states with a path to a final one.
    alive: frozenset[int]
    skip_words: tuple[str, ...]
    #: "{slot}" -> what the templates' own lists and number ranges give it (the home's names come in for_home).
    values: dict[str, frozenset[str]]

    @classmethod
    def load(cls, language_code: str) -> Templates:
        """The templates of a Wyoming language code (``en``, ``de-CH``, ``zh``); CommandsUnavailableError where
        there are none."""
        try:
            from hassil import Intents
            from hassil.fst import EPS, SPACE, intents_to_fst
            from home_assistant_intents import get_intents, get_languages
        except ImportError as err:
            raise CommandsUnavailableError(f"{err.name} is not installed (pip install 'wyoming-qwen3[home]')") from err
        wanted = _HOME_ASSISTANT_CODES.get(language_code, language_code).lower()
        known = {code.lower(): code for code in get_languages()}
        language = known.get(wanted) or next((c for k, c in known.items() if k.split("-")[0] == wanted), None)
        if language is None:
            raise CommandsUnavailableError(f"Home Assistant has no sentence templates for '{language_code}'")
        data = get_intents(language)
        if data is None:
            raise CommandsUnavailableError(f"home-assistant-intents has no data for '{language}'")
        intents = Intents.from_dict(data)
        # Written without spaces where its sentences are (Chinese, Japanese, Thai: the same 3 of Home Assistant's 65
        # languages as their codes say).
        sentences = (text for intent in data["intents"].values() for d in intent["data"] for text in d["sentences"])
        unspaced = any(is_unspaced(character) for text in sentences for character in text)
        fst = intents_to_fst(intents)
        arcs: dict[int, list[tuple[str, int]]] = defaultdict(list)
        for state, outgoing in fst.arcs.items():
            for arc in outgoing:
                arcs[state].append(({EPS: "", SPACE: " "}.get(arc.in_label, arc.in_label.casefold()), arc.to_state))
        return cls(
            language=language,
            unspaced=unspaced,
            arcs={state: tuple(outgoing) for state, outgoing in arcs.items()},
            final=frozenset(fst.final_states),
            alive=_alive(arcs, fst.final_states),
            skip_words=tuple(normalized(word, unspaced).strip() for word in intents.skip_words),
            values=_own_values(intents, language, unspaced),
        )

    def for_home(self, home: Home | None) -> Commands:
        """The commands of this language for ``home`` (its names, areas and floors)."""
        own = {"{name}": (), "{area}": (), "{floor}": ()} if home is None else {
            "{name}": [name for entity in home.entities for name in entity.names],
            "{area}": [name for area in home.areas for name in area.names],
            "{floor}": [name for floor in home.floors for name in floor.names],
        }  # fmt: skip
        values = dict(self.values)
        for slot, names in own.items():
            texts = {normalized(name, self.unspaced).strip() for name in names}
            values[slot] = values.get(slot, frozenset()) | {text for text in texts if text}
        return Commands(self, {slot: tuple(sorted(texts)) for slot, texts in values.items()})


@dataclass(frozen=True)
class Commands:
    """A language's commands for one home."""

    templates: Templates
    values: dict[str, tuple[str, ...]]

    def judge(self, text: str) -> Judgement:
        """Whether ``text`` is a whole command, a whole one that a longer one begins with, or neither."""
        spoken = normalized(text, self.templates.unspaced)
        if not spoken.strip():
            return Judgement.INCOMPLETE
        templates = self.templates
        ends = self._ends(spoken)
        if templates.final.isdisjoint(ends):
            return Judgement.INCOMPLETE
        longer = any(
            label not in ("", " ", "<skip>") and target in templates.alive
            for state in ends
            for label, target in templates.arcs.get(state, ())
        )
        return Judgement.CONTINUES if longer else Judgement.COMPLETE

    def _ends(self, spoken: str) -> set[int]:
        """The states that the whole of ``spoken`` leads to."""
        templates = self.templates
        seen = {(0, 0)}
        queue = deque(seen)
        ends: set[int] = set()
        while queue:
            state, position = queue.popleft()
            if position == len(spoken):
                ends.add(state)
            for label, target in templates.arcs.get(state, ()):
                if target not in templates.alive:
                    continue
                for after in self._consumed(spoken, position, label):
                    if (target, after) not in seen:
                        seen.add((target, after))
                        queue.append((target, after))
        return ends

    def _consumed(self, spoken: str, position: int, label: str) -> Iterator[int]:
        """Where ``label`` takes the walk from ``position`` of ``spoken``: nowhere, or one or more places."""
        if not label:
            yield position
        elif label == " ":
            if spoken.startswith(" ", position):
                yield position + 1
            elif self.templates.unspaced or spoken[position - 1] == " ":
                yield position  # already at a word's edge, or none is written
        else:
            texts = self.templates.skip_words if label == "<skip>" else self.values.get(label, (label,))
            for text in texts:
                if spoken.startswith(text, position):
                    yield position + len(text)


def _alive(arcs: dict[int, list[tuple[str, int]]], final: set[int]) -> frozenset[int]:
    incoming: dict[int, list[int]] = defaultdict(list)
    for state, outgoing in arcs.items():
        for _, target in outgoing:
            incoming[target].append(state)
    alive = set(final)
    queue = deque(alive)
    while queue:
        for source in incoming[queue.popleft()]:
            if source not in alive:
                alive.add(source)
                queue.append(source)
    return frozenset(alive)


def _own_values(intents: Any, language: str, unspaced: bool) -> dict[str, frozenset[str]]:
    """What each slot of the templates stands for by their own lists: a list's values, a range's numbers."""
    from hassil.intents import RangeSlotList, TextSlotList
    from hassil.sample import sample_expression

    texts: dict[str, set[str]] = defaultdict(set)
    for intent in intents.intents.values():
        for data in intent.data:
            rules = {**intents.expansion_rules, **data.expansion_rules}
            for sentence in data.sentences:
                for reference in sentence.expression.list_references(rules):
                    slot_list = data.slot_lists.get(reference.list_name) or intents.slot_lists.get(reference.list_name)
                    slot = "{" + reference.slot_name + "}"
                    if isinstance(slot_list, TextSlotList):
                        for value in slot_list.values:
                            texts[slot].update(sample_expression(value.text_in, expansion_rules=rules))
                    elif isinstance(slot_list, RangeSlotList):
                        texts[slot].update(_numbers(slot_list, language))
    return {
        slot: frozenset(t for t in (normalized(text, unspaced).strip() for text in found) if t)
        for slot, found in texts.items()
    }


def _numbers(slot_list: Any, language: str) -> set[str]:
    """A range's numbers, as digits and as the language spells them."""
    from unicode_rbnf import RbnfEngine

    try:
        engine: Any = RbnfEngine.for_language(language.split("-")[0].lower())
    except Exception:  # noqa: BLE001 - no spelling for the language: digits alone
        engine = None
    numbers: set[str] = set()
    for number in range(slot_list.start, slot_list.stop + 1, slot_list.step or 1):
        numbers.add(str(number))
        if engine is not None:
            numbers.update(engine.format_number(number).text_by_ruleset.values())
    return numbers


@dataclass
class HomeCommands:
    """The commands of the languages spoken so far, for the home as last read (``commands`` for a turn to judge).

    A language's templates take a few seconds to load (English: 3.0 s, 2-core CPU): ``prepare`` loads them on a
    thread of their own, for the server's language at start and for another the first time a turn in it is
    judged; until they are there its turns are judged without them. A home read anew fills them again
    (milliseconds).
    """

    home: Home | None = None
    _templates: dict[str, Templates] = field(default_factory=dict)
    _commands: dict[str, Commands] = field(default_factory=dict)
    _loading: set[str] = field(default_factory=set)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def prepare(self, language_code: str) -> None:
        """Load a language's templates in the background, once (a language with none is left without)."""
        with self._lock:
            if language_code in self._templates or language_code in self._loading:
                return
            self._loading.add(language_code)
        threading.Thread(target=self._load, args=(language_code,), name="home-commands", daemon=True).start()

    def _load(self, language_code: str) -> None:
        try:
            templates = Templates.load(language_code)
        except CommandsUnavailableError as err:
            _LOGGER.info("Endpointing in '%s' goes without Home Assistant's commands: %s", language_code, err)
            return
        with self._lock:
            self._templates[language_code] = templates
            self._commands[language_code] = templates.for_home(self.home)
        _LOGGER.info(
            "Endpointing in '%s': Home Assistant's %s commands for the home", language_code, templates.language
        )

    def update(self, home: Home) -> None:
        """The home was read anew: every language's commands with its names."""
        with self._lock:
            self.home = home
            self._commands = {code: templates.for_home(home) for code, templates in self._templates.items()}

    def of(self, language: str) -> Commands | None:
        """The commands of a Qwen3-ASR language name, once loaded (asked for the first time: loading begins)."""
        code = language_code(language)
        if code is None:
            return None
        if code not in self._commands:
            self.prepare(code)
        return self._commands.get(code)
