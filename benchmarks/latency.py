"""Latency as Home Assistant sees it: real-time 10 ms chunks into the real server.

For every utterance: time from the first audio to the first transcript-chunk,
time from the last audio chunk to the final transcript, the real-time factor
(server CPU seconds per audio second), the server's peak memory and, where the
demo model is used, the word error rate. Then the same run through the
third-party client wyoming-bench (streaming and non-streaming), a peer run of
wyoming-faster-whisper where it can be installed offline with a packaged model,
and N = 1, 2, 4, 8 concurrent streaming clients, checked for lost or mixed-up
transcripts.

Usage: script/benchmark latency [--model demo] [--speed 1.0] [--border-seconds S] [--min-probability P] [--out DIR]
(writes DIR/latency.json and DIR/latency.png; default DIR: local/benchmark)
       script/benchmark latency --shape 0.6b ...   (the real model's compute, streaming against batch:
                                                    see benchmarks/latency_shape.py)
"""

from __future__ import annotations

import argparse
import asyncio
import json
import platform
import shutil
import statistics
import subprocess
import sys
import time
import wave
from dataclasses import asdict, dataclass
from pathlib import Path

from tools.client import Reply, stream
from tools.plots import pyplot
from tools.server_process import add_server_arguments, memory_kib, server_flags, start_server
from tools.speech import Speech, as_speech, speak
from tools.wer import wer
from wyoming_qwen3.model.catalogue import resolve_model


@dataclass
class Utterance:
    text: str
    voice: str
    audio: Speech

    @property
    def seconds(self) -> float:
        return self.audio.seconds


@dataclass
class Row:
    text: str
    seconds: float
    transcript: str
    first_chunk_s: float | None
    final_latency_s: float
    partial_before_end: bool
    #: Server CPU seconds while this utterance streamed (streams run one at a time here).
    cpu_s: float

    @property
    def real_time_factor(self) -> float:
        return self.cpu_s / self.seconds


