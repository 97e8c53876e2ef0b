"""wult raw results: units, classes by requested and reached state, IntrOff, archives, and every bad file.

The files are written here from wult's documented layout (wult.yml's columns, info.yml's keys,
two-decimal percentages); the numbers are made up so that each expectation can be checked by hand.
"""

from __future__ import annotations

import io
import random
import tarfile
import zipfile

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from app.measurements.wult import P9999_SAMPLES, WultError, parse_wult
from app.measurements.wult_files import parse_wult_archive, parse_wult_files
from engine.calibrate import estimate_h_plus_e
from engine.summary import HIST_EDGES

# The columns of a wult 1.3 result on a Xeon with CC1, CC6, PC2 and PC6 counters.
COLUMNS = "WakeLatency,SilentTime,IntrLatency,IntrOff,LDist,ReqCState,CC0%,CC1Derived%,CC1%,CC6%,PC2%,PC6%"
HEADER = COLUMNS + ",SMICnt,NMICnt"
INFO = (
    "cpu: 3\n"
    "date: 01 Dec 2026\n"
    "devdescr: Intel I210 NIC\n"
    "devid: '0000:3d:00.0'\n"
    "duration: 1h 0m 0s\n"
    "format_version: '1.3'\n"
    "reportid: clx-c6-nic\n"
    "resolution: 1\n"
    "toolname: wult\n"
    "toolver: 1.12.40\n"
)


def row(
    wake: float, intr: float, off: int, ldist: float, req: str, cc1: float, cc6: float, pc2: float, pc6: float
) -> str:
    """One datapoint: SilentTime is LDist less 10 us, CC0% a constant, CC1Derived% by wult's rule."""
    cc0 = 0.30
    cc1d = max(0.0, 100 - cc0 - cc6 - pc2 - pc6)
    return (
        f"{wake},{ldist - 10},{intr},{off},{ldist},{req},{cc0:.2f},{cc1d:.2f},{cc1:.2f},{cc6:.2f},"
        f"{pc2:.2f},{pc6:.2f},0,0"
    )


ROWS = [
    row(100.5, 103.0, 1, 2000.0, "C6", 0.10, 95.00, 40.00, 50.00),  # package reached PC6
    row(60.25, 62.75, 1, 1500.0, "C6", 0.20, 96.00, 80.00, 0.00),  # core C6, package only PC2
    row(3.0, 5.5, 1, 1000.0, "C6", 90.00, 0.00, 0.00, 0.00),  # asked C6, core stayed C1 (a busy sibling)
    row(5.0, 2.0, 0, 500.0, "C1", 99.00, 0.00, 0.00, 0.00),  # IRQ_ENABLE C1: the handler ran first
    row(1.5, 0.75, 0, 100.0, "POLL", 0.00, 0.00, 0.00, 0.00),  # POLL: only CC0% is ever non-zero
]


def csv(*rows: str, header: str = HEADER) -> bytes:
    return ("\n".join([header, *rows]) + "\n").encode()


def expect(err_of: object, file: str, line: int | None, column: int | None, *words: str) -> WultError:
    assert isinstance(err_of, WultError)
    assert (err_of.file, err_of.line, err_of.column) == (file, line, column), str(err_of)
    for w in words:
        assert w in err_of.reason, err_of.reason
    return err_of


def error(datapoints: bytes | None, info: bytes | None = INFO.encode()) -> WultError:
    with pytest.raises(WultError) as e:
        parse_wult(datapoints, info)
    return e.value


# --------------------------------------------------------------------------------------------- good


