"""Streams batched on the one inference thread: each as if it ran alone, and none waits for another's longer work.

The scheduler is driven with stand-in forward passes; equality is shown on the
demo model (held-out commands of different lengths, streams starting at
different times) and on random weights of the real model's layout decoding on
a script, batched against alone, delta by delta.
"""

from __future__ import annotations

from collections.abc import Callable, Generator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tools.batching import FEED_SAMPLES, alone, batch_sizes, blocked, together
from tools.corpus import heldout_utterances
from tools.in_process import demo_backend
from tools.scripted import ScriptedBackend
from tools.speech import speak
from wyoming_qwen3.backends.inference import FINAL, STEP, InferenceExecutor
from wyoming_qwen3.backends.simulkv.backend import SimulKvBackend
from wyoming_qwen3.model.format import SAMPLE_RATE
from wyoming_qwen3.model.qwen import QwenAsrModel


class Passes:
    """A stand-in forward_batch: each request is (name, n), its result n + 1; the batches it saw."""

    def __init__(self) -> None:
        self.batches: list[list[str]] = []

    def __call__(self, requests: list[tuple[str, int]]) -> list[int]:
        self.batches.append([name for name, _ in requests])
        return [n + 1 for _, n in requests]


def counting(name: str, tokens: int, log: list[str]) -> Callable[[], Generator[Any, int, str]]:
    """A stepwise call that asks for ``tokens`` passes, each sent the last one's result."""

    def call() -> Generator[Any, int, str]:
        n = 0
        for _ in range(tokens):
            n = yield (name, n)
        log.append(name)
        return f"{name}:{n}"

    return call


def test_queued_stepwise_calls_run_as_one_batch_and_each_returns_when_its_own_tokens_end() -> None:
    passes = Passes()
    executor = InferenceExecutor(forward_batch=passes, max_batch=8)
    done: list[str] = []
    gate = blocked(executor)
    futures = [executor.submit_stepwise(STEP, counting(f"s{i}", tokens, done)) for i, tokens in enumerate((2, 5, 3))]
    gate.set()
    assert [f.result(timeout=5) for f in futures] == ["s0:2", "s1:5", "s2:3"]
    executor.shutdown()
    assert passes.batches == [["s0", "s1", "s2"], ["s0", "s1", "s2"], ["s1", "s2"], ["s1"], ["s1"]]
    assert done == ["s0", "s2", "s1"]  # each settled when its own generator ended, not when the batch did


def test_a_final_pass_joins_the_batch_under_way_at_its_next_token() -> None:
    passes = Passes()
    executor = InferenceExecutor(forward_batch=passes, max_batch=8)
    final: list[Any] = []

    def long_step() -> Generator[Any, int, str]:
        n = 0
        for index in range(40):
            if index == 2:
                final.append(executor.submit_stepwise(FINAL, counting("final", 2, [])))
            n = yield ("step", n)
        return "step"

    step = executor.submit_stepwise(STEP, long_step)
    assert step.result(timeout=5) == "step"
    assert final[0].result(timeout=5) == "final:2"
    executor.shutdown()
    assert passes.batches[1:5] == [["step"], ["step", "final"], ["step", "final"], ["step"]]


def test_max_batch_one_runs_stepwise_calls_one_after_another() -> None:
    passes = Passes()
    executor = InferenceExecutor(forward_batch=passes, max_batch=1)
    gate = blocked(executor)
    futures = [executor.submit_stepwise(STEP, counting(f"s{i}", 2, [])) for i in range(2)]
    gate.set()
    assert [f.result(timeout=5) for f in futures] == ["s0:2", "s1:2"]
    executor.shutdown()
    assert passes.batches == [["s0"], ["s0"], ["s1"], ["s1"]]


def test_a_call_that_fails_leaves_the_others_in_its_batch_running() -> None:
    executor = InferenceExecutor(forward_batch=Passes(), max_batch=8)

    def failing() -> Generator[Any, int, str]:
        yield ("bad", 0)
        raise ValueError("this stream's own error")

    gate = blocked(executor)
    bad = executor.submit_stepwise(STEP, failing)
    good = executor.submit_stepwise(STEP, counting("good", 3, []))
    gate.set()
    with pytest.raises(ValueError, match="own error"):
        bad.result(timeout=5)
    assert good.result(timeout=5) == "good:3"
    executor.shutdown()


def test_a_pass_that_fails_fails_every_call_in_it_and_the_thread_goes_on() -> None:
    def out_of_memory(requests: list[Any]) -> list[Any]:
        raise MemoryError("the batch")

    executor = InferenceExecutor(forward_batch=out_of_memory, max_batch=8)
    gate = blocked(executor)
    futures = [executor.submit_stepwise(STEP, counting(f"s{i}", 2, [])) for i in range(2)]
    gate.set()
    for future in futures:
        with pytest.raises(MemoryError):
            future.result(timeout=5)
    assert executor.submit(lambda: "next").result(timeout=5) == "next"
    executor.shutdown()


# -- equality on models ------------------------------------------------------


def assert_batched_equals_alone(backend: SimulKvBackend, audios: list[np.ndarray]) -> None:
    starts = [index % 3 for index in range(len(audios))]
    expected = [alone(backend, audio) for audio in audios]
    batches = batch_sizes(backend)
    got = together(backend, audios, starts)
    assert max(batches) >= 2, "the streams' token passes were not batched"
    assert got == expected


@pytest.fixture(scope="module")
def demo() -> Generator[SimulKvBackend, None, None]:
    backend = demo_backend("none")  # float32: int8's activation scale spans the batch (see docs/performance.md)
    yield backend
    backend.executor.shutdown()


def test_demo_model_streams_batched_send_the_deltas_they_send_alone(demo: SimulKvBackend) -> None:
    commands = heldout_utterances(6, seed=4)
    audios = [speak(text, voice, 165, 50) for text, voice in commands]
    assert len({len(a) // FEED_SAMPLES for a in audios}) > 1, "streams of different lengths"
    assert_batched_equals_alone(demo, audios)


def test_scripted_random_weights_batched_decode_the_tokens_they_decode_alone(tiny_model: Path) -> None:
    backend = ScriptedBackend(QwenAsrModel.load(tiny_model, "cpu"))
    backend.tokens_per_second = 6
    rng = np.random.default_rng(3)
    audios = [rng.normal(0, 0.1, int(seconds * SAMPLE_RATE)).astype(np.float32) for seconds in (1.2, 2.5, 1.8, 3.1)]
    try:
        assert_batched_equals_alone(backend, audios)
    finally:
        backend.executor.shutdown()


def test_a_queued_step_promoted_while_the_batch_runs_is_run_once() -> None:
    """audio-stop promotes the stream's queued step: the copy runs now, and the original, met later in the queue,
    is not run again (it would add its audio twice)."""
    passes = Passes()
    executor = InferenceExecutor(forward_batch=passes, max_batch=8)
    runs: list[str] = []

    def step() -> Generator[Any, int, str]:
        runs.append("step")
        yield ("step", 0)
        return "stepped"

    gate = blocked(executor)
    executor.submit_stepwise(STEP, counting("other", 3, []))
    queued = executor.submit_stepwise(STEP, step)
    executor.promote(queued)
    gate.set()
    assert queued.result(timeout=5) == "stepped"
    executor.submit(lambda: None).result(timeout=5)
    executor.shutdown()
    assert runs == ["step"]
    assert passes.batches[0] == ["step"]  # the promoted copy first, as a final pass: no step joins it
