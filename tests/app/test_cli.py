"""The `idlelab` command: errors are one line and a non-zero exit; run, save, platforms, db upgrade."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import REPO_ROOT, free_port, sqlite_url, this_checkout


def idlelab(
    *args: str, cwd: Path, db: Path | None = None, stdin: str | None = None, **env_vars: str
) -> subprocess.CompletedProcess[str]:
    env = this_checkout({**os.environ, "IDLELAB_DATABASE_URL": sqlite_url(db or cwd / "cli.db"), **env_vars})
    return subprocess.run(
        [sys.executable, "-m", "app.cli", *args],
        cwd=cwd,
        env=env,
        input=stdin,
        capture_output=True,
        text=True,
        timeout=600,
    )


@pytest.mark.parametrize(
    ("args", "files", "needle"),
    [
        (["run", "bad.json"], {"bad.json": "{not json"}, "invalid JSON"),
        (["run", "missing.json"], {}, "cannot read missing.json"),
        (["run", "list.json"], {"list.json": "[1, 2]"}, "JSON object"),
        (["run", "--platform", "nope"], {}, "platform: unknown platform 'nope'"),
        (["run", "cfg.json"], {"cfg.json": '{"duration_ms": -5}'}, "duration_ms"),
        (
            ["run", "cfg.json"],
            {"cfg.json": '{"states": {"disabled": ["POLL", "C1", "C1E", "C6"]}}'},
            "states.disabled",
        ),
        (["run", "--duration-ms", "soon"], {}, "--duration-ms"),
        (["run", "--governor", "schedutil"], {}, "governor.name"),
        (["frobnicate"], {}, "invalid choice"),
    ],
)
def test_errors_are_one_line(tmp_path: Path, args: list[str], files: dict[str, str], needle: str) -> None:
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    proc = idlelab(*args, cwd=tmp_path)
    assert proc.returncode != 0
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert needle in lines[0]
    assert "Traceback" not in proc.stderr


def test_run_prints_a_summary_writes_json_and_saves(tmp_path: Path) -> None:
    topology = {"sockets": 1, "cores_per_socket": 4, "threads_per_core": 1}
    (tmp_path / "cfg.json").write_text(json.dumps({"topology": topology}))
    proc = idlelab(
        "run",
        "cfg.json",
        "--duration-ms",
        "20",
        "--seed",
        "5",
        "--json",
        "out.json",
        "--save",
        "--title",
        "from cli",
        cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stderr
    assert "busy share" in proc.stdout
    assert "/runs/" in proc.stdout
    result = json.loads((tmp_path / "out.json").read_text())
    assert result["cpus"] == 4 and result["duration_ns"] == 20_000_000

    # The saved run is in the database the server would use.
    from app.core.database import make_db_engine, make_sessionmaker, session_scope
    from app.runs.service import list_runs_view

    db_engine = make_db_engine(sqlite_url(tmp_path / "cli.db"))
    try:
        with session_scope(make_sessionmaker(db_engine)) as session:
            runs = list_runs_view(session, q="from cli").runs
    finally:
        db_engine.dispose()
    assert len(runs) == 1 and runs[0]["status"] == "done" and runs[0]["cpus"] == 4


def test_platforms_lists_the_tables(tmp_path: Path) -> None:
    proc = idlelab("platforms", cwd=tmp_path)
    assert proc.returncode == 0
    assert {"skx", "icx", "wsm"} <= {line.split()[0] for line in proc.stdout.splitlines() if line[:1].strip()}


def test_db_upgrade_works_from_any_directory(tmp_path: Path) -> None:
    elsewhere = tmp_path / "somewhere" / "else"
    elsewhere.mkdir(parents=True)
    db = tmp_path / "up.db"
    proc = idlelab("db", "upgrade", cwd=elsewhere, db=db)
    assert proc.returncode == 0, proc.stderr
    assert db.exists()
    assert not (elsewhere / "migrations").exists() and (REPO_ROOT / "migrations").is_dir()
    proc = idlelab("db", "downgrade", "base", cwd=elsewhere, db=db)
    assert proc.returncode == 0, proc.stderr


def test_saved_link_is_the_server_holding_the_run_or_says_it_is_a_guess(
    tmp_path: Path, server_factory: Any
) -> None:
    small = ["--duration-ms", "5", "--sockets", "1", "--cores-per-socket", "2", "-q", "--save"]
    nobody = f"http://127.0.0.1:{free_port()}"
    proc = idlelab("run", *small, cwd=tmp_path, db=tmp_path / "idlelab.db", IDLELAB_PUBLIC_URL=nobody)
    assert proc.returncode == 0, proc.stderr
    assert f"saved: {nobody}/runs/" in proc.stdout
    assert "the link is a guess (no server answers there)" in proc.stderr
    assert "IDLELAB_PUBLIC_URL" in proc.stderr

    server = server_factory().start()
    on_its_database = {"IDLELAB_DATABASE_URL": server.database_url, "IDLELAB_PUBLIC_URL": server.url}
    proc = idlelab("run", *small, cwd=tmp_path, **on_its_database)
    assert proc.returncode == 0, proc.stderr
    assert f"saved: {server.url}/runs/" in proc.stdout
    assert "guess" not in proc.stderr


def test_a_cold_engine_says_it_compiles(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import engine.jit
    from app import cli

    monkeypatch.setattr(engine.jit, "cache_is_warm", lambda: False)
    cli.warm()
    assert "compiling the engine, first run after install (~20 s)" in capsys.readouterr().err
    monkeypatch.setattr(engine.jit, "cache_is_warm", lambda: True)
    cli.warm()
    assert capsys.readouterr().err == ""
