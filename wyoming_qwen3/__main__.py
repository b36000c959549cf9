"""Entry point: load the model, then serve Wyoming (and announce it over zeroconf)."""

from __future__ import annotations

import argparse
import asyncio
import ipaddress
import logging
import signal
import socket
import sys
import time
from functools import partial
from pathlib import Path

from wyoming.server import AsyncServer, AsyncStdioServer, AsyncTcpServer

from .alignment import ALIGNMENT_HEADS_FILE, AlignmentHeads, AlignmentPolicy
from .backend import Backend
from .cli import parse_args
from .discovery import ServiceAnnouncement, routable_address
from .handler import HandlerConfig, Qwen3EventHandler
from .info import build_info
from .languages import LANGUAGE_NAMES, UnknownLanguageError, resolve_language
from .models import ModelNotFoundError, ResolvedModel, check_backend, resolve_model

_LOGGER = logging.getLogger("wyoming_qwen3")


class StartupError(Exception):
    """A problem with the configuration, reported without a traceback."""


def choose_backend(kind: str) -> str:
    """Resolve ``auto``, and refuse mlx where it cannot run (before any download)."""
    from .mlx_backend import MlxUnavailableError, check_mlx_available, mlx_available

    if kind == "auto":
        return "mlx" if mlx_available() else "simulkv"
    if kind == "mlx":
        try:
            check_mlx_available()
        except MlxUnavailableError as err:
            raise StartupError(str(err)) from err
    return kind


def alignment_heads_path(args: argparse.Namespace, model: ResolvedModel) -> Path | None:
    """The heads file given, else the model folder's own, else the catalogue's measured one."""
    if args.alignment_heads is not None:
        return args.alignment_heads
    candidates = [model.path / ALIGNMENT_HEADS_FILE, model.heads_file]
    return next((path for path in candidates if path is not None and path.is_file()), None)


def load_alignment_heads(path: Path | None) -> AlignmentHeads | None:
    """The heads of ``path``; None for the default heads."""
    if path is None:
        return None
    try:
        return AlignmentHeads.load(path)
    except (OSError, ValueError) as err:
        raise StartupError(f"cannot read alignment heads: {err}") from err


def create_backend(kind: str, model: ResolvedModel, args: argparse.Namespace) -> Backend:
    """Load the model behind the chosen backend."""
    if kind == "mlx":
        from .mlx_backend import MlxBackend

        try:
            return MlxBackend(str(model.path))
        except Exception as err:  # the library raises many types; all mean "cannot serve"
            raise StartupError(f"mlx-qwen3-asr cannot load {model.path}: {err}") from err
    from .qwen import QwenAsrModel
    from .simulkv import SimulKvBackend, SimulKvSettings

    heads_path = alignment_heads_path(args, model)
    heads = load_alignment_heads(heads_path)
    policy = AlignmentPolicy.for_model(heads, args.border_seconds, args.min_probability)
    settings = SimulKvSettings(
        policy=policy,
        step_seconds=args.step_seconds,
        stream_window_seconds=args.stream_window,
        scripted_tokens_per_second=args.scripted_tokens_per_second,
    )
    if args.threads > 0:
        import torch

        torch.set_num_threads(args.threads)
    try:
        window = args.encoder_window if args.encoder_window is not None else model.encoder_window_seconds
        qwen = QwenAsrModel.load(model.path, args.device, window, args.dtype, args.quantize)
    except ValueError as err:  # an encoder window the model does not know, int8 off the CPU
        raise StartupError(str(err)) from err
    backend = SimulKvBackend(qwen, heads, settings)
    _LOGGER.info(
        "Alignment heads: %s; border %.2f s; least probability %.2f; encoder window %.0f s",
        f"{len(heads.heads)} from {heads_path}" if heads else "default (upper half of the decoder)",
        policy.border_seconds,
        policy.min_probability,
        qwen.window_seconds,
    )
    return backend


async def serve(args: argparse.Namespace) -> None:
    """Load, announce, and serve until stopped."""
    kind = choose_backend(args.backend)
    try:
        # Checked before the (slow) model load so a typo fails at once.
        resolve_language(args.language, LANGUAGE_NAMES.values())
        check_backend(args.model, kind)
        model = resolve_model(args.model, args.data_dir, args.download_dir)
    except (UnknownLanguageError, ModelNotFoundError) as err:
        raise StartupError(str(err)) from err

    backend = create_backend(kind, model, args)
    started = time.monotonic()
    try:
        await asyncio.get_running_loop().run_in_executor(backend.executor, backend.warm_up)
    except Exception as err:  # a missing dependency shows here, at start, not in every utterance
        raise StartupError(f"the {backend.name} backend failed its warm-up transcription: {err!r}") from err
    _LOGGER.info("Warmed up in %.1f s", time.monotonic() - started)
    try:
        language = resolve_language(args.language, backend.supported_languages)
    except UnknownLanguageError as err:
        raise StartupError(str(err)) from err
    info = build_info(model, backend.name, backend.supported_languages)
    config = HandlerConfig(
        default_language=language,
        context=args.context,
        max_audio_seconds=args.max_audio_seconds,
        audio_timeout_seconds=args.audio_timeout,
        idle_timeout_seconds=args.idle_timeout,
        event_timeout_seconds=args.event_timeout,
        emission_log=args.emission_log,
    )

    try:
        server = AsyncServer.from_uri(args.uri)
    except ValueError as err:
        raise StartupError(f"bad --uri '{args.uri}': {err}") from err

    announcement: ServiceAnnouncement | None = None
    if args.zeroconf:
        if not isinstance(server, AsyncTcpServer):
            raise StartupError("--zeroconf needs a tcp:// --uri")
        try:
            host = routable_address(server.host)
        except OSError as err:
            raise StartupError(f"cannot announce over zeroconf: {err}") from err
        bound_to_all = ipaddress.ip_address(socket.gethostbyname(server.host)).is_unspecified
        announcement = ServiceAnnouncement(args.zeroconf, host, server.port, all_interfaces=bound_to_all)

    handler_factory = partial(Qwen3EventHandler, info=info, backend=backend, config=config)
    if isinstance(server, AsyncStdioServer):
        _LOGGER.info("Ready: %s (%s backend) on %s", model.name, backend.name, args.uri)
        await server.run(handler_factory)
        return
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    loop.add_signal_handler(signal.SIGTERM, stop.set)  # docker stop, systemd; Ctrl-C cancels instead
    try:
        try:
            await server.start(handler_factory)  # the port accepts connections once this returns
        except OSError as err:
            raise StartupError(f"cannot listen on {args.uri}: {err}") from err
        # Announced only now: a browser that connects on discovery is never refused.
        if announcement is not None:
            await announcement.register()
        _LOGGER.info("Ready: %s (%s backend) on %s", model.name, backend.name, args.uri)
        await stop.wait()
        _LOGGER.info("Stopping")
    finally:
        loop.remove_signal_handler(signal.SIGTERM)
        if announcement is not None:
            await announcement.close()
        await server.stop()
        backend.executor.shutdown(wait=False, cancel_futures=True)


def run() -> None:
    """Console entry point (``wyoming-qwen3``)."""
    args = parse_args()
    logging.basicConfig(level=logging.DEBUG if args.debug else logging.INFO, format=args.log_format)
    _LOGGER.debug(args)
    try:
        asyncio.run(serve(args))
    except StartupError as err:
        print(f"wyoming-qwen3: error: {err}", file=sys.stderr)
        sys.exit(2)
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    run()
