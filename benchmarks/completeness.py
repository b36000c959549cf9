"""Which signal tells a whole command from one paused mid-way: each candidate on the held-out pause corpus.

With ``--endpointing`` the server ends a turn after a short silence (0.3 s) once
the text heard sounds complete, else after a long one (1.25 s). A pause in which
the text sounds complete ends the turn early when it is longer than the short
silence and the VAD's lag (about 0.4 s): a premature end. A whole command that
does not sound complete waits the long silence: 0.95 s of latency more.

Each candidate judges what the server decides on: the early final pass over the
words before the pause and 0.3 s of the pause (``tools.pauses``: held-out
commands, voices and rates; pauses after every word, a third with "uh"/"um"),
and over each whole held-out command and 0.3 s of the room. Offline, on the
demo model as the server runs it on a CPU (int8):

- ``rule``: today's (the model's end probability >= 0.5 and a last word that can end a command);
- ``ha-grammar``: the text is a sentence of Home Assistant's own grammar (``home-assistant-intents``, read by
  ``hassil``, names and areas as wildcards: the server does not know the user's entities);
- ``model-grammar``: the text is one of the model folder's commands (``wyoming_qwen3.model.grammar``; the demo
  model's is the grammar it was trained on: a stand-in for Home Assistant's with the user's entity names);
- ``smart-turn``: Smart Turn v3.2 (pipecat-ai 1.14.0's ONNX, on the last 8 s of audio) says complete (> 0.5);
- and each with ``rule`` (both must say complete; ``rule+model-grammar`` is what the server does).

Usage: script/benchmark completeness [--limit 100] [--smart-turn-wheel pipecat_ai-1.14.0-py3-none-any.whl]
(the candidates only measured here are not the server's dependencies: ``ha-grammar`` needs
``pip install hassil home-assistant-intents``, ``smart-turn`` ``pip install onnxruntime`` and
``pip download --no-deps pipecat-ai==1.14.0``; without them those rows are skipped with a message)
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from tools.corpus import DEMO_FOLDER, corpus_home, heldout_commands
from tools.ha_client import room_noise
from tools.in_process import demo_backend
from tools.pauses import PausedCommand, pause_corpus
from tools.speech import speak
from tools.wer import normalize
from wyoming_qwen3.backends.base import SessionOptions, Speculation
from wyoming_qwen3.home.commands import Commands, CommandsUnavailableError, Templates
from wyoming_qwen3.model.format import SAMPLE_RATE
from wyoming_qwen3.model.grammar import Grammars, Judgement
from wyoming_qwen3.server.stream.turn import TurnSettings

#: What the model has heard of a pause when the endpoint decides (turn.kept_silence_seconds).
HEARD_OF_PAUSE = 0.3
#: Silero's end of speech comes about 0.1 s after the real one (73-99 ms at the median, docs/design.md).
SILERO_LAG = 0.1
#: A pause shorter than this never ends a turn: the short silence (0.3 s) and Silero's lag.
SHORTEST_ENDING_PAUSE = 0.3 + SILERO_LAG
#: Silences after a whole command that a longer one begins with, measured.
CONTINUES_SILENCES = (0.5, 0.8, 1.25)
LEAD_SECONDS = 0.3

Judge = Callable[[Speculation, np.ndarray], bool]


def ha_grammar() -> Callable[[str], bool]:
    """Whether a text is a sentence of Home Assistant's English grammar, entity names and areas as wildcards."""
    from hassil import Intents, recognize
    from hassil.intents import WildcardSlotList
    from home_assistant_intents import get_intents

    intents = Intents.from_dict(get_intents("en"))
    lists = {name: WildcardSlotList(name) for name in ("name", "area", "floor", "zone", "timer_name", "search_query")}
    return lambda text: recognize(text, intents, slot_lists=lists) is not None


