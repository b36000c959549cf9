"""Finding alignment heads from speech with known word times."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from tools.alignment_heads import TimedWord as Word
from tools.alignment_heads import score_heads, synthesize
from wyoming_qwen3.backends.simulkv.backend import alignment_heads_path
from wyoming_qwen3.backends.simulkv.settings import AlignmentHeads
from wyoming_qwen3.model.catalogue import resolve_model


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
            "tools.alignment_heads",
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


@pytest.mark.parametrize("name", ["Qwen/Qwen3-ASR-0.6B", "Qwen/Qwen3-ASR-1.7B"])
def test_real_models_use_the_heads_measured_on_their_weights(name, tmp_path) -> None:
    # A downloaded copy of the -hf repo in a data folder, as the server finds it (config only: nothing is loaded).
    folder = tmp_path / (name.replace("/", "--") + "-hf")
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps({"model_type": "qwen3_asr"}))
    model = resolve_model(name, [tmp_path], tmp_path)
    path = alignment_heads_path(None, model)
    assert path == model.heads_file and path.parent.name == "heads"
    heads = AlignmentHeads.load(path)
    assert len(heads.heads) == 10 and all(0 <= layer < 28 and 0 <= head < 16 for layer, head in heads.heads)
    data = json.loads(path.read_text())
    assert data["model"] == name and "WhisperLiveKit" in data["source"]
    # The best 10 of the measured list, best first, each head once, with the scores measured for them.
    assert data["scores"] == sorted(data["scores"], reverse=True) and len(data["scores"]) == 10
    assert all(0.5 < score <= 1 for score in data["scores"])
    assert len({tuple(pair) for pair in data["alignment_heads_compact"]}) == 10
    # A heads file in the model folder, or one given, comes first.
    (folder / "alignment_heads.json").write_text(json.dumps({"alignment_heads_compact": [[0, 0]]}))
    assert alignment_heads_path(None, model) == folder / "alignment_heads.json"
    given = tmp_path / "given.json"
    assert alignment_heads_path(given, model) == given
