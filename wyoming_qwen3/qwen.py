"""Qwen3-ASR on torch: loading, prompts, audio embeddings and greedy decoding.

This wraps ``qwen-asr``'s transformers classes with the few operations the
streaming backends need, all with explicit positions and caches so that no
state lives on the shared model object (``thinker.rope_deltas`` would, if the
model were left to compute positions itself, and sessions run one after
another on the same model).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

_LOGGER = logging.getLogger(__name__)

SAMPLE_RATE = 16000
#: The audio encoder emits 13 embeddings per 100 mel frames (1 s of audio).
AUDIO_TOKENS_PER_SECOND = 13
ASR_TEXT_TAG = "<asr_text>"
#: Shorter audio is padded with silence: the encoder needs a few mel frames.
_MIN_SAMPLES = SAMPLE_RATE // 10


@dataclass(frozen=True)
class TokenIds:
    """Ids read from the checkpoint's tokenizer (they differ between models)."""

    audio_pad: int
    eos: frozenset[int]


@dataclass(frozen=True)
class PromptIds:
    """A prompt split around its audio placeholder: prefix, audio, suffix."""

    prefix: list[int]
    suffix: list[int]


@dataclass(frozen=True)
class Transcription:
    """A decoded utterance: language name ('' when unknown) and text."""

    language: str
    text: str


def select_device(device: str) -> torch.device:
    """Resolve ``auto`` to cuda, then mps, then cpu."""
    if device != "auto":
        return torch.device(device)
    if torch.cuda.is_available():
        return torch.device("cuda")
    if torch.backends.mps.is_available():
        return torch.device("mps")
    return torch.device("cpu")


