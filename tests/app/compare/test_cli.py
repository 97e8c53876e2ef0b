"""`idlelab compare` on the configured database: the robot's table, Markdown and JSON, and one-line
errors; runs saved with `idlelab run --save` (one repeat each, read from their results)."""

from __future__ import annotations

import json
import re
from pathlib import Path

from tests.app.test_cli import idlelab


def saved(tmp_path: Path, *flags: str) -> str:
    done = idlelab(
        "run",
        "--save",
        "-q",
        "--duration-ms",
        "10",
        "--sockets",
        "1",
        "--cores-per-socket",
        "4",
        *flags,
        cwd=tmp_path,
    )  # noqa: E501
    assert done.returncode == 0, done.stderr
    (run_id,) = re.findall(r"/runs/([\w-]+)", done.stdout + done.stderr)[:1]
    return run_id


def test_compare_prints_the_robot_table_markdown_and_json(tmp_path: Path) -> None:
    idlelab("db", "upgrade", cwd=tmp_path)
    a = saved(tmp_path, "--seed", "3")
    b = saved(tmp_path, "--seed", "3", "--governor", "teo")
    text = idlelab("compare", a, b, "--format", "text", "--all", cwd=tmp_path)
    assert text.returncode == 0, text.stderr
    lines = text.stdout.splitlines()
    assert lines[0] == "=" * 89 and f"  {a}" in lines and f"  {b}" in lines
    assert any(line.endswith("  energy.joules") for line in lines)
    assert "0 of" in text.stdout, "single runs: no verdicts"
    markdown = idlelab("compare", a, b, "--format", "markdown", cwd=tmp_path)
    # Ids are URL-safe base64: Markdown shows their `_` escaped.
    escaped = [i.replace("_", "\\_") for i in (b, a)]
    assert markdown.stdout.startswith(f"### {escaped[0]} against {escaped[1]}")
    data = json.loads(idlelab("compare", a, b, "--format", "json", cwd=tmp_path).stdout)
    assert [r["id"] for r in data["runs"]] == [a, b]
    assert data["warnings"] == [], "two governors at one kernel release are the comparison itself"


def test_compare_errors_are_one_line(tmp_path: Path) -> None:
    idlelab("db", "upgrade", cwd=tmp_path)
    a = saved(tmp_path)
    missing = idlelab("compare", a, "AAAAAAAAAAA", cwd=tmp_path)
    assert missing.returncode == 1 and missing.stderr == "idlelab: error: run 'AAAAAAAAAAA' not found\n"
    alone = idlelab("compare", a, cwd=tmp_path)
    assert alone.returncode == 1 and "give 2 to 8 different run ids" in alone.stderr
    assert "Traceback" not in missing.stderr + alone.stderr
