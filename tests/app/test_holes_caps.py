"""Queue caps in expected events (issue 23, hole 2): one client's queued and running work beyond
its cap is a 429, the whole queue's beyond its own a 503, both with Retry-After in the one error
shape and in OpenAPI; behind a trusted proxy the client is the first untrusted X-Forwarded-For hop."""

from __future__ import annotations

import warnings
from typing import Any

import pytest

from app.runs.lifecycle import QueueCaps
from engine import SimConfig
from tests.app.factories import small_config

EVENTS = SimConfig.model_validate(small_config()).expected_events()


def other_client(app: Any, host: str) -> Any:
    """A client of the same app (its lifespan already running) from another peer address."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from fastapi.testclient import TestClient
    return TestClient(app, base_url="http://127.0.0.1", client=(host, 50000))


def post_run(client: Any, seed: int, **headers: str) -> Any:
    return client.post("/api/runs", json={"config": small_config(seed=seed)}, headers=headers)


def test_a_client_over_its_queued_events_gets_429_and_others_still_submit(app_client: Any) -> None:
    app_client.app.state.submitter.caps = QueueCaps(client_events=2.5 * EVENTS, all_events=100 * EVENTS)
    assert [post_run(app_client, s).status_code for s in (1, 2)] == [202, 202]
    r = post_run(app_client, 3)
    assert r.status_code == 429 and r.headers["retry-after"].isdigit()
    assert "this client has about" in r.json()["detail"] and "limit" in r.json()["detail"]
    # A sweep counts every point: refused whole, nothing stored.
    sweep = {"base": small_config(), "axes": [{"path": "seed", "values": [10, 11]}]}
    assert app_client.post("/api/sweeps", json=sweep).status_code == 429
    assert len(app_client.get("/api/runs").json()["runs"]) == 2
    # Another address has its own allowance.
    assert post_run(other_client(app_client.app, "10.0.0.7"), 4).status_code == 202


def test_the_whole_queue_over_its_events_is_503(app_client: Any) -> None:
    app_client.app.state.submitter.caps = QueueCaps(client_events=100 * EVENTS, all_events=2.5 * EVENTS)
    assert post_run(other_client(app_client.app, "10.0.0.1"), 1).status_code == 202
    assert post_run(other_client(app_client.app, "10.0.0.2"), 2).status_code == 202
    r = post_run(other_client(app_client.app, "10.0.0.3"), 3)
    assert r.status_code == 503 and r.headers["retry-after"].isdigit()
    assert "the queue holds about" in r.json()["detail"]


@pytest.mark.parametrize("app_client", ["sqlite"], indirect=True)
def test_behind_a_trusted_proxy_the_client_is_the_first_untrusted_hop(app_client: Any) -> None:
    app_client.app.state.submitter.caps = QueueCaps(client_events=1.5 * EVENTS, all_events=100 * EVENTS)
    proxy = other_client(app_client.app, "10.1.2.3")
    # Untrusted (no IDLELAB_TRUSTED_PROXY): the proxy's address is the client, whatever it forwards.
    assert post_run(proxy, 1, **{"X-Forwarded-For": "192.0.2.1"}).status_code == 202
    assert post_run(proxy, 2, **{"X-Forwarded-For": "192.0.2.2"}).status_code == 429
    app_client.app.state.settings.trusted_proxy = "10.1.0.0/16"
    # Trusted: the hop left of the proxies; a made-up hop further left changes nothing.
    assert post_run(proxy, 3, **{"X-Forwarded-For": "192.0.2.1"}).status_code == 202
    assert post_run(proxy, 4, **{"X-Forwarded-For": "6.6.6.6, 192.0.2.1, 10.1.9.9"}).status_code == 429
    assert post_run(proxy, 5, **{"X-Forwarded-For": "192.0.2.2"}).status_code == 202


@pytest.mark.parametrize("app_client", ["sqlite"], indirect=True)
def test_429_and_503_are_documented_on_the_submitting_routes(app_client: Any) -> None:
    paths = app_client.get("/openapi.json").json()["paths"]
    for path in ("/api/runs", "/api/sweeps", "/api/measurements/{measurement_id}/simulate"):
        responses = paths[path]["post"]["responses"]
        assert {"429", "503"} <= set(responses), path
