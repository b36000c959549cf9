"""Word error rate of the demo model on its held-out sets, offline and streamed through the server.

The held-out utterances (demo-model/wyoming_qwen3_demo/heldout.json) are word combinations
and voices the model never heard in training; they are spoken again here with
espeak-ng, then transcribed offline in-process and streamed through a real
server in 10 ms chunks as Home Assistant sends them. ``--set`` picks the set:

- ``commands`` (default): Home Assistant style commands; ``--unrelated`` sends each with a list of names
  that none of them says, as ``transcribe`` names, as much of it as the server keeps (its 512-byte bound);
- ``named``: commands that say a home's own made-up name, never trained on, each once with the name among
  16 others in ``transcribe`` and once with no names: the gain of the context;
- ``mandarin``: Mandarin commands (``language zh``), scored by characters, with whether the streamed deltas
  came as whole characters before the audio ended;
- ``home``: the ``named`` commands, their client sending no names, the server reading a home from a stand-in
  Home Assistant (an entity for each of the set's 60 made-up names, the corpus's areas), its context holding
  ``--home-bytes`` of those names.

``--synthesizer flite|festival`` speaks an English set with another synthesizer family than espeak-ng (its
voices in turn, ``tools.speech.OTHER_VOICES``): speech unlike anything the demo model was trained on.

Usage: script/benchmark wer [--set commands|named|mandarin|home] [--synthesizer flite|festival] [--unrelated]
                            [--home-bytes N] [--speed 1.0]
                            [--limit N] [--model demo] [--quantize int8] [--json FILE] [--border-seconds S]
                            [--min-probability P] [--tuning-seed N] [--step-seconds S] [--encoder-window S]
                            [--stream-window S] [--trailing-noise]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import tempfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from tools import offline
from tools.client import Reply, stream
from tools.corpus import AREAS, heldout_utterances, with_trailing_noise
from tools.home_assistant import StandInHomeAssistant, home_of_names
from tools.names import heldout_names, name_list
from tools.server_process import ServerProcess, add_server_arguments, server_flags, start_server
from tools.speech import OTHER_VOICES, as_speech, speak, speak_with
from tools.wer import cer, normalize, wer
from wyoming_qwen3.home.assistant import HomeAssistantLink
from wyoming_qwen3.model.catalogue import resolve_model
from wyoming_qwen3.model.format import SAMPLE_RATE
from wyoming_qwen3.model.languages import LANGUAGE_NAMES
from wyoming_qwen3.model.qwen import QwenAsrModel
from wyoming_qwen3.model.text_units import is_unspaced
from wyoming_qwen3.server.context import bounded_entries, build_context

#: Seed of the unrelated list of ``--unrelated``.
_UNRELATED_SEED = 7


@dataclass(frozen=True)
class Item:
    """One utterance to score: its reference, audio, and the names sent with it."""

    text: str
    audio: np.ndarray
    names: list[str] | None = None
    #: The context the server builds without names from the client (a home's names read from Home Assistant).
    context: str | None = None


@dataclass
class Scored:
    """One pass over a set: offline and streamed transcripts."""

    label: str
    offline: list[tuple[str, str]]
    streamed: list[tuple[str, str]]
    replies: list[Reply]
    #: Each utterance's length.
    seconds: list[float]


def run(
    label: str, items: list[Item], qwen: QwenAsrModel, server: ServerProcess, language: str, speed: float
) -> Scored:
    """Transcribe ``items`` offline (the context and language as the server builds them) and streamed."""
    name = LANGUAGE_NAMES[language]
    contexts = [i.context if i.context is not None else build_context("", i.names or []) for i in items]
    heard = [(i.text, offline.transcribe(qwen, i.audio, c, name).text) for i, c in zip(items, contexts, strict=True)]
    replies = [
        asyncio.run(stream(server.host, server.port, as_speech(i.audio), language=language, names=i.names, speed=speed))
        for i in items
    ]
    streamed = [(i.text, r.text) for i, r in zip(items, replies, strict=True)]
    return Scored(label, heard, streamed, replies, [len(i.audio) / SAMPLE_RATE for i in items])


def report(scored: Scored, by_characters: bool) -> dict[str, object]:
    """Error rates, equality and early text of one pass, printed and returned."""
    rate = cer if by_characters else wer
    longer = [r for r, seconds in zip(scored.replies, scored.seconds, strict=True) if seconds > 2.0]
    early = sum(r.partial_before_end for r in longer)
    same = sum(normalize(o) == normalize(s) for (_, o), (_, s) in zip(scored.offline, scored.streamed, strict=True))
    empty = sum(not s.strip() for _, s in scored.streamed)
    unit = "CER" if by_characters else "WER"
    result: dict[str, object] = {
        "utterances": len(scored.offline),
        f"{unit.lower()}_offline": round(rate(scored.offline), 4),
        f"{unit.lower()}_streaming": round(rate(scored.streamed), 4),
        "streaming_equals_offline": same,
        "partials_before_end_on_utterances_over_2s": f"{early}/{len(longer)}",
        "empty_streamed_transcripts": empty,
    }
    print(
        f"{scored.label}: {len(scored.offline)} held-out utterances: {unit} offline {rate(scored.offline):.1%}, "
        f"streamed {rate(scored.streamed):.1%}; {same} streamed transcripts equal the offline ones; "
        f"partial text before the end on {early} of {len(longer)} utterances over 2 s; {empty} empty",
        flush=True,
    )
    if by_characters:
        deltas = [d for r in scored.replies for d in r.chunks if r.first_chunk_s is not None]
        whole = sum(all(is_unspaced(c) for c in d.strip()) and "\ufffd" not in d for d in deltas)
        result["deltas_of_whole_characters"] = f"{whole}/{len(deltas)}"
        print(f"  {whole} of {len(deltas)} deltas are whole characters, no spaces", flush=True)
    for (reference, o), (_, s) in zip(scored.offline, scored.streamed, strict=True):
        if normalize(o) != normalize(reference) or normalize(s) != normalize(reference):
            print(f"  ref: {reference}\n  off: {o}\n  str: {s}")
    return {**result, "offline": scored.offline, "streamed": scored.streamed}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--set", choices=("commands", "named", "mandarin", "home"), default="commands")
    parser.add_argument(
        "--home-size", type=int, help="home: made-up names a home has (default: all 60 of the set in one home)"
    )
    parser.add_argument(
        "--home-bytes",
        type=int,
        help="home: the server's --ha-names-bytes, how much of the home's names a context holds (default: the model's)",
    )
    parser.add_argument(
        "--unrelated",
        action="store_true",
        help="commands: send each with 64 names none says, of which the server keeps what its bound (512 bytes) holds",
    )
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
    parser.add_argument(
        "--synthesizer",
        choices=("espeak-ng", *OTHER_VOICES),
        default="espeak-ng",
        help="who speaks the set (default: espeak-ng, in the held-out voices); others speak English sets only",
    )
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    if args.synthesizer != "espeak-ng" and args.set == "mandarin":
        parser.error(f"{args.synthesizer} speaks no Mandarin: --set mandarin is espeak-ng's")

    model = resolve_model(args.model, [], Path("."))
    heldout = json.loads((model.path / "heldout.json").read_text())
    if args.set == "commands" and args.tuning_seed is not None:
        # other held-out combinations, so that thresholds are not chosen on the test set
        utterances = [{"text": t, "voice": v} for t, v in heldout_utterances(args.limit or 100, args.tuning_seed)]
    else:
        utterances = heldout[{"commands": "utterances", "home": "named"}.get(args.set, args.set)][: args.limit]
    if args.synthesizer == "espeak-ng":
        audio = [speak(u["text"], u["voice"], 165, 50) for u in utterances]
    else:
        voices = OTHER_VOICES[args.synthesizer]
        audio = [speak_with(args.synthesizer, u["text"], voices[i % len(voices)]) for i, u in enumerate(utterances)]
    if args.trailing_noise:
        rng = np.random.default_rng(5)
        audio = [with_trailing_noise(a, rng.uniform(0, 2.5), rng) for a in audio]
    unrelated: list[str] | None = None
    if args.unrelated:
        listed = name_list(64, random.Random(_UNRELATED_SEED), exclude=frozenset(heldout_names()))
        unrelated, _ = bounded_entries(listed.split(", "), None)  # what the server keeps of them
    # (label, whether each utterance goes with the context held out with it)
    passes = {
        "commands": [("commands" + (f", {_size(unrelated)} bytes of unrelated names" if unrelated else ""), False)],
        "named": [("the name among 16 in the context", True), ("no names", False)],
        "mandarin": [("Mandarin", False)],
        "home": [],
    }[args.set]
    qwen = QwenAsrModel.load(model.path, "cpu", args.encoder_window, quantize=args.quantize)
    results: dict[str, dict[str, object]] = {}
    with tempfile.TemporaryDirectory() as folder:
        flags = [*server_flags(args), "--quantize", args.quantize]
        if args.set == "home":
            budget = args.home_bytes or model.names_bytes
            label = f"homes of {args.home_size or len(utterances)} made-up names, {budget} bytes of names"
            results[label] = report(in_homes(label, utterances, audio, qwen, args, flags, budget), False)
        else:
            server = start_server(Path(args.model), Path(folder) / "server.log", *flags)
            try:
                for label, with_context in passes:
                    items = [
                        Item(u["text"], a, u["context"].split(", ") if with_context else unrelated)
                        for u, a in zip(utterances, audio, strict=True)
                    ]
                    language = "zh" if args.set == "mandarin" else "en"
                    scored = run(label, items, qwen, server, language, args.speed)
                    results[label] = report(scored, by_characters=args.set == "mandarin")
            finally:
                server.stop()
    if args.set == "named":
        with_names, without = (results[label]["wer_streaming"] for label, _ in passes)
        print(f"the context cuts the streamed WER on a home's own names from {without:.1%} to {with_names:.1%}")
    settings = {
        "set": args.set,
        "synthesizer": args.synthesizer,
        "unrelated_bytes": _size(unrelated) if unrelated else 0,
        "home_size": args.home_size,
        "home_bytes": args.home_bytes,
        "speed": args.speed,
        "trailing_noise": args.trailing_noise,
        "quantize": args.quantize,
        "tuning_seed": args.tuning_seed,
        "border_seconds": args.border_seconds,
        "min_probability": args.min_probability,
    }
    if args.json:
        args.json.write_text(json.dumps({**settings, "passes": results}, indent=1, ensure_ascii=False) + "\n")


def in_homes(
    label: str,
    utterances: list[dict],
    audio: list[np.ndarray],
    qwen: QwenAsrModel,
    args: argparse.Namespace,
    flags: list[str],
    budget: int,
) -> Scored:
    """The named commands, each in a home that has its name (``--home-size`` names and the corpus's areas): a
    stand-in Home Assistant serves each home to a server of its own, and the client sends no names."""
    size = args.home_size or len(utterances)
    parts: list[Scored] = []
    for start in range(0, len(utterances), size):
        group = utterances[start : start + size]
        home = home_of_names([u["name"] for u in group], AREAS)
        with tempfile.TemporaryDirectory() as folder, StandInHomeAssistant(home) as assistant:
            (Path(folder) / "token").write_text(assistant.token)
            reading = ["--ha-url", assistant.url, "--ha-token-file", str(Path(folder) / "token")]
            context = asyncio.run(context_read_from(assistant, budget))
            print(f"a home of {len(group)}: {len(context.encode())} bytes of its names in the context", flush=True)
            server = start_server(Path(args.model), Path(folder) / "server.log", *flags, *reading,
                                  "--ha-names-bytes", str(budget))  # fmt: skip
            try:
                items = [Item(u["text"], a, None, context) for u, a in zip(group, audio[start:], strict=False)]
                parts.append(run(label, items, qwen, server, "en", args.speed))
            finally:
                server.stop()
    return Scored(
        label,
        [pair for part in parts for pair in part.offline],
        [pair for part in parts for pair in part.streamed],
        [reply for part in parts for reply in part.replies],
        [seconds for part in parts for seconds in part.seconds],
    )


async def context_read_from(assistant: StandInHomeAssistant, budget: int) -> str:
    """The context the server builds for a client that sends no names: the home as its link reads it."""
    link = HomeAssistantLink(assistant.url, assistant.token)
    await link.start()
    try:
        for _ in range(200):
            if link.home is not None:
                return build_context("", list(link.home.context_names(budget).kept))
            await asyncio.sleep(0.05)
        raise RuntimeError("the stand-in Home Assistant was not read")
    finally:
        await link.close()


def _size(names: list[str]) -> int:
    """Bytes of the names as the context holds them."""
    return len(", ".join(names).encode())


if __name__ == "__main__":
    main()
