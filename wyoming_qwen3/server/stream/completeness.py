"""Whether the words heard so far sound like a whole command: what decides how long a silence ends the turn.

The evidence is the early final pass's transcript (``backends.base.Speculation``):
the model's probability of the end of the text after it, a last word that
cannot end a command ("set a timer for" ... "ten minutes"), and, where the
commands are known, being one of them whole ("open the dining room" ...
"curtains" is not). The commands are the model folder's (``grammar.json``,
``model.grammar``), else, where the server reads a home from Home Assistant,
Home Assistant's own for that home (``home.commands``); a whole command that a
longer one begins with is ``CONTINUES`` ("turn on the kitchen" ... "lights").
Without the model's end probability (mlx), or in a language with neither a list
of endings nor commands, nothing sounds complete.
"""

from __future__ import annotations

from typing import Protocol

from ...backends.base import Speculation
from ...model.grammar import Judgement

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


def judge(speculation: Speculation, commands: Commands | None, end_probability: float) -> Judgement:
    """Whether the transcript the speaker would get now reads as a whole command (or one a longer begins), the text
    sounding finished where the model gives its end at least ``end_probability``."""
    words = speculation.text.split()
    if not words:
        return Judgement.INCOMPLETE
    unfinished = UNFINISHED_ENDINGS.get(speculation.language)
    grammar = commands.of(speculation.language) if commands is not None else None
    # No "complete" without evidence: the model's end probability, and a list of the language's words or its commands.
    if (unfinished is None and grammar is None) or speculation.end_probability is None:
        return Judgement.INCOMPLETE
    last = words[-1].strip(".,!?;:'’").lower()  # "l'", "d'": an elided article
    if (unfinished is not None and last in unfinished) or speculation.end_probability < end_probability:
        return Judgement.INCOMPLETE
    return Judgement.COMPLETE if grammar is None else grammar.judge(speculation.text)
