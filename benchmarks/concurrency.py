"""Capacity: how many people can speak at once before the answer comes late.

N clients each stream held-out commands in real time, as Home Assistant 2026.11
sends them (``tools.ha_client``: 10 ms chunks, the room's noise around the
words, audio-stop ``--silence`` after the speech: 1.2 s, Home Assistant's
default 0.7 s of silence after its VAD's lag of about 0.5 s; with no VAD run in
the client, so that 64 clients cost it little), their starts spread evenly
over ``--spread`` seconds; each sends ``--rounds`` commands one after another.
For N = 1, 2, 4, 8, ... it reports the wait from audio-stop to the final
transcript (0 when it came before audio-stop), median, p95 and max, and the
first partial transcript from the first audio, until the p95 passes
``--limit-ms``. Two servers run the same model, taking turns on each N:

- ``alone``: ``--max-batch 1``, every stream's passes run one at a time (before);
- ``batched``: the server's default, streams' token passes batched.

With the demo model, the word error rate of each N shows that no transcript is lost or mixed up.

Usage: script/benchmark concurrency [--model demo | --shape 0.6b] [--quantize int8] [--clients 1 2 4 ...]
       [--step-seconds S ...: the server's streaming settings, for both servers]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import platform
import statistics
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from tools.corpus import heldout_utterances
from tools.ha_client import Turn, command
from tools.scripted import TOKENS_PER_SECOND
from tools.server_process import ServerProcess, add_server_arguments, server_flags, start_server
from tools.speech import speak
from tools.wer import wer
from wyoming_qwen3.model.catalogue import CATALOGUE, DEFAULT_MODEL

from .latency_shape import model_folder

CONFIGS: dict[str, tuple[str, ...]] = {"alone": ("--max-batch", "1"), "batched": ()}
DEFAULT_CLIENTS = [1, 2, 4, 8, 12, 16, 24, 32, 48, 64]


@dataclass
class Level:
    """One N of one server: every command's turn."""

    config: str
    clients: int
    turns: list[Turn]
    texts: list[str]

    def waits_ms(self) -> list[float]:
        """audio-stop -> final transcript; 0 when it came first; inf when none came."""
        return [
            float("inf") if t.transcript_s is None else 0.0 if t.before_stop else float(t.after_stop_ms or 0.0)
            for t in self.turns
        ]

    def summary(self, scored: bool) -> Summary:
        waits = sorted(self.waits_ms())
        partials = [t.first_chunk_s * 1000 for t in self.turns if t.first_chunk_s is not None]
        return Summary(
            config=self.config,
            clients=self.clients,
            commands=len(self.turns),
            median_ms=round(statistics.median(waits), 1),
            p95_ms=round(percentile(waits, 0.95), 1),
            max_ms=round(waits[-1], 1),
            first_partial_median_ms=round(statistics.median(partials), 1) if partials else None,
            errors=sum(t.error is not None for t in self.turns),
            wer=round(wer([(text, t.text or "") for t, text in zip(self.turns, self.texts, strict=True)]), 4)
            if scored
            else None,
        )


@dataclass(frozen=True)
class Summary:
    """What one N of one server measured (a row of the table, and of the JSON)."""

    config: str
    clients: int
    commands: int
    median_ms: float
    p95_ms: float
    max_ms: float
    first_partial_median_ms: float | None
    errors: int
    #: The demo model's word error rate over these commands (None: random weights write no words).
    wer: float | None


def percentile(sorted_values: list[float], share: float) -> float:
    """The nearest-rank percentile of sorted values."""
    rank = max(0, min(len(sorted_values) - 1, int(np.ceil(share * len(sorted_values))) - 1))
    return sorted_values[rank]


