"""matplotlib for the benchmarks' plots, where it is installed (``script/setup --bench``)."""

from __future__ import annotations

from types import ModuleType


def pyplot() -> ModuleType | None:
    """matplotlib's pyplot, drawing to files only (Agg); None where matplotlib is not installed."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    return plt
