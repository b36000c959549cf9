"""The command line: help, environment variables, and clear startup errors."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tools import offline
from wyoming_qwen3.backends.simulkv.settings import AlignmentHeads, AlignmentPolicy
from wyoming_qwen3.server.cli import build_parser, env_name, parse_args

ROOT = Path(__file__).resolve().parent.parent


def run_cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "wyoming_qwen3", *args],
        capture_output=True,
        text=True,
        timeout=120,
        env={"PATH": "/usr/bin:/bin", "HF_HUB_OFFLINE": "1", "HOME": str(ROOT), **(env or {})},
    )


def every_option() -> list[str]:
    return [a.option_strings[0] for a in build_parser()._actions if a.dest not in ("help", "version")]


def test_help_lists_every_option_with_its_environment_variable() -> None:
    result = subprocess.run([str(ROOT / "script" / "run"), "--help"], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    flags = every_option()
    assert len(flags) >= 25
    help_text = result.stdout.replace("\n", "").replace(" ", "")
    for flag in flags:
        assert flag in result.stdout
        assert f"[env:{env_name(flag)}]" in help_text, flag


#: Every option from the environment: the value set, and what the option becomes.
ENVIRONMENT = {
    "--uri": ("tcp://127.0.0.1:1234", "tcp://127.0.0.1:1234"),
    "--model": ("demo", "demo"),
    "--backend": ("simulkv", "simulkv"),
    "--device": ("cpu", "cpu"),
    "--dtype": ("bfloat16", "bfloat16"),
    "--quantize": ("int8", "int8"),
    "--threads": ("3", 3),
    "--language": ("de", "de"),
    "--context": ("Küche, Wohnzimmer", "Küche, Wohnzimmer"),
    "--ha-url": ("http://homeassistant.local:8123", "http://homeassistant.local:8123"),
    "--ha-token": ("abc.def", "abc.def"),
    "--ha-names-bytes": ("1000", 1000),
    "--zeroconf": ("1", "qwen3-asr"),
    "--data-dir": (f"/a{os.pathsep}/b", [Path("/a"), Path("/b")]),
    "--download-dir": ("/c", Path("/c")),
    "--alignment-heads": ("/h.json", Path("/h.json")),
    "--border-seconds": ("0.7", 0.7),
    "--min-probability": ("0.9", 0.9),
    "--encoder-window": ("4", 4.0),
    "--stream-window": ("8", 8.0),
    "--step-seconds": ("1", 1.0),
    "--max-batch": ("4", 4),
    "--max-audio-seconds": ("12.5", 12.5),
    "--audio-timeout": ("3", 3.0),
    "--idle-timeout": ("30", 30.0),
    "--event-timeout": ("2", 2.0),
    "--speculate": ("false", False),
    "--endpointing": ("true", True),
    "--endpoint-silence": ("0.4", 0.4),
    "--endpoint-max-silence": ("1.5", 1.5),
    "--endpoint-continues-silence": ("0.9", 0.9),
    "--emission-log": ("/tmp/e.jsonl", Path("/tmp/e.jsonl")),
    "--debug": ("true", True),
    "--log-format": ("%(message)s", "%(message)s"),
}


#: Options that stand for another one of the table: each is read on its own, with what it needs.
INSTEAD = {"--ha-token-file": ("/run/secrets/ha-token", Path("/run/secrets/ha-token"), {"--ha-url": "http://ha:8123"})}


def test_every_option_comes_from_the_environment() -> None:
    assert sorted([*ENVIRONMENT, *INSTEAD]) == sorted(every_option()), "a new option needs a row here"
    for flag, (text, expected, needed) in INSTEAD.items():
        alone = parse_args([], {env_name(flag): text, **{env_name(f): value for f, value in needed.items()}})
        assert getattr(alone, flag[2:].replace("-", "_")) == expected, flag
    environ = {env_name(flag): text for flag, (text, _) in ENVIRONMENT.items()}
    args = parse_args([], environ)
    for flag, (_, expected) in ENVIRONMENT.items():
        assert getattr(args, flag[2:].replace("-", "_")) == expected, flag
    # The command line wins over the environment, data folders included.
    given = parse_args(["--uri", "stdio://", "--data-dir", "/d"], environ)
    assert given.uri == "stdio://" and given.data_dir == [Path("/d")]


@pytest.mark.parametrize(
    ("text", "expected"), [("false", None), ("0", None), ("off", None), ("true", "qwen3-asr"), ("kitchen", "kitchen")]
)
def test_zeroconf_from_the_environment_is_a_switch_or_a_name(text: str, expected: str | None) -> None:
    assert parse_args([], {"WYOMING_QWEN3_ZEROCONF": text}).zeroconf == expected


@pytest.mark.parametrize(
    ("variable", "text", "message"),
    [
        ("WYOMING_QWEN3_DTYPE", "fp16", "choose from auto, float32, bfloat16, float16"),
        ("WYOMING_QWEN3_QUANTIZE", "int4", "choose from auto, none, int8"),
        ("WYOMING_QWEN3_BACKEND", "MLX", "choose from auto, simulkv, mlx"),
        ("WYOMING_QWEN3_THREADS", "many", "not a valid int"),
        ("WYOMING_QWEN3_DEBUG", "maybe", "use one of"),
        ("WYOMING_QWEN3_STEP_SECONDS", "0", "must be greater than zero"),
        ("WYOMING_QWEN3_ENDPOINT_SILENCE", "0", "must be greater than zero"),
        ("WYOMING_QWEN3_ENDPOINT_MAX_SILENCE", "-1", "must be greater than zero"),
        ("WYOMING_QWEN3_MIN_PROBABILITY", "2", "must be from 0 to 1"),
        ("WYOMING_QWEN3_ENDPOINTING", "sometimes", "use one of"),
    ],
)
def test_a_bad_environment_value_stops_with_one_line_naming_the_variable(
    variable: str, text: str, message: str
) -> None:
    result = run_cli(env={variable: text})
    assert result.returncode == 2
    (line,) = [line for line in result.stderr.splitlines() if line.startswith("wyoming-qwen3: error")]
    assert variable in line and message in line, result.stderr
    assert "Traceback" not in result.stderr


def test_unknown_language_exits_with_a_message_and_no_traceback(tiny_model: Path) -> None:
    result = run_cli("--model", str(tiny_model), "--language", "klingon")
    assert result.returncode == 2
    assert "Unknown language 'klingon'" in result.stderr
    assert "Traceback" not in result.stderr


def test_language_the_model_does_not_speak_is_refused_at_startup(tiny_model: Path) -> None:
    result = run_cli("--model", str(tiny_model), "--language", "de", "--device", "cpu")
    assert result.returncode == 2
    assert "Unknown language 'de'; this model supports: auto, en" in result.stderr
    assert "Traceback" not in result.stderr


def test_unknown_model_exits_with_a_message_and_no_traceback() -> None:
    result = run_cli("--model", "Qwen/No-Such-Model")
    assert result.returncode == 2
    assert "Unknown model 'Qwen/No-Such-Model'" in result.stderr
    assert "Traceback" not in result.stderr


def test_folder_that_is_not_a_model_is_refused(tmp_path: Path) -> None:
    result = run_cli("--model", str(tmp_path))
    assert result.returncode == 2
    assert "is not a model folder" in result.stderr


def test_zeroconf_needs_tcp(tiny_model: Path, tmp_path: Path) -> None:
    result = run_cli("--model", str(tiny_model), "--device", "cpu", "--uri", f"unix://{tmp_path}/s", "--zeroconf")
    assert result.returncode == 2
    assert "--zeroconf needs a tcp:// --uri" in result.stderr


def test_encoder_window_the_model_does_not_know_is_refused_at_startup(tiny_model: Path) -> None:
    result = run_cli("--model", str(tiny_model), "--device", "cpu", "--encoder-window", "1.5")
    assert result.returncode == 2
    assert "--encoder-window must be a multiple of 1 s up to 2 s, not 1.5 s" in result.stderr
    assert "Traceback" not in result.stderr


def test_model_folder_may_be_given_relative_to_the_working_directory(tiny_model: Path) -> None:
    from wyoming_qwen3.model.catalogue import resolve_model

    relative = Path(os.path.relpath(tiny_model))
    resolved = resolve_model(str(relative), [], Path("."))
    assert resolved.path == relative and resolved.url == tiny_model.resolve().as_uri()


@pytest.mark.parametrize("value", ["-0.1", "1.5"])
def test_a_least_probability_outside_0_to_1_is_refused(value: str) -> None:
    with pytest.raises(SystemExit):
        parse_args(["--min-probability", value], {})


@pytest.mark.parametrize(
    "flag", ["--step-seconds", "--stream-window", "--max-audio-seconds", "--endpoint-silence", "--endpoint-max-silence"]
)
def test_a_length_of_zero_is_refused(flag: str) -> None:
    with pytest.raises(SystemExit):
        parse_args([flag, "0"], {})


def test_streaming_defaults_are_the_backends_and_the_catalogues() -> None:
    from wyoming_qwen3.backends.simulkv.settings import SimulKvSettings
    from wyoming_qwen3.model.catalogue import resolve_model
    from wyoming_qwen3.server.settings import HandlerConfig

    args = parse_args([], {})
    assert args.step_seconds == SimulKvSettings().step_seconds
    assert args.stream_window == SimulKvSettings().stream_window_seconds
    assert args.max_audio_seconds == HandlerConfig().limits.max_audio_seconds
    assert args.encoder_window is None  # the catalogue's, or the model's own
    assert resolve_model("demo", [], Path(".")).encoder_window_seconds is None  # the demo keeps its 8 s


def test_policy_thresholds_come_from_the_flags_then_the_heads_file_then_the_defaults() -> None:
    tuned = AlignmentHeads(((0, 0),), border_seconds=2.0, min_probability=0.9)
    assert AlignmentPolicy.for_model(None) == AlignmentPolicy()
    assert AlignmentPolicy.for_model(tuned) == AlignmentPolicy(border_seconds=2.0, min_probability=0.9)
    flags = parse_args(["--border-seconds", "1", "--min-probability", "0"], {})
    assert AlignmentPolicy.for_model(tuned, flags.border_seconds, flags.min_probability) == AlignmentPolicy(
        border_seconds=1.0, min_probability=0.0
    )


def test_int8_is_refused_off_the_cpu_at_startup(tiny_model: Path) -> None:
    result = run_cli("--model", str(tiny_model), "--device", "cpu", "--dtype", "float16", "--quantize", "int8")
    assert result.returncode == 2
    assert "int8 weights are for the CPU in float32" in result.stderr
    assert "Traceback" not in result.stderr


def test_int8_weights_load_and_transcribe(scripted_model: Path) -> None:
    import numpy as np
    import torch

    from wyoming_qwen3.model.qwen import QwenAsrModel

    full = QwenAsrModel.load(scripted_model, "cpu")
    small = QwenAsrModel.load(scripted_model, "cpu", quantize="int8")
    linear = small.decoder.layers[0].self_attn.q_proj
    assert isinstance(linear, torch.ao.nn.quantized.dynamic.Linear)
    assert isinstance(small.model.lm_head, torch.ao.nn.quantized.dynamic.Linear)
    audio = np.random.default_rng(0).normal(0, 0.1, 3 * 16000).astype(np.float32)
    # The scripted model's answer is carried by its weights; int8 must keep it.
    expected = offline.transcribe(full, audio, language="English").text
    assert expected and offline.transcribe(small, audio, language="English").text == expected


def test_an_emission_log_that_cannot_be_written_is_refused_at_startup(tiny_model: Path, tmp_path: Path) -> None:
    target = tmp_path / "missing" / "emissions.jsonl"
    result = run_cli("--model", str(tiny_model), "--device", "cpu", "--emission-log", str(target))
    assert result.returncode == 2
    assert f"--emission-log: {target.parent} is not a folder" in result.stderr
    assert "Traceback" not in result.stderr and "Loading" not in result.stderr  # refused before the model loads


def test_a_folder_in_the_original_layout_is_refused_with_what_to_download(tmp_path: Path) -> None:
    """Qwen/Qwen3-ASR-0.6B as qwen-asr and the mlx backend read it: transformers loads the -hf repos."""
    (tmp_path / "config.json").write_text('{"model_type": "qwen3_asr", "thinker_config": {}}')
    result = run_cli("--model", str(tmp_path), "--device", "cpu")
    assert result.returncode == 2
    (line,) = [line for line in result.stderr.splitlines() if line.startswith("wyoming-qwen3: error")]
    assert "original (qwen-asr) layout" in line and "Qwen/Qwen3-ASR-0.6B-hf" in line
    assert "Traceback" not in result.stderr


def ready_log(*args: str) -> str:
    """The server's log from start to "Ready", started as the README says (script/run)."""
    from tools.server_process import free_port

    command = [str(ROOT / "script" / "run"), "--uri", f"tcp://127.0.0.1:{free_port()}", *args]
    process = subprocess.Popen(command, stderr=subprocess.PIPE, text=True, env={**os.environ, "HF_HUB_OFFLINE": "1"})
    assert process.stderr is not None
    lines: list[str] = []
    try:
        for line in process.stderr:
            lines.append(line)
            if "Ready" in line:
                break
    finally:
        process.terminate()
        process.wait(timeout=30)
    return "".join(lines)


def test_a_cpu_gets_int8_by_default_and_float32_when_asked() -> None:
    assert "on cpu (int8 decoder, float32 encoder)" in ready_log("--model", "demo")
    assert "on cpu (float32)" in ready_log("--model", "demo", "--quantize", "none")


def test_auto_quantize_is_int8_only_on_a_cpu_in_float32() -> None:
    import torch

    from wyoming_qwen3.model.qwen import select_quantize

    cpu, cuda, mps = torch.device("cpu"), torch.device("cuda"), torch.device("mps")
    assert select_quantize(cpu, torch.float32) == "int8"
    assert select_quantize(cpu, torch.float32, "none") == "none"
    assert select_quantize(cpu, torch.bfloat16) == "none"  # --dtype bfloat16 on a CPU: no int8 kernels for it
    assert select_quantize(cuda, torch.bfloat16) == "none"
    assert select_quantize(cuda, torch.float32) == "none"
    assert select_quantize(mps, torch.float32) == "none"
    with pytest.raises(ValueError, match="for the CPU in float32"):
        select_quantize(cuda, torch.float16, "int8")
