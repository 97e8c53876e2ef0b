"""The web layer every slice shares: Jinja templates and filters, static files and plotly.js, and
the outermost middleware (security headers, cross-site and Host checks, body size limit), and the
405 that names every method of its path."""

from __future__ import annotations

import base64
import gzip
import hashlib
import math
import mimetypes
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from functools import cache
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import orjson
from fastapi import APIRouter, Depends, FastAPI, Request
from fastapi.openapi.docs import get_swagger_ui_html
from fastapi.responses import Response
from fastapi.routing import iter_route_contexts
from jinja2 import Environment, FileSystemLoader, Undefined, select_autoescape
from markupsafe import Markup
from starlette.datastructures import UploadFile
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.middleware.gzip import GZipMiddleware
from starlette.routing import BaseRoute, Match
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from app.core import errors
from app.core.errors import NotFound, UnsupportedMediaType
from app.core.inputs import check_inputs, refuse_nul
from app.core.settings import REPO_ROOT
from engine.governors import GOVERNOR_KERNEL
from engine.result import SENDER_PARTS

TEMPLATES_DIR = REPO_ROOT / "templates"
STATIC_DIR = REPO_ROOT / "static"
# plotly.js's cartesian distribution (npm `plotly.js-cartesian-dist-min`): bar, scatter, heatmap,
# histogram, box and the layout components, a third of the full bundle's bytes (the run page's
# wait for its charts is mostly parsing plotly.js). Vendored with its version in the name.
PLOTLY_JS_VERSION = "4.1.1"
PLOTLY_JS_NAME = f"plotly-cartesian-{PLOTLY_JS_VERSION}.min.js"
PLOTLY_JS_PATH = STATIC_DIR / "vendor" / PLOTLY_JS_NAME

CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; "
    "object-src 'none'; base-uri 'none'; frame-ancestors 'none'; form-action 'self'"
)
# /redoc's search index runs in a Web Worker that Redoc builds from a blob: URL, on that page only.
# Its sidebar's "by Redocly" logo (an image on Redoc's CDN) stays refused: offline it would not
# load either, and Redoc drops the image when it fails.
REDOC_CSP = CSP + "; worker-src blob:"
# On every answer (pages, JSON, static files, errors), beside the CSP.
SECURITY_HEADERS = ((b"x-content-type-options", b"nosniff"), (b"referrer-policy", b"same-origin"))
# Versioned URLs (the plotly bundle, `?v=<hash>` static links) never change content.
CACHE_IMMUTABLE = "public, max-age=31536000, immutable"
UNSAFE_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})
LOOPBACK_HOSTS = frozenset({"127.0.0.1", "localhost", "::1", "[::1]"})

router = APIRouter(include_in_schema=False)


# --- templates -------------------------------------------------------------------------------------


def json_script(value: Any) -> Markup:
    """JSON for a `<script type="application/json">` block: `<`, `>` and `&` escaped as \\uXXXX,
    so a run title such as `</script><script>...` stays data."""
    text = orjson.dumps(value, option=orjson.OPT_SERIALIZE_NUMPY | orjson.OPT_NON_STR_KEYS).decode()
    text = text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
    text = text.replace("\u2028", "\\u2028").replace("\u2029", "\\u2029")
    return Markup(text)


def static_url(path: str) -> str:
    """`/static/<path>?v=<content hash>`: cacheable forever, changes when the file does."""
    asset = assets().get(path)
    return f"/static/{path}" if asset is None else f"/static/{path}?v={asset.etag.strip(chr(34))[:12]}"


def fmt_num(value: Any, digits: int = 3) -> str:
    """A number for tables: integers with thousands separators, others to `digits` significant."""
    if value is None or isinstance(value, Undefined):
        return "–"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        if math.isnan(value):
            return "–"
        if value.is_integer() and abs(value) < 1e15:
            return f"{int(value):,}"
        if abs(value) >= 10**digits:
            return f"{value:,.0f}"
        return f"{value:.{digits}g}"
    return str(value)


def fmt_us(ns: float | None) -> str:
    if ns is None or isinstance(ns, Undefined):
        return "–"
    return fmt_num(ns / 1000.0) + " us"


