"""Entry point (``wyoming-qwen3``): read the options, then serve; a bad setting ends in one line, not a traceback."""

from __future__ import annotations

import asyncio
import logging
import sys

from .server.cli import parse_args
from .server.serve import StartupError, serve

_LOGGER = logging.getLogger("wyoming_qwen3")


def run() -> None:
    """Console entry point."""
    args = parse_args()
    # Logs go to stderr, so that stdout stays the Wyoming stream under stdio://.
    logging.basicConfig(level=logging.DEBUG if args.debug else logging.INFO, format=args.log_format)
    _LOGGER.debug(args)
    try:
        asyncio.run(serve(args))
    except StartupError as err:
        print(f"wyoming-qwen3: error: {err}", file=sys.stderr)
        sys.exit(2)
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    run()
