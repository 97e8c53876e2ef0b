"""One error shape everywhere: `{"detail": ...}` with a 4xx code; 422 names the field."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any, Protocol

import orjson
from fastapi import Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import Response
from sqlalchemy.exc import OperationalError
from sqlalchemy.exc import TimeoutError as PoolTimeout
from starlette.exceptions import HTTPException as StarletteHTTPException

from engine.config import field_error

# What an error repeats of its input: the start of it, never a 7 MB line back.
MAX_ECHO = 64
# A quoted value (`'...'` or `"..."`, as `repr` writes it) too long to repeat whole.
_LONG_QUOTED = re.compile(rf"'([^'\n]{{{MAX_ECHO + 1},}})'|\"([^\"\n]{{{MAX_ECHO + 1},}})\"")


def echo(value: str, limit: int = MAX_ECHO) -> str:
    """`value` as an error may repeat it: at most `limit` characters, then how many were cut."""
    return value if len(value) <= limit else f"{value[:limit]}...({len(value) - limit} more)"


def short_echoes(detail: Any) -> Any:
    """`detail` with every quoted value and every `loc` item cut by `echo`: applied to every
    error answered, so no message repeats more than a short prefix of what it was sent."""
    if isinstance(detail, str):
        return _LONG_QUOTED.sub(lambda m: repr(echo(m.group(1) or m.group(2))), detail)
    if isinstance(detail, list):
        return [short_echoes(item) for item in detail]
    if isinstance(detail, dict):
        return {
            key: [echo(x) if isinstance(x, str) else x for x in value]
            if key == "loc"
            else short_echoes(value)
            for key, value in detail.items()
        }
    return detail


class AppError(Exception):
    """An error a user caused; `detail` is what they are told."""

    status_code = 400
    headers: dict[str, str] | None = None

    def __init__(self, detail: Any) -> None:
        super().__init__(detail if isinstance(detail, str) else repr(detail))
        self.detail = detail


class NotFound(AppError):
    status_code = 404


class Forbidden(AppError):
    status_code = 403


class Conflict(AppError):
    status_code = 409


class UnsupportedMediaType(AppError):
    status_code = 415


class Busy(AppError):
    """503: the server is at a limit of its own (not the client's); retry after `retry_after_s`."""

    status_code = 503

    def __init__(self, detail: str, retry_after_s: int) -> None:
        super().__init__(detail)
        self.headers = {"Retry-After": str(retry_after_s)}


class TooManyRequests(Busy):
    """429: this client is at its limit; retry after `retry_after_s`."""

    status_code = 429


# What routes document besides their success: every status a route can answer.
ERROR_RESPONSES: dict[int | str, dict[str, Any]] = {
    400: {
        "description": "Malformed request: a body that is not JSON where JSON is expected, a multipart body "
        'that cannot be parsed, or Host, Origin or Sec-Fetch-Site sent twice: `{"detail": "..."}`'
    },
    403: {"description": 'Cross-site request, or a wrong delete token: `{"detail": "..."}`'},
    404: {"description": 'Unknown id: `{"detail": "..."}`'},
    413: {"description": 'Request body over the limit: `{"detail": "..."}`'},
    415: {"description": 'Body not sent as application/json: `{"detail": "..."}`'},
    422: {"description": 'Invalid input: `{"detail": [{"loc": [...], "msg": ..., "type": ...}]}`'},
    429: {
        "description": 'This client has too much work queued; retry after `Retry-After`: `{"detail": "..."}`'
    },
    503: {
        "description": "Database unavailable (locked, disk full), every connection busy, the queue full or "
        'imports at their limit; retry after `Retry-After`: `{"detail": "..."}`'
    },
}


class InvalidInput(AppError):
    """422 with a list of `{"loc", "msg", "type"}` items, each naming the field."""

    status_code = 422

    def __init__(self, errors: Sequence[dict[str, Any]]) -> None:
        super().__init__([normalize_error(e) for e in errors])

    @classmethod
    def one(cls, loc: Sequence[str | int], msg: str, type_: str = "value_error") -> InvalidInput:
        return cls([{"loc": list(loc), "msg": msg, "type": type_}])


def normalize_error(err: dict[str, Any]) -> dict[str, Any]:
    """Keep only loc/msg/type; move a `field.path: reason` message's path into `loc` (the engine's
    rule, applied to errors FastAPI raised itself); malformed JSON is the body's error."""
    loc: list[Any] = list(err.get("loc", []))
    msg, type_ = str(err.get("msg", "")), str(err.get("type", "value_error"))
    if type_ == "json_invalid":
        return {"loc": loc[:1], "msg": f"invalid JSON: {err.get('ctx', {}).get('error', msg)}", "type": type_}
    if msg.startswith("Value error, "):
        return field_error(loc, msg, type_)
    return {"loc": loc, "msg": msg, "type": type_}


def error_response(status_code: int, detail: Any, headers: dict[str, str] | None = None) -> Response:
    return Response(
        orjson.dumps({"detail": short_echoes(detail)}),
        status_code=status_code,
        media_type="application/json",
        headers=headers,
    )


class ErrorPage(Protocol):
    """Renders an error as a page (`app.core.web.error_page`, wired by `app.main`)."""

    def __call__(self, request: Request, status_code: int, detail: Any) -> Response: ...


def _wants_html(request: Request) -> bool:
    if request.url.path.startswith(("/api", "/static")):
        return False
    return "text/html" in request.headers.get("accept", "")


def install(app: Any, page: ErrorPage) -> None:
    """Register the handlers that give every error the `{"detail": ...}` shape: JSON for the API,
    and for a browser asking for a page, `page` with the same fields."""

    def render(
        request: Request, status_code: int, detail: Any, headers: dict[str, str] | None = None
    ) -> Response:
        if not _wants_html(request):
            return error_response(status_code, detail, headers)
        response = page(request, status_code, short_echoes(detail))
        response.headers.update(headers or {})
        return response

    async def app_error(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, AppError)
        return render(request, exc.status_code, exc.detail, exc.headers)

    async def http_error(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, StarletteHTTPException)
        return render(request, exc.status_code, exc.detail, getattr(exc, "headers", None))

    async def validation_error(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, RequestValidationError)
        return render(request, 422, [normalize_error(dict(e)) for e in exc.errors()])

    async def database_error(request: Request, exc: Exception) -> Response:
        """The database refused (locked, disk full, gone): a 503 the client may retry, with the reason."""
        reason = " ".join(str(getattr(exc, "orig", exc)).split())
        return render(request, 503, f"database unavailable: {reason}", {"Retry-After": "1"})

    async def pool_timeout(request: Request, exc: Exception) -> Response:
        """Every pooled connection stayed busy for the pool's time-out: a 503 to retry, not a 500."""
        return render(request, 503, "server busy: no database connection free; retry", {"Retry-After": "1"})

    app.add_exception_handler(AppError, app_error)
    app.add_exception_handler(OperationalError, database_error)
    app.add_exception_handler(PoolTimeout, pool_timeout)
    app.add_exception_handler(StarletteHTTPException, http_error)
    app.add_exception_handler(RequestValidationError, validation_error)
