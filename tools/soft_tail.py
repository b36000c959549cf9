"""The soft-tail check: a last word spoken softer after a pause reaches the transcript as if nothing were held back.

The server keeps from the model the silence past ``kept_silence_seconds`` after the
last speech, unless speech resumes. A soft last word that Silero does not call speech
must not be kept from it. Each command is streamed, as Home Assistant 2026.11 streams it,
to four servers of the same backend at once: the server's defaults (Home Assistant's VAD
ends the command, audio-stop exactly 0.7 s after the speech) and ``--endpointing``, each
beside the same server holding nothing back.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
from dataclasses import dataclass

import numpy as np

from tools.corpus import heldout_commands, speak_timed, with_soft_last_word
from tools.ha_client import Turn, command
from tools.in_process import serving
from wyoming_qwen3.backends.base import Backend
from wyoming_qwen3.model.grammar import Grammars
from wyoming_qwen3.server.settings import HandlerConfig
from wyoming_qwen3.server.stream.turn import TurnSettings

#: Home Assistant's default silence before audio-stop; None: the server ends the turn.
MODES: dict[str, float | None] = {"default": 0.7, "endpointing": None}


@dataclass(frozen=True)
class SoftTail:
    text: str
    voice: str
    pause_seconds: float
    softer_db: float
    audio: np.ndarray
    #: The sample where the soft word group starts.
    tail_start: int


def corpus(
    count: int, seed: int = 0, softer_db: tuple[float, float] = (20.0, 30.0), pause: tuple[float, float] = (0.3, 0.8)
) -> list[SoftTail]:
    """The first ``count`` held-out commands with more than one word group, their last one 20-30 dB (``softer_db``)
    softer after a 0.3-0.8 s pause (``pause``; 0 0: none, the soft word straight after the rest)."""
    utterances = heldout_commands()
    rng = np.random.default_rng(seed)
    made = []
    for index, utterance in enumerate(utterances):
        speech = speak_timed(utterance["text"], utterance["voice"], 165, 50)
        if len(speech.word_starts) < 2:
            continue
        pause_seconds, softer = float(rng.uniform(*pause)), float(rng.uniform(*softer_db))
        audio, tail_start = with_soft_last_word(speech, pause_seconds, softer, seed + index)
        made.append(SoftTail(utterance["text"], utterance["voice"], pause_seconds, softer, audio, tail_start))
        if len(made) == count:
            break
    return made


async def compare(
    backend: Backend, audio: np.ndarray, seed: int = 0, grammars: Grammars | None = None
) -> dict[str, tuple[Turn, Turn]]:
    """Per mode: (the server as it is, the same server holding nothing back), all four streamed at once
    (``grammars``: the model folder's commands, as the server reads them)."""
    runs = [
        (mode, silence, TurnSettings(endpointing=silence is None, kept_silence_seconds=kept, commands=grammars))
        for mode, silence in MODES.items()
        for kept in (TurnSettings.kept_silence_seconds, math.inf)
    ]
    async with contextlib.AsyncExitStack() as stack:
        ports = [await stack.enter_async_context(serving(backend, HandlerConfig(turn=turn))) for _, _, turn in runs]
        turns = await asyncio.gather(
            *(
                command("127.0.0.1", port, audio, silence_seconds=silence, fixed_stop=True, seed=seed, trim=False)
                for port, (_, silence, _) in zip(ports, runs, strict=True)
            )
        )
    return {mode: (turns[2 * index], turns[2 * index + 1]) for index, mode in enumerate(MODES)}
