"""Fixtures shared by every test area.

`live_server` starts the real server (`python -m app.cli serve`) on a free port with a temporary
SQLite file, waits until it answers, yields its base URL, and stops it (session-scoped: the
browser tests reuse it). `ServerProcess` does the same for tests that need their own server
(restart recovery). `app_client` is an in-process TestClient on a migrated temporary database.

Storage, API and job tests run against SQLite and PostgreSQL (`db_url`, `app_client` and
`server_factory` are parametrized): the server `IDLELAB_TEST_POSTGRES_URL` names, else a throwaway
one started here from Debian's binaries (`tests/postgres.py`); skipped only without them.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests import postgres

REPO_ROOT = Path(__file__).resolve().parent.parent
START_TIMEOUT_S = 120.0  # a cold numba cache compiles the engine in the workers; the server answers sooner


def this_checkout(env: dict[str, str]) -> dict[str, str]:
    """`env` for a child process that must run this checkout's `app` and `engine`, whatever its
    working directory (the editable install may point at another checkout)."""
    return {**env, "PYTHONPATH": os.pathsep.join(filter(None, (str(REPO_ROOT), env.get("PYTHONPATH"))))}


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def sqlite_url(path: Path) -> str:
    return f"sqlite:///{path}"


class ServerProcess:
    """`python -m app.cli serve` in its own process group, logging to a file."""

    def __init__(
        self, database_url: str, log_path: Path, *, workers: int = 1, env: dict[str, str] | None = None
    ) -> None:
        self.database_url = database_url
        self.log_path = log_path
        self.workers = workers
        self.extra_env = env or {}
        self.port = 0
        self.proc: subprocess.Popen[bytes] | None = None
        self._log: Any = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> ServerProcess:
        self.port = free_port()
        env = {
            **os.environ,
            "IDLELAB_DATABASE_URL": self.database_url,
            "IDLELAB_WORKERS": str(self.workers),
            "IDLELAB_LOG_LEVEL": "warning",
            **self.extra_env,
        }
        self._log = open(self.log_path, "ab")  # noqa: SIM115 - closed in stop()
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "app.cli", "serve", "--host", "127.0.0.1", "--port", str(self.port)],
            cwd=self.log_path.parent,
            env=this_checkout(env),
            stdin=subprocess.DEVNULL,
            stdout=self._log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        deadline = time.monotonic() + START_TIMEOUT_S
        with httpx.Client(timeout=2.0) as client:
            while True:
                if self.proc.poll() is not None:
                    self.stop()
                    raise RuntimeError(f"server exited at start:\n{self.log_path.read_text()}")
                try:
                    if client.get(f"{self.url}/api/platforms").status_code == 200:
                        return self
                except httpx.TransportError:
                    pass
                if time.monotonic() > deadline:
                    self.stop()
                    raise RuntimeError(f"server did not answer:\n{self.log_path.read_text()}")
                time.sleep(0.1)

    def kill(self) -> None:
        """SIGKILL the whole process group (server and workers): a crash, not a shutdown."""
        if self.proc is not None and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()
        self._close()

    def stop(self) -> None:
        """Graceful stop (SIGTERM, as a service manager would), then SIGKILL if it hangs."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()
        if self.proc is not None:
            try:  # workers left behind by a crash
                os.killpg(self.proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        self._close()

    def _close(self) -> None:
        if self._log is not None:
            self._log.close()
            self._log = None


@pytest.fixture(scope="session")
def live_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """Base URL of a real server on a temporary SQLite file (one per test session)."""
    workdir = tmp_path_factory.mktemp("live_server")
    server = ServerProcess(sqlite_url(workdir / "idlelab.db"), workdir / "server.log").start()
    try:
        yield server.url
    finally:
        server.stop()


DATABASES = ("sqlite", "postgresql")


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[str]:
    """Admin URL of the PostgreSQL server the tests create their databases on."""
    url = os.environ.get(postgres.URL_ENV)
    if url:
        yield url
        return
    if postgres.bindir() is None:
        pytest.skip(
            f"no PostgreSQL: neither {postgres.URL_ENV} nor /usr/lib/postgresql/*/bin "
            "(`.ci/run` installs Debian's postgresql)"
        )
    with postgres.throwaway_server() as url:
        yield url


def _database_url(request: pytest.FixtureRequest, directory: Path) -> str:
    if request.param == "sqlite":
        return sqlite_url(directory / "idlelab.db")
    return postgres.fresh_database(request.getfixturevalue("postgres_server"))


@pytest.fixture(params=DATABASES)
def db_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A fresh, empty database of each kind (not migrated)."""
    return _database_url(request, tmp_path)


@pytest.fixture
def server_factory(db_url: str, tmp_path: Path) -> Iterator[Any]:
    """Make (and always stop) servers of one test, sharing its temporary database (`db_url`)."""
    servers: list[ServerProcess] = []

    def make(**kwargs: Any) -> ServerProcess:
        server = ServerProcess(db_url, tmp_path / "server.log", **kwargs)
        servers.append(server)
        return server

    yield make
    for server in servers:
        server.stop()


def _testclient() -> Any:
    with warnings.catch_warnings():
        # starlette's TestClient warns at import that it prefers httpx2; httpx works.
        warnings.simplefilter("ignore")
        from fastapi.testclient import TestClient
    return TestClient


@pytest.fixture(scope="session")
def migrated_templates(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """Per database kind, a database migrated once, copied for every test that needs one."""
    return {}


def _migrated_copy(request: pytest.FixtureRequest, templates: dict[str, str], directory: Path) -> str:
    """A fresh database at the migrations' head: a copy of the session's migrated template."""
    from app.core.database import upgrade_db

    kind = request.param
    if kind not in templates:
        url = _database_url(request, request.getfixturevalue("tmp_path_factory").mktemp("template"))
        upgrade_db(url)
        templates[kind] = url
    if kind == "sqlite":
        target = directory / "idlelab.db"
        shutil.copyfile(sqlite_url_path(templates[kind]), target)
        return sqlite_url(target)
    return postgres.fresh_database(request.getfixturevalue("postgres_server"), template=templates[kind])


def sqlite_url_path(url: str) -> Path:
    return Path(url.removeprefix("sqlite:///"))


@pytest.fixture(params=DATABASES)
def app_client(
    request: pytest.FixtureRequest, migrated_templates: dict[str, str], tmp_path: Path
) -> Iterator[Any]:
    """In-process client (lifespan run: migrations applied) with no workers: runs stay queued. Each
    test has its own database, a copy of a migrated template."""
    from app.core.settings import Settings
    from app.main import create_app

    url = _migrated_copy(request, migrated_templates, tmp_path)
    app = create_app(Settings(database_url=url, workers=0))
    # A loopback base URL: a server bound to loopback answers only loopback Host names.
    with _testclient()(app, base_url="http://127.0.0.1") as client:
        yield client
