"""Ids and delete tokens, one way for every resource (runs, sweeps, measurements): a short random id,
a token shown once and stored as its hash, and the check a DELETE makes."""

from __future__ import annotations

import hashlib
import hmac
import secrets
from typing import Any, TypeVar

from app.core.errors import Forbidden, NotFound

Row = TypeVar("Row")


def new_id() -> str:
    """Short, random, unguessable (64 bits)."""
    return secrets.token_urlsafe(8)


def hash_token(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def new_token() -> tuple[str, str]:
    """(token, its hash): the token is answered once, the hash stored."""
    token = secrets.token_urlsafe(24)
    return token, hash_token(token)


def token_matches(row: Any, token: str | None) -> bool:
    return token is not None and hmac.compare_digest(row.delete_token_hash, hash_token(token))


def authorized(row: Row | None, token: str | None, what: str) -> Row:
    """`row` if it exists and `token` is its delete token: else 404 naming `what`, or 403."""
    if row is None:
        raise NotFound(f"{what} not found")
    if not token_matches(row, token):
        raise Forbidden("wrong or missing X-Delete-Token")
    return row
