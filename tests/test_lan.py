"""The README's headline command on a stand-in LAN, discovered and used from another host.

Two network namespaces made by the test and joined by a veth pair stand in for
a LAN with two hosts; no packet leaves them. The server runs in one exactly as
the README says (bind 0.0.0.0, ``--zeroconf``; only ``--model demo`` is added,
since the default model comes from the hub). In the other, the real zeroconf
browses for it and the wyoming client connects the moment it is discovered.
"""

from __future__ import annotations

import json
import os
import re
import select
import shlex
import signal
import subprocess
import sys
import time
import wave
from pathlib import Path

import numpy as np
import pytest

from tools import offline
from tools.speech import speak
from wyoming_qwen3.model.catalogue import resolve_model
from wyoming_qwen3.model.qwen import QwenAsrModel

from .conftest import SERVER_ADDRESS, Lan

ROOT = Path(__file__).resolve().parent.parent


def readme_run_arguments() -> list[str]:
    """The arguments of ``script/run`` in the README's set-up command (``script/setup && script/run ...``)."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    match = re.search(r"^script/setup && script/run (.+)$", readme, re.MULTILINE)
    assert match, "the README has no 'script/setup && script/run ...' command"
    return shlex.split(match.group(1))


def read_json_line(client: subprocess.Popen, what: str, server: subprocess.Popen, server_log: Path) -> dict:
    """The client's next line; fails at once if the server exits first, or after 180 s."""
    deadline = time.monotonic() + 180
    while not select.select([client.stdout], [], [], 1)[0]:
        if server.poll() is not None and what != "the withdrawal":
            pytest.fail(f"the server exited ({server.returncode}) before {what}:\n{server_log.read_text()}")
        if time.monotonic() > deadline:
            pytest.fail(f"no {what} from the client in 180 s; server log:\n{server_log.read_text()}")
    line = client.stdout.readline()
    assert line, f"the client ended before {what}: {client.stderr.read()}"
    return json.loads(line)


def test_readme_command_is_discovered_and_used_from_another_host(lan: Lan, tmp_path: Path) -> None:
    demo = resolve_model("demo", [], Path("."))
    utterance = json.loads((demo.path / "heldout.json").read_text())["utterances"][0]
    samples = speak(utterance["text"], utterance["voice"], 165, 50)
    wav_path = tmp_path / "command.wav"
    with wave.open(str(wav_path), "wb") as wav:
        wav.setnchannels(1)
        wav.setsampwidth(2)
        wav.setframerate(16000)
        wav.writeframes((np.clip(samples, -1, 1) * 32767).astype("<i2").tobytes())
    # Loaded as the README's server loads it (int8 on a CPU): float32's transcript may differ on a word.
    expected = offline.transcribe(QwenAsrModel.load(demo.path, quantize="auto"), samples, language="English").text

    arguments = readme_run_arguments()
    assert arguments[arguments.index("--uri") + 1].startswith("tcp://0.0.0.0:") and "--zeroconf" in arguments
    port = int(arguments[arguments.index("--uri") + 1].rsplit(":", 1)[1])
    env = {**os.environ, "PYTHONUNBUFFERED": "1", "HF_HUB_OFFLINE": "1"}
    # The browser starts first, so it sees the announcement the moment it goes out.
    client = subprocess.Popen(
        lan.command(lan.client, sys.executable, "-m", "tools.lan_client", str(wav_path), "en"),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        cwd=ROOT,
    )
    server_log = tmp_path / "server.log"
    with server_log.open("wb") as log:
        server = subprocess.Popen(
            lan.command(lan.server, str(ROOT / "script" / "run"), *arguments, "--model", "demo"),
            stdout=log,
            stderr=subprocess.STDOUT,
            env=env,
            cwd=ROOT,
        )
    try:
        assert read_json_line(client, "browsing", server, server_log) == {"browsing": True}
        report = read_json_line(client, "its report", server, server_log)
        log_text = server_log.read_text(errors="replace")
        assert "connect_error" not in report, f"{report}\n{log_text}"
        assert report["addresses"] == [SERVER_ADDRESS], report
        assert report["port"] == port
        assert report["types"] == ["info", "transcript-start", *report["types"][2:-2], "transcript", "transcript-stop"]
        assert set(report["types"][2:-2]) <= {"transcript-chunk"}
        assert report["transcript"] == " ".join(expected.split()) != ""
        assert log_text.index("Announced") < log_text.index("Ready"), log_text
        server.send_signal(signal.SIGTERM)
        server_exit = server.wait(timeout=30)
        assert read_json_line(client, "the withdrawal", server, server_log) == {"removed": True}
        assert client.wait(timeout=30) == 0
    finally:
        for process in (server, client):
            if process.poll() is None:
                process.kill()
                process.wait()
    log_text = server_log.read_text(errors="replace")
    assert server_exit == 0, log_text
    assert "Withdrew zeroconf announcement" in log_text
    assert "Traceback" not in log_text and "ERROR" not in log_text, log_text
