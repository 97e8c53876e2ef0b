"""Holes at the server's edges: a 405 names every method of its path (Starlette's router stops at
the first route whose path matches), and a PostgreSQL database that is not UTF-8 is refused at
start, with the command that creates one that is, before anything is written to it."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import psycopg
import pytest
from sqlalchemy.engine import make_url
from starlette.routing import compile_path

from app.core.database import DatabaseNotUTF8, upgrade_db
from app.core.settings import Settings
from app.main import create_app
from tests.conftest import REPO_ROOT, ServerProcess, _testclient, sqlite_url, this_checkout

UNSAFE = ("PATCH", "PUT", "DELETE", "POST")


@pytest.fixture(scope="module")
def client(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """The app without its lifespan: a 405 is answered before any handler or database."""
    url = sqlite_url(tmp_path_factory.mktemp("allow") / "unused.db")
    return _testclient()(create_app(Settings(database_url=url, workers=0)), base_url="http://127.0.0.1")


def test_a_405_allows_every_method_of_the_path(client: Any) -> None:
    r = client.put("/api/runs/abc")  # GET and DELETE are two routes
    assert r.status_code == 405
    assert r.headers["allow"] == "DELETE, GET"
    assert set(r.json()) == {"detail"}


def test_every_api_path_allows_what_its_schema_lists(client: Any) -> None:
    paths = client.app.openapi()["paths"]
    templates = {t: {m.upper() for m in ops} for t, ops in paths.items()}
    for template in templates:
        path = re.sub(r"\{[^}]+\}", "x1", template)
        # What the schema lists for the path as OpenAPI matches it: a concrete template before a
        # templated one (`/api/platforms/import` is not `/api/platforms/{name}`), so the matching
        # templates with the fewest parameters.
        matching = [t for t in templates if compile_path(t)[0].fullmatch(path)]
        fewest = min(t.count("{") for t in matching)
        expected = {m for t in matching if t.count("{") == fewest for m in templates[t]}
        method = next(m for m in UNSAFE if m not in expected)
        r = client.request(method, path)
        assert r.status_code == 405, (method, path, r.text)
        assert r.headers["allow"] == ", ".join(sorted(expected)), (method, path)


def _database(admin_url: str, encoding: str) -> str:
    url = make_url(admin_url)
    name = "idlelab_" + uuid.uuid4().hex[:12]
    with psycopg.connect(url.set(drivername="postgresql").render_as_string(hide_password=False)) as conn:
        conn.autocommit = True
        conn.execute(f"CREATE DATABASE \"{name}\" ENCODING '{encoding}' TEMPLATE template0")
    return url.set(database=name).render_as_string(hide_password=False)


def _tables(url: str) -> list[str]:
    """The database's tables, read with the driver alone (SQLAlchemy cannot connect to SQL_ASCII)."""
    dsn = make_url(url).set(drivername="postgresql").render_as_string(hide_password=False)
    with psycopg.connect(dsn) as conn:
        rows = conn.execute("SELECT tablename FROM pg_tables WHERE schemaname = 'public'").fetchall()
    return [bytes(r[0]).decode() if isinstance(r[0], bytes | memoryview) else r[0] for r in rows]


FIX = "ENCODING 'UTF8' TEMPLATE template0"


def test_a_database_not_in_utf8_is_refused_at_start(postgres_server: str, tmp_path: Path) -> None:
    url = _database(postgres_server, "SQL_ASCII")
    with pytest.raises(DatabaseNotUTF8, match=f"encoded SQL_ASCII.*CREATE DATABASE .*{FIX}"):
        upgrade_db(url)

    env = this_checkout({**os.environ, "IDLELAB_DATABASE_URL": url})
    cli = subprocess.run(
        [sys.executable, "-m", "app.cli", "db", "upgrade"],
        cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert cli.returncode != 0 and FIX in cli.stderr + cli.stdout
    assert "Traceback" not in cli.stderr

    with pytest.raises(RuntimeError, match=FIX):  # the server exits at start, saying why
        ServerProcess(url, tmp_path / "server.log", workers=0).start()
    assert _tables(url) == []  # nothing was written to it


def test_a_utf8_database_is_accepted(postgres_server: str) -> None:
    url = _database(postgres_server, "UTF8")
    upgrade_db(url)
    assert "runs" in _tables(url)