async def run_level(
    server: ServerProcess,
    clients: int,
    corpus: list[tuple[str, np.ndarray]],
    rounds: int,
    spread: float,
    silence: float,
) -> tuple[list[Turn], list[str]]:
    """N clients, starts spread evenly, each streaming ``rounds`` commands in turn."""

    async def client(index: int) -> list[tuple[Turn, str]]:
        await asyncio.sleep(spread * index / clients)
        out = []
        for round_index in range(rounds):
            text, audio = corpus[(index * rounds + round_index) % len(corpus)]
            turn = await command(server.host, server.port, audio, silence_seconds=silence, fixed_stop=True, seed=index)
            out.append((turn, text))
        return out

    results = await asyncio.gather(*(client(i) for i in range(clients)))
    pairs = [pair for per_client in results for pair in per_client]
    return [turn for turn, _ in pairs], [text for _, text in pairs]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="demo", help="model name or folder (default: demo)")
    parser.add_argument("--shape", choices=("0.6b",), help="random weights of this shape, decoding on a script")
    parser.add_argument("--quantize", choices=("none", "int8", "auto"), default="auto")
    parser.add_argument("--clients", type=int, nargs="+", default=DEFAULT_CLIENTS)
    parser.add_argument("--rounds", type=int, default=2, help="commands each client sends in turn (default: 2)")
    parser.add_argument("--spread", type=float, default=2.0, help="seconds over which clients start (default: 2)")
    parser.add_argument(
        "--silence",
        type=float,
        default=1.2,
        help="speech end -> audio-stop, s (default: 1.2: Home Assistant's 0.7 s after its VAD's 0.5 s lag)",
    )
    parser.add_argument("--limit-ms", type=float, default=300.0, help="stop past this p95 (default: 300)")
    parser.add_argument("--configs", nargs="+", choices=tuple(CONFIGS), default=list(CONFIGS))
    parser.add_argument("--out", type=Path, default=Path("local/benchmark"))
    add_server_arguments(parser)
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)

    flags = ["--quantize", args.quantize, *server_flags(args)]
    module = "wyoming_qwen3"
    model: Path | str = args.model
    if args.shape:
        model, module = model_folder(), "tools.scripted"
        window = CATALOGUE[DEFAULT_MODEL].encoder_window_seconds
        flags += ["--tokens-per-second", str(TOKENS_PER_SECOND), "--encoder-window", f"{window:g}"]
    name = args.shape or Path(str(args.model)).name
    corpus = [(text, speak(text, voice, 165, 50)) for text, voice in heldout_utterances(64, seed=2)]

    servers: dict[str, ServerProcess] = {}
    summaries: list[Summary] = []
    try:
        for config in args.configs:
            log = args.out / f"concurrency-{name}-{config}.log"
            servers[config] = start_server(model, log, *flags, *CONFIGS[config], timeout=900, module=module)
        for server in servers.values():  # one command first: lazy initialisation
            asyncio.run(command(server.host, server.port, corpus[0][1], silence_seconds=args.silence, fixed_stop=True))
        print(
            f"{'server':>8} {'N':>3} {'median ms':>9} {'p95 ms':>7} {'max ms':>7} {'partial ms':>10}   WER", flush=True
        )
        live = set(servers)
        for clients in args.clients:
            for config in [c for c in servers if c in live]:
                turns, texts = asyncio.run(
                    run_level(servers[config], clients, corpus, args.rounds, args.spread, args.silence)
                )
                summary = Level(config, clients, turns, texts).summary(scored=not args.shape)
                summaries.append(summary)
                print(
                    f"{config:>8} {clients:3d} {summary.median_ms:9.0f} {summary.p95_ms:7.0f} "
                    f"{summary.max_ms:7.0f} {summary.first_partial_median_ms or float('nan'):10.0f} "
                    f"{summary.wer if summary.wer is not None else '-':>5}"
                    + (f"  errors {summary.errors}" if summary.errors else ""),
                    flush=True,
                )
                if summary.p95_ms > args.limit_ms:
                    live.discard(config)
            if not live:
                break
    finally:
        for server in servers.values():
            server.stop()
    capacity = {
        config: max((s.clients for s in summaries if s.config == config and s.p95_ms <= args.limit_ms), default=0)
        for config in servers
    }
    print(f"streams within p95 {args.limit_ms:.0f} ms: {capacity}", flush=True)
    result = {
        "machine": f"{platform.processor() or platform.machine()}, {platform.system()}",
        "date": time.strftime("%Y-%m-%d"),
        "model": name,
        "quantize": args.quantize,
        "rounds": args.rounds,
        "spread_s": args.spread,
        "silence_s": args.silence,
        "levels": [asdict(s) for s in summaries],
        "capacity": capacity,
    }
    (args.out / f"concurrency-{name}.json").write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
