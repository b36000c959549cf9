"""The zeroconf announcement, browsed with the zeroconf package on loopback."""

from __future__ import annotations

import socket
import threading
import uuid

from zeroconf import IPVersion, ServiceBrowser, ServiceListener, Zeroconf

from wyoming_qwen3.discovery import SERVICE_TYPE, routable_address

from .conftest import start_server


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
    finally:
        assert server.stop() == 0, server.log()
    try:
        assert wait_for(lambda: full_name in collector.removed, collector, 15), "announcement not withdrawn"
    finally:
        browser.cancel()
        zc.close()


def test_unspecified_bind_address_is_never_announced() -> None:
    assert routable_address("127.0.0.1") == "127.0.0.1"
    try:
        detected = routable_address("0.0.0.0")
    except OSError:
        return  # a machine with no network at all: refusing is right too
    assert detected != "0.0.0.0"
