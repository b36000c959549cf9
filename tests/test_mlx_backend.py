"""The mlx backend against a stand-in that follows mlx-qwen3-asr's source (``tools/standins``).

The stand-in hears a scripted timeline of text units in noise bursts; it
behaves as the library does where the backend depends on it (see its
docstring): ``result.text`` as the model wrote it, the forced aligner loaded
from the hub only when timestamps are asked for, loading by folder or hub name.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from tools import standins
from tools.client import assert_streaming_order
from tools.server_process import ServerProcess, free_port
from tools.speech import Speech
from wyoming_qwen3.backends.base import SessionOptions
from wyoming_qwen3.backends.mlx import availability
from wyoming_qwen3.backends.mlx.backend import MlxBackend, MlxSession
from wyoming_qwen3.model.format import SAMPLE_RATE

from .conftest import transcribe

standins.on_path()
import mlx_qwen3_asr  # noqa: E402  (the stand-in)

Timeline = mlx_qwen3_asr.Timeline
timeline_of = mlx_qwen3_asr.timeline_of
model_folder = mlx_qwen3_asr.write_model
spoken = mlx_qwen3_asr.spoken


@pytest.fixture
def on_a_mac(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Pretend to be Apple Silicon, with the stand-in importable as ``mlx_qwen3_asr``."""
    monkeypatch.setattr(availability, "is_apple_silicon", lambda: True)
    yield


def stream(session: MlxSession, audio: np.ndarray, chunk_seconds: float = 0.01) -> tuple[list[str], str]:
    """Feed 10 ms chunks as Home Assistant does; the non-empty deltas, and the final delta."""
    step = int(chunk_seconds * SAMPLE_RATE)
    deltas = [session.feed(audio[i : i + step]) for i in range(0, audio.shape[0], step)]
    return [d for d in deltas if d], session.finish().text


def run_stream(tmp_path: Path, units: list[str], language: str = "English", **session_options: float) -> tuple:
    timeline = timeline_of(units)
    asr = mlx_qwen3_asr.Session(str(model_folder(tmp_path / "model", timeline, language)))
    session = MlxSession(asr, SessionOptions(), **session_options)
    deltas, final = stream(session, spoken(timeline))
    return deltas, final, asr


def test_punctuation_and_digits_survive(tmp_path: Path) -> None:
    units = ["Set", " a", " timer", " for", " 2:30,", " twenty-one", " minutes", " (not", " 20).", " Thanks!"]
    deltas, final, asr = run_stream(tmp_path, units)
    assert "".join(deltas) + final == "Set a timer for 2:30, twenty-one minutes (not 20). Thanks!"
    assert len(deltas) >= 3  # streamed, not all at the end


@pytest.mark.parametrize(
    ("language", "text"),
    [("Chinese", "打开客厅的灯然后关掉卧室的空调"), ("Japanese", "リビングの電気をつけてください")],
)
def test_unspaced_languages_stream_without_inserted_spaces(tmp_path: Path, language: str, text: str) -> None:
    deltas, final, asr = run_stream(tmp_path, list(text), language)
    assert "".join(deltas) + final == text
    assert len("".join(deltas)) >= len(text) // 2  # at least half sent before audio-stop
    assert all(" " not in delta for delta in deltas)


def test_no_aligner_or_second_model_during_a_stream(tmp_path: Path) -> None:
    deltas, final, asr = run_stream(tmp_path, ["turn", " on", " the", " lights"])
    assert asr.calls and not any(options.get("return_timestamps") for _, options in asr.calls)


def test_the_stand_in_loads_the_aligner_when_timestamps_are_asked_for(tmp_path: Path) -> None:
    # Keeps the stand-in honest: the real library builds a ForcedAligner from the hub here.
    asr = mlx_qwen3_asr.Session(str(model_folder(tmp_path / "model", timeline_of(["hi"]))))
    with pytest.raises(OSError, match="ForcedAligner"):
        asr.transcribe(mlx_qwen3_asr.speech(timeline_of(["hi"]), 2.0), return_timestamps=True)


class Scripted:
    """Transcribes the buffer as each text in turn, as ``mlx_qwen3_asr.Session.transcribe`` returns it."""

    def __init__(self, texts: list[str], language: str = "English") -> None:
        self.texts, self.language, self.calls = texts, language, 0

    def transcribe(self, audio: np.ndarray, *, context: str = "", language: str | None = None):  # noqa: ANN201
        text = self.texts[min(self.calls, len(self.texts) - 1)]
        self.calls += 1
        return mlx_qwen3_asr.TranscriptionResult(text=text, language=self.language if text else "unknown")


def test_revisions_are_not_committed_until_two_hypotheses_agree() -> None:
    asr = Scripted(["turn of", "turn on the", "turn on the light", "turn on the lights.", "turn on the lights."])
    deltas, final = stream(MlxSession(asr, SessionOptions()), np.zeros(4 * SAMPLE_RATE, np.float32))
    assert deltas == ["turn", " on the"]  # "of" was revised; the last unit waits
    assert final == " lights."
    assert asr.calls == 4  # four steps of one second; finish reuses the last (no new audio)


