"""Importing a machine's dump through the API and the page form: what is recognised and stored,
the counter snapshot beside a simulation, disabled states carried into the run, every bad dump a
422 naming the line with nothing stored, and the import paths' own body limit."""

from __future__ import annotations

from typing import Any

import pytest

from app.platforms.service import derive_name
from app.platforms.sysfs import parse_dump
from engine import Platform, load_platform
from tests.app.platforms.machines import (
    HEADER,
    SKX,
    SKX_PC6_OFF,
    grep_text,
    machine_files,
    skx96,
    skx_layout,
)

TEXT = {"content-type": "text/plain"}


def skx_costs() -> dict[str, Any]:
    return load_platform("skx").costs.model_dump(mode="json")


def post_dump(client: Any, text: str | bytes, **params: str) -> Any:
    body = text.encode() if isinstance(text, str) else text
    return client.post("/api/platforms/import", content=body, headers=TEXT, params=params)


def custom_names(client: Any) -> set[str]:
    return {p["name"] for p in client.get("/api/platforms").json()["platforms"] if p["custom"]}


def test_a_skx_dump_is_recognised_with_its_topology_and_counters(app_client: Any) -> None:
    r = post_dump(app_client, skx96(), name="clx96")
    assert r.status_code == 201, r.text
    body = r.json()
    assert body["name"] == "clx96" and body["custom"] is True
    machine = body["machine"]
    assert machine["recognised"]["relation"] == "equal" and machine["recognised"]["builtin"] == "skx"
    assert machine["borrowed_from"] == "skx"
    topo = machine["topology"]
    assert (topo["sockets"], topo["cores"], topo["threads_per_core"], topo["inferred"]) == (2, 48, 2, False)
    # machines.COUNTERS: 100 s of uptime, every CPU 1% POLL, 4% C1, 5% C1E, 60% C6.
    shares = {s["name"]: s["share"] for s in machine["counters"]["states"]}
    assert shares == pytest.approx({"POLL": 0.01, "C1": 0.04, "C1E": 0.05, "C6": 0.60})
    c6 = next(s for s in machine["counters"]["states"] if s["name"] == "C6")
    assert c6["usage"] == 96 * 3000 and c6["above_ratio"] == pytest.approx(0.1)
    assert len(machine["counters"]["per_cpu"]) == 96
    # Recognition's contract fields; a recognised table keeps its own platform's costs.
    assert (body["based_on"], body["variant"], body["driver"], body["governor"]) == (
        "skx",
        [],
        "intel_idle",
        "menu",
    )
    assert body["family_modelled"] is True
    assert body["table"]["costs"]["tsc_mhz"] == skx_costs()["tsc_mhz"]
    # The page shows the snapshot: the measured C6 share in the counter table.
    page = app_client.get("/platforms/clx96")
    assert page.status_code == 200
    assert 'data-relation="equal"' in page.text and "60.00%" in page.text
    assert '<td id="based-on">skx</td>' in page.text and "96 CPUs (2 × 24 × 2), governor menu" in page.text
    assert "<code>C1:2:2,C1E:10:20,C6:133:600</code>" in page.text


def test_names_are_derived_from_the_cpu_model_and_kept_unique(app_client: Any) -> None:
    first = post_dump(app_client, skx96()).json()["name"]
    second = post_dump(app_client, skx96()).json()["name"]
    assert first.startswith("xeon-platinum-8275cl")
    assert second == (first + "-2" if first == "xeon-platinum-8275cl" else second)
    assert first != second
    taken = post_dump(app_client, skx96(), name=first)
    assert taken.status_code == 409
    assert derive_name(parse_dump(skx96())) == "xeon-platinum-8275cl"


def test_a_variant_and_an_inferred_topology_are_said_so(app_client: Any) -> None:
    text = grep_text(machine_files(SKX_PC6_OFF, 4), HEADER)  # no topology records
    body = post_dump(app_client, text, name="pc6-off").json()
    assert body["machine"]["recognised"]["relation"] == "variant"
    assert (body["based_on"], body["variant"]) == ("skx", ["pc6-off"])
    assert body["machine"]["topology"]["inferred"] is True
    # PC6-off means a package limit of PC0 or PC2: the run takes PC2, and says it is inferred.
    assert body["machine"]["config"]["package"] == {"limit": "PC2"}
    assert any("PC2 is taken (inferred)" in n for n in body["table"]["notes"])


