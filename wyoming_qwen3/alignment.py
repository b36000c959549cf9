"""AlignAtt: where in the audio each new token looks, and whether to emit it.

Alignment heads are (layer, head) pairs of the text decoder whose attention
from a new token onto the audio tokens tracks the time of the word being
written. While decoding, the query of the newest position is read against the
cached keys of every position (the decoder's own attention, recomputed for
those heads only), and the audio span of it is kept. The median of the heads'
most-attended audio token is where the model "is" in the audio.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
from transformers import AttentionInterface
from transformers.integrations.sdpa_attention import sdpa_attention_forward
from transformers.masking_utils import AttentionMaskInterface, sdpa_mask

from .qwen import AUDIO_TOKENS_PER_SECOND

#: The heads file a model folder may carry.
ALIGNMENT_HEADS_FILE = "alignment_heads.json"
#: Name under which the recording attention is registered with transformers.
ATTENTION_NAME = "alignatt_sdpa"


@dataclass(frozen=True)
class AlignmentHeads:
    """The decoder heads read for alignment, by layer."""

    heads: tuple[tuple[int, int], ...]
    #: The border that suits this model's alignment, if the file says (small
    #: models align loosely and need a wider one than the default 0.5 s).
    border_seconds: float | None = None
    #: The least probability of a token emitted before the end, if the file says
    #: (a small model guesses early words it has barely heard; see AlignmentPolicy).
    min_probability: float | None = None

    @property
    def by_layer(self) -> dict[int, list[int]]:
        layers: dict[int, list[int]] = {}
        for layer, head in self.heads:
            layers.setdefault(layer, []).append(head)
        return layers

    @classmethod
    def load(cls, path: Path) -> AlignmentHeads:
        """Read ``{"alignment_heads_compact": [[layer, head], ...]}``."""
        data = json.loads(path.read_text(encoding="utf-8"))
        pairs = data.get("alignment_heads_compact") if isinstance(data, dict) else None
        if not pairs or not all(isinstance(p, list) and len(p) == 2 for p in pairs):
            raise ValueError(f"{path}: expected {{'alignment_heads_compact': [[layer, head], ...]}}")
        border = data.get("border_seconds")
        if border is not None and (not isinstance(border, int | float) or border < 0):
            raise ValueError(f"{path}: border_seconds must be a non-negative number")
        least = data.get("min_probability")
        if least is not None and (not isinstance(least, int | float) or not 0 <= least <= 1):
            raise ValueError(f"{path}: min_probability must be a number from 0 to 1")
        return cls(tuple((int(layer), int(head)) for layer, head in pairs), border, least)

    def save(self, path: Path) -> None:
        data: dict[str, object] = {"alignment_heads_compact": [list(p) for p in self.heads]}
        if self.border_seconds is not None:
            data["border_seconds"] = self.border_seconds
        if self.min_probability is not None:
            data["min_probability"] = self.min_probability
        path.write_text(json.dumps(data) + "\n", encoding="utf-8")

    @classmethod
    def default(cls, num_layers: int, num_heads: int) -> AlignmentHeads:
        """Without a heads file: every head of the upper half of the decoder layers.

        Alignment concentrates in the upper layers (as in Whisper's published
        heads); the median over many heads is robust to the ones that do not align.
        """
        return cls(tuple((layer, head) for layer in range(num_layers // 2, num_layers) for head in range(num_heads)))


def head_index(by_layer: Mapping[int, Sequence[int]], device: torch.device) -> dict[int, torch.Tensor]:
    """Heads by layer as index tensors on ``device``: built once, so no token copies them from the host."""
    return {layer: torch.tensor(list(heads), device=device) for layer, heads in by_layer.items() if heads}


@dataclass
class AttentionRecorder:
    """Collects, for one forward pass, the last query row's attention of the alignment heads."""

    #: layer -> its heads, as ``head_index`` builds them once on the model's device.
    heads_by_layer: dict[int, torch.Tensor]
    #: layer -> [heads, keys] attention weights of the newest position.
    rows: dict[int, torch.Tensor] = field(default_factory=dict)

    def audio_attention(self, start: int, stop: int) -> torch.Tensor:
        """[alignment heads, audio tokens] attention of the newest position onto positions start..stop."""
        return torch.cat([self.rows[layer][:, start:stop] for layer in sorted(self.rows)], dim=0)


