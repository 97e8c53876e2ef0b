"""The compiled-code cache is keyed on every compiled module, not only the function's own file."""

from __future__ import annotations

from pathlib import Path

import engine
from engine import jit

ENGINE = Path(engine.__file__).resolve().parent


def test_every_module_with_compiled_functions_is_in_the_cache_key() -> None:
    uses = {p.name for p in ENGINE.glob("*.py") if "@compiled(" in p.read_text()}
    assert uses <= set(jit.COMPILED_MODULES)

