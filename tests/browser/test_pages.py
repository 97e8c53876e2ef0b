"""Dashboard pages over HTTP against the real server (no browser needed): page size of the default
run, CSP and no inline scripts, the vendored plotly.js and static caching, chart API, downloads,
escaping, and a form input for every SimConfig field. HTML is checked by parsing it."""

from __future__ import annotations

import csv
import io
import json
from html.parser import HTMLParser
from pathlib import Path
from typing import Any, get_args

import httpx
import pytest
from pydantic import BaseModel

from app.charts import CHARTS
from app.core.web import CSP, STATIC_DIR
from engine import SimConfig
from tests.browser.conftest import SMALL, run_and_wait

PAGE_LIMIT_BYTES = 1_000_000


class Page(HTMLParser):
    """The parts of a page the tests look at: scripts, data-path inputs, text by element id."""

    def __init__(self, html: str) -> None:
        super().__init__(convert_charrefs=True)
        self.scripts: list[dict[str, str | None]] = []
        self.script_text: dict[str, str] = {}
        self.paths: set[str] = set()
        self.text_by_id: dict[str, str] = {}
        self._stack: list[tuple[str, str | None]] = []
        self._in_script: str | None = None
        self.feed(html)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        if tag == "script":
            self.scripts.append(a)
            self._in_script = a.get("id") or ""
            self.script_text[self._in_script] = ""
        for key in ("data-path", "data-path-template"):
            if a.get(key):
                self.paths.add(str(a[key]))
        if tag not in ("input", "meta", "link", "br", "img"):
            self._stack.append((tag, a.get("id")))
            if a.get("id"):
                self.text_by_id.setdefault(str(a["id"]), "")

    def handle_endtag(self, tag: str) -> None:
        if tag == "script":
            self._in_script = None
        while self._stack:
            if self._stack.pop()[0] == tag:
                break

    def handle_data(self, data: str) -> None:
        if self._in_script is not None:
            self.script_text[self._in_script] += data
        for _, el_id in self._stack:
            if el_id:
                self.text_by_id[el_id] += data


@pytest.fixture(scope="module")
def default_run(api: httpx.Client) -> dict[str, Any]:
    """The real default run (`{}`: skx, two sockets, menu, one simulated second)."""
    return run_and_wait(api, {}, title="default run")


def test_default_run_page_under_1mb(api: httpx.Client, default_run: dict[str, Any]) -> None:
    r = api.get(f"/runs/{default_run['id']}")
    assert r.status_code == 200
    size = len(r.content)
    print(f"default run page: {size} bytes of HTML including chart data")
    assert size < PAGE_LIMIT_BYTES
    page = Page(r.text)
    blocks = {k: v for k, v in page.script_text.items() if k.startswith("chart-") and k.endswith("-data")}
    assert sorted(blocks) == sorted(f"chart-{name}-data" for name in CHARTS)
    for name, text in blocks.items():
        figure = json.loads(text)
        assert figure["data"] and figure["layout"], name


def test_csp_and_no_inline_scripts(api: httpx.Client, default_run: dict[str, Any]) -> None:
    for url in ("/", "/runs/new", f"/runs/{default_run['id']}", "/platforms/skx", "/runs", "/runs/nope"):
        r = api.get(url, headers={"Accept": "text/html"})
        assert r.headers["content-type"].startswith("text/html"), url
        assert r.headers["content-security-policy"] == CSP, url
        for script in Page(r.text).scripts:
            # Either the app's own file, or JSON data (which a browser never executes).
            assert (script.get("src") or "").startswith("/") or script.get("type") == "application/json", (
                url,
                script,
            )
    assert CSP == (
        "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; "
        "object-src 'none'; base-uri 'none'; frame-ancestors 'none'; form-action 'self'"
    )


