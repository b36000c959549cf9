"""A client that ends voice commands as Home Assistant 2026.11 does, and times the transcript from the end of speech.

Home Assistant's Wyoming STT entity (``homeassistant/components/wyoming/stt.py``)
sends ``transcribe`` with the language only, ``audio-start``, then uploads 10 ms
chunks while it reads events at once; it takes the first ``transcript``, even
one that comes before its ``audio-stop``, then cancels the upload and closes the
socket. When the server's ``info`` says ``requires_external_vad``, its pipeline
(``assist_pipeline``) ends the command itself: ``VoiceCommandSegmenter`` on its
VAD's speech probabilities (pymicro-vad, speech above 0.5), after
``silence_seconds`` of silence (0.7 s by default, 0.25 aggressive, 1.25 relaxed),
at least 0.3 s of speech and a 1 s command, and a 15 s timeout; then it sends
``audio-stop``. ``CommandEnd`` below does what that class does.

The satellite streams from the wake word: 0.3 s of a room's noise, the command,
then the room's noise until the command is ended.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field

import numpy as np
from wyoming.asr import Transcribe
from wyoming.audio import AudioChunk, AudioStart, AudioStop
from wyoming.client import AsyncTcpClient

from wyoming_qwen3.model.format import SAMPLE_RATE

from .corpus import ROOM_DBFS, room
from .speech import pcm16, trimmed

CHUNK_SAMPLES = SAMPLE_RATE // 100  # 10 ms, 320 bytes: what Home Assistant sends
LEAD_SECONDS = 0.3
#: How long a client without a VAD of its own keeps streaming the room after the speech (server endpointing).
SERVER_WAIT_SECONDS = 4.0


#: Float seconds summed chunk by chunk reach 0.7 a hair short of it; Home Assistant's countdowns end on the
#: chunk that reaches it (70 chunks of 10 ms for 0.7 s).
_EPSILON = 1e-9


@dataclass
class CommandEnd:
    """When Home Assistant 2026.11 ends a voice command (``assist_pipeline/vad.py``, ``VoiceCommandSegmenter``),
    from its VAD's verdict on each chunk; ``hear`` says True on the chunk that ends it.

    What it does, as measured against its source's behaviour (tests/test_ha_client.py):

    - The command begins once ``speech_seconds`` of speech are heard; speech need not be continuous, but
      ``reset_seconds`` of no speech before it begins forget what was heard.
    - Once begun, it ends on a chunk of no speech when ``silence_seconds`` of no speech have passed and the
      command has lasted ``command_seconds - speech_seconds`` since it began. Short speech in a pause does
      not restart the silence: only ``reset_seconds`` of continuous speech does (a word of 0.4 s between
      two pauses of 0.35 s ends the command at the second pause).
    - Whatever happens, the stream ends ``timeout_seconds`` after it began.
    """

    silence_seconds: float = 0.7
    speech_seconds: float = 0.3
    command_seconds: float = 1.0
    timeout_seconds: float = 15.0
    reset_seconds: float = 1.0
    #: Whether the command has begun.
    began: bool = False
    _heard: float = 0.0
    #: Before it began: speech heard, and no speech since the last speech.
    _speech: float = 0.0
    _quiet: float = 0.0
    #: Since it began: its length, the silence counted toward its end, and the speech since the last silence.
    _length: float = 0.0
    _silence: float = 0.0
    _speaking: float = 0.0

    def hear(self, seconds: float, is_speech: bool | None) -> bool:
        """One chunk of ``seconds`` and whether the VAD heard speech in it (None: no verdict yet, as no speech)."""
        self._heard += seconds
        if self._heard >= self.timeout_seconds - _EPSILON:
            return True
        if not self.began:
            if is_speech:
                self._speech, self._quiet = self._speech + seconds, 0.0
                self.began = self._speech >= self.speech_seconds - _EPSILON
            else:
                self._quiet += seconds
                if self._quiet >= self.reset_seconds - _EPSILON:
                    self._speech = self._quiet = 0.0
            return False
        self._length += seconds
        if is_speech:
            self._speaking += seconds
            if self._speaking >= self.reset_seconds - _EPSILON:
                self._silence = self._speaking = 0.0
            return False
        self._speaking = 0.0
        self._silence += seconds
        lasted = self._length >= self.command_seconds - self.speech_seconds - _EPSILON
        return lasted and self._silence >= self.silence_seconds - _EPSILON


class HomeAssistantVad:
    """pymicro-vad, as Home Assistant's audio enhancer runs it: 10 ms frames, speech above 0.5."""

    def __init__(self) -> None:
        from pymicro_vad import MicroVad

        self._vad = MicroVad()

    def is_speech(self, frame: bytes) -> bool | None:
        probability = self._vad.process_10ms(frame)
        return None if probability < 0 else probability > 0.5


