"""A container's health check: exit 0 when the server answers ``describe`` on its ``--uri`` (tcp, from the environment).

python -m wyoming_qwen3.server.healthcheck
"""

from __future__ import annotations

import json
import os
import socket
import sys
from urllib.parse import urlparse

from .cli import env_name


def main() -> int:
    uri = urlparse(os.environ.get(env_name("--uri"), "tcp://0.0.0.0:10300"))
    if uri.scheme != "tcp" or uri.port is None:
        return 0  # nothing to ask over a socket (stdio://, unix://): the process being up is all there is
    host = "127.0.0.1" if uri.hostname in (None, "", "0.0.0.0") else uri.hostname
    try:
        with socket.create_connection((host, uri.port), timeout=5) as connection:
            connection.sendall(json.dumps({"type": "describe"}).encode() + b"\n")
            answer = connection.makefile("rb").readline()
    except OSError as err:
        print(f"no answer on {host}:{uri.port}: {err}", file=sys.stderr)
        return 1
    return 0 if json.loads(answer or b"{}").get("type") == "info" else 1


if __name__ == "__main__":
    sys.exit(main())
