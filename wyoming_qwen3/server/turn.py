"""The end of a turn as the server hears it: when to start the final pass early, and when to end the turn.

Home Assistant ends a command after a fixed silence (0.7 s by default) and only
then sends ``audio-stop``. The server hears the silence begin too (Silero VAD,
``speech_activity``). The model hears a command and ``kept_silence_seconds`` of
the silence after it, no more: the silence after that is held back, and given
to the model only if speech resumes. So once that much silence has passed, the
final pass at ``audio-stop`` would hear exactly what the model has heard by
then, and it runs at once (speculation): its transcript is the one
``audio-stop`` would give, ready before it comes. If speech resumes, it is
thrown away.

With ``endpointing`` the server ends the turn itself, and sends the transcript
before ``audio-stop``: after a short silence once the text heard sounds
complete, after a longer one while it does not (the model's probability of the
end of the text after it, a last word that cannot end a command: "set a timer
for" ... "ten minutes", and, where commands are known, being one of them whole:
"open the dining room" ... "curtains"). The commands are the model folder's
(``grammar.json``), else, where the server reads a home from Home Assistant,
Home Assistant's own for that home (``home.commands``); a whole command that a
longer one begins with ("turn on the kitchen" ... "lights") ends after a silence
between the two. Where the backend gives no end probability (mlx), or the
language has neither such a list nor commands, the turn ends after the longer
silence only.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from ..backends.base import Speculation
from ..model.grammar import Judgement

#: Last words after which a command goes on, whatever the silence: articles, prepositions, conjunctions and
#: possessives, in the languages Home Assistant's users speak most. A language not here gets no "complete":
#: its turns end after the longer silence.
UNFINISHED_ENDINGS: dict[str, frozenset[str]] = {
    language: frozenset(words.split())
    for language, words in {
        "English": "a an the to for in into on onto at of and or but with by from my your his her our their its "
        "this that these those",
        "German": "der die das den dem des ein eine einen einem einer eines im in ins am an auf aus bei mit "
        "nach von vom zu zum zur für um und oder aber mein meine meinen dein deine unser unsere",
        "French": "le la les l un une des du de d au aux à a dans sur pour par avec et ou mais mon ma mes ton ta "
        "tes son sa ses notre nos votre vos",
        "Spanish": "el la los las un una unos unas del de al a en con para por y o pero mi mis tu tus su sus "
        "nuestro nuestra",
        "Dutch": "de het een den der van in op aan naar voor met bij uit om tot en of maar mijn je jouw zijn "
        "haar ons onze",
        "Italian": "il lo la i gli le un uno una del della dei delle al alla ai alle nel nella di a da in con "
        "su per e o ma mio mia tuo tua",
        "Polish": "w we na do z ze od dla po przy o i a lub albo ale mój moja moje",
        "Portuguese": "o a os as um uma uns umas do da dos das no na nos nas ao à de em para por com e ou mas "
        "meu minha",
    }.items()
}


class Grammar(Protocol):
    def judge(self, text: str) -> Judgement: ...


class Commands(Protocol):
    """What a speaker may say, by language (``model.grammar.Grammars``, ``home.commands.HomeCommands``)."""

    def of(self, language: str) -> Grammar | None:
        """The commands of a Qwen3-ASR language name, or None where none are known."""


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
        """Whether the transcript the speaker would get now reads as a whole command (or one a longer begins)."""
        words = speculation.text.split()
        if not words:
            return Judgement.INCOMPLETE
        unfinished = UNFINISHED_ENDINGS.get(speculation.language)
        grammar = self.commands.of(speculation.language) if self.commands is not None else None
        # No "complete" without evidence: the model's end probability, and a list of the language's words or
        # its commands.
        if (unfinished is None and grammar is None) or speculation.end_probability is None:
            return Judgement.INCOMPLETE
        last = words[-1].strip(".,!?;:'’").lower()  # "l'", "d'": an elided article
        if (unfinished is not None and last in unfinished) or speculation.end_probability < self.end_probability:
            return Judgement.INCOMPLETE
        return Judgement.COMPLETE if grammar is None else grammar.judge(speculation.text)

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