@dataclass
class Turn:
    """One command as Home Assistant saw it (times in seconds from the first chunk)."""

    text: str | None = None
    error: str | None = None
    speech_end_s: float = 0.0
    audio_stop_s: float | None = None
    transcript_s: float | None = None
    #: The first transcript-chunk (a partial transcript, which Home Assistant ignores), if any.
    first_chunk_s: float | None = None
    #: Events before the transcript (Home Assistant ignores them).
    types: list[str] = field(default_factory=list)

    @property
    def from_speech_end_ms(self) -> float | None:
        return None if self.transcript_s is None else (self.transcript_s - self.speech_end_s) * 1000

    @property
    def before_stop(self) -> bool:
        return self.transcript_s is not None and (self.audio_stop_s is None or self.transcript_s < self.audio_stop_s)

    @property
    def after_stop_ms(self) -> float | None:
        if self.transcript_s is None or self.audio_stop_s is None or self.before_stop:
            return None
        return (self.transcript_s - self.audio_stop_s) * 1000


def room_noise(seconds: float, seed: int, dbfs: float = ROOM_DBFS) -> np.ndarray:
    return room(seconds, np.random.default_rng(seed), dbfs)


def streamed_audio(speech: np.ndarray, trail_seconds: float, seed: int = 0) -> np.ndarray:
    """The stream ``command`` sends: ``LEAD_SECONDS`` of the room, the speech, then ``trail_seconds`` of the room."""
    return np.concatenate([room_noise(LEAD_SECONDS, seed + 1), speech, room_noise(trail_seconds, seed)])


async def command(
    host: str,
    port: int,
    speech: np.ndarray,
    *,
    silence_seconds: float | None = 0.7,
    fixed_stop: bool = False,
    language: str = "en",
    seed: int = 0,
    trim: bool = True,
) -> Turn:
    """Stream one command in real time, as a satellite through Home Assistant does.

    ``silence_seconds``: Home Assistant's VAD setting, which decides audio-stop (None: the
    server ends the turn; no audio-stop is sent within ``SERVER_WAIT_SECONDS``). With
    ``fixed_stop``, audio-stop comes exactly ``silence_seconds`` after the speech instead
    (no VAD lag: a repeatable bound for tests). ``trim`` cuts espeak-ng's own silence from
    both ends; audio that ends in a soft word (under 0.02 of full scale) is given as it is.
    """
    if silence_seconds is None:
        trail = SERVER_WAIT_SECONDS
    elif fixed_stop:
        trail = silence_seconds
    else:
        trail = 16.0  # until the segmenter ends the command (it times out at 15 s)
    # The room's noise, not espeak-ng's digital silence, around the words; and the end of speech is the last word's.
    speech = trimmed(speech) if trim else speech
    audio = streamed_audio(speech, trail, seed)
    pcm = pcm16(audio)
    turn = Turn(speech_end_s=LEAD_SECONDS + speech.shape[0] / SAMPLE_RATE)
    command_end = CommandEnd(silence_seconds) if silence_seconds is not None and not fixed_stop else None
    vad = HomeAssistantVad() if command_end is not None else None
    async with AsyncTcpClient(host, port) as client:
        await client.write_event(Transcribe(language=language).event())
        await client.write_event(AudioStart(SAMPLE_RATE, 2, 1).event())
        began = time.perf_counter()

        async def upload() -> None:
            for index, start in enumerate(range(0, len(pcm), 2 * CHUNK_SAMPLES)):
                frame = pcm[start : start + 2 * CHUNK_SAMPLES]
                await client.write_event(AudioChunk(SAMPLE_RATE, 2, 1, frame).event())
                if command_end is not None and vad is not None and len(frame) == 2 * CHUNK_SAMPLES:
                    if command_end.hear(CHUNK_SAMPLES / SAMPLE_RATE, vad.is_speech(frame)):
                        break
                delay = began + (index + 1) * CHUNK_SAMPLES / SAMPLE_RATE - time.perf_counter()
                if delay > 0:
                    await asyncio.sleep(delay)
            if silence_seconds is None:
                return  # no VAD here: the server ends the turn, or nothing does
            turn.audio_stop_s = time.perf_counter() - began
            await client.write_event(AudioStop().event())

        async def receive() -> None:
            while True:
                event = await client.read_event()
                if event is None:
                    turn.error = "connection closed"
                    return
                if event.type == "error":
                    turn.error = str(event.data.get("text"))
                    return
                if event.type == "transcript":
                    turn.text = str(event.data.get("text", ""))
                    turn.transcript_s = time.perf_counter() - began
                    return
                turn.types.append(event.type)
                if event.type == "transcript-chunk" and turn.first_chunk_s is None:
                    turn.first_chunk_s = time.perf_counter() - began

        uploading, reading = asyncio.create_task(upload()), asyncio.create_task(receive())
        try:
            await asyncio.wait_for(reading, timeout=60)
        except TimeoutError:
            turn.error = "no transcript in 60 s"
        finally:
            uploading.cancel()  # as Home Assistant does on the transcript: the socket closes next
            await asyncio.gather(uploading, return_exceptions=True)
    return turn
