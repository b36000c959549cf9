"""Compute of the simulkv backend against re-prefilling and against one offline pass.

A random-weight model of Qwen3-ASR-0.6B's real shape (built in memory; the
compute is the real model's, the words are not) transcribes espeak-ng speech
of 5, 10, 20 and 30 s fed in 10 ms chunks, a step every ``--chunk`` seconds. Decoding follows a
script (``tools.scripted``, 4 tokens per second of speech: a step writes the
tokens of the audio before the border, the final pass the rest; the policy and
end of sequence are ignored), so that all runs do the same decoding work and
differ only in what they prefill:

- ``simulkv``: the backend as served, reusing the KV cache and encoder windows;
- ``reprefill``: the same steps, recomputing the encoder and the whole prompt each step;
- ``offline``: one pass over the whole utterance, decoding as many tokens as the stream did.

Each run is split into encoder, prefill and single-token decoding time, and
the prefilled tokens into audio and text (the prompt around the audio and the
answer fed back). Text placed after the audio must be prefilled again whenever
the audio before it changes: that is what any exact reuse costs.

Every run also counts its FLOPs exactly (torch's FlopCounterMode): GFLOPs per
second of audio by phase (encoder, audio prefill, text prefill, decoding), per
step (first quarter -> last quarter of the steps), and the steps whose prefill
recomputed all the audio (a full re-prefill), by cause: no encoder window was
complete at the step before (nothing to reuse), a cut of the stream window
(every audio position moved), or a complete window whose features changed.

Usage: script/benchmark compute [--seconds 5 10 20 30] [--chunk S] [--window S ...] [--stream-window S]
                                [--tokens-per-second N] [--variants simulkv reprefill offline] [--json FILE]
       script/benchmark compute --int8 [--seconds 10] [--chunk S]   (float32 against int8 step times)
The defaults are the server's for Qwen3-ASR-0.6B (step, encoder window, stream window).
"""

from __future__ import annotations

import argparse
import copy
import json
import statistics
import sys
import time
from collections import Counter
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch.utils.flop_counter import FlopCounterMode

from tools.random_model import create_random_model
from tools.scripted import ReprefillSession, ScriptedBackend, ScriptedSession
from tools.speech import speak
from wyoming_qwen3.backends.base import SessionOptions
from wyoming_qwen3.backends.simulkv.settings import SimulKvSettings
from wyoming_qwen3.model.catalogue import CATALOGUE, DEFAULT_MODEL
from wyoming_qwen3.model.format import SAMPLE_RATE
from wyoming_qwen3.model.qwen import QwenAsrModel, quantize_int8

#: The server's streaming settings.
DEFAULTS = SimulKvSettings()
#: Audio arrives as Home Assistant sends it: 10 ms chunks.
CHUNK_SAMPLES = SAMPLE_RATE // 100

TEXT = (
    "turn on the kitchen lights and set the living room to twenty one degrees, then close the blinds in "
    "the office, start the vacuum in the hall, lock the front door, and tell me the weather for tomorrow "
    "morning because I want to know whether to take an umbrella to work. "
)


def speech(seconds: float) -> np.ndarray:
    """espeak-ng speech at 16 kHz, repeated and cut to exactly ``seconds``."""
    return np.resize(speak(TEXT * 3), int(seconds * SAMPLE_RATE))


class TimedModel(QwenAsrModel):
    """The model, adding up the time and the FLOPs of encoding, prefilling and decoding one token at a time.

    FLOPs are counted exactly with torch's FlopCounterMode around each call (its
    bookkeeping adds a few per cent to the times).
    """

    def __init__(self, model: Any, processor: Any, window_seconds: float | None) -> None:
        super().__init__(model, processor, torch.device("cpu"), window_seconds)
        self.seconds: Counter[str] = Counter()
        self.flops: Counter[str] = Counter()

    def _measured(self, phase: str, call: Any) -> Any:
        counter = FlopCounterMode(display=False)
        began = time.perf_counter()
        try:
            with counter:
                return call()
        finally:
            self.seconds[phase] += time.perf_counter() - began
            self.flops[phase] += counter.get_total_flops()

    def encode_window(self, features: torch.Tensor) -> torch.Tensor:
        return self._measured("encoder", lambda: super(TimedModel, self).encode_window(features))

    def forward(self, embeds: torch.Tensor, start: int, cache: Any, **kwargs: Any) -> torch.Tensor:
        phase = "prefill" if embeds.shape[1] > 1 else "decode"
        return self._measured(phase, lambda: super(TimedModel, self).forward(embeds, start, cache, **kwargs))


