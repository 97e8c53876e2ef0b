"""The fits API on an in-process app without workers (fits stay queued): the contract's fields,
every bad input, lists, delete, the pages and the forms that start fits."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from app.fits.service import FitList, FitRead, FitSubmitted
from tests.app.fits.dumps import dev_dump, import_dump, post_fit, with_counter

CONTRACT = {
    "id", "status", "progress", "error", "created_at", "platform", "seed", "budget", "evaluations",
    "cpus", "engine_version", "optimizer", "objective", "measured", "fitted", "distance", "misses",
    "cross_validation", "history", "config",
}  # fmt: skip


def test_a_fit_is_queued_with_the_contract_fields(app_client: Any) -> None:
    import_dump(app_client, "box")
    r = post_fit(app_client, "box", seed=7)
    assert r.status_code == 202, r.text
    made = r.json()
    assert made["status"] == "queued" and made["delete_token"]
    assert made["url"] == f"http://127.0.0.1/fits/{made['id']}"
    FitSubmitted.model_validate(made)
    fit = app_client.get(f"/api/fits/{made['id']}").json()
    FitRead.model_validate(fit)
    assert CONTRACT <= set(fit)
    assert (fit["platform"], fit["seed"], fit["budget"], fit["cpus"]) == ("box", 7, 100, 4)
    assert fit["status"] == "queued" and fit["progress"] == 0 and fit["history"] == []
    assert fit["measured"] is None and fit["config"] is None and fit["whatifs"] == []
    page = app_client.get(f"/fits/{made['id']}")
    assert page.status_code == 200 and "queued" in page.text


def test_lists_filter_by_platform_and_leave_unlisted_fits_out(app_client: Any) -> None:
    import_dump(app_client, "one")
    import_dump(app_client, "two")
    a = post_fit(app_client, "one").json()["id"]
    b = post_fit(app_client, "two").json()["id"]
    hidden = post_fit(app_client, "two", unlisted=True).json()["id"]
    assert {f["id"] for f in app_client.get("/api/fits").json()["fits"]} == {a, b}
    two = FitList.model_validate(app_client.get("/api/fits?platform=two").json()).model_dump()
    assert [f["id"] for f in two["fits"]] == [b] and two["total"] == 1
    assert app_client.get(f"/api/fits/{hidden}").json()["unlisted"] is True
    assert hidden not in app_client.get("/fits").text


def _detail(r: Any) -> dict[str, Any]:
    assert r.status_code == 422, r.text
    return r.json()["detail"][0]  # type: ignore[no-any-return]


def test_a_budget_out_of_range_is_a_422_naming_it(app_client: Any) -> None:
    import_dump(app_client, "box")
    for budget in (99, 20_001):
        d = _detail(post_fit(app_client, "box", budget=budget))
        assert d["loc"] == ["body", "budget"]
    assert _detail(post_fit(app_client, "box", cpus=1))["loc"] == ["body", "cpus"]
    assert app_client.get("/api/fits").json()["total"] == 0


def test_a_platform_without_counters_is_a_422(app_client: Any) -> None:
    d = _detail(post_fit(app_client, "skx"))
    assert d["loc"] == ["path", "name"] and "built-in" in d["msg"] and "no measured counters" in d["msg"]
    states = [{"name": "C1", "desc": "MWAIT 0x00", "exit_latency_us": 2, "target_residency_us": 2}]
    r = app_client.post("/api/platforms", json={"name": "typed", "states": states})
    assert r.status_code == 201, r.text
    d = _detail(post_fit(app_client, "typed"))
    assert d["loc"] == ["path", "name"] and "no imported counters" in d["msg"]
    assert post_fit(app_client, "nowhere").status_code == 404


def test_counters_that_cannot_come_from_one_boot_are_a_422_naming_the_counter(app_client: Any) -> None:
    # cpu0's C1E (state1): above 995 and below 330 of 4794 entries; above + below > usage is no boot's.
    import_dump(app_client, "bad", with_counter(dev_dump(), 0, 1, "above", 4700))
    d = _detail(post_fit(app_client, "bad"))
    assert d["loc"] == ["counters", "above + below"]
    assert "CPU 0 C1E" in d["msg"] and "not the counters of one boot" in d["msg"]
    # Time counted in a state never entered.
    import_dump(app_client, "bad2", with_counter(dev_dump(), 3, 2, "usage", 0))
    d = _detail(post_fit(app_client, "bad2"))
    assert d["loc"][0] == "counters" and "CPU 3" in d["msg"]
    assert app_client.get("/api/fits").json()["total"] == 0


def test_delete_needs_the_token(app_client: Any) -> None:
    import_dump(app_client, "box")
    made = post_fit(app_client, "box").json()
    url = f"/api/fits/{made['id']}"
    assert app_client.delete(url).status_code == 403
    assert app_client.delete(url, headers={"X-Delete-Token": "nope"}).status_code == 403
    assert app_client.delete(url, headers={"X-Delete-Token": made["delete_token"]}).status_code == 204
    assert app_client.get(url).status_code == 404
    assert app_client.delete(url, headers={"X-Delete-Token": made["delete_token"]}).status_code == 404


def test_a_whatif_needs_a_finished_twin(app_client: Any) -> None:
    import_dump(app_client, "box")
    made = post_fit(app_client, "box").json()
    r = app_client.post(f"/api/fits/{made['id']}/whatif", json={"changes": {"governor": {"name": "teo"}}})
    assert r.status_code == 409 and "queued" in r.json()["detail"]
    assert app_client.post("/api/fits/nosuchfit1/whatif", json={"changes": {}}).status_code == 404


def test_the_platform_page_button_starts_a_fit(app_client: Any) -> None:
    import_dump(app_client, "box")
    page = app_client.get("/platforms/box").text
    assert 'id="fit-twin"' in page and 'action="/platforms/box/fit"' in page
    r = app_client.post("/platforms/box/fit", data={"seed": "3", "budget": "100"}, follow_redirects=False)
    assert r.status_code == 303 and r.headers["location"].startswith("/fits/")
    # The new fit's delete token rides in the fragment, and the page has where to show it.
    path, _, fragment = r.headers["location"].partition("#delete-token=")
    assert fragment and "#" not in path
    fit = app_client.get("/api" + path).json()
    assert (fit["seed"], fit["budget"], fit["status"]) == (3, 100, "queued")
    assert 'id="delete-token"' in app_client.get(path).text
    assert app_client.delete("/api" + path, headers={"X-Delete-Token": "wrong"}).status_code == 403
    assert app_client.delete("/api" + path, headers={"X-Delete-Token": fragment}).status_code in (200, 204)
    r = app_client.post("/platforms/box/fit", data={"budget": "50"}, follow_redirects=False)
    assert r.status_code == 422


def test_the_machines_section_lists_every_development_machine_and_a_get_writes_nothing(
    app_client: Any,
) -> None:
    page = app_client.get("/validation/machines")
    assert page.status_code == 200
    for name in ("adl0", "bdwep0", "emr9", "icx2s3", "milan0", "sklep0", "srf8"):
        assert f'data-machine="{name}"' in page.text
    assert "reported, not judged" in page.text  # icx2s3
    assert not [p for p in app_client.get("/api/platforms").json()["platforms"] if p["custom"]]
    assert 'href="/validation/machines"' in app_client.get("/validation").text
    r = app_client.post("/validation/machines/adl0/fit", follow_redirects=False)
    assert r.status_code == 303
    path, _, token = r.headers["location"].partition("#delete-token=")
    assert token
    fit = app_client.get("/api" + path).json()
    assert fit["platform"] == "dev-adl0" and fit["budget"] == 3000
    assert app_client.post("/validation/machines/nosuch/fit").status_code == 404


def test_the_development_machines_are_package_data() -> None:
    # An installed app reads them from its own package, not from a checkout's tests/.
    import tomllib

    from app.core.settings import REPO_ROOT
    from app.fits import machines

    assert machines.MACHINES_DIR.is_relative_to(Path(machines.__file__).parent)
    assert len(machines.machine_names()) == 7
    package_data = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())["tool"]["setuptools"][
        "package-data"
    ]
    assert "dev_machines/*" in package_data["app.fits"]


def test_a_fit_has_a_note_guarded_by_its_delete_token(app_client: Any) -> None:
    import_dump(app_client, "box")
    made = post_fit(app_client, "box").json()
    url = f"/api/fits/{made['id']}/note"
    wrong = app_client.put(url, json={"text": "first try"}, headers={"X-Delete-Token": "wrong"})
    assert wrong.status_code == 403
    token = {"X-Delete-Token": made["delete_token"]}
    r = app_client.put(url, json={"text": "bisected to 4b20b07ce72f"}, headers=token)
    assert r.status_code == 200, r.text
    note = app_client.get(url).json()
    assert note["text"] == "bisected to 4b20b07ce72f" and "4b20b07ce72f" in note["html"]
    assert 'data-note-url="/api/fits/' in app_client.get(f"/fits/{made['id']}").text
