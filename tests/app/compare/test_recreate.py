"""The "copy as curl / Python" snippets, run for real: the shell one by sh (and dash, bash --posix)
with a stand-in curl that records its arguments, the Python one against a stub server on
127.0.0.1. Bodies must arrive byte for byte whatever the titles hold."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from app.compare.recreate import curl_snippet, python_snippet, run_body

BASE = "http://127.0.0.1:8000"
TITLES = [
    'it\'s "quoted"',
    "$HOME $(rm -rf /) `id` ${x:-y} $$ !1 \\ \\n",
    "two\nlines\r\tand a tab",
    "non-ASCII: ± µs é 漢字 😀 \u202eevil\u2028",
    "-d @/etc/passwd; echo pwned #",
    "'",
    "",
]
TABLE = {"name": "custom'1", "states": [{"name": "C1", "exit_latency_us": 1, "target_residency_us": 2}]}
# /bin/sh (dash on Debian), and bash in its POSIX mode where it is not /bin/sh.
SHELLS = [["sh"]] + (
    [["bash", "--posix"]]
    if shutil.which("bash") and os.path.realpath("/bin/sh") != shutil.which("bash")
    else []
)

# A stand-in for curl: records its arguments (as bytes, NUL-separated, one file per call) and
# answers as the server would: a POST with a new id; a run's first poll `queued` (its title
# looking like a finished status, which must not count), the next `done`; anything else {}.
FAKE_CURL = r"""#!/bin/sh
n=$(( $(ls "$CURL_LOG" | wc -l) + 1 ))
printf '%s\0' "$@" > "$CURL_LOG/$(printf %03d "$n")"
for last; do :; done
case " $* " in
  *" POST "*)
    if [ "$n" = "${CURL_ODD_ID_AT:-}" ]; then printf '{"id": "%s"}' "$CURL_ODD_ID"; exit; fi
    printf '{"id": "r%d", "url": "/runs/r%d", "status": "queued", "delete_token": "tok"}' "$n" "$n" ;;
  *"/api/runs/"*)
    seen="$CURL_LOG.${last##*/}"
    if [ -e "$seen" ]; then printf '{"status": "done"}'
    else : > "$seen"; printf '{"title": "\\"status\\": \\"done\\"", "status": "queued"}'; fi ;;
  *) printf '{}' ;;
