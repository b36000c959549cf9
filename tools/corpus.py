"""Home Assistant style commands from a grammar, and espeak-ng speech of them.

The grammar's slots are filled at random; a sentence is held out for
evaluation when its (template, area, device-or-number) combination is one the
training set never has, and voices are held out whole.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import json
import random
import re
import threading
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from tools.speech import OTHER_VOICES, festival_wav, to_16khz, trimmed
from wyoming_qwen3.home.names import Area, Entity, Home
from wyoming_qwen3.model.catalogue import resolve_model
from wyoming_qwen3.model.format import SAMPLE_RATE
from wyoming_qwen3.model.grammar import GRAMMAR_FILE

#: The demo model's folder, as the server finds it.
DEMO_FOLDER = resolve_model("demo", [], Path(".")).path
#: The grammars: the demo model's own file, which the server's endpointing reads too.
_GRAMMARS = {g["language"]: g for g in json.loads((DEMO_FOLDER / GRAMMAR_FILE).read_text())["grammars"]}


@dataclass(frozen=True)
class CommandSet:
    """One language's commands as the grammar file gives them: templates with slots, and each slot's words."""

    language: str
    templates: list[str]
    slots: dict[str, list[str]]


ENGLISH = CommandSet("English", _GRAMMARS["English"]["templates"], _GRAMMARS["English"]["slots"])
#: Mandarin commands, spoken by espeak-ng's ``cmn`` voice: written without spaces, a character a unit.
CHINESE = CommandSet("Chinese", _GRAMMARS["Chinese"]["templates"], _GRAMMARS["Chinese"]["slots"])
AREAS: list[str] = ENGLISH.slots["area"]
DEVICES: list[str] = ENGLISH.slots["device"]
COVERS: list[str] = ENGLISH.slots["cover"]
DOORS: list[str] = ENGLISH.slots["door"]
NUMBERS: list[str] = ENGLISH.slots["number"]
TEMPLATES: list[str] = ENGLISH.templates

#: espeak-ng voices: accents and variants. Evaluation voices are never trained on.
TRAIN_ACCENTS = ["en-us", "en-gb", "en-gb-scotland", "en-029", "en-gb-x-gbclan"]
TRAIN_VARIANTS = ["", "+m1", "+m2", "+m3", "+m4", "+f1", "+f2", "+f3", "+klatt"]
HELDOUT_VOICES = ["en-us-nyc+m7", "en-gb-x-rp+f4", "en-gb-x-gbcwmd+m5", "en-us+f5"]
#: espeak-ng has one Mandarin voice; its variants stand in for speakers, and these four are never trained on.
MANDARIN_TRAIN_VOICES = ["cmn" + v for v in TRAIN_VARIANTS]
MANDARIN_HELDOUT_VOICES = ["cmn+m7", "cmn+f4", "cmn+m5", "cmn+f5"]


@dataclass(frozen=True)
class Command:
    text: str
    #: What makes it unseen: (template index, first slot, second slot).
    signature: tuple[int, str, str]


def fill(template_index: int, rng: random.Random, language: CommandSet = ENGLISH, **chosen: str) -> Command:
    """A template of ``language`` with its slots filled at random, or with the ``chosen`` words."""
    template = language.templates[template_index]
    slots = {name: rng.choice(language.slots[name]) for name in ("area", "device", "number", "cover", "door")}
    slots.update(chosen)
    used = [name for name in ("area", "device", "number", "cover", "door") if "{" + name + "}" in template]
    values = [slots[name] for name in used] + ["", ""]
    return Command(template.format(**slots), (template_index, values[0], values[1]))


def is_heldout(signature: tuple[int, str, str]) -> bool:
    """About one combination in seven is never trained on (a fixed hash, so the split is stable)."""
    return sum(ord(c) for c in f"{signature}") % 7 == 0


def commands(count: int, heldout: bool, seed: int, language: CommandSet = ENGLISH) -> list[Command]:
    rng = random.Random(seed)
    out: list[Command] = []
    while len(out) < count:
        command = fill(rng.randrange(len(language.templates)), rng, language)
        if is_heldout(command.signature) == heldout:
            out.append(command)
    return out


def heldout_commands() -> list[dict[str, str]]:
    """The demo model's held-out commands as its card lists them: {"text", "voice"}, in order."""
    return json.loads((DEMO_FOLDER / "heldout.json").read_text())["utterances"]


