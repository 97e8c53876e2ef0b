"""A throwaway PostgreSQL server for the tests: Debian's binaries, `initdb` and `pg_ctl` as the
`postgres` user when run as root (PostgreSQL refuses root), a fresh data directory it owns, the
socket in that directory, a free port on 127.0.0.1; stopped and removed afterwards."""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

URL_ENV = "IDLELAB_TEST_POSTGRES_URL"


def bindir() -> Path | None:
    """The newest installed PostgreSQL's binaries, or None."""
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"), key=lambda p: int(p.split("/")[4]))
    return Path(found[-1]).parent if found else None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def throwaway_server() -> Iterator[str]:
    """Start a server; yields its admin URL (`postgresql+psycopg://...`)."""
    bin_dir = bindir()
    assert bin_dir is not None
    as_root = os.geteuid() == 0
    workdir = Path(tempfile.mkdtemp(prefix="idlelab-pg-"))
    prefix: list[str] = []
    if as_root:
        user = pwd.getpwnam("postgres")
        os.chown(workdir, user.pw_uid, user.pw_gid)
        prefix = ["runuser", "-u", "postgres", "--"]
    data, port = workdir / "data", _free_port()

    def run(*args: str) -> None:
        subprocess.run([*prefix, *args], check=True, capture_output=True, timeout=120)

    try:
        run(
            str(bin_dir / "initdb"),
            "-D",
            str(data),
            "--no-locale",
            "-E",
            "UTF8",
            "-U",
            "postgres",
            "-A",
            "trust",
        )
        options = f"-k {workdir} -p {port} -c listen_addresses=127.0.0.1 -c fsync=off"
        run(
            str(bin_dir / "pg_ctl"), "-D", str(data), "-l", str(workdir / "log"), "-o", options, "-w", "start"
        )
        try:
            yield f"postgresql+psycopg://postgres@127.0.0.1:{port}/postgres"
        finally:
            run(str(bin_dir / "pg_ctl"), "-D", str(data), "-m", "immediate", "-w", "stop")
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def fresh_database(admin_url: str, template: str | None = None) -> str:
    """A new database on the server `admin_url` names (empty, or a copy of the database `template`
    names); returns its URL."""
    import psycopg
    from sqlalchemy.engine import make_url

    url = make_url(admin_url)
    name = "idlelab_" + uuid.uuid4().hex[:12]
    dsn = url.set(drivername="postgresql").render_as_string(hide_password=False)
    with psycopg.connect(dsn, autocommit=True) as conn:
        copy = f' TEMPLATE "{make_url(template).database}"' if template else ""
        conn.execute(f'CREATE DATABASE "{name}"{copy}')
    return url.set(database=name).render_as_string(hide_password=False)
