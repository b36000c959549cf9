"""The turn's decisions: what each chunk of audio is for, when the final pass starts early, and when the turn ends.

Home Assistant ends a command after a fixed silence (0.7 s by default) and only
then sends ``audio-stop``. The server hears the silence begin too (Silero VAD,
``speech_activity``). The model hears a command and ``kept_silence_seconds`` of
the silence after it, no more: the silence after that is held back, and given
to the model only if speech resumes. So once that much silence has passed, the
final pass at ``audio-stop`` would hear exactly what the model has heard by
then, and it runs at once (the early pass): its transcript is the one
``audio-stop`` would give, ready before it comes. If speech resumes, it is
thrown away. Possible speech in a held pause (a soft last word that Silero
misses) goes to the model with the pause, and nothing more is held back until
the speaker speaks as loud as before.

With ``endpointing`` the server ends the turn itself, before ``audio-stop``:
after a short silence once the early pass's text sounds complete, after a longer
one while it does not (``completeness``). A stream with no speech ends after
``no_speech_seconds``; every stream ends at the cap, or when its client stops
sending audio.

``Turn`` holds these decisions and nothing else: no tasks, threads or sockets.
``utterance.Utterance`` tells it what came (audio, the VAD's verdict on each
chunk, the early pass's result) and does what it answers. Its state is one
``Phase`` while the turn is open, and an ``EndReason`` once it has ended:

    HEARING --silence past the kept part--> HOLDING --nothing left to feed--> EARLY_PASS
       ^                                      |                                  |
       +------ loud speech: held audio released (the early pass thrown away) ---+
    HOLDING / EARLY_PASS --possible or soft speech in the pause--> UNHELD --loud speech--> HEARING

The mechanisms behind two of its answers are the backend's: an early pass runs
on a snapshot of the session that it leaves as it was (``speculate``), and it
yields to every other stream's work (``backends.inference``, ``EARLY``).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

import numpy as np

from ...backends.base import FinalDelta, Speculation
from ...model.format import SAMPLE_RATE
from ...model.grammar import Judgement
from .audio import SPEECH_LEVEL_DBFS, loudest_frame_dbfs
from .completeness import Commands, judge
from .speech_activity import Heard


@dataclass(frozen=True)
class TurnSettings:
    """When the server starts the final pass early, and whether and when it ends the turn itself."""

    #: Run the final pass while the client streams the trailing silence.
    speculate: bool = True
    #: Silence after the last speech (as the VAD hears it) the model hears; the rest is held back unless
    #: speech resumes. Silero's end of speech comes 73-99 ms after the real one at the median (docs/design.md).
    kept_silence_seconds: float = 0.3
    #: End the turn here, before audio-stop (info then says requires_external_vad: false).
    endpointing: bool = False
    #: Silence that ends a turn whose text sounds complete, and one whose text does not.
    complete_silence_seconds: float = 0.3
    incomplete_silence_seconds: float = 1.25
    #: Silence that ends a whole command that a longer one begins with.
    continues_silence_seconds: float = 0.8
    #: The model's probability of the end of the text at which the text sounds complete.
    end_probability: float = 0.5
    #: With endpointing: a stream with no speech for this long gets an empty transcript.
    no_speech_seconds: float = 8.0
    #: The commands a speaker gives: where a language has them, a text sounds complete only as one of them, whole
    #: (a paused "open the dining room" is not).
    commands: Commands | None = None

    def completeness(self, speculation: Speculation) -> Judgement:
        """What the transcript the speaker would get now reads as (``completeness``)."""
        return judge(speculation, self.commands, self.end_probability)

    def sounds_complete(self, speculation: Speculation) -> bool:
        return self.completeness(speculation) is Judgement.COMPLETE

    def silence_to_end(self, speculation: Speculation | None) -> float:
        """The silence after which the turn ends, given what the speaker would get now (None: not known yet)."""
        judgement = Judgement.INCOMPLETE if speculation is None else self.completeness(speculation)
        return {
            Judgement.COMPLETE: self.complete_silence_seconds,
            Judgement.CONTINUES: self.continues_silence_seconds,
            Judgement.INCOMPLETE: self.incomplete_silence_seconds,
        }[judgement]


@dataclass(frozen=True)
class StreamLimits:
    """Bounds every stream shares: its turn ends at them."""

    #: Audio beyond this is not transcribed: the transcript is sent at the cap. A stream's
    #: cost per second is bounded (simulkv's stream window), so the cap is for runaway streams.
    max_audio_seconds: float = 60.0
    #: A stream with no audio for this long is finished as if audio-stop came.
    audio_timeout_seconds: float = 10.0


class Phase(Enum):
    """Where an open turn stands with the silence after speech."""

    #: The model hears everything; silence past the kept part will be held back.
    HEARING = "hearing"
    #: Silence past the kept part is held back.
    HOLDING = "holding"
    #: Silence is held back, and the final pass runs early on what the model heard (or has run: ``early_pass``).
    EARLY_PASS = "early pass"
    #: A held pause held possible or soft speech: nothing is held back until the speaker speaks as loud as before.
    UNHELD = "unheld"


#: The phases in which audio is held back.
_HELD = frozenset({Phase.HOLDING, Phase.EARLY_PASS})


class Action(Enum):
    """What the turn says happens next."""

    #: Give the chunk to the model.
    FEED = "feed"
    #: Hold the chunk back.
    HOLD = "hold"
    #: Give the audio held back to the model, before the chunk.
    RELEASE = "release"
    #: Throw the early final pass away: the model will hear more.
    DISCARD_EARLY_PASS = "discard the early pass"
    #: Run a streaming step on the audio given to the model.
    STEP = "step"
    #: Run the final pass now, on what the model heard.
    EARLY_PASS = "early pass"


class EndReason(Enum):
    """Why a turn ended."""

    AUDIO_STOP = "audio-stop"
    #: The server's own endpointing: the speaker has finished.
    ENDPOINT = "endpoint"
    #: Endpointing, and no speech within ``no_speech_seconds``.
    NO_SPEECH = "no speech"
    #: The stream reached ``max_audio_seconds``.
    CAP = "cap"
    #: No audio for ``audio_timeout_seconds``, and no audio-stop.
    AUDIO_TIMEOUT = "audio timeout"
    #: The client left, or started another stream: no transcript.
    DROPPED = "dropped"


class FinalSource(Enum):
    """Where the final transcript comes from."""

    #: No 10 ms frame reached the speech level: an empty transcript, nothing decoded.
    NOTHING_TO_DECODE = "nothing to decode"
    #: The early pass, if it still stands and its text extends what was sent (``final_from_early_pass``).
    EARLY_PASS = "early pass"
    FINAL_PASS = "final pass"


@dataclass(frozen=True)
class Verdict:
    """What the VAD heard of one chunk, and the silence before it."""

    heard: Heard
    #: Seconds since the last speech, before this chunk (None: no speech yet).
    silence_before: float | None


#: The verdict on audio the VAD could not judge (its process failed): it goes to the model, and nothing is held.
UNSIFTED = Verdict(Heard(speech=True, possible_speech=True), silence_before=None)


@dataclass
class Turn:
    """One utterance's turn: its phase, and what it has taken of the stream."""

    settings: TurnSettings
    limits: StreamLimits
    #: When audio last came (the turn's start until some does), in the clock the shell passes to ``take``.
    last_audio_at: float
    phase: Phase = Phase.HEARING
    #: Set once the turn has ended: the final transcript is due (or the stream was dropped).
    end_reason: EndReason | None = None
    #: Samples taken.
    received_samples: int = 0
    #: Set once any 10 ms frame reached SPEECH_LEVEL_DBFS; until then no step runs.
    speech_level_reached: bool = False
    #: In the EARLY_PASS phase: whether the early pass has finished, and its transcript (None: it failed).
    early_pass_done: bool = False
    early_pass: Speculation | None = None

    @property
    def cap_samples(self) -> int:
        """The most samples a stream gives the model."""
        return int(self.limits.max_audio_seconds * SAMPLE_RATE)

    @property
    def ended(self) -> bool:
        return self.end_reason is not None

    @property
    def at_cap(self) -> bool:
        return self.received_samples >= self.cap_samples

    @property
    def idle_deadline(self) -> float:
        """When the turn ends for want of audio, if none comes before."""
        return self.last_audio_at + self.limits.audio_timeout_seconds

    def take(self, samples: np.ndarray, now: float) -> np.ndarray:
        """Audio arrived at ``now``: the part the turn takes (none once it has ended, none past the cap)."""
        if self.ended:
            return samples[:0]
        self.last_audio_at = now
        taken = samples[: max(self.cap_samples - self.received_samples, 0)]
        self.received_samples += taken.shape[0]
        if taken.shape[0] and not self.speech_level_reached:
            self.speech_level_reached = loudest_frame_dbfs(taken) >= SPEECH_LEVEL_DBFS
        return taken

    def route(self, verdict: Verdict) -> tuple[Action, ...]:
        """Where one chunk goes, once the VAD has heard it: (FEED,), (HOLD,), or the held audio released before it
        (RELEASE, FEED), the early pass first thrown away if there is one. Routed after the end too: the VAD's
        batch under way at the end goes to the final pass."""
        heard = verdict.heard
        silent_long = (
            self.phase is not Phase.UNHELD
            and verdict.silence_before is not None
            and verdict.silence_before >= self.settings.kept_silence_seconds
        )
        # Possible speech in a held pause (a soft last word that Silero misses), or soft speech, goes to the model
        # with the pause, and so does everything after it until the speaker speaks as loud as before: the final
        # pass then hears what it would if nothing had been held back, however the stream ends. (Holding again
        # 0.3 s after the soft word left the transcript of a server holding nothing back in 6 of 40 soft last
        # words, 4 of them a word short: the demo model needs the room after a soft word; script/benchmark
        # soft-tail.)
        if heard.speech or (silent_long and heard.possible_speech):
            if heard.speech and not heard.soft:
                # Speech as loud as the speaker's: the holding goes on (the onset of a word that resumes a pause is
                # possible speech before Silero calls it speech; it ended the holding in 73 of 100 paused commands,
                # and with it the early pass: those turns waited the longer silence, 1354 ms at the median).
                return self._released_into(Phase.HEARING)
            if silent_long:  # possible speech, or soft speech, after a pause the model was spared
                return self._released_into(Phase.UNHELD)
            return self._released_into(Phase.HEARING if self.phase in _HELD else self.phase)
        if silent_long:
            if self.phase is Phase.HEARING:
                self._enter(Phase.HOLDING)
            return (Action.HOLD,)
        return (Action.FEED,)

    def next_work(self, has_fed_audio: bool, step_running: bool) -> Action | None:
        """What to start on the inference thread now (a step on the audio given to the model but not yet stepped on,
        or the early pass once nothing is left to feed), or None."""
        if self.ended or not self.speech_level_reached or step_running:
            return None  # a step that ends asks again
        if has_fed_audio:
            return Action.STEP
        if self.phase is Phase.HOLDING and self.settings.speculate:
            # Nothing is left to feed: the final pass at audio-stop would hear just what the model has.
            self._enter(Phase.EARLY_PASS)
            return Action.EARLY_PASS
        return None

    def early_pass_finished(self, speculation: Speculation | None) -> None:
        """The early pass started by ``next_work`` has finished (None: it failed or could not run)."""
        if self.phase is Phase.EARLY_PASS:
            self.early_pass_done, self.early_pass = True, speculation

    def endpoint(self, heard_samples: int, silence_seconds: float | None) -> EndReason | None:
        """With endpointing, after each batch the VAD heard (``heard_samples`` in all, ``silence_seconds`` since the
        last speech, None before any): why the turn ends now, or None."""
        if not self.settings.endpointing or self.ended:
            return None
        if silence_seconds is None:
            no_speech = heard_samples >= self.settings.no_speech_seconds * SAMPLE_RATE
            return EndReason.NO_SPEECH if no_speech else None
        if self.phase is Phase.EARLY_PASS and not self.early_pass_done:
            return None  # what the speaker would get decides how long a silence ends the turn: wait for it
        standing = self.early_pass if self.phase is Phase.EARLY_PASS else None
        return EndReason.ENDPOINT if silence_seconds >= self.settings.silence_to_end(standing) else None

    def timed_out(self, now: float) -> bool:
        """Whether the client stopped sending audio, without audio-stop, long enough to end the turn."""
        return not self.ended and now >= self.idle_deadline

    def end(self, reason: EndReason) -> bool:
        """End the turn; False where it had ended already."""
        if self.ended:
            return False
        self.end_reason = reason
        return True

    def release_unheard(self) -> tuple[Action, ...]:
        """At the end, for audio the VAD never reached (a client faster than real time): it goes to the final pass
        unsifted, the pause held before it too, so that the model hears the stream whole; no early pass covers it."""
        return self._released_into(Phase.HEARING if self.phase in _HELD else self.phase)

    @property
    def final_source(self) -> FinalSource:
        """Where the final transcript comes from, once the turn has ended."""
        if not self.speech_level_reached:
            return FinalSource.NOTHING_TO_DECODE
        return FinalSource.EARLY_PASS if self.phase is Phase.EARLY_PASS else FinalSource.FINAL_PASS

    def _released_into(self, phase: Phase) -> tuple[Action, ...]:
        """Into ``phase``, the chunk fed after whatever was held back, the early pass first thrown away if one ran."""
        discard = (Action.DISCARD_EARLY_PASS,) if self.phase is Phase.EARLY_PASS else ()
        release = (Action.RELEASE,) if self.phase in _HELD else ()
        self._enter(phase)
        return (*discard, *release, Action.FEED)

    def _enter(self, phase: Phase) -> None:
        self.phase = phase
        self.early_pass_done, self.early_pass = False, None


def final_from_early_pass(speculation: Speculation | None, sent: str) -> FinalDelta | None:
    """The final delta the early pass gives, where it extends the text sent (None: run the final pass)."""
    if speculation is None or not speculation.text.startswith(sent):
        return None
    return FinalDelta(text=speculation.text[len(sent) :], language=speculation.language)
