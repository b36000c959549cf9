"""Reading Wyoming events strictly, so that bad input gets an answer.

``wyoming.event.async_read_event`` returns None, which reads as a disconnect,
for any malformed line, trusts any ``payload_length`` and waits forever. This
reader tells the two apart, bounds what a client can make the server buffer,
and bounds how long it waits: for an event to begin (idle) and, once its first
byte came, for the rest of it (a client that stalls mid-event).
"""

from __future__ import annotations

import asyncio
import json

from wyoming.event import Event

#: A header line longer than this is refused (asyncio's default stream limit).
MAX_LINE_BYTES = 64 * 1024
#: One event's data or payload: 1 MiB is 32 s of 16 kHz 16-bit mono audio.
MAX_SECTION_BYTES = 1024 * 1024


class IdleTimeoutError(TimeoutError):
    """No event began within the idle timeout."""


class StalledEventError(TimeoutError):
    """An event began but did not complete within the event timeout."""


class MalformedEventError(ValueError):
    """An event that cannot be read; ``fatal`` when the stream cannot be resynchronised."""

    def __init__(self, message: str, fatal: bool = False) -> None:
        super().__init__(message)
        self.fatal = fatal


def _section_length(header: dict, key: str) -> int:
    value = header.get(key)
    if value is None:
        return 0
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise MalformedEventError(f"{key} must be a non-negative integer, got {value!r}", fatal=True)
    if value > MAX_SECTION_BYTES:
        raise MalformedEventError(f"{key} {value} exceeds the limit of {MAX_SECTION_BYTES} bytes", fatal=True)
    return value


async def read_event(
    reader: asyncio.StreamReader, idle_timeout: float | None = None, event_timeout: float | None = None
) -> Event | None:
    """The next event, or None when the client has gone.

    Raises MalformedEventError for input that is not a Wyoming event,
    IdleTimeoutError when no event begins within ``idle_timeout`` seconds, and
    StalledEventError when one begins but is not complete ``event_timeout``
    seconds later (a header sent a byte at a time, a payload that never ends).
    """
    try:
        # Cancelling readexactly while it waits consumes nothing, so an idle
        # timeout loses no input.
        first = await asyncio.wait_for(reader.readexactly(1), idle_timeout)
    except asyncio.IncompleteReadError:
        return None
    except TimeoutError as err:
        raise IdleTimeoutError(f"no event for {idle_timeout:g} s") from err
    try:
        async with asyncio.timeout(event_timeout):
            return await _read_rest(reader, first)
    except TimeoutError as err:
        raise StalledEventError(f"event not complete {event_timeout:g} s after it began") from err


async def _read_rest(reader: asyncio.StreamReader, first: bytes) -> Event | None:
    try:
        line = first if first == b"\n" else first + await reader.readline()
    except (asyncio.LimitOverrunError, ValueError) as err:
        raise MalformedEventError(f"event header longer than {MAX_LINE_BYTES} bytes", fatal=True) from err
    header = _parse_json(line, "event header")
    if not isinstance(header, dict) or not isinstance(header.get("type"), str):
        raise MalformedEventError("event header must be a JSON object with a string 'type'")

    data_length = _section_length(header, "data_length")
    payload_length = _section_length(header, "payload_length")
    data = header.get("data") or {}
    try:
        data_bytes = await reader.readexactly(data_length) if data_length else b""
        payload = await reader.readexactly(payload_length) if payload_length else None
    except asyncio.IncompleteReadError:
        return None
    if data_bytes:
        extra = _parse_json(data_bytes, "event data")
        if not isinstance(extra, dict):
            raise MalformedEventError("event data must be a JSON object")
        data = {**data, **extra} if isinstance(data, dict) else extra
    if not isinstance(data, dict):
        raise MalformedEventError("event data must be a JSON object")
    return Event(type=header["type"], data=data, payload=payload)


def _parse_json(text: bytes, what: str) -> object:
    try:
        return json.loads(text)
    except RecursionError as err:  # e.g. 60 KB of '[': deeper than the parser goes
        raise MalformedEventError(f"{what} is nested too deeply") from err
    except ValueError as err:
        raise MalformedEventError(f"{what} is not JSON: {err}") from err
