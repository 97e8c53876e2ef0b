"""The API against its own OpenAPI document, in process, on SQLite and on PostgreSQL: schemathesis
generates requests for every operation (a bounded number each, valid and invalid, derandomized)
and runs every check it has (`--checks all`): no server error; every answer conforms to its
documented schema, content type, headers and status codes; a 405's `Allow` lists the path's
methods; invalid requests are refused; and a request the schema calls valid is accepted, except
where the server enforces a rule JSON Schema cannot say, each named in `NOT_IN_THE_SCHEMA` (and in
docs/limits.md, "What the OpenAPI document cannot say")."""

from __future__ import annotations

import re
import shutil
import tempfile
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import schemathesis
from hypothesis import HealthCheck, assume, settings
from schemathesis.checks import CHECKS
from schemathesis.generation import GenerationMode
from schemathesis.specs.openapi.checks import positive_data_acceptance

from app.core.settings import Settings
from app.main import create_app
from tests import postgres
from tests.conftest import DATABASES, sqlite_url

# Examples per operation and generation mode: enough to reach the documented statuses of most
# routes, few enough for well under two minutes per database on two cores.
EXAMPLES = 6
BASE_URL = "http://127.0.0.1"  # a loopback server answers loopback Host names only


@dataclass(frozen=True)
class Rule:
    """A rule the server checks and the schema cannot state: a 422 entry at `loc` (a regex over
    the `/`-joined loc) of one of `types`, on `operation`."""

    operation: str
    loc: str
    types: tuple[str, ...]
    why: str

    def covers(self, operation: str, error: dict[str, Any]) -> bool:
        loc = "/".join(str(part) for part in error.get("loc", []))
        return (
            operation == self.operation
            and error.get("type") in self.types
            and re.fullmatch(self.loc, loc, flags=re.DOTALL) is not None
        )


_CONFIG = "a run's config against its resolved table and its other fields (`SimConfig.check_against`)"
_SWEEP = "POST /api/sweeps"
_DIFFERENT = "2 to 8 *different* ids: a repeat counts once"
_PATH = "a path the base config has (list items, map keys)"
NOT_IN_THE_SCHEMA = (
    *(
        Rule(operation, "query/ids", ("value_error",), _DIFFERENT)
        for operation in ("GET /api/compare", "GET /api/compare/recreate", "POST /api/compare/again")
    ),
    Rule("POST /api/runs", "body/config/platform", ("value_error",), "a built-in or stored custom table"),
    Rule("POST /api/runs", "body/config/.+", ("value_error",), _CONFIG),
    Rule("POST /api/fits/{fit_id}/whatif", "body/changes.*", ("value_error",), _CONFIG),
    Rule(_SWEEP, "body/base.*", ("value_error",), _CONFIG),
    Rule(_SWEEP, r"body/axes/\d+/path", ("value_error",), _PATH),
    Rule(_SWEEP, r"body/axes/\d+/values/\d+", ("value_error",), "a value valid at its path: " + _CONFIG),
    Rule(_SWEEP, r"body/axes/\d+/values/\d+(/.*)?", ("string_nul",), "no U+0000 in a free-form axis value"),
    Rule(_SWEEP, "body/(axes|repeats)", ("value_error",), "points (product of the axes) x repeats <= 1,000"),
    Rule(
        "POST /api/platforms",
        r"body/intel_idle_table",
        ("value_error",),
        "an `intel_idle.table=` string as the kernel parses and validates it",
    ),
    Rule(
        "POST /api/platforms",
        r"body/states(/\d+(/(name|flags|exit_latency_us|target_residency_us|exit_latency_median_us))?)?",
        ("value_error",),
        "a table's states: POLL only as state 0, names unique, latencies and residencies not "
        "decreasing, no flag combination intel_idle never registers",
    ),
    Rule(
        "POST /api/platforms",
        r"body/states/\d+/exit_latency_median_us/value",
        ("value_error",),
        "a median exit latency not over the state's worst case",
    ),
    Rule(
        "POST /api/platforms/import",
        r"body(/line/\d+)?",
        ("dump_invalid",),
        "a sysfs cpuidle dump as the parser reads it",
    ),
    Rule(
        "POST /api/platforms/{name}/fit",
        "path/name",
        ("no_counters",),
        "the platform holds imported counters (what the database has)",
    ),
    Rule(
        "POST /api/measurements",
        "body(/.+)?",
        ("measurement_invalid", "missing"),
        "a turbostat output or a wult result, every cell in range; at least one non-empty file",
    ),
)


