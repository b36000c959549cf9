"""Encoder output per completed attention window, reused while its features stand.

A window's embeddings depend only on its own mel frames (the encoder attends
within windows). Its frames can still change after it is complete: the last
frames' STFT reaches into the next window, and Whisper's log-mel clamps every
frame against the loudest one in the buffer. So a cached window is reused only
while its features are bit-for-bit the ones it was encoded from.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch

from .qwen import QwenAsrModel


@dataclass
class EncodedAudio:
    """The embeddings of a buffer, and how many leading tokens came unchanged from the cache."""

    embeddings: torch.Tensor
    stable_tokens: int


@dataclass
class AudioWindowCache:
    """Complete windows' features and embeddings, in buffer order."""

    enabled: bool = True
    _features: list[torch.Tensor] = field(default_factory=list)
    _embeddings: list[torch.Tensor] = field(default_factory=list)

    def encode(self, model: QwenAsrModel, features: torch.Tensor) -> EncodedAudio:
        """Embeddings of ``features``, encoding only windows that are new or changed."""
        width = model.window_frames
        complete = features.shape[1] // width
        stable_tokens = 0
        still_stable = True
        for index in range(complete):
            window = features[:, index * width : (index + 1) * width]
            if self.enabled and index < len(self._features) and torch.equal(window, self._features[index]):
                # Unchanged: reuse. Only the leading run of these keeps its decoder KV,
                # since every position after a changed window sees different inputs.
                if still_stable:
                    stable_tokens += self._embeddings[index].shape[0]
                continue
            still_stable = False
            embedding = model.encode_window(window)
            if index < len(self._features):
                self._features[index], self._embeddings[index] = window.clone(), embedding
            else:
                self._features.append(window.clone())
                self._embeddings.append(embedding)
        del self._features[complete:], self._embeddings[complete:]
        parts = list(self._embeddings)
        if features.shape[1] > complete * width:
            parts.append(model.encode_window(features[:, complete * width :]))
        if not self.enabled:
            self._features.clear()
            self._embeddings.clear()
        return EncodedAudio(torch.cat(parts, dim=0), stable_tokens)

    def drop_front(self, windows: int) -> None:
        """The buffer lost its first ``windows`` windows."""
        del self._features[:windows], self._embeddings[:windows]