def test_units_classes_and_info() -> None:
    m = parse_wult(csv(*ROWS), INFO.encode())
    assert m.count == 5
    assert m.wake_latency_ns.tolist() == [100_500, 60_250, 3_000, 5_000, 1_500]  # us -> ns
    assert m.intr_latency_ns is not None and m.intr_latency_ns.tolist() == [
        103_000,
        62_750,
        5_500,
        2_000,
        750,
    ]
    assert m.ldist_ns is not None and m.ldist_range_ns() == (100_000, 2_000_000)
    assert m.ldist_range_ns("C6") == (1_000_000, 2_000_000)
    assert m.req_names == ("POLL", "C1", "C6")
    info = m.info
    assert (info.cpu, info.devid, info.delivery, info.format_version) == (3, "0000:3d:00.0", "nic", "1.3")
    assert (info.toolver, info.reportid, info.resolution_ns) == ("1.12.40", "clx-c6-nic", 1)
    reached = [m.reached_names[k] for k in m.reached_index]
    assert reached == ["CC6+PC6", "CC6+PC2", "CC1", "CC1", "CC0"]
    classes = {(c.req_cstate, c.reached): c for c in m.classes}
    assert classes[("C6", "any")].count == 3
    assert classes[("C6", "CC6+PC6")].count == 1 and classes[("C6", "CC6+PC6")].intr_off is True
    assert classes[("C1", "CC1")].intr_off is False
    assert not any(c.enough_for_p9999 for c in m.classes)
    assert any("too few for a 99.99th percentile" in n for n in m.notes)
    assert m.residency_pct["PC6%"].tolist() == [50.0, 0.0, 0.0, 0.0, 0.0]


def test_latency_stats_in_the_simulations_shape() -> None:
    m = parse_wult(csv(*ROWS), INFO.encode())
    wake = m.latency_stats("WakeLatency", "C6")
    assert wake is not None and wake.count == 3
    assert (wake.p50_ns, wake.max_ns) == (60_250, 100_500)  # of 3_000, 60_250, 100_500
    assert wake.histogram.edges_ns == HIST_EDGES and sum(wake.histogram.counts) == 3
    intr = m.latency_stats("IntrLatency", "C6", "CC6+PC6")
    assert intr is not None and intr.count == 1 and intr.p50_ns == 103_000
    header = "WakeLatency,LDist,ReqCState"
    assert (
        parse_wult(csv("10.0,500.0,C6", header=header), INFO.encode()).latency_stats("IntrLatency", "C6")
        is None
    )


def test_conditions_for_simulate_this() -> None:
    c = parse_wult(csv(*ROWS), INFO.encode()).conditions()
    assert (c.cpu, c.delivery) == (3, "nic")
    assert c.requested == {"POLL": 1, "C1": 1, "C6": 3}
    assert c.intr_off == {"POLL": False, "C1": False, "C6": True}
    assert c.ldist_us == (100.0, 1000.0, 2000.0)  # LDist 2000, 1500, 1000, 500, 100 us


def test_exit_latency_branches_on_intr_off() -> None:
    m = parse_wult(csv(*ROWS), INFO.encode())
    c6, what = m.exit_latency_ns("C6", "CC6+PC6")
    assert c6.tolist() == [100_500] and "WakeLatency of IntrOff=1" in what
    # C1 with interrupts on: WakeLatency (5 us) holds the handler; IntrLatency (2 us) is exit + entry.
    c1, what = m.exit_latency_ns("C1")
    assert c1.tolist() == [2_000] and "IntrLatency of IntrOff=0" in what
    assert m.mask("C6", "nowhere").sum() == 0
    with pytest.raises(KeyError, match="C3"):
        m.mask("C3")


def test_per_class_samples_and_h_plus_e() -> None:
    m = parse_wult(csv(*ROWS), INFO.encode())
    assert m.wake_latency("C6").tolist() == [100_500, 60_250, 3_000]
    intr = m.intr_latency("C6", "CC1")
    assert intr is not None and intr.tolist() == [5_500]
    assert m.intr_off is not None and m.intr_latency_ns is not None
    # The three IntrOff=1 rows (all C6) each took 2.5 us from after_idle() to the handler.
    est = estimate_h_plus_e(m.wake_latency_ns, m.intr_latency_ns, m.intr_off)
    assert est.count == 3 and est.median_ns == pytest.approx(2_500)