def test_plotly_served_locally_precompressed_and_immutable(
    api: httpx.Client, default_run: dict[str, Any]
) -> None:
    page = Page(api.get(f"/runs/{default_run['id']}").text)
    srcs = [s["src"] for s in page.scripts if s.get("src") and "plotly" in str(s["src"])]
    assert len(srcs) == 1
    src = str(srcs[0])
    assert src == "/vendor/plotly-cartesian-4.1.1.min.js"
    bundle = (STATIC_DIR / "vendor" / "plotly-cartesian-4.1.1.min.js").read_bytes()
    assert b"plotly.js (cartesian - minified) v4.1.1" in bundle[:200]
    r = api.get(src, headers={"Accept-Encoding": "gzip"})
    assert r.status_code == 200
    assert r.headers["content-encoding"] == "gzip"
    assert "immutable" in r.headers["cache-control"] and "max-age=31536000" in r.headers["cache-control"]
    assert int(r.headers["content-length"]) < len(bundle) / 2
    assert r.content == bundle  # httpx undid the gzip
    raw = httpx.get(api.base_url.join(src), headers={"Accept-Encoding": "identity"})
    assert "content-encoding" not in raw.headers and raw.content == bundle
    again = api.get(src, headers={"If-None-Match": r.headers["etag"]})
    assert again.status_code == 304
    assert api.head(src).status_code == 200


def test_static_files_compressed_and_cached(api: httpx.Client) -> None:
    page = Page(api.get("/runs/new").text)
    js = [str(s["src"]) for s in page.scripts if s.get("src") and "/static/" in str(s["src"])]
    assert js and all("?v=" in src for src in js)
    for src in js:
        r = api.get(src, headers={"Accept-Encoding": "gzip"})
        assert r.status_code == 200
        assert "immutable" in r.headers["cache-control"]
    css = api.get("/static/css/app.css", headers={"Accept-Encoding": "gzip"})
    assert css.headers["content-encoding"] == "gzip"
    assert css.headers["cache-control"] == "no-cache"  # unversioned: revalidate with the ETag
    assert api.get("/static/css/app.css", headers={"If-None-Match": css.headers["etag"]}).status_code == 304


def test_chart_api(api: httpx.Client) -> None:
    run = run_and_wait(api, SMALL, title="chart api")
    for name in CHARTS:
        r = api.get(f"/api/runs/{run['id']}/charts/{name}")
        assert r.status_code == 200, name
        figure = r.json()
        assert set(figure) >= {"data", "layout"}
    bad = api.get(f"/api/runs/{run['id']}/charts/nope")
    assert bad.status_code == 404 and "nope" in bad.json()["detail"]
    missing = api.get("/api/runs/no-such-run/charts/residency")
    assert missing.status_code == 404 and set(missing.json()) == {"detail"}


def test_downloads(api: httpx.Client) -> None:
    run = run_and_wait(api, SMALL, title="downloads")
    j = api.get(f"/runs/{run['id']}.json")
    assert j.status_code == 200 and "attachment" in j.headers["content-disposition"]
    assert j.json() == api.get(f"/api/runs/{run['id']}").json()
    c = api.get(f"/runs/{run['id']}.csv")
    assert c.status_code == 200 and c.headers["content-type"].startswith("text/csv")
    assert c.text.splitlines()[0] == "section,name,metric,value,unit"
    assert api.get("/runs/no-such-run.csv").status_code == 404


def test_user_text_escaped(api: httpx.Client) -> None:
    title = "</script><script>alert(1)</script><img src=x onerror=alert(2)> & \u2028"
    run = run_and_wait(api, SMALL, title=title)
    for url in (f"/runs/{run['id']}", "/runs", "/"):
        html = api.get(url).text
        assert "<script>alert(1)" not in html and "<img src=x" not in html, url
    page = Page(api.get(f"/runs/{run['id']}").text)
    assert page.text_by_id["run-title"] == title
    assert all(s.get("src") or s.get("type") == "application/json" for s in page.scripts)


def test_unknown_run_is_a_404_page(api: httpx.Client) -> None:
    r = api.get("/runs/no-such-run", headers={"Accept": "text/html"})
    assert r.status_code == 404 and r.headers["content-type"].startswith("text/html")
    assert "no-such-run" in r.text and "Not found" in r.text
    assert api.get("/platforms/no-such-platform", headers={"Accept": "text/html"}).status_code == 404


def _leaf_paths(model: type[BaseModel], prefix: str = "") -> set[str]:
    out: set[str] = set()
    for name, info in model.model_fields.items():
        ann = info.annotation
        sub = next(
            (a for a in (ann, *get_args(ann)) if isinstance(a, type) and issubclass(a, BaseModel)), None
        )
        items = [a for a in get_args(ann) if isinstance(a, type) and issubclass(a, BaseModel)]
        if get_args(ann) and getattr(ann, "__origin__", None) is list and items:
            out |= _leaf_paths(items[0], f"{prefix}{name}.#.")
        elif sub is not None:
            out |= _leaf_paths(sub, f"{prefix}{name}.")
        else:
            out.add(prefix + name)
    return out


