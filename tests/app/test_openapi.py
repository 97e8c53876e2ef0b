"""The generated OpenAPI document is the real one, untouched after FastAPI builds it: every `$ref`
in it resolves (a hand-patched schema once left `#/$defs/...` references behind)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any


def _refs(node: Any) -> Iterator[str]:
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "$ref" and isinstance(value, str):
                yield value
            else:
                yield from _refs(value)
    elif isinstance(node, list):
        for item in node:
            yield from _refs(item)


def _resolve(schema: dict[str, Any], ref: str) -> Any:
    assert ref.startswith("#/"), ref
    node: Any = schema
    for part in ref[2:].split("/"):
        part = part.replace("~1", "/").replace("~0", "~")
        assert isinstance(node, dict) and part in node, f"{ref} does not resolve"
        node = node[part]
    return node


def test_every_ref_of_the_openapi_document_resolves(app_client: Any) -> None:
    schema = app_client.get("/openapi.json").json()
    refs = set(_refs(schema))
    assert "#/components/schemas/SimConfig" in refs and "#/components/schemas/SweepCreate" in refs
    for ref in sorted(refs):
        assert isinstance(_resolve(schema, ref), dict), ref


def test_json_bodies_are_the_models_fastapi_validates(app_client: Any) -> None:
    paths = app_client.get("/openapi.json").json()["paths"]
    for path, model in (
        ("/api/runs", "RunCreate"),
        ("/api/sweeps", "SweepCreate"),
        ("/api/platforms", "PlatformCreate"),
    ):
        body = paths[path]["post"]["requestBody"]["content"]["application/json"]["schema"]
        assert body["$ref"] == f"#/components/schemas/{model}", path
    dump = paths["/api/platforms/import"]["post"]["requestBody"]["content"]
    assert set(dump) == {"text/plain"}
