"""How the simulkv backend streams: the AlignAtt policy, the heads it reads, and the step and window sizes.

Torch-free, so that the command line can show these defaults without loading
torch; ``alignatt`` and ``session`` apply them to tensors.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from ...model.format import AUDIO_TOKENS_PER_SECOND

if TYPE_CHECKING:
    from torch import Tensor

#: The heads file a model folder may carry.
ALIGNMENT_HEADS_FILE = "alignment_heads.json"


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

    def attended_token(self, attention: Tensor) -> int:
        """The median over heads of each head's most-attended audio token."""
        return int(attention.argmax(dim=-1).median())

    def at_border(self, attended: int, audio_tokens: int) -> bool:
        return audio_tokens - attended <= self.border_seconds * AUDIO_TOKENS_PER_SECOND

    def unsure(self, logits: Tensor) -> bool:
        """Whether the greedy token's probability is under min_probability."""
        if self.min_probability <= 0:
            return False
        return float(logits.float().softmax(dim=-1).max()) < self.min_probability

    def jumped_back(self, attended: int, previous: int | None) -> bool:
        return previous is not None and previous - attended > self.rewind_seconds * AUDIO_TOKENS_PER_SECOND


@dataclass(frozen=True)
class SimulKvSettings:
    """How sessions stream; the defaults are the server's."""

    policy: AlignmentPolicy = field(default_factory=AlignmentPolicy)
    #: Steps run 10 ms past each multiple of this much audio (a slower machine takes
    #: longer steps: one runs on all the audio that came during the one before).
    step_seconds: float = 0.5
    #: Longest buffer; beyond it whole encoder windows are cut from the front, down to
    #: ``stream_keep_seconds``. A cut moves every audio position, so the rest is prefilled
    #: again: cutting much at once, rarely, keeps that cost small per audio second. With 2 s
    #: encoder windows, 6 s cut to 2 s made a 30 s stream cost what a 10 s one does per
    #: second (99 and 101 GFLOPs, 0.6B shape; a Home Assistant command is rarely cut at all).
    stream_window_seconds: float = 6.0
    stream_keep_seconds: float = 2.0
    #: A detected language is committed once the buffer holds this much audio (the
    #: preamble ``language X<asr_text>`` is exempt from the border, so it would be on 0.5 s).
    language_seconds: float = 2.0
    #: Most streams whose token passes run as one batch (``inference``); 1 runs every stream alone.
    max_batch: int = 16
