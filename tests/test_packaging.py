"""The ways users install: the Docker image's defaults, the compose file, and the Home Assistant add-on.

No container engine is needed here: the files are read, the add-on's run script is run against a
stand-in for bashio, and every command they make is parsed by the server's own command line.
script/image-check builds and runs the images where podman or docker exists.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
from pathlib import Path

import pytest
import yaml

from wyoming_qwen3.model.catalogue import CATALOGUE
from wyoming_qwen3.model.languages import LANGUAGE_NAMES
from wyoming_qwen3.server.cli import parse_args

ROOT = Path(__file__).resolve().parent.parent
ADDON = ROOT / "addon"
RUN_SCRIPT = ADDON / "rootfs" / "etc" / "s6-overlay" / "s6-rc.d" / "wyoming-qwen3" / "run"

#: bashio's functions the run script uses, reading the add-on's options from a JSON file, as bashio
#: reads /data/options.json (bashio::config prints a value, "null" for none; .true and .has_value test).
FAKE_BASHIO = r"""
bashio::config() {
    python3 - "$OPTIONS" "$1" <<'READ'
import json, sys
value = json.load(open(sys.argv[1])).get(sys.argv[2])
print("null" if value is None else str(value).lower() if isinstance(value, bool) else value)
READ
}
bashio::config.true() { [ "$(bashio::config "$1")" = "true" ]; }
bashio::config.has_value() { local v; v="$(bashio::config "$1")"; [ -n "$v" ] && [ "$v" != "null" ]; }
"""


def dockerfile(path: Path = ROOT / "Dockerfile") -> str:
    return path.read_text(encoding="utf-8")


def image_environment(text: str) -> dict[str, str]:
    """The ENV of a Dockerfile (one ENV instruction with backslash continuations)."""
    match = re.search(r"^ENV ((?:.*\\\n)*.*)$", text, re.MULTILINE)
    assert match, "no ENV"
    return dict(pair.split("=", 1) for pair in shlex.split(match.group(1).replace("\\\n", " ")))


def entrypoint(text: str) -> list[str]:
    match = re.search(r"^ENTRYPOINT (\[.*\])$", text, re.MULTILINE)
    assert match, "the Dockerfile has no exec-form ENTRYPOINT"
    return json.loads(match.group(1))


def readme_command(prefix: str) -> list[str]:
    match = re.search(rf"^{re.escape(prefix)} (.+)$", (ROOT / "README.md").read_text(encoding="utf-8"), re.MULTILINE)
    assert match, f"the README has no '{prefix} ...' command"
    return shlex.split(match.group(1))


def test_the_image_serves_on_10300_into_data_and_every_variable_and_argument_overrides_it() -> None:
    text = dockerfile()
    environment = image_environment(text)
    assert entrypoint(text) == ["wyoming-qwen3"]  # defaults live in ENV, so variables can change them
    args = parse_args([], environment)
    assert args.uri == "tcp://0.0.0.0:10300" and args.data_dir == [Path("/data")]
    assert parse_args([], {**environment, "WYOMING_QWEN3_URI": "tcp://0.0.0.0:10555"}).uri == "tcp://0.0.0.0:10555"
    assert parse_args(["--data-dir", "/models"], environment).data_dir == [Path("/models")]
    assert "EXPOSE 10300" in text and "VOLUME /data" in text
    assert re.search(r"^USER (?!root)\w+", text, re.MULTILINE), "the server runs as a user of its own"
    assert re.search(r"^HEALTHCHECK .*wyoming_qwen3\.server\.healthcheck", text, re.MULTILINE)
    # The dependency layer comes before the code: an edit to the code does not reinstall it.
    assert text.index("install-deps") < text.index("COPY wyoming_qwen3")
    assert re.search(r"^ARG PYTHON_IMAGE=python:3\.11-slim-bookworm$", text, re.MULTILINE), "a pinned Debian"


def test_the_readmes_docker_commands_parse_with_the_server() -> None:
    environment = image_environment(dockerfile())
    run = readme_command("docker run")
    image = run.index("wyoming-qwen3")
    parse_args(run[image + 1 :], environment)
    assert "--zeroconf" not in run[image + 1 :] or "--network" in run[:image], "zeroconf reaches the LAN from host"


def test_the_compose_file_sets_only_options_the_server_knows() -> None:
    compose = yaml.safe_load((ROOT / "docker-compose.yml").read_text(encoding="utf-8"))
    environment = image_environment(dockerfile())
    for name, service in compose["services"].items():
        assert service["restart"] == "unless-stopped", name
        assert any(volume.endswith(":/data") for volume in service["volumes"]), name
        args = parse_args(service.get("command", []), {**environment, **service.get("environment", {})})
        assert args.uri.endswith(":10300"), name


@pytest.mark.parametrize("pattern", [".venv/", "local/", ".git/"])
def test_the_build_context_leaves_out_the_local_trees(pattern: str) -> None:
    assert pattern in (ROOT / ".dockerignore").read_text(encoding="utf-8").split()


def test_the_addons_options_and_schema_agree() -> None:
    config = yaml.safe_load((ADDON / "config.yaml").read_text(encoding="utf-8"))
    options, schema = config["options"], config["schema"]
    assert set(options) == set(schema)
    choices = {key: re.fullmatch(r"list\((.*)\)\??", str(rule)) for key, rule in schema.items()}
    for key, value in options.items():
        rule = str(schema[key])
        if choices[key]:
            assert str(value) in choices[key].group(1).split("|"), key
        elif rule.startswith("bool"):
            assert isinstance(value, bool), key
        else:
            assert rule.startswith("str") and isinstance(value, str), key
    listed = choices["language"].group(1).split("|")
    assert listed == ["auto", *sorted(LANGUAGE_NAMES)], "the language table, in full"
    assert set(choices["model"].group(1).split("|")) <= {m.name for m in CATALOGUE.values() if "simulkv" in m.backends}
    assert options["quantize"] == "int8"  # Home Assistant OS: no GPU, so int8 is what keeps up
    assert config["discovery"] == ["wyoming"] and config["ports"] == {"10300/tcp": None}
    assert set(config["arch"]) == {"amd64", "aarch64"}
    translations = yaml.safe_load((ADDON / "translations" / "en.yaml").read_text(encoding="utf-8"))
    assert set(translations["configuration"]) == set(schema)


def run_script(options: dict[str, object], tmp_path: Path) -> list[str]:
    """The add-on's run script against the stand-in bashio: the arguments it starts the server with."""
    (tmp_path / "options.json").write_text(json.dumps(options))
    (tmp_path / "bin").mkdir(exist_ok=True)
    server = tmp_path / "bin" / "wyoming-qwen3"
    server.write_text("#!/usr/bin/env python3\nimport json, sys\nprint(json.dumps(sys.argv[1:]))\n")
    server.chmod(0o755)
    script = FAKE_BASHIO + RUN_SCRIPT.read_text(encoding="utf-8").split("\n", 1)[1]
    environment = {
        **os.environ,
        "OPTIONS": str(tmp_path / "options.json"),
        "PATH": f"{tmp_path / 'bin'}:{os.environ['PATH']}",
    }
    result = subprocess.run(["bash", "-c", script], capture_output=True, text=True, env=environment, timeout=60)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def test_each_addon_option_reaches_the_server_as_its_flag(tmp_path: Path) -> None:
    config = yaml.safe_load((ADDON / "config.yaml").read_text(encoding="utf-8"))
    defaults = parse_args(run_script(config["options"], tmp_path), {})
    assert defaults.uri == "tcp://0.0.0.0:10300" and defaults.data_dir == [Path("/data")]
    assert defaults.model == "Qwen/Qwen3-ASR-0.6B" and defaults.quantize == "int8" and defaults.language == "auto"
    assert defaults.context == "" and not defaults.endpointing and not defaults.debug
    changed = {
        "model": "Qwen/Qwen3-ASR-1.7B",
        "language": "de",
        "quantize": "none",
        "context": "Küche, Wohnzimmer",
        "endpointing": True,
        "debug_logging": True,
    }
    args = parse_args(run_script(changed, tmp_path), {})
    assert (args.model, args.language, args.quantize) == ("Qwen/Qwen3-ASR-1.7B", "de", "none")
    assert args.context == "Küche, Wohnzimmer" and args.endpointing and args.debug
