"""The compiled-code cache is keyed on every compiled module, not only the function's own file."""

from __future__ import annotations

from pathlib import Path

import engine
from engine import jit

ENGINE = Path(engine.__file__).resolve().parent


def test_every_module_with_compiled_functions_is_in_the_cache_key() -> None:
    uses = {p.relative_to(ENGINE).as_posix() for p in ENGINE.rglob("*.py") if "@compiled(" in p.read_text()}
    assert {"kernel/loop.py", "governors/menu.py"} <= uses
    assert uses <= set(jit.COMPILED_MODULES)


def test_cache_is_warm_finds_the_event_loop() -> None:
    # The session fixture ran a simulation: the event loop is compiled and in the cache folder.
    assert jit.cache_is_warm()

