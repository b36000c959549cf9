"""Starting a real wyoming-qwen3 process on loopback, as the README runs it, for tests and benchmarks."""

from __future__ import annotations

import argparse
import os
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path


def memory_kib(pid: int | str, field: str = "VmRSS") -> int:
    """A memory figure of a process from ``/proc/PID/status`` (``VmRSS`` resident now, ``VmHWM`` its peak), in KiB;
    ``pid`` may be ``"self"``."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise RuntimeError(f"no {field} for process {pid}")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@dataclass
class ServerProcess:
    """A real wyoming-qwen3 process listening on loopback."""

    process: subprocess.Popen
    host: str
    port: int
    log_path: Path

    @property
    def uri(self) -> str:
        return f"tcp://{self.host}:{self.port}"

    def log(self, since: int = 0) -> str:
        """The server's log, from the ``log_mark`` given on."""
        return self.log_path.read_bytes()[since:].decode("utf-8", errors="replace")

    def log_mark(self) -> int:
        """Where the log ends now: a test reads only what its own requests logged."""
        return self.log_path.stat().st_size

    def stop(self) -> int:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        return self.process.returncode


#: Server options a benchmark passes on: the AlignAtt thresholds and the streaming settings.
SERVER_OPTIONS = {
    "border_seconds": "override the model's AlignAtt border",
    "min_probability": "override the model's least token probability",
    "step_seconds": "override the server's step",
    "encoder_window": "override the server's encoder window",
    "stream_window": "override the server's stream window",
}


def add_server_arguments(parser: argparse.ArgumentParser) -> None:
    """Flags that override the server's policy and streaming defaults."""
    for name, meaning in SERVER_OPTIONS.items():
        parser.add_argument("--" + name.replace("_", "-"), type=float, help=meaning)


def server_flags(args: argparse.Namespace) -> list[str]:
    """The server's flags for what add_server_arguments parsed."""
    flags: list[str] = []
    for name in SERVER_OPTIONS:
        value = getattr(args, name)
        if value is not None:
            flags += ["--" + name.replace("_", "-"), str(value)]
    return flags


def start_server(
    model: Path | str,
    log_path: Path,
    *extra: str,
    timeout: float = 120.0,
    module: str = "wyoming_qwen3",
    environment: dict[str, str] | None = None,
    cwd: Path | None = None,
) -> ServerProcess:
    """Start the server (``python -m module``, ``environment`` over this one's, in ``cwd``) and wait until it
    accepts connections."""
    port = free_port()
    command = [
        sys.executable,
        "-m",
        module,
        "--uri",
        f"tcp://127.0.0.1:{port}",
        "--model",
        str(model),
        "--device",
        "cpu",
        *extra,
    ]
    log_file = log_path.open("wb")
    env = {**os.environ, "PYTHONUNBUFFERED": "1", "HF_HUB_OFFLINE": "1", **(environment or {})}
    process = subprocess.Popen(command, stdout=log_file, stderr=subprocess.STDOUT, env=env, cwd=cwd)
    server = ServerProcess(process, "127.0.0.1", port, log_path)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"server exited with {process.returncode}:\n{server.log()}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return server
        except OSError:
            time.sleep(0.2)
    server.stop()
    raise RuntimeError(f"server did not start within {timeout} s:\n{server.log()}")
