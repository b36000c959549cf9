"""Finding alignment heads from speech with known word times."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np

from wyoming_qwen3.alignment import AlignmentHeads
from wyoming_qwen3.alignment_heads import score_heads, synthesize
from wyoming_qwen3.backend import TimedWord as Word


def test_a_head_that_tracks_the_words_outscores_one_that_does_not() -> None:
    words = [Word("turn", 0.1, 0.5), Word("on", 0.6, 0.8), Word("lights", 0.9, 1.5)]
    owners = [0, 0, 1, 2, 2]
    tracking = np.array([0.2, 0.4, 0.7, 1.0, 1.4])
    lagging = np.array([1.5, 1.5, 0.1, 0.1, 0.1])
    times = np.stack([tracking, lagging], axis=1)[:, None, :]  # [tokens, 1 layer, 2 heads]
    scores = score_heads(times, owners, words)
    assert scores.shape == (1, 2)
    assert scores[0, 0] == 1.0
    assert scores[0, 1] < 0.5


def test_synthesized_words_have_their_times() -> None:
    utterance = synthesize("turn on the lights")
    assert [w.text for w in utterance.words] == ["turn", "on", "the", "lights"]
    assert all(a.end < b.start for a, b in zip(utterance.words, utterance.words[1:], strict=False))
    assert utterance.words[-1].end <= utterance.audio.shape[0] / 16000
    inside = utterance.audio[int(utterance.words[0].start * 16000) : int(utterance.words[0].end * 16000)]
    gap = utterance.audio[int(utterance.words[0].end * 16000) + 10 : int(utterance.words[1].start * 16000) - 10]
    assert np.abs(inside).max() > 0.1 and np.abs(gap).max() == 0.0


def test_script_writes_a_heads_file_the_server_can_load(tiny_model: Path, tmp_path: Path) -> None:
    out = tmp_path / "heads.json"
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "wyoming_qwen3.alignment_heads",
            str(tiny_model),
            "--out",
            str(out),
            "--top",
            "3",
            "--sentences",
            "1",
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr
    heads = AlignmentHeads.load(out)
    assert len(heads.heads) == 3
    assert all(0 <= layer < 2 and 0 <= head < 4 for layer, head in heads.heads)
    assert json.loads(result.stdout)["heads"] == [list(h) for h in heads.heads]
