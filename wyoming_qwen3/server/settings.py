"""The settings every connection shares, and their defaults: the command line reads them, the handler uses them."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from ..home.names import Home
from .stream.turn import StreamLimits, TurnSettings


class HomeSource(Protocol):
    """Where a home's names come from (``home.assistant.HomeAssistantLink``): the home as last read, or None."""

    @property
    def home(self) -> Home | None: ...

    def refresh_soon(self) -> None:
        """A command begins: read the home again if the last read is stale, without waiting for it."""


@dataclass(frozen=True)
class HandlerConfig:
    """Server-wide settings every connection shares."""

    #: Qwen3-ASR name used when ``transcribe`` names none; None detects it.
    default_language: str | None = None
    #: Context for every utterance, before the client's names and terms.
    context: str = ""
    #: The longest stream, and the silence that ends a stream with no audio-stop.
    limits: StreamLimits = field(default_factory=StreamLimits)
    #: A connection with no event for this long, and no stream in flight, is closed.
    #: Home Assistant sends ``describe`` every 30 s; four times that never cuts it.
    idle_timeout_seconds: float = 120.0
    #: An event whose first byte came must be complete this much later.
    event_timeout_seconds: float = 10.0
    #: A JSON-lines file, or a folder for one file per utterance, of every unit sent.
    emission_log: Path | None = None
    #: When the final pass starts early, and whether the server ends turns itself.
    turn: TurnSettings = field(default_factory=TurnSettings)
    #: The home's names (read from Home Assistant), for commands whose client sends none; and their budget.
    home: HomeSource | None = None
    home_names_bytes: int = 2048
