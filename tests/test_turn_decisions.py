"""The turn's decisions alone (``server.turn.Turn``): sequences of the VAD's verdicts in, its decisions out.

No server, no model, no thread: each chunk is 32 ms, written as a letter (``S`` speech as loud as the speaker's,
``s`` soft speech, ``p`` possible speech Silero misses, ``.`` the room), and the silence before each chunk is
counted as ``speech_activity.SpeechActivity`` counts it. The cases are those of docs/design.md's end of a
command; the tests of the whole server (tests/test_turn.py) hear the same through real speech.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pytest

from wyoming_qwen3.backends.base import FinalDelta, Speculation
from wyoming_qwen3.model.format import SAMPLE_RATE
from wyoming_qwen3.server.stream.silero import CHUNK_SAMPLES
from wyoming_qwen3.server.stream.speech_activity import Heard
from wyoming_qwen3.server.stream.turn import (
    UNSIFTED,
    Action,
    EndReason,
    FinalSource,
    Phase,
    StreamLimits,
    Turn,
    TurnSettings,
    Verdict,
    final_from_early_pass,
)

FEED, HOLD, RELEASE, DISCARD = Action.FEED, Action.HOLD, Action.RELEASE, Action.DISCARD_EARLY_PASS
CHUNK_SECONDS = CHUNK_SAMPLES / SAMPLE_RATE
HEARD = {
    "S": Heard(speech=True, possible_speech=True),
    "s": Heard(speech=True, possible_speech=True, soft=True),
    "p": Heard(speech=False, possible_speech=True, soft=True),
    ".": Heard(speech=False, possible_speech=False),
}
#: Chunks of the room that outlast the kept 0.3 s of silence.
PAST_KEPT = "." * (int(TurnSettings().kept_silence_seconds / CHUNK_SECONDS) + 2)


@dataclass
class Listener:
    """A turn, and the VAD's count of the silence since the last speech, as ``SpeechActivity`` keeps it."""

    turn: Turn
    chunks: int = 0
    speech_end: int | None = None
    routes: list[tuple[Action, ...]] = field(default_factory=list)

    def hear(self, pattern: str) -> list[tuple[Action, ...]]:
        """Route one chunk per letter; the decisions, one per chunk."""
        routes = []
        for letter in pattern:
            routes.append(self.turn.route(Verdict(HEARD[letter], silence_before=self.silence_seconds)))
            self.chunks += 1
            if HEARD[letter].speech:
                self.speech_end = self.chunks
        self.routes += routes
        return routes

    @property
    def silence_seconds(self) -> float | None:
        return None if self.speech_end is None else (self.chunks - self.speech_end) * CHUNK_SECONDS

    def endpoint(self) -> EndReason | None:
        return self.turn.endpoint(self.chunks * CHUNK_SAMPLES, self.silence_seconds)


