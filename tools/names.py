"""Made-up names, and lists of names and terms as Home Assistant sends them in ``transcribe``.

A home's own names ("the zandor lamp", "the brimkel room") are words no grammar
and no training text holds; only the list a client sends can tell the model how
they are spelled. These names are pronounceable nonsense that espeak-ng says
by English rules, so their spelling cannot be heard with certainty ("zandor" or
"zander"): a model that gets them right has read them in its context.

Training draws fresh names from one generator; the held-out names come from
another seed and are never drawn in training, so a gain on them is the context
read, not names learned by heart.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from tools.corpus import AREAS, COVERS, DEVICES, DOORS, ENGLISH, HELDOUT_VOICES, Command, fill
from wyoming_qwen3.server.context import bounded_entries, build_context

_ONSETS = (
    "b",
    "d",
    "f",
    "g",
    "k",
    "l",
    "m",
    "n",
    "p",
    "r",
    "s",
    "t",
    "v",
    "z",
    "br",
    "dr",
    "fl",
    "gr",
    "kr",
    "pl",
    "sk",
    "st",
    "tr",
    "sn",
)
_VOWELS = ("a", "e", "i", "o", "u", "a", "o", "oo", "ee", "ai")
_CODAS = ("", "", "n", "m", "r", "l", "k", "x", "nd", "st", "rk", "sh")

#: Templates whose area or device may be a home's own name.
_AREA_TEMPLATES = [i for i, t in enumerate(ENGLISH.templates) if "{area}" in t]
_DEVICE_TEMPLATES = [i for i, t in enumerate(ENGLISH.templates) if "{device}" in t]
#: Held-out names: this many, from their own seed.
HELDOUT_NAME_COUNT = 60
_HELDOUT_NAME_SEED = 9001


def made_up_name(rng: random.Random) -> str:
    """A pronounceable word of two or three syllables that is no English word and no grammar word."""
    syllables = rng.choice((2, 2, 2, 3))
    word = "".join(rng.choice(_ONSETS) + rng.choice(_VOWELS) for _ in range(syllables)) + rng.choice(_CODAS)
    return word


#: Spellings English rules read alike (or nearly): a name respelled with them sounds as before.
_RESPELLINGS = (
    ("ee", "ea"),
    ("ee", "ie"),
    ("oo", "ou"),
    ("ai", "ay"),
    ("ai", "ei"),
    ("k", "c"),
    ("k", "ck"),
    ("x", "cks"),
    ("f", "ph"),
    ("s", "ss"),
    ("n", "nn"),
    ("m", "mm"),
    ("l", "ll"),
    ("r", "rr"),
    ("t", "tt"),
    ("z", "zz"),
)


def respelled(name: str, rng: random.Random) -> str:
    """``name`` spelled otherwise but said alike: one or two of ``_RESPELLINGS``, at random places.

    Training shows a named command's audio with its name respelled so, in the context and in the answer:
    the spelling then comes only from the context. A model trained on a fixed set of utterances learned
    their names by heart instead (2026-12-06: 5900 steps, training loss 0.01, names in the context no help).
    """
    for _ in range(rng.choice((1, 2))):
        options = [(i, old, new) for old, new in _RESPELLINGS for i in range(len(name)) if name.startswith(old, i)]
        if not options:
            break
        at, old, new = rng.choice(options)
        name = name[:at] + new + name[at + len(old) :]
    return name


def heldout_names() -> list[str]:
    """Names that training never draws."""
    rng = random.Random(_HELDOUT_NAME_SEED)
    names: list[str] = []
    while len(names) < HELDOUT_NAME_COUNT:
        name = made_up_name(rng)
        if name not in names:
            names.append(name)
    return names


def training_name(rng: random.Random, exclude: frozenset[str]) -> str:
    """A fresh made-up name, never a held-out one."""
    while (name := made_up_name(rng)) in exclude:
        pass
    return name


@dataclass(frozen=True)
class NamedCommand:
    """A command that names something of the home's own."""

    command: Command
    #: The made-up name it says.
    name: str


def named_command(name: str, rng: random.Random) -> NamedCommand:
    """A command with ``name`` as its area or its device."""
    as_area = rng.random() < 0.6
    template = rng.choice(_AREA_TEMPLATES if as_area else _DEVICE_TEMPLATES)
    return NamedCommand(fill(template, rng, ENGLISH, **({"area": name} if as_area else {"device": name})), name)


def name_list(count: int, rng: random.Random, spoken: str = "", exclude: frozenset[str] = frozenset()) -> str:
    """A context of ``count`` names and terms as a client sends them, bounded as the server bounds them.

    Other made-up names, the grammar's names, and numbered names of one kind ("living room lamp 3"), which
    made the model of 2026-12-05 return nothing at 20; ``spoken`` (if given) at a random place, always kept.
    """
    if count <= 0:
        return ""
    style = rng.random()
    if style < 0.2:
        base = f"{rng.choice(AREAS)} {rng.choice(DEVICES)}"
        others = [f"{base} {i}" for i in range(count)]
    else:
        others = [
            training_name(rng, exclude) if rng.random() < 0.5 else rng.choice(AREAS + DEVICES + COVERS + DOORS)
            for _ in range(count)
        ]
    if spoken:
        others = [o for o in others if o != spoken][: count - 1]
        kept, _ = bounded_entries([spoken, *others], None)
        kept = kept[1:]
        kept.insert(rng.randrange(len(kept) + 1), spoken)
    else:
        kept, _ = bounded_entries(others, None)
    return build_context("", kept)


def heldout_named(count: int, others: int) -> list[dict[str, str]]:
    """Held-out commands that say a held-out name, in held-out voices, each with a context of the name among
    ``others`` others: {"text", "voice", "name", "context"}."""
    out = []
    exclude = frozenset(heldout_names())
    for index, name in enumerate(heldout_names()[:count]):
        rng = random.Random(index)
        command = named_command(name, rng).command
        context = name_list(others, rng, name, exclude)
        out.append(
            {
                "text": command.text,
                "voice": HELDOUT_VOICES[index % len(HELDOUT_VOICES)],
                "name": name,
                "context": context,
            }
        )
    return out
