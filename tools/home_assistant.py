"""A stand-in Home Assistant for the tests: its websocket API on loopback, with a home of the test's making.

Every message is the one Home Assistant 2026.11 sends or expects
(``websocket_api/auth.py``, ``messages.py``, ``commands.py``,
``homeassistant/exposed_entities.py``, ``config/*_registry.py``):

- on connect ``{"type": "auth_required", "ha_version"}``; ``{"type": "auth", "access_token"}`` is answered
  ``{"type": "auth_ok", "ha_version"}``, or ``{"type": "auth_invalid", "message": "Invalid access token or
  password"}`` and the socket closed (a malformed auth message: "Auth message incorrectly formatted: ...");
- each command ``{"id", "type", ...}`` (ids rising, else ``id_reuse``) gets ``{"id", "type": "result", "success":
  true, "result"}`` or ``{"id", "type": "result", "success": false, "error": {"code", "message"}}``
  (``unknown_command``: "Unknown command.");
- ``subscribe_events`` answers a null result, then ``{"id", "type": "event", "event": {"event_type", "data",
  "origin", "time_fired", "context"}}`` for each event of that type;
- ``get_config`` (its ``state``: ``STARTING`` while it starts, then ``RUNNING`` and the ``homeassistant_started``
  event), ``get_states``, ``homeassistant/expose_entity/list``, ``config/entity_registry/get_entries``,
  ``config/device_registry/list``, ``config/area_registry/list`` and ``config/floor_registry/list`` answer in
  their shapes (``wyoming_qwen3/home/registries.py`` lists them).

It runs on a thread of its own, so that a test can start the real server as a process and talk to it while this
answers; its methods change the home (a rename fires ``entity_registry_updated``), make it slow, make it answer
with data of the wrong shape, or take it away and bring it back on the same port.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from aiohttp import WSMsgType, web

from tools.server_process import free_port
from wyoming_qwen3.home.names import Home

VERSION = "2026.11.0"


@dataclass
class StandInEntity:
    entity_id: str
    name: str
    area_id: str | None = None
    #: Registry aliases after the computed name (None: the computed name itself, as Home Assistant stores it).
    aliases: list[str | None] = field(default_factory=lambda: [None])
    exposed: bool = True
    #: Whether it has an entity registry entry (a YAML entity with no unique id has none).
    registered: bool = True
    device_id: str | None = None


@dataclass
class StandInHome:
    entities: list[StandInEntity] = field(default_factory=list)
    #: area id -> (name, aliases, floor id)
    areas: dict[str, tuple[str, list[str], str | None]] = field(default_factory=dict)
    #: floor id -> (name, aliases)
    floors: dict[str, tuple[str, list[str]]] = field(default_factory=dict)
    #: device id -> its area id
    devices: dict[str, str | None] = field(default_factory=dict)


def stand_in(home: Home) -> StandInHome:
    """What Home Assistant would hold for ``home``: its entities (named, in their areas), areas and floors."""
    return StandInHome(
        entities=[StandInEntity(e.entity_id, e.names[0], e.area_id, [None, *e.names[1:]]) for e in home.entities],
        areas={a.area_id: (a.names[0], list(a.names[1:]), a.floor_id) for a in home.areas},
        floors={f.floor_id: (f.names[0], list(f.names[1:])) for f in home.floors},
    )


def home_of_names(names: list[str], areas: list[str]) -> StandInHome:
    """A home with a switch of each name (in no area) and the areas given, as a benchmark's made-up home."""
    return StandInHome(
        entities=[StandInEntity(f"switch.thing_{index}", name) for index, name in enumerate(dict.fromkeys(names))],
        areas={area.replace(" ", "_"): (area, [], None) for area in areas},
    )


