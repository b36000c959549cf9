"""The Home Assistant-like client ends a command on the chunk Home Assistant 2026.11 ends it on.

Each case is a run of VAD verdicts in 10 ms chunks, and the chunk after which
Home Assistant's ``VoiceCommandSegmenter`` (assist_pipeline/vad.py) ends the
command, worked out from what that class does: a command begins after 0.3 s
of speech, ends after 0.7 s of no speech once it has lasted 0.7 s, and only a
second of unbroken speech restarts the silence.
"""

from __future__ import annotations

import pytest

from tools.ha_client import CommandEnd

CHUNK = 0.01


def verdicts(*runs: tuple[bool, float]) -> list[bool]:
    """(speech?, seconds) runs as one verdict per 10 ms chunk."""
    return [speech for speech, seconds in runs for _ in range(round(seconds / CHUNK))]


def ending_chunk(command_end: CommandEnd, chunks: list[bool]) -> int | None:
    """The 1-based chunk on which the command ends (None: not within the chunks given)."""
    return next((index for index, speech in enumerate(chunks, 1) if command_end.hear(CHUNK, speech)), None)


SPEECH, QUIET = True, False


@pytest.mark.parametrize(
    ("runs", "silence", "ends_on"),
    [
        # Began at 0.3 s; 0.7 s of no speech after the speech's end at 0.5 s.
        (((SPEECH, 0.5), (QUIET, 5.0)), 0.7, 120),
        # Speech need not be unbroken to begin a command: 0.15 + 0.15 s around a half-second gap.
        (((SPEECH, 0.15), (QUIET, 0.5), (SPEECH, 0.15), (QUIET, 5.0)), 0.7, 150),
        # A short word between two pauses does not restart the silence: it ends 0.35 s into the second pause.
        (((SPEECH, 1.2), (QUIET, 0.35), (SPEECH, 0.4), (QUIET, 5.0)), 0.7, 230),
        # A second of unbroken speech does: the second pause needs its whole 0.7 s.
        (((SPEECH, 1.2), (QUIET, 0.35), (SPEECH, 1.0), (QUIET, 5.0)), 0.7, 325),
        # Aggressive (0.25 s): the silence is there at 0.55 s, but a command lasts 0.7 s after it began (0.3 s).
        (((SPEECH, 0.3), (QUIET, 5.0)), 0.25, 100),
        (((SPEECH, 2.0), (QUIET, 5.0)), 0.25, 225),
        # Relaxed (1.25 s).
        (((SPEECH, 2.0), (QUIET, 5.0)), 1.25, 325),
    ],
)
def test_a_command_ends_where_home_assistant_ends_it(runs, silence: float, ends_on: int) -> None:
    assert ending_chunk(CommandEnd(silence_seconds=silence), verdicts(*runs)) == ends_on


def test_a_second_of_no_speech_before_the_command_forgets_the_speech_heard() -> None:
    """0.15 s, a 1 s gap, 0.15 s: never 0.3 s of speech within a second, so no command begins; the stream
    ends at the 15 s timeout."""
    command_end = CommandEnd()
    chunks = verdicts((SPEECH, 0.15), (QUIET, 1.0), (SPEECH, 0.15), (QUIET, 20.0))
    assert ending_chunk(command_end, chunks) == 1500 and not command_end.began


def test_a_vad_with_no_verdict_yet_counts_as_no_speech() -> None:
    command_end = CommandEnd()
    for _ in range(50):
        assert not command_end.hear(CHUNK, None)
    assert not command_end.began
