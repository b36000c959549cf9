"""Word error rate of the demo model on its held-out set, offline and streamed through the server.

The held-out utterances (wyoming_qwen3/model/demo/heldout.json) are word combinations
and voices the model never heard in training; they are spoken again here with
espeak-ng, then transcribed offline in-process and streamed through a real
server in 10 ms chunks as Home Assistant sends them.

Usage: script/benchmark wer [--speed 1.0] [--limit N] [--model demo] [--quantize int8] [--json FILE]
                            [--border-seconds S] [--min-probability P] [--tuning-seed N]
                            [--step-seconds S] [--encoder-window S] [--stream-window S] [--trailing-noise]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import tempfile
from pathlib import Path

import numpy as np

from tools.client import stream
from tools.corpus import heldout_utterances, with_trailing_noise
from tools.server_process import add_server_arguments, server_flags, start_server
from tools.speech import as_speech, speak
from tools.wer import normalize, wer
from wyoming_qwen3.model.catalogue import resolve_model
from wyoming_qwen3.model.format import SAMPLE_RATE
from wyoming_qwen3.model.qwen import QwenAsrModel


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--speed", type=float, default=1.0, help="x real time for streaming (default: 1.0)")
    parser.add_argument("--limit", type=int, help="only the first N utterances")
    parser.add_argument("--model", default="demo", help="the demo model or a folder like it (default: demo)")
    add_server_arguments(parser)
    parser.add_argument(
        "--tuning-seed", type=int, help="score held-out combinations drawn with this seed instead of heldout.json"
    )
    parser.add_argument("--quantize", default="none", choices=("none", "int8"), help="weights, as the server's option")
    parser.add_argument(
        "--trailing-noise",
        action="store_true",
        help="each command followed by 0-2.5 s of a room's noise (-70 dBFS), as a satellite streams it",
    )
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()

    model = resolve_model(args.model, [], Path("."))
    if args.tuning_seed is None:
        heldout = json.loads((model.path / "heldout.json").read_text())["utterances"][: args.limit]
    else:  # other held-out combinations, so that thresholds are not chosen on the test set
        heldout = [{"text": t, "voice": v} for t, v in heldout_utterances(args.limit or 100, args.tuning_seed)]
    audio = [speak(u["text"], u["voice"], 165, 50) for u in heldout]
    if args.trailing_noise:
        rng = np.random.default_rng(5)
        audio = [with_trailing_noise(a, rng.uniform(0, 2.5), rng) for a in audio]
    qwen = QwenAsrModel.load(model.path, "cpu", args.encoder_window, quantize=args.quantize)
    offline = [(u["text"], qwen.transcribe(a).text) for u, a in zip(heldout, audio, strict=True)]

    with tempfile.TemporaryDirectory() as folder:
        flags = [*server_flags(args), "--quantize", args.quantize]
        server = start_server(Path(args.model), Path(folder) / "server.log", *flags)
        try:
            replies = [
                asyncio.run(stream(server.host, server.port, as_speech(a), language="en", speed=args.speed))
                for a in audio
            ]
        finally:
            server.stop()
    streamed = [(u["text"], r.text) for u, r in zip(heldout, replies, strict=True)]
    longer = [r for r, a in zip(replies, audio, strict=True) if len(a) > 2 * SAMPLE_RATE]
    early = sum(r.partial_before_end for r in longer)
    same = sum(normalize(o) == normalize(s) for (_, o), (_, s) in zip(offline, streamed, strict=True))
    result = {
        "utterances": len(heldout),
        "wer_offline": round(wer(offline), 4),
        "wer_streaming": round(wer(streamed), 4),
        "streaming_equals_offline": same,
        "partials_before_end_on_utterances_over_2s": f"{early}/{len(longer)}",
        "speed": args.speed,
        "trailing_noise": args.trailing_noise,
        "quantize": args.quantize,
        "tuning_seed": args.tuning_seed,
        "border_seconds": args.border_seconds,
        "min_probability": args.min_probability,
    }
    print(
        f"{len(heldout)} held-out utterances: WER offline {result['wer_offline']:.1%}, "
        f"streamed {result['wer_streaming']:.1%}; {same} streamed transcripts equal the offline ones; "
        f"partial words before the end on {early} of {len(longer)} utterances over 2 s"
    )
    for (reference, o), (_, s) in zip(offline, streamed, strict=True):
        if normalize(o) != normalize(reference) or normalize(s) != normalize(reference):
            print(f"  ref: {reference}\n  off: {o}\n  str: {s}")
    if args.json:
        args.json.write_text(json.dumps({**result, "offline": offline, "streamed": streamed}, indent=1) + "\n")


if __name__ == "__main__":
    main()
