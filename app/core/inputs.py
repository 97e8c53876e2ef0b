"""Inputs refused before any query: ids outside their alphabet and length (404, as an unknown id
is), U+0000 in any query parameter or JSON string (422 naming the field: PostgreSQL's text cannot
hold it, and SQLite's LIKE stops at it), and the bounds of paging (PostgreSQL binds LIMIT and
OFFSET as 32-bit integers)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import orjson
from fastapi import Request
from pydantic import GetJsonSchemaHandler

from app.core.errors import InvalidInput, NotFound, echo
from engine import SimConfig
from engine.text_schema import NO_NUL_PATTERN, no_nul_strings

__all__ = ["NO_NUL_PATTERN", "no_nul_strings"]
# A text query parameter's schema, as `check_inputs` refuses U+0000 in any.
TEXT = {"pattern": NO_NUL_PATTERN}

# `new_id()`'s alphabet (URL-safe base64), up to the id columns' width.
ID_CHARS = r"[A-Za-z0-9_-]{1,24}"
ID_RE = re.compile(ID_CHARS)
# As OpenAPI says it (JSON Schema patterns are not anchored).
ID_PATTERN = f"^{ID_CHARS}$"

# Built-in names (`adl_l`, `default_idle`) and custom ones (lower case, digits, - and _), up to
# the name column's width.
PLATFORM_NAME_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,63}")
MAX_OFFSET = 2**31 - 1
MAX_PAGE = 10**6

# Path parameters that name a stored object, and what a 404 calls them.
ID_PARAMS = {"run_id": "run", "sweep_id": "sweep", "measurement_id": "measurement"}


class SimConfigSchema:
    """Annotates a body field kept as the JSON it was sent (a sweep's base, a what-if's changes)
    that the server validates as a (partial) `SimConfig`: the schema says so."""

    @classmethod
    def __get_pydantic_json_schema__(cls, core_schema: Any, handler: GetJsonSchemaHandler) -> Any:
        return handler(SimConfig.__pydantic_core_schema__)


def is_id(value: str) -> bool:
    return ID_RE.fullmatch(value) is not None


def _unknown(what: str, value: str) -> NotFound:
    return NotFound(f"{what} {echo(value)!r} not found")


def check_id(value: str, what: str) -> None:
    """404 for an id no object can have."""
    if not is_id(value):
        raise _unknown(what, value)


def _nul_path(value: Any, loc: list[str | int]) -> Iterator[list[str | int]]:
    """Where in parsed JSON a string (or a key) holds U+0000."""
    if isinstance(value, str):
        if "\x00" in value:
            yield loc
    elif isinstance(value, dict):
        for key, item in value.items():
            if "\x00" in key:
                yield loc
            yield from _nul_path(item, [*loc, key])
    elif isinstance(value, list):
        for i, item in enumerate(value):
            yield from _nul_path(item, [*loc, i])


def _nul_error(loc: list[str | int]) -> InvalidInput:
    return InvalidInput.one(loc, "must not contain U+0000 (NUL)", "string_nul")


def refuse_nul(fields: dict[str, str] | list[tuple[str, str]], where: str) -> None:
    """422 for the first text field holding U+0000 (query parameters, form fields)."""
    items = fields.items() if isinstance(fields, dict) else fields
    for key, value in items:
        if "\x00" in value or "\x00" in key:
            raise _nul_error([where, echo(key.replace("\x00", ""))])


async def check_inputs(request: Request) -> None:
    """Every route's first dependency: runs before the session's first query."""
    route = request.scope.get("route")
    route_path: str = getattr(route, "path", "")
    for param, value in request.path_params.items():
        what = ID_PARAMS.get(param)
        if what is not None:
            check_id(str(value), what)
        elif param == "name" and "/platforms/" in route_path:
            if PLATFORM_NAME_RE.fullmatch(str(value)) is None:
                raise _unknown("platform", str(value))
    refuse_nul(request.query_params.multi_items(), "query")
    content_type = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if request.method in ("POST", "PUT", "PATCH") and content_type.endswith("json"):
        body = await request.body()
        if b"\\u0000" in body:  # escaped in JSON (a raw NUL is malformed JSON already)
            try:
                parsed = orjson.loads(body)
            except orjson.JSONDecodeError:
                return  # malformed: the body's own validation answers
            for loc in _nul_path(parsed, ["body"]):
                raise _nul_error(loc)
