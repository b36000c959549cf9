"""The emission log: one JSON line per unit of text sent, for latency tools and benchmarks.

``--emission-log FILE`` appends every utterance's units to FILE;
``--emission-log DIR`` (an existing folder) writes one file per utterance.
Each line: the utterance, the unit (its text with any leading space, so the
units concatenate to the transcript), the seconds of speech the server had
received when it committed the unit, the wall time it was sent (Unix
seconds), and whether it came with the final transcript.
"""

from __future__ import annotations

import json
import os
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

from ...model.text_units import split_units


@dataclass
class EmissionLog:
    """Where one utterance's units are written."""

    path: Path
    utterance: str = field(default_factory=lambda: uuid.uuid4().hex[:12])

    @staticmethod
    def check_target(target: Path) -> None:
        """Raise OSError, saying why, unless ``target`` is a folder or a file this process can write."""
        folder = target if target.is_dir() else target.parent
        if not folder.is_dir():
            raise OSError(f"{folder} is not a folder")
        if not os.access(folder, os.W_OK | os.X_OK) or (target.is_file() and not os.access(target, os.W_OK)):
            raise OSError(f"{target} is not writable")

    @classmethod
    def for_utterance(cls, target: Path) -> EmissionLog:
        utterance = uuid.uuid4().hex[:12]
        path = target / f"{time.strftime('%Y%m%d-%H%M%S')}-{utterance}.jsonl" if target.is_dir() else target
        return cls(path, utterance)

    def write(self, delta: str, speech_seconds: float, final: bool) -> None:
        """Append one line per unit of ``delta``; blocking file I/O, so the server calls it off its event loop."""
        sent = time.time()
        lines = [
            json.dumps(
                {
                    "utterance": self.utterance,
                    "text": unit,
                    "speech_seconds": round(speech_seconds, 3),
                    "sent": round(sent, 3),
                    "final": final,
                },
                ensure_ascii=False,
            )
            for unit in split_units(delta)
        ]
        if lines:
            with self.path.open("a", encoding="utf-8") as log:
                log.write("\n".join(lines) + "\n")
