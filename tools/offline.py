"""Qwen3-ASR offline, for the tests, benchmarks and training: a whole utterance's features, embeddings and
transcript, the reference that streaming is held to.

The server never runs a pass over a whole utterance: its sessions encode window by window and decode over
their cache (``backends/simulkv``). These are the same model's operations done at once, with the feature
extractor's own features, so that a test can compare the two.
"""

from __future__ import annotations

import numpy as np
import torch
from transformers import DynamicCache

from wyoming_qwen3.model.format import SAMPLE_RATE, Transcription, max_new_tokens, parse_output, repeated_tail
from wyoming_qwen3.model.qwen import QwenAsrModel


def features(model: QwenAsrModel, audio: np.ndarray) -> torch.Tensor:
    """Log-mel features [mel_bins, frames] of 16 kHz mono float32 audio, as the feature extractor makes them."""
    extracted = model.processor.feature_extractor(
        model.padded(audio),
        sampling_rate=SAMPLE_RATE,
        padding=True,
        truncation=False,
        return_attention_mask=True,
        return_tensors="pt",
    )
    frames = int(extracted["attention_mask"].sum())
    return extracted["input_features"][0, :, :frames].to(model.device, model.dtype)


def embed_features(model: QwenAsrModel, log_mel: torch.Tensor) -> torch.Tensor:
    """Audio embeddings [n_audio_tokens, hidden] of log-mel features of any length, window by window."""
    windows = [
        model.encode_window(log_mel[:, start : start + model.window_frames])
        for start in range(0, log_mel.shape[1], model.window_frames)
    ]
    return torch.cat(windows, dim=0)


def audio_embeddings(model: QwenAsrModel, audio: np.ndarray) -> torch.Tensor:
    """Audio embeddings [n_audio_tokens, hidden] of a whole utterance, window by window."""
    return embed_features(model, features(model, audio))


@torch.inference_mode()
def transcribe(model: QwenAsrModel, audio: np.ndarray, context: str = "", language: str | None = None) -> Transcription:
    """Greedy transcription of a whole utterance in one pass."""
    prompt = model.prompt_ids(context, language)
    embeds = torch.cat(
        [
            model.embed_tokens(prompt.prefix),
            audio_embeddings(model, audio).to(model.dtype).unsqueeze(0),
            model.embed_tokens(prompt.suffix),
        ],
        dim=1,
    )
    cache = DynamicCache()
    logits = model.forward(embeds, 0, cache)
    position = embeds.shape[1]
    generated: list[int] = []
    for _ in range(max_new_tokens(audio.shape[0] / SAMPLE_RATE)):
        token = int(logits.argmax())
        if token in model.token_ids.eos:
            break
        generated.append(token)
        logits = model.forward(model.embed_tokens([token]), position, cache)
        position += 1
    # A loop keeps its first copy, as the streaming final pass does.
    del generated[len(generated) - repeated_tail(generated) :]
    return parse_output(model.decode_text(generated), language)