def heldout_utterances(count: int, seed: int, language: CommandSet = ENGLISH) -> list[tuple[str, str]]:
    """(text, voice) of held-out commands, the language's held-out voices taken in turn."""
    voices = HELDOUT_VOICES if language is ENGLISH else MANDARIN_HELDOUT_VOICES
    return [(c.text, voices[i % len(voices)]) for i, c in enumerate(commands(count, True, seed, language))]


def word_salad(count: int, seed: int, language: CommandSet = ENGLISH) -> list[str]:
    """Random runs of the grammar's words: speech the sentence patterns cannot predict.

    Trained on commands alone, the decoder learns which slot values follow
    which template and overrules the audio for combinations it never saw
    ("play music in the basement" came out as "bedroom"); these make it listen.
    Mandarin's runs are of its slot words and the templates' pieces between slots, with no spaces.
    """
    rng = random.Random(seed)
    pieces = [*(v for values in language.slots.values() for v in values), *language.templates]
    if language is ENGLISH:
        pieces = [w for phrase in pieces for w in phrase.replace("{", " ").replace("}", " ").split()]
    else:
        pieces = [p for phrase in pieces for p in re.split(r"\{\w+\}", phrase) if p]
    vocabulary = sorted(set(pieces) - set(language.slots))
    joiner = " " if language is ENGLISH else ""
    return [joiner.join(rng.choice(vocabulary) for _ in range(rng.randint(3, 8))) for _ in range(count)]


@dataclass(frozen=True)
class Speech:
    """espeak-ng speech of a text at 16 kHz, and where espeak-ng says each word begins."""

    text: str
    audio: np.ndarray
    #: (characters of ``text`` before the word, seconds into ``audio``), in order. espeak-ng
    #: marks word groups: an unstressed "the" is spoken inside the word event before it.
    word_starts: list[tuple[int, float]]
    #: When each word's speech ends (seconds), where a pause or silence follows it; else the next
    #: word's start, and the end of the audio for the last.
    word_ends: tuple[float, ...] | None = None

    @property
    def ends(self) -> list[float]:
        if self.word_ends is not None:
            return list(self.word_ends)
        return [start for _, start in self.word_starts[1:]] + [len(self.audio) / SAMPLE_RATE]

    @property
    def last_word_sample(self) -> int:
        """The sample of ``audio`` where the last word group begins."""
        return int(self.word_starts[-1][1] * SAMPLE_RATE)

    def cut_inside_word(self, rng: np.random.Generator) -> tuple[np.ndarray, str]:
        """The audio cut in the first half of a random word, and the text wholly heard before it.

        What a streaming step sees mid-utterance; training on it teaches the model
        to write only what it has heard instead of finishing the sentence.
        """
        index = int(rng.integers(len(self.word_starts)))
        characters, start = self.word_starts[index]
        at = max(start + rng.uniform(0.0, 0.5) * (self.ends[index] - start), _SHORTEST_CUT_SECONDS)
        return self.audio[: int(at * SAMPLE_RATE)], self.text[:characters].strip()

    def stopped_before_word(self, rng: np.random.Generator) -> Speech | None:
        """The speech of the words before a random word group but the first, as a speaker who stops there says it.

        A speaker who pauses to think ("set a timer for" ...) is heard, for a while, saying just
        that. Trained without it, the demo model heard the head before the first slot of the 100
        held-out commands (then 0.3 s of a room's noise) wrong 12 times (docs/demo-model.md):
        "set a timer for four", and "play" for "close the". None for a single word group.
        """
        if len(self.word_starts) < 2:
            return None
        index = int(rng.integers(1, len(self.word_starts)))
        characters, _ = self.word_starts[index]
        end = self.ends[index - 1]
        return Speech(
            self.text[:characters].strip(),
            self.audio[: int(end * SAMPLE_RATE)],
            self.word_starts[:index],
            tuple(self.ends[:index]),
        )


#: Shorter audio than this gives the encoder next to nothing to attend to.
_SHORTEST_CUT_SECONDS = 0.2


class _Event(ctypes.Structure):
    """espeak_EVENT of speak_lib.h."""

    _fields_ = [
        ("type", ctypes.c_int),
        ("unique_identifier", ctypes.c_uint),
        ("text_position", ctypes.c_int),
        ("length", ctypes.c_int),
        ("audio_position", ctypes.c_int),
        ("sample", ctypes.c_int),
        ("user_data", ctypes.c_void_p),
        ("id", ctypes.c_char * 8),
    ]


