"""AlignAtt on torch: where in the audio each new token looks (the policy itself is in ``settings``).

Alignment heads are (layer, head) pairs of the text decoder whose attention
from a new token onto the audio tokens tracks the time of the word being
written. While decoding, the query of the newest position is read against the
cached keys of every position (the decoder's own attention, recomputed for
those heads only), and the audio span of it is kept. The median of the heads'
most-attended audio token is where the model "is" in the audio.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import torch
from transformers import AttentionInterface
from transformers.integrations.sdpa_attention import sdpa_attention_forward
from transformers.masking_utils import AttentionMaskInterface, sdpa_mask

#: Name under which the recording attention is registered with transformers.
ATTENTION_NAME = "alignatt_sdpa"


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


def _record(recorder: AttentionRecorder, module: Any, query: torch.Tensor, key: torch.Tensor) -> None:
    """Keep the alignment heads' attention of the newest position of ``query`` [1, heads, tokens, dim].

    Every query head's scores against its group's keys in one batched product over the cache as it is: picking
    the heads' keys out first copied them (with a home's 200 names in the prompt, 451 ms of a 1.6 s final pass
    on the 0.6B shape in int8, 2-core CPU, 2026-12-06); the product for all heads costs a few MFLOPs.
    """
    heads = recorder.heads_by_layer.get(module.layer_idx)
    if heads is not None:
        kv_heads, groups = key.shape[1], module.num_key_value_groups
        q = query[0, :, -1, :].float().reshape(kv_heads, groups, -1)  # [kv heads, queries each, dim]
        # The newest position sees every key, so no mask applies to its row.
        scores = torch.matmul(q, key[0].float().transpose(1, 2)).reshape(kv_heads * groups, -1)[heads]
        recorder.rows[module.layer_idx] = torch.softmax(scores * module.scaling, dim=-1)


def _attend(
    module: Any, query: torch.Tensor, key: torch.Tensor, value: torch.Tensor, mask: torch.Tensor | None, **kwargs: Any
) -> torch.Tensor:
    """transformers' SDPA attention (``sdpa_attention_forward``), but for a masked pass over grouped keys and
    values, which it first repeats to every query head (a copy of the whole cache at each prefill onto it):
    torch's SDPA takes them grouped with a mask too. With a home's 200 names in the prompt the copies took 510 ms
    of a 1.6 s final pass on the 0.6B shape in int8 (2-core CPU, 2026-12-06)."""
    if mask is None or module.num_key_value_groups == 1 or query.device.type not in ("cpu", "cuda"):
        return sdpa_attention_forward(module, query, key, value, mask, **kwargs)[0]
    output = torch.nn.functional.scaled_dot_product_attention(
        query, key, value, attn_mask=mask, scale=kwargs.get("scaling"), enable_gqa=True
    )
    return output.transpose(1, 2).contiguous()


def _recording_attention(
    module: Any,
    query: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    attention_mask: torch.Tensor | None,
    alignment_recorder: AttentionRecorder | None = None,
    ragged_rows: Any = None,
    **kwargs: Any,
) -> tuple[torch.Tensor, Any]:
    """SDPA attention that also records alignment heads' weights when asked to.

    With ``ragged_rows`` (``batch.RaggedRows``: one new token per row, each row a stream), each row
    attends to its own stream's cache, as it would alone.
    """
    if ragged_rows is not None:
        outputs = []
        for row, (cache, recorder) in enumerate(zip(ragged_rows.caches, ragged_rows.recorders, strict=True)):
            layer = cache.layers[module.layer_idx]
            row_query = query[row : row + 1]
            _record(recorder, module, row_query, layer.keys)
            outputs.append(sdpa_attention_forward(module, row_query, layer.keys, layer.values, None, **kwargs)[0])
        return torch.cat(outputs, dim=0), None
    if alignment_recorder is not None:
        _record(alignment_recorder, module, query, key)
    return _attend(module, query, key, value, attention_mask, **kwargs), None


AttentionInterface.register(ATTENTION_NAME, _recording_attention)
# The same causal masks as SDPA: without this, transformers builds no mask for
# an unknown implementation, and a prefill onto a non-empty cache attends
# top-left-aligned (measured: logits off by 0.5 on the tiny model).
AttentionMaskInterface.register(ATTENTION_NAME, sdpa_mask)


def use_recording_attention(text_config: Any) -> None:
    """Route the text decoder's attention through the recording SDPA function."""
    text_config._attn_implementation = ATTENTION_NAME