def test_form_offers_every_config_field(api: httpx.Client) -> None:
    page = Page(api.get("/runs/new").text)
    # Built by static/js/run_new.js from the platform's table (one input per state):
    per_state = {"states.disabled", "states.irq_enable", "power.state_watts"}
    resolved_by_service = {"platform_table"}
    # The idle load of a machine's twin (wakeups.load: CPU classes of timers, bursts, follow-ups),
    # written by a fit; the form does not offer it by hand yet.
    written_by_fit = "wakeups.load."
    # Written by an import (each socket's cores as their threads) and by Simulate this on a wult
    # measurement (a timer's drawn interval); the API takes them, the form does not offer them.
    written_by_imports = {"topology.core_threads", "wakeups.timers.#.interval"}
    wanted = {
        p
        for p in _leaf_paths(SimConfig) - per_state - written_by_imports
        if p.split(".")[0] not in resolved_by_service and not p.startswith(written_by_fit)
    }
    assert "wakeups.timers.#.period_us" in wanted
    # A dict-valued field is offered one key per input (power.uncore_watts.PC6).
    offered = page.paths | {p.rsplit(".", 1)[0] for p in page.paths}
    assert wanted <= offered, sorted(wanted - offered)
    platforms = json.loads(page.script_text["platforms-data"])
    assert [s["name"] for s in platforms["skx"]["states"]] == ["POLL", "C1", "C1E", "C6"]
    js = (Path(__file__).resolve().parents[2] / "static" / "js" / "run_new.js").read_text()
    for path in per_state:
        assert path in js


def test_rerun_prefill(api: httpx.Client) -> None:
    run = run_and_wait(api, {**SMALL, "governor": {"name": "teo"}, "seed": 77}, title="prefill me")
    page = Page(api.get(f"/runs/new?from={run['id']}").text)
    prefill = json.loads(page.script_text["prefill-data"])
    assert prefill["governor"]["name"] == "teo" and prefill["seed"] == 77 and prefill["title"] == "prefill me"
    assert api.get("/runs/new?from=no-such-run", headers={"Accept": "text/html"}).status_code == 404


def test_per_cpu_table_download_by_socket_core_thread(api: httpx.Client, default_run: dict[str, Any]) -> None:
    """The default run: 2 sockets x 24 cores x 2 threads. Rows go socket, core, thread; CPU numbers
    follow Linux per socket (every core's first thread, then the second): S0 core 0 is CPUs 0 and 24."""
    r = api.get(f"/runs/{default_run['id']}/per-cpu.csv")
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/csv")
    assert "attachment" in r.headers["content-disposition"]
    rows = list(csv.reader(io.StringIO(r.text)))
    result = default_run["result"]
    states = [s["name"] for s in default_run["result"]["states"]]
    width = len(default_run["result"]["per_cpu_state_names"])
    assert rows[0][:4] == ["cpu", "socket", "core", "thread"] and rows[0][3 + width] == "C0%"
    assert rows[0][4 + width :] == [f"{s} {c}" for c in ("usage", "above", "below") for s in states]
    body = rows[1:]
    assert len(body) == result["cpus"] == 96
    assert [row[:4] for row in body[:3]] == [
        ["0", "0", "0", "0"],
        ["24", "0", "0", "1"],
        ["1", "0", "1", "0"],
    ]
    assert body[48][:4] == ["48", "1", "0", "0"]
    cpu24 = next(row for row in body if row[0] == "24")
    assert [float(v) for v in cpu24[4 : 4 + width]] == pytest.approx(
        [v * 100 for v in result["per_cpu_residency"][24]], abs=1e-3
    )
    # Each state's per-CPU counters add up to the run's own; a deep state has entries that were too short.
    for k, counter in enumerate(("usage", "above", "below")):
        for i, s in enumerate(result["states"]):
            column = 4 + width + k * len(states) + i
            assert sum(int(row[column]) for row in body) == s[counter]
    assert sum(int(row[4 + width + len(states) + len(states) - 1]) for row in body) > 0
    assert api.get("/runs/nope/per-cpu.csv").status_code == 404
