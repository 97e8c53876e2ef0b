""" "Copy as curl" and "copy as Python": snippets that recreate runs on another idlelab server and,
for a compare, fetch the comparison of the new runs there.

Each run is recreated from its `POST /api/runs` body: `config` (a custom platform's table inlined
as `config.platform_table`, since the other server does not have it), `title` and `repeats`. The
shell snippet needs only a POSIX sh and curl; the Python one only the standard library. Both are
plain ASCII (non-ASCII characters written as JSON or Python escapes), so they survive any
terminal, mail or chat, and no invisible character hides in them. Pure: the same arguments give
the same text.
"""

from __future__ import annotations

import json
import pprint
import shlex
from collections.abc import Mapping, Sequence
from typing import Any
from urllib.parse import urlsplit

RUNS_PATH = "/api/runs"
COMPARE_PATH = "/api/compare"
MAX_COMPARED_RUNS = 8  # what `GET /api/compare` takes
MAX_REPEATS = 50  # DESIGN section 7: repeats are 1-50
POLL_INTERVAL_S = 2
# The POST answer starts `{"id":"...` (app/runs/api.py writes `id` first); ids are URL-safe
# base64, and nothing else is taken from an answer into the shell's words.
_SED_ID = r"""sed -n 's/^{"id": *"\([A-Za-z0-9_-]*\)".*/\1/p'"""
_FINISHED = r"""grep -Eq '"status": *"(done|failed)"'"""


