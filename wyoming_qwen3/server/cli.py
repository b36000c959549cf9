"""Command-line options; every option can also come from the environment.

``--some-option`` reads ``WYOMING_QWEN3_SOME_OPTION`` when it is not given on
the command line, which is how containers and add-ons configure the server. An
environment value meets the same checks as the flag (type, choices, range), and
a bad one stops the server with one line that names the variable.
"""

from __future__ import annotations

import argparse
import logging
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from .. import __version__
from ..backends.loading import BACKENDS
from ..backends.simulkv.settings import SimulKvSettings
from ..model.catalogue import DEFAULT_MODEL, DEMO_NAMES_BYTES, QWEN3_ASR_NAMES_BYTES, STREAMING_ENCODER_WINDOW
from ..model.languages import AUTO_LANGUAGE
from .settings import HandlerConfig
from .stream.turn import TurnSettings

#: The defaults, from the one place each is set.
STREAMING = SimulKvSettings()
SERVING = HandlerConfig()
TURN = TurnSettings()

ENV_PREFIX = "WYOMING_QWEN3_"
_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off", ""}


def env_name(flag: str) -> str:
    """``--data-dir`` -> ``WYOMING_QWEN3_DATA_DIR``."""
    return ENV_PREFIX + flag.lstrip("-").replace("-", "_").upper()