def test_format_1_0_is_integer_nanoseconds_and_old_names_are_accepted() -> None:
    header = (
        "WakeLatency,SilentTime,IntrLatency,IntrOff,LDist,ReqCState,CC0%,DerivedCC1%,CC6%,PC2%,PC6%,SMICnt"
    )
    header += ",NMICnt"
    rows = ["4180,1746303,7903,1,1757788,C6,0.33,0.00,92.63,77.08,0.00,0,0"]
    info = INFO.replace("format_version: '1.3'", "format_version: '1.0'").replace("cpu: 3", "cpunum: 5")
    m = parse_wult(csv(*rows, header=header), info.encode())
    assert m.wake_latency_ns.tolist() == [4180.0]
    assert m.info.cpu == 5
    assert "CC1Derived%" in m.columns and "DerivedCC1%" not in m.columns
    assert m.reached_names == ("CC6+PC2",)


def test_true_false_intr_off_crlf_and_trailing_blank_lines() -> None:
    cells = [r.split(",") for r in ROWS]
    rows = [",".join([*c[:3], "True" if c[3] == "1" else "False", *c[4:]]) for c in cells]  # IntrOff
    data = csv(*rows).replace(b"\n", b"\r\n") + b"\r\n\n"
    m = parse_wult(data, INFO.encode())
    assert m.intr_off is not None and m.intr_off.tolist() == [True, True, True, False, False]
    assert m.wake_latency_ns.tolist() == parse_wult(csv(*ROWS), INFO.encode()).wake_latency_ns.tolist()


def test_cc1_from_the_derived_column_when_there_is_no_hardware_counter() -> None:
    header = HEADER.replace(",CC1%,", ",")
    rows = ["2.0,100.0,4.4,1,110.0,C1E,0.90,99.10,0.00,0.00,0.00,0,0"]
    assert parse_wult(csv(*rows, header=header), INFO.encode()).reached_names == ("CC1",)


def test_tdt_delivery_and_missing_columns_are_noted() -> None:
    header = "WakeLatency,LDist,ReqCState"
    info = INFO.replace("devid: '0000:3d:00.0'", "devid: tdt")
    m = parse_wult(csv("10.0,500.0,C6", "12.0,800.0,C6", header=header), info.encode())
    assert m.info.delivery == "tdt"
    assert m.intr_latency_ns is None and m.intr_off is None
    assert m.reached_names == ("unknown",)
    assert any("no IntrOff column" in n for n in m.notes)
    assert any("no C-state residency columns" in n for n in m.notes)
    samples, what = m.exit_latency_ns("C6")
    assert samples.tolist() == [10_000, 12_000] and "assumed" in what


def test_a_class_of_10_to_the_5_is_enough_for_a_p9999() -> None:
    rng = np.random.default_rng(1)
    wake = rng.uniform(50, 100, P9999_SAMPLES)
    rows = [f"{w:.3f},1000.0,{w + 3:.3f},1,1010.0,C6,0.30,0.00,0.10,95.00,40.00,50.00,0,0" for w in wake]
    rows.append(row(3.0, 5.5, 1, 1000.0, "C6", 90.00, 0.00, 0.00, 0.00))
    m = parse_wult(csv(*rows), INFO.encode())
    classes = {(c.req_cstate, c.reached): c for c in m.classes}
    assert classes[("C6", "CC6+PC6")].enough_for_p9999
    assert classes[("C6", "any")].enough_for_p9999
    assert not classes[("C6", "CC1")].enough_for_p9999


def test_info_yml_nested_blocks_comments_and_quotes() -> None:
    info = "---\n# made by hand\n" + INFO + 'stats:\n  turbostat: true\n- item\nreportid2: "a # b"\n'
    m = parse_wult(csv(*ROWS), info.encode())
    assert m.info.devid == "0000:3d:00.0"