def test_bytes_that_make_no_character_are_not_sent() -> None:
    """As the torch backend (``format.without_undecoded``): the model's U+FFFD never reaches the client."""
    asr = Scripted(["关掉地下室\ufffd\ufffd\ufffd暖气"] * 5, language="Chinese")
    deltas, final = stream(MlxSession(asr, SessionOptions()), np.zeros(4 * SAMPLE_RATE, np.float32))
    assert "".join(deltas) + final == "关掉地下室暖气"


def test_long_stream_is_cut_at_pauses_keeping_every_unit_once(tmp_path: Path) -> None:
    units = [f" w{i}" if i else "w0" for i in range(80)]  # 36 s of speech
    deltas, final, asr = run_stream(tmp_path, units, max_buffer_seconds=8.0)
    assert "".join(deltas) + final == "".join(units)
    lengths = [seconds for seconds, _ in asr.calls]
    assert max(lengths) <= 8.0 + 1.0  # bounded: the cap and one step
    # Cost: audio-seconds transcribed per second of audio, steps and cuts together.
    assert sum(lengths) / (timeline_of(units)[-1][2] + 0.5) < 8.0


def test_a_unit_across_the_cut_is_not_lost_or_doubled(tmp_path: Path) -> None:
    # Speech with no pause at all: the cut falls inside a unit.
    timeline = [(f" w{i}" if i else "w0", round(0.3 + i * 0.3, 3), round(0.6 + i * 0.3, 3)) for i in range(60)]
    asr = mlx_qwen3_asr.Session(str(model_folder(tmp_path / "model", timeline)))
    session = MlxSession(asr, SessionOptions(), max_buffer_seconds=6.0)
    deltas, final = stream(session, spoken(timeline))
    words = ("".join(deltas) + final).split()
    assert session.offset_seconds > 6
    assert len(words) == len(set(words))  # nothing doubled
    assert len(words) >= len(timeline) - 2  # at most a unit lost at each of the (two or three) cuts


def test_backend_reports_the_model_languages_and_detected_language(tmp_path: Path) -> None:
    timeline = timeline_of(list("打开灯"))
    asr = mlx_qwen3_asr.Session(str(model_folder(tmp_path / "model", timeline, "Chinese")))
    backend = MlxBackend("unused", asr=asr)
    assert backend.supported_languages == ["English", "Chinese", "Japanese"]
    session = backend.create_session(SessionOptions())
    session.feed(mlx_qwen3_asr.speech(timeline, 3.0))
    assert session.finish().language == "Chinese"


def test_loading_goes_through_the_library_on_the_inference_thread(tmp_path: Path, on_a_mac: None) -> None:
    folder = model_folder(tmp_path / "model", timeline_of(["hi"]))
    backend = MlxBackend(str(folder))
    asr = backend._asr  # noqa: SLF001
    assert asr.threads == {"inference"}  # loaded on the inference thread
    backend.executor.submit(backend.warm_up).result(timeout=30)  # the server warms up there too
    assert asr.calls and asr.threads == {"inference"}  # and used on it alone
    assert asr.dtype == "float16"
    backend.executor.shutdown()


def serve_args(model: str, tmp_path: Path) -> list[str]:
    return ["--backend", "mlx", "--model", model, "--uri", "tcp://127.0.0.1:0", "--download-dir", str(tmp_path)]


def on_a_pretend_mac(arguments: list[str], with_library: bool) -> tuple[list[str], dict[str, str]]:
    """The command and environment that start the server as a user would, the platform check patched.

    ``with_library``: the stand-in is importable as ``mlx_qwen3_asr``.
    """
    code = (
        "import sys; from wyoming_qwen3.backends.mlx import availability; "
        "availability.is_apple_silicon = lambda: True; "
        f"sys.argv = ['wyoming-qwen3'] + {arguments!r}; from wyoming_qwen3.__main__ import run; run()"
    )
    path = [str(standins.FOLDER)] if with_library else []
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([*path, str(Path.cwd())]), "HF_HUB_OFFLINE": "1"}
    return [sys.executable, "-c", code], env


def start_server(arguments: list[str], with_library: bool) -> subprocess.CompletedProcess[str]:
    """Run the server on a pretend Mac until it fails or serves (then the timeout stops it)."""
    command, env = on_a_pretend_mac(arguments, with_library)
    try:
        return subprocess.run(command, capture_output=True, text=True, timeout=60, env=env)
    except subprocess.TimeoutExpired as err:
        out = err.stderr.decode() if isinstance(err.stderr, bytes) else (err.stderr or "")
        return subprocess.CompletedProcess(err.cmd, -1, "", out)


