"""Silero in the server's detector process: the same probabilities as in this process, errors told, no orphan."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import numpy as np
import pytest

from tools.speech import speak
from wyoming_qwen3.server.stream.silero import CHUNK_SAMPLES, LocalDetector, VadProcess, VadProcessError


@pytest.fixture
def vad() -> Iterator[VadProcess]:
    process = VadProcess()
    yield process
    process.close()


def test_the_process_gives_the_probabilities_silero_gives_here(vad: VadProcess) -> None:
    audio = speak("turn on the kitchen light", "en-us", 165, 50)
    local, remote = LocalDetector(), vad.detector()
    # In pieces as a stream hears them, the last one not a whole chunk: the state carries over between calls.
    pieces = np.array_split(audio[: len(audio) // CHUNK_SAMPLES * CHUNK_SAMPLES], 7)
    cut = [piece[: len(piece) // CHUNK_SAMPLES * CHUNK_SAMPLES] for piece in pieces]
    expected = np.concatenate([local.probabilities(piece) for piece in cut])
    got = np.concatenate([remote.probabilities(piece) for piece in cut])
    assert len(got) == sum(len(piece) for piece in cut) // CHUNK_SAMPLES
    assert expected.max() > 0.5 > expected.min(), "speech and silence both heard"
    np.testing.assert_array_equal(got, expected)
    remote.reset()
    local.reset()
    np.testing.assert_array_equal(remote.probabilities(cut[0]), local.probabilities(cut[0]))


def test_detectors_keep_their_own_state(vad: VadProcess) -> None:
    audio = speak("switch off the fan", "en-us", 165, 50)[: 20 * CHUNK_SAMPLES]
    first, second = vad.detector(), vad.detector()
    alone = LocalDetector().probabilities(audio)
    np.testing.assert_array_equal(first.probabilities(audio[: 10 * CHUNK_SAMPLES]), alone[:10])
    np.testing.assert_array_equal(second.probabilities(audio), alone)  # not the first one's state
    np.testing.assert_array_equal(first.probabilities(audio[10 * CHUNK_SAMPLES :]), alone[10:])


def test_a_freed_detector_is_an_error_and_the_process_goes_on(vad: VadProcess) -> None:
    detector = vad.detector()
    detector.close()
    with pytest.raises(VadProcessError, match="KeyError"):
        detector.probabilities(np.zeros(CHUNK_SAMPLES, np.float32))
    assert len(vad.detector().probabilities(np.zeros(2 * CHUNK_SAMPLES, np.float32))) == 2


def test_closing_ends_the_process() -> None:
    vad = VadProcess()
    vad.detector()
    vad.close()
    assert vad._process.returncode == 0
    with pytest.raises(VadProcessError, match="closed"):
        vad.detector()


def test_a_process_that_dies_is_started_again_and_its_detectors_made_anew(vad: VadProcess) -> None:
    detector = vad.detector()
    audio = speak("open the garage door", "en-us", 165, 50)[: 12 * CHUNK_SAMPLES]
    vad._process.kill()
    vad._process.wait()
    np.testing.assert_array_equal(detector.probabilities(audio), LocalDetector().probabilities(audio))
    assert vad.generation == 2


def test_streams_asking_at_once_share_one_exchange_and_each_gets_its_own_answer(vad: VadProcess) -> None:
    texts = ["turn on the kitchen light", "switch off the fan", "set a timer for five minutes", "open the blinds"]
    audios = [speak(text, "en-us", 165, 50)[: 24 * CHUNK_SAMPLES] for text in texts]
    detectors = [vad.detector() for _ in texts]
    freed = vad.detector()
    freed.close()
    answers: dict[int, object] = {}

    def ask(index: int) -> None:
        try:
            answers[index] = detectors[index].probabilities(audios[index]) if index < len(texts) else None
            if index == len(texts):
                freed.probabilities(np.zeros(CHUNK_SAMPLES, np.float32))
        except VadProcessError as err:
            answers[index] = err

    # While one exchange holds the pipe, every other stream's request queues, and the next exchange carries
    # them all: replies must reach the stream that asked, errors only the stream whose request failed.
    with vad._lock:
        threads = [threading.Thread(target=ask, args=(index,)) for index in range(len(texts) + 1)]
        for thread in threads:
            thread.start()
        while len(vad._queue) < len(threads):
            time.sleep(0.001)
    for thread in threads:
        thread.join(timeout=10)
    for index, audio in enumerate(audios):
        np.testing.assert_array_equal(answers[index], LocalDetector().probabilities(audio))
    assert isinstance(answers[len(texts)], VadProcessError) and "KeyError" in str(answers[len(texts)])
