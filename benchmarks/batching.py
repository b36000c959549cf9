"""Batched against alone: whether streams batched on the inference thread send what they send alone.

Held-out commands of different lengths, starting at different rounds, run on the
demo model alone and then batched (``tools.batching``), in float32 and in int8.
Reported: the streams whose every delta is the same, those whose final transcript
is the same, and the largest batch. float32 must match everywhere; torch's
dynamic int8 Linear scales its input by the largest value of the whole batch,
so a row's quantization depends on the other rows, and there it may not.

Usage: script/benchmark batching [--commands 16] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from tools.batching import alone, batch_sizes, together
from tools.corpus import heldout_utterances
from tools.in_process import demo_backend
from tools.speech import speak


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--commands", type=int, default=16)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    audios = [speak(text, voice, 165, 50) for text, voice in heldout_utterances(args.commands, seed=4)]
    starts = [index % 3 for index in range(len(audios))]
    results = {}
    for quantize in ("none", "int8"):
        backend = demo_backend(quantize)
        try:
            expected = [alone(backend, audio) for audio in audios]
            sizes = batch_sizes(backend)
            got = together(backend, audios, starts)
        finally:
            backend.executor.shutdown()
        same_deltas = sum(g == e for g, e in zip(got, expected, strict=True))
        same_finals = sum("".join(g) == "".join(e) for g, e in zip(got, expected, strict=True))
        results[quantize] = {
            "streams": len(audios),
            "same_deltas": same_deltas,
            "same_final": same_finals,
            "largest_batch": max(sizes),
        }
        print(
            f"{quantize:>5}: {same_deltas} of {len(audios)} streams sent the same deltas, {same_finals} the same "
            f"transcript; batches of up to {max(sizes)}",
            flush=True,
        )
    if args.json:
        args.json.write_text(json.dumps(results, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