def fmt_time(value: Any) -> str:
    if isinstance(value, str):
        try:
            value = datetime.fromisoformat(value)
        except ValueError:
            return value
    if isinstance(value, datetime):
        return value.strftime("%Y-%m-%d %H:%M UTC")
    return "" if value is None or isinstance(value, Undefined) else str(value)


def plotly_js_url() -> str:
    return f"/vendor/{PLOTLY_JS_NAME}"


# What a stored page depends on: the templates, the chart code that builds its figures, the static
# files it links (the plotly bundle included). A page stored under another digest is rendered
# again when served.
RENDERED_FROM = (TEMPLATES_DIR, STATIC_DIR, REPO_ROOT / "app" / "charts")


@cache
def render_version() -> str:
    """A digest of every file a stored page is rendered from, computed once per process."""
    digest = hashlib.blake2b(digest_size=8)
    for root in RENDERED_FROM:
        for path in sorted(p for p in root.rglob("*") if p.is_file() and p.suffix != ".pyc"):
            digest.update(path.relative_to(REPO_ROOT).as_posix().encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()


_routes = APIRouter()


def use_routes(routers: Iterable[APIRouter]) -> None:
    """Name the app's routes for `url_for` (links to run pages and the rest): `app.main` wires
    them at start-up, so this layer never imports the slices it links to."""
    global _routes
    routes = APIRouter()
    for r in (router, *routers):
        routes.include_router(r)
    _routes = routes


def url_for(name: str, /, **params: Any) -> str:
    """Path-only links (`/runs/abc`): stored pages carry no host, and render without an app."""
    return str(_routes.url_path_for(name, **params))


env = Environment(loader=FileSystemLoader(TEMPLATES_DIR), autoescape=select_autoescape(default=True))
env.globals.update(
    url_for=url_for,
    static_url=static_url,
    plotly_js_url=plotly_js_url,
    sender_parts=SENDER_PARTS,
    governor_kernel=GOVERNOR_KERNEL,
)
env.filters.update(json_script=json_script, num=fmt_num, us=fmt_us, time=fmt_time)


def absolute(request: Request, path: str) -> str:
    """A path as the absolute URL the client reached the server at: only for the answers to a
    POST (scripts follow the link they were given); stored and GET answers carry paths."""
    return str(request.base_url).rstrip("/") + path


def json_response(data: Any, status_code: int = 200) -> Response:
    """A JSON answer: bytes (stored or cached answers) as they are, a pydantic model or plain data
    serialised once."""
    if isinstance(data, bytes):
        body = data
    elif hasattr(data, "model_dump_json"):
        body = data.model_dump_json().encode()
    else:
        body = orjson.dumps(data, option=orjson.OPT_SERIALIZE_NUMPY | orjson.OPT_NON_STR_KEYS)
    return Response(body, status_code=status_code, media_type="application/json")


def see_other(path: str) -> Response:
    """The answer to a page's form post: go to `path` (303, so the browser GETs it)."""
    return Response(status_code=303, headers={"Location": path})


async def require_json(request: Request) -> None:
    """Only `application/json` bodies are read: a form or `text/plain` post needs no preflight, so
    another site's page could send one (declared on the JSON routes, checked before their body)."""
    content_type = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if content_type != "application/json" and not content_type.endswith("+json"):
        raise UnsupportedMediaType(f"send the body as application/json, not {content_type or 'nothing'!r}")


@dataclass
class Upload:
    """A posted form's files (by name) and text fields, or a whole body as one file."""

    files: dict[str, bytes]
    fields: dict[str, str]

    @property
    def title(self) -> str:
        return self.fields.get("title", "")

    @property
    def unlisted(self) -> bool:
        return self.fields.get("unlisted") in ("1", "on", "true")


MAX_UPLOAD_FILES = 4
# Text fields (`title`, `unlisted`...) a form may hold besides its files.
MAX_UPLOAD_FIELDS = 8


async def read_upload(request: Request, limit: int, *, filename: str | None = None) -> Upload:
    """The files of a multipart form (and its text fields: `title`, `unlisted`...), or the whole
    body as one file named by `filename` (a turbostat text, a wult zip/tar, a sysfs dump)."""
    content_type = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if content_type != "multipart/form-data":
        return Upload(files={filename or "upload": await request.body()}, fields={})
    files: dict[str, bytes] = {}
    fields: dict[str, str] = {}
    form_limits = {"max_files": MAX_UPLOAD_FILES, "max_fields": MAX_UPLOAD_FIELDS, "max_part_size": limit}
    async with request.form(**form_limits) as form:
        for key, value in form.multi_items():
            if not isinstance(value, UploadFile):
                fields[key] = value
            elif value.filename:  # an empty file input sends a nameless empty part
                files[value.filename] = await value.read()
    refuse_nul(fields, "body")
    return Upload(files=files, fields=fields)


def render_html(name: str, context: dict[str, Any]) -> str:
    """A template as text (no request: stored pages are rendered this way too)."""
    return env.get_template(name).render({"here": "", **context})


def page(request: Request, name: str, context: dict[str, Any], status_code: int = 200) -> Response:
    """A page answer."""
    html = render_html(name, {"here": request.url.path, **context})
    return Response(html, status_code=status_code, media_type="text/html; charset=utf-8")


def error_page(request: Request, status_code: int, detail: Any) -> Response:
    """`error.html` with the API error's fields: the renderer `app.core.errors` is given."""
    return page(request, "error.html", {"status_code": status_code, "detail": detail}, status_code)


# --- static files and plotly.js, from memory ----------------------------------------------------


@dataclass(frozen=True)
class Asset:
    body: bytes
    gzipped: bytes | None  # None where compressing does not pay (images, tiny files)
    etag: str
    media_type: str


def _asset(path: Path) -> Asset:
    body = path.read_bytes()
    media_type = mimetypes.guess_type(path.name)[0] or "application/octet-stream"
    media_type = "text/javascript" if path.suffix in (".js", ".mjs") else media_type
    textual = media_type.startswith("text/") or media_type in ("application/json", "image/svg+xml")
    gzipped = gzip.compress(body, compresslevel=9, mtime=0) if textual and len(body) > 512 else None
    return Asset(body, gzipped, f'"{hashlib.sha256(body).hexdigest()[:16]}"', media_type)


@cache
def assets() -> dict[str, Asset]:
    """Every static file (the plotly bundle included), read and compressed once, at start-up: served
    by async routes that take no thread and touch no disk or database."""
    return {p.relative_to(STATIC_DIR).as_posix(): _asset(p) for p in STATIC_DIR.rglob("*") if p.is_file()}


def _serve(request: Request, asset: Asset, cache_control: str | None = None) -> Response:
    headers = {"ETag": asset.etag, "Vary": "Accept-Encoding"}
    if cache_control:
        headers["Cache-Control"] = cache_control
    if asset.etag in request.headers.get("if-none-match", ""):
        return Response(status_code=304, headers=headers)
    body = asset.body
    if asset.gzipped is not None and "gzip" in request.headers.get("accept-encoding", ""):
        body, headers["Content-Encoding"] = asset.gzipped, "gzip"
    if request.method == "HEAD":
        headers["Content-Length"] = str(len(body))
        return Response(status_code=200, headers=headers, media_type=asset.media_type)
    return Response(body, media_type=asset.media_type, headers=headers)


@router.api_route(plotly_js_url(), methods=["GET", "HEAD"], name="plotly_js")
async def plotly_js(request: Request) -> Response:
    return _serve(request, assets()[f"vendor/{PLOTLY_JS_NAME}"], CACHE_IMMUTABLE)


@router.api_route("/static/{path:path}", methods=["GET", "HEAD"], name="static")
async def static(request: Request, path: str) -> Response:
    """A static file (cache headers by `Edge`: immutable for a versioned link, else `no-cache`)."""
    asset = assets().get(path)
    if asset is None:
        raise NotFound(f"no static file {path!r}")
    return _serve(request, asset)


# --- middleware ------------------------------------------------------------------------------------


def _docs_csp(app: FastAPI) -> bytes:
    """/docs' CSP: Swagger UI's init script is inline; allow exactly it by its hash."""
    html = get_swagger_ui_html(
        openapi_url=app.openapi_url or "",
        title=app.title + " - Swagger UI",
        oauth2_redirect_url=app.swagger_ui_oauth2_redirect_url,
        swagger_ui_parameters=app.swagger_ui_parameters,
    ).body.decode()
    hashes = [
        "'sha256-" + base64.b64encode(hashlib.sha256(s.encode()).digest()).decode() + "'"
        for s in re.findall(r"<script>(.*?)</script>", html, re.S)
    ]
    return CSP.replace("script-src 'self'", "script-src 'self' " + " ".join(hashes)).encode()


def _header(scope: Scope, name: bytes) -> str | None:
    for key, value in scope["headers"]:
        if key == name:
            return str(value.decode("latin-1"))
    return None


# Headers read once for a decision: sent twice, which one counts is a guess the sender makes.
SINGLE_HEADERS = (b"host", b"origin", b"sec-fetch-site")


def malformed_request(scope: Scope) -> str | None:
    """Why a request is refused as malformed (400), or None: a header the checks read sent twice,
    or an absolute-form target (`GET http://other/ HTTP/1.1`) naming another host than `Host`."""
    names = [key for key, _ in scope["headers"] if key in SINGLE_HEADERS]
    for name in SINGLE_HEADERS:
        if names.count(name) > 1:
            return f"{name.decode()} header sent more than once"
    raw = scope.get("raw_path") or scope["path"].encode()
    if not raw.startswith(b"/") and raw != b"*":
        target = urlsplit(raw.decode("latin-1"))
        if target.netloc.lower() != (_header(scope, b"host") or "").lower():
            return "request target names another host than the Host header"
    return None


def cross_site_refusal(scope: Scope, loopback_only: bool) -> str | None:
    """Why a request must be refused before the app sees it, or None.

    - When bound to loopback, only loopback Host names (a DNS-rebinding page reaches 127.0.0.1
      under its own name).
    - One rule for every unsafe method: `Sec-Fetch-Site: cross-site` (in any case), or an
      `Origin` (`null` included) other than the request's own, is another site's page posting here.
    """
    host = _header(scope, b"host") or ""
    name = host[: host.rindex(":")] if host.rfind(":") > host.rfind("]") else host  # no port
    if loopback_only and name.lower() not in LOOPBACK_HOSTS:
        return f"host {host!r} not served: the server is bound to loopback"
    if scope["method"] not in UNSAFE_METHODS:
        return None
    if (_header(scope, b"sec-fetch-site") or "").strip().lower() == "cross-site":
        return "cross-site request refused"
    origin = _header(scope, b"origin")
    # By host and port only: behind a TLS proxy the request's own scheme reads http.
    if origin is not None and urlsplit(origin.strip()).netloc.lower() != host.lower():
        return f"cross-origin request refused (Origin {origin!r})"
    return None


class Edge:
    """The outermost middleware: the Host and cross-site checks, the body size limit, security
    headers on every answer (pages, JSON, static files, errors), and gzip with long-lived caching
    for static files."""

    def __init__(
        self,
        app: ASGIApp,
        *,
        max_body_bytes: int,
        loopback_only: bool,
        docs_csp: bytes,
        body_limits: Mapping[str, int] | None = None,
    ) -> None:
        self.app = app
        self.gzip = GZipMiddleware(app, minimum_size=512)
        self.max_body_bytes = max_body_bytes
        # Paths with their own limit (the imports of machine dumps and measurements: 8 MiB).
        self.body_limits = dict(body_limits or {})
        self.loopback_only = loopback_only
        self.docs_csp = docs_csp

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        path: str = scope["path"]
        csp = self.docs_csp if path == "/docs" else REDOC_CSP.encode() if path == "/redoc" else CSP.encode()
        static = path.startswith(("/static/", "/static-offline-docs/"))
        added = [(b"content-security-policy", csp), *SECURITY_HEADERS]
        if static:
            versioned = b"v=" in scope.get("query_string", b"")
            added.append((b"cache-control", CACHE_IMMUTABLE.encode() if versioned else b"no-cache"))
        started = False

        async def send_with_headers(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
                message["headers"] = [*message.get("headers", ()), *added]
            await send(message)

        malformed = malformed_request(scope)
        if malformed is not None:
            await errors.error_response(400, malformed)(scope, receive, send_with_headers)
            return
        refusal = cross_site_refusal(scope, self.loopback_only)
        if refusal is not None:
            await errors.error_response(403, refusal)(scope, receive, send_with_headers)
            return
        if scope["method"] in UNSAFE_METHODS:
            receive = await self._bounded_body(scope, receive, send_with_headers)
            if receive is None:
                return
        try:
            await (self.gzip if static else self.app)(scope, receive, send_with_headers)
        except Exception:
            # A bug: still the one error shape, with the headers (then logged by the server).
            if not started:
                await errors.error_response(500, "internal error")(scope, receive, send_with_headers)
            raise

    async def _bounded_body(self, scope: Scope, receive: Receive, send: Send) -> Receive | None:
        """Read the whole body (up to the limit) first; 413 above it, declared or streamed."""
        limit = self.body_limits.get(scope["path"])
        setting = "IDLELAB_IMPORT_MAX_BODY_BYTES" if limit is not None else "IDLELAB_MAX_BODY_BYTES"
        limit = self.max_body_bytes if limit is None else limit
        too_large = errors.error_response(413, f"request body over the limit of {limit} bytes ({setting})")
        declared = _header(scope, b"content-length")
        if declared is not None and declared.isdigit() and int(declared) > limit:
            await too_large(scope, receive, send)
            return None
        chunks: list[bytes] = []
        size, more = 0, True
        while more:
            message = await receive()
            if message["type"] == "http.disconnect":
                return None
            chunks.append(message.get("body", b""))
            size += len(chunks[-1])
            if size > limit:
                await too_large(scope, receive, send)
                return None
            more = message.get("more_body", False)
        body = b"".join(chunks)
        sent = False

        async def replay() -> Message:
            nonlocal sent
            if not sent:
                sent = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        return replay


# --- 405: every method of the path --------------------------------------------------------------


def allowed_methods(routes: Sequence[BaseRoute], scope: Scope) -> list[str]:
    """The methods of every route whose path matches the request's (included routers' routes
    too). Starlette's router answers 405 from the first route whose path matches, naming only its
    methods; a path served by a GET route and a DELETE route allows both. As OpenAPI matches paths,
    a concrete one (`/api/platforms/import`) comes before a templated one (`/api/platforms/{name}`):
    only the routes with the fewest path parameters count."""
    matching: dict[int, set[str]] = {}
    for route in iter_route_contexts(routes):
        if route.methods and route.matches(scope)[0] is not Match.NONE:
            matching.setdefault(len(getattr(route, "param_convertors", {})), set()).update(route.methods)
    return sorted(matching[min(matching)]) if matching else []


async def method_not_allowed(request: Request, exc: Exception) -> Response:
    """The 405 of the app's one error shape, its `Allow` naming every method of the path."""
    assert isinstance(exc, StarletteHTTPException)
    allow = ", ".join(allowed_methods(request.app.router.routes, request.scope))
    full = StarletteHTTPException(405, exc.detail, headers={**(exc.headers or {}), "Allow": allow})
    return await request.app.exception_handlers[StarletteHTTPException](request, full)  # type: ignore[no-any-return]


def install(
    app: FastAPI,
    *,
    max_body_bytes: int,
    loopback_only: bool,
    routers: Iterable[APIRouter],
    body_limits: Mapping[str, int] | None = None,
) -> None:
    """Include the routers (the static files' among them, read into memory now), answer 405 with
    every method of the path, and add `Edge` last (outermost)."""
    assets()
    routers = list(routers)
    for r in (router, *routers):
        app.include_router(r, dependencies=[Depends(check_inputs)])
    use_routes(routers)
    # By status, so it comes before the handler of every HTTP error (`app.core.errors`'s), which
    # then renders it.
    app.add_exception_handler(405, method_not_allowed)
    app.add_middleware(
        Edge,
        max_body_bytes=max_body_bytes,
        loopback_only=loopback_only,
        docs_csp=_docs_csp(app),
        body_limits=body_limits,
    )