class QwenAsrModel:
    """A loaded Qwen3-ASR checkpoint and the operations streaming is built from."""

    def __init__(self, model: Any, processor: Any, device: torch.device) -> None:
        self.model = model
        self.thinker = model.thinker
        self.processor = processor
        self.tokenizer = processor.tokenizer
        self.device = device
        self.dtype = next(model.parameters()).dtype
        self.audio_config = self.thinker.config.audio_config

        eos = {self.tokenizer.convert_tokens_to_ids(t) for t in ("<|im_end|>", "<|endoftext|>")}
        generation_eos = model.generation_config.eos_token_id
        if isinstance(generation_eos, int):
            eos.add(generation_eos)
        elif generation_eos:
            eos.update(generation_eos)
        self.token_ids = TokenIds(
            audio_pad=self.tokenizer.convert_tokens_to_ids(self.tokenizer.audio_token),
            eos=frozenset(i for i in eos if isinstance(i, int) and i >= 0),
        )
        self.supported_languages: list[str] = list(getattr(model.config, "support_languages", None) or [])

    @classmethod
    def load(cls, path: Path, device: str = "auto") -> QwenAsrModel:
        """Load a model folder onto a device (bfloat16 on CUDA, float32 elsewhere)."""
        from qwen_asr.core.transformers_backend import (
            Qwen3ASRForConditionalGeneration,
            Qwen3ASRProcessor,
        )

        torch_device = select_device(device)
        dtype = torch.bfloat16 if torch_device.type == "cuda" else torch.float32
        _LOGGER.debug("Loading %s on %s (%s)", path, torch_device, dtype)
        model = Qwen3ASRForConditionalGeneration.from_pretrained(str(path), dtype=dtype, attn_implementation="sdpa")
        model.to(torch_device).eval()
        processor = Qwen3ASRProcessor.from_pretrained(str(path))
        return cls(model, processor, torch_device)

    # -- prompts --------------------------------------------------------------

    def prompt_ids(self, context: str, language: str | None) -> PromptIds:
        """Token ids of the chat prompt, split at its single audio placeholder.

        ``context`` (names, terms) goes in the system message; a forced
        ``language`` is appended as ``language X<asr_text>`` so the model writes
        only the text.
        """
        messages = [
            {"role": "system", "content": context},
            {"role": "user", "content": [{"type": "audio", "audio": ""}]},
        ]
        text = self.processor.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)
        if language:
            text += f"language {language}{ASR_TEXT_TAG}"
        ids: list[int] = self.tokenizer(text, add_special_tokens=False)["input_ids"]
        position = ids.index(self.token_ids.audio_pad)
        return PromptIds(prefix=ids[:position], suffix=ids[position + 1 :])

    def embed_tokens(self, ids: list[int]) -> torch.Tensor:
        """Input embeddings [1, len, hidden] of text token ids."""
        tensor = torch.tensor([ids], dtype=torch.long, device=self.device)
        return self.thinker.get_input_embeddings()(tensor)

    # -- audio ----------------------------------------------------------------

    def audio_embeddings(self, audio: np.ndarray) -> torch.Tensor:
        """Encoder output [n_audio_tokens, hidden] for 16 kHz mono float32 audio."""
        if audio.shape[0] < _MIN_SAMPLES:
            audio = np.pad(audio, (0, _MIN_SAMPLES - audio.shape[0]))
        features = self.processor.feature_extractor(
            audio,
            sampling_rate=SAMPLE_RATE,
            padding=True,
            truncation=False,
            return_attention_mask=True,
            return_tensors="pt",
        )
        input_features = features["input_features"].to(self.device, self.dtype)
        mask = features["attention_mask"].to(self.device)
        return self.thinker.get_audio_features(input_features, feature_attention_mask=mask)

    # -- decoding -------------------------------------------------------------

    def forward(self, embeds: torch.Tensor, start: int, cache: Any, **kwargs: Any) -> Any:
        """Run the decoder on ``embeds`` placed at positions ``start...``, extending ``cache``."""
        length = embeds.shape[1]
        positions = torch.arange(start, start + length, device=self.device)
        return self.thinker(
            inputs_embeds=embeds,
            position_ids=positions.view(1, 1, -1).expand(3, 1, -1),
            cache_position=positions,
            past_key_values=cache,
            use_cache=True,
            **kwargs,
        )

    def max_new_tokens(self, seconds: float) -> int:
        """A generous token budget for this much speech (fast speech is ~5 tokens/s)."""
        return 24 + int(8 * seconds)

    def decode_text(self, ids: list[int]) -> str:
        """Text of generated ids, special tokens dropped, ``<asr_text>`` kept."""
        return self.tokenizer.decode(ids, skip_special_tokens=True, clean_up_tokenization_spaces=False)

    @torch.inference_mode()
    def transcribe(self, audio: np.ndarray, context: str = "", language: str | None = None) -> Transcription:
        """Offline greedy transcription of a whole utterance."""
        from transformers import DynamicCache

        prompt = self.prompt_ids(context, language)
        audio_embeds = self.audio_embeddings(audio).to(self.dtype)
        embeds = torch.cat(
            [self.embed_tokens(prompt.prefix), audio_embeds.unsqueeze(0), self.embed_tokens(prompt.suffix)],
            dim=1,
        )
        cache = DynamicCache()
        logits = self.forward(embeds, 0, cache).logits
        position = embeds.shape[1]
        generated: list[int] = []
        for _ in range(self.max_new_tokens(audio.shape[0] / SAMPLE_RATE)):
            token = int(logits[0, -1].argmax())
            if token in self.token_ids.eos:
                break
            generated.append(token)
            logits = self.forward(self.embed_tokens([token]), position, cache).logits
            position += 1
        return parse_output(self.decode_text(generated), language)


def parse_output(raw: str, forced_language: str | None) -> Transcription:
    """Split ``language X<asr_text>text`` with qwen-asr's own parser."""
    from qwen_asr.inference.utils import parse_asr_output

    language, text = parse_asr_output(raw, user_language=forced_language)
    return Transcription(language=language or "", text=text.strip())