# ----------------------------------------------------------------------------------------- archives


def zip_of(files: dict[str, bytes]) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, data in files.items():
            zf.writestr(name, data)
    return buf.getvalue()


def tar_of(files: dict[str, bytes], mode: str = "w:gz") -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode=mode) as tf:  # type: ignore[call-overload]
        for name, data in files.items():
            ti = tarfile.TarInfo(name)
            ti.size = len(data)
            tf.addfile(ti, io.BytesIO(data))
    return buf.getvalue()


RESULT = {"wult-clx-c6/datapoints.csv": csv(*ROWS), "wult-clx-c6/info.yml": INFO.encode()}


@pytest.mark.parametrize("pack", [zip_of, tar_of, lambda f: tar_of(f, "w")])
def test_archives_give_the_same_measurement(pack: object) -> None:
    data = pack(RESULT)  # type: ignore[operator]
    m = parse_wult_archive(data, "result")
    assert m.wake_latency_ns.tolist() == parse_wult(csv(*ROWS), INFO.encode()).wake_latency_ns.tolist()
    assert parse_wult_files({"result.bin": data}).count == 5
    assert parse_wult_files({"x/datapoints.csv": csv(*ROWS), "x/info.yml": INFO.encode()}).count == 5


def test_archive_errors() -> None:
    with pytest.raises(WultError) as e:
        parse_wult_archive(zip_of({"r/datapoints.csv": csv(*ROWS)}), "r.zip")
    expect(e.value, "r.zip:r/info.yml", None, None, "missing info.yml")
    with pytest.raises(WultError) as e:
        parse_wult_archive(b"just some text, not an archive", "r.tgz")
    expect(e.value, "r.tgz", None, None, "not a zip or tar")
    two = RESULT | {"b/datapoints.csv": csv(*ROWS), "b/info.yml": INFO.encode()}
    with pytest.raises(WultError) as e:
        parse_wult_archive(zip_of(two), "two.zip")
    expect(e.value, "two.zip", None, None, "several wult results")
    with pytest.raises(WultError) as e:
        parse_wult_archive(zip_of({"r/info.yml": INFO.encode()}), "r.zip")
    expect(e.value, "r.zip", None, None, "no datapoints.csv")
    # A CSV error inside an archive names the member.
    bad = {"r/datapoints.csv": csv(*ROWS, "1.0,2.0"), "r/info.yml": INFO.encode()}
    with pytest.raises(WultError) as e:
        parse_wult_archive(tar_of(bad), "r.tgz")
    expect(e.value, "r.tgz:r/datapoints.csv", 7, 3, "short line")


@pytest.mark.parametrize("fmt", ["zip", "w:gz", "w:xz", "w:bz2"])
def test_damaged_archives_give_a_wult_error(fmt: str) -> None:
    data = zip_of(RESULT) if fmt == "zip" else tar_of(RESULT, fmt)
    rng = random.Random(fmt)  # a fixed set of damages per format
    for trial in range(300):
        b = bytearray(data)
        if trial % 3 == 0:
            b = b[: rng.randrange(len(b))]  # cut short
        else:
            for _ in range(rng.randint(1, 4)):  # bytes flipped, in the headers or the compressed data
                b[rng.randrange(len(b))] = rng.randrange(256)
        try:
            parse_wult_archive(bytes(b), "damaged")
        except WultError:
            pass


# ----------------------------------------------------------------------------------------- bad files


def test_short_and_long_lines_name_line_and_column() -> None:
    short = ROWS[2].rsplit(",", 1)[0]  # 13 fields
    err = expect(error(csv(ROWS[0], ROWS[1], short)), "datapoints.csv", 4, 14, "short line: 13 fields")
    assert err.column_name == "NMICnt"
    assert str(err) == "datapoints.csv, line 4, column 14 (NMICnt): short line: 13 fields, the header has 14"
    expect(error(csv(ROWS[0], ROWS[1] + ",7")), "datapoints.csv", 3, 15, "long line")


