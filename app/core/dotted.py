"""Dotted paths into JSON-like data (`governor.name`, `wakeups.timers.0.period_us`) and into
pydantic models (a field's description and limits): written once for the form, sweeps and the CLI."""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping
from typing import Any, get_args

from pydantic import BaseModel
from pydantic.fields import FieldInfo

_MISSING = object()


def _step(node: Any, part: str) -> Any:
    if isinstance(node, Mapping):
        return node.get(part, _MISSING)
    if isinstance(node, list) and part.isdigit() and int(part) < len(node):
        return node[int(part)]
    return _MISSING


def get(data: Any, path: str, default: Any = None) -> Any:
    """The value at `path`, or `default` where the path leads nowhere."""
    for part in path.split("."):
        data = _step(data, part)
        if data is _MISSING:
            return default
    return data


def has(data: Any, path: str) -> bool:
    return get(data, path, _MISSING) is not _MISSING


def put(data: Any, path: str, value: Any, *, fill: Callable[[str], Any] | None = None) -> None:
    """Set `path` to `value`; a missing level is `fill(path so far)` (default: an empty object)."""
    parts = path.split(".")
    node = data
    for i, part in enumerate(parts[:-1]):
        key: Any = int(part) if isinstance(node, list) else part
        if isinstance(node, dict) and not isinstance(node.get(part), dict | list):
            node[part] = fill(".".join(parts[: i + 1])) if fill else {}
        node = node[key]
    node[int(parts[-1]) if isinstance(node, list) else parts[-1]] = value


def from_full(full: Any) -> Callable[[str], Any]:
    """A `put` filler copying each missing level from `full` (a sweep's complete base config)."""
    return lambda prefix: copy.deepcopy(get(full, prefix))


def field(model: type[BaseModel], path: str) -> FieldInfo | None:
    """The pydantic field at `path` of `model`, through nested models (None if there is none)."""
    info = None
    node: Any = model
    for part in path.split("."):
        info = getattr(node, "model_fields", {}).get(part)
        if info is None:
            return None
        node = next(
            (a for a in (info.annotation, *get_args(info.annotation)) if hasattr(a, "model_fields")), None
        )
    return info