class _Voice(ctypes.Structure):
    """espeak_VOICE of speak_lib.h."""

    _fields_ = [
        ("name", ctypes.c_char_p),
        ("languages", ctypes.c_char_p),
        ("identifier", ctypes.c_char_p),
        ("gender", ctypes.c_ubyte),
        ("age", ctypes.c_ubyte),
        ("variant", ctypes.c_ubyte),
        ("xx1", ctypes.c_ubyte),
        ("score", ctypes.c_int),
        ("spare", ctypes.c_void_p),
    ]


_SynthCallback = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.POINTER(ctypes.c_short), ctypes.c_int, ctypes.POINTER(_Event))
_AUDIO_OUTPUT_SYNCHRONOUS, _INITIALIZE_DONT_EXIT = 2, 0x8000
_EVENT_LIST_TERMINATED, _EVENT_WORD = 0, 1
_RATE, _PITCH = 1, 3
_POS_CHARACTER, _PHONEMES, _ENDPAUSE = 1, 0x100, 0x1000


class Espeak:
    """libespeak-ng in this process: espeak-ng's synthesis, with the word events its command hides.

    For training only: the library keeps state from one utterance to the next,
    so its samples differ slightly from a fresh ``espeak-ng`` process's (which
    is why ``tools.speech.speak``, used for evaluation, runs the command). The library
    holds one voice for the whole process, so calls are serialized.
    """

    def __init__(self) -> None:
        self._library = ctypes.CDLL(ctypes.util.find_library("espeak-ng") or "libespeak-ng.so.1")
        self.rate = self._library.espeak_Initialize(_AUDIO_OUTPUT_SYNCHRONOUS, 0, None, _INITIALIZE_DONT_EXIT)
        if self.rate <= 0:
            raise RuntimeError("libespeak-ng did not initialize")
        self._lock = threading.Lock()
        self._samples: list[np.ndarray] = []
        self._words: list[tuple[int, int]] = []
        self._callback = _SynthCallback(self._receive)  # kept: the library calls it later
        self._library.espeak_SetSynthCallback(self._callback)

    def _receive(self, wav: ctypes.Array, count: int, events: ctypes.Array) -> int:
        if wav and count > 0:
            self._samples.append(np.ctypeslib.as_array(wav, shape=(count,)).copy())
        index = 0
        while events[index].type != _EVENT_LIST_TERMINATED:
            if events[index].type == _EVENT_WORD:
                self._words.append((events[index].text_position - 1, events[index].sample))
            index += 1
        return 0

    def _set_voice(self, voice: str) -> None:
        """By name or file, else by language, as the espeak-ng command's ``-v`` does."""
        if self._library.espeak_SetVoiceByName(voice.encode()) == 0:
            return
        wanted = _Voice(languages=voice.encode())
        if self._library.espeak_SetVoiceByProperties(ctypes.byref(wanted)) != 0:
            raise ValueError(f"espeak-ng has no voice {voice!r}")

    def samples(self, text: str, voice: str, speed: int, pitch: int) -> tuple[np.ndarray, list[tuple[int, int]]]:
        """16-bit samples at ``self.rate`` and (characters before, first sample) of each word."""
        with self._lock:
            self._samples, self._words = [], []
            self._set_voice(voice)
            self._library.espeak_SetParameter(_RATE, speed, 0)
            self._library.espeak_SetParameter(_PITCH, pitch, 0)
            encoded = text.encode()
            self._library.espeak_Synth(
                encoded, len(encoded) + 1, 0, _POS_CHARACTER, 0, _PHONEMES | _ENDPAUSE, None, None
            )
            self._library.espeak_Synchronize()
            return np.concatenate(self._samples).astype("<i2"), self._words

    def speak(self, text: str, voice: str, speed: int, pitch: int) -> Speech:
        samples, words = self.samples(text, voice, speed, pitch)
        audio = to_16khz(["-t", "raw", "-r", str(self.rate), "-e", "signed", "-b", "16", "-c", "1"], samples.tobytes())
        # libespeak-ng sometimes adds a word event at -1 at the text's end ("lock the back door", en-us, 187, 47):
        # taken for the last word, it made a soft last word of the silence after it, an empty one.
        return Speech(text, audio, [(c, sample / self.rate) for c, sample in words if c >= 0])


@functools.cache
def espeak() -> Espeak:
    """The process's one libespeak-ng (the library itself is process-wide state)."""
    return Espeak()


#: Training voices of festival (``tools.speech.OTHER_VOICES``), named as ``speak_timed`` takes them.
FESTIVAL_VOICES = [f"festival:{voice}" for voice in OTHER_VOICES["festival"]]


