"""Settings from the environment (prefix `IDLELAB_`); built when asked for, never at import."""

from __future__ import annotations

import ipaddress
import os
import shlex
from pathlib import Path

import platformdirs
from pydantic import Field, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

# The app runs from its checkout: templates/, static/ and migrations/ sit at the top level.
REPO_ROOT = Path(__file__).resolve().parents[2]


# The database of versions before the per-user default: a file in the working directory.
LEGACY_DATABASE = "idlelab.db"


def user_database_path() -> Path:
    """The per-user database file (on Linux `$XDG_DATA_HOME/idlelab/idlelab.db`, by default
    `~/.local/share/idlelab/idlelab.db`): the server and every command find the same one, from
    whatever directory they run in."""
    return Path(platformdirs.user_data_dir("idlelab", appauthor=False)) / "idlelab.db"


def _sqlite_url(path: Path) -> str:
    return f"sqlite:///{path}"


def _default_database_url() -> str:
    """The per-user database; the working directory's old `idlelab.db` while the per-user one
    does not exist yet (`database_note` says how to move it)."""
    path = user_database_path()
    legacy = Path.cwd() / LEGACY_DATABASE
    if not path.exists() and legacy.is_file():
        return _sqlite_url(legacy)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)  # SQLite creates the file, not its folder
    except OSError:
        pass  # opening the database then fails naming this path, which says more than a traceback here
    return _sqlite_url(path)


def _default_workers() -> int:
    return max(1, (os.cpu_count() or 1) - 1)


class Settings(BaseSettings):
    """Every knob of the service. Each field `x` is read from `IDLELAB_X`."""

    model_config = SettingsConfigDict(env_prefix="IDLELAB_", extra="ignore")

    database_url: str = Field(
        default_factory=_default_database_url,
        description="Any SQLAlchemy URL; the default is the per-user SQLite file "
        "(`~/.local/share/idlelab/idlelab.db`, under $XDG_DATA_HOME when set), or ./idlelab.db while "
        "that one is absent and ./idlelab.db exists.",
    )
    workers: int = Field(
        default_factory=_default_workers,
        ge=0,
        le=256,
        description="Dask worker processes of the local cluster (0: runs stay queued; useful for tests).",
    )
    threads: int = Field(
        default=16,
        ge=1,
        le=1024,
        description="Threads for request handlers (anyio's limiter); the database pool is sized to them.",
    )
    dask_scheduler: str = Field(
        default="",
        max_length=300,
        description="A running Dask scheduler (tcp://HOST:PORT) to compute on instead of a local cluster.",
    )
    max_body_bytes: int = Field(default=256 * 1024, ge=1024, description="Largest request body (413 above).")
    import_max_body_bytes: int = Field(
        default=8 * 1024 * 1024,
        ge=1024,
        description="Largest body of a machine-dump or measurement import (a 512-CPU dump is ~1.5 MB).",
    )
    max_custom_platforms: int = Field(
        default=200,
        ge=0,
        le=100_000,
        description="Custom platforms the database may hold (tables, imports, calibrations); 409 beyond.",
    )
    client_queued_events: float = Field(
        default=2e9,
        ge=0,
        description="Expected events (the engine's estimate) one client may have queued or running; "
        "429 beyond.",
    )
    queued_events: float = Field(
        default=1e10, ge=0, description="Expected events the whole queue may hold; 503 beyond."
    )
    trusted_proxy: str = Field(
        default="",
        max_length=1000,
        description="Addresses or networks (comma-separated) of proxies whose X-Forwarded-For is believed: "
        "the client is then the first hop, from the right, that is not one of them.",
    )
    wait_timeout_s: float = Field(default=60.0, ge=0, le=3600, description="Longest `?wait=true` wait.")
    progress_step: float = Field(
        default=0.02, gt=0, le=1, description="Workers report progress every this fraction of a run."
    )
    reuse_results: bool = Field(
        default=True, description="Answer a run from a finished one with the same config hash and engine."
    )
    read_cache_bytes: int = Field(
        default=128 * 1024 * 1024,
        ge=0,
        description="Memory for finished runs' answers and pages, least recently used dropped (0: none).",
    )
    host: str = Field(default="127.0.0.1", description="`idlelab serve` default host.")
    port: int = Field(default=8000, ge=0, le=65535, description="`idlelab serve` default port.")
    public_url: str = Field(
        default="", description="Base URL for share links printed by the CLI (default http://HOST:PORT)."
    )
    log_level: str = Field(default="info", description="uvicorn log level.")
    access_log: bool = Field(
        default=True, description="uvicorn's access log, a line per request (IDLELAB_ACCESS_LOG=0: off)."
    )

    @field_validator("trusted_proxy")
    @classmethod
    def _networks(cls, value: str) -> str:
        for part in filter(None, (p.strip() for p in value.split(","))):
            ipaddress.ip_network(part, strict=False)  # ValueError names the bad one
        return value

    def base_url(self) -> str:
        if self.public_url:
            return self.public_url.rstrip("/")
        host = "127.0.0.1" if self.host in ("0.0.0.0", "::", "") else self.host
        return f"http://{host}:{self.port}"


def database_note(settings: Settings) -> str | None:
    """How to move the working directory's old `idlelab.db` to the per-user place, when the
    default fell back to it (None otherwise)."""
    legacy = Path.cwd() / LEGACY_DATABASE
    if "database_url" in settings.model_fields_set or settings.database_url != _sqlite_url(legacy):
        return None
    target = user_database_path()
    return (
        f"using {legacy}, the old default in the working directory; to make it the per-user database "
        f"every directory finds, stop the server and run: mkdir -p {shlex.quote(str(target.parent))} && "
        f"mv {shlex.quote(str(legacy))}* {shlex.quote(str(target.parent))}/"
    )


def get_settings() -> Settings:
    """Read the settings from the environment now (not cached: tests change the environment)."""
    return Settings()
