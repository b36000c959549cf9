"""The Home Assistant Supervisor's own add-on schemas, for checking addon/ and repository.yaml as it reads them.

The Supervisor's source files (tools/standins/supervisor/, unchanged; see its README) import a few
runtime modules the schemas never call: the HTTP server, the core system object, hardware and time
zones. Those get stand-ins here; everything that validates is the Supervisor's.

Note the Supervisor's config schema drops a key it does not know (``extra=vol.REMOVE_EXTRA``)
and its store only warns, so ``unknown_keys`` reports them: a key the Supervisor ignores is a
key the add-on's author believes does something.
"""

from __future__ import annotations

import sys
import types
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from tools.standins import FOLDER


class _Placeholder:
    """Stands for a runtime class the schemas name but never use (CoreSys, a hardware Device)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        pass


def _runtime_stand_ins() -> dict[str, types.ModuleType]:
    def module(name: str, **names: Any) -> types.ModuleType:
        made = types.ModuleType(name)
        made.__dict__.update(names)
        return made

    class RequestKey(_Placeholder):
        def __class_getitem__(cls, item: Any) -> type:
            return cls

    class UdevSubsystem(StrEnum):
        """Only read when a schema element filters devices."""

    return {
        "aiohttp": module("aiohttp", __version__="stand-in"),
        "aiohttp.web": module("aiohttp.web", RequestKey=RequestKey),
        "supervisor.coresys": module("supervisor.coresys", CoreSys=_Placeholder, CoreSysAttributes=_Placeholder),
        "supervisor.exceptions": module("supervisor.exceptions", HardwareNotFound=LookupError),
        "supervisor.hardware": module("supervisor.hardware"),
        "supervisor.hardware.const": module("supervisor.hardware.const", UdevSubsystem=UdevSubsystem),
        "supervisor.hardware.data": module("supervisor.hardware.data", Device=_Placeholder),
        "supervisor.utils.dt": module("supervisor.utils.dt", get_time_zone=lambda name: name),
    }


@dataclass(frozen=True)
class SupervisorSchemas:
    """The schemas the Supervisor applies to an add-on's files."""

    config: Any  # config.yaml (SCHEMA_APP_CONFIG)
    build: Any  # build.yaml (SCHEMA_BUILD_CONFIG)
    translations: Any  # translations/*.yaml (SCHEMA_APP_TRANSLATIONS)
    options: Any  # AppOptions: what the Supervisor checks a user's options with, against config.yaml's schema
    repository: Any  # repository.yaml at the repository's root (SCHEMA_REPOSITORY_CONFIG)

    def check_options(self, config: dict[str, Any], options: dict[str, Any]) -> dict[str, Any]:
        """Options as the Supervisor validates them before it writes /data/options.json."""
        return self.options(None, config["schema"], config["name"], config["slug"])(options)


def load() -> SupervisorSchemas:
    """Import the Supervisor's schema modules (once) with the runtime stand-ins."""
    for name, stand_in in _runtime_stand_ins().items():
        if name.startswith("aiohttp") and name in sys.modules:
            continue  # the real aiohttp, where installed
        sys.modules.setdefault(name, stand_in)
    if str(FOLDER) not in sys.path:
        sys.path.insert(0, str(FOLDER))
    from supervisor.apps.options import AppOptions
    from supervisor.apps.validate import SCHEMA_APP_CONFIG, SCHEMA_APP_TRANSLATIONS, SCHEMA_BUILD_CONFIG
    from supervisor.store.validate import SCHEMA_REPOSITORY_CONFIG

    return SupervisorSchemas(
        SCHEMA_APP_CONFIG, SCHEMA_BUILD_CONFIG, SCHEMA_APP_TRANSLATIONS, AppOptions, SCHEMA_REPOSITORY_CONFIG
    )


def unknown_keys(given: dict[str, Any], validated: dict[str, Any], prefix: str = "") -> list[str]:
    """Keys of ``given`` that validation dropped (the Supervisor ignores them), recursively."""
    dropped = []
    for key, value in given.items():
        if key not in validated:
            dropped.append(prefix + key)
        elif isinstance(value, dict) and isinstance(validated[key], dict):
            dropped += unknown_keys(value, validated[key], f"{prefix}{key}.")
    return dropped
