"""The simulkv backend: one Qwen3-ASR model on torch, and sessions that stream it with AlignAtt."""

from __future__ import annotations

import argparse
import logging
from pathlib import Path

from ...model.catalogue import ResolvedModel
from ...model.qwen import QwenAsrModel
from ..base import Backend, SessionOptions
from .alignatt import use_recording_attention
from .batch import forward_tokens
from .kv_cache import PrefixCache
from .session import SimulKvSession
from .settings import ALIGNMENT_HEADS_FILE, AlignmentHeads, AlignmentPolicy, SimulKvSettings

_LOGGER = logging.getLogger(__name__)

#: A model this small (parameters) runs on one torch thread unless --threads says otherwise: its operations are
#: too small to split, and the threads only contend with the VAD's process and the event loop. The demo model
#: (2.3 M) at 16 simultaneous streams, 2-core CPU, 2026-12-06: p95 after audio-stop 205 / 238 / 234 / 418 ms on
#: one thread against 338 / 316 / 398 / 294 ms on torch's choice of two (runs taking turns).
SMALL_MODEL = 50_000_000


class SimulKvBackend(Backend):
    """Sessions over one loaded Qwen3-ASR model."""

    def __init__(
        self,
        model: QwenAsrModel,
        heads: AlignmentHeads | None = None,
        settings: SimulKvSettings | None = None,
    ) -> None:
        self.settings = settings or SimulKvSettings()
        super().__init__("simulkv", lambda passes: forward_tokens(model, passes), self.settings.max_batch)
        self.model = model
        #: The prompt before the audio, computed once per context for every session (and connection).
        self.prefixes = PrefixCache()
        text_config = model.text_config
        self.heads = heads or AlignmentHeads.default(text_config.num_hidden_layers, text_config.num_attention_heads)
        use_recording_attention(text_config)

    @classmethod
    def from_options(cls, model: ResolvedModel, options: argparse.Namespace) -> SimulKvBackend:
        """Load ``model`` as the command line says: device, precision, heads, policy, step and windows.

        Raises ValueError for a setting the model cannot take (an encoder window
        it does not know, int8 off the CPU, a heads file it cannot read).
        """
        heads_path = alignment_heads_path(options.alignment_heads, model)
        try:
            heads = AlignmentHeads.load(heads_path) if heads_path is not None else None
        except (OSError, ValueError) as err:
            raise ValueError(f"cannot read alignment heads: {err}") from err
        policy = AlignmentPolicy.for_model(heads, options.border_seconds, options.min_probability)
        settings = SimulKvSettings(
            policy=policy,
            step_seconds=options.step_seconds,
            stream_window_seconds=options.stream_window,
            max_batch=options.max_batch,
        )
        window = options.encoder_window if options.encoder_window is not None else model.encoder_window_seconds
        qwen = QwenAsrModel.load(model.path, options.device, window, options.dtype, options.quantize)
        threads = options.threads or (1 if qwen.device.type == "cpu" and qwen.parameters < SMALL_MODEL else 0)
        if threads:
            import torch

            torch.set_num_threads(threads)
            _LOGGER.info("torch runs on %d CPU thread(s)", threads)
        _LOGGER.info(
            "Alignment heads: %s; border %.2f s; least probability %.2f; encoder window %.0f s",
            f"{len(heads.heads)} from {heads_path}" if heads else "default (upper half of the decoder)",
            policy.border_seconds,
            policy.min_probability,
            qwen.window_seconds,
        )
        return cls(qwen, heads, settings)

    @property
    def supported_languages(self) -> list[str]:
        return self.model.supported_languages

    def create_session(self, options: SessionOptions) -> SimulKvSession:
        return SimulKvSession(self.model, self.heads, self.settings, options, self.executor.should_yield, self.prefixes)

    def prepare(self, options: SessionOptions) -> None:
        """Compute the prompt prefix of ``options`` now, so that the next session with them starts at once."""
        self.prefixes.cache_for(self.model, self.model.prompt_ids(options.context, options.language).prefix)


def alignment_heads_path(given: Path | None, model: ResolvedModel) -> Path | None:
    """The heads file given, else the model folder's own, else the catalogue's measured one."""
    if given is not None:
        return given
    candidates = [model.path / ALIGNMENT_HEADS_FILE, model.heads_file]
    return next((path for path in candidates if path is not None and path.is_file()), None)
