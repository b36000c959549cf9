"""Encoder output per completed attention window, reused while its features stand.

A window's embeddings depend only on its own mel frames (the encoder attends
within windows). Each window is clamped at the loudest value heard up to its
own end (see ``log_mel``), so a louder syllable later does not change it, and
it counts as complete only once a frame follows it (the STFT of its last frame
reaches past its end). A cached window is still reused only while its
features are bit-for-bit the ones it was encoded from.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch

from ...model.log_mel import clamped
from ...model.qwen import QwenAsrModel


@dataclass
class EncodedAudio:
    """The embeddings of a buffer, and how many leading tokens came unchanged from the cache."""

    embeddings: torch.Tensor
    stable_tokens: int
    #: Cached windows encoded again because their features changed.
    changed_windows: int = 0


@dataclass(frozen=True)
class SavedWindows:
    """The cache's windows at one moment (see ``AudioWindowCache.saved``)."""

    features: tuple[torch.Tensor, ...]
    embeddings: tuple[torch.Tensor, ...]
    loudest_cut: float


@dataclass
class AudioWindowCache:
    """Complete windows' features and embeddings, in buffer order."""

    #: The loudest log-mel value of the audio cut from the front of the buffer.
    loudest_cut: float = float("-inf")
    _features: list[torch.Tensor] = field(default_factory=list)
    _embeddings: list[torch.Tensor] = field(default_factory=list)

    def encode(self, model: QwenAsrModel, log_mel: torch.Tensor) -> EncodedAudio:
        """Embeddings of the buffer's unclamped ``log_mel``, encoding only windows that are new or changed."""
        width = model.window_frames
        # A window is complete once a frame follows it: its last frame's STFT reaches 2.5 ms
        # past its end, so a window the buffer ends on would change, and be encoded twice.
        complete = max(0, log_mel.shape[1] - 1) // width
        stable_tokens = changed_windows = 0
        still_stable = True
        loudest = self.loudest_cut
        for index in range(complete):
            frames = log_mel[:, index * width : (index + 1) * width]
            loudest = max(loudest, float(frames.max()))
            window = clamped(frames, loudest).to(model.device, model.dtype)
            if index < len(self._features) and torch.equal(window, self._features[index]):
                # Unchanged: reuse. Only the leading run of these keeps its decoder KV,
                # since every position after a changed window sees different inputs.
                if still_stable:
                    stable_tokens += self._embeddings[index].shape[0]
                continue
            still_stable = False
            embedding = model.encode_window(window)
            if index < len(self._features):
                changed_windows += 1
                self._features[index], self._embeddings[index] = window, embedding
            else:
                self._features.append(window)
                self._embeddings.append(embedding)
        del self._features[complete:], self._embeddings[complete:]
        parts = list(self._embeddings)
        if log_mel.shape[1] > complete * width:
            tail = log_mel[:, complete * width :]
            loudest = max(loudest, float(tail.max()))
            parts.append(model.encode_window(clamped(tail, loudest).to(model.device, model.dtype)))
        return EncodedAudio(torch.cat(parts, dim=0), stable_tokens, changed_windows)

    def saved(self) -> SavedWindows:
        """The windows now, to restore after a speculative pass (the tensors are never changed in place)."""
        return SavedWindows(tuple(self._features), tuple(self._embeddings), self.loudest_cut)

    def restore(self, saved: SavedWindows) -> None:
        self._features, self._embeddings = list(saved.features), list(saved.embeddings)
        self.loudest_cut = saved.loudest_cut

    def drop_front(self, windows: int, loudest: float) -> None:
        """The buffer lost its first ``windows`` windows, whose loudest log-mel value was ``loudest``."""
        del self._features[:windows], self._embeddings[:windows]
        self.loudest_cut = max(self.loudest_cut, loudest)
