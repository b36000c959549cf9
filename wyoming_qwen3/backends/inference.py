"""The one inference thread, on which final passes go ahead of streaming steps, and early passes give way to both.

Every model call of a backend runs on one thread: torch already spreads one
forward pass over all cores (or the GPU), so two at once only slow both down.
Calls wait in a priority queue rather than in arrival order: once a user has
stopped speaking, the final pass of their utterance is what they are waiting
for, so it runs before any other stream's non-final step that is queued (one
that has started runs to its end).

An early final pass (one run in a pause, on the chance that the speaker has
finished) is wanted by nobody yet: it runs only when nothing else waits, and
it yields. A call submitted with ``EARLY`` priority may ask ``should_yield``
between tokens and raise ``Preempted``: it is run again, from the start, once
the more urgent work is done; if its caller cancelled it meanwhile (speech
resumed, the client left) it is dropped there. ``promote`` makes it urgent
once someone waits for it (audio-stop came).
"""

from __future__ import annotations

import itertools
import queue
import threading
from collections.abc import Callable
from concurrent.futures import Executor, Future, InvalidStateError
from dataclasses import dataclass, field
from typing import Any, TypeVar

T = TypeVar("T")

#: Priorities: lower runs first.
FINAL, STEP, EARLY = 0, 1, 2


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


class InferenceExecutor(Executor):
    """One worker thread taking the most urgent queued call first (FIFO within a priority)."""

    def __init__(self, thread_name: str = "inference") -> None:
        self._queue: queue.PriorityQueue[_Work] = queue.PriorityQueue()
        self._order = itertools.count()
        self._shutdown = False
        self._lock = threading.Lock()
        #: The call running now (read by should_yield on the worker thread).
        self._running: _Work | None = None
        self._thread = threading.Thread(target=self._run, name=thread_name, daemon=True)
        self._thread.start()

    def submit(self, fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> Future[T]:
        """Queue a call at ``STEP`` priority (what ``loop.run_in_executor`` uses)."""
        return self.submit_with_priority(STEP, fn, *args, **kwargs)

    def submit_with_priority(self, priority: int, fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> Future[T]:
        future: Future[T] = Future()
        self._put(priority, future, lambda: fn(*args, **kwargs))
        return future

    def _put(self, priority: int, future: Future[Any], call: Callable[[], Any], order: int | None = None) -> None:
        with self._lock:
            if self._shutdown:
                raise RuntimeError("cannot schedule new inference after shutdown")
            self._queue.put(_Work(priority, next(self._order) if order is None else order, future, call))

    def promote(self, future: Future[Any], priority: int = FINAL) -> None:
        """Someone now waits for this call: queue it again at ``priority`` (the copy that runs first serves both).

        Where it is running already, it no longer yields to work of ``priority`` or below.
        """
        with self._queue.mutex:
            running = self._running
            if running is not None and running.future is future:
                running.priority = min(running.priority, priority)
                return
            queued = next((w for w in self._queue.queue if w.future is future), None)
        if queued is not None and not future.done():
            self._put(priority, future, queued.call)

    def should_yield(self) -> bool:
        """For the ``EARLY`` call running now (on the inference thread): whether to stop and raise ``Preempted``:
        its caller cancelled it, or more urgent work is queued."""
        running = self._running
        if running is None or running.priority < EARLY:
            return False
        if running.future.cancelled():
            return True
        with self._queue.mutex:
            return any(w.priority < running.priority and not w.future.done() for w in self._queue.queue)

    def _run(self) -> None:
        while True:
            work = self._queue.get()
            if work.call is _stop:
                return
            if work.future.done():
                continue  # cancelled while queued, or served by a promoted copy
            # An early call stays cancellable while it runs (its caller's cancel is how it learns to stop).
            if work.priority < EARLY and not work.future.set_running_or_notify_cancel():
                continue
            self._running = work
            try:
                result = work.call()
            except Preempted:
                if not work.future.done():
                    try:
                        self._put(work.priority, work.future, work.call, work.order)  # ahead of later early calls
                    except RuntimeError:  # shut down meanwhile
                        work.future.cancel()
                continue
            except BaseException as err:  # handed to whoever awaits the future
                self._settle(work.future, exception=err)
            else:
                self._settle(work.future, result=result)
            finally:
                self._running = None

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
        with self._lock:
            self._shutdown = True
            if cancel_futures:
                while True:
                    try:
                        work = self._queue.get_nowait()
                    except queue.Empty:
                        break
                    work.future.cancel()
            self._queue.put(_Work(EARLY + 1, next(self._order), Future(), _stop))  # after every queued call
        if wait:
            self._thread.join()
