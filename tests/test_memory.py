"""Freed memory goes back to the operating system: the holes utterances leave in glibc's heap are not kept."""

from __future__ import annotations

import platform

import numpy as np
import pytest

from tools.server_process import memory_kib
from wyoming_qwen3.server.memory import return_free_memory


def resident_mib() -> float:
    return memory_kib("self") / 1024


@pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="malloc_trim is glibc's")
def test_the_holes_freed_arrays_leave_in_the_heap_go_back_to_the_system() -> None:
    # 64 KiB arrays, under glibc's mmap threshold, so they live in the heap; every other one freed leaves holes that
    # glibc keeps (the last one pins the heap's top).
    arrays = [np.ones(16 * 1024, np.float32) for _ in range(3200)]
    del arrays[:-1:2]
    before = resident_mib()
    assert return_free_memory()
    assert before - resident_mib() > 50, (before, resident_mib())
    del arrays