def _rejected_only_by_unstated_rules(operation: str, body: Any) -> bool:
    detail = body.get("detail") if isinstance(body, dict) else None
    return (
        isinstance(detail, list)
        and bool(detail)
        and all(
            isinstance(error, dict) and any(rule.covers(operation, error) for rule in NOT_IN_THE_SCHEMA)
            for error in detail
        )
    )


@schemathesis.check
def positive_data_accepted_but_unstated_rules(ctx: Any, response: Any, case: Any) -> bool | None:
    """schemathesis's `positive_data_acceptance`, a 422 from the rules above aside."""
    if response.status_code == 422:
        try:
            body = response.json()
        except ValueError:
            body = None
        if _rejected_only_by_unstated_rules(case.operation.label, body):
            return None
    return positive_data_acceptance(ctx, response, case)  # type: ignore[no-any-return]


# Every check schemathesis has, its positive-data one through the rules above.
ALL_CHECKS = [c for c in CHECKS.get_all() if c is not positive_data_acceptance]
ALL_CHECKS.append(positive_data_accepted_but_unstated_rules)

# The document comes from an app built at import (the schema is the code's, not a database's):
# schemathesis generates its tests from it when the module is collected. Each database gets its
# own app (fixture below), which the requests go to. No workers: runs stay queued; no waiting.
_SCHEMA_DIRECTORY = Path(tempfile.mkdtemp(prefix="idlelab-schemathesis-"))
_SCHEMA_APP = create_app(Settings(database_url=sqlite_url(_SCHEMA_DIRECTORY / "unused.db"), workers=0))
schema = schemathesis.openapi.from_dict(_SCHEMA_APP.openapi())
schema.app = _SCHEMA_APP
schema.config.generation.update(modes=[GenerationMode.POSITIVE, GenerationMode.NEGATIVE])
shutil.rmtree(_SCHEMA_DIRECTORY, ignore_errors=True)
# A measurement's archive is sent as its bytes, as any binary body.
schemathesis.serializer.alias("application/zip", "application/octet-stream")


@pytest.fixture(scope="module", params=DATABASES)
def served(request: pytest.FixtureRequest) -> Iterator[Any]:
    """The app on a fresh database of each kind, its lifespan running (migrations, the runner)."""
    directory = Path(tempfile.mkdtemp(prefix="idlelab-schemathesis-"))
    if request.param == "sqlite":
        url = sqlite_url(directory / "idlelab.db")
    else:
        url = postgres.fresh_database(request.getfixturevalue("postgres_server"))
    app = create_app(Settings(database_url=url, workers=0, wait_timeout_s=0))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from fastapi.testclient import TestClient
    try:
        with TestClient(app, base_url=BASE_URL):
            yield app
    finally:
        shutil.rmtree(directory, ignore_errors=True)


@schema.parametrize()
@settings(
    max_examples=EXAMPLES,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=list(HealthCheck),
)
def test_the_api_keeps_its_openapi_contract(case: Any, served: Any) -> None:
    if case.meta is not None and case.meta.generation.mode.is_positive:
        # OpenAPI prints bounds as floats: near the seed's 2**63 schemathesis's boundary values
        # (9223372036854775998) are off by the floats' spacing there, and called valid.
        assume(not _beyond_float_precision(case.body))
    case.call_and_validate(base_url=BASE_URL, checks=ALL_CHECKS, app=served)


def _beyond_float_precision(value: Any) -> bool:
    if isinstance(value, int) and not isinstance(value, bool):
        return abs(value) > 2**53
    if isinstance(value, dict):
        return any(_beyond_float_precision(v) for v in value.values())
    if isinstance(value, list):
        return any(_beyond_float_precision(v) for v in value)
    return False


def test_the_unstated_rules_are_the_ones_docs_name() -> None:
    """Each rule the test lets through is one docs/limits.md names, and none covers a field
    rule the schema states (a string bound, a range)."""
    error = {"loc": ["body", "config", "duration_ms"], "type": "greater_than_equal"}
    assert not any(rule.covers("POST /api/runs", error) for rule in NOT_IN_THE_SCHEMA)
    error = {"loc": ["query", "sort"], "type": "literal_error"}
    assert not any(rule.covers("GET /api/runs", error) for rule in NOT_IN_THE_SCHEMA)
    limits = (Path(__file__).parents[2] / "docs" / "limits.md").read_text()
    section = limits.split("## What the OpenAPI document cannot say", 1)[1]
    for phrase in ("different", "check_against", "intel_idle.table=", "imported counters", "axis", "sysfs"):
        assert phrase in section, phrase
