"""Starting the service: resolve the model, load the backend, warm it up, listen, announce over zeroconf."""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import ipaddress
import logging
import signal
import socket
import time
import weakref
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import replace
from functools import partial

from wyoming.event import async_get_stdin, async_get_stdout
from wyoming.server import AsyncServer, AsyncStdioServer, AsyncTcpServer

from ..backends.base import Backend, SessionOptions
from ..backends.inference import EARLY
from ..backends.loading import BackendLoadError, choose_backend, create_backend
from ..home.assistant import HomeAssistantLink
from ..home.commands import HomeCommands
from ..home.names import Home
from ..model.catalogue import (
    QWEN3_ASR_NAMES_BYTES,
    ModelNotFoundError,
    ResolvedModel,
    check_backend,
    resolve_model,
)
from ..model.grammar import GrammarError, Grammars
from ..model.languages import LANGUAGE_NAMES, UnknownLanguageError, language_code, resolve_language
from .context import compose_context
from .discovery import ServiceAnnouncement, routable_address
from .handler import Qwen3EventHandler
from .info import build_info
from .memory import freeze_startup_objects
from .settings import HandlerConfig, HomeSource
from .stream.completeness import Commands
from .stream.emission_log import EmissionLog
from .stream.silero import VadProcess
from .stream.speech_activity import DetectorPool
from .stream.turn import StreamLimits, TurnSettings

_LOGGER = logging.getLogger("wyoming_qwen3")

#: After SIGTERM, how long the open connections get to end (each frees its session and logs why) before the
#: process exits anyway; docker stop and systemd kill after 10 s.
STOP_GRACE_SECONDS = 5.0

#: Loads the chosen backend: (kind, model, options) -> backend; tools pass their own.
BackendFactory = Callable[[str, ResolvedModel, argparse.Namespace], Backend]


class StartupError(Exception):
    """A problem with the configuration, reported in one line without a traceback."""


def handler_config(
    args: argparse.Namespace,
    default_language: str | None,
    commands: Commands | None = None,
    home: HomeSource | None = None,
    names_bytes: int = QWEN3_ASR_NAMES_BYTES,
) -> HandlerConfig:
    """The settings every connection shares (``commands``: what the turn's end is judged by, see ``stream.turn``;
    ``home``: where the home's names come from, and ``names_bytes`` how many the model's context holds)."""
    return HandlerConfig(
        default_language=default_language,
        context=args.context,
        limits=StreamLimits(args.max_audio_seconds, args.audio_timeout),
        idle_timeout_seconds=args.idle_timeout,
        event_timeout_seconds=args.event_timeout,
        emission_log=args.emission_log,
        turn=replace(
            TurnSettings(),
            speculate=args.speculate,
            endpointing=args.endpointing,
            complete_silence_seconds=args.endpoint_silence,
            incomplete_silence_seconds=args.endpoint_max_silence,
            continues_silence_seconds=args.endpoint_continues_silence,
            commands=commands,
        ),
        home=home,
        home_names_bytes=args.ha_names_bytes or names_bytes,
    )


async def load(args: argparse.Namespace, load_backend: BackendFactory) -> tuple[ResolvedModel, Backend]:
    """The model resolved (downloaded if need be) and loaded behind its backend, warmed up."""
    try:
        kind = choose_backend(args.backend)
        # Checked before the (slow) model load so that a typo fails at once.
        resolve_language(args.language, LANGUAGE_NAMES.values())
        check_backend(args.model, kind)
        model = resolve_model(args.model, args.data_dir, args.download_dir, kind)
        backend = load_backend(kind, model, args)
    except (BackendLoadError, UnknownLanguageError, ModelNotFoundError) as err:
        raise StartupError(str(err)) from err
    started = time.monotonic()
    try:
        await asyncio.get_running_loop().run_in_executor(backend.executor, backend.warm_up)
    except Exception as err:  # a missing dependency shows here, at start, not in every utterance
        raise StartupError(f"the {backend.name} backend failed its warm-up transcription: {err!r}") from err
    _LOGGER.info("Warmed up in %.1f s", time.monotonic() - started)
    freeze_startup_objects()  # collections then walk what requests create, not the model (``memory``)
    return model, backend