def test_empty_and_binary_files() -> None:
    expect(error(b""), "datapoints.csv", None, None, "empty")
    expect(error(b"\n \n"), "datapoints.csv", None, None, "empty")
    expect(error(csv()), "datapoints.csv", None, None, "only its header")
    data = csv(*ROWS)
    second = data.index(b"\n") + 1
    binary = data[: second + 4] + b"\x00\x01" + data[second + 6 :]
    expect(error(binary), "datapoints.csv", 2, 5, "binary")
    expect(error(csv(*ROWS) + b"\xc3\x28,1\n"), "datapoints.csv", 7, 1, "not UTF-8")
    expect(error(csv(*ROWS), b"\x89PNG\r\n\x1a\n\x00"), "info.yml", 3, 1, "binary")
    expect(error(csv(ROWS[0], "", ROWS[1])), "datapoints.csv", 3, None, "empty line")


def test_missing_info_yml() -> None:
    expect(error(csv(*ROWS), None), "info.yml", None, None, "missing info.yml")
    with pytest.raises(WultError) as e:
        parse_wult_files({"datapoints.csv": csv(*ROWS)})
    expect(e.value, "info.yml", None, None, "missing info.yml")


def test_unknown_units() -> None:
    info = INFO.replace("format_version: '1.3'", "format_version: '2.0'")
    expect(error(csv(*ROWS), info.encode()), "info.yml", 6, 17, "unknown units", "'2.0'")
    info = INFO.replace("format_version: '1.3'\n", "")
    expect(error(csv(*ROWS), info.encode()), "info.yml", None, None, "no format_version", "units")


def test_bad_cells_name_their_column() -> None:
    bad = ROWS[1].replace("60.25", "fast", 1)
    err = expect(error(csv(ROWS[0], bad)), "datapoints.csv", 3, 1, "expected a number")
    assert err.column_name == "WakeLatency"
    expect(error(csv(ROWS[3].replace(",0,500.0,", ",2,500.0,"))), "datapoints.csv", 2, 4, "0 or 1")
    expect(error(csv(ROWS[0].replace("95.00", "150.00"))), "datapoints.csv", 2, 10, "percentage")
    expect(error(csv(ROWS[0].replace("100.5", "-1.0"))), "datapoints.csv", 2, 1, "negative")
    expect(error(csv(ROWS[0].replace("100.5", "nan"))), "datapoints.csv", 2, 1, "finite")
    expect(error(csv(ROWS[0].replace("100.5", "1e20"))), "datapoints.csv", 2, 1, "beyond any wake-up")
    expect(error(csv(ROWS[0].replace(",C6,", ",C 6,"))), "datapoints.csv", 2, 6, "C-state name")
    expect(error(csv(ROWS[0], ROWS[1][: -len("0,0")] + "1.5,0")), "datapoints.csv", 3, 13, "a count")
    # The first bad cell in reading order is the one named, whichever check finds it.
    two_bad = ROWS[2].replace("5.5", "x").replace("90.00", "101.00")
    expect(error(csv(ROWS[0], ROWS[1], two_bad, ROWS[3])), "datapoints.csv", 4, 3, "expected a number")


def test_too_many_requested_states() -> None:
    rows = [row(10.0, 12.0, 1, 100.0, f"C{k}", 0.0, 90.0, 0.0, 0.0) for k in range(40)]
    expect(error(csv(*rows)), "datapoints.csv", 34, 6, "more than 32 different requested states")


def test_header_problems() -> None:
    expect(error(csv(header="SilentTime,LDist")), "datapoints.csv", 1, None, "no WakeLatency column")
    expect(error(csv(header=HEADER + ",LDist")), "datapoints.csv", 1, 15, "repeated")


