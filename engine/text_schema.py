"""What a model's JSON Schema says of its text: no string holds U+0000 (PostgreSQL's text cannot
store it and SQLite's LIKE stops at it; the API refuses it in every field, naming the field).

`no_nul_strings` is a pydantic `json_schema_extra` hook: a model that sets it states the rule as a
`pattern` on each of its own string fields (and `propertyNames` on its maps); enums, constants
and fields with a pattern of their own already exclude U+0000.
"""

from __future__ import annotations

from typing import Any

NO_NUL_PATTERN = "^[^\\x00]*$"
_OWN_RULE = ("enum", "const", "pattern", "format", "contentMediaType")


def _mark(node: Any) -> None:
    if not isinstance(node, dict):
        return
    if node.get("type") == "string" and not any(k in node for k in _OWN_RULE):
        node["pattern"] = NO_NUL_PATTERN
    if node.get("type") == "object" and "additionalProperties" in node:
        node.setdefault("propertyNames", {"pattern": NO_NUL_PATTERN})
        _mark(node["additionalProperties"])
    for key in ("anyOf", "oneOf", "allOf"):
        for sub in node.get(key, []):
            _mark(sub)
    _mark(node.get("items"))


def no_nul_strings(schema: dict[str, Any], model: type | None = None) -> None:
    for prop in schema.get("properties", {}).values():
        _mark(prop)