@dataclass
class Run:
    variant: str
    window_s: float
    seconds: float
    steps: int
    total_s: float
    step_times_s: list[float]
    tokens: int
    audio_tokens_prefilled: int
    text_tokens_prefilled: int
    phase_s: dict[str, float] = field(default_factory=dict)
    #: Exact FLOPs by phase; prefill split into audio and text in proportion to the tokens of each step.
    phase_flops: dict[str, float] = field(default_factory=dict)
    step_flops: list[float] = field(default_factory=list)
    #: Steps whose prefill recomputed every audio token (nothing of the audio reused), by cause.
    full_prefills: dict[str, int] = field(default_factory=dict)

    @property
    def gflops_per_audio_second(self) -> float:
        return sum(self.phase_flops.values()) / 1e9 / self.seconds

    @property
    def early_step_gflops(self) -> float:
        quarter = max(1, len(self.step_flops) // 4)
        return statistics.median(self.step_flops[:quarter]) / 1e9

    @property
    def late_step_gflops(self) -> float:
        quarter = max(1, len(self.step_flops) // 4)
        return statistics.median(self.step_flops[-quarter:]) / 1e9

    @property
    def early_step_s(self) -> float:
        quarter = max(1, len(self.step_times_s) // 4)
        return statistics.median(self.step_times_s[:quarter])

    @property
    def late_step_s(self) -> float:
        quarter = max(1, len(self.step_times_s) // 4)
        return statistics.median(self.step_times_s[-quarter:])


@dataclass
class Meter:
    """Per-step FLOPs of one session, with each prefill split into audio and text by its tokens."""

    model: TimedModel
    session: ScriptedSession
    flops: Counter[str] = field(default_factory=Counter)
    steps: list[float] = field(default_factory=list)
    full_prefills: Counter[str] = field(default_factory=Counter)
    _seen: Counter[str] = field(default_factory=Counter)
    _offset: float = 0.0
    _audio: int = 0
    _text: int = 0
    _steps_done: int = 0

    def after_call(self) -> bool:
        """Account for a feed or finish; whether it ran a step."""
        session, counts = self.session, self.session.prefilled
        if session.steps == self._steps_done:
            return False  # the call only buffered audio
        self._steps_done = session.steps
        now = Counter(self.model.flops)
        delta = {phase: now[phase] - self._seen[phase] for phase in ("encoder", "prefill", "decode")}
        self._seen = now
        audio, text = counts.audio_tokens - self._audio, counts.text_tokens - self._text
        self._audio, self._text = counts.audio_tokens, counts.text_tokens
        audio_share = audio / max(1, audio + text)
        self.flops["encoder"] += delta["encoder"]
        self.flops["audio prefill"] += delta["prefill"] * audio_share
        self.flops["text prefill"] += delta["prefill"] * (1 - audio_share)
        self.flops["decode"] += delta["decode"]
        self.steps.append(sum(delta.values()))
        if session.reused_tokens <= session.prefix_tokens:
            self.full_prefills[self._full_prefill_cause()] += 1
        self._offset = self.session.offset_seconds
        return True

    def _full_prefill_cause(self) -> str:
        if self.session.offset_seconds != self._offset:
            return "stream window cut"
        if self.session.prefilled.last_changed_windows:
            return "window changed"
        return "no window complete before"


def scripted_session(
    model: TimedModel, settings: SimulKvSettings, tokens_per_second: float, session_type: type[ScriptedSession]
) -> ScriptedSession:
    backend = ScriptedBackend(model, settings=settings)
    backend.session_type, backend.tokens_per_second = session_type, tokens_per_second
    return backend.create_session(SessionOptions(language="English"))


def stream(
    model: TimedModel, audio: np.ndarray, settings: SimulKvSettings, args: argparse.Namespace, reuse: bool = True
) -> Run:
    model.seconds.clear()
    model.flops.clear()
    session_type = ScriptedSession if reuse else ReprefillSession
    session = scripted_session(model, settings, args.tokens_per_second, session_type)
    meter = Meter(model, session)
    times = []
    for start in range(0, audio.shape[0], CHUNK_SAMPLES):
        began = time.perf_counter()
        session.feed(audio[start : start + CHUNK_SAMPLES])
        if meter.after_call():
            times.append(time.perf_counter() - began)
    began = time.perf_counter()
    session.finish()
    times.append(time.perf_counter() - began)
    meter.after_call()
    return finished_run("simulkv" if reuse else "reprefill", model, session, audio, times, meter)


def offline(model: TimedModel, audio: np.ndarray, settings: SimulKvSettings, args: argparse.Namespace) -> Run:
    # A step and a stream window longer than the audio: feed() only buffers, and finish() is the one pass.
    model.seconds.clear()
    model.flops.clear()
    settings = replace(settings, step_seconds=1e9, stream_window_seconds=1e9)
    session = scripted_session(model, settings, args.tokens_per_second, ScriptedSession)
    meter = Meter(model, session)
    began = time.perf_counter()
    session.feed(audio)
    session.finish()
    meter.after_call()
    return finished_run("offline", model, session, audio, [time.perf_counter() - began], meter)


def finished_run(
    variant: str, model: TimedModel, session: ScriptedSession, audio: np.ndarray, times: list[float], meter: Meter
) -> Run:
    """The record of one run, from its session's statistics and the model's phase times and FLOPs."""
    return Run(
        variant,
        model.window_seconds,
        audio.shape[0] / SAMPLE_RATE,
        session.steps,
        sum(times),
        times,
        len(session.answer_ids),
        session.prefilled.audio_tokens,
        session.prefilled.text_tokens,
        dict(model.seconds),
        dict(meter.flops),
        meter.steps,
        dict(meter.full_prefills),
    )


def phases(run: Run) -> str:
    seconds, flops = run.phase_s, run.phase_flops
    per_second = {phase: flops.get(phase, 0.0) / 1e9 / run.seconds for phase in flops}
    return (
        f"{run.variant:>9}: encoder {seconds.get('encoder', 0):6.1f} s, prefill {seconds.get('prefill', 0):6.1f} s "
        f"({run.audio_tokens_prefilled} audio + {run.text_tokens_prefilled} text tokens), "
        f"decode {seconds.get('decode', 0):5.1f} s; GFLOPs per audio second: "
        + ", ".join(f"{phase} {value:.1f}" for phase, value in per_second.items())
        + "; full re-prefills: "
        + (", ".join(f"{count} {cause}" for cause, count in run.full_prefills.items()) or "none")
    )


def settings_of(args: argparse.Namespace) -> SimulKvSettings:
    """The server's streaming settings with this run's step and stream window."""
    return replace(
        DEFAULTS,
        step_seconds=args.chunk,
        stream_window_seconds=args.stream_window,
        stream_keep_seconds=args.stream_keep,
    )


def compare_int8(model: Any, processor: Any, args: argparse.Namespace) -> None:
    """Stream the same audio with float32 and int8 weights, alternating, and compare step times."""
    quantized = copy.deepcopy(model)
    quantize_int8(quantized)
    window = args.window[0]
    variants = {"float32": TimedModel(model, processor, window), "int8": TimedModel(quantized, processor, window)}
    settings = settings_of(args)
    print(
        f"# {args.shape} random weights, CPU, {args.threads} threads, {args.chunk:g} s steps, "
        f"{args.tokens_per_second:g} tokens per audio second, encoder window "
        f"{variants['int8'].window_seconds:g} s; float32 and int8 alternating, median step time",
        flush=True,
    )
    for qwen in variants.values():
        stream(qwen, speech(2.0), settings, args)  # warm-up
    for seconds in args.seconds:
        audio = speech(seconds)
        medians: dict[str, list[float]] = {name: [] for name in variants}
        split: dict[str, str] = {}
        for _ in range(2):
            for name, qwen in variants.items():
                run = stream(qwen, audio, settings, args)
                medians[name].append(statistics.median(run.step_times_s))
                split[name] = ", ".join(f"{phase} {time / run.steps:.3f} s" for phase, time in run.phase_s.items())
        fp32, int8 = min(medians["float32"]), min(medians["int8"])
        print(f"{seconds:4.0f} s: step {fp32:.3f} s float32, {int8:.3f} s int8: int8 {fp32 / int8:.2f}x faster")
        for name, text in split.items():
            print(f"        {name} per step (mean, last run): {text}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, nargs="+", default=[5, 10, 20, 30])
    parser.add_argument(
        "--chunk",
        type=float,
        default=DEFAULTS.step_seconds,
        help=f"seconds of audio per step (default: the server's, {DEFAULTS.step_seconds:g})",
    )
    parser.add_argument(
        "--stream-window",
        type=float,
        default=DEFAULTS.stream_window_seconds,
        help=f"seconds of audio a step looks at (default: the server's, {DEFAULTS.stream_window_seconds:g})",
    )
    parser.add_argument(
        "--stream-keep",
        type=float,
        default=DEFAULTS.stream_keep_seconds,
        help=f"seconds a cut of the stream window keeps (default: the server's, {DEFAULTS.stream_keep_seconds:g})",
    )
    parser.add_argument("--tokens-per-second", type=float, default=4.0, help="tokens per second of speech (default: 4)")
    parser.add_argument("--shape", default="0.6b", help="random model shape (default: 0.6b)")
    parser.add_argument(
        "--window",
        type=float,
        nargs="+",
        default=[CATALOGUE[DEFAULT_MODEL].encoder_window_seconds],
        help="encoder windows (s) to run, each a table (default: the server's for Qwen3-ASR-0.6B)",
    )
    parser.add_argument(
        "--variants",
        nargs="+",
        choices=("simulkv", "reprefill", "offline"),
        default=["simulkv", "reprefill", "offline"],
        help="runs to make (default: all three)",
    )
    parser.add_argument("--threads", type=int, default=torch.get_num_threads())
    parser.add_argument(
        "--int8", action="store_true", help="instead: per-step time of float32 against int8 weights, side by side"
    )
    parser.add_argument("--json", type=Path, help="also write the runs as JSON")
    args = parser.parse_args()

    torch.set_num_threads(args.threads)
    model, processor = create_random_model(args.shape)
    if args.int8:
        compare_int8(model.eval(), processor, args)
        return
    runs: list[Run] = []
    for window in args.window:
        qwen = TimedModel(model.eval(), processor, window)
        print(
            f"# {args.shape} random weights, CPU, {args.threads} threads, {args.chunk:g} s steps, "
            f"{args.tokens_per_second:g} tokens per audio second, encoder window {qwen.window_seconds:g} s, "
            f"stream window {args.stream_window:g} s cut to {args.stream_keep:g} s",
            flush=True,
        )
        stream(qwen, speech(2.0), settings_of(args), args)  # warm-up
        print(
            f"{'audio s':>7} {'variant':>9} {'steps':>5} {'time s':>7} {'step s early->late':>18} "
            f"{'GFLOPs/audio s':>14} {'GFLOPs/step early->late':>23}",
            flush=True,
        )
        for seconds in args.seconds:
            audio = speech(seconds)
            for variant in args.variants:
                if variant == "offline":
                    run = offline(qwen, audio, settings_of(args), args)
                else:
                    run = stream(qwen, audio, settings_of(args), args, reuse=variant == "simulkv")
                runs.append(run)
                print(
                    f"{seconds:7.0f} {variant:>9} {run.steps:5d} {run.total_s:7.1f} "
                    f"{run.early_step_s:8.2f} -> {run.late_step_s:5.2f} {run.gflops_per_audio_second:14.1f} "
                    f"{run.early_step_gflops:13.1f} -> {run.late_step_gflops:6.1f}",
                    flush=True,
                )
                print("        " + phases(run), flush=True)
    if args.json:
        args.json.write_text(json.dumps([asdict(r) for r in runs], indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    sys.exit(main())