def test_info_yml_problems() -> None:
    expect(
        error(csv(*ROWS), b"toolname: ndl\nformat_version: '1.3'\n"), "info.yml", 1, 11, "not a wult result"
    )
    expect(error(csv(*ROWS), b"format_version: '1.3'\nthis is not yaml\n"), "info.yml", 2, 1, "key: value")
    expect(error(csv(*ROWS), b"format_version: '1.3'\ncpu: three\n"), "info.yml", 2, 6, "integer")
    expect(error(csv(*ROWS), b"format_version: '1.3'\nformat_version: '1.2'\n"), "info.yml", 2, 1, "repeated")


# ----------------------------------------------------------------------------------------- properties


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=2000), st.binary(max_size=300))
def test_any_bytes_give_a_measurement_or_a_wult_error(datapoints: bytes, info: bytes) -> None:
    for d, i in ((datapoints, info), (datapoints, INFO.encode()), (csv(*ROWS), info)):
        try:
            parse_wult(d, i)
        except WultError:
            pass
    try:
        parse_wult_archive(datapoints, "upload")
    except WultError:
        pass


@settings(max_examples=200, deadline=None)
@given(st.integers(min_value=0, max_value=len(csv(*ROWS))), st.binary(max_size=20))
def test_a_result_cut_or_spliced_anywhere_gives_a_measurement_or_a_wult_error(cut: int, junk: bytes) -> None:
    data = csv(*ROWS)
    for d in (data[:cut], data[:cut] + junk + data[cut:]):
        try:
            parse_wult(d, INFO.encode())
        except WultError as e:
            assert e.line is None or e.line >= 1


def test_nanoseconds_under_a_microsecond_format_are_flagged_as_implausible() -> None:
    assert not any("implausible" in n for n in parse_wult(csv(*ROWS), INFO.encode()).notes)
    # The same C1 and C6 wake-ups written in ns while format 1.3 means us: C1 reads 1,300 us.
    rows = [row(1300.0, 1700.0, 0, 500_000.0, "C1", 99.0, 0.0, 0.0, 0.0)] * 3
    rows += [row(60250.0, 62750.0, 1, 1_500_000.0, "C6", 0.2, 96.0, 80.0, 0.0)] * 3
    notes = parse_wult(csv(*rows), INFO.encode()).notes
    (c1,) = [n for n in notes if n.startswith("implausible WakeLatency: C1's")]
    assert "1,300 us (over 200 us)" in c1 and "1000 times too large" in c1
    (c6,) = [n for n in notes if n.startswith("implausible WakeLatency: C6's")]
    assert "60,250 us (over 5,000 us)" in c6
    # And microseconds under format 1.0 (ns): C6's 60 "ns" is below any wake from C6.
    ns_info = INFO.replace("format_version: '1.3'", "format_version: '1.0'").encode()
    notes = parse_wult(csv(*[row(0.03, 0.05, 1, 1500.0, "C6", 0.2, 96.0, 80.0, 0.0)] * 2), ns_info).notes
    assert any("C6's median reads 0.0 ns" in n and "1000 times too small" in n for n in notes), notes


def test_percentiles_from_few_samples_are_flagged() -> None:
    m = parse_wult(csv(*ROWS), INFO.encode())
    c6 = next(c for c in m.classes if (c.req_cstate, c.reached) == ("C6", "any"))
    assert c6.count == 3 and c6.thin_percentiles == ("p90", "p99", "p99.9", "p99.99")
    assert any(n.startswith("C6: 3 datapoint(s): too few for its p90, p99") for n in m.notes)
    many = parse_wult(csv(*[ROWS[3]] * 150), INFO.encode())
    (c1,) = [c for c in many.classes if c.reached == "any"]
    assert c1.thin_percentiles == ("p99.9", "p99.99")
    assert not any(n.startswith("C1:") for n in many.notes)  # a p99 from 150 samples is one
