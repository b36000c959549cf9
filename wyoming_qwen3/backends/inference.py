"""The one inference thread, on which final passes go ahead of streaming steps, and early passes give way to both.

Every model call of a backend runs on one thread: torch already spreads one
forward pass over all cores (or the GPU), so two at once only slow both down.
Calls wait in a priority queue rather than in arrival order: once a user has
stopped speaking, the final pass of their utterance is what they are waiting
for, so it runs before any other stream's non-final step that is queued (one
that has started runs to its end).

Streams share the thread by batching. A call submitted with ``submit_stepwise``
is a generator that yields each token's forward pass instead of running it;
the thread drives every such call queued (up to ``max_batch``) together, and
runs their token passes as one batched forward (the backend's
``forward_batch``). A call joins the batch at its next token, and its future
completes as soon as its own generator returns, so a stream waits for no
other stream's longer work; on the inference thread, what each stream does
between its tokens (encoding, prefill, the policy) still runs one at a time.

An early final pass (one run in a pause, on the chance that the speaker has
finished) is wanted by nobody yet: it runs alone, only when nothing else waits,
and it yields. A call submitted with ``EARLY`` priority may ask ``should_yield``
between tokens and raise ``Preempted``: it is run again, from the start, once
the more urgent work is done; if its caller cancelled it meanwhile (speech
resumed, the client left) it is dropped there. ``promote`` makes it urgent
once someone waits for it (audio-stop came).
"""

from __future__ import annotations

import heapq
import itertools
import threading
from collections.abc import Callable, Generator
from concurrent.futures import Executor, Future, InvalidStateError
from dataclasses import dataclass, field
from typing import Any, TypeVar

T = TypeVar("T")

#: Priorities: lower runs first.
FINAL, STEP, EARLY = 0, 1, 2

#: A call that yields the forward passes it needs (requests), is sent each one's result, and returns its own.
Stepwise = Generator[Any, Any, T]
#: Runs several streams' forward requests as one pass: one result per request, in order.
ForwardBatch = Callable[[list[Any]], list[Any]]


class Preempted(Exception):
    """Raised by an ``EARLY`` call that gave way (see ``InferenceExecutor.should_yield``); it left no trace."""


def _stop() -> None:
    """Marks the end of the queue."""


@dataclass(order=True)
class _Work:
    priority: int
    order: int
    future: Future[Any] = field(compare=False)
    call: Callable[[], Any] = field(compare=False)
    #: Whether ``call`` returns a ``Stepwise`` generator, to be driven in a batch.
    stepwise: bool = field(default=False, compare=False)


@dataclass
class _Driven:
    """A stepwise call in the batch: its generator and the forward request it waits on."""

    work: _Work
    steps: Stepwise[Any]
    request: Any


