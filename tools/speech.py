"""Real synthesized speech for tests, benchmarks and training: espeak-ng, converted by sox.

One way to speak, so that every figure and test hears the same audio for the
same words: ``speak`` gives 16 kHz mono float32 samples (the same on every
call: sox runs without dither), ``speak_pcm`` 16-bit PCM in any format sox
writes (for the server's format conversion), and ``pcm16`` turns samples into
what a Wyoming client sends. ``speak_with`` speaks with another synthesizer
family (flite, festival), to measure on speech unlike the demo model's training.
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
import wave
from dataclasses import dataclass
from io import BytesIO
from pathlib import Path

import numpy as np

from wyoming_qwen3.model.format import SAMPLE_RATE


@dataclass(frozen=True)
class Speech:
    """PCM audio in a Wyoming format."""

    rate: int
    width: int
    channels: int
    audio: bytes

    @property
    def seconds(self) -> float:
        return len(self.audio) / (self.rate * self.width * self.channels)


def require_tools() -> None:
    """Raise RuntimeError, naming the packages, where espeak-ng or sox is missing."""
    missing = [tool for tool in ("espeak-ng", "sox") if shutil.which(tool) is None]
    if missing:
        raise RuntimeError(f"{' and '.join(missing)} needed: apt-get install espeak-ng sox (script/test does this)")


def espeak_wav(text: str, voice: str = "en-us", speed: int = 175, pitch: int = 50) -> bytes:
    """espeak-ng's own WAV (22.05 kHz mono 16-bit) of ``text``."""
    command = ["espeak-ng", "-v", voice, "-s", str(speed), "-p", str(pitch), "--stdout", text]
    return subprocess.run(command, check=True, capture_output=True).stdout


def to_16khz(input_format: list[str], data: bytes, effects: list[str] | None = None) -> np.ndarray:
    """Audio of any format sox reads (``input_format``: its options for the input) as 16 kHz mono float32, through
    sox's ``effects`` if any."""
    # No dither (-D): sox's dither made the same speech differ from run to run.
    output = ["-r", str(SAMPLE_RATE), "-c", "1", "-b", "16", "-e", "signed", "-t", "raw", "-", *(effects or [])]
    raw = subprocess.run(["sox", "-D", *input_format, "-", *output], input=data, check=True, capture_output=True)
    return np.frombuffer(raw.stdout, dtype="<i2").astype(np.float32) / 32768.0


def speak(text: str, voice: str = "en-us", speed: int = 175, pitch: int = 50) -> np.ndarray:
    """espeak-ng speech at 16 kHz mono float32, the same for the same arguments on every call."""
    return to_16khz(["-t", "wav"], espeak_wav(text, voice, speed, pitch))


def loud_span(samples: np.ndarray, floor: float = 0.02) -> slice:
    """From the first to the last sample above ``floor`` (all of them where none is)."""
    loud = np.flatnonzero(np.abs(samples) > floor)
    return slice(int(loud[0]), int(loud[-1]) + 1) if loud.size else slice(0, samples.shape[0])


def trimmed(samples: np.ndarray, floor: float = 0.02) -> np.ndarray:
    """The samples from the first to the last one above ``floor``: speech without espeak-ng's own silence
    around it (up to 0.3 s at each end, which would lengthen any pause put between two parts)."""
    return samples[loud_span(samples, floor)]


#: Synthesizer families other than espeak-ng, and their voices (Debian: flite; festival with festvox-kallpc16k,
#: festvox-kdlpc16k and festvox-us-slt-hts): diphone (kal16, kal_diphone, ked_diphone), unit selection (awb, rms,
#: slt) and statistical parametric (cmu_us_slt_arctic_hts) speech.
OTHER_VOICES: dict[str, tuple[str, ...]] = {
    "flite": ("kal16", "awb", "rms", "slt"),
    "festival": ("kal_diphone", "ked_diphone", "cmu_us_slt_arctic_hts"),
}


def speak_with(synthesizer: str, text: str, voice: str) -> np.ndarray:
    """``text`` spoken by ``synthesizer`` (a key of OTHER_VOICES) in ``voice``, at 16 kHz mono float32."""
    if synthesizer not in OTHER_VOICES:
        raise ValueError(f"no synthesizer {synthesizer!r} (known: {', '.join(OTHER_VOICES)})")
    if shutil.which(synthesizer) is None:
        raise RuntimeError(f"{synthesizer} needed: apt-get install flite festival festvox-kallpc16k festvox-kdlpc16k")
    if synthesizer == "festival":
        return to_16khz(["-t", "wav"], festival_wav(text, voice)[0])
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder, "speech.wav")
        subprocess.run(["flite", "-voice", voice, "-t", text, "-o", str(path)], check=True, capture_output=True)
        return to_16khz(["-t", "wav"], path.read_bytes())


def festival_wav(text: str, voice: str, duration_stretch: float | None = None) -> tuple[bytes, list[tuple[float, ...]]]:
    """festival's own WAV of ``text`` in ``voice``, and each of its Word items' (start, end) seconds;
    ``duration_stretch`` over the voice's own (None: its own, 1.1 for the diphone voices, 1 for the HTS one)."""
    stretch = "" if duration_stretch is None else f"(Parameter.set 'Duration_Stretch {duration_stretch:.3f})"
    with tempfile.TemporaryDirectory() as folder:
        script = (
            f"(voice_{voice}){stretch}"
            f'(set! utt (utt.synth (Utterance Text "{text.replace(chr(34), "")}")))'
            f'(utt.save.wave utt "{folder}/speech.wav" \'riff)'
            '(mapcar (lambda (w) (format t "%f %f\\n" (item.feat w "word_start") (item.feat w "word_end")))'
            " (utt.relation.items utt 'Word))"
        )
        Path(folder, "speech.scm").write_text(script)
        printed = subprocess.run(["festival", "-b", f"{folder}/speech.scm"], check=True, capture_output=True, text=True)
        wav = Path(folder, "speech.wav").read_bytes()
    return wav, [tuple(float(v) for v in line.split()) for line in printed.stdout.splitlines() if line.strip()]


def speak_pcm(text: str, *sox_args: str, voice: str = "en-us") -> Speech:
    """espeak-ng speech as PCM: its own format, or converted by sox with ``sox_args`` ("-c", "2", ...)."""
    wav = espeak_wav(text, voice)
    if sox_args:
        # wavpcm: plain PCM headers, which the wave module reads (not WAVE_FORMAT_EXTENSIBLE).
        command = ["sox", "-t", "wav", "-", *sox_args, "-t", "wavpcm", "-"]
        wav = subprocess.run(command, input=wav, check=True, capture_output=True).stdout
    return read_wav(wav)


def read_wav(data: bytes) -> Speech:
    with wave.open(BytesIO(data), "rb") as wav:
        return Speech(wav.getframerate(), wav.getsampwidth(), wav.getnchannels(), wav.readframes(wav.getnframes()))


def pcm16(samples: np.ndarray) -> bytes:
    """Float samples in [-1, 1] as 16-bit little-endian PCM."""
    return (np.clip(samples, -1, 1) * 32767).astype("<i2").tobytes()


def as_speech(samples: np.ndarray) -> Speech:
    """16 kHz float samples as the PCM a Home Assistant satellite sends."""
    return Speech(SAMPLE_RATE, 2, 1, pcm16(samples))
