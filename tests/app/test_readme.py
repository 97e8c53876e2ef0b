"""The README's curl examples run against the live server (replayed with httpx), so they stay true."""

from __future__ import annotations

import re
import shlex
from typing import Any

import httpx

from tests.app.factories import small_config
from tests.conftest import REPO_ROOT


def curl_commands() -> list[str]:
    text = (REPO_ROOT / "README.md").read_text()
    block = text.split("## API examples", 1)[1].split("```sh", 1)[1].split("```", 1)[0]
    joined = re.sub(r"\\\n\s*", " ", block)
    commands, current = [], ""
    for line in joined.splitlines():
        stripped = line.strip()
        if stripped.startswith("#") and not current:
            continue
        current = f"{current}\n{line}" if current else stripped
        try:
            shlex.split(current)
        except ValueError:  # an open quote: the command goes on
            continue
        if current:
            commands.append(current)
        current = ""
    return [c for c in commands if c.startswith("curl ")]


def parse_curl(command: str) -> dict[str, Any]:
    args = shlex.split(command)[1:]
    out: dict[str, Any] = {"method": "GET", "headers": {}, "data": None, "url": None}
    i = 0
    while i < len(args):
        a = args[i]
        if a == "-s":
            pass
        elif a == "-X":
            i += 1
            out["method"] = args[i]
        elif a == "-H":
            i += 1
            name, _, value = args[i].partition(":")
            out["headers"][name.strip()] = value.strip()
        elif a == "-d":
            i += 1
            out["data"] = args[i]
            if out["method"] == "GET":
                out["method"] = "POST"
        else:
            out["url"] = a
        i += 1
    return out


def test_readme_curl_examples(live_server: str) -> None:
    commands = curl_commands()
    assert len(commands) >= 10
    with httpx.Client(timeout=120.0) as client:
        made = [
            client.post(f"{live_server}/api/runs?wait=true", json={"config": small_config(seed=s)}).json()
            for s in (501, 502, 503)
        ]
        one_point = {"base": small_config(), "axes": [{"path": "seed", "values": [1]}]}
        sweep = client.post(f"{live_server}/api/sweeps", json=one_point).json()
        subs = {
            "SWEEP_ID": sweep["id"],
            "SWEEP_TOKEN": sweep["delete_token"],
            "RUN_ID": made[0]["id"],
            "TOKEN_FROM_THE_POST": made[0]["delete_token"],
            "RUN_A": made[1]["id"],
            "RUN_B": made[2]["id"],
        }
        for command in commands:
            for key, value in subs.items():
                command = command.replace(key, value)
            req = parse_curl(command)
            url = re.sub(r"^(http://)?localhost:8000", live_server, req["url"])
            r = client.request(req["method"], url, headers=req["headers"], content=req["data"])
            assert r.status_code < 300, f"{command}\n-> {r.status_code} {r.text[:500]}"
