"""app/ is one-way layers: the import contracts of `pyproject.toml` hold, no module cycle hides
behind an import inside a function, and the worker side loads no web or database library."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")


def test_the_import_contracts_hold() -> None:
    proc = subprocess.run(
        [str(LINT_IMPORTS), "--no-cache"], cwd=REPO_ROOT, capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "0 broken" in proc.stdout


def _module_imports() -> dict[str, set[str]]:
    """Every app module and the app modules it imports, anywhere in its body (functions too)."""
    files = {}
    for path in (REPO_ROOT / "app").rglob("*.py"):
        parts = path.relative_to(REPO_ROOT).with_suffix("").parts
        files[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path

    def owner(name: str) -> str | None:
        while name and name not in files:
            name = name.rpartition(".")[0]
        return name or None

    edges: dict[str, set[str]] = {m: set() for m in files}
    for module, path in files.items():
        package = module if path.name == "__init__.py" else module.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text())):
            names: list[str] = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    up = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join(up + ([base] if base else []))
                names = [base, *(f"{base}.{a.name}" for a in node.names)]
            for name in names:
                target = owner(name) if name.split(".")[0] == "app" else None
                # A module's own package (`__init__`) is loaded first anyway: not an edge.
                if target and target != module and not module.startswith(target + "."):
                    edges[module].add(target)
    return edges


def test_no_import_cycle_counting_imports_inside_functions() -> None:
    edges = _module_imports()
    assert len(edges) > 40  # the walk found the app

    def reaches(start: str, goal: str) -> bool:
        seen, todo = set(), [start]
        while todo:
            m = todo.pop()
            if m == goal:
                return True
            if m not in seen:
                seen.add(m)
                todo.extend(edges[m])
        return False

    cycles = sorted((a, b) for a, targets in edges.items() for b in targets if reaches(b, a))
    assert cycles == []


def test_a_lazy_import_is_still_seen() -> None:
    """The walk above counts an import inside a function (the check would miss a hidden cycle otherwise)."""
    edges = _module_imports()
    assert "app.main" in edges["app.cli"]  # imported only inside `cmd_serve`


def test_the_worker_side_loads_no_web_or_database_library() -> None:
    code = (
        "import sys, app.jobs.worker\n"
        "bad = sorted(m for m in sys.modules if m.split('.')[0] in "
        "('fastapi', 'starlette', 'sqlalchemy') or m.startswith('app.core'))\n"
        "print(','.join(bad))"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO_ROOT, capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == ""


def test_app_and_jobs_packages_import_nothing() -> None:
    for init in ("app/__init__.py", "app/jobs/__init__.py"):
        tree = ast.parse((REPO_ROOT / init).read_text())
        assert not [n for n in ast.walk(tree) if isinstance(n, ast.Import | ast.ImportFrom)], init
