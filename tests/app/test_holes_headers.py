"""One reading of each header the checks use: sent twice is a 400, `Sec-Fetch-Site` in any case,
an absolute-form target naming another host refused."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from app.core.web import cross_site_refusal, malformed_request
from tests.app.factories import small_config


def scope(
    headers: list[tuple[bytes, bytes]], method: str = "POST", path: str = "/api/runs"
) -> dict[str, Any]:
    return {"type": "http", "method": method, "path": path, "raw_path": path.encode(), "headers": headers}


HOST = (b"host", b"127.0.0.1")


@pytest.mark.parametrize("name", [b"host", b"origin", b"sec-fetch-site"])
def test_a_header_sent_twice_is_malformed(name: bytes) -> None:
    headers = [HOST] if name != b"host" else []
    headers += [(name, b"127.0.0.1"), (name, b"evil.example")]
    assert malformed_request(scope(headers)) is not None
    assert malformed_request(scope([HOST, (b"origin", b"http://127.0.0.1")])) is None


@pytest.mark.parametrize("value", [b"Cross-Site", b"CROSS-SITE", b" cross-site "])
def test_sec_fetch_site_in_any_case(value: bytes) -> None:
    assert cross_site_refusal(scope([HOST, (b"sec-fetch-site", value)]), loopback_only=True)


def test_an_absolute_target_must_name_the_host() -> None:
    assert malformed_request(scope([HOST], "GET", "http://evil.example/api/runs")) is not None
    assert malformed_request(scope([HOST], "GET", "http://127.0.0.1/api/runs")) is None


def test_duplicate_origin_through_the_app(app_client: Any) -> None:
    transport = app_client.app

    async def call() -> int:
        status = 0
        sent = False

        async def receive() -> dict[str, Any]:
            nonlocal sent
            if not sent:
                sent = True
                return {"type": "http.request", "body": b"{}", "more_body": False}
            return {"type": "http.disconnect"}

        async def send(message: dict[str, Any]) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]

        headers = [HOST, (b"content-type", b"application/json")]
        headers += [(b"origin", b"http://127.0.0.1"), (b"origin", b"http://evil.example")]
        full = {**scope(headers), "query_string": b"", "scheme": "http", "server": ("127.0.0.1", 80)}
        await transport(full, receive, send)
        return status

    assert asyncio.run(call()) == 400
    assert app_client.post("/api/runs", json={"config": small_config()}).status_code == 202
