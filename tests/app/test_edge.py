"""The outermost layer: one cross-site rule for every unsafe method, JSON-only run submission,
loopback Host names, security headers on every answer, no slash redirects, /docs offline."""

from __future__ import annotations

import base64
import hashlib
import re
from typing import Any

import pytest

from tests.app.factories import small_config

HEADERS = {
    "x-content-type-options": "nosniff",
    "referrer-policy": "same-origin",
}


@pytest.mark.parametrize(
    "headers",
    [
        {"Sec-Fetch-Site": "cross-site"},
        {"Origin": "http://evil.example"},
        {"Origin": "null"},
        {"Origin": "http://127.0.0.1:8000"},  # another port is another origin
    ],
)
@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("POST", "/api/runs"),
        ("POST", "/scenarios/rfc-review-irqs-off/run"),
        ("POST", "/validation/run"),
        ("POST", "/api/platforms"),
        ("DELETE", "/api/runs/anything"),
    ],
)
def test_cross_site_unsafe_requests_are_refused(
    app_client: Any, method: str, path: str, headers: dict[str, str]
) -> None:
    r = app_client.request(method, path, json={"config": small_config()}, headers=headers)
    assert r.status_code == 403 and set(r.json()) == {"detail"}, r.text


def test_same_origin_requests_pass(app_client: Any) -> None:
    ok = {"Origin": "http://127.0.0.1", "Sec-Fetch-Site": "same-origin"}
    r = app_client.post("/api/runs", json={"config": small_config()}, headers=ok)
    assert r.status_code == 202, r.text
    form = app_client.post("/scenarios/rfc-review-irqs-off/run", headers=ok, follow_redirects=False)
    assert form.status_code == 303 and form.headers["location"].startswith("/scenarios/")
    button = app_client.post("/validation/run", headers=ok, follow_redirects=False)
    assert button.status_code == 303 and button.headers["location"] == "/validation"  # a path, never the Host


@pytest.mark.parametrize("content_type", ["text/plain", "application/x-www-form-urlencoded", None])
def test_run_submission_needs_json(app_client: Any, content_type: str | None) -> None:
    headers = {"Content-Type": content_type} if content_type else {}
    r = app_client.post("/api/runs", content=b'{"config": {}}', headers=headers)
    assert r.status_code == 415 and "application/json" in r.json()["detail"]


def test_only_loopback_host_names_when_bound_to_loopback(app_client: Any) -> None:
    assert app_client.get("/api/platforms", headers={"Host": "localhost:8000"}).status_code == 200
    r = app_client.get("/api/platforms", headers={"Host": "rebind.example:8000"})
    assert r.status_code == 403 and "loopback" in r.json()["detail"]


@pytest.mark.parametrize(
    "path", ["/", "/api/runs", "/api/runs/nope", "/static/css/app.css", "/nope", "/docs", "/openapi.json"]
)
def test_security_headers_on_every_answer(app_client: Any, path: str) -> None:
    r = app_client.get(path)
    csp = r.headers["content-security-policy"]
    assert "frame-ancestors 'none'" in csp and "form-action 'self'" in csp, path
    for name, value in HEADERS.items():
        assert r.headers[name] == value, (path, name)


def test_no_slash_redirects(app_client: Any) -> None:
    for path in ("/api/runs/", "/runs/", "/api/platforms/"):
        r = app_client.get(path, follow_redirects=False)
        assert r.status_code == 404 and "location" not in r.headers, path


def test_docs_work_offline_under_the_csp(app_client: Any) -> None:
    docs = app_client.get("/docs")
    assert docs.status_code == 200
    sources = re.findall(r'(?:src|href)="([^"]+)"', docs.text)
    assert sources and all(s.startswith("/") for s in sources), sources  # nothing from a CDN
    for src in sources:
        assert app_client.get(src).status_code == 200, src
    # The one inline script is allowed by its hash, nothing else inline.
    (inline,) = re.findall(r"<script>(.*?)</script>", docs.text, re.S)
    digest = base64.b64encode(hashlib.sha256(inline.encode()).digest()).decode()
    assert f"'sha256-{digest}'" in docs.headers["content-security-policy"]
    redoc = app_client.get("/redoc")
    assert redoc.status_code == 200
    assert all(s.startswith("/") for s in re.findall(r'src="([^"]+)"', redoc.text))


def test_even_a_bug_answers_in_the_error_shape_with_the_headers(tmp_path: Any) -> None:
    from fastapi.testclient import TestClient

    from app.core.settings import Settings
    from app.main import create_app
    from tests.conftest import sqlite_url

    app = create_app(Settings(database_url=sqlite_url(tmp_path / "bug.db"), workers=0))

    @app.get("/api/bug")
    def bug() -> None:
        raise RuntimeError("a bug")

    with TestClient(app, base_url="http://127.0.0.1", raise_server_exceptions=False) as client:
        r = client.get("/api/bug")
    assert r.status_code == 500 and r.json() == {"detail": "internal error"}
    assert "frame-ancestors 'none'" in r.headers["content-security-policy"]
