"""Measurements through the API and pages: import (two files, zip, turbostat text), read, delete,
bad files as 422s naming file, line and column with nothing stored, "simulate this", compare
beside a run, calibrate."""

from __future__ import annotations

import io
import zipfile
from typing import Any

import numpy as np
import pytest
from sqlalchemy import func, select

from app.core.models import Measurement
from tests.app.factories import done_run
from tests.app.measurements.test_turbostat import OUTPUT as TURBOSTAT
from tests.app.measurements.test_wult import HEADER, INFO, ROWS, csv, row
from tests.app.platforms.machines import CLIENT, grep_text, machine_files, skx96
from tests.app.platforms.machines import HEADER as MACHINE_HEADER

TWO_FILES = [("files", ("datapoints.csv", csv(*ROWS))), ("files", ("info.yml", INFO.encode()))]


def stored(client: Any) -> int:
    with client.app.state.sessionmaker() as session:
        return int(session.scalar(select(func.count()).select_from(Measurement)) or 0)


def post(client: Any, **kwargs: Any) -> Any:
    return client.post("/api/measurements", **kwargs)


def test_a_wult_result_as_two_files(app_client: Any) -> None:
    r = post(app_client, files=TWO_FILES, data={"title": "clx C6"})
    assert r.status_code == 201, r.text
    body = r.json()
    assert body["title"] == "clx C6" and body["kind"] == "wult" and body["delete_token"]
    got = app_client.get(f"/api/measurements/{body['id']}").json()
    assert "delete_token" not in got
    assert [r["req_cstate"] for r in got["requested"]] == ["POLL", "C1", "C6"]
    c6 = next(r for r in got["requested"] if r["req_cstate"] == "C6")
    # ROWS' three C6 wake-ups: 100.5, 60.25 and 3.0 us; their median is 60.25 us.
    assert c6["stats"]["WakeLatency"]["count"] == 3
    assert c6["stats"]["WakeLatency"]["p50_ns"] == pytest.approx(60250.0)
    assert got["overall"]["WakeLatency"]["count"] == 5
    assert got["conditions"]["delivery"] == "nic"
    page = app_client.get(f"/measurements/{body['id']}")
    assert page.status_code == 200
    assert 'data-state="C6" data-metric="WakeLatency"' in page.text and "60.2 us" in page.text


def test_a_zip_as_the_body_and_turbostat_as_text(app_client: Any) -> None:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as zf:
        zf.writestr("res/datapoints.csv", csv(*ROWS))
        zf.writestr("res/info.yml", INFO)
    r = post(app_client, content=out.getvalue(), headers={"content-type": "application/zip"})
    assert r.status_code == 201, r.text
    assert r.json()["count"] == 5
    t = post(app_client, content=TURBOSTAT.encode(), headers={"content-type": "text/plain"})
    assert t.status_code == 201, t.text
    body = t.json()
    assert body["kind"] == "turbostat" and body["intervals"] == 2
    # test_turbostat's hand-worked means of the two summary rows.
    assert body["residency"]["CPU%c6"] == pytest.approx(84.0)
    assert body["residency"]["PkgWatt"] == pytest.approx(111.0)
    page = app_client.get(f"/measurements/{body['id']}")
    assert page.status_code == 200 and 'data-column="CPU%c6"' in page.text


def test_delete_needs_the_token(app_client: Any) -> None:
    body = post(app_client, files=TWO_FILES).json()
    url = f"/api/measurements/{body['id']}"
    assert app_client.delete(url, headers={"X-Delete-Token": "nope"}).status_code == 403
    assert app_client.delete(url, headers={"X-Delete-Token": body["delete_token"]}).status_code == 204
    assert app_client.get(url).status_code == 404


BAD = [
    ("short line", [("datapoints.csv", csv(*ROWS[:2], "1,2,3")), ("info.yml", INFO.encode())],
     ["body", "datapoints.csv", "line", 4, "column", 4]),
    ("long line", [("datapoints.csv", csv(ROWS[0] + ",7")), ("info.yml", INFO.encode())],
     ["body", "datapoints.csv", "line", 2, "column", 15]),
    ("empty", [("datapoints.csv", b""), ("info.yml", INFO.encode())], ["body", "datapoints.csv"]),
    ("binary", [("datapoints.csv", HEADER.encode() + b"\n1,\x00"), ("info.yml", INFO.encode())],
     ["body", "datapoints.csv", "line", 2, "column", 3]),
    ("missing info.yml", [("datapoints.csv", csv(*ROWS))], ["body", "info.yml"]),
    ("unknown units", [("datapoints.csv", csv(*ROWS)), ("info.yml", INFO.replace("'1.3'", "'9.9'").encode())],
     ["body", "info.yml"]),
    ("a bad turbostat cell", [("t.txt", TURBOSTAT.replace("\t2400\t", "\tabc\t", 1).encode())],
     ["body", "t.txt"]),
]  # fmt: skip


