"""Command-line options; every option can also come from the environment.

``--some-option`` reads ``WYOMING_QWEN3_SOME_OPTION`` when it is not given on
the command line, which is how containers and add-ons configure the server.
"""

from __future__ import annotations

import argparse
import logging
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from . import __version__
from .handler import HandlerConfig
from .languages import AUTO_LANGUAGE
from .models import DEFAULT_MODEL, STREAMING_ENCODER_WINDOW
from .simulkv import SimulKvSettings

#: The defaults, from the one place each is set.
STREAMING = SimulKvSettings()
SERVING = HandlerConfig()

ENV_PREFIX = "WYOMING_QWEN3_"
_TRUE = {"1", "true", "yes", "on"}
BACKENDS = ("auto", "simulkv", "mlx")


def env_name(flag: str) -> str:
    """``--data-dir`` -> ``WYOMING_QWEN3_DATA_DIR``."""
    return ENV_PREFIX + flag.lstrip("-").replace("-", "_").upper()


def _add(parser: argparse.ArgumentParser, environ: Mapping[str, str], flag: str, **kwargs: Any) -> None:
    """Add an option whose default comes from its environment variable, if set."""
    name = env_name(flag)
    kwargs["help"] = f"{kwargs.get('help', '')} [env: {name}]".strip()
    value = environ.get(name)
    if value is not None:
        action = kwargs.get("action")
        if action == "store_true":
            kwargs["default"] = value.strip().lower() in _TRUE
        elif action == "append":
            # argparse converts string defaults with ``type``, but not lists.
            convert = kwargs.get("type", str)
            kwargs["default"] = [convert(part) for part in value.split(os.pathsep) if part]
        elif kwargs.get("nargs") == "?" and value.strip().lower() in _TRUE:
            kwargs["default"] = kwargs["const"]
        else:
            kwargs["default"] = value
    parser.add_argument(flag, **kwargs)