class SmartTurn:
    """Smart Turn v3.2 as pipecat-ai 1.14.0 runs it (local_smart_turn_v3.py): the last 8 s, zero-padded in front,
    Whisper log-mel features normalized, the ONNX's probability that the turn is complete."""

    def __init__(self, wheel: Path, folder: Path) -> None:
        import importlib.util

        import onnxruntime

        prefix = "pipecat/audio/turn/smart_turn/"
        with zipfile.ZipFile(wheel) as archive:
            for name in ("data/smart-turn-v3.2-cpu.onnx", "_whisper_features.py"):
                (folder / Path(name).name).write_bytes(archive.read(prefix + name))
        spec = importlib.util.spec_from_file_location("_whisper_features", folder / "_whisper_features.py")
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        self._features = module.compute_whisper_log_mel_features
        options = onnxruntime.SessionOptions()
        options.inter_op_num_threads, options.intra_op_num_threads = 1, 1
        self._session = onnxruntime.InferenceSession(str(folder / "smart-turn-v3.2-cpu.onnx"), options)

    def probability(self, audio: np.ndarray) -> float:
        samples = 8 * SAMPLE_RATE
        audio = audio[-samples:]
        audio = np.pad(audio, (samples - audio.shape[0], 0)).astype(np.float32)
        features = self._features(audio, do_normalize=True)[None]
        return float(self._session.run(None, {"input_features": features})[0][0].item())