def build_parser() -> argparse.ArgumentParser:
    """The parser; every option's help names its environment variable."""
    parser = argparse.ArgumentParser(
        prog="wyoming-qwen3",
        description="Wyoming speech-to-text server for Qwen3-ASR, streaming partial transcripts.",
        epilog=f"Every option can also be set from the environment as {ENV_PREFIX}<OPTION>.",
    )

    def add(flag: str, **kwargs: Any) -> None:
        kwargs["help"] = f"{kwargs.get('help', '')} [env: {env_name(flag)}]".strip()
        parser.add_argument(flag, **kwargs)

    add("--uri", default="tcp://0.0.0.0:10300", help="tcp://HOST:PORT, unix://PATH or stdio://")
    add("--model", default=DEFAULT_MODEL, help=f"catalogue name or local folder (default: {DEFAULT_MODEL})")
    add("--backend", default="auto", choices=BACKENDS, help="speech backend (default: auto)")
    add("--device", default="auto", help="torch device: auto, cpu, cuda, cuda:N or mps (default: auto)")
    add(
        "--dtype",
        default="auto",
        choices=("auto", "float32", "bfloat16", "float16"),
        help="weights and activations: auto is bfloat16 on CUDA cards that compute it natively, float16 on "
        "other CUDA cards, float32 on CPU and MPS (default: auto)",
    )
    add(
        "--quantize",
        default="auto",
        choices=("auto", "none", "int8"),
        help="int8: dynamic int8 weights for the decoder's Linear layers, CPU in float32 only, about 2x faster "
        "steps; auto: int8 on a CPU in float32, none on CUDA and MPS; the startup log says which "
        "(docs/performance.md) (default: auto)",
    )
    add(
        "--threads",
        type=int,
        default=0,
        help="CPU threads for torch (default: 0: one for a model under 50 M parameters, else torch's choice: one "
        "per core)",
    )
    add("--language", default=AUTO_LANGUAGE, help="default language code, or auto to detect (default: auto)")
    add("--context", default="", help="names and terms to bias every transcript toward")
    add(
        "--ha-url",
        metavar="URL",
        help="Home Assistant's URL (http://homeassistant.local:8123, or a websocket URL such as the add-on's "
        "ws://supervisor/core/websocket): the names and aliases of the entities exposed to Assist, and the areas "
        "and floors, are read from it and put in the context of every command whose client sends no names",
    )
    add("--ha-token", metavar="TOKEN", help="a long-lived access token of a Home Assistant administrator")
    add("--ha-token-file", type=Path, metavar="FILE", help="a file holding that token, to keep it off the command line")
    add(
        "--ha-names-bytes",
        type=int,
        metavar="BYTES",
        help=f"how much of the home's names a context holds (default: the model's: {QWEN3_ASR_NAMES_BYTES} for "
        f"Qwen3-ASR, {DEMO_NAMES_BYTES} for the demo model); every byte costs each streaming step "
        "(docs/performance.md)",
    )
    add(
        "--zeroconf",
        nargs="?",
        const="qwen3-asr",
        default=None,
        metavar="NAME",
        help="announce over zeroconf, with an optional service name (default name: qwen3-asr; "
        "from the environment: true, false or a name)",
    )
    add(
        "--data-dir",
        action="append",
        type=Path,
        help=f"folder to look for downloaded models in (repeatable; from the environment: separated by {os.pathsep})",
    )
    add("--download-dir", type=Path, help="folder to download models into (default: first data dir)")
    add(
        "--alignment-heads",
        type=Path,
        help="alignment heads JSON for the simulkv backend (default: alignment_heads.json in the model "
        "folder, else the catalogue's measured heads, else every head of the upper half of the decoder layers)",
    )
    add(
        "--border-seconds",
        type=float,
        help="simulkv: a token looking at the last this-many seconds of audio waits for more "
        "(default: the heads file's border_seconds, else 0.5)",
    )
    add(
        "--min-probability",
        type=float,
        help="simulkv: a token the model gives less than this probability waits for more audio "
        "(default: the heads file's min_probability, else 0: off)",
    )
    add(
        "--encoder-window",
        type=float,
        metavar="SECONDS",
        help="simulkv: audio encoder attention window, whole seconds up to the model's own (default: "
        f"{STREAMING_ENCODER_WINDOW:g} s for the catalogue's Qwen3-ASR models, else the model's own); "
        "shorter windows make each streaming step cheaper",
    )
    add(
        "--stream-window",
        type=float,
        default=STREAMING.stream_window_seconds,
        metavar="SECONDS",
        help="simulkv: audio a streaming step looks at; beyond it whole encoder windows leave the front with "
        f"the text heard in them, so a step's cost stops growing (default: {STREAMING.stream_window_seconds:g})",
    )
    add(
        "--step-seconds",
        type=float,
        default=STREAMING.step_seconds,
        metavar="SECONDS",
        help=f"simulkv: new audio that starts a streaming step; longer steps cost less compute per second of "
        f"audio, and partial words come later (default: {STREAMING.step_seconds:g})",
    )
    add(
        "--max-batch",
        type=int,
        default=STREAMING.max_batch,
        metavar="STREAMS",
        help="simulkv: most streams whose next tokens are decoded as one batch when several people speak at once; "
        f"1 decodes every stream alone (default: {STREAMING.max_batch})",
    )
    add(
        "--max-audio-seconds",
        type=float,
        default=SERVING.limits.max_audio_seconds,
        help="longest utterance transcribed; a stream's cost per second is bounded (--stream-window) "
        f"(default: {SERVING.limits.max_audio_seconds:g})",
    )
    add(
        "--audio-timeout",
        type=float,
        default=SERVING.limits.audio_timeout_seconds,
        help="seconds without audio after which a stream is finished "
        f"(default: {SERVING.limits.audio_timeout_seconds:g})",
    )
    add(
        "--idle-timeout",
        type=float,
        default=SERVING.idle_timeout_seconds,
        help="seconds without an event after which a connection with no stream is closed "
        f"(default: {SERVING.idle_timeout_seconds:g}; Home Assistant sends describe every 30 s)",
    )
    add(
        "--event-timeout",
        type=float,
        default=SERVING.event_timeout_seconds,
        help="seconds an event may take to arrive once it began, else the connection is closed "
        f"(default: {SERVING.event_timeout_seconds:g})",
    )
    add(
        "--speculate",
        action=argparse.BooleanOptionalAction,
        default=TURN.speculate,
        help="run the final pass while the client streams the silence after a command, so that the transcript "
        f"is ready at audio-stop; thrown away if speech resumes (default: {'on' if TURN.speculate else 'off'})",
    )
    add(
        "--endpointing",
        action=argparse.BooleanOptionalAction,
        default=TURN.endpointing,
        help="end the turn here and send the transcript before audio-stop: Home Assistant then runs no VAD of its "
        "own (requires_external_vad false); see the README for its caveat (default: "
        f"{'on' if TURN.endpointing else 'off'})",
    )
    add(
        "--endpoint-silence",
        type=float,
        default=TURN.complete_silence_seconds,
        metavar="SECONDS",
        help="endpointing: silence that ends a turn whose text sounds complete "
        f"(default: {TURN.complete_silence_seconds:g})",
    )
    add(
        "--endpoint-max-silence",
        type=float,
        default=TURN.incomplete_silence_seconds,
        metavar="SECONDS",
        help="endpointing: silence that ends a turn whose text does not sound complete "
        f'("set a timer for"; default: {TURN.incomplete_silence_seconds:g})',
    )
    add(
        "--endpoint-continues-silence",
        type=float,
        default=TURN.continues_silence_seconds,
        metavar="SECONDS",
        help='endpointing: silence that ends a whole command that a longer one begins with ("turn on the kitchen" '
        f'... "lights"; default: {TURN.continues_silence_seconds:g})',
    )
    add(
        "--emission-log",
        type=Path,
        metavar="FILE_OR_DIR",
        help="write one JSON line per unit of text sent (text, speech seconds, wall time, final) to FILE, "
        "or to one file per utterance in an existing DIR",
    )
    add("--debug", action="store_true", help="log DEBUG messages")
    add("--log-format", default=logging.BASIC_FORMAT, help="format of log messages")
    parser.add_argument("--version", action="version", version=__version__)
    return parser


