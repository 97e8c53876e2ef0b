"""Notes and exports through a real server: notes as their own resource (token, limits, links,
every kind), the run answer's ETag covering the note, snapshots as attachments, and the
recreate snippets run for real against the server."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from html.parser import HTMLParser
from typing import Any

import httpx
import pytest

from tests.app.factories import small_config, submit, wait_finished


@pytest.fixture(scope="module")
def client(live_server: str) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=live_server, timeout=120.0) as c:
        yield c


@pytest.fixture(scope="module")
def run(client: httpx.Client) -> dict[str, Any]:
    made = submit(client, small_config(seed=81, duration_ms=10), title="noted", repeats=3)
    return {**wait_finished(client, made["id"]), "delete_token": made["delete_token"]}


def put_note(client: httpx.Client, path: str, text: object, token: str | None) -> httpx.Response:
    headers = {} if token is None else {"X-Delete-Token": token}
    return client.put(f"{path}/note", json={"text": text}, headers=headers)


def test_a_note_is_its_own_resource_and_the_run_etag_covers_it(
    client: httpx.Client, run: dict[str, Any]
) -> None:
    path = f"/api/runs/{run['id']}"
    assert client.get(f"{path}/note").status_code == 404
    before = client.get(path)
    assert before.json()["note"] is None
    stored = before.content

    assert put_note(client, path, "mine", None).status_code == 403
    assert put_note(client, path, "mine", "wrong").status_code == 403
    text = "Regressed by 779b1a1cb13a, see <202508251419.d8117ed7-lkp@intel.com> and https://example.org/x."
    r = put_note(client, path, text, run["delete_token"])
    assert r.status_code == 200, r.text
    note = r.json()
    assert note["text"] == text and note["version"] == 1
    assert 'href="https://git.kernel.org/torvalds/c/779b1a1cb13a" rel="noopener nofollow"' in note["html"]
    assert 'href="https://lore.kernel.org/r/202508251419.d8117ed7-lkp@intel.com"' in note["html"]
    assert client.get(f"{path}/note").json() == note

    after = client.get(path)
    assert after.json()["note"] == {k: note[k] for k in ("text", "version", "updated_at")}
    assert after.headers["etag"] != before.headers["etag"]
    # The stored bytes are unchanged: the note sits beside them.
    assert after.content.startswith(stored[: -len(b',"note":null}')])
    assert client.get(path, headers={"If-None-Match": after.headers["etag"]}).status_code == 304

    assert put_note(client, path, "edited", run["delete_token"]).json()["version"] == 2
    edited = client.get(path)
    assert edited.headers["etag"] != after.headers["etag"]
    assert client.get(path, headers={"If-None-Match": after.headers["etag"]}).status_code == 200
    # The immutable page does not hold it: the page loads it.
    assert "edited" not in client.get(f"/runs/{run['id']}").text
    assert put_note(client, path, "", run["delete_token"]).status_code == 204
    assert client.get(path).json()["note"] is None


@pytest.mark.parametrize(
    ("text", "reason"),
    [("x" * 2001, "at most 2,000 characters"), ("a\x00b", "U+0000"), ("a\rb", "carriage return"), (5, "")],
)
def test_bad_notes_are_a_422_naming_the_field(
    client: httpx.Client, run: dict[str, Any], text: object, reason: str
) -> None:
    r = put_note(client, f"/api/runs/{run['id']}", text, run["delete_token"])
    assert r.status_code == 422
    (error,) = r.json()["detail"]
    assert error["loc"][-1] == "text" and reason in error["msg"]
    assert client.get(f"/api/runs/{run['id']}/note").status_code == 404, "nothing stored"


def test_sweeps_have_notes_too(client: httpx.Client) -> None:
    made = client.post(
        "/api/sweeps",
        json={"base": small_config(duration_ms=5), "axes": [{"path": "governor.name", "values": ["menu"]}]},
    ).json()
    path = f"/api/sweeps/{made['id']}"
    assert put_note(client, path, "a sweep note", made["delete_token"]).status_code == 200
    assert client.get(f"{path}/note").json()["text"] == "a sweep note"
    assert client.get("/api/measurements/AAAAAAAAAAA/note").status_code == 404
    assert client.get("/api/runs/not*an*id/note").status_code == 404


class _Scripts(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.sources: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        for name, value in attrs:
            if name in ("src", "href") and value:
                self.sources.append(value)


def test_snapshots_are_attachments_that_refer_to_nothing_outside(
    client: httpx.Client, run: dict[str, Any]
) -> None:
    other = wait_finished(client, submit(client, small_config(seed=82, duration_ms=10), repeats=3)["id"])
    for path, name in (
        (f"/runs/{run['id']}/snapshot.html", f"idlelab-run-{run['id']}.html"),
        (
            f"/compare/snapshot.html?ids={run['id']},{other['id']}",
            f"idlelab-compare-{run['id']}-{other['id']}.html",
        ),
    ):
        r = client.get(path)
        assert r.status_code == 200
        assert r.headers["content-disposition"] == f'attachment; filename="{name}"'
        parser = _Scripts()
        parser.feed(r.text)
        assert parser.sources == [], "nothing loaded from outside the file"
        assert "* plotly.js (cartesian - minified) v4.1.1" in r.text, "plotly.js's licence header kept"
    assert client.get("/runs/AAAAAAAAAAA/snapshot.html").status_code == 404


@pytest.mark.parametrize("kind", ["curl", "python"])
def test_recreate_snippets_make_the_same_runs(client: httpx.Client, run: dict[str, Any], kind: str) -> None:
    seed = {"curl": 83, "python": 84}[kind]
    other = wait_finished(client, submit(client, small_config(seed=seed, duration_ms=10))["id"])
    snippet = client.get(
        "/api/compare/recreate", params={"ids": f"{run['id']},{other['id']}", "format": kind}
    )
    assert snippet.status_code == 200 and snippet.headers["content-type"].startswith("text/plain")
    assert str(client.base_url).rstrip("/") in snippet.text
    command = ["sh", "-c", snippet.text] if kind == "curl" else [sys.executable, "-c", snippet.text]
    done = subprocess.run(command, capture_output=True, text=True, timeout=120, check=True)
    # The snippet prints each POST answer, then the comparison of the new runs (curl: one line;
    # Python: indented).
    output = done.stdout.strip()
    comparison = output.splitlines()[-1] if kind == "curl" else output[output.index('{\n  "runs"') :]
    runs = httpx.Response(200, content=comparison).json()["runs"]
    assert [r["repeat_count"] for r in runs] == [3, 1]
    for new, old in zip(runs, (run, other), strict=True):
        again = client.get(f"/api/runs/{new['id']}").json()
        assert again["config"] == old["config"] and again["title"] == old["title"]
        assert again["reused_from"] == old["id"], "the same config and repeats: answered from the original"


def test_measurements_have_notes_and_the_compare_warns_about_them(client: httpx.Client) -> None:
    from tests.app.measurements.test_api import TWO_FILES

    made = client.post("/api/measurements", files=TWO_FILES, data={"title": "clx C6"})
    assert made.status_code == 201, made.text
    measurement = made.json()
    path = f"/api/measurements/{measurement['id']}"
    assert put_note(client, path, "wult on clx", None).status_code == 403
    assert put_note(client, path, "wult on clx", measurement["delete_token"]).status_code == 200
    assert client.get(f"{path}/note").json()["text"] == "wult on clx"
    assert 'data-note-url="/api/measurements/' in client.get(f"/measurements/{measurement['id']}").text

    run = wait_finished(client, submit(client, small_config(seed=85, duration_ms=10))["id"])
    cmp = client.get("/api/compare", params={"ids": f"{run['id']},{measurement['id']}"}).json()
    (warning,) = [w for w in cmp["warnings"] if w["kind"] == "measurement"]
    assert "WakeLatency and IntrLatency only, overall and per requested C-state" in warning["message"]
    assert all(m["delta_unit"] == "%" for m in cmp["measured"]), "latencies change in percent"


def test_the_compare_snapshot_carries_each_sides_note(client: httpx.Client, run: dict[str, Any]) -> None:
    from tests.app.measurements.test_api import TWO_FILES

    other = submit(client, small_config(seed=86, duration_ms=10), repeats=3)
    wait_finished(client, other["id"])
    measurement = client.post("/api/measurements", files=TWO_FILES).json()
    notes = {
        f"/api/runs/{run['id']}": (run["delete_token"], "base <b>run</b>: see 779b1a1cb13a"),
        f"/api/runs/{other['id']}": (other["delete_token"], "see https://example.org/a_(b). javascript:x"),
        f"/api/measurements/{measurement['id']}": (measurement["delete_token"], "wult on clx"),
    }
    for path, (token, text) in notes.items():
        assert put_note(client, path, text, token).status_code == 200
    ids = f"{run['id']},{other['id']},{measurement['id']}"
    snapshot = client.get(f"/compare/snapshot.html?ids={ids}").text
    assert "base &lt;b&gt;run&lt;/b&gt;" in snapshot and "<b>run</b>" not in snapshot, "escaped"
    assert '<a href="https://git.kernel.org/torvalds/c/779b1a1cb13a" rel="noopener nofollow">' in snapshot
    assert '<a href="https://example.org/a_(b)" rel="noopener nofollow">' in snapshot
    assert "javascript:x" in snapshot and 'href="javascript' not in snapshot
    assert "Note on M1" in snapshot and "wult on clx" in snapshot
    assert "Against wult, per requested C-state" in snapshot
    # Links are the notes' only: nothing is loaded, and every href is one of theirs.
    parser = _Anchors()
    parser.feed(snapshot)
    assert parser.sources == []
    assert parser.links and all(rel == "noopener nofollow" for _, rel in parser.links)


class _Anchors(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.sources: list[str] = []
        self.links: list[tuple[str, str | None]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        found = dict(attrs)
        if tag == "a" and found.get("href"):
            self.links.append((found["href"] or "", found.get("rel")))
        elif found.get("src") or found.get("href"):
            self.sources.append(found.get("src") or found.get("href") or "")
