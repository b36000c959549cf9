"""Stand-in for ``mlx-qwen3-asr`` (moona3k/mlx-qwen3-asr at 03d1ab9, version 0.4), for tests off a Mac.

It follows the library's source where the backend depends on it:

- ``Session(model, *, dtype, tokenizer_model=None)`` loads a local folder
  holding ``config.json``; any other name is a hub repo fetched with
  ``snapshot_download``, which fails here as it does offline.
- ``Session.transcribe(audio, *, context, language, return_timestamps, ...)``
  returns a ``TranscriptionResult`` whose ``text`` is the model's own text
  after ``parse_asr_output`` (stripped; ``language`` canonical, ``"unknown"``
  for no output, ``""`` for ``language None`` with no text), and ``segments``
  only with ``return_timestamps=True``. Asking for timestamps builds a
  ``ForcedAligner``, which loads ``Qwen/Qwen3-ForcedAligner-0.6B`` from the hub
  on first use: here that fails as offline, and is counted.
- ``Session.model_info["support_languages"]`` is the config's list.

What the stand-in "hears" is scripted (``write_model``, ``timeline_of``): the model folder's ``standin.json``
lists units of text with their times; ``speech()`` renders them as noise
bursts (silence between), and the stand-in finds where the audio it is given
lies in that rendering, as a real model hears where it is from the sound. A
unit is heard when most of it lies inside the audio; one cut by the end of the
audio is heard half-said (a word) or not at all (a character).
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

SAMPLE_RATE = 16000
DEFAULT_MODEL_ID = "Qwen/Qwen3-ASR-0.6B"
ALIGNER_MODEL_ID = "Qwen/Qwen3-ForcedAligner-0.6B"
DEFAULT_DIARIZATION_DEVICE = "auto"
_SPOKEN, _QUIET = 0.3, 5e-4  # speech, and a room's hiss (-66 dBFS)


@dataclass(frozen=True)
class TranscriptionResult:
    text: str
    language: str
    segments: list[dict] | None = None
    chunks: list[dict] | None = None
    speaker_segments: list[dict] | None = None
    finish_reason: str | None = None
    truncated: bool = False


class ForcedAligner:
    """Loads its own 0.6B model from the hub on first use; offline, that fails."""

    def __init__(self, model_path: str = ALIGNER_MODEL_ID) -> None:
        raise OSError(f"We couldn't connect to 'https://huggingface.co' to load {model_path}")


Timeline = list[tuple[str, float, float]]


def timeline_of(units: list[str], start: float = 0.3, unit_seconds: float = 0.3, gap: float = 0.15) -> Timeline:
    """Units spoken one after another, ``gap`` seconds apart (a pause between words)."""
    timeline = []
    for index, unit in enumerate(units):
        begin = start + index * (unit_seconds + gap)
        timeline.append((unit, round(begin, 3), round(begin + unit_seconds, 3)))
    return timeline


def write_model(
    folder: Path,
    timeline: Timeline,
    language: str = "English",
    failure: str | None = None,
    languages: tuple[str, ...] = ("English", "Chinese", "Japanese"),
) -> Path:
    """A model folder for the stand-in: a Qwen3-ASR ``config.json`` and the script it hears.

    ``failure``: every transcription raises ImportError with this message (a missing dependency).
    """
    folder.mkdir(parents=True, exist_ok=True)
    config = {"model_type": "qwen3_asr", "support_languages": list(languages)}
    (folder / "config.json").write_text(json.dumps(config), encoding="utf-8")
    script = {"language": language, "timeline": timeline, "failure": failure}
    (folder / "standin.json").write_text(json.dumps(script, ensure_ascii=False), encoding="utf-8")
    return folder


def spoken(timeline: Timeline, tail_seconds: float = 0.5) -> np.ndarray:
    """The rendering of a whole timeline and ``tail_seconds`` after its last unit."""
    return speech(timeline, timeline[-1][2] + tail_seconds)


def speech(timeline: Timeline, seconds: float, seed: int = 0) -> np.ndarray:
    """The rendering of a timeline: loud noise where a unit is spoken, faint noise elsewhere."""
    # Every stretch has a generator of its own, so a longer rendering starts with a shorter one.
    audio = np.random.default_rng(seed).normal(0, _QUIET, int(seconds * SAMPLE_RATE)).astype(np.float32)
    for index, (_, start, end) in enumerate(timeline):
        span = slice(int(start * SAMPLE_RATE), int(end * SAMPLE_RATE))
        audio[span] += np.random.default_rng((seed, index)).normal(0, _SPOKEN, audio[span].shape[0]).astype(np.float32)
    # Whole 16-bit steps, so the audio is found again after it went over Wyoming as PCM.
    return (np.clip(np.round(audio * 32768), -32768, 32767) / 32768).astype(np.float32)


def _pcm(samples: np.ndarray) -> bytes:
    """16-bit PCM, as the audio is compared after it went over Wyoming."""
    return np.round(samples * 32768).astype("<i2").tobytes()


def _canonical(language: str | None) -> str | None:
    if language is None or not str(language).strip():
        return None
    value = str(language).strip()
    return value[:1].upper() + value[1:].lower() if value.isalpha() else value


def parse_asr_output(text: str, user_language: str | None = None) -> tuple[str, str]:
    """As the library's ``tokenizer.parse_asr_output`` (without its repetition fixer)."""
    s = str(text or "").strip()
    if not s:
        return "unknown", ""
    if user_language:
        return _canonical(user_language) or user_language, s.split("<asr_text>", 1)[-1].strip()
    if "<asr_text>" in s:
        lang_part, transcript = (part.strip() for part in s.split("<asr_text>", 1))
        lang = lang_part.removeprefix("language ")
        if "language none" in lang_part.lower() and not transcript:
            return "", ""
        return _canonical(lang) or lang, transcript
    return "unknown", s


