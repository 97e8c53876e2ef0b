"""engine/ imports only the standard library, numpy, numba and pydantic (STYLE.md 1)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import engine

REPO = Path(engine.__file__).resolve().parent.parent
FORBIDDEN = ("fastapi", "sqlalchemy", "jinja2", "plotly", "starlette", "app", "alembic", "uvicorn", "httpx")


def _modules_after(code: str) -> set[str]:
    script = f"{code}\nimport json, sys\nprint(json.dumps(sorted(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=REPO, check=True)
    return set(json.loads(out.stdout.strip().splitlines()[-1]))


def _offenders(modules: set[str]) -> list[str]:
    return sorted(m for m in modules if m.split(".")[0] in FORBIDDEN)


def test_import_engine_pulls_in_no_web_or_storage_code() -> None:
    modules = _modules_after("import engine")
    assert "engine" in modules
    assert _offenders(modules) == []


def test_every_engine_module_is_pure() -> None:
    # Import every module of the package (not only what __init__ pulls in), then check again.
    root = Path(engine.__file__).parent
    names = sorted(".".join(p.relative_to(root).with_suffix("").parts) for p in root.rglob("*.py"))
    names = [n.removesuffix(".__init__") for n in names if n != "__init__"]
    wanted = {"config", "kernel", "kernel.loop", "platforms", "result", "simulate", "scenarios.framework"}
    assert wanted <= set(names)
    modules = _modules_after("\n".join(f"import engine.{n}" for n in names))
    assert _offenders(modules) == []
