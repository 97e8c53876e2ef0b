"""The README's "Real machines" section stays true: its one command is `DUMP_COMMAND` and writes
what `idlelab collect` writes, and its curl examples run (replayed in-process)."""

from __future__ import annotations

import io
import shlex
import subprocess
import zipfile
from pathlib import Path
from typing import Any

import pytest

from app.platforms.collect import collect
from app.platforms.sysfs import DUMP_COMMAND, DumpError, parse_dump
from tests.app.factories import done_run
from tests.app.measurements.test_api import lognormal_rows
from tests.app.measurements.test_turbostat import OUTPUT as TURBOSTAT
from tests.app.measurements.test_wult import INFO, csv
from tests.app.platforms.machines import skx96
from tests.conftest import REPO_ROOT


def section() -> str:
    text = (REPO_ROOT / "README.md").read_text()
    return text.split("## Real machines", 1)[1].split("\n## ", 1)[0]


def test_the_readme_gives_the_dump_command_and_collect() -> None:
    text = section()
    assert f"```sh\n{DUMP_COMMAND}\n```" in text
    assert "idlelab collect -o machine.txt" in text


def test_the_dump_command_writes_what_collect_reads_here(tmp_path: Path) -> None:
    """On this machine (when it has cpuidle), the shell command and `collect()` see the same table."""
    try:
        ours = parse_dump(collect("/"))
    except DumpError as err:
        pytest.skip(f"no usable cpuidle dump on this machine: {err}")
    subprocess.run(["bash", "-c", DUMP_COMMAND], cwd=tmp_path, check=False, capture_output=True)
    theirs = parse_dump((tmp_path / "machine.txt").read_bytes())
    assert theirs.state_names() == ours.state_names()
    assert [s.latency_us for s in theirs.states] == [s.latency_us for s in ours.states]
    assert theirs.topology == ours.topology and theirs.model_name == ours.model_name


def curl_commands() -> list[str]:
    block = section().split("through the API", 1)[1].split("```sh", 1)[1].split("```", 1)[0]
    return [line for line in block.splitlines() if line.startswith("curl ")]


def replay(client: Any, command: str, files: dict[str, bytes]) -> Any:
    args = shlex.split(command)[1:]
    method, headers, content, form, data, url = "GET", {}, None, [], {}, ""
    i = 0
    while i < len(args):
        a = args[i]
        if a == "-X":
            i += 1
            method = args[i]
        elif a == "-H":
            i += 1
            name, _, value = args[i].partition(":")
            headers[name.strip()] = value.strip()
        elif a in ("-d", "--data-binary"):
            i += 1
            value = args[i]
            content = files[value[1:]] if value.startswith("@") else value.encode()
            method = "POST" if method == "GET" else method
        elif a == "-F":
            i += 1
            key, _, value = args[i].partition("=")
            if value.startswith("@"):
                form.append((key, (value[1:], files[value[1:]])))
            else:
                data[key] = value
            method = "POST"
        elif a != "-s":
            url = "/" + a.split("localhost:8000/", 1)[1]
        i += 1
    if form:
        return client.request(method, url, files=form, data=data)
    return client.request(method, url, headers=headers, content=content)


def test_the_curl_examples_run(app_client: Any) -> None:
    datapoints = csv(*lognormal_rows(300, 40.0, 0.2))
    archive = io.BytesIO()
    with zipfile.ZipFile(archive, "w") as zf:
        zf.writestr("wult-result/datapoints.csv", datapoints)
        zf.writestr("wult-result/info.yml", INFO)
    files = {
        "machine.txt": skx96().encode(),
        "datapoints.csv": datapoints,
        "info.yml": INFO.encode(),
        "wult-result.zip": archive.getvalue(),
        "turbostat.txt": TURBOSTAT.encode(),
    }
    made = app_client.post(
        "/api/measurements", files=[("f", ("datapoints.csv", datapoints)), ("f", ("info.yml", INFO.encode()))]
    ).json()
    run_id, _ = done_run(app_client.app)
    subs = {"MEASUREMENT_ID": made["id"], "MEASUREMENT_TOKEN": made["delete_token"], "RUN_ID": run_id}
    commands = curl_commands()
    assert len(commands) == 10
    for command in commands:
        for key, value in subs.items():
            command = command.replace(key, value)
        r = replay(app_client, command, files)
        assert r.status_code < 300, f"{command}\n-> {r.status_code} {r.text[:500]}"
