"""What the mlx backend transcribes per second of speech, counted with the mlx-qwen3-asr stand-in.

Off a Mac the real library cannot run, so the cost is counted in audio: the
seconds of audio handed to ``Session.transcribe`` (steps and buffer cuts
together) per second of speech, for utterances of 3 to 60 s of words spaced as
speech with pauses. An MLX transcription costs about in proportion to its audio
(plus a fixed decoder part), so this is the ratio that matters for a Mac.

Usage: script/benchmark mlx-cost [--seconds 3 10 30 60] [--buffer 15]
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

from tools import standins
from wyoming_qwen3.backends.base import SessionOptions
from wyoming_qwen3.backends.mlx.backend import MlxSession

standins.on_path()
import mlx_qwen3_asr  # noqa: E402  (the stand-in)

#: Words of 0.3 s with 0.15 s between them: 2.2 words per second.
WORD_SECONDS, GAP_SECONDS = 0.3, 0.15


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, nargs="+", default=[3, 10, 30, 60])
    parser.add_argument("--buffer", type=float, default=15.0, help="the backend's longest buffer (seconds)")
    args = parser.parse_args()
    for seconds in args.seconds:
        words = max(1, int((seconds - 0.5) / (WORD_SECONDS + GAP_SECONDS)))
        units = [f" w{i}" if i else "w0" for i in range(words)]
        timeline = mlx_qwen3_asr.timeline_of(units, unit_seconds=WORD_SECONDS, gap=GAP_SECONDS)
        with tempfile.TemporaryDirectory() as folder:
            asr = mlx_qwen3_asr.Session(str(mlx_qwen3_asr.write_model(Path(folder), timeline)))
        audio = mlx_qwen3_asr.speech(timeline, seconds)
        session = MlxSession(asr, SessionOptions(), max_buffer_seconds=args.buffer)
        sent = "".join(session.feed(audio[i : i + 160]) for i in range(0, audio.shape[0], 160))
        sent += session.finish().text
        lengths = [length for length, _ in asr.calls]
        assert sent == "".join(text for text, _, _ in timeline), "a word was lost or doubled"
        print(
            f"{seconds:4.0f} s of speech: {len(lengths)} transcriptions, longest {max(lengths):.1f} s; "
            f"{sum(lengths) / seconds:.1f} s of audio transcribed per second of speech"
        )


if __name__ == "__main__":
    main()
