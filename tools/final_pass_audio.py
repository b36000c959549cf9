"""What the model hears of a stream at its final pass: the audio the server's turn feeds it, the rest held back.

The server (``wyoming_qwen3.server.stream.turn``) gives the model a command and
``kept_silence_seconds`` of the silence after Silero's end of speech, and holds the
rest back unless speech resumes. A soft last word straight after a loud command
(``script/benchmark soft-tail --pause 0 0``) is mostly not speech to Silero, so the
cut can fall at that word's end: of that check's 40 commands, the fed audio stops
0.01 s before to 0.18 s after the soft word's end in 16 (0.32 s after at the median;
2026-12-07). Training on the audio as this cuts it shows the model what the
server gives it. The same turn and VAD decide here, chunk by chunk as Home
Assistant sends them (10 ms); only the streaming steps, which do not change what
is fed, are left out.
"""

from __future__ import annotations

import numpy as np

from wyoming_qwen3.model.format import SAMPLE_RATE
from wyoming_qwen3.server.stream.speech_activity import Detector, SpeechActivity
from wyoming_qwen3.server.stream.turn import Action, StreamLimits, Turn, TurnSettings, Verdict

#: Home Assistant 2026.11's chunk: 320 bytes of 16-bit mono.
HOME_ASSISTANT_CHUNK_SAMPLES = SAMPLE_RATE // 100


def final_pass_audio(audio: np.ndarray, detector: Detector, settings: TurnSettings | None = None) -> np.ndarray:
    """The start of ``audio`` (16 kHz float, the whole stream to audio-stop) that the final pass hears."""
    activity = SpeechActivity(detector)
    turn = Turn(settings or TurnSettings(), StreamLimits(), last_audio_at=0.0)
    fed = held = 0
    for start in range(0, audio.shape[0], HOME_ASSISTANT_CHUNK_SAMPLES):
        chunk = audio[start : start + HOME_ASSISTANT_CHUNK_SAMPLES]
        silence_before = activity.silence_seconds
        for action in turn.route(Verdict(activity.add(chunk), silence_before)):
            if action is Action.RELEASE:
                fed, held = fed + held, 0
            elif action is Action.HOLD:
                held += chunk.shape[0]
            elif action is Action.FEED:
                fed += chunk.shape[0]
    # Audio is fed and held in order: what was fed is a prefix of the stream.
    return audio[:fed]
