"""Where the database is: one per user (`$XDG_DATA_HOME/idlelab/idlelab.db`) for the server and every
command, whatever directory they run in; the working directory's old `idlelab.db` still found while
the per-user one is absent, with a note on how to move it; writing commands name the database.
Every test has its own HOME and XDG_DATA_HOME, and no IDLELAB_DATABASE_URL."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from tests.app.platforms.machines import SKX, machine_files, skx_layout
from tests.app.platforms.test_collect import make_tree
from tests.conftest import START_TIMEOUT_S, free_port, this_checkout


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fresh HOME and XDG_DATA_HOME, no configured database, and an empty working directory."""
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    monkeypatch.delenv("IDLELAB_DATABASE_URL", raising=False)
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    return tmp_path


def user_db(home: Path) -> Path:
    return home / "data" / "idlelab" / "idlelab.db"


def test_the_default_is_the_per_user_file(home: Path) -> None:
    from app.core.settings import database_note, get_settings

    settings = get_settings()
    assert settings.database_url == f"sqlite:///{user_db(home)}"
    assert user_db(home).parent.is_dir()  # SQLite would not create the folder
    assert database_note(settings) is None


def test_an_old_idlelab_db_here_is_used_with_a_note_until_the_per_user_one_exists(home: Path) -> None:
    from app.core.settings import database_note, get_settings

    old = home / "work" / "idlelab.db"
    old.write_bytes(b"")
    settings = get_settings()
    assert settings.database_url == f"sqlite:///{old}"
    note = database_note(settings)
    assert note is not None and str(old) in note
    # The note's command, run as it says, moves the file where the default looks first.
    command = note.split("run: ", 1)[1]
    subprocess.run(["sh", "-c", command], check=True)
    assert user_db(home).is_file() and not old.exists()
    moved = get_settings()
    assert moved.database_url == f"sqlite:///{user_db(home)}"
    assert database_note(moved) is None


def test_the_per_user_file_wins_over_an_old_one_and_a_setting_over_both(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from app.core.settings import database_note, get_settings

    user_db(home).parent.mkdir(parents=True)
    user_db(home).write_bytes(b"")
    (home / "work" / "idlelab.db").write_bytes(b"")
    assert get_settings().database_url == f"sqlite:///{user_db(home)}"
    monkeypatch.setenv("IDLELAB_DATABASE_URL", "sqlite:///./idlelab.db")
    explicit = get_settings()
    assert explicit.database_url == "sqlite:///./idlelab.db"
    assert database_note(explicit) is None  # chosen, not fallen back to


def test_access_log_setting(monkeypatch: pytest.MonkeyPatch) -> None:
    from app.core.settings import get_settings

    assert get_settings().access_log is True
    monkeypatch.setenv("IDLELAB_ACCESS_LOG", "0")
    assert get_settings().access_log is False


def cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "app.cli", *args],
        cwd=cwd,
        env=this_checkout(dict(os.environ)),
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_commands_and_the_server_share_one_database_from_any_directory(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`db upgrade` in one directory, `platforms import` in another (it names the database), and a
    server started in a third shows the imported platform at the link the import printed, with
    uvicorn's access log on."""
    port = free_port()
    monkeypatch.setenv("IDLELAB_PORT", str(port))  # the server's, and the links the commands print
    a, b, c = (home / name for name in ("a", "b", "c"))
    for d in (a, b, c):
        d.mkdir()
    upgraded = cli("db", "upgrade", cwd=a)
    assert upgraded.returncode == 0, upgraded.stderr
    assert f"database sqlite:///{user_db(home)}: at head" in upgraded.stdout
    make_tree(b / "machine", machine_files(SKX, 8, layout=skx_layout))
    assert cli("collect", "--root", str(b / "machine"), "-o", "m.txt", cwd=b).returncode == 0
    imported = cli("platforms", "import", "m.txt", "--name", "eight", cwd=b)
    assert imported.returncode == 0, imported.stderr
    assert f"idlelab: database sqlite:///{user_db(home)}" in imported.stderr
    assert not list(home.glob("[abc]/idlelab.db"))  # no database left in a working directory
    link = re.search(r"page: (\S+)", imported.stdout)
    assert link is not None, imported.stdout
    env = this_checkout({**os.environ, "IDLELAB_WORKERS": "0"})
    log = (c / "server.log").open("wb")
    server = subprocess.Popen(
        [sys.executable, "-m", "app.cli", "serve"], cwd=c, env=env, stdout=log, stderr=subprocess.STDOUT
    )
    try:
        page = wait_for(link.group(1), server)
        assert page.status_code == 200 and "eight" in page.text
    finally:
        server.terminate()
        server.wait(30)
        log.close()
    text = (c / "server.log").read_text()
    assert f"database sqlite:///{user_db(home)}" in text
    assert re.search(r'"GET /platforms/eight HTTP/1\.1" 200', text), text


def wait_for(url: str, server: subprocess.Popen[bytes]) -> httpx.Response:
    deadline = time.monotonic() + START_TIMEOUT_S
    while True:
        assert server.poll() is None, "the server exited"
        try:
            return httpx.get(url, timeout=2.0)
        except httpx.TransportError:
            assert time.monotonic() < deadline, f"no answer from {url}"
            time.sleep(0.2)


def test_the_note_quotes_paths_with_spaces(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from app.core.settings import database_note, get_settings

    work = tmp_path / "my work"
    work.mkdir()
    monkeypatch.chdir(work)
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data dir"))
    monkeypatch.delenv("IDLELAB_DATABASE_URL", raising=False)
    (work / "idlelab.db").write_bytes(b"")
    note = database_note(get_settings())
    assert note is not None and shlex.quote(str(work / "idlelab.db")) in note
