"""Qwen3-ASR on torch: loading, prompts, audio embeddings and greedy decoding.

This wraps transformers' own Qwen3-ASR (``transformers.models.qwen3_asr``,
the ``-hf`` checkpoints: an audio encoder, a projector, and a plain Qwen3 text
decoder) with the few operations the streaming backends need, all with
explicit positions and caches, so that no state lives on the model object that
every session shares.
"""

from __future__ import annotations

import copy
import json
import logging
import os
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

from .format import (
    ASR_TEXT_TAG,
    FRAMES_PER_SECOND,
    SAMPLE_RATE,
)
from .languages import LANGUAGE_NAMES
from .log_mel import unclamped_log_mel

_LOGGER = logging.getLogger(__name__)

#: Shorter audio is padded with silence: the encoder needs a few mel frames.
_MIN_SAMPLES = SAMPLE_RATE // 10

#: oneDNN keeps a compiled kernel for each convolution input shape it has seen, up
#: to 1024 of them (about 50 KB each). A streaming encoder meets a new shape with
#: almost every window tail, so a server's live heap grew with the commands it had
#: heard: +1.88 MiB from the 300th command to the 900th on the demo model, +0.31
#: MiB with 64 kernels kept, at no measured cost in speed (20 commands streamed:
#: 1.65 s either way; 1.78 s with 16, 1.69 s with none). 2-core CPU, 2026-12-06.
_ONEDNN_KERNELS_KEPT = "64"


class OriginalLayoutError(ValueError):
    """A checkpoint in qwen-asr's original layout (``thinker_config``), which transformers does not load."""


@dataclass(frozen=True)
class TokenIds:
    """Ids read from the checkpoint's tokenizer (they differ between models)."""

    audio_pad: int
    eos: frozenset[int]
    #: ``<asr_text>``: ends the ``language X`` preamble (151704 on the real models).
    asr_text: int
    #: Special tokens: like the preamble, they say nothing about where the model is in the audio.
    special: frozenset[int]


@dataclass(frozen=True)
class PromptIds:
    """A prompt split around its audio placeholder: prefix, audio, suffix."""

    prefix: list[int]
    suffix: list[int]


def select_device(device: str) -> torch.device:
    """Resolve ``auto`` to cuda, then mps, then cpu."""
    if device != "auto":
        return torch.device(device)
    if torch.cuda.is_available():
        return torch.device("cuda")
    if torch.backends.mps.is_available():
        return torch.device("mps")
    return torch.device("cpu")


#: ``--dtype`` choices; ``auto`` is resolved by select_dtype.
DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}


def select_dtype(device: torch.device, requested: str = "auto") -> torch.dtype:
    """bfloat16 on CUDA where the card computes it natively, else float16 there; float32 elsewhere.

    GTX 10xx/16xx, T4 and P4 cards (common in home servers) have no native
    bfloat16; on CPU and MPS float32 stays until half precision is measured there.
    """
    if requested != "auto":
        return DTYPES[requested]
    if device.type == "cuda":
        return torch.bfloat16 if torch.cuda.is_bf16_supported(including_emulation=False) else torch.float16
    return torch.float32


def select_quantize(device: torch.device, dtype: torch.dtype, requested: str = "auto") -> str:
    """``auto`` is int8 on a CPU in float32, else none; an explicit int8 is refused elsewhere.

    On 2 CPU cores the 0.6B shape keeps up with speech only in int8: with the
    early final pass, its transcript came 1 ms after ``audio-stop`` in int8 against
    2.4 s in float32 (docs/performance.md). CUDA and MPS have no dynamic int8 kernels.
    """
    on_cpu_float32 = device.type == "cpu" and dtype == torch.float32
    if requested == "auto":
        return "int8" if on_cpu_float32 else "none"
    if requested == "int8" and not on_cpu_float32:
        raise ValueError("int8 weights are for the CPU in float32 (--device cpu --dtype auto)")
    return requested


