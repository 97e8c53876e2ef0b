"""HTTP routers: `api` (JSON under /api), `pages` and `charts` (dashboard), `scenarios`."""

from __future__ import annotations

from starlette.requests import Request

_BASE_URLS: dict[tuple[object, ...], str] = {}


def base_url_of(request: Request) -> str:
    """The URL the client reached the app at, without the trailing slash (`http://host:8000`): what
    absolute links in answers start with. Starlette builds it from the scheme, server address,
    root path and Host header; those few values take a handful of forms, so each is built once
    (building costs a tenth of a cached read)."""
    scope = request.scope
    host = next((v for k, v in scope["headers"] if k == b"host"), None)
    server = scope.get("server")  # a list in some servers: made hashable
    key = (scope.get("scheme"), server and tuple(server), scope.get("root_path"), scope.get("app_root_path"))
    key += (host,)
    url = _BASE_URLS.get(key)
    if url is None:
        if len(_BASE_URLS) >= 1024:  # any Host header a client likes: bounded
            _BASE_URLS.clear()
        url = _BASE_URLS[key] = str(request.base_url).rstrip("/")
    return url
