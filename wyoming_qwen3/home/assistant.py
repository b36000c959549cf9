"""Home Assistant's websocket API, read in the background: the home's names kept current, and never waited for.

The link authenticates with a long-lived access token (an add-on's
``SUPERVISOR_TOKEN`` through the Supervisor's proxy), reads the home (see
``registries``), and subscribes to the registries' update events, reading it
again a second after a change (a rename, an alias, a new area). A stream that
starts when the last read is a minute old asks for another (exposure settings
of entities outside the registry send no event). Only reads: no service is
called, nothing is written.

Whatever Home Assistant does, a transcript never waits for it: streams take
the home as last read (or none). Unreachable, restarting, slow (every answer
within ``ANSWER_SECONDS``) or answering with data of the wrong shape: one log
line for the outage, the last names kept, and another try after a pause. A
token Home Assistant rejects will not start working: one error line, and the
link stops; the server goes on without the home's names.

The websocket itself is aiohttp's (the library Home Assistant is built on).
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from .names import Home
from .registries import HomeDataError, build_home, exposed_ids, state_ids

_LOGGER = logging.getLogger(__name__)

#: Every answer within this; a slower Home Assistant is treated as one that is away.
ANSWER_SECONDS = 10.0
#: Pauses between tries to reach Home Assistant (the last repeats), or until a stream asks.
RETRY_SECONDS = (1.0, 2.0, 5.0, 10.0, 30.0)
#: A stream that starts asks for a new read once the last is this old.
STALE_SECONDS = 60.0
#: A change event is followed by others (a rename touches the entity and its device): read once they settle.
SETTLE_SECONDS = 1.0
REGISTRY_EVENTS = (
    "entity_registry_updated",
    "device_registry_updated",
    "area_registry_updated",
    "floor_registry_updated",
)


class TokenRejectedError(Exception):
    """Home Assistant answered ``auth_invalid``."""


class LinkLostError(Exception):
    """The connection closed, or Home Assistant answered with an error."""


def websocket_url(url: str) -> str:
    """Home Assistant's base URL as its websocket API's (``http://host:8123`` -> ``ws://host:8123/api/websocket``);
    a ``ws://`` or ``wss://`` URL (the Supervisor's ``ws://supervisor/core/websocket``) as it is."""
    parts = urlsplit(url.strip())
    if parts.scheme in ("ws", "wss"):
        return url.strip()
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise ValueError(f"{url!r} is not Home Assistant's URL (http://HOST:8123, or a ws:// websocket URL)")
    scheme = "wss" if parts.scheme == "https" else "ws"
    return urlunsplit((scheme, parts.netloc, parts.path.rstrip("/") + "/api/websocket", "", ""))


@dataclass
class _Conversation:
    """One websocket: numbered requests and their results, events flagged as they come."""

    socket: Any
    changed: asyncio.Event = field(default_factory=asyncio.Event)
    _ids: itertools.count[int] = field(default_factory=lambda: itertools.count(1))
    _waiting: dict[int, asyncio.Future[Any]] = field(default_factory=dict)

    async def authenticate(self, token: str) -> str:
        """Home Assistant's version, once it accepts ``token``."""
        hello = await self._receive()
        if hello.get("type") != "auth_required":
            raise LinkLostError(f"expected auth_required, got {hello.get('type')!r}")
        await self.socket.send_json({"type": "auth", "access_token": token})
        answer = await self._receive()
        if answer.get("type") == "auth_invalid":
            raise TokenRejectedError(str(answer.get("message", "")))
        if answer.get("type") != "auth_ok":
            raise LinkLostError(f"expected auth_ok, got {answer.get('type')!r}")
        return str(answer.get("ha_version", "?"))

    async def _receive(self) -> dict[str, Any]:
        try:
            message = await asyncio.wait_for(self.socket.receive_json(), ANSWER_SECONDS)
        except (TypeError, ValueError) as err:  # a close, a binary frame, or text that is not JSON
            raise LinkLostError(f"no JSON message: {err}") from err
        if not isinstance(message, dict):
            raise LinkLostError("a message that is not a JSON object")
        return message

    async def read(self) -> None:
        """Hand each result to its request and note every event, until the socket closes."""
        try:
            async for message in self.socket:
                if message.type.name != "TEXT":
                    continue
                try:
                    data = message.json()
                except ValueError:
                    continue
                if not isinstance(data, dict):
                    continue
                if data.get("type") == "event":
                    self.changed.set()
                elif (future := self._waiting.pop(int(data.get("id") or 0), None)) is not None and not future.done():
                    future.set_result(data)
        finally:
            for future in self._waiting.values():
                if not future.done():
                    future.set_exception(LinkLostError("the connection closed"))
            self._waiting.clear()

    async def call(self, command: str, **fields: Any) -> Any:
        """The result of one command (``LinkLostError`` for an error answer, ``TimeoutError`` past the bound)."""
        number = next(self._ids)
        answer: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._waiting[number] = answer
        await self.socket.send_json({"id": number, "type": command, **fields})
        message = await asyncio.wait_for(answer, ANSWER_SECONDS)
        if not message.get("success"):
            error = message.get("error") or {}
            raise LinkLostError(f"{command}: {error.get('code', '?')}: {error.get('message', '')}")
        return message.get("result")


@dataclass
class HomeAssistantLink:
    """The home as last read from Home Assistant at ``url`` (``home``: None until the first read)."""

    url: str
    token: str
    #: Told of each home read that differs from the one before (on the event loop).
    on_home: Callable[[Home], None] | None = None
    home: Home | None = None
    _wanted: asyncio.Event = field(default_factory=asyncio.Event)
    _read_at: float = float("-inf")
    _task: asyncio.Task[None] | None = None

    async def start(self) -> None:
        """Begin reading, in the background (the server does not wait for Home Assistant)."""
        websocket_url(self.url)  # a bad URL fails at start, not in the background
        self._task = asyncio.create_task(self._run(), name="home-assistant")

    async def close(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task

    def refresh_soon(self) -> None:
        """A stream starts: read the home again if the last read is stale (or try again now if it failed)."""
        if time.monotonic() - self._read_at >= STALE_SECONDS:
            self._wanted.set()

    async def _run(self) -> None:
        import aiohttp  # only a server that reads Home Assistant needs it

        where = websocket_url(self.url)
        failures = 0
        async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=None, connect=ANSWER_SECONDS)) as session:
            while True:
                try:
                    async with session.ws_connect(where, heartbeat=30.0) as socket:
                        await self._follow(_Conversation(socket), recovered=failures > 0)
                except TokenRejectedError as err:
                    _LOGGER.error(
                        "Home Assistant at %s rejected the access token (%s): transcripts go on without the home's "
                        "names; give the token of an administrator (a long-lived access token, --ha-token)",
                        self.url,
                        err or "auth_invalid",
                    )
                    return
                except (aiohttp.ClientError, OSError, TimeoutError, LinkLostError, HomeDataError) as err:
                    failures += 1
                    kept = f"the {len(self.home.entities)} entities read before" if self.home else "no home names"
                    (_LOGGER.warning if failures == 1 else _LOGGER.debug)(
                        "Home Assistant at %s: %s; transcripts use %s, and it is tried again",
                        self.url,
                        _describe(err),
                        kept,
                    )
                pause = RETRY_SECONDS[min(max(failures, 1), len(RETRY_SECONDS)) - 1]
                self._wanted.clear()
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._wanted.wait(), pause)  # or at once, once a stream asks

    async def _follow(self, conversation: _Conversation, recovered: bool) -> None:
        """Read the home, then again after each change, until the connection ends."""
        version = await conversation.authenticate(self.token)
        reader = asyncio.create_task(conversation.read())
        try:
            await self._until_started(conversation, reader)
            await self._read(conversation)
            assert self.home is not None
            _LOGGER.info(
                "Home Assistant %s at %s%s: %s exposed to Assist",
                version,
                self.url,
                " is back" if recovered else "",
                self.home.size,
            )
            for event_type in REGISTRY_EVENTS:
                await conversation.call("subscribe_events", event_type=event_type)
            while True:
                changed = asyncio.ensure_future(conversation.changed.wait())
                wanted = asyncio.ensure_future(self._wanted.wait())
                done, pending = await asyncio.wait({changed, wanted, reader}, return_when=asyncio.FIRST_COMPLETED)
                for waiting in pending - {reader}:
                    waiting.cancel()
                if reader in done:
                    raise LinkLostError("the connection closed")
                if changed in done:
                    await asyncio.sleep(SETTLE_SECONDS)
                conversation.changed.clear()
                self._wanted.clear()
                if await self._read(conversation):
                    assert self.home is not None
                    _LOGGER.info("Home Assistant at %s: the home changed: %s", self.url, self.home.size)
        finally:
            reader.cancel()

    async def _until_started(self, conversation: _Conversation, reader: asyncio.Task[None]) -> None:
        """Home Assistant answers while it starts, before its integrations have made their entities (a restart read
        as a home of none): wait for ``homeassistant_started``, keeping the names read before."""
        config = await conversation.call("get_config")
        if not isinstance(config, dict) or config.get("state", "RUNNING") == "RUNNING":
            return
        await conversation.call("subscribe_events", event_type="homeassistant_started")
        _LOGGER.info("Home Assistant at %s is starting: its home is read once it has started", self.url)
        started = asyncio.ensure_future(conversation.changed.wait())
        done, _ = await asyncio.wait({started, reader}, return_when=asyncio.FIRST_COMPLETED)
        started.cancel()
        if reader in done:
            raise LinkLostError("the connection closed")
        conversation.changed.clear()

    async def _read(self, conversation: _Conversation) -> bool:
        """Read the home; whether it differs from the last read."""
        states = await conversation.call("get_states")
        entity_ids = state_ids(states)
        exposed = await conversation.call("homeassistant/expose_entity/list")
        entries = await conversation.call("config/entity_registry/get_entries", entity_ids=entity_ids)
        devices = await conversation.call("config/device_registry/list")
        areas = await conversation.call("config/area_registry/list")
        floors = await conversation.call("config/floor_registry/list")
        home = build_home(states, exposed_ids(states, exposed, entries), entries, devices, areas, floors)
        self._read_at = time.monotonic()
        if home == self.home:
            return False
        self.home = home
        if self.on_home is not None:
            self.on_home(home)
        return True


def _describe(err: BaseException) -> str:
    if isinstance(err, TimeoutError):
        return f"no answer within {ANSWER_SECONDS:g} s"
    if isinstance(err, HomeDataError):
        return f"an answer of the wrong shape ({err})"
    return str(err) or type(err).__name__
