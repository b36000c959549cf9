"""The mlx backend's committer, trimming and time offsets, against a stand-in.

``FakeMlxSession`` has the signature and result shape of
``mlx_qwen3_asr.Session.transcribe`` (text, language, segments with start/end).
The tests' audio is a ramp whose samples encode their own time, so the stand-in
knows where in the utterance the (trimmed) buffer starts, as a real model would
from the sound itself.
"""

from __future__ import annotations

import subprocess
import sys
from dataclasses import dataclass, field

import numpy as np
import pytest

from wyoming_qwen3.backend import SessionOptions
from wyoming_qwen3.mlx_backend import MlxBackend, MlxSession, timed_words
from wyoming_qwen3.qwen import SAMPLE_RATE

RAMP_SCALE = 1000.0  # sample value = seconds / RAMP_SCALE


def ramp(start: float, seconds: float) -> np.ndarray:
    return ((start + np.arange(int(seconds * SAMPLE_RATE)) / SAMPLE_RATE) / RAMP_SCALE).astype(np.float32)


@dataclass
class Result:
    text: str
    language: str
    segments: list[dict] | None = None


@dataclass
class FakeMlxSession:
    """Hears the words of a timeline that lie inside the buffer; a word cut by the buffer end is heard half-said."""

    timeline: list[tuple[str, float, float]]
    echo_before_cut: bool = False
    calls: list[tuple[float, float]] = field(default_factory=list)
    model_info: dict = field(default_factory=lambda: {"support_languages": ["English", "German"]})

    def transcribe(self, audio, *, context="", language=None, return_timestamps=False):  # noqa: ANN001, ANN201
        assert return_timestamps
        start = float(audio[0]) * RAMP_SCALE if len(audio) else 0.0
        end = start + len(audio) / SAMPLE_RATE
        self.calls.append((start, end))
        segments = []
        for word, w_start, w_end in self.timeline:
            if w_start >= start and w_start < end:
                text = word if w_end <= end else word[: max(1, len(word) // 2)]
                segments.append({"text": text, "start": w_start - start, "end": min(w_end, end) - start})
            elif self.echo_before_cut and w_end <= start and start - w_end < 0.3:
                segments.append({"text": word, "start": 0.0, "end": 0.05})  # heard again at the cut
        return Result(text=" ".join(s["text"] for s in segments), language="English", segments=segments)


@dataclass
class ScriptedMlxSession:
    """Returns scripted hypotheses in turn, whatever the audio."""

    hypotheses: list[str]
    calls: int = 0

    def transcribe(self, audio, *, context="", language=None, return_timestamps=False):  # noqa: ANN001, ANN201
        text = self.hypotheses[min(self.calls, len(self.hypotheses) - 1)]
        self.calls += 1
        duration = len(audio) / SAMPLE_RATE
        return Result(
            text=text, language="English", segments=[{"text": text, "start": 0.0, "end": duration}] if text else []
        )


def stream(session: MlxSession, audio: np.ndarray, chunk_seconds: float = 0.1) -> tuple[list[list[str]], list[str]]:
    step = int(chunk_seconds * SAMPLE_RATE)
    deltas = [session.feed(audio[i : i + step]) for i in range(0, audio.shape[0], step)]
    final = session.finish().text
    assert "".join(deltas) + final == " ".join("".join(deltas + [final]).split())  # append-only, one space apart
    return [d.split() for d in deltas if d], final.split()


def test_revisions_are_not_committed_until_two_hypotheses_agree() -> None:
    asr = ScriptedMlxSession(
        ["turn of", "turn on the", "turn on the light", "turn on the lights", "turn on the lights"]
    )
    session = MlxSession(asr, SessionOptions())
    commits, final = stream(session, ramp(0, 4.0))
    assert commits == [["turn"], ["on", "the"]]
    assert final == ["lights"]
    assert asr.calls == 4  # four steps of one second; finish reuses the last (no new audio)


def test_empty_results_commit_nothing() -> None:
    asr = ScriptedMlxSession(["", "", "hello there", "", "hello"])
    session = MlxSession(asr, SessionOptions())
    commits, final = stream(session, ramp(0, 4.0))
    assert commits == []
    assert final == []  # the last hypothesis heard nothing
    session = MlxSession(ScriptedMlxSession(["", "", "hello"]), SessionOptions())
    commits, final = stream(session, ramp(0, 3.0))
    assert (commits, final) == ([], ["hello"])


def test_at_most_one_inference_per_second_of_new_audio() -> None:
    asr = FakeMlxSession(timeline=[])
    session = MlxSession(asr, SessionOptions())
    stream(session, ramp(0, 10.0), chunk_seconds=0.01)
    assert len(asr.calls) == 10 + 0  # the final pass is skipped: nothing new since the last step


def make_timeline(words: int, spacing: float = 0.5) -> list[tuple[str, float, float]]:
    return [(f"w{i}", 0.2 + i * spacing, 0.2 + i * spacing + 0.35) for i in range(words)]


@pytest.mark.parametrize("echo", [False, True])
def test_trimmed_buffer_keeps_every_word_once_with_utterance_times(echo: bool) -> None:
    timeline = make_timeline(70)  # 35 s of speech
    asr = FakeMlxSession(timeline=timeline, echo_before_cut=echo)
    session = MlxSession(asr, SessionOptions(), max_buffer_seconds=6.0)
    commits, final = stream(session, ramp(0, 36.0), chunk_seconds=0.5)

    assert [w for c in commits for w in c] + final == [w for w, _, _ in timeline]
    assert session.offset_seconds > 20  # the buffer really was trimmed
    assert max(end - start for start, end in asr.calls) <= 6.0 + 1.0  # bounded: max + one step
    times = {w.text: (w.start, w.end) for w in session.committed_words}
    for word, start, end in timeline:
        assert times[word] == pytest.approx((start, end), abs=1e-3), word


def test_silence_longer_than_the_buffer_is_dropped_without_losing_words() -> None:
    timeline = [("hello", 0.2, 0.6), ("again", 20.2, 20.6)]
    asr = FakeMlxSession(timeline=timeline)
    session = MlxSession(asr, SessionOptions(), max_buffer_seconds=4.0)
    commits, final = stream(session, ramp(0, 22.0), chunk_seconds=0.5)
    assert [w for c in commits for w in c] + final == ["hello", "again"]
    assert max(end - start for start, end in asr.calls) <= 5.0


def test_segments_of_several_words_share_their_time() -> None:
    result = Result(text="turn on", language="English", segments=[{"text": "turn on", "start": 1.0, "end": 2.0}])
    words = timed_words(result, offset=10.0, duration=3.0)
    assert [(w.text, w.start, w.end) for w in words] == [("turn", 11.0, 11.5), ("on", 11.5, 12.0)]


def test_backend_reports_the_model_languages() -> None:
    backend = MlxBackend("unused", asr=FakeMlxSession(timeline=[]))
    assert backend.supported_languages == ["English", "German"]
    session = backend.create_session(SessionOptions(language="German"))
    session.feed(ramp(0, 1.0))
    assert session.finish().language == "English"  # what the model reported


def test_choosing_mlx_off_a_mac_names_the_extra() -> None:
    if sys.platform == "darwin":
        pytest.skip("on a Mac the backend may be available")
    result = subprocess.run(
        [sys.executable, "-m", "wyoming_qwen3", "--backend", "mlx"], capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 2
    assert "pip install 'wyoming-qwen3[mlx]'" in result.stderr
    assert "Traceback" not in result.stderr