def speak_timed(text: str, voice: str, speed: int, pitch: int) -> Speech:
    """Training speech with the times its words begin: espeak-ng's, or festival's for a ``festival:`` voice."""
    if voice.startswith("festival:"):
        return festival_timed(text, voice.removeprefix("festival:"), speed, pitch)
    return espeak().speak(text, voice, speed, pitch)


def festival_timed(text: str, voice: str, speed: int, pitch: int) -> Speech:
    """festival speech of ``text`` with its words' times (festival's own Word items): ``speed`` in espeak-ng's
    words a minute as festival's Duration_Stretch 175 / ``speed`` (1 at espeak-ng's default 175, where the
    diphone voices' own is 1.1), ``pitch`` 0-100 (50: the voice's own; sox shifts it by up to 3 semitones)."""
    words = text.split()
    wav, times = festival_wav(text, voice, 175 / speed)
    if len(times) != len(words):  # festival split or joined a token: one span for the whole
        times = [(times[0][0], times[-1][1])] if times else [(0.0, 0.0)]
        words = [text]
    audio = to_16khz(["-t", "wav"], wav, ["pitch", str((pitch - 50) * 6)] if pitch != 50 else None)
    offsets, at = [], 0
    for word in words:
        at = text.index(word, at)
        offsets.append(at)
        at += len(word)
    return Speech(text, audio, [(o, start) for o, (start, _) in zip(offsets, times, strict=True)],
                  tuple(end for _, end in times))  # fmt: skip


def augment(speech: Speech, rng: np.random.Generator, loudness: float | None = None) -> Speech:
    """Gain, a pause inside the command (a third of the time), up to 1 s before it and 3 s after it, and noise.

    What a satellite streams: a room's hiss before and after the command (HA keeps streaming
    its silence, 0.7 s by default, and a server that ends the turn itself hears more), and
    speakers who pause mid-command ("set a timer for" ... "ten minutes"). The noise is a room's
    (-80 to -55 dBFS) or, half the time, 15-45 dB under the speech as spoken (before the gain, so
    3-45 dB under what is heard). ``loudness``: the mean power that noise is set under, where not the
    speech's own (a soft last word's, so that the noise does not bury the word).
    """
    audio = speech.audio * rng.uniform(0.25, 1.0)
    starts, ends = list(speech.word_starts), speech.ends
    if len(starts) > 2 and rng.random() < 1 / 3:
        index = int(rng.integers(1, len(starts)))  # before a word other than the first
        at = int(starts[index][1] * SAMPLE_RATE)
        pause = rng.uniform(0.3, 0.9)
        audio = np.concatenate([audio[:at], np.zeros(int(pause * SAMPLE_RATE), np.float32), audio[at:]])
        starts = [(c, t + (pause if i >= index else 0.0)) for i, (c, t) in enumerate(starts)]
        ends = [t + (pause if i >= index else 0.0) for i, t in enumerate(ends)]
    # Half the commands as a satellite streams them after the wake word, half cut close (as the
    # held-out set is spoken): trained on long silences alone, the model lost 0.6 points of WER on
    # commands without them (5.9% against 5.3%).
    streamed = rng.random() < 0.5
    lead = np.zeros(int(rng.uniform(0.0, 1.0 if streamed else 0.4) * SAMPLE_RATE), np.float32)
    trail = np.zeros(int(rng.uniform(0.0, 3.0 if streamed else 0.4) * SAMPLE_RATE), np.float32)
    audio = np.concatenate([lead, audio, trail])
    if rng.random() < 0.5:
        level = 10 ** (rng.uniform(-80, -55) / 20)
    else:
        power = float(np.mean(speech.audio**2)) if loudness is None else loudness
        level = np.sqrt((power + 1e-9) / 10 ** (rng.uniform(15, 45) / 10))
    noisy = np.clip(audio + rng.standard_normal(audio.shape[0]).astype(np.float32) * level, -1.0, 1.0)
    shift = lead.shape[0] / SAMPLE_RATE
    return Speech(
        speech.text,
        noisy.astype(np.float32),
        [(characters, start + shift) for characters, start in starts],
        tuple(end + shift for end in ends),
    )


#: A quiet room through a satellite's microphone (16-bit samples of standard deviation 10).
ROOM_DBFS = -70.0


def with_trailing_noise(
    audio: np.ndarray, seconds: float, rng: np.random.Generator, dbfs: float = ROOM_DBFS
) -> np.ndarray:
    """The audio, then ``seconds`` of a room's noise: what a satellite streams after a command."""
    return np.concatenate([audio, room(seconds, rng, dbfs)])


