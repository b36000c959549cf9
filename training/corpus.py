"""Home Assistant style commands from a grammar, and espeak-ng speech of them.

The grammar's slots are filled at random; a sentence is held out for
evaluation when its (template, area, device-or-number) combination is one the
training set never has, and voices are held out whole.
"""

from __future__ import annotations

import random
import subprocess
from dataclasses import dataclass

import numpy as np

SAMPLE_RATE = 16000

AREAS = [
    "kitchen",
    "living room",
    "bedroom",
    "bathroom",
    "office",
    "garage",
    "hall",
    "basement",
    "garden",
    "dining room",
    "kids room",
    "attic",
]
DEVICES = ["lights", "lamp", "fan", "heater", "speaker", "tv", "radio", "computer"]
COVERS = ["blinds", "curtains", "window", "shutters"]
DOORS = ["front door", "back door", "garage door", "side door"]
NUMBERS = [
    "one",
    "two",
    "three",
    "four",
    "five",
    "six",
    "seven",
    "eight",
    "nine",
    "ten",
    "eleven",
    "twelve",
    "fifteen",
    "twenty",
    "twenty one",
    "twenty two",
    "twenty five",
    "thirty",
    "forty",
    "fifty",
    "sixty",
    "seventy",
    "eighty",
    "ninety",
]

TEMPLATES = [
    "turn on the {area} {device}",
    "turn off the {area} {device}",
    "switch on the {device} in the {area}",
    "switch off the {device} in the {area}",
    "set the {area} temperature to {number} degrees",
    "dim the {area} {device} to {number} percent",
    "set a timer for {number} minutes",
    "open the {area} {cover}",
    "close the {cover} in the {area}",
    "lock the {door}",
    "unlock the {door}",
    "what is the temperature in the {area}",
    "is the {door} open",
    "start the vacuum in the {area}",
    "play music in the {area}",
    "stop the music in the {area}",
]

#: espeak-ng voices: accents and variants. Evaluation voices are never trained on.
TRAIN_ACCENTS = ["en-us", "en-gb", "en-gb-scotland", "en-029", "en-gb-x-gbclan"]
TRAIN_VARIANTS = ["", "+m1", "+m2", "+m3", "+m4", "+f1", "+f2", "+f3", "+klatt"]
HELDOUT_VOICES = ["en-us-nyc+m7", "en-gb-x-rp+f4", "en-gb-x-gbcwmd+m5", "en-us+f5"]


@dataclass(frozen=True)
class Command:
    text: str
    #: What makes it unseen: (template index, first slot, second slot).
    signature: tuple[int, str, str]


def fill(template_index: int, rng: random.Random) -> Command:
    template = TEMPLATES[template_index]
    slots = {
        "area": rng.choice(AREAS),
        "device": rng.choice(DEVICES),
        "number": rng.choice(NUMBERS),
        "cover": rng.choice(COVERS),
        "door": rng.choice(DOORS),
    }
    used = [name for name in ("area", "device", "number", "cover", "door") if "{" + name + "}" in template]
    values = [slots[name] for name in used] + ["", ""]
    return Command(template.format(**slots), (template_index, values[0], values[1]))


def is_heldout(signature: tuple[int, str, str]) -> bool:
    """About one combination in seven is never trained on (a fixed hash, so the split is stable)."""
    return sum(ord(c) for c in f"{signature}") % 7 == 0


def commands(count: int, heldout: bool, seed: int) -> list[Command]:
    rng = random.Random(seed)
    out: list[Command] = []
    while len(out) < count:
        command = fill(rng.randrange(len(TEMPLATES)), rng)
        if is_heldout(command.signature) == heldout:
            out.append(command)
    return out


def word_salad(count: int, seed: int) -> list[str]:
    """Random runs of the grammar's words: speech the sentence patterns cannot predict.

    Trained on commands alone, the decoder learns which slot values follow
    which template and overrules the audio for combinations it never saw
    ("play music in the basement" came out as "bedroom"); these make it listen.
    """
    rng = random.Random(seed)
    vocabulary = sorted(
        {
            w
            for phrase in AREAS + DEVICES + COVERS + DOORS + NUMBERS + TEMPLATES
            for w in phrase.replace("{", " ").replace("}", " ").split()
            if w not in ("area", "device", "number", "cover", "door")
        }
    )
    return [" ".join(rng.choice(vocabulary) for _ in range(rng.randint(3, 8))) for _ in range(count)]


def speak(text: str, voice: str, speed: int, pitch: int) -> np.ndarray:
    """espeak-ng speech at 16 kHz mono float32, the same for the same arguments on every call."""
    wav = subprocess.run(
        ["espeak-ng", "-v", voice, "-s", str(speed), "-p", str(pitch), "--stdout", text],
        check=True,
        capture_output=True,
    ).stdout
    return _to_16khz(["-t", "wav"], wav)


def _to_16khz(input_format: list[str], data: bytes) -> np.ndarray:
    # No dither (-D): sox's dither made the same speech differ from run to run.
    raw = subprocess.run(
        ["sox", "-D", *input_format, "-", "-r", str(SAMPLE_RATE), "-c", "1", "-b", "16", "-t", "raw", "-e", "signed", "-"],
        input=data,
        check=True,
        capture_output=True,
    ).stdout
    return np.frombuffer(raw, dtype="<i2").astype(np.float32) / 32768.0


def augment(audio: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Gain, background noise (15-45 dB SNR) and leading/trailing silence."""
    audio = audio * rng.uniform(0.25, 1.0)
    lead, trail = (np.zeros(int(rng.uniform(0.0, 0.4) * SAMPLE_RATE), np.float32) for _ in range(2))
    audio = np.concatenate([lead, audio, trail])
    power = float(np.mean(audio**2)) + 1e-9
    noise = rng.standard_normal(audio.shape[0]).astype(np.float32) * np.sqrt(power / 10 ** (rng.uniform(15, 45) / 10))
    return np.clip(audio + noise, -1.0, 1.0).astype(np.float32)
