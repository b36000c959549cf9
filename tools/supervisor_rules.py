"""What the Home Assistant Supervisor accepts in an add-on repository's files, to check addon/ and repository.yaml.

The rules are the Supervisor's, written down here: its add-on documentation
(developers.home-assistant.io, "Add-on configuration") and the schemas it
validates with (home-assistant/supervisor, ``supervisor/apps/validate.py``,
``apps/options.py``, ``store/validate.py`` and ``validate.py``, as of 2026-08):
the keys of ``config.yaml`` and their types, the arch list, ``ports``, the
option schema's value types, ``build.yaml``, the translations and
``repository.yaml``. The Supervisor drops a key it does not know without a
word, and skips a bad ``map`` entry with a warning only, so both are problems
here: the add-on's author believes they do something.

Every check returns the problems it found, one line each; none is fine.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any
from urllib.parse import urlparse

#: A value's problem, or None.
Check = Callable[[Any], str | None]

ARCHES = ("aarch64", "amd64")
#: Still accepted, with a warning: the Supervisor dropped their builds.
DEPRECATED_ARCHES = ("armhf", "armv7", "i386")
MACHINES = (
    "intel-nuc khadas-vim3 generic-aarch64 generic-x86-64 odroid-c2 odroid-c4 odroid-m1 odroid-n2 odroid-xu "
    "qemuarm-64 qemuarm qemux86-64 qemux86 raspberrypi raspberrypi2 raspberrypi3-64 raspberrypi3 raspberrypi4-64 "
    "raspberrypi4 raspberrypi5-64 yellow green tinker"
).split()
CAPABILITIES = (
    "BPF CHECKPOINT_RESTORE DAC_READ_SEARCH IPC_LOCK NET_ADMIN NET_RAW PERFMON SYS_ADMIN SYS_MODULE SYS_NICE "
    "SYS_PTRACE SYS_RAWIO SYS_RESOURCE SYS_TIME"
).split()
MAP_TYPES = (
    "data config ssl local_apps backup share media homeassistant_config all_app_configs app_config "
    "addons all_addon_configs addon_config"  # the last three: the old names, still read
).split()
#: Keys the Supervisor reads under another name now, or no longer reads.
RENAMED = {
    "snapshot": "backup",
    "snapshot_exclude": "backup_exclude",
    "snapshot_pre": "backup_pre",
    "snapshot_post": "backup_post",
    "auto_uart": "uart",
}
IGNORED = ("advanced", "codenotary")

#: One element of an option schema: a type, its bounds or choices, and ``?`` where the option may be left out.
SCHEMA_ELEMENT = re.compile(
    r"(?:bool|email|url|port"
    r"|device(?:\(subsystem=[a-z]+\))?"
    r"|(?:str|password)(?:\(\d*,\d*\))?"
    r"|int(?:\(-?\d*,-?\d*\))?"
    r"|float(?:\(-?\d*\.?\d*,-?\d*\.?\d*\))?"
    r"|match\(.*\)"
    r"|list\(.+\))\??"
)
_IMAGE_COMPONENT = re.compile(r"[a-z0-9{][a-z0-9.\-_{}]*")
_REGISTRY = re.compile(
    r"(?:[a-zA-Z0-9](?:[a-zA-Z0-9-]*[a-zA-Z0-9])?(?:\.[a-zA-Z0-9](?:[a-zA-Z0-9-]*[a-zA-Z0-9])?)*"
    r"|\[[a-fA-F0-9:]+\])(?::[0-9]+)?"
)
#: What build.yaml may name as a base image (a tag allowed, unlike config.yaml's ``image``).
_BUILD_IMAGE = re.compile(r"([a-zA-Z\-.:\d{}]+/)*?([\-\w{}]+)/([\-\w{}]+)(:[.\-\w{}]+)?")
_VOLUME = re.compile(rf"({'|'.join(MAP_TYPES)})(?::(rw|ro))?")


# -- checks of one value --------------------------------------------------------------------------------------


def _is(kind: type | tuple[type, ...], what: str) -> Check:
    def check(value: Any) -> str | None:
        wrong = not isinstance(value, kind) or (kind is not bool and isinstance(value, bool))
        return f"{value!r} is not {what}" if wrong else None

    return check


text = _is(str, "a string")
boolean = _is(bool, "true or false")


def one_of(*choices: object) -> Check:
    return lambda value: None if value in choices else f"{value!r} is not one of {', '.join(map(str, choices))}"


def null(value: Any) -> str | None:
    return None if value is None else f"{value!r} is not null"


def matching(pattern: str | re.Pattern[str], what: str) -> Check:
    compiled = re.compile(pattern)
    return lambda value: None if isinstance(value, str) and compiled.fullmatch(value) else f"{value!r} is not {what}"


def integer(low: int, high: int) -> Check:
    def check(value: Any) -> str | None:
        if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
            return f"{value!r} is not a whole number from {low} to {high}"
        return None

    return check


port = integer(1, 65535)


def either(*checks: Check) -> Check:
    def check(value: Any) -> str | None:
        problems = [check(value) for check in checks]
        return None if None in problems else str(problems[0])

    return check


def list_of(item: Check) -> Check:
    def check(value: Any) -> str | None:
        if not isinstance(value, list):
            return f"{value!r} is not a list"
        return next((f"[{index}]: {problem}" for index, v in enumerate(value) if (problem := item(v))), None)

    return check


def mapping(key: Check, item: Check) -> Check:
    def check(value: Any) -> str | None:
        if not isinstance(value, dict):
            return f"{value!r} is not a mapping"
        for k, v in value.items():
            if problem := key(k) or item(v):
                return f"{k}: {problem}"
        return None

    return check


def url(value: Any) -> str | None:
    parts = urlparse(value) if isinstance(value, str) else None
    return None if parts is not None and parts.scheme and parts.netloc else f"{value!r} is not a URL"


def version(value: Any) -> str | None:
    if isinstance(value, int | float) and not isinstance(value, bool):
        return None
    return None if isinstance(value, str) and value.strip() else f"{value!r} is not a version"


#: ``homeassistant``: a Home Assistant release, compared with the one installed.
home_assistant_version = matching(r"\d{4}\.\d{1,2}(?:\.\d+)?(?:b\d+|\.dev\d+)?|0\.\d+(?:\.\d+)?", "a release")


def docker_image(value: Any) -> str | None:
    """An image the Supervisor can pull: no tag (config.yaml's version is the tag), lower-case components."""
    if not isinstance(value, str) or not value:
        return f"{value!r} is not an image name"
    first, slash, rest = value.partition("/")
    registry = (
        first if slash and (first == "localhost" or "." in first or ":" in first or first != first.lower()) else ""
    )
    path = rest if registry else value
    if registry and (registry != registry.lower() or not _REGISTRY.fullmatch(registry)):
        return f"{value!r}: {registry!r} is not a registry's (lower-case) name"
    if ":" in path:
        return f"{value!r} has a tag: the add-on's version is its tag"
    bad = next((part for part in path.split("/") if not _IMAGE_COMPONENT.fullmatch(part)), None)
    return f"{value!r}: {bad!r} is not a lower-case image name" if bad is not None else None


def schema_element(value: Any) -> str | None:
    """One option's type in ``schema``: an element, a list of one element or mapping, or a mapping of them."""
    if isinstance(value, str):
        return None if SCHEMA_ELEMENT.fullmatch(value) else f"{value!r} is not a type the Supervisor knows"
    if isinstance(value, list):
        if len(value) != 1 or isinstance(value[0], list):
            return f"{value!r}: a list holds one element or mapping, not a list"
        return schema_element(value[0])
    if isinstance(value, dict):
        return next((f"{k}: {p}" for k, v in value.items() if (p := text(k) or schema_element(v))), None)
    return f"{value!r} is not a type, list or mapping"


def volume(value: Any) -> str | None:
    if isinstance(value, str):
        return None if _VOLUME.fullmatch(value) else f"{value!r} is not a folder the Supervisor maps"
    if isinstance(value, dict):
        if value.get("type") not in MAP_TYPES:
            return f"{value!r} has no type the Supervisor maps"
        return keyed({"type": text, "read_only": boolean, "path": text}, required=("type",))(value)
    return f"{value!r} is not a folder to map"


def keyed(keys: dict[str, Check], required: tuple[str, ...] = ()) -> Check:
    """A mapping with these keys only, each of its own type."""

    def check(value: Any) -> str | None:
        problems = _keyed_problems(value, keys, required)
        return "; ".join(problems) if problems else None

    return check


def _keyed_problems(value: Any, keys: dict[str, Check], required: tuple[str, ...], where: str = "") -> list[str]:
    if not isinstance(value, dict):
        return [f"{where or 'the file'} is not a mapping"]
    problems = [f"{where}{key}: required" for key in required if key not in value]
    for key, item in value.items():
        if key in RENAMED:
            problems.append(f"{where}{key}: read as {RENAMED[key]!r} now; use that name")
        elif key in IGNORED:
            problems.append(f"{where}{key}: no longer read by the Supervisor")
        elif key not in keys:
            problems.append(f"{where}{key}: not a key the Supervisor knows; it is dropped")
        elif problem := keys[key](item):
            problems.append(f"{where}{key}: {problem}")
    return problems


# -- the files ------------------------------------------------------------------------------------------------

_PORT_KEY = matching(r"\d+(?:/tcp|/udp)?", "a port (NUMBER/tcp or NUMBER/udp)")
_LIMIT = integer(-1, 2**63)

CONFIG: dict[str, Check] = {
    "name": text,
    "version": version,
    "slug": matching(r"[-_.A-Za-z0-9]+", "a slug (letters, digits, '-', '_', '.')"),
    "description": text,
    "arch": list_of(one_of(*ARCHES, *DEPRECATED_ARCHES)),
    "machine": list_of(matching(rf"!?(?:{'|'.join(map(re.escape, MACHINES))})", "a machine type")),
    "url": url,
    "startup": one_of("initialize", "system", "services", "application", "once"),
    "boot": one_of("auto", "manual", "manual_only"),
    "stage": one_of("stable", "experimental", "deprecated"),
    "ports": mapping(_PORT_KEY, either(port, null)),
    "ports_description": mapping(_PORT_KEY, text),
    "watchdog": matching(r"(?:https?|\[PROTO:\w+\]|tcp)://\[HOST\]:(?:\[PORT:\d+\]|\d+).*", "a watchdog URL"),
    "webui": matching(r"(?:https?|\[PROTO:\w+\])://\[HOST\]:\[PORT:\d+\].*", "a web UI URL"),
    "ingress_port": either(port, one_of(0)),  # 0: chosen at start
    "ingress_entry": text,
    "panel_icon": text,
    "panel_title": text,
    "homeassistant": home_assistant_version,
    "devices": list_of(text),
    "map": list_of(volume),
    "environment": mapping(matching(r"\w*", "a variable name"), text),
    "privileged": list_of(one_of(*CAPABILITIES)),
    "hassio_role": one_of("default", "homeassistant", "backup", "manager", "admin"),
    "services": list_of(matching(r"(?:mqtt|mysql):(?:provide|want|need)", "SERVICE:provide, want or need")),
    "discovery": list_of(text),
    "backup": one_of("hot", "cold"),
    "backup_exclude": list_of(text),
    "backup_pre": text,
    "backup_post": text,
    "options": _is(dict, "a mapping"),
    "schema": either(mapping(text, schema_element), one_of(False)),
    "image": docker_image,
    "ulimits": mapping(text, either(_LIMIT, keyed({"soft": _LIMIT, "hard": _LIMIT}, required=("soft", "hard")))),
    "timeout": integer(10, 300),
    "breaking_versions": list_of(version),
    **{
        switch: boolean
        for switch in (
            "init ingress ingress_stream panel_admin host_network host_pid host_ipc host_uts host_dbus udev tmpfs "
            "apparmor full_access audio video gpio usb uart devicetree kernel_modules realtime hassio_api "
            "homeassistant_api stdin legacy docker_api auth_api journald"
        ).split()
    },
}
CONFIG_REQUIRED = ("name", "version", "slug", "description", "arch")

BUILD: dict[str, Check] = {
    "build_from": either(
        matching(_BUILD_IMAGE, "an image"),
        mapping(one_of(*ARCHES, *DEPRECATED_ARCHES), matching(_BUILD_IMAGE, "an image")),
    ),
    "squash": boolean,
    "args": mapping(text, text),
    "labels": mapping(text, text),
}

REPOSITORY: dict[str, Check] = {"name": text, "url": url, "maintainer": text}


def config_problems(config: Any) -> list[str]:
    """``config.yaml`` as the Supervisor reads it, and its options against its own schema."""
    problems = _keyed_problems(config, CONFIG, CONFIG_REQUIRED)
    if not problems and isinstance(config.get("schema"), dict):
        problems += option_problems(config["schema"], config.get("options", {}))
    return problems


def build_problems(build: Any) -> list[str]:
    """``build.yaml``: the base image of each arch, build arguments, labels."""
    return _keyed_problems(build, BUILD, ())


def repository_problems(repository: Any) -> list[str]:
    """``repository.yaml`` at the repository's root."""
    return _keyed_problems(repository, REPOSITORY, ("name",))


def translation_problems(translations: Any, schema: dict[str, Any] | None = None) -> list[str]:
    """``translations/LANGUAGE.yaml``: a name (and description) for options, and for ports; where the add-on's
    ``schema`` is given, only options it has."""

    def field(value: Any) -> str | None:
        keys = {"name": text, "description": either(text, null), "fields": mapping(text, field)}
        return keyed(keys, required=("name",))(value)

    keys = {"configuration": mapping(text, field), "network": mapping(_PORT_KEY, text)}
    problems = _keyed_problems(translations, keys, ())
    if schema is not None and isinstance(translations, dict):
        named = translations.get("configuration") or {}
        problems += [f"configuration.{key}: no such option" for key in named if key not in schema]
    return problems


def option_problems(schema: dict[str, Any], options: dict[str, Any], where: str = "") -> list[str]:
    """Options as the Supervisor checks them before it writes ``/data/options.json``: each of its type, every
    option without ``?`` given (null counts as missing); an option the schema lacks is dropped."""
    problems = [f"{where}{key}: not in the schema; the Supervisor drops it" for key in options if key not in schema]
    for key, element in schema.items():
        value = options.get(key)
        optional = isinstance(element, str) and element.endswith("?")
        if value is None:
            if not optional and not isinstance(element, list):
                problems.append(f"{where}{key}: required")
            continue
        if isinstance(element, dict):
            problems += (
                option_problems(element, value, f"{where}{key}.")
                if isinstance(value, dict)
                else [f"{where}{key}: not a mapping"]
            )
        elif isinstance(element, list):
            items = value if isinstance(value, list) else None
            if items is None:
                problems.append(f"{where}{key}: not a list")
            for index, item in enumerate(items or []):
                problems += option_problems({f"{key}[{index}]": element[0]}, {f"{key}[{index}]": item}, where)
        elif problem := option_value(element.rstrip("?"), value):
            problems.append(f"{where}{key}: {problem}")
    return problems


#: What the Supervisor reads as true or false in an option of type ``bool``.
_BOOLEAN_WORDS = ("true", "false", "on", "off", "yes", "no", "enable", "disable", "1", "0")


def option_value(element: str, value: Any) -> str | None:
    """One option's value against its type (``str(,20)``, ``list(a|b)``, ...)."""
    kind, _, rest = element.partition("(")
    argument = rest[:-1]
    if kind in ("str", "password", "int", "float"):
        return _bounded(kind, argument, value)
    if kind == "bool":
        plain = isinstance(value, bool) or str(value).lower() in _BOOLEAN_WORDS
        return None if plain else f"{value!r} is not true or false"
    if kind == "list":
        choices = argument.split("|")
        return None if str(value) in choices else f"{value!r} is not one of {', '.join(choices)}"
    if kind == "match":
        return None if re.match(argument, str(value)) else f"{value!r} does not match {argument}"
    if kind == "port":
        return port(value)
    if kind == "url":
        return url(value)
    if kind == "email":
        address = isinstance(value, str) and re.fullmatch(r"[^@\s]+@[^@\s]+\.[^@\s]+", value)
        return None if address else f"{value!r} is not an e-mail address"
    return text(value)  # device: a path on the host, looked up there


def _bounded(kind: str, bounds: str, value: Any) -> str | None:
    """A string's length, or a number, within ``MIN,MAX`` (either may be left out)."""
    if kind in ("str", "password"):
        if not isinstance(value, str):
            return f"{value!r} is not a string"
        measured = float(len(value))
    else:
        try:  # the Supervisor coerces, as int() and float() do: "15" is 15, 15.7 is an int of 15
            measured = float(int(value) if kind == "int" else float(value))
        except (TypeError, ValueError):
            return f"{value!r} is not a{'n integer' if kind == 'int' else ' number'}"
    low, high = (float(b) if b else None for b in (bounds.split(",") if bounds else ["", ""]))
    if (low is not None and measured < low) or (high is not None and measured > high):
        return f"{value!r} is outside {bounds}"
    return None