def room(seconds: float, rng: np.random.Generator, dbfs: float = ROOM_DBFS) -> np.ndarray:
    """``seconds`` of a room's noise through a satellite's microphone."""
    return rng.normal(0, 10 ** (dbfs / 20), int(seconds * SAMPLE_RATE)).astype(np.float32)


def warped(speech: Speech, factor: float) -> Speech:
    """The speech resampled to play ``factor`` times as fast: pitch and formants ``factor`` times as high."""
    length = int(speech.audio.shape[0] / factor)
    audio = np.interp(np.arange(length) * factor, np.arange(speech.audio.shape[0]), speech.audio).astype(np.float32)
    ends = tuple(t / factor for t in speech.word_ends) if speech.word_ends is not None else None
    return Speech(speech.text, audio, [(c, t / factor) for c, t in speech.word_starts], ends)


def tilted(speech: Speech, coefficient: float) -> Speech:
    """The speech through a first-order filter ``x[n] - coefficient * x[n-1]`` at the same loudness: brighter
    for a positive coefficient, duller for a negative one, as another microphone or recording would be."""
    audio = speech.audio.copy()
    audio[1:] -= coefficient * speech.audio[:-1]
    audio *= np.sqrt((float(np.mean(speech.audio**2)) + 1e-12) / (float(np.mean(audio**2)) + 1e-12))
    return Speech(speech.text, audio, speech.word_starts, speech.word_ends)


def with_last_word_softer(speech: Speech, softer_db: float) -> Speech:
    """The speech with its last word group ``softer_db`` quieter in place, with no pause before it: for training,
    where the word times must hold (``with_soft_last_word`` cuts a pause in and trims the parts)."""
    at = speech.last_word_sample
    audio = speech.audio.copy()
    audio[at:] *= 10 ** (-softer_db / 20)
    return Speech(speech.text, audio, speech.word_starts, speech.word_ends)


def with_soft_last_word(speech: Speech, pause_seconds: float, softer_db: float, seed: int) -> tuple[np.ndarray, int]:
    """The command, a pause of a room's noise, then its last word group ``softer_db`` softer, over the room;
    and the sample where that word group starts.

    A speaker who turns away, or thinks, before the last word ("switch on the speaker in the" ... "hall").
    espeak-ng's own silence is trimmed from both parts, so the pause is the one asked for.
    """
    at = speech.last_word_sample
    head, tail = trimmed(speech.audio[:at]), trimmed(speech.audio[at:]) * 10 ** (-softer_db / 20)
    rng = np.random.default_rng(seed)
    room = rng.normal(0, 10 ** (ROOM_DBFS / 20), int(pause_seconds * SAMPLE_RATE) + tail.shape[0])
    gap = int(pause_seconds * SAMPLE_RATE)
    return np.concatenate([head, room[:gap], tail + room[gap:]]).astype(np.float32), head.shape[0] + gap


def split_before_first_slot(text: str) -> tuple[str, str] | None:
    """A command cut where a speaker pauses to think of the name: before its first slot ("set a timer for" |
    "ten minutes", "turn on the" | "kitchen lights"); None for a text no template makes."""
    for template in TEMPLATES:
        head = template.split("{", 1)[0].strip()
        if "{" in template and text.startswith(head + " ") and len(head.split()) >= 2:
            return head, text[len(head) + 1 :]
    return None


#: The domain Home Assistant gives each of the corpus's devices.
_DEVICE_DOMAINS = {"lights": "light", "lamp": "light", "fan": "fan", "heater": "climate", "speaker": "media_player",
                   "tv": "media_player", "radio": "media_player", "computer": "switch"}  # fmt: skip


def corpus_home() -> Home:
    """A home whose names the corpus's commands use, as Home Assistant would hold it: in every area each device
    and cover by its own name ("lamp" in the kitchen; the lights by their area, as Home Assistant's sentences
    name them), a vacuum and a thermostat; the doors' locks in no area."""
    entities = []
    for area in AREAS:
        area_id = area.replace(" ", "_")
        for device in [*(d for d in DEVICES if d != "lights"), *COVERS, "vacuum", "thermostat"]:
            domain = _DEVICE_DOMAINS.get(
                device, "cover" if device in COVERS else device.replace("thermostat", "climate")
            )
            entities.append(Entity(f"{domain}.{area_id}_{device.replace(' ', '_')}", (device,), area_id))
    entities += [Entity(f"lock.{door.replace(' ', '_')}", (door,)) for door in DOORS]
    return Home(tuple(entities), tuple(Area(area.replace(" ", "_"), (area,)) for area in AREAS))