@pytest.mark.parametrize(("what", "files", "loc"), BAD, ids=[b[0] for b in BAD])
def test_bad_files_are_422s_naming_file_line_and_column(
    app_client: Any, what: str, files: list[tuple[str, bytes]], loc: list[Any]
) -> None:
    before = stored(app_client)
    r = post(app_client, files=[("files", f) for f in files])
    assert r.status_code == 422, (what, r.text)
    detail = r.json()["detail"]
    assert detail[0]["loc"][: len(loc)] == loc, detail
    assert detail[0]["type"] == "measurement_invalid"
    assert detail[0]["msg"].startswith(loc[1])  # the message names the file first
    assert stored(app_client) == before


def test_simulate_this_reproduces_the_conditions(app_client: Any) -> None:
    only_c6 = [row(90.0 + i, 93.0 + i, 1, 800.0 + 100 * i, "C6", 0.1, 95.0, 40.0, 50.0) for i in range(5)]
    files = [("files", ("datapoints.csv", csv(*only_c6))), ("files", ("info.yml", INFO.encode()))]
    mid = post(app_client, files=files).json()["id"]
    r = app_client.post(f"/api/measurements/{mid}/simulate", json={"platform": "skx"})
    assert r.status_code == 202, r.text
    answer = r.json()
    assert answer["comparison_url"] == f"/compare?ids={answer['id']},{mid}"
    config = app_client.get(f"/api/runs/{answer['id']}").json()["config"]
    assert config["platform"] == "skx"
    assert config["governor"]["name"] == "fixed" and config["governor"]["fixed_state"] == "C6"
    # wult's experiment: one timer, on the measured CPU (info.yml's cpu: 3) alone, each launch
    # distance drawn uniformly over the measured LDist's range (800..1200 us), armed after the
    # previous wake-up (the median WakeLatency, 92 us, plus the armer's work, a guess).
    (timer,) = config["wakeups"]["timers"]
    assert timer["cpus"] == [3]
    assert timer["interval"] == {
        "distribution": "uniform", "min_us": 800.0, "max_us": 1200.0, "rearm_after_us": 97.0
    }
    topology = config["topology"]
    assert (topology["sockets"], topology["cores_per_socket"]) == (2, None), "skx's whole machine"
    notes = answer["notes"]
    assert any("CPU 3 alone carries wult's timer" in n for n in notes)
    assert any("uniform in 800..1200 us" in n for n in notes)
    assert any("a guess" in n for n in notes)
    assert not any("does not reproduce" in n or "every CPU" in n for n in notes)
    assert any("delivery 'nic'" in n for n in notes)
    # Several requested states: the others are disabled instead.
    several = post(app_client, files=TWO_FILES).json()["id"]
    cfg = app_client.post(f"/api/measurements/{several}/simulate", json={"platform": "skx"}).json()["config"]
    assert cfg["states"]["disabled"] == ["C1E"] and "governor" not in cfg
    # The page's button: a POST, then the comparison.
    page = app_client.post(f"/measurements/{mid}/simulate", data={"platform": "skx"}, follow_redirects=False)
    assert page.status_code == 303 and page.headers["location"].endswith(f",{mid}")