def test_a_pc6_off_machine_shows_the_c6_its_kernel_registers(app_client: Any) -> None:
    # skx_idle_state_table_update(): with package C6 off the kernel registers C6 at 92/276, as the
    # dump shows; the page and the API show that, while the stored kernel rows stay for other limits.
    text = grep_text(machine_files(SKX_PC6_OFF, 96, layout=skx_layout), HEADER)
    post_dump(app_client, text, name="skx-pc6-off")
    body = app_client.get("/api/platforms/skx-pc6-off").json()
    c6 = body["table"]["states"][3]
    assert (c6["name"], c6["exit_latency_us"], c6["target_residency_us"]) == ("C6", 92, 276)
    assert body["intel_idle_table"] == "C1:2:2,C1E:10:20,C6:92:276"
    assert body["table"]["package"]["limited_table"]["C6"]["exit_latency_us"] == 92
    page = app_client.get("/platforms/skx-pc6-off").text
    assert "C6:92:276" in page and "C6 92/276 us" in page
    assert "C6:133:600" not in page and "C6 133/600 us" not in page
    # A run at the machine's limit simulates the same C6; one at PC6 would get the kernel's 133/600.
    run = app_client.post("/api/platforms/skx-pc6-off/simulate").json()
    config = app_client.get(f"/api/runs/{run['id']}").json()["config"]
    assert config["package"]["limit"] == "PC2"
    table = Platform.model_validate(config["platform_table"])
    assert table.under_package_limit("PC2").states[3].exit_latency_us == 92
    assert table.under_package_limit("PC6").states[3].exit_latency_us == 133


def test_disabled_states_become_the_runs_disabled_states(app_client: Any) -> None:
    disabled = {(cpu, 2): 1 for cpu in range(96)}  # C1E disabled on every CPU
    text = grep_text(machine_files(SKX, 96, layout=skx_layout, disabled=disabled), HEADER)
    body = post_dump(app_client, text, name="no-c1e").json()
    assert body["machine"]["disabled_states"] == ["C1E"]
    submitted = app_client.post("/api/platforms/no-c1e/simulate")
    assert submitted.status_code == 202
    config = app_client.get(f"/api/runs/{submitted.json()['id']}").json()["config"]
    assert config["states"]["disabled"] == ["C1E"]
    assert config["platform"] == "no-c1e"
    assert (config["topology"]["sockets"], config["topology"]["threads_per_core"]) == (2, 2)


def test_the_page_simulates_by_post_and_shows_the_run_beside_the_counters(app_client: Any) -> None:
    post_dump(app_client, skx96(), name="page-sim")
    before = app_client.get("/api/runs").json()["total"]
    app_client.get("/platforms/page-sim")
    assert app_client.get("/api/runs").json()["total"] == before  # a page view never creates runs
    r = app_client.post("/platforms/page-sim/simulate", follow_redirects=False)
    assert r.status_code == 303
    assert r.headers["location"].startswith("/platforms/page-sim?run=")
    page = app_client.get(r.headers["location"])
    assert page.status_code == 200 and 'id="sim-status"' in page.text and "queued" in page.text


def _lines(text: str) -> list[str]:
    return text.split("\n")


def line_of(text: str, prefix: str) -> int:
    """1-based number of the first line starting with `prefix`."""
    return next(n for n, ln in enumerate(_lines(text), start=1) if ln.startswith(prefix))


CPU0 = "/sys/devices/system/cpu/cpu0/cpuidle/"
CPU1 = "/sys/devices/system/cpu/cpu1/cpuidle/"
GLOBAL = "/sys/devices/system/cpu/cpuidle/"


