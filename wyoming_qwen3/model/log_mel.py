"""Whisper's log-mel features, with the clamp split out so that a finished window's features stand.

Qwen3-ASR reads Whisper's log-mel features: log10 of a 128-bin mel power
spectrogram, clamped at 8 (80 dB) below the loudest value of the whole
utterance, then scaled by ``(x + 4) / 4``. That clamp looks ahead: a louder
syllable later in the utterance raises the floor of every earlier frame that
lies below it (digital silence always does), so a streaming encoder cache of
finished windows would be invalidated, and the whole prompt prefilled again,
each time the speaker gets louder (6 of 16 steps of a 30 s stream in
``script/benchmark compute`` before this module).

Streaming therefore clamps each window at 8 below the loudest value heard up
to that window's end (``audio_cache.AudioWindowCache``). The last window's floor is the
loudest value of the whole buffer, as offline: an utterance within one
encoder window (8 s by default) gets offline's features exactly; in a longer
one an earlier window keeps the lower floor it had when it was finished.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

#: Whisper's dynamic range: values more than this (log10 units) below the loudest are clamped.
CLAMP_RANGE = 8.0


def unclamped_log_mel(extractor: Any, audio: np.ndarray) -> torch.Tensor:
    """log10 mel power [bins, frames] of 16 kHz audio: Whisper's torch extractor before its clamp.

    The same operations as ``WhisperFeatureExtractor._torch_extract_fbank_features``
    (tests/test_log_mel.py checks that clamping this gives the extractor's
    features bit for bit); the library has no helper that stops before the clamp.
    """
    if extractor.dither:
        raise ValueError("a dithering feature extractor is not deterministic: features could not be reused")
    waveform = torch.from_numpy(np.ascontiguousarray(audio, dtype=np.float32))
    window = torch.hann_window(extractor.n_fft)
    stft = torch.stft(waveform, extractor.n_fft, extractor.hop_length, window=window, return_complex=True)
    magnitudes = stft[..., :-1].abs() ** 2
    mel_spec = torch.from_numpy(extractor.mel_filters).to(torch.float32).T @ magnitudes
    return torch.clamp(mel_spec, min=1e-10).log10()


def clamped(log_mel: torch.Tensor, loudest: float) -> torch.Tensor:
    """Features of unclamped log-mel frames, clamped below ``loudest`` and scaled as Whisper's."""
    floor = torch.tensor(loudest - CLAMP_RANGE, dtype=log_mel.dtype)
    return (torch.maximum(log_mel, floor) + 4.0) / 4.0