def test_missing_library_is_reported_at_start(tmp_path: Path) -> None:
    result = start_server(serve_args(str(model_folder(tmp_path / "m", timeline_of(["hi"]))), tmp_path), False)
    assert result.returncode == 2, result.stderr
    assert "mlx-qwen3-asr cannot be imported" in result.stderr
    assert "pip install 'wyoming-qwen3[mlx]'" in result.stderr
    assert "Traceback" not in result.stderr


def test_missing_dependency_of_a_transcription_is_reported_at_start(tmp_path: Path) -> None:
    folder = model_folder(tmp_path / "m", timeline_of(["hi"]), failure="No module named 'nagisa'")
    result = start_server(serve_args(str(folder), tmp_path), True)
    assert result.returncode == 2, result.stderr
    assert "nagisa" in result.stderr and "warm-up" in result.stderr
    assert "Traceback" not in result.stderr


def test_a_quantized_checkpoint_serves_chinese_on_a_pretend_mac(tmp_path: Path) -> None:
    """The server as a Mac user runs it (a 4-bit catalogue model found in --data-dir), streamed in real time."""
    text = "打开客厅的灯然后关掉卧室的空调"
    timeline = timeline_of(list(text))
    model_folder(tmp_path / "moona3k--mlx-qwen3-asr-0.6b-4bit", timeline, "Chinese")
    port = free_port()
    arguments = ["--uri", f"tcp://127.0.0.1:{port}", "--backend", "mlx", "--model", "moona3k/mlx-qwen3-asr-0.6b-4bit"]
    command, env = on_a_pretend_mac([*arguments, "--data-dir", str(tmp_path)], with_library=True)
    log_path = tmp_path / "server.log"
    with log_path.open("wb") as log:
        process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=env)
    server = ServerProcess(process, "127.0.0.1", port, log_path)
    try:
        deadline = time.monotonic() + 60
        while "Ready" not in server.log():
            assert process.poll() is None and time.monotonic() < deadline, server.log()
            time.sleep(0.1)
        pcm = (spoken(timeline) * 32768).astype("<i2").tobytes()
        speech = Speech(SAMPLE_RATE, 2, 1, pcm)
        result = asyncio.run(transcribe(server, speech, chunk_seconds=0.1, pace=0.1))  # in real time
    finally:
        server.stop()
    assert_streaming_order(result)
    assert result.transcript.data["text"] == text
    assert len("".join(result.chunks[:-1])) >= len(text) // 2  # most of it streamed before audio-stop
    assert "moona3k/mlx-qwen3-asr-0.6b-4bit (mlx backend)" in server.log()


def test_an_mlx_checkpoint_is_refused_by_the_torch_backend(tmp_path: Path) -> None:
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "wyoming_qwen3",
            "--backend",
            "simulkv",
            "--model",
            "moona3k/mlx-qwen3-asr-0.6b-4bit",
            "--download-dir",
            str(tmp_path),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 2
    assert "--backend mlx" in result.stderr and "Traceback" not in result.stderr
    assert not any(tmp_path.iterdir())  # nothing downloaded


def test_choosing_mlx_off_a_mac_names_the_extra() -> None:
    if sys.platform == "darwin":
        pytest.skip("on a Mac the backend may be available")
    result = subprocess.run(
        [sys.executable, "-m", "wyoming_qwen3", "--backend", "mlx"], capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 2
    assert "pip install 'wyoming-qwen3[mlx]'" in result.stderr
    assert "Traceback" not in result.stderr


def describe_library(module: object) -> dict:
    """What the backend relies on: the parameters of Session() and Session.transcribe, the result's fields."""
    import dataclasses
    import inspect

    def parameters(function: object) -> list[list]:
        plain = (type(None), bool, int, float, str)
        return [
            [p.name, p.kind.name, p.default if isinstance(p.default, plain) else type(p.default).__name__]
            for p in inspect.signature(function).parameters.values()
            if p.name not in ("self", "dtype")  # dtype: an mlx.core.Dtype there, a name here
        ]

    session = module.Session
    result = module.TranscriptionResult
    return {
        "Session": parameters(session.__init__),
        "transcribe": parameters(session.transcribe),
        "TranscriptionResult": [f.name for f in dataclasses.fields(result)],
    }


def test_the_stand_in_has_the_real_librarys_signatures() -> None:
    """Run wherever mlx-qwen3-asr imports (a Mac with the mlx extra): the stand-in must match it."""
    code = (
        "import json, sys; sys.path.insert(0, '.'); import mlx_qwen3_asr\n"
        "from tests.test_mlx_backend import describe_library\n"
        "print(json.dumps(describe_library(mlx_qwen3_asr)))"
    )
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    real = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env=env)
    if "No module named 'mlx" in real.stderr:
        pytest.skip("mlx-qwen3-asr is not installed here (macOS arm64 only): the stand-in is checked against it there")
    assert real.returncode == 0, real.stderr
    assert describe_library(mlx_qwen3_asr) == json.loads(real.stdout.splitlines()[-1])
