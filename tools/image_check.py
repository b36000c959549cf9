"""Build the images and check that they serve (script/image-check; opt-in, not in CI).

With podman (or docker): builds the CPU image, measures its size, the build time
and the rebuild after a change to the code only (the dependency layer cached),
runs it and checks the health check, ``describe``, a transcript with the demo
model, an override from the environment, the non-root data folder, and the
zeroconf announcement withdrawn on stop. The add-on is built as the Supervisor
builds it (addon/ alone as the context, BUILD_FROM from build.yaml, BUILD_VERSION
from config.yaml) and run with its options in /data/options.json, as the
Supervisor writes them. All traffic stays on loopback and in two network
namespaces made here.

Where no image registry is reachable, a local Debian 12 root (debootstrap, with
Debian's Python 3.11) stands in for the base images: pass ``--base-root DIR``. The
add-on's base then gets stand-ins for the bashio and s6 with-contenv that Home
Assistant's base images carry (tools/standins/bashio/).

    python -m tools.image_check [--engine podman] [--base-root DIR] [--torch-wheel WHEEL] [--gpu]
        [--build-host NAME:IP ...] [--build-volume SRC:DST ...]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
import wave
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from tools import supervisor_rules
from tools.client import describe, stream
from tools.netns import NamespacesUnavailable, stand_in_lan
from tools.server_process import free_port
from tools.speech import as_speech, pcm16, speak

ROOT = Path(__file__).resolve().parent.parent
WORK = ROOT / "local" / "image-check"
PYTHON_BASE = "python:3.11-slim-bookworm"
#: What Home Assistant's base images carry that a plain Debian root lacks (tools/standins/bashio/).
ADDON_BASE_EXTRAS = {"bashio": "/usr/bin/bashio", "with-contenv": "/command/with-contenv"}
RUN_SCRIPT = "/etc/s6-overlay/s6-rc.d/wyoming-qwen3/run"
COMMAND = "turn on the kitchen lights"
#: runc, with the container's RLIMIT_NPROC taken out of its spec (see Engine.allow_process_limit).
RUNTIME_WITHOUT_NPROC = """#!{python}
import json, os, sys
args = sys.argv[1:]


def without_nproc(path, process=lambda spec: spec.setdefault("process", {{}})):
    with open(path) as file:
        spec = json.load(file)
    part = process(spec)
    part["rlimits"] = [r for r in part.get("rlimits", []) if r.get("type") != "RLIMIT_NPROC"]
    with open(path, "w") as file:
        json.dump(spec, file)


if "--bundle" in args:  # create: the container's spec
    without_nproc(os.path.join(args[args.index("--bundle") + 1], "config.json"))
if "--process" in args:  # exec: the new process's spec
    without_nproc(args[args.index("--process") + 1], lambda spec: spec)