async def serve(args: argparse.Namespace, load_backend: BackendFactory = create_backend) -> None:
    """Load, announce, and serve until stopped (SIGTERM, or the end of stdin for ``stdio://``)."""
    try:
        server = AsyncServer.from_uri(args.uri)
    except ValueError as err:
        raise StartupError(f"bad --uri '{args.uri}': {err}") from err
    if args.zeroconf and not isinstance(server, AsyncTcpServer):
        raise StartupError("--zeroconf needs a tcp:// --uri")
    if args.emission_log is not None:  # checked before the (slow) model load, not at the first stream
        try:
            EmissionLog.check_target(args.emission_log)
        except OSError as err:
            raise StartupError(f"--emission-log: {err}") from err
    model, backend = await load(args, load_backend)
    try:
        language = resolve_language(args.language, backend.supported_languages)
    except UnknownLanguageError as err:
        raise StartupError(str(err)) from err
    link = home_assistant(args)
    commands = turn_commands(args, model, link, language)
    config = handler_config(args, language, commands, link, model.names_bytes)
    if link is not None:
        link.on_home = partial(read_home, backend, config, commands if isinstance(commands, HomeCommands) else None)
        try:
            await link.start()
        except ValueError as err:
            raise StartupError(f"--ha-url: {err}") from err
    info = build_info(model, backend.name, backend.supported_languages, endpointing=args.endpointing)
    vad = VadProcess()  # Silero off the server's interpreter (``silero``)
    detectors = DetectorPool(make=vad.detector)
    handler_factory = partial(Qwen3EventHandler, info=info, backend=backend, config=config, detectors=detectors)
    try:
        if isinstance(server, AsyncStdioServer):
            await serve_stdio(handler_factory, f"{model.name} ({backend.name} backend)")
        else:
            await serve_socket(server, handler_factory, args, f"{model.name} ({backend.name} backend)")
    finally:
        if link is not None:
            await link.close()
        backend.executor.shutdown(wait=False, cancel_futures=True)
        vad.close()


def home_assistant(args: argparse.Namespace) -> HomeAssistantLink | None:
    """The link to Home Assistant the options ask for (not started), its token read from where they say."""
    if not args.ha_url:
        return None
    token = args.ha_token
    if args.ha_token_file is not None:
        try:
            token = args.ha_token_file.read_text(encoding="utf-8").strip()
        except OSError as err:
            raise StartupError(f"--ha-token-file: cannot read {args.ha_token_file}: {err.strerror}") from err
    if not token:
        raise StartupError("--ha-token-file: the file is empty" if args.ha_token_file else "--ha-token is empty")
    return HomeAssistantLink(args.ha_url, token)


def turn_commands(
    args: argparse.Namespace, model: ResolvedModel, link: HomeAssistantLink | None, language: str | None
) -> Commands | None:
    """What endpointing judges a turn's text by: the model folder's commands, else, where the server reads a home,
    Home Assistant's own for it (their templates loaded at once for the server's language), else nothing."""
    try:
        grammars = Grammars.load(model.path)
    except GrammarError as err:
        raise StartupError(str(err)) from err
    if not args.endpointing:
        return grammars
    if grammars is not None:
        languages = " or ".join(grammars.languages)
        _LOGGER.info("Endpointing: a %s text sounds complete only as one of the model's commands", languages)
        return grammars
    if link is None:
        return None
    if importlib.util.find_spec("hassil") is None or importlib.util.find_spec("home_assistant_intents") is None:
        _LOGGER.warning(
            "Endpointing without Home Assistant's commands (pip install 'wyoming-qwen3[home]'): a pause after "
            "words that can end a command ends the turn"
        )
        return None
    commands = HomeCommands()
    code = language_code(language) if language else None
    if code is not None:
        commands.prepare(code)
    _LOGGER.info("Endpointing: a text sounds complete only as one of Home Assistant's commands for the home")
    return commands


