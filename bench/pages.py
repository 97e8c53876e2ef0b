"""Dashboard speed: how long a run page takes until its first screen's charts are drawn, against a
bare page that loads the same plotly.js and draws one bar chart. Prints `name: value` lines.

    .venv/bin/python bench/pages.py [--samples 7]

It starts its own server on a fresh SQLite file, makes the default run, then drives Debian's
Chromium (Playwright, `executable_path`: no downloaded browser) at 1280x800 with a warm cache
(one unmeasured visit of each page first), alternating the two pages `--samples` times and
printing medians. "Drawn" is observed from outside the app's code: at least two `.js-plotly-plot`
elements in the first viewport (one for the bare page), each holding `.main-svg .trace`. Times
run from the navigation's start (the page's own `performance.now()`). The bare page is served by
this script through `page.route`, at the server's origin, so it shares the browser's cache of the
plotly.js file the run page loads.

- `run_page_charts_s`: the run page, navigation to its first screen's charts drawn.
- `bare_plotly_s`: the bare page, navigation to its bar chart drawn.
- `run_page_ratio`: their ratio (the goal: at most 1.5).
"""

from __future__ import annotations

import argparse
import re
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.api import start_server, stop_server  # noqa: E402

CHROMIUM = "/usr/bin/chromium"
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking"]
VIEWPORT = {"width": 1280, "height": 800}

# True once `want` plotly charts intersect the first viewport, each with a drawn trace; records when.
DRAWN = """(want) => {
    const inView = (el) => {
        const r = el.getBoundingClientRect();
        return r.bottom > 0 && r.top < window.innerHeight && r.right > 0 && r.left < window.innerWidth;
    };
    const drawn = [...document.querySelectorAll('.js-plotly-plot')]
        .filter((el) => inView(el) && el.querySelector('.main-svg .trace'));
    if (drawn.length >= want) {
        window.__drawnAt = window.__drawnAt || performance.now();
        return true;
    }
    return false;
}"""

BARE = """<!doctype html><html><head><meta charset="utf-8"><title>bare</title>
<script src="{plotly}"></script></head><body>
<div id="bar" style="width: 600px; height: 400px"></div>
<script>Plotly.newPlot("bar", [{{type: "bar", x: ["C1", "C1E", "C6"], y: [12, 30, 58]}}]);</script>
</body></html>"""


def sample(page: Any, url: str, want: int) -> float:
    page.goto(url, wait_until="commit")
    page.wait_for_function(DRAWN, arg=want, polling="raf", timeout=120_000)
    return float(page.evaluate("window.__drawnAt")) / 1000.0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--samples", type=int, default=7)
    args = ap.parse_args()
    from playwright.sync_api import sync_playwright

    with tempfile.TemporaryDirectory() as tmp:
        with open(Path(tmp) / "server.log", "wb") as log:
            proc, url = start_server(Path(tmp) / "bench.db", log)
            try:
                run = httpx.post(f"{url}/api/runs?wait=true", json={"config": {}}, timeout=300).json()
                assert run["status"] == "done", run
                run_url = f"{url}/runs/{run['id']}"
                html = httpx.get(run_url).text
                plotly = re.search(r'<script src="(/vendor/plotly[^"]+)"', html)
                assert plotly, "the run page links no plotly.js"
                bare_url = f"{url}/__bench_bare"
                bare_html = BARE.format(plotly=plotly.group(1))
                with sync_playwright() as p:
                    browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
                    page = browser.new_context(viewport=VIEWPORT).new_page()
                    page.route(
                        bare_url, lambda route: route.fulfill(body=bare_html, content_type="text/html")
                    )
                    sample(page, run_url, 2)  # warm the cache, unmeasured
                    sample(page, bare_url, 1)
                    runs, bares = [], []
                    for _ in range(args.samples):
                        runs.append(sample(page, run_url, 2))
                        bares.append(sample(page, bare_url, 1))
                    browser.close()
            finally:
                stop_server(proc)
    run_s, bare_s = statistics.median(runs), statistics.median(bares)
    print(f"plotly_js: {plotly.group(1)}")
    print(f"run_page_charts_s: {run_s:.3f}")
    print(f"bare_plotly_s: {bare_s:.3f}")
    print(f"run_page_ratio: {run_s / bare_s:.2f}")


if __name__ == "__main__":
    main()
