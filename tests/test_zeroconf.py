"""The zeroconf announcement, browsed with the zeroconf package on loopback."""

from __future__ import annotations

import socket
import subprocess
import sys
import threading
import uuid
from pathlib import Path

from zeroconf import IPVersion, ServiceBrowser, ServiceListener, Zeroconf

from wyoming_qwen3.server.discovery import SERVICE_TYPE, routable_address

from .conftest import SERVER_ADDRESS, Lan, ip, start_server

ROOT = Path(__file__).resolve().parent.parent


class Collector(ServiceListener):
    """Remembers which services were added and removed."""

    def __init__(self) -> None:
        self.added: set[str] = set()
        self.removed: set[str] = set()
        self.changed = threading.Event()

    def add_service(self, zc: Zeroconf, type_: str, name: str) -> None:
        self.added.add(name)
        self.changed.set()

    def remove_service(self, zc: Zeroconf, type_: str, name: str) -> None:
        self.removed.add(name)
        self.changed.set()

    def update_service(self, zc: Zeroconf, type_: str, name: str) -> None:
        self.changed.set()


def wait_for(condition, collector: Collector, timeout: float) -> bool:  # noqa: ANN001
    deadline = threading.Event()
    timer = threading.Timer(timeout, deadline.set)
    timer.start()
    try:
        while not condition():
            if deadline.is_set():
                return False
            collector.changed.wait(0.2)
            collector.changed.clear()
        return True
    finally:
        timer.cancel()


def test_server_is_announced_with_its_port_and_withdrawn_on_shutdown(scripted_model, tmp_path) -> None:
    name = f"wyoming-qwen3-test-{uuid.uuid4().hex[:8]}"
    full_name = f"{name}.{SERVICE_TYPE}"
    zc = Zeroconf(interfaces=["127.0.0.1"], ip_version=IPVersion.V4Only)
    collector = Collector()
    browser = ServiceBrowser(zc, SERVICE_TYPE, collector)
    server = start_server(scripted_model, tmp_path / "zeroconf.log", "--zeroconf", name)
    try:
        assert wait_for(lambda: full_name in collector.added, collector, 30), server.log()
        info = zc.get_service_info(SERVICE_TYPE, full_name, timeout=5000)
        assert info is not None
        assert info.port == server.port
        addresses = [socket.inet_ntoa(a) for a in info.addresses]
        assert addresses == ["127.0.0.1"]
        assert "0.0.0.0" not in addresses
        # Announced, but useless to every other host: the log says so and what to bind instead.
        assert "a loopback address that no other host can reach" in server.log()
        assert "bind --uri tcp://0.0.0.0:" in server.log()
    finally:
        assert server.stop() == 0, server.log()
    try:
        assert wait_for(lambda: full_name in collector.removed, collector, 15), "announcement not withdrawn"
    finally:
        browser.cancel()
        zc.close()


def announced_address(command: list[str]) -> subprocess.CompletedProcess[str]:
    """What ``routable_address`` picks for a server bound to 0.0.0.0, run by ``command`` (a namespace's)."""
    code = "from wyoming_qwen3.server.discovery import routable_address; print(routable_address('0.0.0.0'))"
    return subprocess.run([*command, sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=60)


def test_a_server_bound_to_every_interface_announces_its_default_routes_address(lan: Lan) -> None:
    assert routable_address("127.0.0.1") == "127.0.0.1"  # a specific address is announced as it is
    result = announced_address(lan.command(lan.server, "env"))
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == SERVER_ADDRESS  # the LAN address, never 0.0.0.0


def test_a_host_with_no_route_announces_nothing_and_says_why(lan: Lan) -> None:
    alone = f"{lan.server}-alone"
    ip("netns", "add", alone)
    try:
        ip("-n", alone, "link", "set", "lo", "up")
        result = announced_address(["ip", "netns", "exec", alone])
    finally:
        ip("netns", "del", alone, check=False)
    assert result.returncode != 0
    assert "OSError: no network interface to announce on" in result.stderr
