"""Reading Wyoming events strictly, so that bad input gets an answer.

``wyoming.event.async_read_event`` returns None, which reads as a disconnect,
for any malformed line, and trusts any ``payload_length``. This reader tells
the two apart and bounds what a client can make the server buffer.
"""

from __future__ import annotations

import asyncio
import json

from wyoming.event import Event

#: A header line longer than this is refused (asyncio's default stream limit).
MAX_LINE_BYTES = 64 * 1024
#: One event's data or payload: 1 MiB is 32 s of 16 kHz 16-bit mono audio.
MAX_SECTION_BYTES = 1024 * 1024


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


async def read_event(reader: asyncio.StreamReader) -> Event | None:
    """The next event, or None when the client has gone.

    Raises MalformedEventError for input that is not a Wyoming event.
    """
    try:
        line = await reader.readline()
    except (asyncio.LimitOverrunError, ValueError) as err:
        raise MalformedEventError(f"event header longer than {MAX_LINE_BYTES} bytes", fatal=True) from err
    if not line:
        return None
    try:
        header = json.loads(line)
    except ValueError as err:
        raise MalformedEventError(f"event header is not JSON: {err}") from err
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
        try:
            extra = json.loads(data_bytes)
        except ValueError as err:
            raise MalformedEventError(f"event data is not JSON: {err}") from err
        if not isinstance(extra, dict):
            raise MalformedEventError("event data must be a JSON object")
        data = {**data, **extra} if isinstance(data, dict) else extra
    if not isinstance(data, dict):
        raise MalformedEventError("event data must be a JSON object")
    return Event(type=header["type"], data=data, payload=payload)