def a_turn(settings: TurnSettings | None = None, loud: bool = True, cap_seconds: float = 30.0) -> Listener:
    """A turn that has taken 0.1 s of audio (at the speech level where ``loud``), at time 0."""
    turn = Turn(settings or TurnSettings(), StreamLimits(cap_seconds, audio_timeout_seconds=2.0), last_audio_at=0.0)
    turn.take(np.full(SAMPLE_RATE // 10, 0.1 if loud else 1e-5, np.float32), now=0.0)
    return Listener(turn)


def test_the_model_hears_the_kept_silence_and_the_rest_is_held_back() -> None:
    listener = a_turn()
    assert set(listener.hear("SSSS")) == {(FEED,)}
    routes = listener.hear(PAST_KEPT)
    kept = int(TurnSettings().kept_silence_seconds / CHUNK_SECONDS) + 1  # the chunk that reaches 0.3 s is fed too
    assert routes[:kept] == [(FEED,)] * kept and set(routes[kept:]) == {(HOLD,)}
    assert listener.turn.phase is Phase.HOLDING


def test_no_step_runs_before_a_frame_at_the_speech_level() -> None:
    listener = a_turn(loud=False)
    listener.hear("....")
    assert listener.turn.next_work(has_fed_audio=True, step_running=False) is None
    listener.turn.take(np.full(160, 0.1, np.float32), now=0.1)
    assert listener.turn.next_work(has_fed_audio=True, step_running=False) is Action.STEP


def test_one_step_at_a_time_and_the_early_pass_only_once_nothing_is_left_to_feed() -> None:
    listener = a_turn()
    listener.hear("SSS" + PAST_KEPT)
    turn = listener.turn
    assert turn.next_work(has_fed_audio=True, step_running=True) is None
    assert turn.next_work(has_fed_audio=True, step_running=False) is Action.STEP
    assert turn.next_work(has_fed_audio=False, step_running=False) is Action.EARLY_PASS
    assert turn.phase is Phase.EARLY_PASS
    assert turn.next_work(has_fed_audio=False, step_running=False) is None  # one early pass, not one per batch
    assert listener.hear("...") == [(HOLD,)] * 3


def test_no_early_pass_without_speculation() -> None:
    listener = a_turn(TurnSettings(speculate=False))
    listener.hear("SSS" + PAST_KEPT)
    assert listener.turn.next_work(has_fed_audio=False, step_running=False) is None
    assert listener.turn.phase is Phase.HOLDING


def test_speech_resuming_throws_the_early_pass_away_and_gives_the_pause_to_the_model() -> None:
    listener = a_turn()
    listener.hear("SSS" + PAST_KEPT)
    listener.turn.next_work(has_fed_audio=False, step_running=False)
    assert listener.hear("S") == [(DISCARD, RELEASE, FEED)]
    assert listener.turn.phase is Phase.HEARING
    # And the holding goes on: the next pause is held again, with a new early pass.
    assert listener.hear("SS" + PAST_KEPT)[-1] == (HOLD,)
    assert listener.turn.next_work(has_fed_audio=False, step_running=False) is Action.EARLY_PASS


def test_the_onset_of_resumed_speech_as_possible_speech_releases_the_pause_and_loud_speech_keeps_holding() -> None:
    """A resumed word's onset is possible speech before Silero calls it speech: it ended the holding in 73 of 100
    paused commands, and with it the early pass (docs/design.md). Loud speech after it holds again."""
    listener = a_turn()
    listener.hear("SSS" + PAST_KEPT)
    assert listener.hear("pS") == [(RELEASE, FEED), (FEED,)]
    assert listener.turn.phase is Phase.HEARING
    assert listener.hear(PAST_KEPT)[-1] == (HOLD,)


@pytest.mark.parametrize("soft_word", ["p", "ppp", "s", "sps"])
def test_a_soft_last_word_in_a_held_pause_goes_to_the_model_with_everything_after_it(soft_word: str) -> None:
    """Silero gave a last word 25-30 dB softer 0.12-0.52: possible speech, or soft speech. The pause goes to the
    model with it, and nothing is held back after it until the speaker speaks as loud as before."""
    listener = a_turn()
    listener.hear("SSSS" + PAST_KEPT)
    assert listener.turn.next_work(has_fed_audio=False, step_running=False) is Action.EARLY_PASS
    routes = listener.hear(soft_word)
    assert routes[0] == (DISCARD, RELEASE, FEED) and set(routes[1:]) <= {(FEED,)}
    assert listener.turn.phase is Phase.UNHELD
    assert set(listener.hear(PAST_KEPT * 3)) == {(FEED,)}  # however long the silence after it
    assert listener.turn.next_work(has_fed_audio=False, step_running=False) is None  # nothing held: no early pass
    listener.hear("SS")
    assert listener.turn.phase is Phase.HEARING
    assert listener.hear(PAST_KEPT)[-1] == (HOLD,)


def test_possible_speech_within_the_kept_silence_changes_nothing() -> None:
    listener = a_turn()
    listener.hear("SSS..")
    assert listener.hear("p") == [(FEED,)]
    assert listener.turn.phase is Phase.HEARING
    assert listener.hear(PAST_KEPT)[-1] == (HOLD,)


def test_a_pause_of_only_the_room_stays_held_however_long() -> None:
    listener = a_turn()
    listener.hear("SSS")
    routes = listener.hear(PAST_KEPT * 10)
    assert routes[-len(PAST_KEPT) * 9 :] == [(HOLD,)] * (len(PAST_KEPT) * 9)


def test_audio_the_vad_could_not_judge_goes_to_the_model_and_releases_the_pause() -> None:
    listener = a_turn()
    listener.hear("SSS" + PAST_KEPT)
    assert listener.turn.route(UNSIFTED) == (RELEASE, FEED)
    assert listener.turn.phase is Phase.HEARING


def endpointing(**settings: float) -> Listener:
    return a_turn(TurnSettings(endpointing=True, **settings))  # type: ignore[arg-type]


def test_the_turn_ends_only_with_endpointing() -> None:
    listener = a_turn()
    listener.hear("SSS" + PAST_KEPT * 20)
    assert listener.endpoint() is None


def test_the_early_pass_under_way_decides_how_long_a_silence_ends_the_turn() -> None:
    listener = endpointing()
    listener.hear("SSSS" + PAST_KEPT)
    listener.turn.next_work(has_fed_audio=False, step_running=False)
    listener.hear("." * 50)  # 1.6 s of silence in all, past the longer 1.25 s: still the early pass decides
    assert listener.endpoint() is None
    listener.turn.early_pass_finished(Speculation("turn on the kitchen lights", "English", 0.9))
    assert listener.endpoint() is EndReason.ENDPOINT


@pytest.mark.parametrize(
    ("speculation", "silence_to_end"),
    [
        (Speculation("turn on the kitchen lights", "English", 0.9), 0.5),  # sounds complete
        (Speculation("set a timer for", "English", 0.9), 1.25),  # a last word that cannot end a command
        (Speculation("turn on the kitchen lights", "English", 0.2), 1.25),  # the model is unsure it is over
        (None, 1.25),  # the early pass failed
    ],
)
def test_a_complete_text_ends_the_turn_after_the_short_silence_and_else_the_long(
    speculation: Speculation | None, silence_to_end: float
) -> None:
    """(A short silence of 0.5 s here: at the default 0.3 s, the early pass starts only once it has passed.)"""
    listener = endpointing(complete_silence_seconds=0.5)
    listener.hear("SSSS" + PAST_KEPT)
    listener.turn.next_work(has_fed_audio=False, step_running=False)
    listener.turn.early_pass_finished(speculation)
    while listener.endpoint() is None and listener.chunks < 200:
        listener.hear(".")
    ended_at = listener.silence_seconds
    assert ended_at is not None and silence_to_end <= ended_at < silence_to_end + CHUNK_SECONDS


def test_a_result_of_an_early_pass_thrown_away_decides_nothing() -> None:
    listener = endpointing()
    listener.hear("SSSS" + PAST_KEPT)
    listener.turn.next_work(has_fed_audio=False, step_running=False)
    listener.hear("S")  # thrown away; its result comes after
    listener.turn.early_pass_finished(Speculation("turn on the kitchen lights", "English", 0.9))
    listener.hear("." * 12)  # 0.38 s: past the short silence, not the long one
    assert listener.turn.early_pass is None and listener.endpoint() is None


def test_a_stream_without_speech_ends_after_the_bound() -> None:
    listener = endpointing(no_speech_seconds=1.0)
    listener.hear("." * 31)
    assert listener.endpoint() is None  # 0.99 s
    listener.hear(".")
    assert listener.endpoint() is EndReason.NO_SPEECH


def test_the_cap_takes_what_fits_and_nothing_after_the_end() -> None:
    listener = a_turn(cap_seconds=0.2)  # 0.1 s taken already
    turn = listener.turn
    taken = turn.take(np.ones(SAMPLE_RATE // 5, np.float32), now=0.1)
    assert taken.shape[0] == SAMPLE_RATE // 10 and turn.at_cap and not turn.ended
    assert turn.end(EndReason.CAP) and turn.end_reason is EndReason.CAP
    assert not turn.end(EndReason.AUDIO_STOP)  # once
    assert turn.take(np.ones(160, np.float32), now=0.2).shape[0] == 0
    assert turn.next_work(has_fed_audio=True, step_running=False) is None


def test_the_audio_timeout_counts_from_the_last_audio() -> None:
    turn = a_turn().turn  # audio at 0.0, a 2 s timeout
    assert not turn.timed_out(1.9)
    turn.take(np.ones(160, np.float32), now=1.5)
    assert turn.idle_deadline == 3.5 and not turn.timed_out(3.4) and turn.timed_out(3.5)
    turn.end(EndReason.AUDIO_STOP)
    assert not turn.timed_out(10.0)


def test_a_stream_that_never_sends_audio_times_out_from_its_start() -> None:
    turn = Turn(TurnSettings(), StreamLimits(1.0, audio_timeout_seconds=2.0), last_audio_at=5.0)
    assert turn.idle_deadline == 7.0 and turn.timed_out(7.0)


def test_the_batch_under_way_at_the_end_is_still_routed() -> None:
    """audio-stop waits for the VAD's chunk under way: it is held or fed as before the end, for the final pass."""
    listener = a_turn()
    listener.hear("SSS" + PAST_KEPT)
    listener.turn.end(EndReason.AUDIO_STOP)
    assert listener.hear(".S") == [(HOLD,), (RELEASE, FEED)]


def test_audio_the_vad_never_reached_goes_to_the_final_pass_with_the_held_pause() -> None:
    listener = a_turn()
    listener.hear("SSS" + PAST_KEPT)
    turn = listener.turn
    turn.next_work(has_fed_audio=False, step_running=False)
    turn.end(EndReason.AUDIO_STOP)
    assert turn.final_source is FinalSource.EARLY_PASS
    assert turn.release_unheard() == (DISCARD, RELEASE, FEED)
    assert turn.final_source is FinalSource.FINAL_PASS  # no early pass covers that audio
    assert a_turn().turn.release_unheard() == (FEED,)


def test_where_the_final_transcript_comes_from() -> None:
    quiet = a_turn(loud=False)
    quiet.turn.end(EndReason.AUDIO_STOP)
    assert quiet.turn.final_source is FinalSource.NOTHING_TO_DECODE
    listener = a_turn()
    listener.hear("SSS" + PAST_KEPT)
    assert listener.turn.final_source is FinalSource.FINAL_PASS  # held, but no early pass ran
    listener.turn.next_work(has_fed_audio=False, step_running=False)
    assert listener.turn.final_source is FinalSource.EARLY_PASS


def test_the_early_pass_gives_the_final_delta_only_where_it_extends_the_text_sent() -> None:
    early = Speculation("turn on the kitchen lights", "English", 0.9)
    assert final_from_early_pass(early, "turn on the") == FinalDelta(" kitchen lights", "English")
    assert final_from_early_pass(early, "turn off the") is None
    assert final_from_early_pass(None, "") is None