def test_compare_aligns_measured_with_simulated(app_client: Any) -> None:
    run_id, _ = done_run(app_client.app)
    wult = post(app_client, files=TWO_FILES).json()["id"]
    ts = post(app_client, content=TURBOSTAT.encode(), headers={"content-type": "text/plain"}).json()["id"]
    r = app_client.get(f"/api/compare?ids={run_id},{wult},{ts}")
    assert r.status_code == 200, r.text
    body = r.json()
    assert [m["id"] for m in body["measurements"]] == [wult, ts]
    assert [x["id"] for x in body["runs"]] == [run_id]
    rows = {m["key"]: m for m in body["measured"]}
    result = app_client.get(f"/api/runs/{run_id}").json()["result"]
    wake = rows["latency.wake.p50_ns"]
    # The measured median of ROWS' five WakeLatency values (1.5, 3, 5, 60.25, 100.5 us) is 5 us.
    assert wake["measured"][0] == pytest.approx(5000.0) and wake["measured"][1] is None
    assert wake["simulated"] == [pytest.approx(result["latency"]["wake"]["p50_ns"])]
    c6 = rows["turbostat.CPU%c6"]
    assert c6["measured"] == [None, pytest.approx(84.0)]
    simulated = result["hardware"]["system"]["turbostat"]["CPU%c6"]
    assert c6["simulated"] == [pytest.approx(simulated)]
    assert c6["deltas_pct"] == [pytest.approx((simulated - 84.0) / 84.0 * 100)]
    watts = rows["turbostat.PkgWatt"]  # turbostat's summary row sums the packages, as the system row does
    sim_watts = result["hardware"]["system"]["turbostat"]["PkgWatt"]
    assert sim_watts == pytest.approx(sum(s["turbostat"]["PkgWatt"] for s in result["hardware"]["sockets"]))
    assert watts["simulated"] == [pytest.approx(sim_watts)]
    page = app_client.get(f"/compare?ids={run_id},{wult}")
    assert page.status_code == 200
    assert 'id="measured-table"' in page.text and "chart-measured_wake_tail" in page.text
    only = app_client.get(f"/api/compare?ids={wult},{ts}")
    assert only.status_code == 422


def lognormal_rows(n: int, median_us: float, sigma: float, seed: int = 7) -> list[str]:
    """n C6 wake-ups with IntrOff = 1 whose counters say the package reached PC6."""
    rng = np.random.default_rng(seed)
    wake = median_us * np.exp(sigma * rng.standard_normal(n))
    return [f"{w:.3f},900,{w + 2:.3f},1,1000,C6,0.10,0.00,0.10,95.00,40.00,50.00,0,0" for w in wake]


def test_calibrate_labels_the_fitted_exit_median_measured(app_client: Any) -> None:
    samples = csv(*lognormal_rows(2000, 40.0, 0.2))
    files = [("files", ("datapoints.csv", samples)), ("files", ("info.yml", INFO.encode()))]
    mid = post(app_client, files=files).json()["id"]
    r = app_client.post(f"/api/measurements/{mid}/calibrate", json={"platform": "skx"})
    assert r.status_code == 201, r.text
    body = r.json()
    c6 = next(s for s in body["table"]["states"] if s["name"] == "C6")
    assert c6["exit_latency_us"] == 133  # the governor's figure stays the kernel's
    assert c6["exit_latency_median_us"]["kind"] == "measured"
    assert mid in c6["exit_latency_median_us"]["source"]
    assert c6["exit_latency_median_us"]["value"] == pytest.approx(40.0, rel=0.03)
    assert c6["hw_exit_latency_us"] is None  # 2,000 samples: too few for a measured p99.99
    assert app_client.get(body["url"]).status_code == 200
    few = post(app_client, files=TWO_FILES).json()["id"]
    refused = app_client.post(f"/api/measurements/{few}/calibrate")
    assert refused.status_code == 422 and "100 needed" in refused.json()["detail"][0]["msg"]


def test_with_10_to_the_5_samples_the_hardware_worst_case_is_measured_too(app_client: Any) -> None:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("r/datapoints.csv", csv(*lognormal_rows(100_000, 40.0, 0.2, seed=3)))
        zf.writestr("r/info.yml", INFO)
    mid = post(app_client, content=out.getvalue(), headers={"content-type": "application/zip"}).json()["id"]
    body = app_client.post(f"/api/measurements/{mid}/calibrate", json={"platform": "skx"}).json()
    c6 = next(s for s in body["table"]["states"] if s["name"] == "C6")
    # A log-normal's 99.99th percentile: median * exp(sigma * 3.719) = 40 * e^0.744 ~ 84.2 us.
    assert c6["hw_exit_latency_us"]["kind"] == "measured"
    assert c6["hw_exit_latency_us"]["value"] == pytest.approx(84.2, rel=0.08)
    assert c6["exit_latency_us"] == 133


