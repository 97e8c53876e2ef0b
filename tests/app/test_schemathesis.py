"""The API against its own OpenAPI document, in process on SQLite: schemathesis generates requests
for every operation (a bounded number each) and checks that none answers a server error, that
every answer conforms to its documented schema, content type and status codes."""

from __future__ import annotations

import shutil
import tempfile
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import schemathesis
from hypothesis import HealthCheck, settings
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from app.core.settings import Settings
from app.main import create_app
from tests.conftest import sqlite_url

# Examples per operation: enough to reach the documented statuses of most routes, few enough for
# a test run of a minute or two on SQLite.
EXAMPLES = 8
CHECKS = [not_a_server_error, status_code_conformance, content_type_conformance, response_schema_conformance]
BASE_URL = "http://127.0.0.1"  # a loopback server answers loopback Host names only

# The app is built at import (nothing touches the database before its lifespan, which the
# fixture runs): schemathesis generates its tests from the document when the module is collected.
# No workers: runs stay queued; no waiting: `?wait=true` answers at once.
_DIRECTORY = Path(tempfile.mkdtemp(prefix="idlelab-schemathesis-"))
APP = create_app(Settings(database_url=sqlite_url(_DIRECTORY / "idlelab.db"), workers=0, wait_timeout_s=0))
schema = schemathesis.openapi.from_dict(APP.openapi())
schema.app = APP
# A measurement's archive is sent as its bytes, as any binary body.
schemathesis.serializer.alias("application/zip", "application/octet-stream")


@pytest.fixture(scope="module", autouse=True)
def _running_app() -> Iterator[None]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from fastapi.testclient import TestClient
    try:
        with TestClient(APP, base_url=BASE_URL):  # the lifespan: migrations, the runner
            yield
    finally:
        shutil.rmtree(_DIRECTORY, ignore_errors=True)


@schema.parametrize()
@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))
def test_the_api_keeps_its_openapi_contract(case: Any) -> None:
    case.call_and_validate(base_url=BASE_URL, checks=CHECKS)
