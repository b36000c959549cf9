"""What a home's names in the context cost the real model: the 0.6B shape, int8, on this machine's cores.

A server runs the random-weight 0.6B shape decoding on a script (``tools.scripted``,
about 4 tokens a second of speech: a real model's work), in int8 as a CPU runs it,
with N names of a home in its context (``--context``: what a home read from Home
Assistant, or a client's names, become). A Home Assistant-like client
(``tools.ha_client``) streams 3 s commands in real time and ends them as Home
Assistant 2026.11 does, by its own VAD after 0.7 s of silence (``--fixed-stop``:
exactly 0.7 s after the speech, with no VAD lag, the harder bound); reported, median
over the commands: the first partial transcript from the first audio, and the final
transcript from ``audio-stop`` (0 when it came first). The first command of each
server is not counted: it computes the context's prompt once, where the server
reuses it (``backends/simulkv/kv_cache``).

Usage: script/benchmark names [--names 0 50 200] [--repeats 5] [--fixed-stop] [--out DIR]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import platform
import random
import statistics
import time
from pathlib import Path

from tools.corpus import AREAS, DEVICES
from tools.ha_client import command
from tools.names import training_name
from tools.scripted import TOKENS_PER_SECOND
from tools.server_process import start_server
from wyoming_qwen3.model.catalogue import CATALOGUE, DEFAULT_MODEL

from .compute import speech
from .latency_shape import model_folder


def home_names(count: int, seed: int = 3) -> str:
    """``count`` names as a home has them: areas' devices ("kitchen lamp"), and names of the home's own."""
    rng = random.Random(seed)
    names: list[str] = []
    while len(names) < count:
        name = f"{rng.choice(AREAS)} {rng.choice(DEVICES)}" if rng.random() < 0.6 else training_name(rng, frozenset())
        if name not in names:
            names.append(name)
    return ", ".join(names)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--names", type=int, nargs="+", default=[0, 50, 200])
    parser.add_argument("--repeats", type=int, default=5, help="commands timed per N (default: 5)")
    parser.add_argument("--fixed-stop", action="store_true", help="audio-stop exactly 0.7 s after the speech")
    parser.add_argument("--out", type=Path, default=Path("local/benchmark"))
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)

    folder = model_folder()
    audio = speech(3.0)
    window = CATALOGUE[DEFAULT_MODEL].encoder_window_seconds
    flags = ["--tokens-per-second", str(TOKENS_PER_SECOND), "--encoder-window", f"{window:g}", "--quantize", "int8"]
    rows = []
    print(f"{'names':>5} {'bytes':>6} {'first partial ms':>16} {'after audio-stop ms':>19}", flush=True)
    for count in args.names:
        context = home_names(count)
        log = args.out / f"server-names-{count}.log"
        server = start_server(folder, log, *flags, "--context", context, timeout=900, module="tools.scripted")
        try:
            turns = [
                asyncio.run(
                    command(server.host, server.port, audio, silence_seconds=0.7, fixed_stop=args.fixed_stop, seed=i)
                )
                for i in range(args.repeats + 1)
            ][1:]  # the first computes the context's prompt
        finally:
            server.stop()
        partial = [t.first_chunk_s * 1000 for t in turns if t.first_chunk_s is not None]
        after = [t.after_stop_ms or 0.0 for t in turns]
        row = {
            "names": count,
            "context_bytes": len(context.encode()),
            "first_partial_ms": [round(v) for v in partial],
            "after_audio_stop_ms": [round(v) for v in after],
            "median_first_partial_ms": round(statistics.median(partial)) if partial else None,
            "median_after_audio_stop_ms": round(statistics.median(after)),
            "errors": [t.error for t in turns if t.error],
        }
        rows.append(row)
        print(
            f"{count:5d} {row['context_bytes']:6d} {row['median_first_partial_ms']!s:>16} "
            f"{row['median_after_audio_stop_ms']:19d}",
            flush=True,
        )
    summary = {
        "machine": f"{platform.processor() or platform.machine()}, {platform.system()}",
        "date": time.strftime("%Y-%m-%d"),
        "shape": "0.6b",
        "quantize": "int8",
        "audio_stop": "0.7 s after the speech" if args.fixed_stop else "Home Assistant's VAD, 0.7 s of silence",
        "rows": rows,
    }
    (args.out / "names-0.6b.json").write_text(json.dumps(summary, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
