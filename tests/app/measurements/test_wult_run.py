"""wult's experiment as a run ("simulate this"): the launch distances drawn as wult draws them, or
resampled when the measured ones are clearly not uniform; the measured CPU, or CPU 0 said so."""

from __future__ import annotations

from typing import Any

import numpy as np
import orjson
import pytest
from sqlalchemy import select

from app.core.models import Measurement
from app.measurements import wult_run
from engine import BUILTIN_PLATFORMS, SimConfig
from tests.app.measurements.test_wult import INFO, csv, row


def view(count: int, wake_p50_ns: float = 40_000.0) -> dict[str, Any]:
    return {"count": count, "overall": {"WakeLatency": {"p50_ns": wake_p50_ns}}}


def test_uniform_ldist_is_drawn_uniformly_over_its_measured_range() -> None:
    quantiles = list(np.linspace(10.0, 5000.0, 101))
    timer, duration, notes = wult_run.wult_timer(view(100_000), quantiles)
    assert timer["interval"] == {
        "distribution": "uniform", "min_us": 10.0, "max_us": 5000.0, "rearm_after_us": 45.0
    }  # fmt: skip
    assert timer["work_us"] == 5.0 and any("a guess" in n for n in notes)
    # ~1000 wake-ups at a mean of 45 + 2505 us.
    assert duration == pytest.approx(2000.0)
    SimConfig.model_validate({"wakeups": {"timers": [timer]}})  # a valid config timer


def test_a_clearly_skewed_ldist_is_resampled_from_its_percentiles() -> None:
    rng = np.random.default_rng(5)
    ldist = np.concatenate([rng.uniform(100, 200, 9000), rng.uniform(200, 4000, 1000)])
    quantiles = [float(q) for q in np.quantile(ldist, np.linspace(0, 1, 101))]
    assert wult_run.uniformity_distance(quantiles) > 0.5
    timer, _, notes = wult_run.wult_timer(view(10_000), quantiles)
    assert timer["interval"]["distribution"] == "quantiles"
    assert timer["interval"]["quantiles_us"] == quantiles
    assert any("resampled from the measured LDist's percentiles" in n for n in notes)
    # A milder skew (distance 0.15) is clear in 10,000 datapoints, within chance in five.
    mild = [100.0 + 3900.0 * (i / 100) ** 1.5 for i in range(101)]
    assert wult_run.uniformity_distance(mild) == pytest.approx(0.148, abs=0.002)
    assert wult_run.wult_timer(view(10_000), mild)[0]["interval"]["distribution"] == "quantiles"
    assert wult_run.wult_timer(view(5), mild)[0]["interval"]["distribution"] == "uniform"


def test_without_ldist_the_default_range_and_without_a_cpu_cpu_0() -> None:
    timer, _, notes = wult_run.wult_timer(view(10), None)
    assert (timer["interval"]["min_us"], timer["interval"]["max_us"]) == (1.0, 4000.0)
    assert any("wult's default range" in n for n in notes)
    assert wult_run.measured_cpu(None, 96) == (0, wult_run.measured_cpu(None, 96)[1])
    assert "names no measured CPU" in wult_run.measured_cpu(None, 96)[1]
    assert wult_run.measured_cpu(7, 96)[0] == 7
    cpu, note = wult_run.measured_cpu(200, 96)
    assert cpu == 0 and "beyond" in note
    assert wult_run.cpu_count(BUILTIN_PLATFORMS["skx"]) == SimConfig(platform="skx").n_cpus()


def test_a_view_stored_before_the_percentiles_is_parsed_again(app_client: Any) -> None:
    rows = [row(90.0, 93.0, 1, 100.0 + 10 * i, "C6", 0.1, 95.0, 40.0, 50.0) for i in range(20)]
    files = [("files", ("datapoints.csv", csv(*rows))), ("files", ("info.yml", INFO.encode()))]
    mid = app_client.post("/api/measurements", files=files).json()["id"]
    with app_client.app.state.sessionmaker() as session:
        m = session.scalar(select(Measurement).where(Measurement.id == mid))
        stored = orjson.loads(m.view)
        assert len(stored["conditions"].pop("ldist_quantiles_us")) == 101
        m.view = orjson.dumps(stored)
        session.commit()
    r = app_client.post(f"/api/measurements/{mid}/simulate", json={"platform": "skx"})
    assert r.status_code == 202, r.text
    (timer,) = r.json()["config"]["wakeups"]["timers"]
    assert (timer["interval"]["min_us"], timer["interval"]["max_us"]) == (100.0, 290.0)
