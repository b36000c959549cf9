"""What one utterance sends, in order: ``transcript-start`` once, a ``transcript-chunk`` for each delta of committed
text, then the final ``transcript`` and ``transcript-stop``; and the emission log of every unit sent."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from wyoming.asr import Transcript, TranscriptChunk, TranscriptStart, TranscriptStop
from wyoming.event import Event

from .emission_log import EmissionLog

_LOGGER = logging.getLogger(__name__)

#: Sends one event to the client; raises OSError once the client is gone.
Send = Callable[[Event], Awaitable[None]]


@dataclass
class TranscriptSender:
    """The text one utterance has sent, and the events that carry it."""

    send: Send
    client: str
    #: The language code the client's transcribe forced (None: detected), for transcript-start.
    forced_language: str | None = None
    emission_log: EmissionLog | None = None
    #: The text sent in transcript-chunk events so far.
    sent: str = ""
    _started: bool = False

    async def add(self, delta: str, heard_seconds: float, language: str | None = None, final: bool = False) -> None:
        """Send ``delta`` (transcript-start first, once, with ``language`` if known by then); ``heard_seconds``: the
        audio it was decided on, for the emission log."""
        if not self._started:
            self._started = True
            await self.send(TranscriptStart(language=language or self.forced_language).event())
        if not delta:
            return
        self.sent += delta
        await self.send(TranscriptChunk(text=delta).event())
        if self.emission_log is not None:
            await self._log_emission(delta, heard_seconds, final)

    async def close(self, language: str | None) -> None:
        """The final transcript, whole, and transcript-stop."""
        await self.send(Transcript(text=self.sent, language=language).event())
        await self.send(TranscriptStop().event())

    async def _log_emission(self, delta: str, heard_seconds: float, final: bool) -> None:
        """Write the units sent, off the event loop; a failed write stops this stream's log, nothing else."""
        assert self.emission_log is not None
        try:
            await asyncio.to_thread(self.emission_log.write, delta, heard_seconds, final)
        except OSError as err:
            _LOGGER.warning("%s: cannot write the emission log (%s); not logging this stream further", self.client, err)
            self.emission_log = None
