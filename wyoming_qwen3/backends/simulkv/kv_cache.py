"""A session's KV cache: the prompt before the audio shared by every session, the rest grown in place.

The decoder sequence begins ``<|im_start|>system\\n{context}<|im_end|>...``: the
same for every utterance with the same context (the server's ``--context``, a
home's names, a client's names and terms), and most of the prompt once a home's
names are in it (200 names are about 1400 tokens). ``PrefixCache`` computes its
keys and values once per context, and every session's cache starts from those
very tensors. What a session reuses is exactly what it would compute
(tests/test_simulkv.py compares the two bit for bit). A few contexts are kept,
the least recently used dropped first; on the 0.6B shape in float32 each prefix
token's keys and values take 229 KB (28 layers of 8 heads of 128).

transformers' ``DynamicLayer`` grows by ``torch.cat``: every token copies the
whole cache, and with 200 names in the prompt those copies took 634 ms of a
1.3 s final pass on the 0.6B shape in int8 (2-core CPU, 2026-12-06).
``GrowingLayer`` keeps the same keys and values in a buffer with room for more
and writes a token in place; its first write copies the shared prefix into the
session's own buffer, so the shared tensors are never written.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any

import torch
from transformers import DynamicCache
from transformers.cache_utils import DynamicLayer

from ...model.qwen import QwenAsrModel

#: Tensors of one prefix: each layer's keys and values.
PrefixTensors = tuple[tuple[torch.Tensor, torch.Tensor], ...]
#: Tokens of room a buffer is made with beyond what it must hold (a step prefills about 40 and decodes a few).
HEADROOM_TOKENS = 256


class GrowingLayer(DynamicLayer):
    """A ``DynamicLayer`` whose tokens are written into a buffer with room to spare, not concatenated."""

    def __init__(self) -> None:
        super().__init__()
        self._key_buffer: torch.Tensor | None = None
        self._value_buffer: torch.Tensor | None = None

    def update(self, key_states: torch.Tensor, value_states: torch.Tensor, *args: Any, **kwargs: Any) -> Any:
        if not self.is_initialized:
            self.lazy_initialization(key_states, value_states)
        length = self.get_seq_length()
        needed = length + key_states.shape[-2]
        if self._key_buffer is None or self._value_buffer is None or needed > self._key_buffer.shape[-2]:
            shape = (*key_states.shape[:-2], needed + HEADROOM_TOKENS, key_states.shape[-1])
            keys = key_states.new_empty(shape)
            values = value_states.new_empty((*shape[:-1], value_states.shape[-1]))
            if length:
                keys[..., :length, :] = self.keys  # type: ignore[assignment]  # set once initialized
                values[..., :length, :] = self.values  # type: ignore[assignment]
            self._key_buffer, self._value_buffer = keys, values
        self._key_buffer[..., length:needed, :] = key_states
        self._value_buffer[..., length:needed, :] = value_states
        self.keys = self._key_buffer[..., :needed, :]
        self.values = self._value_buffer[..., :needed, :]
        return self.keys, self.values


@dataclass
class PrefixCache:
    """The keys and values of the last ``contexts`` prompt prefixes, by their token ids."""

    contexts: int = 4
    _kept: OrderedDict[tuple[int, ...], PrefixTensors] = field(default_factory=OrderedDict)

    @torch.inference_mode()
    def cache_for(self, model: QwenAsrModel, prefix: list[int]) -> DynamicCache:
        """A new cache that holds the prefix ``prefix`` (token ids), computed now unless it was before."""
        key = tuple(prefix)
        tensors = self._kept.get(key)
        if tensors is None:
            computed = DynamicCache()
            model.forward(model.embed_tokens(prefix), 0, computed)
            layers: list[DynamicLayer] = computed.layers  # type: ignore[assignment]  # Qwen3's: full attention
            tensors = tuple((layer.keys, layer.values) for layer in layers if layer.keys is not None)  # type: ignore[misc]
            self._kept[key] = tensors
            while len(self._kept) > self.contexts:
                self._kept.popitem(last=False)
        self._kept.move_to_end(key)
        cache = DynamicCache()
        for keys, values in tensors:
            layer = GrowingLayer()
            layer.lazy_initialization(keys, values)
            layer.keys, layer.values = keys, values  # shared: the session's first token copies them into its own
            cache.layers.append(layer)
        return cache
