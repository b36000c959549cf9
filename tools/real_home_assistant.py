"""Ready a fresh, real Home Assistant for a check of the server against it (docs/design.md, "A home's names").

On a Home Assistant just started with a new configuration folder (its ``demo:``
integration makes lights, covers, fans, areas), this does what a user does in
its frontend: onboarding makes the first user, a long-lived access token is made
and written to a file, the kitchen gets an alias and a floor, and the bed light an
alias. ``--rename ENTITY NAME`` renames an entity afterwards, as the entity's
settings dialog does.

    python -m tools.real_home_assistant --url http://127.0.0.1:8123 --token-file local/ha-token
    python -m tools.real_home_assistant --token-file local/ha-token --rename light.bed_light "Zandor reading lamp"
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
from pathlib import Path
from typing import Any

import aiohttp

from wyoming_qwen3.home.assistant import websocket_url


async def commands(url: str, token: str, *messages: dict[str, Any]) -> list[dict[str, Any]]:
    """Each message's answer from Home Assistant's websocket API."""
    numbers = itertools.count(1)
    answers = []
    async with (
        aiohttp.ClientSession() as session,
        session.ws_connect(websocket_url(url)) as socket,
    ):
        await socket.receive_json()
        await socket.send_json({"type": "auth", "access_token": token})
        if (await socket.receive_json())["type"] != "auth_ok":
            raise SystemExit("the token was rejected")
        for message in messages:
            number = next(numbers)
            await socket.send_json({"id": number, **message})
            while (answer := await socket.receive_json()).get("id") != number:
                pass
            if not answer["success"]:
                raise SystemExit(f"{message['type']}: {answer['error']}")
            answers.append(answer["result"])
    return answers


async def onboard(url: str, token_file: Path) -> None:
    client = url + "/"
    async with aiohttp.ClientSession() as session:
        user = {
            "client_id": client,
            "name": "Check",
            "username": "check",
            "password": "check-password-1",
            "language": "en",
        }
        created = await (await session.post(f"{url}/api/onboarding/users", json=user)).json()
        form = {"grant_type": "authorization_code", "code": created["auth_code"], "client_id": client}
        access = (await (await session.post(f"{url}/auth/token", data=form)).json())["access_token"]
    token, floor = await commands(
        url,
        access,
        {"type": "auth/long_lived_access_token", "client_name": "wyoming-qwen3 check", "lifespan": 30},
        {"type": "config/floor_registry/create", "name": "Ground floor", "level": 0},
    )
    token_file.write_text(token + "\n")
    await commands(
        url,
        token,
        {
            "type": "config/area_registry/update",
            "area_id": "kitchen",
            "aliases": ["cook room"],
            "floor_id": floor["floor_id"],
        },
        {"type": "config/entity_registry/update", "entity_id": "light.bed_light", "aliases": [None, "Zandor lamp"]},
    )
    print(f"onboarded; a long-lived token is in {token_file}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", default="http://127.0.0.1:8123")
    parser.add_argument("--token-file", type=Path, required=True)
    parser.add_argument("--rename", nargs=2, metavar=("ENTITY", "NAME"))
    args = parser.parse_args()
    if args.rename:
        update = {"type": "config/entity_registry/update", "entity_id": args.rename[0], "name": args.rename[1]}
        asyncio.run(commands(args.url, args.token_file.read_text().strip(), update))
    else:
        asyncio.run(onboard(args.url, args.token_file))


if __name__ == "__main__":
    main()