class Session:
    """``mlx_qwen3_asr.Session``: the same signature, loading a local folder or failing on a hub name."""

    def __init__(
        self, model: str = DEFAULT_MODEL_ID, *, dtype: Any = "float16", tokenizer_model: str | None = None
    ) -> None:
        self.model = model
        self.dtype = dtype
        #: Calls to ``transcribe``: (seconds of audio, the options that change what it does).
        self.calls: list[tuple[float, dict]] = []
        #: The threads the model was loaded on and used on (MLX 0.31+ binds lazily built arrays to one thread).
        self.threads = {threading.current_thread().name}
        folder = Path(model)
        if not (folder / "config.json").is_file():
            raise OSError(f"We couldn't connect to 'https://huggingface.co' to load {model}")
        self.config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
        script = json.loads((folder / "standin.json").read_text(encoding="utf-8"))
        self.language: str = script["language"]
        self.timeline = [(text, float(start), float(end)) for text, start, end in script["timeline"]]
        self.failure: str | None = script.get("failure")
        # Longer than any audio a test sends: a longer rendering starts with every shorter one.
        self._rendering = _pcm(speech(self.timeline, max(end for _, _, end in self.timeline) + 120.0))

    def _locate(self, audio: np.ndarray) -> float | None:
        probe, haystack = _pcm(audio[:64]), self._rendering
        at = haystack.find(probe)
        while at >= 0 and at % 2:
            at = haystack.find(probe, at + 1)
        return at / 2 / SAMPLE_RATE if at >= 0 else None  # other audio: nothing scripted is heard

    def _heard(self, start: float, end: float) -> str:
        pieces = []
        for text, unit_start, unit_end in self.timeline:
            if unit_start < start and (unit_start + unit_end) / 2 < start or unit_start >= end:
                continue  # before the audio (mostly), or after it
            if unit_end > end:  # cut by the end of the audio
                stripped = text.strip()
                if len(stripped) < 2 or (end - unit_start) < (unit_end - unit_start) / 4:
                    continue
                text = text[: len(text) - len(stripped) // 2]
            pieces.append(text)
        return "".join(pieces)

    def transcribe(
        self,
        audio: Any,
        *,
        draft_model: Any = None,
        context: str = "",
        language: str | None = None,
        return_timestamps: bool = False,
        diarize: bool = False,
        diarization_num_speakers: int | None = None,
        diarization_min_speakers: int = 1,
        diarization_max_speakers: int = 8,
        diarization_device: str = DEFAULT_DIARIZATION_DEVICE,
        return_chunks: bool = False,
        forced_aligner: Any = None,
        max_new_tokens: int | None = None,
        num_draft_tokens: int = 4,
        verbose: bool = False,
        on_progress: Any = None,
    ) -> TranscriptionResult:
        samples = np.asarray(audio, dtype=np.float32)
        self.calls.append((samples.shape[0] / SAMPLE_RATE, {"return_timestamps": return_timestamps}))
        self.threads.add(threading.current_thread().name)
        if return_timestamps or diarize:
            ForcedAligner(forced_aligner or ALIGNER_MODEL_ID)
        if self.failure:
            raise ImportError(self.failure)
        start = self._locate(samples) if samples.shape[0] >= 64 else None
        text = "" if start is None else self._heard(start, start + samples.shape[0] / SAMPLE_RATE)
        raw = f"language {self.language}<asr_text>{text}" if text else ""
        detected, transcript = parse_asr_output(raw, language)
        return TranscriptionResult(text=transcript, language=detected)

    @property
    def model_info(self) -> dict[str, Any]:
        return {
            "model_id": self.model,
            "resolved_model_path": self.model,
            "dtype": str(self.dtype),
            "vocab_size": None,
            "support_languages": list(self.config.get("support_languages", []) or []),
        }