NO_NAME = "".join(f"{ln}\n" for ln in _lines(skx96()) if not ln.startswith(CPU0 + "state1/name") and ln)
CONTRADICTION = skx96().replace(CPU1 + "state3/latency:133", CPU1 + "state3/latency:99")
STATES_33 = [SKX[0], *((f"C{i}", f"MWAIT 0x{i:02x}", i, 2 * i, 0) for i in range(1, 33))]
THIRTY_THREE = grep_text(machine_files(STATES_33, 2), HEADER)
BAD_DUMPS = [
    ("random bytes", b"\x00\x01\x02garbage", 1, "binary data"),
    ("a truncated line", skx96().replace("/proc/uptime:", "/proc/up", 1).encode(), 8, "no ':' after a path"),
    ("a state with no name", NO_NAME.encode(), line_of(NO_NAME, CPU0 + "state1/"), "state1 has no name"),
    ("contradictory values", CONTRADICTION.encode(), line_of(CONTRADICTION, CPU1 + "state3/latency"), "133"),
    ("too many CPUs", grep_text(machine_files(SKX, 1025), HEADER).encode(), None, "at most 1024"),
    ("too many states", THIRTY_THREE.encode(), line_of(THIRTY_THREE, CPU0 + "state32/"), "at most 32"),
    ("100k lines, no state", ((GLOBAL + "current_driver:x\n") * 100_000).encode(), None, "no cpuidle state"),
]


@pytest.mark.parametrize(("what", "body", "line", "needle"), BAD_DUMPS, ids=[b[0] for b in BAD_DUMPS])
def test_every_bad_dump_is_a_422_naming_the_line_and_stores_nothing(
    app_client: Any, what: str, body: bytes, line: int | None, needle: str
) -> None:
    before = custom_names(app_client)
    r = post_dump(app_client, body, name="bad-dump")
    assert r.status_code == 422, (what, r.text)
    detail = r.json()["detail"]
    assert len(detail) == 1 and detail[0]["type"] == "dump_invalid"
    assert needle in detail[0]["msg"]
    if line is not None:
        assert detail[0]["loc"] == ["body", "line", line]
        assert detail[0]["msg"].startswith(f"line {line}: ")
    assert custom_names(app_client) == before


def test_the_page_form_takes_a_pasted_dump_and_refuses_a_bad_one(app_client: Any) -> None:
    r = app_client.post(
        "/platforms/import", files={"dump": ("", b"")}, data={"text": skx96(), "name": "pasted"},
        follow_redirects=False,
    )  # fmt: skip
    assert r.status_code == 303 and r.headers["location"] == "/platforms/pasted"
    bad = app_client.post(
        "/platforms/import", files={"dump": ("m.txt", b"nope\n")}, headers={"accept": "text/html"}
    )
    assert bad.status_code == 422 and "line 1" in bad.text


def test_the_import_paths_take_up_to_8_mib_and_other_posts_keep_their_limit(app_client: Any) -> None:
    # A 300-CPU dump is over the default 256 KiB body limit and well under the import's 8 MiB.
    big = grep_text(machine_files(SKX, 300), HEADER)
    assert 256 * 1024 < len(big) < 8 * 1024 * 1024
    assert post_dump(app_client, big, name="big300").status_code == 201
    over = post_dump(app_client, b"x" * (8 * 1024 * 1024 + 1))
    assert over.status_code == 413 and "IDLELAB_IMPORT_MAX_BODY_BYTES" in over.json()["detail"]
    padded = b"{" + b" " * (300 * 1024) + b"}"
    runs = app_client.post("/api/runs", content=padded, headers={"content-type": "application/json"})
    assert runs.status_code == 413


def test_a_1024_cpu_machine_with_its_topology_fits_the_import_limit(app_client: Any) -> None:
    def layout(cpu: int) -> tuple[int, int, str]:  # 2 sockets x 256 cores x 2 threads
        first = cpu % 512
        return first // 256, first % 256, f"{first},{first + 512}"

    files = machine_files(SKX, 1024, layout=layout)
    for cpu in range(1024):  # the lists a real topology/ has too (~3.5 KB per CPU in all)
        package = "0-255,512-767" if cpu % 512 < 256 else "256-511,768-1023"
        for name in ("package_cpus_list", "core_siblings_list", "die_cpus_list"):
            files[f"/sys/devices/system/cpu/cpu{cpu}/topology/{name}"] = package
    body = grep_text(files, HEADER).encode()
    assert len(body) > 3 * 2**20
    r = post_dump(app_client, body, name="big")
    assert r.status_code == 201, r.text[:300]
    assert r.json()["machine"]["config"]["topology"] == {
        "sockets": 2, "cores_per_socket": 256, "threads_per_core": 2, "cpus": 1024
    }  # fmt: skip