def read_home(backend: Backend, config: HandlerConfig, commands: HomeCommands | None, home: Home) -> None:
    """A home read anew: its commands filled, and the prompt of its names computed now, between requests, not by
    the next command's."""
    if commands is not None:
        commands.update(home)
    context, _ = compose_context(config, [], names_sent=False)
    options = SessionOptions(language=config.default_language, context=context)
    future = backend.executor.submit_with_priority(EARLY, backend.prepare, options)
    future.add_done_callback(_log_failed_preparation)


def _log_failed_preparation(future: Future[None]) -> None:
    if not future.cancelled() and (err := future.exception()) is not None:
        _LOGGER.warning("The prompt of the home's names could not be prepared (%r): the next command computes it", err)


async def serve_stdio(handler_factory: Callable[..., Qwen3EventHandler], what: str) -> None:
    """One connection on stdin and stdout (wyoming's own streams of them), read by the handler's own loop (strict
    reading, timeouts, one log line).

    wyoming's AsyncStdioServer calls ``handle_event`` directly with its lenient
    reader, so one malformed line would read as the end of input
    (tests/test_handler.py: stdio reads strictly).
    """
    reader, writer = await async_get_stdin(), await async_get_stdout()
    loop = asyncio.get_running_loop()
    loop.add_signal_handler(signal.SIGTERM, reader.feed_eof)
    try:
        _LOGGER.info("Ready: %s on stdio://", what)
        await handler_factory(reader, writer).run()
    finally:
        loop.remove_signal_handler(signal.SIGTERM)


async def serve_socket(
    server: AsyncServer, handler_factory: Callable[..., Qwen3EventHandler], args: argparse.Namespace, what: str
) -> None:
    """Listen, then announce (a browser that connects on discovery is never refused), until SIGTERM."""
    announcement: ServiceAnnouncement | None = None
    if args.zeroconf:
        assert isinstance(server, AsyncTcpServer)
        try:
            host = routable_address(server.host)
        except OSError as err:
            raise StartupError(f"cannot announce over zeroconf: {err}") from err
        if ipaddress.ip_address(host).is_loopback:
            _LOGGER.warning(
                "--zeroconf announces %s, a loopback address that no other host can reach: to be found by "
                "Home Assistant on another machine, bind --uri tcp://0.0.0.0:%s (or this machine's LAN address)",
                host,
                server.port,
            )
        bound_to_all = ipaddress.ip_address(socket.gethostbyname(server.host)).is_unspecified
        announcement = ServiceAnnouncement(args.zeroconf, host, server.port, all_interfaces=bound_to_all)
    handlers: weakref.WeakSet[Qwen3EventHandler] = weakref.WeakSet()  # a running handler's task holds it

    def tracked_handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> Qwen3EventHandler:
        handler = handler_factory(reader, writer)
        handlers.add(handler)
        return handler

    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    loop.add_signal_handler(signal.SIGTERM, stop.set)  # docker stop, systemd; Ctrl-C cancels instead
    try:
        try:
            await server.start(tracked_handler)  # the port accepts connections once this returns
        except OSError as err:
            raise StartupError(f"cannot listen on {args.uri}: {err}") from err
        if announcement is not None:
            await announcement.register()
        _LOGGER.info("Ready: %s on %s", what, args.uri)
        await stop.wait()
        _LOGGER.info("Stopping")
    finally:
        loop.remove_signal_handler(signal.SIGTERM)
        if announcement is not None:
            await announcement.close()
        await server.stop()
        await _until_ended(list(handlers))


async def _until_ended(handlers: list[Qwen3EventHandler]) -> None:
    """Wait for the stopped connections to end, at most ``STOP_GRACE_SECONDS``: asyncio.run would otherwise
    cancel them mid-way, their sessions unfreed and their ends unlogged."""
    waits = [asyncio.create_task(handler.ended.wait()) for handler in handlers]
    if not waits:
        return
    _, pending = await asyncio.wait(waits, timeout=STOP_GRACE_SECONDS)
    for wait in pending:
        wait.cancel()
    if pending:
        _LOGGER.warning("%d connections had not ended %g s after the stop", len(pending), STOP_GRACE_SECONDS)