def quantize_int8(model: Any) -> None:
    """Replace the decoder's Linear layers (and its output projection) with torch's dynamic int8 ones, in place.

    Weights become int8 with a scale per layer; activations are quantized on the
    fly. On 2 CPU cores it took the 0.6B decoder from 1.02 to 0.33 s for a 100-token
    prefill and from 185 to 52 ms per token. The audio encoder stays float32: on
    the demo model's 100 held-out utterances (offline WER) float32 gave 5.3%, an
    int8 decoder 5.0%, an int8 encoder 5.3%, but both int8 7.1%. torch warns that
    torch.ao.quantization moves to torchao; it is torch's own, and enough here.
    """
    from torch.ao.quantization import quantize_dynamic

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        warnings.simplefilter("ignore", UserWarning)
        quantize_dynamic(model.model.language_model, {torch.nn.Linear}, dtype=torch.qint8, inplace=True)
        head = quantize_dynamic(torch.nn.Sequential(model.lm_head), {torch.nn.Linear}, dtype=torch.qint8)
    model.lm_head = head[0]


def check_layout(path: Path) -> None:
    """Raise OriginalLayoutError, naming what to download, for a folder in qwen-asr's original layout.

    ``Qwen/Qwen3-ASR-0.6B`` and ``-1.7B`` (and the mlx backend's folders) nest the
    model under ``thinker_config``; transformers loads the converted ``-hf`` repos.
    Converting at load would need ``convert_qwen3_asr_to_hf.py``, which transformers
    keeps in its repository but does not ship in its package.
    """
    try:
        config = json.loads((path / "config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return  # from_pretrained says what is wrong
    if isinstance(config, dict) and "thinker_config" in config:
        raise OriginalLayoutError(
            f"{path} holds Qwen3-ASR in its original (qwen-asr) layout; the simulkv backend loads the "
            "transformers layout: use --model Qwen/Qwen3-ASR-0.6B or Qwen/Qwen3-ASR-1.7B (downloaded as the "
            "-hf repos), or a folder of Qwen/Qwen3-ASR-0.6B-hf or Qwen/Qwen3-ASR-1.7B-hf"
        )


class QwenAsrModel:
    """A loaded Qwen3-ASR checkpoint and the operations streaming is built from.

    ``window_seconds`` sets the encoder's attention window (default: the
    checkpoint's ``n_window_infer``, 8 s on the real models). Qwen3-ASR's AuT
    encoder was trained with dynamic attention windows "for both streaming and
    long-form audio" (Qwen3-ASR technical report, arXiv 2601.21337), so any
    whole number of its 1 s convolution chunks up to ``n_window_infer`` is a
    window the model knows. Streaming pays for the open window at every step,
    so a shorter one makes steps cheaper (docs/performance.md).
    """

    def __init__(self, model: Any, processor: Any, device: torch.device, window_seconds: float | None = None) -> None:
        self.model = model
        #: The text decoder: a plain Qwen3 model.
        self.decoder = model.model.language_model
        self.processor = processor
        self.tokenizer = processor.tokenizer
        self.device = device
        self.dtype = next(model.parameters()).dtype
        self.audio_config = model.config.audio_config
        self.window_frames = self._window_frames(window_seconds)

        eos = {self.tokenizer.convert_tokens_to_ids(t) for t in ("<|im_end|>", "<|endoftext|>")}
        generation_eos = model.generation_config.eos_token_id
        if isinstance(generation_eos, int):
            eos.add(generation_eos)
        elif generation_eos:
            eos.update(generation_eos)
        self.token_ids = TokenIds(
            audio_pad=self.tokenizer.convert_tokens_to_ids(self.tokenizer.audio_token),
            eos=frozenset(i for i in eos if isinstance(i, int) and i >= 0),
            asr_text=self.tokenizer.convert_tokens_to_ids(ASR_TEXT_TAG),
            # The named ones and every added token marked special (<|im_start|>, <|audio_start|>, ...).
            special=frozenset(self.tokenizer.all_special_ids)
            | {i for i, token in self.tokenizer.added_tokens_decoder.items() if token.special},
        )
        # The -hf checkpoints speak the 30 languages of the table; a model of ours may say it speaks fewer.
        languages = getattr(model.config, "support_languages", None) or LANGUAGE_NAMES.values()
        self.supported_languages: list[str] = list(languages)

    def _window_frames(self, window_seconds: float | None) -> int:
        """Mel frames per encoder attention window, checked against the model's chunks."""
        largest = int(self.audio_config.n_window_infer)
        if window_seconds is None:
            return largest
        chunk = 2 * int(self.audio_config.n_window)  # frames per convolution chunk
        frames = round(window_seconds * FRAMES_PER_SECOND)
        if frames <= 0 or frames % chunk or frames > largest:
            raise ValueError(
                f"--encoder-window must be a multiple of {chunk / FRAMES_PER_SECOND:g} s "
                f"up to {largest / FRAMES_PER_SECOND:g} s, "
                f"not {window_seconds:g} s"
            )
        return frames

    @property
    def text_config(self) -> Any:
        """The text decoder's config (layers, heads, attention implementation)."""
        return self.model.config.text_config

    @property
    def parameters(self) -> int:
        """The model's parameter count."""
        return sum(p.numel() for p in self.model.parameters())

    @property
    def window_seconds(self) -> float:
        """The encoder attention window in seconds."""
        return self.window_frames / FRAMES_PER_SECOND

    @classmethod
    def load(
        cls,
        path: Path,
        device: str = "auto",
        window_seconds: float | None = None,
        dtype: str = "auto",
        quantize: str = "none",
    ) -> QwenAsrModel:
        """Load a model folder onto a device, in ``dtype`` (see select_dtype), ``quantize``d (see select_quantize).

        Raises OriginalLayoutError for a folder transformers cannot load (see check_layout).
        """
        from transformers import Qwen3ASRForConditionalGeneration, Qwen3ASRProcessor
        from transformers.utils import logging as transformers_logging

        check_layout(path)
        transformers_logging.disable_progress_bar()  # one log line per load, not a bar per weight file
        torch_device = select_device(device)
        if torch_device.type == "cpu":
            # Read by oneDNN when it compiles its first kernel, which is after this; a value
            # the user set wins.
            os.environ.setdefault("ONEDNN_PRIMITIVE_CACHE_CAPACITY", _ONEDNN_KERNELS_KEPT)
        torch_dtype = select_dtype(torch_device, dtype)
        quantize = select_quantize(torch_device, torch_dtype, quantize)
        weights = "int8 decoder, float32 encoder" if quantize == "int8" else str(torch_dtype).removeprefix("torch.")
        _LOGGER.info("Loading %s on %s (%s)", path, torch_device, weights)
        model: Any = Qwen3ASRForConditionalGeneration.from_pretrained(
            str(path), dtype=torch_dtype, attn_implementation="sdpa"
        )
        model.to(torch_device).eval()
        if quantize == "int8":
            quantize_int8(model)
        processor = Qwen3ASRProcessor.from_pretrained(str(path))
        return cls(model, processor, torch_device, window_seconds)

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
        return self.decoder.get_input_embeddings()(tensor)

    # -- audio ----------------------------------------------------------------

    def log_mel(self, audio: np.ndarray) -> torch.Tensor:
        """Unclamped log10 mel power [mel_bins, frames] of 16 kHz mono float32 audio (see log_mel)."""
        return unclamped_log_mel(self.processor.feature_extractor, self.padded(audio))

    def padded(self, audio: np.ndarray) -> np.ndarray:
        """Audio shorter than the feature extractor pads it to (0.5 s on the -hf checkpoints), padded so here too,
        so that streaming features equal the extractor's."""
        shortest = max(_MIN_SAMPLES, int(getattr(self.processor.feature_extractor, "min_length", 0) or 0))
        if audio.shape[0] < shortest:
            return np.pad(audio, (0, shortest - audio.shape[0]))
        return audio

    def encode_window(self, features: torch.Tensor) -> torch.Tensor:
        """Audio embeddings [tokens, hidden] (encoder and projector) of at most one attention window of features.

        The encoder attends within windows of ``n_window_infer`` frames
        (``cu_seqlens``); a window of ``window_seconds``, encoded on its own, is
        the same windowed attention (tests/test_simulkv.py checks it against the
        encoder run over the whole utterance), so a window's output never changes
        once it is complete. The encoder convolves 1 s chunks: the last one is
        padded and masked, as the feature extractor pads it.
        """
        frames = features.shape[1]
        if frames > self.window_frames:
            raise ValueError(f"{frames} frames are more than one {self.window_frames}-frame window")
        chunk = 2 * int(self.audio_config.n_window)
        if frames >= chunk:
            return self._encode(features, -(-frames // chunk) * chunk)
        # A window shorter than one chunk (a step just after a window began: 1 or 51 frames at
        # 0.5 s steps) is convolved at its own length, as qwen-asr convolved it, not padded to a
        # whole second: the padding cost 10% of the 0.6B encoder's FLOPs (29.0 against 26.3 GFLOPs
        # per audio second, script/benchmark compute). The encoder reads its chunk length from its
        # ``n_window`` and its tokens from ``cu_seqlens``: this call gets a shallow copy of the tower
        # (the same weights) with its own ``n_window``, so the shared tower is never changed.
        tower = copy.copy(self.model.model.audio_tower)
        own = frames + frames % 2
        tower.n_window = own // 2
        tokens = frames
        for _ in range(3):  # three stride-2 convolutions
            tokens = (tokens - 1) // 2 + 1
        return self._encode(features, own, tower, cu_seqlens=torch.tensor([0, tokens], dtype=torch.int32))

    def _encode(self, features: torch.Tensor, padded: int, tower: Any = None, **kwargs: Any) -> torch.Tensor:
        """The audio tower (the model's, or ``tower``) and projector on ``features`` padded (and masked) to
        ``padded`` frames."""
        frames = features.shape[1]
        inputs = torch.nn.functional.pad(features, (0, padded - frames)).unsqueeze(0)
        mask = torch.zeros(1, padded, dtype=torch.long, device=self.device)
        mask[0, :frames] = 1
        audio = self.model.model
        encoded = (tower or audio.audio_tower)(input_features=inputs, input_features_mask=mask, **kwargs)
        return audio.multi_modal_projector(encoded.last_hidden_state)

    # -- decoding -------------------------------------------------------------

    def forward(self, embeds: torch.Tensor, start: int, cache: Any, **kwargs: Any) -> torch.Tensor:
        """Run the decoder on ``embeds`` placed at positions ``start...``, extending ``cache``.

        Returns the logits [vocab] of the last position only: the model's own
        forward projects every position onto the 151k-word vocabulary, which
        was a quarter of a streaming step's prefill on the 0.6B shape.
        """
        positions = torch.arange(start, start + embeds.shape[1], device=self.device)
        return self.forward_rows(embeds, positions.unsqueeze(0), cache, **kwargs)[0]

    def forward_rows(self, embeds: torch.Tensor, positions: torch.Tensor, cache: Any, **kwargs: Any) -> torch.Tensor:
        """Run the decoder on ``embeds`` [rows, tokens, hidden] at ``positions`` [rows, tokens]: the logits
        [rows, vocab] of each row's last position."""
        hidden = self.decoder(
            inputs_embeds=embeds, position_ids=positions, past_key_values=cache, use_cache=True, **kwargs
        ).last_hidden_state
        return self.model.lm_head(hidden[:, -1])  # 2-D in: int8 (dynamic quantized) Linear wants a batch

    def decode_text(self, ids: list[int]) -> str:
        """Text of generated ids, special tokens dropped, ``<asr_text>`` kept."""
        return self.tokenizer.decode(ids, skip_special_tokens=True, clean_up_tokenization_spaces=False)