esac
"""


def bodies(titles: list[str] = TITLES) -> list[dict[str, Any]]:
    return [
        run_body(
            {"platform": "custom'1", "seed": i, "duration_ms": 50.0},
            title=t,
            repeats=3,
            platform_table=TABLE if i == 0 else None,
        )
        for i, t in enumerate(titles)
    ]


def run_shell(
    shell: list[str], snippet: str, tmp_path: Path, **env_vars: str
) -> tuple[str, list[list[bytes]]]:
    bin_dir, log = tmp_path / "bin", tmp_path / "log"
    bin_dir.mkdir(exist_ok=True)
    shutil.rmtree(log, ignore_errors=True)
    log.mkdir()
    curl = bin_dir / "curl"
    curl.write_text(FAKE_CURL)
    curl.chmod(0o755)
    (bin_dir / "sleep").write_text("#!/bin/sh\n")  # the polls need not wait
    (bin_dir / "sleep").chmod(0o755)
    env = {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}", "CURL_LOG": str(log), **env_vars}
    done = subprocess.run([*shell, "-c", snippet], env=env, cwd=tmp_path, capture_output=True, timeout=60)
    assert done.returncode == 0, done.stderr
    calls = [path.read_bytes().split(b"\0")[:-1] for path in sorted(log.iterdir())]
    return done.stdout.decode(), calls


def test_the_body_keeps_the_config_its_table_title_and_repeats() -> None:
    body = run_body({"platform": "custom'1", "seed": 7}, title="t", repeats=5, platform_table=TABLE)
    assert body == {
        "config": {"platform": "custom'1", "seed": 7, "platform_table": TABLE},
        "title": "t",
        "repeats": 5,
    }


@pytest.mark.parametrize("shell", SHELLS, ids=lambda s: " ".join(s))
def test_one_run_arrives_byte_for_byte_in_sh(shell: list[str], tmp_path: Path) -> None:
    for title in TITLES:
        body = bodies([title])[0]
        snippet = curl_snippet(BASE, [body])
        assert snippet.isascii()
        stdout, calls = run_shell(shell, snippet, tmp_path)
        assert calls == [
            [
                b"-s",
                b"-X",
                b"POST",
                b"http://127.0.0.1:8000/api/runs",
                b"-H",
                b"content-type: application/json",
                b"-d",
                json.dumps(body).encode(),
            ]
        ], title
        assert json.loads(calls[0][-1]) == body
        assert json.loads(calls[0][-1])["title"] == title
        assert stdout.startswith('{"id": "r1"')


@pytest.mark.parametrize("shell", SHELLS, ids=lambda s: " ".join(s))
def test_a_compare_posts_each_run_waits_and_compares_the_new_ids(shell: list[str], tmp_path: Path) -> None:
    sent = bodies()
    stdout, calls = run_shell(shell, curl_snippet(BASE + "/", sent), tmp_path)
    posts = [c for c in calls if b"POST" in c]
    assert [json.loads(c[-1]) for c in posts] == sent
    assert [c[-1] for c in posts] == [json.dumps(b).encode() for b in sent]
    n = len(sent)
    polls = calls[n:-1]
    assert polls == [[b"-s", f"{BASE}/api/runs/r{i}".encode()] for i in range(1, n + 1) for _ in range(2)]
    ids = ",".join(f"r{i}" for i in range(1, n + 1))
    assert calls[-1] == [b"-s", f"{BASE}/api/compare?ids={ids}".encode()]
    assert stdout.count('"delete_token": "tok"') == n  # every answer shown


@pytest.mark.parametrize("odd", ["$(touch pwned)", "*", "r 2", "../../x"])
def test_an_id_outside_the_id_alphabet_is_not_taken_into_the_shell(odd: str, tmp_path: Path) -> None:
    _, calls = run_shell(
        SHELLS[0], curl_snippet(BASE, bodies(TITLES[:3])), tmp_path, CURL_ODD_ID_AT="2", CURL_ODD_ID=odd
    )
    assert calls[-1] == [b"-s", f"{BASE}/api/compare?ids=r1,r3".encode()]
    assert not (tmp_path / "pwned").exists()


class Stub(BaseHTTPRequestHandler):
    """Answers as the server would, recording (method, path, body)."""

    seen: list[tuple[str, str, bytes]] = []

    def _answer(self, value: Any) -> None:
        data = json.dumps(value).encode()
        self.send_response(202 if self.command == "POST" else 200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_POST(self) -> None:  # noqa: N802
        body = self.rfile.read(int(self.headers["content-length"]))
        assert self.headers["content-type"] == "application/json"
        self.seen.append(("POST", self.path, body))
        if json.loads(body)["title"].startswith("refuse"):
            self.send_response(422)
            data = json.dumps({"detail": [{"loc": ["body", "title"], "msg": "refused"}]}).encode()
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
            return
        n = sum(1 for m, _, _ in self.seen if m == "POST")
        self._answer({"id": f"r{n}", "url": f"/runs/r{n}", "status": "queued", "delete_token": "tok"})

    def do_GET(self) -> None:  # noqa: N802
        self.seen.append(("GET", self.path, b""))
        polls = sum(1 for m, p, _ in self.seen if p == self.path)
        self._answer(
            {"status": "done" if polls > 1 else "running"} if "/api/runs/" in self.path else {"ok": 1}
        )

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture
def stub_server() -> Iterator[str]:
    Stub.seen = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), Stub)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def test_the_python_snippet_compiles_and_recreates_the_runs(stub_server: str, tmp_path: Path) -> None:
    sent = bodies(TITLES[:2])
    snippet = python_snippet(stub_server, sent)
    assert snippet.isascii()
    compile(snippet, "recreate.py", "exec")
    script = tmp_path / "recreate.py"
    script.write_text(snippet)
    done = subprocess.run([sys.executable, "-I", str(script)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    posts = [json.loads(body) for method, path, body in Stub.seen if method == "POST" and path == "/api/runs"]
    assert posts == sent
    assert ("GET", "/api/compare?ids=r1,r2", b"") == Stub.seen[-1]
    assert [p for m, p, _ in Stub.seen if m == "GET"].count("/api/runs/r1") == 2  # polled until done
    assert json.loads(done.stdout.split("\n", 2)[2]) == {"ok": 1}


def test_the_python_snippet_of_one_run_posts_it_and_stops(stub_server: str, tmp_path: Path) -> None:
    sent = bodies(TITLES[3:4])
    snippet = python_snippet(stub_server, sent)
    assert "\\u202e" in snippet and "\u202e" not in snippet  # the bidi override is visible
    done = subprocess.run([sys.executable, "-I", "-c", snippet], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert [(m, p) for m, p, _ in Stub.seen] == [("POST", "/api/runs")]
    assert json.loads(Stub.seen[0][2])["title"] == TITLES[3]


def test_a_refused_run_stops_the_python_snippet_with_the_server_s_answer(stub_server: str) -> None:
    snippet = python_snippet(stub_server, bodies(["fine", "refuse me", "never sent"]))
    done = subprocess.run([sys.executable, "-I", "-c", snippet], capture_output=True, text=True, timeout=60)
    assert done.returncode == 1
    assert done.stderr == 'POST /api/runs: 422 {"detail": [{"loc": ["body", "title"], "msg": "refused"}]}\n'
    assert [m for m, _, _ in Stub.seen] == ["POST", "POST"]


@pytest.mark.parametrize(
    ("base", "given", "message"),
    [
        ("ftp://x", None, "base_url: must be an http(s) URL such as http://127.0.0.1:8000, got 'ftp://x'"),
        ("http://x/?a=1", None, "base_url: a server's address without query, fragment, quotes or spaces"),
        ("http://x/'$(id)'", None, "base_url: a server's address without query, fragment, quotes or spaces"),
        (BASE, [], "bodies: 1 to 8 runs (a compare takes at most 8), got 0"),
        (BASE, [{"config": {}}] * 9, "bodies: 1 to 8 runs (a compare takes at most 8), got 9"),
        (BASE, [{"title": "x"}], "bodies[0].config: the run's config (a mapping), got NoneType"),
        (BASE, [{"config": {}, "title": 3}], "bodies[0].title: a string, got int"),
        (BASE, [{"config": {}, "repeats": 0}], "bodies[0].repeats: a whole number from 1 to 50, got 0"),
        (BASE, [{"config": {}, "repeats": True}], "bodies[0].repeats: a whole number from 1 to 50, got True"),
        (BASE, [{"config": {"x": float("nan")}}], "bodies[0]: not JSON"),
        (BASE, [{"config": {"x": object()}}], "bodies[0]: not JSON"),
    ],
)
def test_bad_arguments_are_refused_naming_them(base: str, given: Any, message: str) -> None:
    for snippet in (curl_snippet, python_snippet):
        with pytest.raises(ValueError) as caught:
            snippet(base, given if given is not None else bodies(TITLES[:1]))
        assert str(caught.value).startswith(message)