def heard(backend: Any, audio: np.ndarray) -> Speculation:  # noqa: ANN401
    """The early final pass the server runs on ``audio``: streamed in 0.5 s steps, then speculated."""
    session = backend.create_session(SessionOptions(language="English"))
    for start in range(0, audio.shape[0], SAMPLE_RATE // 2):
        session.feed(audio[start : start + SAMPLE_RATE // 2])
    speculation = session.speculate()
    assert speculation is not None
    return speculation


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--limit", type=int, default=100, help="paused commands, and as many whole ones")
    parser.add_argument("--smart-turn-wheel", type=Path, help="pipecat-ai 1.14.0's wheel, for Smart Turn v3.2")
    parser.add_argument("--json", type=Path, default=Path("local/benchmark/completeness.json"))
    args = parser.parse_args()
    args.json.parent.mkdir(parents=True, exist_ok=True)
    began = time.time()
    backend = demo_backend("int8")
    paused: list[PausedCommand] = pause_corpus(args.limit)
    heldout = heldout_commands()[: args.limit]
    cases: list[dict[str, Any]] = []
    for index, item in enumerate(paused):
        audio = np.concatenate(
            [room_noise(LEAD_SECONDS, index), item.audio[: item.pause_start + int(HEARD_OF_PAUSE * SAMPLE_RATE)]]
        )
        ends = item.pause_seconds >= SHORTEST_ENDING_PAUSE
        cases.append({"kind": "paused", "text": item.first, "ends": ends, "audio": audio, "pause": item.pause_seconds})
    for index, utterance in enumerate(heldout):
        audio = np.concatenate([room_noise(LEAD_SECONDS, index), speak(utterance["text"], utterance["voice"], 165, 50)])
        cases.append({"kind": "whole", "text": utterance["text"], "audio": audio})
    for case in cases:
        case["speculation"] = heard(backend, case["audio"])
    backend.executor.shutdown()

    rule = TurnSettings()
    grammars = Grammars.load(DEMO_FOLDER)
    grammar = grammars.of("English") if grammars is not None else None
    assert grammar is not None
    judges: dict[str, Judge] = {
        "rule": lambda s, a: rule.sounds_complete(s),
        "model-grammar": lambda s, a: grammar.is_command(s.text),
    }
    try:
        is_ha_sentence = ha_grammar()
        judges["ha-grammar"] = lambda s, a: is_ha_sentence(s.text)
    except ImportError as err:
        print(f"ha-grammar not measured: {err} (pip install hassil home-assistant-intents)", flush=True)
    try:
        smart_turn = SmartTurn(args.smart_turn_wheel, args.json.parent) if args.smart_turn_wheel else None
    except ImportError as err:
        print(f"smart-turn not measured: {err} (pip install onnxruntime)", flush=True)
        smart_turn = None
    if smart_turn is not None:
        for case in cases:
            case["smart_turn"] = smart_turn.probability(case["audio"])
        judges["smart-turn"] = lambda s, a: a > 0.5
    home_commands: Commands | None = None
    try:
        home_commands = Templates.load("en").for_home(corpus_home())
        judges["ha-home"] = lambda s, a: home_commands.judge(s.text) is not Judgement.INCOMPLETE
        judges["ha-home-final"] = lambda s, a: home_commands.judge(s.text) is Judgement.COMPLETE
    except CommandsUnavailableError as err:
        print(f"ha-home not measured: {err}", flush=True)
    for name in [n for n in judges if n != "rule"]:
        judges[f"rule+{name}"] = lambda s, a, judge=judges[name]: rule.sounds_complete(s) and judge(s, a)

    rows = []
    for name, judge in judges.items():
        verdicts = [judge(c["speculation"], c.get("smart_turn", 0.0)) for c in cases]
        paused_cases = [(c, v) for c, v in zip(cases, verdicts, strict=True) if c["kind"] == "paused"]
        whole = [(c, v) for c, v in zip(cases, verdicts, strict=True) if c["kind"] == "whole"]
        row = {
            "signal": name,
            "premature": sum(v and c["ends"] for c, v in paused_cases),
            "complete_in_a_pause": sum(v for _, v in paused_cases),
            "paused": len(paused_cases),
            "whole_judged_complete": sum(v for _, v in whole),
            "whole": len(whole),
            "premature_examples": [c["speculation"].text for c, v in paused_cases if v and c["ends"]][:8],
            "whole_missed_examples": [c["speculation"].text for c, v in whole if not v][:8],
        }
        rows.append(row)
        print(json.dumps(row), flush=True)
    turns = []
    if home_commands is not None:
        # The server's own decision (turn.TurnSettings) with Home Assistant's commands for the home, as a real
        # model is judged (no grammar.json): the silence each text gets, for a few silences after a command that
        # a longer one begins with.
        for continues in CONTINUES_SILENCES:
            settings = TurnSettings(commands=_English(home_commands), continues_silence_seconds=continues)
            turns.append(turn_row(settings, cases))
            print(json.dumps(turns[-1]), flush=True)
    heads_exact = sum(normalize(c["speculation"].text) == normalize(c["text"]) for c in cases if c["kind"] == "paused")
    print(f"the words before the pause transcribed exactly: {heads_exact} of {len(paused)}", flush=True)
    results = {
        "date": time.strftime("%Y-%m-%d"),
        "minutes": round((time.time() - began) / 60, 1),
        "words_before_the_pause_exact": heads_exact,
        "rows": rows,
        "turns_with_home_assistants_commands": turns,
    }
    args.json.write_text(json.dumps(results, indent=1) + "\n", encoding="utf-8")


@dataclass(frozen=True)
class _English:
    """One language's commands, as the turn asks for them."""

    commands: Commands

    def of(self, language: str) -> Commands | None:
        return self.commands if language == "English" else None


def turn_row(settings: TurnSettings, cases: list[dict[str, Any]]) -> dict[str, Any]:
    """What the server's endpointing does with each case: a pause ends the turn when it outlasts the silence its
    text gets (and Silero's lag); a whole command ends after that silence."""
    verdicts = [(c, settings.completeness(c["speculation"])) for c in cases]
    silences = {c["text"] + str(i): settings.silence_to_end(c["speculation"]) for i, c in enumerate(cases)}
    paused = [(c, j, silences[c["text"] + str(i)]) for i, (c, j) in enumerate(verdicts) if c["kind"] == "paused"]
    whole = [(c, j, silences[c["text"] + str(i)]) for i, (c, j) in enumerate(verdicts) if c["kind"] == "whole"]
    return {
        "continues_silence_s": settings.continues_silence_seconds,
        "paused": {j.value: sum(v is j for _, v, _ in paused) for j in Judgement},
        "premature": sum(c["pause"] >= silence + SILERO_LAG for c, _, silence in paused),
        "whole": {j.value: sum(v is j for _, v, _ in whole) for j in Judgement},
        "whole_median_end_of_speech_to_transcript_ms": round(
            1000 * statistics.median(silence + SILERO_LAG for _, _, silence in whole)
        ),
        "premature_examples": [c["speculation"].text for c, _, s in paused if c["pause"] >= s + SILERO_LAG][:8],
    }


if __name__ == "__main__":
    main()