os.execv("{runc}", ["runc", *args])
"""
#: podman where it runs inside a sandbox: runc, cgroupfs, and open files up to the sandbox's own limit.
CONTAINERS_CONF = """[containers]
default_ulimits = ["nofile={files}:{files}"]
[engine]
runtime = "runc"
cgroup_manager = "cgroupfs"
events_logger = "file"
"""


@dataclass
class Report:
    figures: dict[str, object] = field(default_factory=dict)
    failures: list[str] = field(default_factory=list)

    def check(self, what: str, ok: bool, detail: object = "") -> None:
        print(f"{'ok  ' if ok else 'FAIL'} {what}{': ' + str(detail) if detail != '' else ''}", flush=True)
        if not ok:
            self.failures.append(what)


class Engine:
    """podman or docker, with the options every call and every build gets here."""

    def __init__(self, name: str, build_options: list[str]) -> None:
        self.name = name
        #: Options every build gets (hosts, volumes, the torch index): what reaches a registry from here.
        self.build_options = build_options
        self.global_options: list[str] = []
        self.environment = dict(os.environ)
        if name == "podman":
            WORK.mkdir(parents=True, exist_ok=True)
            files = resource.getrlimit(resource.RLIMIT_NOFILE)[1]  # podman's default is above a sandbox's
            (WORK / "containers.conf").write_text(CONTAINERS_CONF.format(files=files))
            self.environment["CONTAINERS_CONF"] = str(WORK / "containers.conf")

    def call(self, *args: str, capture: bool = True, timeout: float = 3600) -> subprocess.CompletedProcess[str]:
        command = [self.name, *self.global_options, *args]
        return subprocess.run(command, env=self.environment, capture_output=capture, text=True, timeout=timeout)

    def run(self, *args: str, check: bool = True, capture: bool = True, timeout: float = 3600) -> str:
        result = self.call(*args, capture=capture, timeout=timeout)
        if check and result.returncode != 0:
            raise RuntimeError(f"{self.name} {' '.join(args[:3])} ... failed:\n{result.stderr}")
        return (result.stdout or "").strip()

    def has_image(self, tag: str) -> bool:
        return self.call("image", "inspect", tag).returncode == 0

    def allow_process_limit(self, image: str) -> None:
        """Some sandboxes refuse setrlimit(RLIMIT_NPROC), which podman asks of the runtime for every container
        it runs as root: there, containers run through a runtime that leaves that one limit out."""
        probe = self.call("run", "--rm", image, "true")
        if probe.returncode == 0 or not any(s in probe.stderr for s in ("RLIMIT_NPROC", "rlimit type 6")):
            return
        wrapper = WORK / "runc-without-nproc"
        wrapper.write_text(RUNTIME_WITHOUT_NPROC.format(python=sys.executable, runc=shutil.which("runc")))
        wrapper.chmod(0o755)
        self.global_options = ["--runtime", str(wrapper)]
        print(f"note: this machine refuses RLIMIT_NPROC; containers run through {wrapper}", flush=True)

    def build(self, tag: str, dockerfile: Path, context: Path, *build_args: str) -> float:
        arguments = [f"--build-arg={a}" for a in build_args]
        formats = ["--format", "docker"] if self.name == "podman" else []  # the OCI format has no HEALTHCHECK
        began = time.monotonic()
        self.run(
            "build", *formats, "-t", tag, "-f", str(dockerfile), *self.build_options, *arguments, str(context),
            capture=False,
        )  # fmt: skip
        return round(time.monotonic() - began, 1)

    def size_mb(self, tag: str) -> int:
        return round(int(self.run("image", "inspect", "--format", "{{.Size}}", tag)) / 1e6)


def stand_in_base(engine: Engine, root: Path, python_base: str, addon_base: str) -> None:
    """A local Debian root imported as the base images the Dockerfiles name; the add-on's base gets the
    stand-ins for what Home Assistant's base images carry (bashio, s6's with-contenv)."""
    if not engine.has_image(python_base):
        (root / "usr/lib/python3.11/EXTERNALLY-MANAGED").unlink(missing_ok=True)  # as the python image: pip may
        archive = subprocess.Popen(["tar", "-C", str(root), "-c", "."], stdout=subprocess.PIPE)
        result = subprocess.run(
            [engine.name, "import", "--change", "CMD /bin/bash", "-", python_base],
            stdin=archive.stdout,
            env=engine.environment,
            capture_output=True,
            text=True,
        )
        archive.wait()
        if result.returncode != 0:
            raise RuntimeError(f"import failed: {result.stderr}")
    if not engine.has_image(addon_base):
        context = WORK / "addon-base"
        shutil.rmtree(context, ignore_errors=True)
        shutil.copytree(ROOT / "tools" / "standins" / "bashio", context)
        copies = "".join(f"COPY {name} {target}\n" for name, target in ADDON_BASE_EXTRAS.items())
        (context / "Dockerfile").write_text(f"FROM {python_base}\n{copies}")
        engine.build(addon_base, context / "Dockerfile", context)


def context_copy(destination: Path) -> Path:
    """The files git tracks (and the untracked ones it does not ignore), as a build context."""
    shutil.rmtree(destination, ignore_errors=True)
    files = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard"], cwd=ROOT, capture_output=True, text=True
    ).stdout.split()
    for name in files:
        source = ROOT / name
        if source.is_file():
            (destination / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, destination / name)
    return destination


def wait_ready(engine: Engine, container: str, timeout: float = 300) -> float:
    began = time.monotonic()
    while time.monotonic() - began < timeout:
        logs = engine.call("logs", container)  # the server logs to stderr
        if "Ready" in logs.stdout + logs.stderr:
            return round(time.monotonic() - began, 1)
        if engine.run("inspect", "--format", "{{.State.Running}}", container, check=False) == "false":
            raise RuntimeError(f"{container} exited:\n{logs.stdout}{logs.stderr}")
        time.sleep(0.5)
    raise RuntimeError(f"{container} not ready in {timeout} s")


def transcript(port: int) -> str:
    reply = asyncio.run(stream("127.0.0.1", port, as_speech(speak(COMMAND)), language="en"))
    return reply.text


def check_cpu_image(engine: Engine, report: Report, tag: str) -> None:
    data = WORK / "data"
    shutil.rmtree(data, ignore_errors=True)
    data.mkdir(parents=True)
    if os.geteuid() == 0:
        os.chown(data, 1000, 1000)  # the image's user, as a host folder given to it must be
    port, other = free_port(), free_port()
    name = f"wq3-check-{uuid.uuid4().hex[:6]}"
    engine.run(
        "run", "-d", "--name", name, "-p", f"127.0.0.1:{port}:10300", "-v", f"{data}:/data",
        "-e", "WYOMING_QWEN3_MODEL=demo", tag, "--emission-log", "/data/emissions.jsonl",
    )  # fmt: skip
    try:
        report.figures["ready_seconds"] = wait_ready(engine, name)
        health = engine.call("healthcheck", "run", name).returncode
        report.check("health check (describe inside the container)", health == 0)
        info = asyncio.run(describe("127.0.0.1", port)).data["asr"][0]
        report.check("describe", info["name"] == "qwen3-asr", info["models"][0]["name"])
        text = transcript(port)
        report.check("a transcript with the demo model", text == COMMAND, text)
        owner = engine.run("exec", name, "stat", "-c", "%U %u", "/data/emissions.jsonl", check=False)
        user = engine.run("exec", name, "id", "-un", check=False)
        report.check("the server runs as a user of its own, who owns what it writes in /data",
                     user == "wyoming" and owner.startswith("wyoming"), f"{user}; {owner}")  # fmt: skip
    finally:
        engine.run("rm", "-f", name, check=False)
    overridden = f"{name}-env"
    engine.run(
        "run", "-d", "--name", overridden, "-p", f"127.0.0.1:{other}:10555",
        "-e", "WYOMING_QWEN3_MODEL=demo", "-e", "WYOMING_QWEN3_URI=tcp://0.0.0.0:10555", tag,
    )  # fmt: skip
    try:
        wait_ready(engine, overridden)
        report.check("WYOMING_QWEN3_URI overrides the port", bool(asyncio.run(describe("127.0.0.1", other)).data))
    finally:
        engine.run("rm", "-f", overridden, check=False)


def check_zeroconf(engine: Engine, report: Report, tag: str) -> None:
    """The image with --zeroconf in one network namespace, a browser in another: announced, then withdrawn."""
    name = f"wq3-zc-{uuid.uuid4().hex[:6]}"
    try:
        with stand_in_lan("10.253.0.1", "10.253.0.2") as lan:
            with tempfile.TemporaryDirectory() as folder:
                wav = Path(folder) / "command.wav"
                with wave.open(str(wav), "wb") as out:
                    out.setnchannels(1)
                    out.setsampwidth(2)
                    out.setframerate(16000)
                    out.writeframes(pcm16(speak(COMMAND)))
                browser = subprocess.Popen(
                    lan.command(lan.client, sys.executable, "-m", "tools.lan_client", str(wav), "en"),
                    cwd=ROOT,
                    stdout=subprocess.PIPE,
                    text=True,
                )
                engine.run(
                    "run", "-d", "--name", name, "--network", f"ns:/run/netns/{lan.server}",
                    "-e", "WYOMING_QWEN3_MODEL=demo", tag, "--zeroconf",
                )  # fmt: skip
                assert browser.stdout is not None
                lines = [json.loads(browser.stdout.readline())]  # browsing
                lines.append(json.loads(browser.stdout.readline()))  # the report: discovered, described, transcribed
                engine.run("stop", "-t", "30", name)
                lines.append(json.loads(browser.stdout.readline()))  # the withdrawal
                browser.wait(timeout=60)
        report.check("announced over zeroconf, used", lines[1].get("transcript") == COMMAND, lines[1])
        report.check("the announcement withdrawn on stop", lines[2] == {"removed": True}, lines[2])
    except NamespacesUnavailable as err:
        report.check(f"zeroconf ({err})", False)
    finally:
        engine.run("rm", "-f", name, check=False)


def addon_file(name: str) -> dict[str, Any]:
    """One of the add-on's YAML files (config.yaml, build.yaml), as the Supervisor reads it."""
    return dict(yaml.safe_load((ROOT / "addon" / name).read_text(encoding="utf-8")))


