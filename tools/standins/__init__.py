"""Stand-ins for the Mac-only libraries (``mlx``, ``mlx_qwen3_asr``), for tests and benchmarks off a Mac.

``on_path()`` makes them importable under their real names, as the backend imports them.
"""

from __future__ import annotations

import sys
from pathlib import Path

FOLDER = Path(__file__).parent


def on_path() -> None:
    """Put the stand-ins first on ``sys.path`` (once)."""
    if str(FOLDER) not in sys.path:
        sys.path.insert(0, str(FOLDER))
