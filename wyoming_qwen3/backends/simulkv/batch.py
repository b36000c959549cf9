"""Several sessions' next tokens as one decoder pass.

A token pass of one stream reads every weight of the decoder for one row of
activations; on a CPU (and a GPU bound by kernel launches) that costs about
as much as a pass over many rows. So the inference thread runs the pending
token passes of all streams as one batch (``inference``): the linear layers
see a batch of rows, and attention runs per row against that stream's own
KV cache, so no stream sees another's keys and no cache is padded or copied.

The batch goes through transformers' own decoder: ``RaggedCache`` takes each
row's new keys and values into its session's cache, and the recording
attention (``alignatt``) reads each row's keys from there.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch
from transformers import DynamicCache
from transformers.cache_utils import Cache, DynamicLayer

from ...model.qwen import QwenAsrModel
from .alignatt import AttentionRecorder


@dataclass(frozen=True)
class TokenPass:
    """One stream's request: run ``token`` at ``position`` onto ``cache``, recording its alignment heads."""

    token: int
    position: int
    cache: DynamicCache
    recorder: AttentionRecorder


@dataclass(frozen=True)
class RaggedRows:
    """Per row of a batched pass: its stream's cache and recorder (read by the recording attention)."""

    caches: list[DynamicCache]
    recorders: list[AttentionRecorder]


class _RaggedLayer(DynamicLayer):
    """One decoder layer of the rows' caches: each row's new key and value go to its own cache."""

    def __init__(self, layer_idx: int, caches: list[DynamicCache]) -> None:
        super().__init__()
        self._layer_idx = layer_idx
        self._caches = caches

    def update(self, key_states: torch.Tensor, value_states: torch.Tensor, *args: Any, **kwargs: Any) -> Any:
        for row, cache in enumerate(self._caches):
            layer: DynamicLayer = cache.layers[self._layer_idx]  # type: ignore[assignment]  # Qwen3's: full attention
            layer.update(key_states[row : row + 1], value_states[row : row + 1])
        return key_states, value_states  # the recording attention reads each row's whole cache instead

    def get_seq_length(self) -> int:
        return 0  # each row has its own length; the attention needs no mask (one new token sees every key)

    def get_mask_sizes(self, query_length: int) -> tuple[int, int]:
        return query_length, 0


class RaggedCache(Cache):
    """The rows' caches as one cache, for one batched token pass."""

    def __init__(self, caches: list[DynamicCache]) -> None:
        layers = len(caches[0].layers)
        super().__init__(layers=[_RaggedLayer(index, caches) for index in range(layers)])


@torch.inference_mode()
def forward_tokens(model: QwenAsrModel, passes: list[TokenPass]) -> list[torch.Tensor]:
    """The logits [vocab] of each pass's token; one pass alone runs exactly as a session runs it by itself."""
    if len(passes) == 1:
        only = passes[0]
        embeds = model.embed_tokens([only.token])
        return [model.forward(embeds, only.position, only.cache, alignment_recorder=only.recorder)]
    embeds = model.embed_tokens([p.token for p in passes]).transpose(0, 1)  # [rows, 1, hidden]
    positions = torch.tensor([[p.position] for p in passes], device=model.device)
    caches = [p.cache for p in passes]
    rows = RaggedRows(caches, [p.recorder for p in passes])
    logits = model.forward_rows(embeds, positions, RaggedCache(caches), ragged_rows=rows)
    return list(logits)
