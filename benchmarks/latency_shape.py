"""Latency on the real model's compute: streaming against one batch pass at audio-stop, 0.6B shape.

The demo model is too small for its compute to matter; this mode puts the
compute of Qwen3-ASR-0.6B behind the real server. A random-weight model of
the 0.6B shape (``local/models/random-0.6b``, built once, about 3.6 GB)
decodes on a script (``python -m tools.scripted --tokens-per-second 4``: a streaming step
writes the tokens of the audio before the border, about 4 per second of
speech, the final pass the rest), so it does a real model's work for a
speaker at that pace. Two servers run side by side, taking turns on each
utterance so that both see the same machine:

- ``streaming``: the server's defaults for Qwen3-ASR-0.6B;
- ``batch``: ``--step-seconds`` longer than any utterance, so the whole
  utterance is transcribed in one pass at ``audio-stop`` (what
  wyoming-faster-whisper's Qwen3 backend does).

espeak-ng speech of 3 and 6 s is streamed in real time as 10 ms chunks, as
Home Assistant sends it, and the time from the last audio chunk to the final
transcript is measured, in float32 and with ``--quantize int8``.

Usage: script/benchmark latency --shape 0.6b [--repeats 5] [--seconds 3 6] [--precisions float32 int8]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import platform
import statistics
import time
from pathlib import Path

from tools.client import stream
from tools.random_model import build_random_model
from tools.scripted import TOKENS_PER_SECOND
from tools.server_process import ServerProcess, start_server
from tools.speech import Speech, as_speech
from wyoming_qwen3.model.catalogue import CATALOGUE, DEFAULT_MODEL

from .compute import speech

MODEL_FOLDER = Path("local/models/random-0.6b")
MODES: dict[str, tuple[str, ...]] = {"streaming": (), "batch": ("--step-seconds", "1000")}
#: Named explicitly: the server's own default (auto) is int8 on a CPU.
PRECISIONS: dict[str, tuple[str, ...]] = {"float32": ("--quantize", "none"), "int8": ("--quantize", "int8")}


def model_folder() -> Path:
    """The random 0.6B-shaped model, built on first use."""
    if not (MODEL_FOLDER / "random_model.json").is_file():
        print(f"building {MODEL_FOLDER} (once) ...", flush=True)
        build_random_model(MODEL_FOLDER, "0.6b")
    return MODEL_FOLDER


def measure(servers: dict[str, ServerProcess], audio: Speech, repeats: int) -> dict[str, list[float]]:
    """End of audio -> final transcript (s) of each server, taking turns."""
    latencies: dict[str, list[float]] = {mode: [] for mode in servers}
    for _ in range(repeats):
        for mode, server in servers.items():
            reply = asyncio.run(stream(server.host, server.port, audio, language="en"))
            latencies[mode].append(reply.final_latency_s)
    return latencies


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shape", choices=("0.6b",), default="0.6b")
    parser.add_argument("--repeats", type=int, default=5, help="utterances of each length (default: 5)")
    parser.add_argument("--seconds", type=float, nargs="+", default=[3.0, 6.0])
    parser.add_argument("--precisions", nargs="+", choices=tuple(PRECISIONS), default=list(PRECISIONS))
    parser.add_argument("--out", type=Path, default=Path("local/benchmark"))
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)

    folder = model_folder()
    utterances = {seconds: as_speech(speech(seconds)) for seconds in args.seconds}
    # The random model is a local folder: give it the streaming window the catalogue gives the real one.
    window = CATALOGUE[DEFAULT_MODEL].encoder_window_seconds
    schedule = ["--tokens-per-second", str(TOKENS_PER_SECOND), "--encoder-window", f"{window:g}"]
    results: list[dict[str, object]] = []
    print(f"{'precision':>9} {'speech s':>8} {'streaming ms':>12} {'batch ms':>9} {'streaming/batch':>15}", flush=True)
    for precision in args.precisions:
        servers: dict[str, ServerProcess] = {}
        try:
            for mode, flags in MODES.items():
                log = args.out / f"server-0.6b-{precision}-{mode}.log"
                servers[mode] = start_server(
                    folder, log, *schedule, *PRECISIONS[precision], *flags, timeout=900, module="tools.scripted"
                )
            for server in servers.values():  # one utterance each before timing: lazy initialisation
                asyncio.run(stream(server.host, server.port, utterances[args.seconds[0]], language="en"))
            for seconds, audio in utterances.items():
                latencies = measure(servers, audio, args.repeats)
                medians = {mode: statistics.median(values) for mode, values in latencies.items()}
                ratio = medians["streaming"] / medians["batch"]
                print(
                    f"{precision:>9} {seconds:8g} {medians['streaming'] * 1000:12.0f} "
                    f"{medians['batch'] * 1000:9.0f} {ratio:15.2f}",
                    flush=True,
                )
                results.append(
                    {
                        "precision": precision,
                        "seconds": seconds,
                        "latencies_s": {mode: [round(v, 3) for v in values] for mode, values in latencies.items()},
                        "median_ms": {mode: round(value * 1000) for mode, value in medians.items()},
                        "streaming_over_batch": round(ratio, 3),
                    }
                )
        finally:
            for server in servers.values():
                server.stop()
    summary = {
        "machine": f"{platform.processor() or platform.machine()}, {platform.system()}",
        "date": time.strftime("%Y-%m-%d"),
        "tokens_per_second": TOKENS_PER_SECOND,
        "results": results,
    }
    (args.out / "latency-0.6b.json").write_text(json.dumps(summary, indent=1) + "\n", encoding="utf-8")
