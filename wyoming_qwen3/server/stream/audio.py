"""Wyoming audio chunks of any format to 16 kHz mono float32 samples."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from wyoming.audio import AudioChunk, AudioChunkConverter, AudioFormat

from ...model.format import SAMPLE_RATE, SAMPLES_PER_FRAME

#: Sample widths (bytes) that audioop converts; 8-bit is unsigned, as in WAV.
SUPPORTED_WIDTHS = (1, 2, 3, 4)
MAX_CHANNELS = 8
RATE_RANGE = (1000, 384000)


class AudioFormatError(ValueError):
    """Audio this server cannot read, or a format that changed mid-stream."""


def check_format(audio_format: AudioFormat) -> None:
    """Raise AudioFormatError for a rate, width or channel count out of range."""
    rate, width, channels = audio_format.rate, audio_format.width, audio_format.channels
    if not all(isinstance(v, int) and not isinstance(v, bool) for v in (rate, width, channels)):
        raise AudioFormatError(f"rate, width and channels must be integers, got {rate!r}, {width!r}, {channels!r}")
    if not RATE_RANGE[0] <= rate <= RATE_RANGE[1]:
        raise AudioFormatError(f"unsupported sample rate {rate} Hz (supported: {RATE_RANGE[0]}-{RATE_RANGE[1]})")
    if width not in SUPPORTED_WIDTHS:
        raise AudioFormatError(f"unsupported sample width {width} bytes (supported: 1, 2, 3, 4)")
    if not 1 <= channels <= MAX_CHANNELS:
        raise AudioFormatError(f"unsupported channel count {channels} (supported: 1-{MAX_CHANNELS})")


@dataclass
class AudioNormalizer:
    """Converts the chunks of one stream, whose format ``audio-start`` fixed."""

    source: AudioFormat
    # Width and rate go through wyoming's converter. Channels are averaged here:
    # the converter's audioop.tomono(1.0, 1.0) *sums* the channels, which clips
    # loud stereo (0x4000 + 0x4000 saturates at 0x7fff).
    _to_16_bit: AudioChunkConverter = field(default_factory=lambda: AudioChunkConverter(width=2))
    _to_16_khz: AudioChunkConverter = field(default_factory=lambda: AudioChunkConverter(rate=SAMPLE_RATE))

    def __post_init__(self) -> None:
        check_format(self.source)

    def convert(self, chunk: AudioChunk) -> np.ndarray:
        """Samples of one chunk, in [-1, 1) at 16 kHz mono."""
        source = self.source
        if (chunk.rate, chunk.width, chunk.channels) != (source.rate, source.width, source.channels):
            raise AudioFormatError(
                f"audio format changed mid-stream: audio-start said {source.rate} Hz, "
                f"{source.width} bytes, {source.channels} channels; the chunk says "
                f"{chunk.rate} Hz, {chunk.width} bytes, {chunk.channels} channels"
            )
        frame_bytes = source.width * source.channels
        if len(chunk.audio) % frame_bytes:
            raise AudioFormatError(
                f"audio-chunk of {len(chunk.audio)} bytes is not a whole number of {frame_bytes}-byte frames"
            )
        wide = self._to_16_bit.convert(chunk)
        samples = np.frombuffer(wide.audio, dtype="<i2")
        if source.channels > 1:
            samples = samples.reshape(-1, source.channels).mean(axis=1).astype("<i2")
        mono = AudioChunk(rate=source.rate, width=2, channels=1, audio=samples.tobytes())
        resampled = self._to_16_khz.convert(mono)
        return np.frombuffer(resampled.audio, dtype="<i2").astype(np.float32) / 32768.0


#: Below this level (the loudest 10 ms frame's RMS, dBFS) a stream holds no speech and is not
#: decoded. Measured: the loudest frame of 40 espeak-ng held-out commands is -14.3 to -8.4 dBFS,
#: so speech 45 dB quieter still passes; 16-bit dither (+-1 LSB) is -91 dBFS, digital silence -inf.
SPEECH_LEVEL_DBFS = -60.0


def loudest_frame_dbfs(samples: np.ndarray) -> float:
    """RMS level in dBFS of the loudest 10 ms frame of 16 kHz float32 samples (-inf for silence)."""
    if samples.shape[0] == 0:
        return float("-inf")
    whole = samples.shape[0] // SAMPLES_PER_FRAME * SAMPLES_PER_FRAME
    frames = samples[:whole].reshape(-1, SAMPLES_PER_FRAME) if whole else samples.reshape(1, -1)
    loudest = float(np.sqrt(np.mean(np.square(frames, dtype=np.float64), axis=1)).max())
    return 20 * float(np.log10(loudest)) if loudest > 0 else float("-inf")
