"""The end of a command: from the real end of speech to the transcript, as Home Assistant 2026.11 ends commands.

A client that behaves like Home Assistant (``tools.ha_client``) streams each command
in real time (0.3 s of a room's noise, the command, the room's noise), runs Home
Assistant's segmenter on pymicro-vad to decide audio-stop (its 0.25, 0.7 and 1.25 s
settings) unless the server ends the turn first, uploads and reads at once, and
closes on the transcript. Measured, per setting:

- today's behaviour (``--no-speculate``: the final pass starts at audio-stop);
- the final pass run in the trailing silence (the default);
- server endpointing (``--endpointing``) at several silences.

Two corpora: held-out commands, and held-out commands with a pause where people put
them (``tools.pauses``: after any word, 0.3-1.2 s, a third with "uh" or "um"): a
transcript that comes before the second part is a premature end.

Also, on every held-out command (and every paused one), the transcript of a server
that runs the final pass in the silence against one that runs it at audio-stop
(``--no-speculate``), each command followed by Home Assistant's 0.7 s.

Usage: script/benchmark endpoint [--limit 20] [--endpoint-limit 50] [--equality-limit 100] [--endpoint-only]
                                 [--home-commands]
       script/benchmark endpoint --shape 0.6b [--repeats 5] [--precisions float32 int8]
           (Home Assistant's 0.7 s only, today's behaviour against the early final pass, on the real
           model's compute: a random-weight 0.6B model decoding on a script, as the latency benchmark does)
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import shutil
import statistics
import time
from pathlib import Path
from typing import Any

import numpy as np

from tools.client import stream
from tools.corpus import DEMO_FOLDER, corpus_home, heldout_commands
from tools.ha_client import LEAD_SECONDS, Turn, command, room_noise
from tools.home_assistant import StandInHomeAssistant, stand_in
from tools.pauses import pause_corpus
from tools.scripted import TOKENS_PER_SECOND
from tools.server_process import ServerProcess, start_server
from tools.speech import as_speech, speak
from tools.wer import normalize
from wyoming_qwen3.model.catalogue import CATALOGUE, DEFAULT_MODEL
from wyoming_qwen3.model.format import SAMPLE_RATE
from wyoming_qwen3.model.grammar import GRAMMAR_FILE

HA_SETTINGS = (0.25, 0.7, 1.25)
#: Server endpointing settings: (silence once complete, silence while not).
ENDPOINT_SETTINGS = ((0.2, 1.25), (0.3, 1.25), (0.3, 1.0))


def corpus(limit: int) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Held-out commands, and held-out commands paused anywhere (``tools.pauses``: after every word in turn,
    0.3-1.2 s, a third with "uh" or "um"; held-out voices and rates)."""
    plain = [{"text": u["text"], "audio": speak(u["text"], u["voice"], 165, 50)} for u in heldout_commands()[:limit]]
    paused = [{"text": p.text, "audio": p.audio} for p in pause_corpus(limit)]
    return plain, paused


def premature(turn: Turn) -> bool:
    """The transcript came before the speaker had finished (during the pause, or before it)."""
    return turn.transcript_s is not None and turn.transcript_s < turn.speech_end_s


def run_turns(server: ServerProcess, items: list[dict[str, Any]], **options: Any) -> list[Turn]:
    return [
        asyncio.run(command(server.host, server.port, item["audio"], seed=i, **options)) for i, item in enumerate(items)
    ]


def summary(turns: list[Turn], items: list[dict[str, Any]], pauses: bool = False) -> dict[str, Any]:
    answered = [t for t in turns if t.transcript_s is not None]
    after = [t.after_stop_ms for t in answered if t.after_stop_ms is not None]
    return {
        "n": len(turns),
        "median_from_speech_end_ms": round(statistics.median(t.from_speech_end_ms for t in answered))
        if answered
        else None,
        "median_after_audio_stop_ms": round(statistics.median(after)) if after else None,
        "before_audio_stop": sum(t.before_stop for t in answered),
        "exact": sum(normalize(t.text or "") == normalize(i["text"]) for t, i in zip(turns, items, strict=True)),
        **({"premature": sum(premature(t) for t in turns)} if pauses else {}),
    }