def addon_context(destination: Path) -> Path:
    """addon/ alone, copied to an empty folder: the context the Supervisor builds the add-on in."""
    shutil.rmtree(destination, ignore_errors=True)
    shutil.copytree(ROOT / "addon", destination)
    return destination


def check_addon(engine: Engine, report: Report) -> None:
    """The add-on built as the Supervisor builds it, run with its options in /data/options.json.

    The Supervisor builds with the add-on's folder as the context, BUILD_FROM from build.yaml and
    BUILD_VERSION from config.yaml, and writes the options it validated to /data/options.json; the
    run script (the real one, started through its own shebang) reads them through bashio.
    """
    config, build = addon_file("config.yaml"), addon_file("build.yaml")
    context = addon_context(WORK / "addon-context")
    tag = "wyoming-qwen3-addon:check"
    report.figures["addon_build_seconds"] = engine.build(
        tag,
        context / "Dockerfile",
        context,
        f"BUILD_FROM={build['build_from']['amd64']}",
        f"BUILD_VERSION={config['version']}",
        "BUILD_ARCH=amd64",
    )
    report.figures["addon_image_mb"] = engine.size_mb(tag)
    # The options as the Supervisor writes them: the user's changes over the defaults, once they meet the schema.
    options = {**config["options"], "model": "demo", "language": "en", "debug_logging": True}
    problems = supervisor_rules.option_problems(config["schema"], options)
    if problems:
        raise RuntimeError(f"the Supervisor would refuse these options: {problems}")
    data = WORK / "addon-data"
    shutil.rmtree(data, ignore_errors=True)
    data.mkdir(parents=True)
    (data / "options.json").write_text(json.dumps(options))
    port = free_port()
    name = f"wq3-addon-{uuid.uuid4().hex[:6]}"
    engine.run(
        "run", "-d", "--name", name, "-p", f"127.0.0.1:{port}:10300", "-v", f"{data}:/data",
        "--entrypoint", RUN_SCRIPT, tag,
    )  # fmt: skip
    try:
        report.figures["addon_ready_seconds"] = wait_ready(engine, name)
        logs = engine.call("logs", name)
        log = logs.stdout + logs.stderr
        text = transcript(port)
        report.check("the add-on serves a transcript with the options in /data/options.json", text == COMMAND, text)
        report.check(
            "its options reach the server (demo, auto = int8 on the CPU, debug logging)",
            "demo" in log and "int8 decoder" in log and "DEBUG" in log,
            next((line for line in log.splitlines() if "Loading" in line), "no 'Loading' line"),
        )
        health = engine.call("healthcheck", "run", name).returncode
        report.check("the add-on's health check", health == 0)
    finally:
        engine.run("rm", "-f", name, check=False)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--engine", choices=("podman", "docker"), help="default: podman, else docker")
    parser.add_argument("--base-root", type=Path, help="a Debian 12 root to stand in for the base images")
    parser.add_argument("--gpu", action="store_true", help="also build the GPU image (PyPI's CUDA torch: GBs)")
    parser.add_argument(
        "--torch-wheel", type=Path, help="torch's CPU wheel for the builds (default: the Dockerfile's index)"
    )
    parser.add_argument("--build-host", action="append", default=[], metavar="NAME:IP", help="a host for builds")
    parser.add_argument("--build-volume", action="append", default=[], metavar="SRC:DST", help="a folder for builds")
    args = parser.parse_args()
    name = args.engine or next((e for e in ("podman", "docker") if shutil.which(e)), None)
    if name is None:
        print("script/image-check needs podman or docker", file=sys.stderr)
        return 2
    options = [f"--add-host={host}" for host in args.build_host] + [f"--volume={v}" for v in args.build_volume]
    if args.torch_wheel:  # served to the builds as a one-package index
        index = WORK / "torch-index"
        shutil.rmtree(index, ignore_errors=True)
        (index / "torch").mkdir(parents=True)
        shutil.copy2(args.torch_wheel, index / "torch" / args.torch_wheel.name)
        link = f'<a href="{args.torch_wheel.name}">{args.torch_wheel.name}</a>'
        (index / "torch" / "index.html").write_text(f"<!DOCTYPE html><html><body>{link}</body></html>\n")
        options += [f"--volume={index}:/torch-index:ro", "--build-arg=TORCH_INDEX=file:///torch-index"]
    engine = Engine(name, options)
    report = Report()
    if args.base_root is not None:
        stand_in_base(engine, args.base_root, PYTHON_BASE, addon_file("build.yaml")["build_from"]["amd64"])
    if name == "podman":
        engine.allow_process_limit(PYTHON_BASE)
    tag = "wyoming-qwen3:check"
    context = context_copy(WORK / "context")
    report.figures["build_seconds"] = engine.build(tag, context / "Dockerfile", context)
    report.figures["image_mb"] = engine.size_mb(tag)
    layers = json.loads(engine.run("history", "--format", "json", tag))
    report.figures["dependency_layer_mb"] = round(
        sum(layer["size"] for layer in layers if "install-deps" in layer.get("CreatedBy", "")) / 1e6
    )
    # A change to the code only: the layers before it come from the cache.
    (context / "wyoming_qwen3" / "__init__.py").write_text(
        (ROOT / "wyoming_qwen3" / "__init__.py").read_text() + f"# a change to the code only, {time.time()}\n"
    )
    report.figures["code_change_rebuild_seconds"] = engine.build(tag, context / "Dockerfile", context)
    report.check("a code-only change rebuilds in under 30 s", report.figures["code_change_rebuild_seconds"] < 30)
    check_cpu_image(engine, report, tag)
    check_zeroconf(engine, report, tag)
    check_addon(engine, report)
    if args.gpu:
        gpu = [option for option in options if "TORCH_INDEX" not in option]
        report.figures["gpu_build_seconds"] = Engine(name, gpu).build(
            "wyoming-qwen3:gpu",
            context / "Dockerfile",
            context,
            "TORCH=torch==2.13.0",
            "TORCH_INDEX=https://pypi.org/simple",
        )
        report.figures["gpu_image_mb"] = engine.size_mb("wyoming-qwen3:gpu")
    report.figures.update(date=time.strftime("%Y-%m-%d"), engine=engine.run("--version"))
    print(json.dumps(report.figures, indent=1))
    (WORK / "figures.json").write_text(json.dumps(report.figures, indent=1) + "\n")
    if report.failures:
        print(f"{len(report.failures)} check(s) failed: {', '.join(report.failures)}", file=sys.stderr)
        return 1
    print("every check passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
