"""A stand-in LAN: two network namespaces joined by a veth pair, so that no packet leaves this machine.

Each host has an address and a default route (what picks the address a server announces).
Needs root and iproute2.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import uuid
from collections.abc import Iterator
from dataclasses import dataclass


class NamespacesUnavailable(RuntimeError):
    """This machine (or user) cannot make network namespaces."""


def ip(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    return subprocess.run(["ip", *args], check=check, capture_output=True, text=True)


@dataclass(frozen=True)
class Lan:
    """Two namespaces, a server host and a client host, on one veth link."""

    server: str
    client: str

    def command(self, namespace: str, *command: str) -> list[str]:
        return ["ip", "netns", "exec", namespace, *command]


@contextlib.contextmanager
def stand_in_lan(server_address: str, client_address: str) -> Iterator[Lan]:
    if os.geteuid() != 0 or shutil.which("ip") is None:
        raise NamespacesUnavailable("a stand-in LAN needs root and iproute2 (ip netns)")
    tag = uuid.uuid4().hex[:6]
    lan = Lan(server=f"wq3-srv-{tag}", client=f"wq3-cli-{tag}")
    try:
        ip("netns", "add", lan.server)
    except subprocess.CalledProcessError as err:
        raise NamespacesUnavailable(f"this machine cannot make network namespaces: {err.stderr.strip()}") from err
    try:
        ip("netns", "add", lan.client)
        ip("link", "add", f"wq3s{tag}", "netns", lan.server, "type", "veth", "peer", f"wq3c{tag}", "netns", lan.client)
        for namespace, device, address in (
            (lan.server, f"wq3s{tag}", server_address),
            (lan.client, f"wq3c{tag}", client_address),
        ):
            ip("-n", namespace, "link", "set", "lo", "up")
            ip("-n", namespace, "addr", "add", f"{address}/24", "dev", device)
            ip("-n", namespace, "link", "set", device, "up")
            ip("-n", namespace, "route", "add", "default", "dev", device)
        yield lan
    finally:
        for namespace in (lan.server, lan.client):
            ip("netns", "del", namespace, check=False)
