"""The model folder's commands: what endpointing calls a whole command, and clear errors for a bad file."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tools.corpus import commands, heldout_utterances
from wyoming_qwen3.backends.base import Speculation
from wyoming_qwen3.model.catalogue import resolve_model
from wyoming_qwen3.model.grammar import GRAMMAR_FILE, Grammar, GrammarError
from wyoming_qwen3.server.turn import TurnSettings

DEMO = Grammar.load(resolve_model("demo", [], Path(".")).path)


def test_the_demo_grammar_has_every_command_whole_and_none_of_their_beginnings() -> None:
    assert DEMO is not None and DEMO.language == "English"
    texts = [c.text for c in commands(200, False, seed=9)] + [t for t, _ in heldout_utterances(100, seed=2)]
    for text in texts:
        words = text.split()
        assert DEMO.is_command(text) and DEMO.is_command(text.capitalize() + "."), text
        for end in range(1, len(words)):
            assert not DEMO.is_command(" ".join(words[:end])), " ".join(words[:end])


def test_with_a_grammar_complete_means_one_of_its_commands_in_its_language() -> None:
    turn = TurnSettings(grammar=DEMO)
    assert turn.sounds_complete(Speculation("open the dining room curtains", "English", 0.9))
    assert not turn.sounds_complete(Speculation("open the dining room", "English", 0.9))
    assert not turn.sounds_complete(Speculation("open the dining room curtains", "English", 0.2))  # and the rule
    # Another language than the grammar's is judged by the rule alone.
    assert turn.sounds_complete(Speculation("stoppe die Musik", "German", 0.9))
    assert TurnSettings().sounds_complete(Speculation("open the dining room", "English", 0.9))


@pytest.mark.parametrize(
    "content, message",
    [
        ("[]", "not an object"),
        ('{"templates": ["a"], "slots": {}}', "'language'"),
        ('{"language": "English", "templates": "turn on", "slots": {}}', "'templates'"),
        ('{"language": "English", "templates": ["x"], "slots": {"area": "kitchen"}}', "'slots'"),
        ('{"language": "English", "templates": ["turn on {room}"], "slots": {}}', "no values: room"),
        ('{"language": "English", "templates": ["set {number}%"], "slots": {"number": ["one"]}}', "word of its own"),
        ("{", "Expecting property name"),
    ],
)
def test_a_bad_grammar_file_is_refused_in_one_line(tmp_path: Path, content: str, message: str) -> None:
    (tmp_path / GRAMMAR_FILE).write_text(content)
    with pytest.raises(GrammarError, match=message) as raised:
        Grammar.load(tmp_path)
    assert str(tmp_path / GRAMMAR_FILE) in str(raised.value) and "\n" not in str(raised.value)


def test_a_folder_without_a_grammar_has_none(tmp_path: Path) -> None:
    assert Grammar.load(tmp_path) is None
    (tmp_path / GRAMMAR_FILE).write_text(json.dumps({"language": "English", "templates": ["stop"], "slots": {}}))
    grammar = Grammar.load(tmp_path)
    assert grammar is not None and grammar.is_command("Stop!") and not grammar.is_command("stop it")
