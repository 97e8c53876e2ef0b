"""Development dumps as the fit tests import them: adl0 (16 CPUs) fits in seconds."""

from __future__ import annotations

import gzip
import re
from typing import Any

from tests.conftest import REPO_ROOT

MACHINES = REPO_ROOT / "app" / "fits" / "dev_machines"
SMALL_FIT = {"budget": 100, "cpus": 4}


def dev_dump(name: str = "adl0") -> str:
    return gzip.decompress((MACHINES / f"{name}-sysfs.txt.gz").read_bytes()).decode()


def with_counter(dump: str, cpu: int, state: int, counter: str, value: int) -> str:
    """The dump with one counter of one CPU's state set to `value`."""
    pattern = rf"^(/sys/devices/system/cpu/cpu{cpu}/cpuidle/state{state}/{counter}:)\d+$"
    changed, n = re.subn(pattern, rf"\g<1>{value}", dump, flags=re.MULTILINE)
    assert n == 1, f"cpu{cpu} state{state} {counter} not in the dump"
    return changed


def import_dump(client: Any, name: str, dump: str | None = None) -> None:
    r = client.post(
        f"/api/platforms/import?name={name}",
        content=(dump if dump is not None else dev_dump()).encode(),
        headers={"content-type": "text/plain"},
    )
    assert r.status_code == 201, r.text


def post_fit(client: Any, platform: str, **body: Any) -> Any:
    return client.post(f"/api/platforms/{platform}/fit", json={**SMALL_FIT, **body})