def _convert(action: argparse.Action, text: str) -> Any:
    """One environment value as the flag would take it: its type, then its choices."""
    try:
        value = action.type(text) if callable(action.type) else text
    except (TypeError, ValueError) as err:
        kind = getattr(action.type, "__name__", "value")
        raise ValueError(f"not a valid {kind}") from err
    if action.choices is not None and value not in action.choices:
        raise ValueError(f"choose from {', '.join(map(str, action.choices))}")
    return value


def _from_environment(action: argparse.Action, text: str) -> Any:
    """The value an environment variable gives the option of ``action``; ValueError when it cannot."""
    flag = text.strip().lower()
    if isinstance(action, argparse._StoreTrueAction | argparse.BooleanOptionalAction):
        if flag in _TRUE | _FALSE:
            return flag in _TRUE
        raise ValueError(f"use one of {', '.join(sorted(_TRUE | _FALSE - {''}))}")
    if action.nargs == "?":  # a switch with an optional value: true, false, or the value
        if flag in _TRUE:
            return action.const
        if flag in _FALSE:
            return None
        return _convert(action, text.strip())
    if isinstance(action, argparse._AppendAction):
        return [_convert(action, part) for part in text.split(os.pathsep) if part]
    return _convert(action, text)


def parse_args(argv: list[str] | None = None, environ: Mapping[str, str] | None = None) -> argparse.Namespace:
    """Parse the command line over the environment's values, check both, and fill in derived defaults."""
    env = os.environ if environ is None else environ
    parser = build_parser()
    from_env: dict[str, tuple[str, Any]] = {}
    for action in parser._actions:
        if not action.option_strings or action.dest in ("help", "version"):
            continue
        name = env_name(action.option_strings[0])
        if name not in env:
            continue
        try:
            value = _from_environment(action, env[name])
        except ValueError as err:
            parser.error(f"{name}={env[name]!r}: {err}")
        from_env[action.dest] = (name, value)
    parser.set_defaults(**{dest: value for dest, (_, value) in from_env.items()})
    args = parser.parse_args(argv)

    def fail(dest: str, problem: str) -> None:
        name, value = from_env.get(dest, (None, None))
        where = f"{name}" if name is not None and getattr(args, dest) is value else "--" + dest.replace("_", "-")
        parser.error(f"{where} {problem}")

    for dest in (
        "max_audio_seconds",
        "stream_window",
        "step_seconds",
        "max_batch",
        "audio_timeout",
        "idle_timeout",
        "event_timeout",
        "endpoint_silence",
        "endpoint_max_silence",
        "endpoint_continues_silence",
    ):
        if getattr(args, dest) <= 0:
            fail(dest, "must be greater than zero")
    if args.threads < 0:
        fail("threads", "must not be negative")
    if args.ha_names_bytes is not None and args.ha_names_bytes <= 0:
        fail("ha_names_bytes", "must be greater than zero")
    if args.ha_token is not None and args.ha_token_file is not None:
        fail("ha_token", "and --ha-token-file are one token: give one of them")
    if args.ha_url and args.ha_token is None and args.ha_token_file is None:
        fail("ha_url", "needs the token to read Home Assistant with: --ha-token or --ha-token-file")
    if not args.ha_url and (args.ha_token is not None or args.ha_token_file is not None):
        fail(
            "ha_token" if args.ha_token is not None else "ha_token_file", "needs --ha-url, the Home Assistant it opens"
        )
    if args.border_seconds is not None and args.border_seconds < 0:
        fail("border_seconds", "must not be negative")
    if args.min_probability is not None and not 0 <= args.min_probability <= 1:
        fail("min_probability", "must be from 0 to 1")
    env_dirs = from_env.get("data_dir", (None, None))[1]
    if env_dirs is not None and args.data_dir is not env_dirs:
        args.data_dir = args.data_dir[len(env_dirs) :]  # given on the command line too: it wins
    if not args.data_dir:
        args.data_dir = [Path.home() / ".cache" / "wyoming-qwen3"]
    if args.download_dir is None:
        args.download_dir = args.data_dir[0]
    return args