def process_stats(pid: int) -> tuple[float, int]:
    """(CPU seconds, peak resident KiB) of a process, from /proc."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    ticks = int(fields[11]) + int(fields[12])
    return ticks / 100.0, memory_kib(pid, "VmHWM")


def corpus(model_path: Path, limit: int) -> list[Utterance]:
    heldout_file = model_path / "heldout.json"
    if heldout_file.is_file():
        items = json.loads(heldout_file.read_text())["utterances"][:limit]
    else:
        from tools.alignment_heads import SENTENCES

        items = [{"text": s, "voice": "en-us"} for s in SENTENCES[:limit]]
    out = []
    for item in items:
        samples = speak(item["text"], item["voice"], 165, 50)
        out.append(Utterance(item["text"], item["voice"], as_speech(samples)))
    return out


async def run_clients(port: int, utterances: list[Utterance], speed: float) -> list[Reply]:
    return list(
        await asyncio.gather(*(stream("127.0.0.1", port, u.audio, language="en", speed=speed) for u in utterances))
    )


def wyoming_bench(port: int, utterances: list[Utterance], folder: Path) -> str:
    """Run the third-party client wyoming-bench on the same corpus, or say why not."""
    executable = shutil.which("wyoming-bench") or str(Path(sys.executable).parent / "wyoming-bench")
    if not Path(executable).exists():
        return "skipped: wyoming-bench is not installed (pip install wyoming-bench)"
    corpus_dir = folder / "wyoming-bench-corpus"
    corpus_dir.mkdir(exist_ok=True)
    for index, u in enumerate(utterances):
        with wave.open(str(corpus_dir / f"u{index:03d}.wav"), "wb") as wav:
            wav.setnchannels(1)
            wav.setsampwidth(2)
            wav.setframerate(16000)
            wav.writeframes(u.audio.audio)
        (corpus_dir / f"u{index:03d}.txt").write_text(u.text + "\n")
    result = subprocess.run(
        [
            executable,
            "stt",
            f"127.0.0.1:{port}",
            "--corpus",
            str(corpus_dir),
            "--mode",
            "both",
            "--config",
            '{"language": "en"}',
        ],
        capture_output=True,
        text=True,
        timeout=1800,
    )
    return (result.stdout + result.stderr).strip()


def faster_whisper_peer() -> str:
    """The peer runs only with a model that comes from a package; none does offline."""
    try:
        import wyoming_faster_whisper  # noqa: F401
    except ImportError:
        return "skipped: wyoming-faster-whisper is not installed"
    return (
        "skipped: wyoming-faster-whisper needs a Whisper model from the Hugging Face hub, and no "
        "package ships one; this machine cannot download it"
    )


def plot(rows: list[Row], path: Path) -> str:
    plt = pyplot()
    if plt is None:
        return "skipped: matplotlib is not installed"
    figure, axis = plt.subplots(figsize=(7, 4))
    axis.scatter(
        [r.seconds for r in rows], [r.final_latency_s * 1000 for r in rows], label="end of audio -> transcript"
    )
    firsts = [(r.seconds, r.first_chunk_s * 1000) for r in rows if r.first_chunk_s is not None]
    if firsts:
        axis.scatter(*zip(*firsts, strict=True), marker="x", label="start of audio -> first partial")
    axis.set_xlabel("utterance length (s)")
    axis.set_ylabel("ms")
    axis.legend()
    axis.grid(alpha=0.3)
    figure.tight_layout()
    figure.savefig(path, dpi=120)
    return str(path)


def main() -> None:
    if "--shape" in sys.argv:  # the real model's compute: a mode of its own
        from .latency_shape import main as shape_main

        shape_main(sys.argv[1:])
        return
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="demo")
    parser.add_argument("--speed", type=float, default=1.0, help="x real time (default: 1.0, as HA sends)")
    parser.add_argument("--limit", type=int, default=40, help="utterances (default: 40)")
    parser.add_argument("--clients", type=int, nargs="+", default=[1, 2, 4, 8])
    add_server_arguments(parser)
    parser.add_argument("--out", type=Path, default=Path("local/benchmark"))
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)

    model = resolve_model(args.model, [], Path("."))
    utterances = corpus(model.path, args.limit)
    server = start_server(Path(args.model), args.out / "server.log", *server_flags(args))
    port = server.port
    try:
        asyncio.run(stream("127.0.0.1", port, utterances[0].audio, language="en", speed=10.0))  # warm-up
        rows: list[Row] = []
        for u in utterances:
            cpu_before, _ = process_stats(server.process.pid)
            r = asyncio.run(stream("127.0.0.1", port, u.audio, language="en", speed=args.speed))
            cpu_after, peak_kib = process_stats(server.process.pid)
            rows.append(
                Row(
                    u.text,
                    u.seconds,
                    r.text,
                    r.first_chunk_s,
                    r.final_latency_s,
                    r.partial_before_end,
                    round(cpu_after - cpu_before, 2),
                )
            )
        load = {}
        single = {r.text: r.transcript for r in rows}
        for clients in args.clients:
            group = utterances[:clients]
            results = asyncio.run(run_clients(port, group, args.speed))
            mismatched = sum(r.text != single[u.text] for u, r in zip(group, results, strict=True))
            load[clients] = {
                "median_final_latency_ms": round(statistics.median(r.final_latency_s for r in results) * 1000, 1),
                "max_final_latency_ms": round(max(r.final_latency_s for r in results) * 1000, 1),
                "transcripts_differing_from_single_client": mismatched,
            }
        bench_output = wyoming_bench(port, utterances, args.out)
    finally:
        server.stop()

    audio_seconds = sum(u.seconds for u in utterances)
    has_references = (model.path / "heldout.json").is_file()  # else the texts are alignment sentences
    longer = [r for r in rows if r.seconds > 2.0]
    summary = {
        "machine": f"{platform.processor() or platform.machine()}, {platform.system()}",
        "date": time.strftime("%Y-%m-%d"),
        "model": args.model,
        "border_seconds": args.border_seconds,
        "min_probability": args.min_probability,
        "utterances": len(rows),
        "median_first_chunk_ms": round(statistics.median(r.first_chunk_s for r in rows if r.first_chunk_s) * 1000, 1)
        if any(r.first_chunk_s for r in rows)
        else None,
        "median_final_latency_ms": round(statistics.median(r.final_latency_s for r in rows) * 1000, 1),
        "partials_before_end_on_utterances_over_2s": f"{sum(r.partial_before_end for r in longer)}/{len(longer)}",
        "server_cpu_seconds": round(sum(r.cpu_s for r in rows), 2),
        "real_time_factor_cpu": round(sum(r.cpu_s for r in rows) / audio_seconds, 3),
        "median_real_time_factor_cpu": round(statistics.median(r.real_time_factor for r in rows), 3),
        "server_peak_memory_mib": round(peak_kib / 1024, 1),
        "wer": round(wer([(r.text, r.transcript) for r in rows]), 4) if has_references else None,
        "load": load,
    }
    print(f"{'len s':>6} {'first chunk ms':>14} {'final ms':>9} {'cpu s':>6} {'RTF':>6}  transcript")
    for r in rows:
        first = f"{r.first_chunk_s * 1000:.0f}" if r.first_chunk_s is not None else "-"
        print(
            f"{r.seconds:6.2f} {first:>14} {r.final_latency_s * 1000:9.0f} {r.cpu_s:6.2f} {r.real_time_factor:6.3f}"
            f"  {r.transcript}"
        )
    print(json.dumps(summary, indent=1))
    print("wyoming-bench:\n" + bench_output)
    print("wyoming-faster-whisper: " + faster_whisper_peer())
    print("plot: " + plot(rows, args.out / "latency.png"))
    (args.out / "latency.json").write_text(
        json.dumps(
            {
                "summary": summary,
                "rows": [{**asdict(r), "real_time_factor": round(r.real_time_factor, 3)} for r in rows],
                "wyoming_bench": bench_output,
                "wyoming_faster_whisper": faster_whisper_peer(),
            },
            indent=1,
        )
        + "\n"
    )


if __name__ == "__main__":
    main()