def equality(items: list[dict[str, Any]], paused: bool, folder: Path) -> dict[str, Any]:
    """The transcript with the early final pass against the one without it, from two servers, each command
    followed by Home Assistant's 0.7 s of a room's noise, streamed at 4x real time."""
    servers = [
        start_server(Path("demo"), folder / f"equality-{i}.log", *flags)
        for i, flags in enumerate(([], ["--no-speculate"]))
    ]
    same, differences = 0, []
    try:
        for index, item in enumerate(items):
            audio = as_speech(
                np.concatenate([room_noise(LEAD_SECONDS, index + 1000), item["audio"], room_noise(0.7, index)])
            )
            early, late = (asyncio.run(stream(s.host, s.port, audio, language="en", speed=4.0)).text for s in servers)
            if early == late:
                same += 1
            else:
                differences.append({"text": item["text"], "early": early, "audio_stop": late})
    finally:
        for server in servers:
            server.stop()
    return {"corpus": "paused" if paused else "held-out", "n": len(items), "same": same, "differences": differences}


def demo_main(args: argparse.Namespace) -> dict[str, Any]:
    all_plain, all_paused = corpus(max(args.equality_limit, args.limit, args.endpoint_limit or 0))
    results: dict[str, Any] = {}
    if not args.endpoint_only:
        results["equality"] = [equality(all_plain[: args.equality_limit], False, args.out)]
        results["equality"].append(equality(all_paused[: args.equality_limit], True, args.out))
    for row in results.get("equality", []):
        print(f"early final pass = the one at audio-stop: {row['same']} of {row['n']} ({row['corpus']})", flush=True)
        for difference in row["differences"]:
            print(f"  {difference}", flush=True)
    plain, paused = all_plain[: args.limit], all_paused[: args.limit]
    folder = args.out
    rows: list[dict[str, Any]] = []
    servers = {
        "today (no early final pass)": ["--no-speculate"],
        "early final pass": [],
    }
    for label, flags in ({} if args.endpoint_only else servers).items():
        server = start_server(Path("demo"), folder / f"endpoint-{len(rows)}.log", *flags)
        try:
            for silence in HA_SETTINGS:
                row = {"server": label, "ends the turn": f"Home Assistant, {silence:g} s"}
                row.update(summary(run_turns(server, plain, silence_seconds=silence), plain))
                paused_turns = run_turns(server, paused, silence_seconds=silence)
                row["paused"] = summary(paused_turns, paused, pauses=True)
                rows.append(row)
                print(json.dumps(row), flush=True)
        finally:
            server.stop()
    # More commands here: a premature end is rare, and each one counts against the 2% the default must meet.
    endpoint_limit = args.endpoint_limit or args.limit
    plain, paused = all_plain[:endpoint_limit], all_paused[:endpoint_limit]
    with contextlib.ExitStack() as stack:
        model, reading = (Path("demo"), []) if not args.home_commands else home_reading(stack, folder)
        for silences in args.endpoint_settings:
            log = folder / f"endpoint-{len(rows)}.log"
            rows.append(endpointing_row(model, log, silences, reading, plain, paused))
            rows[-1]["ends the turn"] += ", Home Assistant's commands for the home" if args.home_commands else ""
            print(json.dumps(rows[-1]), flush=True)
    results["turns"] = rows
    return results


def home_reading(stack: contextlib.ExitStack, folder: Path) -> tuple[Path, list[str]]:
    """The demo model as a real one is judged (its own folder without its grammar.json), and the flags of a server
    that reads the corpus's home from a stand-in Home Assistant: its turns end by Home Assistant's commands."""
    model = folder / "demo-without-grammar"
    shutil.rmtree(model, ignore_errors=True)
    shutil.copytree(DEMO_FOLDER, model, ignore=shutil.ignore_patterns(GRAMMAR_FILE, "__pycache__"))
    assistant = stack.enter_context(StandInHomeAssistant(stand_in(corpus_home())))
    token = folder / "ha-token"
    token.write_text(assistant.token)
    return model, ["--ha-url", assistant.url, "--ha-token-file", str(token), "--language", "en"]


