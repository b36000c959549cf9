"""A home as a speaker names it, and which of its names go into the model's context.

Home Assistant's default conversation agent hears the names and aliases of the
entities exposed to Assist, and the names and aliases of every area and floor
(``conversation/default_agent.py``, ``_make_slot_lists``). Those are what a
speaker says, and what the model should spell as the home spells them.

The context has a budget (bytes of ``", "``-joined names; the tokenizer is
byte-level BPE, so a byte is at most a token), and the names are kept in tiers,
as wyoming-faster-whisper 3.6 orders them: first the areas and floors that hold
an exposed entity, then the entities of the domains people say most (light,
switch, fan, media_player, climate, scene, todo), then the other entities. A
tier is sorted, so that the same home gives the same context, and with it the
same prompt prefix to reuse; the first name that does not fit ends the list.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from functools import cached_property

#: The domains whose entities people name most often: the second tier.
SPOKEN_DOMAINS = frozenset({"light", "switch", "fan", "media_player", "climate", "scene", "todo"})
#: Between the entries of a context: the server's own, the client's names and terms, the home's names.
SEPARATOR = ", "


def fitting(entries: list[str], budget_bytes: int) -> int:
    """How many of ``entries``, from the first, fit ``budget_bytes`` joined by ``SEPARATOR``."""
    size = 0
    for count, entry in enumerate(entries):
        size += len(entry.encode("utf-8")) + (len(SEPARATOR) if count else 0)
        if size > budget_bytes:
            return count
    return len(entries)


def clean_name(text: object) -> str:
    """A name as it may stand in a context: no control characters or line breaks, single spaces, no commas at its
    ends (they would read as the list's separator); '' for what is no name."""
    if not isinstance(text, str):
        return ""
    printable = "".join(" " if unicodedata.category(c).startswith("C") else c for c in text)
    return re.sub(r"\s+", " ", printable).strip(" ,")


@dataclass(frozen=True)
class Floor:
    floor_id: str
    #: Its name, then its aliases.
    names: tuple[str, ...]


@dataclass(frozen=True)
class Area:
    area_id: str
    names: tuple[str, ...]
    floor_id: str | None = None


@dataclass(frozen=True)
class Entity:
    """An entity exposed to Assist, with the names it answers to (its name first)."""

    entity_id: str
    names: tuple[str, ...]
    area_id: str | None = None

    @property
    def domain(self) -> str:
        return self.entity_id.partition(".")[0]


@dataclass(frozen=True)
class ContextNames:
    """The names chosen for the context, and those its budget left out."""

    kept: tuple[str, ...] = ()
    dropped: tuple[str, ...] = ()

    def describe(self, budget_bytes: int, shown: int = 8) -> str:
        """For a debug line: how many were kept, and which the budget left out."""
        if not self.dropped:
            return f"all {len(self.kept)} kept"
        more = ", ..." if len(self.dropped) > shown else ""
        left_out = ", ".join(self.dropped[:shown]) + more
        return f"{len(self.kept)} kept, {len(self.dropped)} beyond {budget_bytes} bytes left out ({left_out})"


@dataclass(frozen=True)
class Home:
    """What Home Assistant says a speaker may name: exposed entities, areas, floors."""

    entities: tuple[Entity, ...] = ()
    areas: tuple[Area, ...] = ()
    floors: tuple[Floor, ...] = ()

    @cached_property
    def tiers(self) -> tuple[tuple[str, ...], ...]:
        """Every name once (by its case-folded form), in the order the context takes them."""
        used_areas = {entity.area_id for entity in self.entities if entity.area_id is not None}
        areas = [area for area in self.areas if area.area_id in used_areas]
        used_floors = {area.floor_id for area in areas if area.floor_id is not None}
        floors = [floor for floor in self.floors if floor.floor_id in used_floors]
        tiers = [
            [name for area in areas for name in area.names] + [name for floor in floors for name in floor.names],
            [name for entity in self.entities if entity.domain in SPOKEN_DOMAINS for name in entity.names],
            [name for entity in self.entities if entity.domain not in SPOKEN_DOMAINS for name in entity.names],
        ]
        seen: set[str] = set()
        ordered = []
        for tier in tiers:
            fresh = []
            for name in sorted(tier, key=str.casefold):
                if name.casefold() not in seen:
                    seen.add(name.casefold())
                    fresh.append(name)
            ordered.append(tuple(fresh))
        return tuple(ordered)

    def context_names(self, budget_bytes: int, taken: tuple[str, ...] = ()) -> ContextNames:
        """The names that fit ``budget_bytes``, tier by tier, leaving out those already in ``taken``."""
        already = {name.casefold() for name in taken}
        names = [name for tier in self.tiers for name in tier if name.casefold() not in already]
        kept = fitting(names, budget_bytes)
        return ContextNames(tuple(names[:kept]), tuple(names[kept:]))

    @property
    def size(self) -> str:
        """How big the home is, for a log line."""
        counts = (
            (len(self.entities), "entity", "entities"),
            (len(self.areas), "area", "areas"),
            (len(self.floors), "floor", "floors"),
        )
        return ", ".join(f"{n} {one if n == 1 else many}" for n, one, many in counts)
