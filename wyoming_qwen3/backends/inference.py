"""The one inference thread, on which final passes go ahead of streaming steps.

Every model call of a backend runs on one thread: torch already spreads one
forward pass over all cores (or the GPU), so two at once only slow both down.
Calls wait in a priority queue rather than in arrival order: once a user has
stopped speaking, the final pass of their utterance is what they are waiting
for, so it runs before any other stream's non-final step that is queued (one
that has started runs to its end).
"""

from __future__ import annotations

import itertools
import queue
import threading
from collections.abc import Callable
from concurrent.futures import Executor, Future
from dataclasses import dataclass, field
from typing import Any, TypeVar

T = TypeVar("T")

#: Priorities: lower runs first.
FINAL, STEP = 0, 1


def _stop() -> None:
    """Marks the end of the queue."""


@dataclass(order=True)
class _Work:
    priority: int
    order: int
    future: Future[Any] = field(compare=False)
    call: Callable[[], Any] = field(compare=False)


class InferenceExecutor(Executor):
    """One worker thread taking the most urgent queued call first (FIFO within a priority)."""

    def __init__(self, thread_name: str = "inference") -> None:
        self._queue: queue.PriorityQueue[_Work] = queue.PriorityQueue()
        self._order = itertools.count()
        self._shutdown = False
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._run, name=thread_name, daemon=True)
        self._thread.start()

    def submit(self, fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> Future[T]:
        """Queue a call at ``STEP`` priority (what ``loop.run_in_executor`` uses)."""
        return self.submit_with_priority(STEP, fn, *args, **kwargs)

    def submit_with_priority(self, priority: int, fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> Future[T]:
        future: Future[T] = Future()
        with self._lock:
            if self._shutdown:
                raise RuntimeError("cannot schedule new inference after shutdown")
            self._queue.put(_Work(priority, next(self._order), future, lambda: fn(*args, **kwargs)))
        return future

    def _run(self) -> None:
        while True:
            work = self._queue.get()
            if work.call is _stop:
                return
            if not work.future.set_running_or_notify_cancel():
                continue
            try:
                work.future.set_result(work.call())
            except BaseException as err:  # handed to whoever awaits the future
                work.future.set_exception(err)

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        with self._lock:
            self._shutdown = True
            if cancel_futures:
                while True:
                    try:
                        work = self._queue.get_nowait()
                    except queue.Empty:
                        break
                    work.future.cancel()
            self._queue.put(_Work(STEP + 1, next(self._order), Future(), _stop))  # after every queued call
        if wait:
            self._thread.join()
