"""The ways users install: the Docker image's defaults, the compose file, and the Home Assistant add-on.

No container engine is needed here: the files are read, the add-on's files are checked against the
Home Assistant Supervisor's rules (tools/supervisor_rules.py), its wheels against a fresh build of the
tree (tools/addon_payload.py), its run script is run against a stand-in for bashio, and every command
they make is parsed by the server's own command line.
script/image-check builds and runs the images where podman or docker exists.
"""

from __future__ import annotations

import asyncio
import copy
import json
import os
import re
import shlex
import subprocess
import sys
import zipfile
from pathlib import Path
from typing import Any

import pytest
import yaml

import wyoming_qwen3
from tools import addon_payload, supervisor_rules
from tools.client import stream
from tools.server_process import start_server
from wyoming_qwen3.model.catalogue import CATALOGUE
from wyoming_qwen3.model.languages import LANGUAGE_NAMES
from wyoming_qwen3.server.cli import parse_args

ROOT = Path(__file__).resolve().parent.parent
ADDON = ROOT / "addon"
RUN_SCRIPT = ADDON / "rootfs" / "etc" / "s6-overlay" / "s6-rc.d" / "wyoming-qwen3" / "run"

BASHIO = ROOT / "tools" / "standins" / "bashio" / "bashio"


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
        if not service["image"].startswith("wyoming-qwen3"):
            continue  # the load balancer
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
    assert options["quantize"] == "auto"  # Home Assistant OS: no GPU, so auto is int8, what keeps up
    assert config["discovery"] == ["wyoming"] and config["ports"] == {"10300/tcp": None}
    assert set(config["arch"]) == {"amd64", "aarch64"}
    translations = yaml.safe_load((ADDON / "translations" / "en.yaml").read_text(encoding="utf-8"))
    assert set(translations["configuration"]) == set(schema)