def _recording_attention(
    module: Any,
    query: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    attention_mask: torch.Tensor | None,
    alignment_recorder: AttentionRecorder | None = None,
    **kwargs: Any,
) -> tuple[torch.Tensor, Any]:
    """SDPA attention that also records alignment heads' weights when asked to."""
    if alignment_recorder is not None:
        heads = alignment_recorder.heads_by_layer.get(module.layer_idx)
        if heads is not None:
            q = query[0, heads, -1:, :].float()  # [heads, 1, dim]
            k = key[0, heads // module.num_key_value_groups].float()  # [heads, keys, dim]
            # The newest position sees every key, so no mask applies to its row.
            scores = torch.matmul(q, k.transpose(1, 2))[:, 0, :] * module.scaling
            alignment_recorder.rows[module.layer_idx] = torch.softmax(scores, dim=-1)
    return sdpa_attention_forward(module, query, key, value, attention_mask, **kwargs)


AttentionInterface.register(ATTENTION_NAME, _recording_attention)
# The same causal masks as SDPA: without this, transformers builds no mask for
# an unknown implementation, and a prefill onto a non-empty cache attends
# top-left-aligned (measured: logits off by 0.5 on the tiny model).
AttentionMaskInterface.register(ATTENTION_NAME, sdpa_mask)


def use_recording_attention(text_config: Any) -> None:
    """Route the text decoder's attention through the recording SDPA function."""
    text_config._attn_implementation = ATTENTION_NAME


@dataclass(frozen=True)
class AlignmentPolicy:
    """When a token may be emitted, in absolute audio time.

    Thresholds are in seconds, not fractions of the buffer: "0.5 s from the
    end" means the same at 2 s and at 20 s of buffered audio, which is what
    worked best in the SimulStreaming reference.
    """

    #: A token whose attention lands within this much of the buffer's end waits for more audio.
    border_seconds: float = 0.5
    #: Attention jumping back by more than this means the model lost its place:
    #: the step's tokens are discarded (rewind), as in the SimulStreaming reference.
    rewind_seconds: float = 2.0
    tokens_per_second: float = AUDIO_TOKENS_PER_SECOND
    #: A token the model gives less than this probability waits for more audio.
    #: Off by default (as in the SimulStreaming reference); the demo model needs it:
    #: its wrong early guesses ("side room" for "stop the music") are its unsure ones.
    min_probability: float = 0.0

    @classmethod
    def for_model(
        cls, heads: AlignmentHeads | None, border_seconds: float | None = None, min_probability: float | None = None
    ) -> AlignmentPolicy:
        """The thresholds given, else the heads file's, else the defaults."""

        def first_set(*values: float | None) -> float:
            return next(value for value in values if value is not None)

        file_border = heads.border_seconds if heads else None
        file_least = heads.min_probability if heads else None
        return cls(
            border_seconds=first_set(border_seconds, file_border, cls.border_seconds),
            min_probability=first_set(min_probability, file_least, cls.min_probability),
        )

    def attended_token(self, attention: torch.Tensor) -> int:
        """The median over heads of each head's most-attended audio token."""
        return int(attention.argmax(dim=-1).median())

    def at_border(self, attended: int, audio_tokens: int) -> bool:
        return audio_tokens - attended <= self.border_seconds * self.tokens_per_second

    def unsure(self, logits: torch.Tensor) -> bool:
        """Whether the greedy token's probability is under min_probability."""
        if self.min_probability <= 0:
            return False
        return float(torch.softmax(logits.float(), dim=-1).max()) < self.min_probability

    def jumped_back(self, attended: int, previous: int | None) -> bool:
        return previous is not None and previous - attended > self.rewind_seconds * self.tokens_per_second