class InferenceExecutor(Executor):
    """One worker thread taking the most urgent queued call first (FIFO within a priority)."""

    def __init__(
        self, thread_name: str = "inference", forward_batch: ForwardBatch | None = None, max_batch: int = 1
    ) -> None:
        self._heap: list[_Work] = []
        self._order = itertools.count()
        self._shutdown = False
        self._lock = threading.Lock()
        self._ready = threading.Condition(self._lock)
        #: The unbatched call running now (read by should_yield on the worker thread).
        self._running: _Work | None = None
        #: How the stepwise calls' requests run: together where the backend can, else one by one.
        self._forward_batch = forward_batch
        self._max_batch = max(1, max_batch) if forward_batch is not None else 1
        self._thread = threading.Thread(target=self._run, name=thread_name, daemon=True)
        self._thread.start()

    def submit(self, fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> Future[T]:
        """Queue a call at ``STEP`` priority (what ``loop.run_in_executor`` uses)."""
        return self.submit_with_priority(STEP, fn, *args, **kwargs)

    def submit_with_priority(self, priority: int, fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> Future[T]:
        future: Future[T] = Future()
        self._put(_Work(priority, next(self._order), future, lambda: fn(*args, **kwargs)))
        return future

    def submit_stepwise(self, priority: int, fn: Callable[..., Stepwise[T]], /, *args: Any) -> Future[T]:
        """Queue a call that yields its forward requests (``FINAL`` or ``STEP``), to be batched with others."""
        if priority >= EARLY:
            raise ValueError("an early call runs alone: submit it with submit_with_priority")
        future: Future[T] = Future()
        self._put(_Work(priority, next(self._order), future, lambda: fn(*args), stepwise=True))
        return future

    def _put(self, work: _Work) -> None:
        with self._ready:
            if self._shutdown:
                raise RuntimeError("cannot schedule new inference after shutdown")
            heapq.heappush(self._heap, work)
            self._ready.notify()

    def promote(self, future: Future[Any], priority: int = FINAL) -> None:
        """Someone now waits for this call: queue it again at ``priority`` (the copy that runs first serves both).

        Where it is running already, it no longer yields to work of ``priority`` or below.
        """
        with self._lock:
            running = self._running
            if running is not None and running.future is future:
                running.priority = min(running.priority, priority)
                return
            queued = next((w for w in self._heap if w.future is future), None)
        if queued is not None and not future.done():
            self._put(_Work(priority, next(self._order), future, queued.call, queued.stepwise))

    def is_running(self, future: Future[Any]) -> bool:
        """Whether the call of ``future`` runs alone now."""
        running = self._running
        return running is not None and running.future is future

    def should_yield(self) -> bool:
        """For the ``EARLY`` call running now (on the inference thread): whether to stop and raise ``Preempted``:
        its caller cancelled it, or more urgent work is queued."""
        running = self._running
        if running is None or running.priority < EARLY:
            return False
        if running.future.cancelled():
            return True
        with self._lock:
            return any(w.priority < running.priority and not w.future.done() for w in self._heap)

    def _next(self) -> _Work:
        """The most urgent queued call, waiting for one."""
        with self._ready:
            while not self._heap:
                self._ready.wait()
            return heapq.heappop(self._heap)

    def _take_joinable(self, below: int) -> _Work | None:
        """The most urgent queued call, if it is a stepwise one of a priority under ``below``."""
        with self._lock:
            while self._heap and _served(self._heap[0]):
                heapq.heappop(self._heap)
            if self._heap and self._heap[0].stepwise and self._heap[0].priority < below:
                return heapq.heappop(self._heap)
            return None

    def _run(self) -> None:
        while self._run_next():
            pass

    def _run_next(self) -> bool:
        """Run the most urgent queued call, waiting for one; False at shutdown.

        Nothing of a call outlives this frame: a loop variable kept the last one, and with it its session and,
        through its future's callbacks, its utterance, until the next call came (tests/test_memory.py).
        """
        work = self._next()
        if work.call is _stop:
            return False
        if not _served(work):
            if work.stepwise:
                self._run_batch(work)
            else:
                self._run_alone(work)
        return True

    def _run_alone(self, work: _Work) -> None:
        # An early call stays cancellable while it runs (its caller's cancel is how it learns to stop).
        if work.priority < EARLY and not work.future.set_running_or_notify_cancel():
            return
        self._running = work
        try:
            result = work.call()
        except Preempted:
            if not work.future.done():
                try:
                    self._put(_Work(work.priority, work.order, work.future, work.call))  # ahead of later early calls
                except RuntimeError:  # shut down meanwhile
                    work.future.cancel()
            return
        except BaseException as err:  # handed to whoever awaits the future
            self._settle(work.future, exception=err)
        else:
            self._settle(work.future, result=result)
        finally:
            self._running = None

    def _run_batch(self, first: _Work) -> None:
        """Drive ``first`` and every stepwise call that queues meanwhile, their token passes batched."""
        batch: list[_Driven] = []
        self._start(first, batch)
        while batch:
            # While a final pass is in the batch, only final passes join: a step joining runs its encoder and
            # prefill between two tokens of every call in the batch, and someone waits for the final pass.
            while len(batch) < self._max_batch and (joining := self._take_joinable(self._joinable_below(batch))):
                self._start(joining, batch)
            if not batch:
                break
            try:
                results = self._forward([driven.request for driven in batch])
            except BaseException as err:  # the pass failed for every call in it (out of memory, say)
                for driven in batch:
                    driven.steps.close()
                    self._settle(driven.work.future, exception=err)
                return
            advanced: list[_Driven] = []
            for driven, result in zip(batch, results, strict=True):
                if self._advance(driven, result):
                    advanced.append(driven)
            batch = advanced

    @staticmethod
    def _joinable_below(batch: list[_Driven]) -> int:
        """The priority a call must be under to join ``batch``."""
        return STEP if any(driven.work.priority == FINAL for driven in batch) else EARLY

    def _forward(self, requests: list[Any]) -> list[Any]:
        if self._forward_batch is None:
            raise TypeError("a stepwise call needs an executor made with forward_batch")
        return self._forward_batch(requests)

    def _start(self, work: _Work, batch: list[_Driven]) -> None:
        """Start a stepwise call: it runs up to its first forward request, and joins ``batch`` there."""
        if not work.future.set_running_or_notify_cancel():
            return
        try:
            steps = work.call()
        except BaseException as err:
            self._settle(work.future, exception=err)
            return
        driven = _Driven(work, steps, None)
        if self._advance(driven, None):
            batch.append(driven)

    def _advance(self, driven: _Driven, result: Any) -> bool:
        """Send a call its last request's result (None at its start) and run it to its next request (True), or
        to its end, settling its future (False)."""
        try:
            driven.request = driven.steps.send(result)
        except StopIteration as end:
            self._settle(driven.work.future, result=end.value)
            return False
        except BaseException as err:
            self._settle(driven.work.future, exception=err)
            return False
        return True

    @staticmethod
    def _settle(future: Future[Any], result: Any = None, exception: BaseException | None = None) -> None:
        """Complete the future, unless its caller cancelled it (an early call) or a copy completed it first."""
        try:
            if exception is not None:
                future.set_exception(exception)
            else:
                future.set_result(result)
        except InvalidStateError:
            pass

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        with self._ready:
            self._shutdown = True
            if cancel_futures:
                for work in self._heap:
                    work.future.cancel()
                self._heap.clear()
            heapq.heappush(self._heap, _Work(EARLY + 1, next(self._order), Future(), _stop))  # after every call
            self._ready.notify()
        if wait:
            self._thread.join()


def _served(work: _Work) -> bool:
    """Whether a queued call needs running no more: cancelled while queued, or served by a promoted copy (which
    may be running in the batch under way)."""
    return work.future.done() or work.future.running()


def run_alone(steps: Stepwise[T], forward: Callable[[Any], Any]) -> T:
    """Drive a stepwise call by itself, each request run by ``forward``: what it returns."""
    try:
        request = next(steps)
        while True:
            request = steps.send(forward(request))
    except StopIteration as end:
        return end.value  # type: ignore[no-any-return]