class StandInHomeAssistant:
    """Home Assistant's websocket API at ``url`` (``/api/websocket``), accepting ``token``."""

    def __init__(self, home: StandInHome, token: str = "a-long-lived-access-token") -> None:
        self.home = home
        self.token = token
        self.port = free_port()
        #: Seconds before each answer, and whether answers have the wrong shape.
        self.delay = 0.0
        self.broken = False
        #: How many times the API was asked for the states (each read of the home asks once).
        self.reads = 0
        #: Home Assistant's state (get_config): "STARTING" until ``started()``, as after a restart.
        self.state = "RUNNING"
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="stand-in-home-assistant", daemon=True)
        self._runner: web.AppRunner | None = None
        self._sockets: set[web.WebSocketResponse] = set()
        self._subscriptions: list[tuple[web.WebSocketResponse, int, str]] = []

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    # -- what a test does ---------------------------------------------------------------------------------

    def start(self) -> StandInHomeAssistant:
        if not self._thread.is_alive():
            self._thread.start()
        self._call(self._serve)
        return self

    def __enter__(self) -> StandInHomeAssistant:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    def go_away(self) -> None:
        """Close every socket and stop listening: Home Assistant restarting, or its machine off."""
        self._call(self._stop_serving)

    def stop(self) -> None:
        self.go_away()
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=10)

    def rename(self, entity_id: str, name: str) -> None:
        """What renaming an entity in the UI does: a new name, and ``entity_registry_updated``."""

        def rename() -> None:
            entity = next(e for e in self.home.entities if e.entity_id == entity_id)
            entity.name = name
            data = {"action": "update", "entity_id": entity_id, "changes": {"name": None}}
            for socket, number, event_type in self._subscriptions:
                if event_type == "entity_registry_updated" and not socket.closed:
                    asyncio.ensure_future(socket.send_json(_event(number, event_type, data)))

        self._loop.call_soon_threadsafe(rename)

    def starting(self) -> None:
        """Answer as a Home Assistant that is starting: get_config says STARTING, the states are not there yet."""
        self.state = "STARTING"

    def started(self) -> None:
        """What the end of a start does: the states are there, and ``homeassistant_started`` is fired."""

        def start() -> None:
            self.state = "RUNNING"
            for socket, number, event_type in self._subscriptions:
                if event_type == "homeassistant_started" and not socket.closed:
                    asyncio.ensure_future(socket.send_json(_event(number, event_type, {})))

        self._loop.call_soon_threadsafe(start)

    def _call(self, coroutine: Callable[[], Any]) -> None:
        asyncio.run_coroutine_threadsafe(coroutine(), self._loop).result(timeout=10)

    # -- the API --------------------------------------------------------------------------------------------

    async def _serve(self) -> None:
        app = web.Application()
        app.router.add_get("/api/websocket", self._websocket)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        await web.TCPSite(self._runner, "127.0.0.1", self.port).start()

    async def _stop_serving(self) -> None:
        for socket in list(self._sockets):
            await socket.close()
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    async def _websocket(self, request: web.Request) -> web.WebSocketResponse:
        socket = web.WebSocketResponse()
        await socket.prepare(request)
        self._sockets.add(socket)
        try:
            await socket.send_json({"type": "auth_required", "ha_version": VERSION})
            auth = await socket.receive_json()
            if (
                not isinstance(auth, dict)
                or auth.get("type") != "auth"
                or not isinstance(auth.get("access_token"), str)
            ):
                await socket.send_json(
                    {"type": "auth_invalid", "message": f"Auth message incorrectly formatted: {auth}"}
                )
                return socket
            if auth["access_token"] != self.token:
                await socket.send_json({"type": "auth_invalid", "message": "Invalid access token or password"})
                return socket
            await socket.send_json({"type": "auth_ok", "ha_version": VERSION})
            last = 0
            async for message in socket:
                if message.type != WSMsgType.TEXT:
                    continue
                command = message.json()
                number = command.get("id")
                if not isinstance(number, int) or number <= last:
                    await socket.send_json(_error(number, "id_reuse", "Identifier values have to increase."))
                    continue
                last = number
                await asyncio.sleep(self.delay)
                await socket.send_json(self._answer(socket, number, command))
        finally:
            self._sockets.discard(socket)
            self._subscriptions = [s for s in self._subscriptions if s[0] is not socket]
        return socket

    def _answer(self, socket: web.WebSocketResponse, number: int, command: dict[str, Any]) -> dict[str, Any]:
        kind, home = command.get("type"), self.home
        if kind == "subscribe_events":
            self._subscriptions.append((socket, number, command.get("event_type", "*")))
            return _result(number, None)
        answers: dict[str, Callable[[], Any]] = {
            "get_config": lambda: {"state": self.state, "version": VERSION, "location_name": "Home"},
            "get_states": lambda: [_state(e) for e in home.entities] if self.state == "RUNNING" else [],
            "homeassistant/expose_entity/list": lambda: {
                "exposed_entities": {e.entity_id: {"conversation": e.exposed} for e in home.entities}
            },
            "config/entity_registry/get_entries": lambda: {
                entity_id: _entry(next((e for e in home.entities if e.entity_id == entity_id), None))
                for entity_id in command.get("entity_ids", [])
            },
            "config/device_registry/list": lambda: [
                {"id": d, "area_id": a, "name": d} for d, a in home.devices.items()
            ],
            "config/area_registry/list": lambda: [
                {"area_id": a, "name": name, "aliases": aliases, "floor_id": floor, "icon": None, "labels": []}
                for a, (name, aliases, floor) in home.areas.items()
            ],
            "config/floor_registry/list": lambda: [
                {"floor_id": f, "name": name, "aliases": aliases, "level": index, "icon": None}
                for index, (f, (name, aliases)) in enumerate(home.floors.items())
            ],
        }
        if kind not in answers:
            return _error(number, "unknown_command", "Unknown command.")
        if kind == "get_states":
            self.reads += 1
        return _result(number, {"unexpected": "shape"} if self.broken else answers[kind]())


def _result(number: int, result: Any) -> dict[str, Any]:
    return {"id": number, "type": "result", "success": True, "result": result}


def _error(number: Any, code: str, message: str) -> dict[str, Any]:
    return {"id": number, "type": "result", "success": False, "error": {"code": code, "message": message}}


def _event(number: int, event_type: str, data: dict[str, Any]) -> dict[str, Any]:
    now = datetime.now(UTC).isoformat()
    return {
        "id": number,
        "type": "event",
        "event": {"event_type": event_type, "data": data, "origin": "LOCAL", "time_fired": now, "context": {}},
    }


def _state(entity: StandInEntity) -> dict[str, Any]:
    now = datetime.now(UTC).isoformat()
    return {
        "entity_id": entity.entity_id,
        "state": "off",
        "attributes": {"friendly_name": entity.name},
        "last_changed": now,
        "last_reported": now,
        "last_updated": now,
        "context": {"id": "0", "parent_id": None, "user_id": None},
    }


def _entry(entity: StandInEntity | None) -> dict[str, Any] | None:
    if entity is None or not entity.registered:
        return None
    return {
        "aliases": entity.aliases,
        "area_id": entity.area_id,
        "device_id": entity.device_id,
        "entity_category": None,
        "entity_id": entity.entity_id,
        "hidden_by": None,
        "name": None,
        "original_name": entity.name,
        "options": {"conversation": {"should_expose": entity.exposed}},
        "platform": "stand_in",
    }