def run_body(
    config: Mapping[str, Any],
    *,
    title: str = "",
    repeats: int = 1,
    platform_table: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The `POST /api/runs` body recreating a run: its config, with `platform_table` (the
    resolved custom table) inlined when given, its title and its repeats."""
    inlined = dict(config) if platform_table is None else {**config, "platform_table": dict(platform_table)}
    return _checked_bodies([{"config": inlined, "title": title, "repeats": repeats}])[0]


def curl_snippet(base_url: str, bodies: Sequence[Mapping[str, Any]]) -> str:
    """A POSIX shell snippet: one `curl -s -X POST BASE/api/runs` per body, each answer printed
    (it holds the run's delete token, shown once); with two or more bodies, then waits for the
    runs to finish and prints `GET /api/compare?ids=` of the new ids."""
    base = _base_url(base_url)
    checked = _checked_bodies(bodies)
    post = f"curl -s -X POST {shlex.quote(base + RUNS_PATH)} -H 'content-type: application/json' -d"
    if len(checked) == 1:
        return f"# Recreate this run on {base} (POSIX sh and curl). Keep the delete_token it answers.\n" + (
            f"{post} {shlex.quote(_json(checked[0]))}; echo\n"
        )
    lines = [
        f"# Recreate these {len(checked)} runs on {base} and compare them (POSIX sh and curl).",
        "# Each answer is printed: keep its delete_token.",
    ]
    answers = []
    for number, body in enumerate(checked, 1):
        lines.append(f'run{number}=$({post} {shlex.quote(_json(body))}); echo "$run{number}"')
        answers.append(f'"$run{number}"')
    lines += [
        f"ids=$(printf '%s\\n' {' '.join(answers)} | {_SED_ID} | paste -sd, -)",
        "for id in $(echo \"$ids\" | tr , ' '); do",
        f'  until curl -s {shlex.quote(base + RUNS_PATH + "/")}"$id" | {_FINISHED}; do',
        f"    sleep {POLL_INTERVAL_S}",
        "  done",
        "done",
        f'curl -s {shlex.quote(base + COMPARE_PATH + "?ids=")}"$ids"; echo',
    ]
    return "\n".join(lines) + "\n"


def python_snippet(base_url: str, bodies: Sequence[Mapping[str, Any]]) -> str:
    """A Python 3 script (standard library only) doing what `curl_snippet` does: submit each
    body, print each answer; with two or more, wait for the runs and print the comparison."""
    base = _base_url(base_url)
    checked = _checked_bodies(bodies)
    literal = pprint.pformat(checked, width=100, sort_dicts=False)
    # Non-ASCII characters only occur inside the string literals, where \x, \u and \U escapes
    # mean the same characters.
    literal = literal.encode("ascii", "backslashreplace").decode("ascii")
    compare = len(checked) > 1
    what = f"these {len(checked)} runs" if compare else "this run"
    lines = [
        f"# Recreate {what} on {base}{' and compare them' if compare else ''}",
        "# (Python 3, standard library only).",
        "import json",
        "import time",
        "import urllib.error",
        "import urllib.parse",
        "import urllib.request",
        "",
        f"BASE = {base!r}",
        f"BODIES = {literal}",
        "",
        "",
        "def call(method, path, body=None):",
        "    data = None if body is None else json.dumps(body).encode()",
        '    headers = {"content-type": "application/json"}',
        "    request = urllib.request.Request(BASE + path, data=data, method=method, headers=headers)",
        "    try:",
        "        with urllib.request.urlopen(request, timeout=60) as answer:",
        "            return json.load(answer)",
        "    except urllib.error.HTTPError as error:",
        '        raise SystemExit(f"{method} {path}: {error.code} {error.read().decode()}") from None',
        "",
        "",
        "ids = []",
        "for body in BODIES:",
        f'    answer = call("POST", {RUNS_PATH!r}, body)',
        "    print(json.dumps(answer))  # keep its delete_token: it is shown once",
        '    ids.append(answer["id"])',
    ]
    if compare:
        lines += [
            "for run_id in ids:",
            f'    path = {RUNS_PATH + "/"!r} + urllib.parse.quote(run_id, safe="")',
            '    while call("GET", path)["status"] not in ("done", "failed"):',
            f"        time.sleep({POLL_INTERVAL_S})",
            f'print(json.dumps(call("GET", {COMPARE_PATH + "?ids="!r} + ",".join(ids)), indent=2))',
        ]
    return "\n".join(lines) + "\n"


def _json(body: Mapping[str, Any]) -> str:
    return json.dumps(body, ensure_ascii=True, allow_nan=False)


def _base_url(base_url: str) -> str:
    """The server's base URL without a trailing slash: http(s), a host, no query or fragment,
    printable ASCII without quotes or spaces."""
    if not isinstance(base_url, str):
        raise ValueError(f"base_url: must be a string, got {type(base_url).__name__}")
    parts = urlsplit(base_url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise ValueError(f"base_url: must be an http(s) URL such as http://127.0.0.1:8000, got {base_url!r}")
    if parts.query or parts.fragment or not all(33 <= ord(c) < 127 and c not in "'\"`\\<>" for c in base_url):
        raise ValueError(
            f"base_url: a server's address without query, fragment, quotes or spaces, got {base_url!r}"
        )
    return base_url.rstrip("/")


def _checked_bodies(bodies: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The bodies as plain JSON values (what the server will parse), each checked."""
    if isinstance(bodies, Mapping | str) or not isinstance(bodies, Sequence):
        raise ValueError("bodies: a list of POST /api/runs bodies")
    if not 1 <= len(bodies) <= MAX_COMPARED_RUNS:
        raise ValueError(
            f"bodies: 1 to {MAX_COMPARED_RUNS} runs (a compare takes at most 8), got {len(bodies)}"
        )
    checked = []
    for i, body in enumerate(bodies):
        where = f"bodies[{i}]"
        if not isinstance(body, Mapping):
            raise ValueError(f"{where}: a POST /api/runs body (a mapping), got {type(body).__name__}")
        if not isinstance(body.get("config"), Mapping):
            raise ValueError(
                f"{where}.config: the run's config (a mapping), got {type(body.get('config')).__name__}"
            )
        if not isinstance(body.get("title", ""), str):
            raise ValueError(f"{where}.title: a string, got {type(body.get('title')).__name__}")
        repeats = body.get("repeats", 1)
        if isinstance(repeats, bool) or not isinstance(repeats, int) or not 1 <= repeats <= MAX_REPEATS:
            raise ValueError(f"{where}.repeats: a whole number from 1 to {MAX_REPEATS}, got {repeats!r}")
        try:
            checked.append(json.loads(json.dumps(body, allow_nan=False)))
        except (TypeError, ValueError) as exc:
            raise ValueError(f"{where}: not JSON ({exc})") from None
    return checked
