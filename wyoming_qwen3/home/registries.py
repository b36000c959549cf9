"""A Home from what Home Assistant's websocket API answers: states, what is exposed to Assist, and the entity,
device, area and floor registries.

The shapes are Home Assistant 2026.11's (``websocket_api/commands.py`` get_states,
``homeassistant/exposed_entities.py``, ``config/*_registry.py``):

- ``get_states``: ``[{"entity_id", "state", "attributes": {"friendly_name", "device_class", ...}, ...}]``;
- ``homeassistant/expose_entity/list``: ``{"exposed_entities": {entity_id: {"conversation": bool, ...}}}``;
- ``config/entity_registry/get_entries`` (``entity_ids``): ``{entity_id: {"aliases": [str | null], "area_id",
  "device_id", "entity_category", "hidden_by", ...} | null}``; a null alias is the entity's computed name, which
  its state's ``friendly_name`` carries;
- ``config/device_registry/list``: ``[{"id", "area_id", ...}]`` (an entity with no area of its own is in its
  device's);
- ``config/area_registry/list``: ``[{"area_id", "name", "aliases", "floor_id", ...}]``;
- ``config/floor_registry/list``: ``[{"floor_id", "name", "aliases", ...}]``.

An entity no assistant setting names is exposed as Home Assistant exposes new entities by default: its domain
among those it exposes, or a sensor of a class it exposes, and not hidden or a configuration entity.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from .names import Area, Entity, Floor, Home, clean_name

ASSISTANT = "conversation"
#: What Home Assistant exposes to Assist by default (``exposed_entities.py``, ``DEFAULT_EXPOSED_*``).
DEFAULT_EXPOSED_DOMAINS = frozenset(
    "climate cover fan humidifier light lock scene script switch vacuum water_heater".split()
)
DEFAULT_EXPOSED_DEVICE_CLASSES = {
    "binary_sensor": frozenset("door garage_door lock motion opening presence window".split()),
    "sensor": frozenset(
        "aqi carbon_monoxide carbon_dioxide humidity pm10 pm25 temperature volatile_organic_compounds".split()
    ),
}


class HomeDataError(ValueError):
    """An answer that is not what Home Assistant sends; the message says which."""


def _records(value: Any, what: str, key: str) -> list[Mapping[str, Any]]:
    if not isinstance(value, list) or not all(isinstance(v, Mapping) and isinstance(v.get(key), str) for v in value):
        raise HomeDataError(f"{what}: not a list of records with a {key!r}")
    return value


def _names(listed: Iterable[Any]) -> tuple[str, ...]:
    """The names among ``listed``, cleaned, each once, in order."""
    return tuple(dict.fromkeys(n for n in map(clean_name, listed) if n))


def _record_names(record: Mapping[str, Any]) -> tuple[str, ...]:
    """An area's or floor's name and its aliases, cleaned, each once."""
    aliases = record.get("aliases")
    return _names([record.get("name"), *(aliases if isinstance(aliases, list) else [])])


def state_ids(states: Any) -> list[str]:
    """The entity id of each state of ``get_states``."""
    return [state["entity_id"] for state in _records(states, "get_states", "entity_id")]


def exposed_ids(states: Any, exposed: Any, entries: Mapping[str, Any] | None = None) -> list[str]:
    """The entities with a state that are exposed to Assist (``entries``: their registry entries, where read)."""
    states = _records(states, "get_states", "entity_id")
    settings = exposed.get("exposed_entities") if isinstance(exposed, Mapping) else None
    if not isinstance(settings, Mapping):
        raise HomeDataError("homeassistant/expose_entity/list: no 'exposed_entities' mapping")
    chosen = []
    for state in states:
        entity_id = state["entity_id"]
        setting = settings.get(entity_id)
        if isinstance(setting, Mapping) and isinstance(setting.get(ASSISTANT), bool):
            if setting[ASSISTANT]:
                chosen.append(entity_id)
        elif _exposed_by_default(state, (entries or {}).get(entity_id)):
            chosen.append(entity_id)
    return chosen


def _exposed_by_default(state: Mapping[str, Any], entry: Any) -> bool:
    if isinstance(entry, Mapping) and (entry.get("entity_category") or entry.get("hidden_by")):
        return False
    domain = state["entity_id"].partition(".")[0]
    attributes = state.get("attributes")
    device_class = attributes.get("device_class") if isinstance(attributes, Mapping) else None
    return domain in DEFAULT_EXPOSED_DOMAINS or device_class in DEFAULT_EXPOSED_DEVICE_CLASSES.get(domain, ())


def build_home(states: Any, exposed: Iterable[str], entries: Any, devices: Any, areas: Any, floors: Any) -> Home:
    """The home a speaker may name; HomeDataError for an answer of the wrong shape."""
    by_state = {s["entity_id"]: s for s in _records(states, "get_states", "entity_id")}
    if not isinstance(entries, Mapping):
        raise HomeDataError("config/entity_registry/get_entries: not a mapping of entity ids")
    device_areas = {d["id"]: d.get("area_id") for d in _records(devices, "config/device_registry/list", "id")}
    entities = []
    for entity_id in exposed:
        state, entry = by_state.get(entity_id), entries.get(entity_id)
        attributes = state.get("attributes") if state is not None else None
        friendly = attributes.get("friendly_name") if isinstance(attributes, Mapping) else None
        computed = clean_name(friendly) or entity_id.partition(".")[2].replace("_", " ")
        if not isinstance(entry, Mapping):  # no registry entry: the state's name only
            entities.append(Entity(entity_id, (computed,)))
            continue
        aliases = entry.get("aliases")
        aliases = aliases if isinstance(aliases, list) and aliases else [None]
        names = _names(computed if a is None else a for a in aliases)
        area = entry.get("area_id") or device_areas.get(entry.get("device_id"))
        entities.append(Entity(entity_id, names, area if isinstance(area, str) else None))
    return Home(
        entities=tuple(e for e in entities if e.names),
        areas=tuple(
            Area(a["area_id"], names, a.get("floor_id") if isinstance(a.get("floor_id"), str) else None)
            for a in _records(areas, "config/area_registry/list", "area_id")
            if (names := _record_names(a))
        ),
        floors=tuple(
            Floor(f["floor_id"], names)
            for f in _records(floors, "config/floor_registry/list", "floor_id")
            if (names := _record_names(f))
        ),
    )