def test_a_turbostat_measurement_simulates_on_the_platform_of_the_cpu_it_names(app_client: Any) -> None:
    # turbostat's preamble names the CPU: family 6, model 85 is skx's (Skylake-X, Cascade Lake).
    named = TURBOSTAT.replace(
        "CPUID(0): GenuineIntel 0x16 CPUID levels\n",
        "CPUID(0): GenuineIntel 0x16 CPUID levels\n"
        "CPUID(1): family:model:stepping 0x6:55:7 (6:85:7) microcode 0x1\n",
    )
    assert named != TURBOSTAT
    mid = named_id = post(app_client, content=named.encode(), headers={"content-type": "text/plain"}).json()[
        "id"
    ]
    answer = app_client.post(f"/api/measurements/{mid}/simulate").json()
    assert answer["config"]["platform"] == "skx"
    # An imported machine of that model is taken over the built-in table; a newer one of another is not.
    skx = app_client.post("/api/platforms/import", content=skx96().encode(), params={"name": "my-clx"},
                          headers={"content-type": "text/plain"})  # fmt: skip
    assert skx.status_code == 201, skx.text
    client_dump = grep_text(
        machine_files(CLIENT, 4), MACHINE_HEADER.replace("model\t\t: 85", "model\t\t: 151")
    )
    other = app_client.post("/api/platforms/import", content=client_dump.encode(), params={"name": "newer"},
                            headers={"content-type": "text/plain"})  # fmt: skip
    assert other.status_code == 201, other.text
    assert app_client.post(f"/api/measurements/{mid}/simulate").json()["config"]["platform"] == "my-clx"
    # Without a CPU model: a 422 at body.platform listing the candidates, never the newest import.
    unnamed = post(app_client, content=TURBOSTAT.encode(), headers={"content-type": "text/plain"}).json()[
        "id"
    ]
    asked = app_client.post(f"/api/measurements/{unnamed}/simulate")
    assert asked.status_code == 422
    (error,) = asked.json()["detail"]
    assert error["loc"] == ["body", "platform"] and "names no CPU model" in error["msg"]
    assert "skx" in error["msg"] and "my-clx" in error["msg"]
    # The page asks: the platform select is required, with no "chosen from the measurement".
    page = app_client.get(f"/measurements/{unnamed}").text
    assert 'id="sim-ask"' in page and 'name="platform" required' in page
    assert 'id="sim-ask"' not in app_client.get(f"/measurements/{named_id}").text
    mid = unnamed
    refused = app_client.post(f"/api/measurements/{mid}/calibrate")
    assert refused.status_code == 422 and "only a wult measurement" in refused.json()["detail"][0]["msg"]


def test_the_calibrate_button_posts_then_shows_the_new_platform(app_client: Any) -> None:
    samples = csv(*lognormal_rows(500, 30.0, 0.1))
    files = [("f", ("datapoints.csv", samples)), ("f", ("info.yml", INFO.encode()))]
    mid = post(app_client, files=files).json()["id"]
    r = app_client.post(f"/measurements/{mid}/calibrate", data={"platform": "icx"}, follow_redirects=False)
    assert r.status_code == 303
    name = r.headers["location"].rsplit("/", 1)[1]
    assert name.startswith("icx-cal-")
    table = app_client.get(f"/api/platforms/{name}").json()["table"]
    c6 = next(s for s in table["states"] if s["name"] == "C6")
    assert c6["exit_latency_us"] == 170 and c6["exit_latency_median_us"]["kind"] == "measured"


def test_the_page_says_when_intr_off_is_unknown_and_when_samples_are_few(app_client: Any) -> None:
    header = "WakeLatency,LDist,ReqCState"
    files = [("files", ("datapoints.csv", csv("10.0,500.0,C6", "12.0,800.0,C6", header=header))),
             ("files", ("info.yml", INFO.encode()))]  # fmt: skip
    no_column = post(app_client, files=files).json()["id"]
    page = app_client.get(f"/measurements/{no_column}").text
    assert "mixed" not in page and 'title="the result has no IntrOff column">–' in page
    assert "too few samples for p90, p99, p99.9, p99.99" in page
    # ROWS has an IntrOff column: C6's three rows are all IntrOff = 1, so the cell says 1.
    with_column = post(app_client, files=TWO_FILES).json()["id"]
    page = app_client.get(f"/measurements/{with_column}").text
    assert "no IntrOff column" not in page