def endpointing_row(
    model: Path,
    log: Path,
    silences: tuple[float, float],
    flags: list[str],
    plain: list[dict[str, Any]],
    paused: list[dict[str, Any]],
) -> dict[str, Any]:
    """The server ending the turns itself after these silences (once complete, while not)."""
    complete, incomplete = silences
    silence_flags = ["--endpoint-silence", str(complete), "--endpoint-max-silence", str(incomplete)]
    server = start_server(model, log, "--endpointing", *silence_flags, *flags)
    try:
        run_turns(server, plain[:1], silence_seconds=None)  # the first: a home read, and its commands loaded
        row = {"server": "endpointing", "ends the turn": f"the server, {complete:g} s / {incomplete:g} s"}
        row.update(summary(run_turns(server, plain, silence_seconds=None), plain))
        row["paused"] = summary(run_turns(server, paused, silence_seconds=None), paused, pauses=True)
        return row
    finally:
        server.stop()


def shape_main(args: argparse.Namespace) -> dict[str, Any]:
    """Home Assistant's 0.7 s on the 0.6B shape: today's behaviour against the early final pass, alternating."""
    from .compute import speech
    from .latency_shape import PRECISIONS, model_folder

    folder = model_folder()
    window = CATALOGUE[DEFAULT_MODEL].encoder_window_seconds
    audio = speech(3.0)
    rows = []
    for precision in args.precisions:
        quantize = PRECISIONS[precision]
        servers: dict[str, ServerProcess] = {}
        try:
            for label, flags in (("today", ["--no-speculate"]), ("early final pass", [])):
                servers[label] = start_server(
                    folder,
                    args.out / f"endpoint-0.6b-{precision}-{len(servers)}.log",
                    "--tokens-per-second",
                    str(TOKENS_PER_SECOND),
                    "--encoder-window",
                    f"{window:g}",
                    *quantize,
                    *flags,
                    timeout=900,
                    module="tools.scripted",
                )
            for server in servers.values():  # lazy initialisation, before timing
                asyncio.run(stream(server.host, server.port, as_speech(audio[:SAMPLE_RATE]), language="en"))
            turns: dict[str, list[Turn]] = {label: [] for label in servers}
            for repeat in range(args.repeats):
                for label, server in servers.items():
                    turns[label].append(asyncio.run(command(server.host, server.port, audio, seed=repeat)))
            for label, values in turns.items():
                after = [t.after_stop_ms for t in values if t.after_stop_ms is not None]
                row = {
                    "precision": precision,
                    "server": label,
                    "after_audio_stop_ms": [round(v) for v in after],
                    "median_after_audio_stop_ms": round(statistics.median(after)) if after else None,
                    "median_from_speech_end_ms": round(statistics.median(t.from_speech_end_ms for t in values)),
                }
                rows.append(row)
                print(json.dumps(row), flush=True)
        finally:
            for server in servers.values():
                server.stop()
    return {"shape": "0.6b", "rows": rows}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--limit", type=int, default=20, help="commands streamed in real time, per corpus")
    parser.add_argument("--equality-limit", type=int, default=100, help="commands for the early-pass equality")
    parser.add_argument("--shape", choices=("0.6b",), help="the 0.6B shape's compute instead of the demo model")
    parser.add_argument("--endpoint-limit", type=int, help="commands per corpus, endpointing rows (default: --limit)")
    parser.add_argument("--endpoint-only", action="store_true", help="only the server endpointing rows")
    parser.add_argument(
        "--home-commands",
        action="store_true",
        help="endpointing rows as a real model is judged: no grammar.json, the server reading the corpus's home from "
        "a stand-in Home Assistant and ending turns by Home Assistant's own commands",
    )
    parser.add_argument(
        "--endpoint-settings",
        nargs="+",
        type=lambda text: tuple(float(part) for part in text.split("/")),
        default=ENDPOINT_SETTINGS,
        metavar="COMPLETE/INCOMPLETE",
        help="server endpointing silences, e.g. 0.3/1.25 (default: %(default)s)",
    )
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--precisions", nargs="+", choices=("float32", "int8"), default=["float32", "int8"])
    parser.add_argument("--out", type=Path, default=Path("local/benchmark"))
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    began = time.time()
    results = shape_main(args) if args.shape else demo_main(args)
    results.update(date=time.strftime("%Y-%m-%d"), minutes=round((time.time() - began) / 60, 1))
    if args.shape:
        name = f"endpoint-{args.shape}.json"
    elif args.endpoint_only:
        name = "endpoint-server.json"
    else:
        name = "endpoint.json"
    (args.out / name).write_text(json.dumps(results, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
