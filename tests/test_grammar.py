"""The model folder's commands: what endpointing calls a whole command, and clear errors for a bad file."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tools.corpus import CHINESE, commands, heldout_utterances
from wyoming_qwen3.backends.base import Speculation
from wyoming_qwen3.model.catalogue import resolve_model
from wyoming_qwen3.model.grammar import GRAMMAR_FILE, GrammarError, Grammars
from wyoming_qwen3.server.stream.turn import TurnSettings

DEMO = Grammars.load(resolve_model("demo", [], Path(".")).path)


def test_the_demo_grammar_has_every_command_whole_and_none_of_their_beginnings() -> None:
    assert DEMO is not None and DEMO.languages == ["English", "Chinese"]
    english = DEMO.of("English")
    assert english is not None
    texts = [c.text for c in commands(200, False, seed=9)] + [t for t, _ in heldout_utterances(100, seed=2)]
    for text in texts:
        words = text.split()
        assert english.is_command(text) and english.is_command(text.capitalize() + "."), text
        for end in range(1, len(words)):
            assert not english.is_command(" ".join(words[:end])), " ".join(words[:end])


def test_the_demo_mandarin_grammar_matches_by_characters_without_spaces() -> None:
    chinese = DEMO.of("Chinese") if DEMO is not None else None
    assert chinese is not None and chinese.unspaced
    texts = [c.text for c in commands(100, False, seed=9, language=CHINESE)]
    texts += [t for t, _ in heldout_utterances(100, seed=2, language=CHINESE)]
    for text in texts:
        assert chinese.is_command(text) and chinese.is_command(text + "。") and chinese.is_command(" ".join(text))
        # Cut before a slot ("打开客厅的" ... "灯"): no command.
        for end in (i + 1 for i, c in enumerate(text[:-1]) if c in "的到之个"):
            assert not chinese.is_command(text[:end]), text[:end]
    assert chinese.is_command("打开客厅的灯") and not chinese.is_command("打开客厅的")


def test_a_transcripts_case_quotes_and_hyphens_do_not_hide_a_command() -> None:
    # The same reading of a transcript as a home's sentence templates (wyoming_qwen3/home/commands.py).
    english = DEMO.of("English") if DEMO is not None else None
    assert english is not None
    assert english.is_command('Turn ON the "kitchen" lights!')
    assert english.is_command("set a timer for twenty-five minutes")
    assert english.is_command("open the dining-room curtains")
    assert not english.is_command("open the dining-room")


def test_with_a_grammar_complete_means_one_of_its_commands_in_its_language() -> None:
    turn = TurnSettings(commands=DEMO)
    assert turn.sounds_complete(Speculation("open the dining room curtains", "English", 0.9))
    assert not turn.sounds_complete(Speculation("open the dining room", "English", 0.9))
    assert not turn.sounds_complete(Speculation("open the dining room curtains", "English", 0.2))  # and the rule
    # A language with no list of unfinished endings is judged by its commands; another language than the
    # grammars' by the rule alone.
    assert turn.sounds_complete(Speculation("打开客厅的灯", "Chinese", 0.9))
    assert not turn.sounds_complete(Speculation("打开客厅的", "Chinese", 0.9))
    assert not TurnSettings().sounds_complete(Speculation("打开客厅的灯", "Chinese", 0.9))
    assert turn.sounds_complete(Speculation("stoppe die Musik", "German", 0.9))
    assert TurnSettings().sounds_complete(Speculation("open the dining room", "English", 0.9))


def grammar_file(*grammars: object) -> str:
    return json.dumps({"grammars": list(grammars)})


@pytest.mark.parametrize(
    "content, message",
    [
        ("[]", "'grammars'"),
        ('{"language": "English", "templates": ["a"], "slots": {}}', "'grammars' must be a list"),
        (grammar_file({"templates": ["a"], "slots": {}}), "grammar 1: 'language'"),
        (grammar_file({"language": "English", "templates": "turn on", "slots": {}}), "'templates'"),
        (grammar_file({"language": "English", "templates": ["x"], "slots": {"area": "kitchen"}}), "'slots'"),
        (grammar_file({"language": "English", "templates": ["turn on {room}"], "slots": {}}), "no values: room"),
        (
            grammar_file({"language": "English", "templates": ["set {number}%"], "slots": {"number": ["one"]}}),
            "word of its own",
        ),
        ("{", "Expecting property name"),
    ],
)
def test_a_bad_grammar_file_is_refused_in_one_line(tmp_path: Path, content: str, message: str) -> None:
    (tmp_path / GRAMMAR_FILE).write_text(content)
    with pytest.raises(GrammarError, match=message) as raised:
        Grammars.load(tmp_path)
    assert str(tmp_path / GRAMMAR_FILE) in str(raised.value) and "\n" not in str(raised.value)


def test_a_folder_without_a_grammar_has_none(tmp_path: Path) -> None:
    assert Grammars.load(tmp_path) is None
    (tmp_path / GRAMMAR_FILE).write_text(grammar_file({"language": "English", "templates": ["stop"], "slots": {}}))
    grammars = Grammars.load(tmp_path)
    grammar = grammars.of("English") if grammars is not None else None
    assert grammar is not None and grammar.is_command("Stop!") and not grammar.is_command("stop it")
    assert grammars is not None and grammars.of("German") is None