def run_script(
    options: dict[str, object], tmp_path: Path, supervisor: dict[str, str] | None = None
) -> tuple[list[str], str | None]:
    """The add-on's run script under the stand-in bashio (``supervisor``: what the Supervisor puts in its
    environment): the arguments it starts the server with, and the Home Assistant token it gives it."""
    (tmp_path / "options.json").write_text(json.dumps(options))
    (tmp_path / "bin").mkdir(exist_ok=True)
    server = tmp_path / "bin" / "wyoming-qwen3"
    server.write_text(
        "#!/usr/bin/env python3\nimport json, os, sys\n"
        "print(json.dumps([*sys.argv[1:], os.environ.get('WYOMING_QWEN3_HA_TOKEN')]))\n"
    )
    server.chmod(0o755)
    environment = {
        **os.environ,
        "BASHIO_OPTIONS": str(tmp_path / "options.json"),
        "PATH": f"{tmp_path / 'bin'}:{os.environ['PATH']}",
    }
    result = subprocess.run(
        [str(BASHIO), str(RUN_SCRIPT)], capture_output=True, text=True, env={**environment, **(supervisor or {})},
        timeout=60,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    *arguments, token = json.loads(result.stdout)
    return arguments, token


def test_each_addon_option_reaches_the_server_as_its_flag(tmp_path: Path) -> None:
    config = yaml.safe_load((ADDON / "config.yaml").read_text(encoding="utf-8"))
    supervisor = {"SUPERVISOR_TOKEN": "the-supervisors-token"}
    arguments, token = run_script(config["options"], tmp_path, supervisor)
    defaults = parse_args(arguments, {"WYOMING_QWEN3_HA_TOKEN": token or ""})
    assert defaults.uri == "tcp://0.0.0.0:10300" and defaults.data_dir == [Path("/data")]
    assert defaults.model == "Qwen/Qwen3-ASR-0.6B" and defaults.quantize == "auto" and defaults.language == "auto"
    assert defaults.context == "" and not defaults.endpointing and not defaults.debug
    # The home's names through the Supervisor's proxy, with its token in the environment, not the arguments.
    assert config["homeassistant_api"] is True and defaults.ha_url == "ws://supervisor/core/websocket"
    assert token == defaults.ha_token == "the-supervisors-token" and token not in arguments
    changed = {
        "model": "Qwen/Qwen3-ASR-1.7B",
        "language": "de",
        "quantize": "none",
        "context": "Küche, Wohnzimmer",
        "home_names": False,
        "endpointing": True,
        "debug_logging": True,
    }
    arguments, token = run_script(changed, tmp_path, supervisor)
    args = parse_args(arguments, {})
    assert (args.model, args.language, args.quantize) == ("Qwen/Qwen3-ASR-1.7B", "de", "none")
    assert args.context == "Küche, Wohnzimmer" and args.endpointing and args.debug
    assert args.ha_url is None and token is None


# -- the add-on as the Supervisor reads and builds it --------------------------------------------------------


def addon_yaml(name: str) -> dict[str, Any]:
    return yaml.safe_load((ADDON / name).read_text(encoding="utf-8"))


def test_the_supervisor_accepts_the_addon_and_ignores_none_of_its_keys() -> None:
    config = addon_yaml("config.yaml")
    assert supervisor_rules.config_problems(config) == []  # its options, too, meet its own schema
    assert "image" not in config, "with image set the Supervisor pulls it instead of building; none is published"
    build = addon_yaml("build.yaml")
    assert supervisor_rules.build_problems(build) == []
    assert set(build["build_from"]) == set(config["arch"])
    translations = addon_yaml("translations/en.yaml")
    assert supervisor_rules.translation_problems(translations, config["schema"]) == []
    repository = yaml.safe_load((ROOT / "repository.yaml").read_text(encoding="utf-8"))
    assert supervisor_rules.repository_problems(repository) == []


@pytest.mark.parametrize(
    ("change", "problem"),
    [
        (lambda c: c.update(discovry=["wyoming"]), "discovry: not a key the Supervisor knows"),
        (lambda c: c.update(snapshot_exclude=["*.log"]), "snapshot_exclude: read as 'backup_exclude'"),
        (lambda c: c["schema"].update(quantize="lst(auto|none|int8)"), "schema: quantize: 'lst(auto|none|int8)'"),
        (lambda c: c["schema"].update(nested=[["str"]]), "a list holds one element or mapping, not a list"),
        (lambda c: c.update(arch=["amd64", "x86"]), "arch: [1]: 'x86' is not one of"),
        (lambda c: c.update(slug="Wyoming Qwen3"), "slug: 'Wyoming Qwen3' is not a slug"),
        (lambda c: c.update(startup="whenever"), "startup: 'whenever' is not one of"),
        (lambda c: c.update(image="ghcr.io/example/wyoming-qwen3:0.2.0"), "has a tag"),
        (lambda c: c.update(image="ghcr.io/Example/wyoming-qwen3"), "'Example' is not a lower-case image name"),
        (lambda c: c.update(ports={"10300": "10300"}), "10300: '10300' is not a whole number"),
        (lambda c: c.update(ports={"10300/sctp": 10300}), "'10300/sctp' is not a port"),
        (lambda c: c.update(homeassistant="soon"), "homeassistant: 'soon' is not a release"),
        (lambda c: c.update(init="no"), "init: 'no' is not true or false"),
        (lambda c: c.pop("arch"), "arch: required"),
        (lambda c: c["options"].update(quantize="int4"), "quantize: 'int4' is not one of auto, none, int8"),
        (lambda c: c["options"].update(endpointing=None), "endpointing: required"),
    ],
)
def test_the_checker_rejects_what_the_supervisor_rejects_or_drops(change, problem: str) -> None:
    config = copy.deepcopy(addon_yaml("config.yaml"))
    change(config)
    problems = supervisor_rules.config_problems(config)
    assert any(problem in line for line in problems), problems


def test_build_translations_and_repository_files_are_checked_too() -> None:
    assert supervisor_rules.build_problems({"build_from": {"amd64": "not an image!"}})
    assert supervisor_rules.build_problems({"build_from": {"riscv": "ghcr.io/home-assistant/amd64-base:3.20"}})
    assert supervisor_rules.build_problems({"buildfrom": {}}) == [
        "buildfrom: not a key the Supervisor knows; it is dropped"
    ]
    schema = addon_yaml("config.yaml")["schema"]
    assert supervisor_rules.translation_problems({"configuration": {"model": {"description": "x"}}}, schema) == [
        "configuration: model: name: required"
    ]
    assert supervisor_rules.translation_problems({"configuration": {"modle": {"name": "Model"}}}, schema) == [
        "configuration.modle: no such option"
    ]
    assert supervisor_rules.repository_problems({"maintainer": "x", "url": "not a url"}) == [
        "name: required",
        "url: 'not a url' is not a URL",
    ]


def test_the_addon_folder_is_a_whole_build_context() -> None:
    """The Supervisor builds with addon/ as the context: every COPY is inside it, and the Dockerfile installs
    the server's wheel of the add-on's version and the demo model's wheel, with the lock they were tested with."""
    text = dockerfile(ADDON / "Dockerfile")
    sources = [line.split()[1:-1] for line in text.splitlines() if line.startswith("COPY ")]
    for source in (name for group in sources for name in group):
        assert not source.startswith(("..", "/")) and (ADDON / source).exists(), source
    version = addon_yaml("config.yaml")["version"]
    assert version == wyoming_qwen3.__version__, "set the version in both, then run script/addon-package"
    assert "wheels/wyoming_qwen3-${BUILD_VERSION}-py3-none-any.whl" in text  # the version pinned by config.yaml
    assert "wheels/wyoming_qwen3_demo-*-py3-none-any.whl" in text
    assert {wheel.name for wheel in addon_payload.WHEELS.glob("*.whl")} >= {f"wyoming_qwen3-{version}-py3-none-any.whl"}
    assert (ADDON / "requirements.lock").read_text() == (ROOT / "requirements.lock").read_text(), (
        "run script/addon-package"
    )
    assert addon_payload.changelog_versions()[:1] == [version], "addon/CHANGELOG.md: an entry for this version first"


@pytest.fixture(scope="module")
def fresh_payload(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("wheels")
    addon_payload.build(out)
    return out


def test_the_addon_installs_what_the_tree_builds_now(fresh_payload: Path) -> None:
    """A change to the server or the demo model that is not in addon/wheels fails here: run script/addon-package."""
    assert addon_payload.differences(addon_payload.WHEELS, fresh_payload) == []
    server = addon_payload.contents(next(fresh_payload.glob("wyoming_qwen3-*.whl")))
    assert "wyoming_qwen3/__main__.py" in server and "wyoming_qwen3/model/heads/Qwen3-ASR-0.6B.json" in server
    # The server's wheel stays small: the demo model rides in its own, which changes only with the model.
    assert sum(map(len, server.values())) < 1024 * 1024 and not any("safetensors" in name for name in server)
    demo = addon_payload.contents(next(fresh_payload.glob("wyoming_qwen3_demo-*.whl")))
    assert "wyoming_qwen3_demo/model.safetensors" in demo and "wyoming_qwen3_demo/grammar.json" in demo
    assert not any(name.endswith(("heldout.json", "demo_model.json")) for name in demo), "test data, not served"


def test_the_addons_wheels_installed_as_it_installs_them_serve_the_demo_model(tmp_path: Path, speech) -> None:
    """What the add-on's Dockerfile installs, and nothing of the source tree: the two wheels into a folder of
    their own, the server started from there (outside the tree) with the add-on's model option, a transcript."""
    installed = tmp_path / "site"
    wheels = sorted(str(wheel) for wheel in addon_payload.WHEELS.glob("*.whl"))
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--target", str(installed), *wheels],
        check=True,
        timeout=120,
    )
    environment = {**os.environ, "PYTHONPATH": str(installed)}
    where = [sys.executable, "-c", "import wyoming_qwen3, wyoming_qwen3_demo; print(wyoming_qwen3.__file__)"]
    imported = subprocess.run(where, capture_output=True, text=True, env=environment, cwd=tmp_path, timeout=60)
    assert imported.stdout.strip() == str(installed / "wyoming_qwen3" / "__init__.py"), imported.stderr
    server = start_server("demo", tmp_path / "server.log", environment=environment, cwd=tmp_path)
    try:
        utterance = speech("turn on the kitchen lights", "-r", "16000")
        reply = asyncio.run(asyncio.wait_for(stream(server.host, server.port, utterance, language="en"), 60))
        log = server.log()
    finally:
        server.stop()
    assert f"Loading {installed / 'wyoming_qwen3_demo'} on cpu" in log, log  # the wheel's model, not the tree's
    assert reply.text.lower().strip(" .") == "turn on the kitchen lights", reply.text


def test_a_committed_wheel_never_changes_under_its_version() -> None:
    """The Supervisor offers an update only for a new version: each wheel's name (its version) always held the
    same contents in the repository's history, so changed code came with a new version."""
    wheels = sorted(addon_payload.WHEELS.glob("*.whl"))
    histories = {wheel.name: addon_payload.committed_versions(wheel) for wheel in wheels}
    if not any(histories.values()):
        pytest.skip("no git history of addon/wheels here (not a git checkout, or the wheels are not committed yet)")
    for wheel in wheels:
        now = addon_payload.contents(wheel)
        changed = [commit[:9] for commit, data in histories[wheel.name] if addon_payload.contents(data) != now]
        assert changed == [], f"{wheel.name} held other contents in {changed}: give the change a new version"


def test_the_payload_refuses_to_change_a_committed_version(tmp_path: Path, monkeypatch) -> None:
    """script/addon-package writes nothing when a wheel already committed would change under its name."""
    committed = tmp_path / "wheels"
    committed.mkdir()
    demo = next(addon_payload.WHEELS.glob("wyoming_qwen3_demo-*.whl"))
    (committed / demo.name).write_bytes(demo.read_bytes())
    monkeypatch.setattr(addon_payload, "WHEELS", committed)
    monkeypatch.setattr(addon_payload, "build", lambda out: [_rewritten(demo, out / demo.name)])
    monkeypatch.setattr(addon_payload, "committed_versions", lambda wheel: [("0123456789", demo.read_bytes())])
    with pytest.raises(addon_payload.PayloadError, match="set a new version"):
        addon_payload.package(wyoming_qwen3.__version__)
    assert [path.name for path in committed.iterdir()] == [demo.name]


def _rewritten(wheel: Path, out: Path) -> Path:
    """``wheel`` with one member's bytes changed (a model retrained without a new version)."""
    with zipfile.ZipFile(wheel) as source, zipfile.ZipFile(out, "w") as target:
        for item in source.infolist():
            data = source.read(item)
            target.writestr(item, data + b" " if item.filename.endswith("config.json") else data)
    return out


def test_the_load_balancer_spreads_connections_over_the_replicas_the_compose_file_starts() -> None:
    compose = yaml.safe_load((ROOT / "docker-compose.yml").read_text(encoding="utf-8"))["services"]
    balancer, replica = compose["wyoming-qwen3-lb"], compose["wyoming-qwen3-replica"]
    assert balancer["profiles"] == replica["profiles"] == ["scale"]
    assert "ports" not in replica, "only the balancer takes the port"
    config_path = next(v.split(":")[0] for v in balancer["volumes"] if v.endswith("haproxy.cfg:ro"))
    config = (ROOT / config_path).read_text(encoding="utf-8")
    template = re.search(r"^\s*server-template \S+ (\d+) (\S+):(\d+) ", config, re.MULTILINE)
    assert template is not None
    assert template.group(2) == "wyoming-qwen3-replica" and template.group(3) == "10300"
    assert int(template.group(1)) >= replica["deploy"]["replicas"]
    assert re.search(r"^\s*bind :10300$", config, re.MULTILINE) and "mode tcp" in config
