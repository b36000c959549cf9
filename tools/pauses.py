"""Commands with a pause where people put them: after any word, with or without an "uh", 0.3-1.2 s long.

A speaker who stops to think does so anywhere: inside a multi-word name ("the
dining room" ... "curtains"), after an article or a preposition ("switch on the
heater in the" ... "basement"), before a number or a unit. Each part is spoken
on its own (espeak-ng's silence trimmed), so the words before the pause end as
a speaker who stops there says them; the pause is a room's noise, with a
hesitation ("uh", "um") in it a third of the time. The words of the hesitation
are not in the transcript: a Home Assistant sentence has none.

Training (``paused_speech``) and evaluation (``pause_corpus``) build pauses the
same way; evaluation uses held-out commands, voices and rates only.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tools.corpus import Speech, heldout_commands, room, speak_timed
from tools.speech import loud_span, speak, trimmed
from wyoming_qwen3.model.format import SAMPLE_RATE

HESITATIONS = ("uh", "um")
PAUSE_SECONDS = (0.3, 1.2)
HESITATION_FRACTION = 1 / 3
#: Speaking rates (words a minute) of the held-out corpus: espeak-ng's default is 175; training draws 130-200.
HELDOUT_RATES = (140, 190)


@dataclass(frozen=True)
class PausedCommand:
    """One command spoken in two parts with a pause between them."""

    text: str
    voice: str
    #: The words before the pause, and after it.
    first: str
    second: str
    pause_seconds: float
    #: "" or the hesitation spoken in the pause.
    hesitation: str
    #: The speech, no silence at either end.
    audio: np.ndarray
    #: Where the pause begins and ends (samples into ``audio``).
    pause_start: int
    pause_end: int


def pause_audio(seconds: float, hesitation: np.ndarray | None, rng: np.random.Generator) -> np.ndarray:
    """``seconds`` of the room, with the hesitation's speech (if any) in it, a little before its middle."""
    if hesitation is None:
        return room(seconds, rng)
    spoken = trimmed(hesitation) * rng.uniform(0.4, 1.0)
    before = seconds * rng.uniform(0.2, 0.5)
    return np.concatenate([room(before, rng), spoken, room(seconds - before, rng)])


def splits(text: str) -> list[tuple[str, str]]:
    """Every place between two words."""
    words = text.split()
    return [(" ".join(words[:k]), " ".join(words[k:])) for k in range(1, len(words))]


def pause_corpus(count: int, seed: int = 0) -> list[PausedCommand]:
    """``count`` held-out commands (the demo model's held-out list, its voices), each paused at one place, the
    places taken so that every place of every command comes up in turn; rates 140-190, pauses 0.3-1.2 s."""
    utterances = heldout_commands()
    rng = np.random.default_rng(seed)
    made: list[PausedCommand] = []
    index = 0
    while len(made) < count:
        utterance = utterances[index % len(utterances)]
        places = splits(utterance["text"])
        first, second = places[(index // len(utterances) + index) % len(places)]
        rate = int(rng.integers(*HELDOUT_RATES))
        voice = utterance["voice"]
        hesitation = str(rng.choice(HESITATIONS)) if rng.random() < HESITATION_FRACTION else ""
        pause = float(rng.uniform(*PAUSE_SECONDS))
        head = trimmed(speak(first, voice, rate, 50))
        middle = pause_audio(pause, speak(hesitation, voice, rate, 50) if hesitation else None, rng)
        tail = trimmed(speak(second, voice, rate, 50))
        audio = np.concatenate([head, middle, tail]).astype(np.float32)
        made.append(
            PausedCommand(
                utterance["text"],
                voice,
                first,
                second,
                pause,
                hesitation,
                audio,
                head.shape[0],
                head.shape[0] + middle.shape[0],
            )
        )
        index += 1
    return made


def _trimmed_speech(speech: Speech) -> Speech:
    """The speech without espeak-ng's silence around it, its word times moved to match."""
    span = loud_span(speech.audio)
    start = span.start / SAMPLE_RATE
    return Speech(
        speech.text,
        speech.audio[span],
        [(characters, max(0.0, at - start)) for characters, at in speech.word_starts],
    )


def paused_speech(text: str, voice: str, speed: int, pitch: int, rng: np.random.Generator) -> tuple[Speech, Speech]:
    """Training speech: ``text`` paused at a random place, and what a listener has heard partway into the pause
    (the words before it, then 0.3 s or more of the pause), with its transcript: the words before it."""
    first, second = splits(text)[int(rng.integers(len(text.split()) - 1))]
    head = _trimmed_speech(speak_timed(first, voice, speed, pitch))
    tail = _trimmed_speech(speak_timed(second, voice, speed, pitch))
    hesitation = str(rng.choice(HESITATIONS)) if rng.random() < HESITATION_FRACTION else ""
    seconds = float(rng.uniform(*PAUSE_SECONDS))
    middle = pause_audio(seconds, speak_timed(hesitation, voice, speed, pitch).audio if hesitation else None, rng)
    shift = (head.audio.shape[0] + middle.shape[0]) / SAMPLE_RATE
    whole = Speech(
        text,
        np.concatenate([head.audio, middle, tail.audio]).astype(np.float32),
        head.word_starts + [(characters + len(first) + 1, at + shift) for characters, at in tail.word_starts],
    )
    heard = int(rng.uniform(0.3 * SAMPLE_RATE, middle.shape[0]))  # the server's kept silence at the least
    stopped = Speech(
        first, np.concatenate([head.audio, middle[:heard]]).astype(np.float32), head.word_starts, tuple(head.ends)
    )
    return whole, stopped
