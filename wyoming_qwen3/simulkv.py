"""The simulkv backend: Qwen3-ASR on torch + transformers + qwen-asr.

This first version re-transcribes the utterance greedily each time a second of
new audio has arrived and commits words by local agreement; the AlignAtt policy
with KV-cache reuse replaces that step without changing the interface.
"""

from __future__ import annotations

import logging

import numpy as np

from .backend import Backend, FinalWords, SessionOptions, StreamingSession
from .local_agreement import LocalAgreement
from .qwen import SAMPLE_RATE, QwenAsrModel

_LOGGER = logging.getLogger(__name__)


class SimulKvBackend(Backend):
    """Sessions over one loaded Qwen3-ASR model."""

    def __init__(self, model: QwenAsrModel, step_seconds: float = 1.0) -> None:
        super().__init__("simulkv")
        self.model = model
        self.step_samples = int(step_seconds * SAMPLE_RATE)

    @property
    def supported_languages(self) -> list[str]:
        return self.model.supported_languages

    def create_session(self, options: SessionOptions) -> SimulKvSession:
        return SimulKvSession(self, options)


class SimulKvSession(StreamingSession):
    """One utterance: a growing buffer and the words agreed on so far."""

    def __init__(self, backend: SimulKvBackend, options: SessionOptions) -> None:
        self._model = backend.model
        self._step_samples = backend.step_samples
        self._options = options
        self._chunks: list[np.ndarray] = []
        self._samples = 0
        self._samples_at_last_step = 0
        self._agreement = LocalAgreement()
        self._language = options.language or ""

    def _hypothesis(self) -> list[str]:
        audio = np.concatenate(self._chunks) if self._chunks else np.zeros(0, dtype=np.float32)
        result = self._model.transcribe(audio, self._options.context, self._options.language)
        self._language = result.language or self._language
        return result.text.split()

    def feed(self, audio: np.ndarray) -> list[str]:
        self._chunks.append(audio)
        self._samples += audio.shape[0]
        if self._samples - self._samples_at_last_step < self._step_samples:
            return []
        self._samples_at_last_step = self._samples
        return self._agreement.update(self._hypothesis())

    def finish(self) -> FinalWords:
        if self._samples == 0:
            return FinalWords(words=[], language=self._language)
        return FinalWords(words=self._agreement.flush(self._hypothesis()), language=self._language)
