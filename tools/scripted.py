"""Scripted decoding: random weights doing a real model's work, for the benchmarks.

A random-weight model writes no words, so the AlignAtt policy would stop every
step at once. A scripted session decodes as a speaker at ``tokens_per_second``
would be transcribed: a streaming step writes the tokens of the audio before
the border, the final pass the rest, ignoring the policy and end of sequence.
Every forward pass is the real model's; only the choice of when to stop is
scripted. ``ReprefillSession`` is the baseline that reuses nothing.

Run a real server whose sessions are scripted (the latency benchmark does):
``python -m tools.scripted --tokens-per-second 4 <wyoming-qwen3 options>``.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import sys
from dataclasses import dataclass
from typing import Any

import torch

from wyoming_qwen3.backends.base import Backend, SessionOptions
from wyoming_qwen3.backends.simulkv.backend import SimulKvBackend
from wyoming_qwen3.backends.simulkv.encoder_cache import AudioWindowCache, EncodedAudio
from wyoming_qwen3.backends.simulkv.kv_cache import PrefixCache
from wyoming_qwen3.backends.simulkv.session import Prefill, SimulKvSession, Verdict
from wyoming_qwen3.model.catalogue import ResolvedModel
from wyoming_qwen3.model.format import SAMPLE_RATE
from wyoming_qwen3.model.qwen import QwenAsrModel
from wyoming_qwen3.server.cli import parse_args
from wyoming_qwen3.server.serve import StartupError, serve

#: Tokens a second of speech (fast speech is about 5).
TOKENS_PER_SECOND = 4.0
#: What the scripted speaker says.
SCRIPT_WORDS = ("turn on the kitchen lights and " * 40).split()


@dataclass
class PrefillCounts:
    """What a session's prefills computed, for the compute benchmark."""

    #: Prefilled so far: audio tokens, and text (the prompt around the audio, the answer fed back).
    audio_tokens: int = 0
    text_tokens: int = 0
    #: Complete encoder windows the last prefill encoded again because their features changed.
    last_changed_windows: int = 0


class CountingWindowCache(AudioWindowCache):
    """The session's window cache, noting how many windows each encode had to compute again."""

    def __init__(self, counts: PrefillCounts) -> None:
        super().__init__()
        self._counts = counts

    def encode(self, model: QwenAsrModel, log_mel: torch.Tensor) -> EncodedAudio:
        encoded = super().encode(model, log_mel)
        self._counts.last_changed_windows = encoded.changed_windows
        return encoded


class ScriptedSession(SimulKvSession):
    """A simulkv session whose steps write the tokens of a speaker at a fixed pace, counting what it prefills."""

    tokens_per_second = TOKENS_PER_SECOND

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.prefilled = PrefillCounts()
        self._audio_cache = CountingWindowCache(self.prefilled)

    def prefill(self) -> Prefill:
        state = super().prefill()
        new_audio = state.audio_tokens - (self.reused_tokens - self.prefix_tokens)
        self.prefilled.audio_tokens += new_audio
        self.prefilled.text_tokens += state.position - self.reused_tokens - new_audio
        return state

    def _step_limit(self, final: bool, new_seconds: float, in_preamble: bool) -> int:
        heard = self._utterance_samples() / SAMPLE_RATE
        if not final:
            heard = max(0.0, heard - self._policy.border_seconds)
        return max(0, int(self.tokens_per_second * heard) - len(self._committed))

    def _verdict(self, *args: object, **kwargs: object) -> Verdict:
        return Verdict.EMIT

    def _guarded(self, tokens: list[int], times: list[float], final: bool, limit: int) -> tuple[list[int], list[float]]:
        return tokens, times  # random weights repeat themselves, and use the whole script: both expected here

    def _forget_unsent_text(self) -> None:
        """Random weights write no words, so every token would count as unsent: keep them."""

    def _text(self, final: bool, tokens: int | None = None) -> str:
        """The speaker's words, two tokens a word: random weights' tokens are mostly outside their small
        tokenizer and read as nothing, and a benchmark of partial transcripts needs words to come as they would."""
        count = len(self._committed) if tokens is None else tokens
        return " ".join(SCRIPT_WORDS[: count // 2])


class ReprefillSession(ScriptedSession):
    """The baseline: every step encodes all the audio and prefills the whole prompt again."""

    def prefill(self) -> Prefill:
        self._audio_cache = CountingWindowCache(self.prefilled)
        self._cache = PrefixCache().cache_for(self._model, self._prefix)  # computed again: nothing is kept
        self._cached_audio_tokens = 0
        return super().prefill()


class ScriptedBackend(SimulKvBackend):
    """A simulkv backend whose sessions are scripted (``session_type``) at ``tokens_per_second``."""

    session_type: type[ScriptedSession] = ScriptedSession
    tokens_per_second = TOKENS_PER_SECOND

    def create_session(self, options: SessionOptions) -> ScriptedSession:
        session = self.session_type(
            self.model, self.heads, self.settings, options, self.executor.should_yield, self.prefixes
        )
        session.tokens_per_second = self.tokens_per_second
        return session


def main() -> None:
    parser = argparse.ArgumentParser(description="wyoming-qwen3 with scripted decoding", add_help=False)
    parser.add_argument("--tokens-per-second", type=float, default=TOKENS_PER_SECOND)
    known, rest = parser.parse_known_args()
    args = parse_args(rest)
    logging.basicConfig(level=logging.DEBUG if args.debug else logging.INFO, format=args.log_format)

    def load(kind: str, model: ResolvedModel, options: argparse.Namespace) -> Backend:
        backend = ScriptedBackend.from_options(model, options)
        backend.tokens_per_second = known.tokens_per_second
        return backend

    try:
        asyncio.run(serve(args, load))
    except StartupError as err:
        print(f"tools.scripted: error: {err}", file=sys.stderr)
        sys.exit(2)


if __name__ == "__main__":
    main()
