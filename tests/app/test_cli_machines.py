"""`idlelab collect`, `idlelab platforms import` and `idlelab import`: files in, the configured
database written directly (as `idlelab run --save` does), one-line errors and nothing stored."""

from __future__ import annotations

from pathlib import Path

from sqlalchemy import func, select

from app.core.database import make_db_engine
from app.core.models import CustomPlatform, Measurement
from tests.app.measurements.test_turbostat import OUTPUT as TURBOSTAT
from tests.app.measurements.test_wult import INFO, ROWS, csv
from tests.app.platforms.machines import SKX, machine_files, skx96, skx_layout
from tests.app.platforms.test_collect import make_tree
from tests.app.test_cli import idlelab
from tests.conftest import sqlite_url


def count(db: Path, table: type) -> int:
    engine = make_db_engine(sqlite_url(db))
    try:
        with engine.connect() as conn:
            return int(conn.execute(select(func.count()).select_from(table)).scalar() or 0)
    finally:
        engine.dispose()


def test_collect_then_platforms_import(tmp_path: Path) -> None:
    root = tmp_path / "machine"
    make_tree(root, machine_files(SKX, 8, layout=skx_layout))
    out = idlelab("collect", "--root", str(root), "-o", "m.txt", cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert "idlelab platforms import m.txt" in out.stdout
    assert "/sys/devices/system/cpu/cpu0/cpuidle/state3/name:C6" in (tmp_path / "m.txt").read_text()
    imported = idlelab("platforms", "import", "m.txt", "--name", "eight", cwd=tmp_path)
    assert imported.returncode == 0, imported.stderr
    assert "imported eight: the table is skx" in imported.stdout
    assert "based_on: skx; variant: none; driver: intel_idle; governor: menu" in imported.stdout
    assert count(tmp_path / "cli.db", CustomPlatform) == 1
    listed = idlelab("platforms", "--custom", cwd=tmp_path)
    assert "eight" in listed.stdout


def test_platforms_import_refuses_a_bad_dump_in_one_line(tmp_path: Path) -> None:
    (tmp_path / "bad.txt").write_text(skx96().replace("/proc/uptime:", "/proc/up", 1))
    out = idlelab("platforms", "import", "bad.txt", cwd=tmp_path)
    assert out.returncode == 1
    assert out.stderr == "idlelab: error: bad.txt: line 8: truncated or foreign line: no ':' after a path\n"
    assert count(tmp_path / "cli.db", CustomPlatform) == 0


def test_import_a_wult_result_and_a_turbostat_output(tmp_path: Path) -> None:
    (tmp_path / "datapoints.csv").write_bytes(csv(*ROWS))
    (tmp_path / "info.yml").write_text(INFO)
    (tmp_path / "ts.txt").write_text(TURBOSTAT)
    wult = idlelab("import", "datapoints.csv", "info.yml", "--title", "clx", cwd=tmp_path)
    assert wult.returncode == 0, wult.stderr
    assert "imported wult measurement" in wult.stdout and "/measurements/" in wult.stdout
    ts = idlelab("import", "ts.txt", cwd=tmp_path)
    assert ts.returncode == 0 and "imported turbostat measurement" in ts.stdout
    assert count(tmp_path / "cli.db", Measurement) == 2
    bad = idlelab("import", "datapoints.csv", cwd=tmp_path)
    assert bad.returncode == 1
    assert "info.yml: missing info.yml" in bad.stderr and bad.stderr.count("\n") == 1
    assert count(tmp_path / "cli.db", Measurement) == 2
