"""The command line's terminal plumbing, for `app.cli` and the slices' own commands: a user error
that prints as one line, errors told in one line with their fields, a progress bar on stderr,
and a JSON request to a server whose failures are such errors."""

from __future__ import annotations

import json
import sys
import time
import urllib.error
import urllib.request
from typing import Any


class CliError(Exception):
    """A user error: printed as one line, exit code 1."""


def errors_line(errors: Any, prefix: str = "") -> str:
    """Errors (the API's `detail`, or pydantic's) in one line, each naming its field (`body` left out)."""
    if not isinstance(errors, list):
        return str(errors)
    parts = []
    for e in errors:
        loc = ".".join(str(p) for p in e.get("loc", ()) if p != "body")
        if prefix:
            loc = prefix + loc.upper()
        parts.append(f"{loc}: {e['msg']}" if loc else str(e["msg"]))
    return "; ".join(parts)


class ProgressBar:
    """A progress bar on stderr, drawn from the engine's progress callback."""

    WIDTH = 30

    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled
        self.shown = -1
        self.t0 = time.perf_counter()

    def __call__(self, fraction: float) -> None:
        if not self.enabled:
            return
        pct = int(max(0.0, min(1.0, fraction)) * 100)
        if pct == self.shown:
            return
        self.shown = pct
        filled = pct * self.WIDTH // 100
        bar = "#" * filled + "-" * (self.WIDTH - filled)
        sys.stderr.write(f"\r[{bar}] {pct:3d}%  {time.perf_counter() - self.t0:6.1f} s")
        sys.stderr.flush()

    def close(self) -> None:
        if self.enabled and self.shown >= 0:
            sys.stderr.write("\n")
            sys.stderr.flush()


def http_json(method: str, url: str, body: Any = None) -> Any:
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(
        url,
        data=data,
        method=method,
        headers={"Content-Type": "application/json", "Accept": "application/json"},
    )
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            return json.loads(response.read())
    except urllib.error.HTTPError as exc:
        try:
            detail = json.loads(exc.read()).get("detail")
        except ValueError:
            detail = exc.reason
        raise CliError(f"{url}: {exc.code}: {errors_line(detail)}") from None
    except (urllib.error.URLError, OSError) as exc:
        raise CliError(f"cannot reach {url}: {getattr(exc, 'reason', exc)}") from None
