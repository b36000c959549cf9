"""Announcing the server on the LAN over zeroconf (``_wyoming._tcp.local.``).

``wyoming.zeroconf.HomeAssistantZeroconf`` announces whatever host it is given
(so ``0.0.0.0`` for a server bound to all interfaces, which Home Assistant
cannot connect to) and has no way to unregister; this class announces a
routable address and withdraws it on shutdown. The caller registers it only
once the port accepts connections, so a browser that connects on discovery is
never refused.
"""

from __future__ import annotations

import ipaddress
import logging
import socket

from zeroconf import InterfaceChoice, IPVersion
from zeroconf.asyncio import AsyncServiceInfo, AsyncZeroconf

_LOGGER = logging.getLogger(__name__)

SERVICE_TYPE = "_wyoming._tcp.local."
#: mDNS multicast group: "connecting" a UDP socket to it picks the interface
#: (and so the address) that LAN traffic leaves from, without sending anything.
_MDNS_GROUP = "224.0.0.251"


def routable_address(bind_host: str) -> str:
    """The address to announce for a server bound to ``bind_host``."""
    address = ipaddress.ip_address(socket.gethostbyname(bind_host)) if bind_host else None
    if address is not None and not address.is_unspecified:
        return str(address)
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        try:
            probe.connect((_MDNS_GROUP, 5353))
            detected = probe.getsockname()[0]
        except OSError as err:
            raise OSError(f"no network interface to announce on: {err}") from err
    if ipaddress.ip_address(detected).is_unspecified:
        raise OSError("no routable address found to announce; bind --uri to a specific address")
    return detected


class ServiceAnnouncement:
    """One registered ``_wyoming._tcp`` service."""

    def __init__(self, name: str, host: str, port: int, *, all_interfaces: bool) -> None:
        """Announce ``host:port``: on every interface for a server bound to all of
        them, else on the interface of ``host`` alone (loopback for tests)."""
        self.name = name
        self.host = host
        self.port = port
        interfaces = InterfaceChoice.All if all_interfaces else [host]
        self._zeroconf = AsyncZeroconf(interfaces=interfaces, ip_version=IPVersion.V4Only)
        self._info = AsyncServiceInfo(
            SERVICE_TYPE,
            f"{name}.{SERVICE_TYPE}",
            addresses=[socket.inet_aton(host)],
            port=port,
            server=f"{name}.local.",
        )
        self._registered = False

    # zeroconf's async_(un)register_service returns a task once the records are
    # queued; awaiting that task waits until the announcement (or goodbye)
    # packets have been sent, which matters before closing the socket.
    async def register(self) -> None:
        await (await self._zeroconf.async_register_service(self._info))
        self._registered = True
        _LOGGER.info("Announced %s on %s:%s over zeroconf", self._info.name, self.host, self.port)

    async def close(self) -> None:
        """Withdraw the announcement (if it went out) and close the sockets."""
        if self._registered:
            await (await self._zeroconf.async_unregister_service(self._info))
            self._registered = False
            _LOGGER.info("Withdrew zeroconf announcement %s", self._info.name)
        await self._zeroconf.async_close()