def build_parser(environ: Mapping[str, str] | None = None) -> argparse.ArgumentParser:
    """The parser, with defaults taken from ``environ`` (os.environ by default)."""
    env = os.environ if environ is None else environ
    parser = argparse.ArgumentParser(
        prog="wyoming-qwen3",
        description="Wyoming speech-to-text server for Qwen3-ASR, streaming partial transcripts.",
        epilog=f"Every option can also be set from the environment as {ENV_PREFIX}<OPTION>.",
    )
    _add(parser, env, "--uri", default="tcp://0.0.0.0:10300", help="tcp://HOST:PORT, unix://PATH or stdio://")
    _add(
        parser, env, "--model", default=DEFAULT_MODEL, help=f"catalogue name or local folder (default: {DEFAULT_MODEL})"
    )
    _add(parser, env, "--backend", default="auto", choices=BACKENDS, help="speech backend (default: auto)")
    _add(parser, env, "--device", default="auto", help="torch device: auto, cpu, cuda, cuda:N or mps (default: auto)")
    _add(
        parser,
        env,
        "--dtype",
        default="auto",
        choices=("auto", "float32", "bfloat16", "float16"),
        help="weights and activations: auto is bfloat16 on CUDA cards that compute it natively, float16 on "
        "other CUDA cards, float32 on CPU and MPS (default: auto)",
    )
    _add(
        parser,
        env,
        "--quantize",
        default="none",
        choices=("none", "int8"),
        help="int8: dynamic int8 weights for the decoder's Linear layers, CPU only; about 3x faster decoding "
        "(see the README for what was measured) (default: none)",
    )
    _add(
        parser,
        env,
        "--threads",
        type=int,
        default=0,
        help="CPU threads for torch (default: 0, torch's choice: one per core)",
    )
    _add(
        parser,
        env,
        "--language",
        default=AUTO_LANGUAGE,
        help="default language code, or auto to detect (default: auto)",
    )
    _add(parser, env, "--context", default="", help="names and terms to bias every transcript toward")
    _add(
        parser,
        env,
        "--zeroconf",
        nargs="?",
        const="qwen3-asr",
        default=None,
        metavar="NAME",
        help="announce over zeroconf, with an optional service name (default name: qwen3-asr)",
    )
    _add(
        parser,
        env,
        "--data-dir",
        action="append",
        type=Path,
        help="folder to look for downloaded models in (repeatable)",
    )
    _add(parser, env, "--download-dir", type=Path, help="folder to download models into (default: first data dir)")
    _add(
        parser,
        env,
        "--alignment-heads",
        type=Path,
        help="alignment heads JSON for the simulkv backend (default: alignment_heads.json in the model "
        "folder, else every head of the upper half of the decoder layers)",
    )
    _add(
        parser,
        env,
        "--border-seconds",
        type=float,
        help="simulkv: a token looking at the last this-many seconds of audio waits for more "
        "(default: the heads file's border_seconds, else 0.5)",
    )
    _add(
        parser,
        env,
        "--min-probability",
        type=float,
        help="simulkv: a token the model gives less than this probability waits for more audio "
        "(default: the heads file's min_probability, else 0: off)",
    )
    _add(
        parser,
        env,
        "--encoder-window",
        type=float,
        metavar="SECONDS",
        help="simulkv: audio encoder attention window, whole seconds up to the model's own (default: "
        f"{STREAMING_ENCODER_WINDOW:g} s for the catalogue's Qwen3-ASR models, else the model's own); "
        "shorter windows make each streaming step cheaper",
    )
    _add(
        parser,
        env,
        "--stream-window",
        type=float,
        default=STREAMING.stream_window_seconds,
        metavar="SECONDS",
        help="simulkv: audio a streaming step looks at; beyond it whole encoder windows leave the front with "
        f"the text heard in them, so a step's cost stops growing (default: {STREAMING.stream_window_seconds:g})",
    )
    _add(
        parser,
        env,
        "--step-seconds",
        type=float,
        default=STREAMING.step_seconds,
        metavar="SECONDS",
        help=f"simulkv: new audio that starts a streaming step; longer steps cost less compute per second of "
        f"audio, and partial words come later (default: {STREAMING.step_seconds:g})",
    )
    # Benchmarks only (script/benchmark latency --shape 0.6b): random weights decode on a schedule.
    parser.add_argument("--scripted-tokens-per-second", type=float, help=argparse.SUPPRESS)
    _add(
        parser,
        env,
        "--max-audio-seconds",
        type=float,
        default=SERVING.max_audio_seconds,
        help="longest utterance transcribed; a stream's cost per second is bounded (--stream-window) "
        f"(default: {SERVING.max_audio_seconds:g})",
    )
    _add(
        parser,
        env,
        "--audio-timeout",
        type=float,
        default=SERVING.audio_timeout_seconds,
        help=f"seconds without audio after which a stream is finished (default: {SERVING.audio_timeout_seconds:g})",
    )
    _add(
        parser,
        env,
        "--idle-timeout",
        type=float,
        default=SERVING.idle_timeout_seconds,
        help="seconds without an event after which a connection with no stream is closed "
        f"(default: {SERVING.idle_timeout_seconds:g}; Home Assistant sends describe every 30 s)",
    )
    _add(
        parser,
        env,
        "--event-timeout",
        type=float,
        default=SERVING.event_timeout_seconds,
        help="seconds an event may take to arrive once it began, else the connection is closed "
        f"(default: {SERVING.event_timeout_seconds:g})",
    )
    _add(
        parser,
        env,
        "--emission-log",
        type=Path,
        metavar="FILE_OR_DIR",
        help="write one JSON line per unit of text sent (text, speech seconds, wall time, final) to FILE, "
        "or to one file per utterance in an existing DIR",
    )
    _add(parser, env, "--debug", action="store_true", help="log DEBUG messages")
    _add(parser, env, "--log-format", default=logging.BASIC_FORMAT, help="format of log messages")
    parser.add_argument("--version", action="version", version=__version__)
    return parser


def parse_args(argv: list[str] | None = None, environ: Mapping[str, str] | None = None) -> argparse.Namespace:
    """Parse and fill in derived defaults (data and download folders)."""
    parser = build_parser(environ)
    args = parser.parse_args(argv)
    if not args.data_dir:
        args.data_dir = [Path.home() / ".cache" / "wyoming-qwen3"]
    if args.download_dir is None:
        args.download_dir = args.data_dir[0]
    for value, flag in (
        (args.max_audio_seconds, "--max-audio-seconds"),
        (args.stream_window, "--stream-window"),
        (args.step_seconds, "--step-seconds"),
        (args.audio_timeout, "--audio-timeout"),
        (args.idle_timeout, "--idle-timeout"),
        (args.event_timeout, "--event-timeout"),
    ):
        if value <= 0:
            parser.error(f"{flag} must be greater than zero")
    if args.threads < 0:
        parser.error("--threads must not be negative")
    if args.border_seconds is not None and args.border_seconds < 0:
        parser.error("--border-seconds must not be negative")
    if args.min_probability is not None and not 0 <= args.min_probability <= 1:
        parser.error("--min-probability must be from 0 to 1")
    return args
