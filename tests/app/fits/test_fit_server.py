"""Fits on a real server with one Dask worker (SQLite): a fit runs to `done` with the contract's
answer, is deterministic for its seed, is cancelled by its delete, restarts from its seed after a
crash, and answers what-if runs; `idlelab fit` follows one from the terminal."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from app.fits.service import FitRead, WhatIfSubmitted
from engine import SimConfig
from tests.app.factories import wait_finished
from tests.app.fits.dumps import dev_dump, import_dump, post_fit
from tests.browser.test_pages import Page
from tests.conftest import ServerProcess, sqlite_url, this_checkout

WAIT_S = 300.0


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[httpx.Client]:
    workdir = tmp_path_factory.mktemp("fits")
    proc = ServerProcess(sqlite_url(workdir / "idlelab.db"), workdir / "server.log", workers=1).start()
    try:
        with httpx.Client(base_url=proc.url, timeout=60.0) as client:
            import_dump(client, "box")
            yield client
    finally:
        proc.stop()


def wait_fit(
    client: httpx.Client, fit_id: str, statuses: tuple[str, ...] = ("done", "failed")
) -> dict[str, Any]:
    deadline = time.monotonic() + WAIT_S
    while True:
        fit = client.get(f"/api/fits/{fit_id}").json()
        if fit["status"] in statuses:
            return fit  # type: ignore[no-any-return]
        assert time.monotonic() < deadline, f"fit {fit_id} stuck in {fit['status']}"
        time.sleep(0.2)


def fit_done(client: httpx.Client, **body: Any) -> dict[str, Any]:
    r = post_fit(client, "box", **body)
    assert r.status_code == 202, r.text
    fit = wait_fit(client, r.json()["id"])
    assert fit["status"] == "done", fit["error"]
    return fit


@pytest.fixture(scope="module")
def reference(server: httpx.Client) -> dict[str, Any]:
    """A finished fit of seed 5 (budget 100, 4 CPUs), the one the others are held against."""
    return fit_done(server, seed=5)


def test_a_fit_ends_done_with_the_contract_answer(reference: dict[str, Any]) -> None:
    fit = reference
    FitRead.model_validate(fit)  # the schema /docs shows is the answer's
    assert fit["progress"] == 1 and fit["error"] is None
    assert fit["evaluations"] <= fit["budget"] and fit["history"]
    assert [h["generation"] for h in fit["history"]] == list(range(1, len(fit["history"]) + 1))
    names = ["POLL", "C1E", "C6", "C8", "C10"]  # adl0's states
    assert list(fit["measured"]["states"]) == names and list(fit["fitted"]["states"]) == names
    shares = sum(s["entry_share"] for s in fit["fitted"]["states"].values())
    assert shares == pytest.approx(1.0)
    assert fit["distance"]["total"] > 0 and fit["distance"]["per_figure"]
    assert fit["optimizer"]["name"] == "scipy.optimize.differential_evolution"
    assert set(fit["objective"]["figures"]) <= set(fit["objective"]["weights"])
    cv = fit["cross_validation"]
    assert cv["fit_cpus"] and cv["test_cpus"] and not set(cv["fit_cpus"]) & set(cv["test_cpus"])
    # At least the 4 CPUs asked for (each CPU class keeps 2), all from the CPUs the fit may see.
    assert len(fit["sampled_cpus"]) >= 4 and set(fit["sampled_cpus"]) <= set(cv["fit_cpus"])
    # A fit that misses the goal is done, its misses listed with both values.
    assert fit["goal_met"] == (not fit["misses"])
    for miss in fit["misses"]:
        assert {"state", "figure", "measured", "fitted", "tolerance"} <= set(miss)
    # The fitted config is an ordinary run config on the machine's platform and CPUs.
    config = SimConfig.model_validate(fit["config"])
    assert config.platform == "box" and config.n_cpus() == 16
    assert fit["inputs"]["hz_assumed"] is True  # pepc's dumps have no CONFIG_HZ


def test_the_same_seed_gives_the_same_twin_and_another_seed_another(
    server: httpx.Client, reference: dict[str, Any]
) -> None:
    again = fit_done(server, seed=5)
    assert again["config"] == reference["config"] and again["distance"] == reference["distance"]
    assert again["history"] == reference["history"]
    other = fit_done(server, seed=6)
    assert other["parameters"] != reference["parameters"]


def test_deleting_a_running_fit_cancels_it(server: httpx.Client) -> None:
    made = post_fit(server, "box", seed=11, budget=3000).json()
    running = wait_fit(server, made["id"], ("running", "done", "failed"))
    assert running["status"] == "running"
    r = server.delete(f"/api/fits/{made['id']}", headers={"X-Delete-Token": made["delete_token"]})
    assert r.status_code == 204
    assert server.get(f"/api/fits/{made['id']}").status_code == 404
    # The fit thread is free again: the next fit is computed (a 3,000 evaluation fit would hold it).
    start = time.monotonic()
    fit_done(server, seed=12)
    assert time.monotonic() - start < 120


def test_a_whatif_is_an_ordinary_run_beside_the_twin(server: httpx.Client, reference: dict[str, Any]) -> None:
    fit_id = reference["id"]
    r = server.post(
        f"/api/fits/{fit_id}/whatif",
        json={"changes": {"governor": {"name": "teo"}, "states": {"disabled": ["C10"]}}},
    )
    assert r.status_code == 202, r.text
    made = r.json()
    WhatIfSubmitted.model_validate(made)
    assert made["fit_id"] == fit_id and made["whatif_url"].endswith(f"/fits/{fit_id}/whatif/{made['id']}")
    deadline = time.monotonic() + WAIT_S
    for run_id in (made["id"], made["twin_run"]):
        while (run := server.get(f"/api/runs/{run_id}").json())["status"] not in ("done", "failed"):
            assert time.monotonic() < deadline
            time.sleep(0.2)
        assert run["status"] == "done", run["error"]
    whatif = server.get(f"/api/runs/{made['id']}").json()
    twin = server.get(f"/api/runs/{made['twin_run']}").json()
    assert whatif["config"]["governor"]["name"] == "teo" and twin["config"]["governor"]["name"] == "menu"
    assert whatif["config"]["states"]["disabled"] == ["C10"]
    assert whatif["config"]["wakeups"] == twin["config"]["wakeups"] == reference["config"]["wakeups"]
    c10 = next(s for s in whatif["result"]["states"] if s["name"] == "C10")
    assert c10["usage"] == 0
    page = server.get(f"/fits/{fit_id}/whatif/{made['id']}")
    assert page.status_code == 200
    text = Page(page.text).text_by_id
    assert "a sysfs cpuidle dump holds per-state usage" in text["not-in-dump"]
    assert "WakeLatency p99" in text["whatif-hidden"] and "not in a dump" in text["whatif-hidden"]
    assert "C10" in text["whatif-states"] and '"teo"' in text["whatif-changes"]
    listed = server.get(f"/api/fits/{fit_id}").json()["whatifs"]
    assert listed[-1]["run"] == made["id"] and listed[-1]["twin_run"] == made["twin_run"]
    # The form on the fit's page makes the same.
    r = server.post(
        f"/fits/{fit_id}/whatif", data={"governor": "ladder", "hz": "250"}, follow_redirects=False
    )
    assert r.status_code == 303 and f"/fits/{fit_id}/whatif/" in r.headers["location"]


def test_bad_whatif_changes_are_a_422_naming_the_field(
    server: httpx.Client, reference: dict[str, Any]
) -> None:
    url = f"/api/fits/{reference['id']}/whatif"
    r = server.post(url, json={"changes": {"governor": {"name": "nope"}}})
    assert r.status_code == 422 and r.json()["detail"][0]["loc"][:4] == [
        "body",
        "changes",
        "governor",
        "name",
    ]
    r = server.post(url, json={"changes": {"platform": "skx"}})
    assert r.status_code == 422 and r.json()["detail"][0]["loc"] == ["body", "changes", "platform"]
    r = server.post(url, json={"changes": {}, "repeats": 51})
    assert r.status_code == 422 and r.json()["detail"][0]["loc"] == ["body", "repeats"]


def test_a_whatif_with_repeats_runs_both_sides_over_the_same_seeds(
    server: httpx.Client, reference: dict[str, Any]
) -> None:
    made = server.post(
        f"/api/fits/{reference['id']}/whatif", json={"changes": {"governor": {"name": "teo"}}, "repeats": 3}
    ).json()
    whatif, twin = (wait_finished(server, rid) for rid in (made["id"], made["twin_run"]))
    assert whatif["status"] == twin["status"] == "done"
    seeds = [[r["seed"] for r in run["repeats"]] for run in (whatif, twin)]
    assert len(seeds[0]) == 3 and seeds[0] == seeds[1]


def test_an_unlisted_fit_makes_unlisted_runs(server: httpx.Client) -> None:
    fit = fit_done(server, seed=5, unlisted=True)
    made = server.post(
        f"/api/fits/{fit['id']}/whatif", json={"changes": {"governor": {"name": "teo"}}}
    ).json()
    listed = {r["id"] for r in server.get("/api/runs?limit=200").json()["runs"]}
    assert made["id"] not in listed and made["twin_run"] not in listed


def _cli_command(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "app.cli", *args],
        capture_output=True,
        text=True,
        timeout=WAIT_S,
        env=this_checkout({"PATH": "/usr/bin:/bin", "HOME": os.environ.get("HOME", "/tmp"), **(env or {})}),
    )


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return _cli_command("fit", *args)


def test_the_cli_follows_a_fit_on_the_server(server: httpx.Client, tmp_path: Path) -> None:
    out = tmp_path / "fit.json"
    url = str(server.base_url)
    done = _cli("box", "--server", url, "--budget", "100", "--cpus", "4", "--seed", "5", "--json", str(out))
    assert done.returncode == 0, done.stderr
    assert "generation 1:" in done.stderr and "done: distance" in done.stderr
    fit = json.loads(out.read_text())
    assert fit["status"] == "done" and done.stdout.strip().endswith(f"/fits/{fit['id']}")
    bad = _cli("box", "--server", url, "--budget", "5")
    assert bad.returncode == 1 and "budget" in bad.stderr and "Traceback" not in bad.stderr
    missing = _cli("skx", "--server", url)
    assert missing.returncode == 1 and "no measured counters" in missing.stderr


def test_a_fit_interrupted_by_a_crash_starts_again_from_its_seed(
    tmp_path: Path, reference: dict[str, Any]
) -> None:
    log = tmp_path / "server.log"
    first = ServerProcess(sqlite_url(tmp_path / "idlelab.db"), log, workers=1).start()
    try:
        with httpx.Client(base_url=first.url, timeout=60.0) as client:
            import_dump(client, "box")
            made = post_fit(client, "box", seed=5).json()
            fit = wait_fit(client, made["id"], ("running", "done", "failed"))
            assert fit["status"] == "running"
    finally:
        first.kill()
    second = ServerProcess(sqlite_url(tmp_path / "idlelab.db"), log, workers=1).start()
    try:
        with httpx.Client(base_url=second.url, timeout=60.0) as client:
            fit = wait_fit(client, made["id"])
    finally:
        second.stop()
    assert fit["status"] == "done", fit["error"]
    assert fit["config"] == reference["config"] and fit["distance"] == reference["distance"]


def test_the_cli_computes_a_fit_on_a_scheduler_into_the_database(
    tmp_path: Path, reference: dict[str, Any]
) -> None:
    from distributed import LocalCluster

    dump = tmp_path / "adl0.txt"
    dump.write_text(dev_dump())
    env = {"IDLELAB_DATABASE_URL": sqlite_url(tmp_path / "cli.db")}
    imported = _cli_command("platforms", "import", str(dump), "--name", "box", env=env)
    assert imported.returncode == 0, imported.stderr
    # A free port for the scheduler's /health too (8787 may be another cluster's on this machine).
    cluster_options = {"dashboard_address": None, "scheduler_kwargs": {"dashboard_address": "127.0.0.1:0"}}
    with LocalCluster(n_workers=1, threads_per_worker=1, host="127.0.0.1", **cluster_options) as cluster:
        out = tmp_path / "fit.json"
        args = (
            "box",
            "--scheduler",
            cluster.scheduler_address,
            "--budget",
            "100",
            "--cpus",
            "4",
            "--seed",
            "5",
        )
        done = _cli_command("fit", *args, "--json", str(out), env=env)
    assert done.returncode == 0, done.stderr
    assert "generation 1:" in done.stderr
    fit = json.loads(out.read_text())
    # Stored like a server's fit, and the same twin as the server computed for this seed.
    assert fit["status"] == "done" and fit["config"] == reference["config"]
    assert fit["distance"] == reference["distance"]


def test_two_workers_give_the_same_twin_as_one(tmp_path: Path, reference: dict[str, Any]) -> None:
    two = ServerProcess(sqlite_url(tmp_path / "idlelab.db"), tmp_path / "server.log", workers=2).start()
    try:
        with httpx.Client(base_url=two.url, timeout=60.0) as client:
            import_dump(client, "box")
            fit = fit_done(client, seed=5)
    finally:
        two.stop()
    assert fit["config"] == reference["config"] and fit["distance"] == reference["distance"]
    assert fit["history"] == reference["history"]


def test_a_sweep_starts_from_a_twins_config(server: httpx.Client, reference: dict[str, Any]) -> None:
    axes = [{"path": "governor.name", "values": ["menu", "teo"]}]
    r = server.post("/api/sweeps", json={"base": reference["config"], "axes": axes})
    assert r.status_code == 202, r.text
    sweep = server.get(f"/api/sweeps/{r.json()['id']}").json()
    for point in sweep["points"]:
        run = server.get(f"/api/runs/{point['run_id']}").json()
        assert (
            run["config"]["wakeups"] == reference["config"]["wakeups"] and run["config"]["platform"] == "box"
        )


def test_the_machines_section_shows_a_development_machines_twin(server: httpx.Client) -> None:
    import_dump(server, "dev-adl0")  # what its POST button imports, fitted here with a small budget
    r = post_fit(server, "dev-adl0", seed=5)
    fit = wait_fit(server, r.json()["id"])
    section = Page(server.get("/validation/machines").text).text_by_id["machine-adl0"]
    assert fit["id"] in section and "C10" in section
    verdict = "within the goal" if fit["goal_met"] else f"{len(fit['misses'])} figure(s) miss"
    assert verdict in section
    for miss in fit["misses"]:
        assert f"{miss['state'] or 'machine'} {miss['figure']}" in section
