"""Log-mel features: the library's, exactly, and a clamp that lets finished windows stand."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

from tools import offline
from wyoming_qwen3.backends.base import SessionOptions
from wyoming_qwen3.backends.simulkv.backend import SimulKvBackend
from wyoming_qwen3.backends.simulkv.encoder_cache import AudioWindowCache
from wyoming_qwen3.backends.simulkv.settings import AlignmentPolicy, SimulKvSettings
from wyoming_qwen3.model.format import SAMPLE_RATE
from wyoming_qwen3.model.log_mel import clamped
from wyoming_qwen3.model.qwen import QwenAsrModel


@pytest.fixture(scope="module")
def tiny(tiny_model: Path) -> QwenAsrModel:
    return QwenAsrModel.load(tiny_model, "cpu")  # 2 s encoder windows


def quiet_then_loud(seconds: float = 5.0) -> np.ndarray:
    """Faint speech-like noise with digital silence in it, then a loud burst after the first window."""
    rng = np.random.default_rng(0)
    audio = (rng.normal(0, 0.01, int(seconds * SAMPLE_RATE))).astype(np.float32)
    audio[SAMPLE_RATE // 2 : SAMPLE_RATE] = 0.0  # digital silence: always clamped
    audio[3 * SAMPLE_RATE :] *= 60  # 36 dB louder: raises the whole utterance's clamp floor
    return audio


@pytest.mark.parametrize("samples", [1000, SAMPLE_RATE, 3 * SAMPLE_RATE + 77])
def test_clamping_the_unclamped_log_mel_is_the_extractors_features_bit_for_bit(tiny, samples) -> None:
    audio = quiet_then_loud()[:samples]
    raw = tiny.log_mel(audio)
    assert torch.equal(clamped(raw, float(raw.max())), offline.features(tiny, audio))


def test_a_louder_syllable_later_leaves_finished_windows_as_they_were(tiny) -> None:
    audio = quiet_then_loud()
    whole = offline.features(tiny, audio)
    early = offline.features(tiny, audio[: int(2.5 * SAMPLE_RATE)])
    # Whisper's own clamp moves: the first window's silence reads differently once the burst is heard.
    assert not torch.equal(whole[:, :200], early[:, :200])
    cache = AudioWindowCache()
    first = cache.encode(tiny, tiny.log_mel(audio[: int(2.5 * SAMPLE_RATE)]))
    second = cache.encode(tiny, tiny.log_mel(audio))
    assert second.changed_windows == 0
    assert second.stable_tokens == 26  # the first window's tokens: reused, as is its KV
    assert torch.equal(first.embeddings[:26], second.embeddings[:26])


def test_within_one_window_the_stream_hears_the_offline_features(tiny) -> None:
    audio = quiet_then_loud(1.9)
    encoded = AudioWindowCache().encode(tiny, tiny.log_mel(audio))
    assert torch.equal(encoded.embeddings, offline.audio_embeddings(tiny, audio))


def test_a_stream_through_a_louder_burst_never_prefills_its_audio_again(tiny) -> None:
    backend = SimulKvBackend(tiny, settings=SimulKvSettings(policy=AlignmentPolicy(border_seconds=1e9)))
    session = backend.create_session(SessionOptions(language="English"))
    audio = quiet_then_loud()
    reused = []
    for start in range(0, audio.shape[0], SAMPLE_RATE // 100):
        steps = session.steps
        session.feed(audio[start : start + SAMPLE_RATE // 100])
        if session.steps > steps:
            reused.append(session.reused_tokens - session.prefix_tokens)
    # Steps 10 ms past each half second; a window's tokens are kept from the step after it completes.
    assert reused == [0, 0, 0, 0, 26, 26, 26, 26, 52]  # the burst at 3 s changes none
