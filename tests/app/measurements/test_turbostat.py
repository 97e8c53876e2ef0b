"""turbostat output: intervals, summary and per-CPU rows, rows that end early, missing cells, bad files.

The text is written here in turbostat's documented layout (tab-separated names, a summary row
with `-` identities, siblings together, core and package columns only on the first CPU of each);
the numbers are chosen so the summaries can be checked by hand.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from app.measurements.turbostat import TurbostatError, TurbostatResult, parse_turbostat

COLUMNS = [
    "Package", "Core", "CPU", "Avg_MHz", "Busy%", "Bzy_MHz", "TSC_MHz", "IRQ", "POLL", "C1", "C1E", "C6",
    "POLL%", "C1%", "C1E%", "C6%", "CPU%c1", "CPU%c6", "CoreTmp", "PkgTmp", "Pkg%pc2", "Pkg%pc6", "PkgWatt",
    "RAMWatt",
]  # fmt: skip
THREAD = COLUMNS.index("CPU%c6")  # a sibling's row stops before the first core column


def tsv(*cells: object) -> str:
    return "\t".join(str(c) for c in cells) + "\n"


def table(
    busy: list[float],
    c1: list[float],
    c6: list[float],
    pc2: list[str],
    pc6: list[str],
    watts: list[str],
    summary: tuple[object, ...],
) -> str:
    """Two packages of one core with two threads: CPUs 0 and 2 in package 0, 1 and 3 in package 1.

    busy/c1: per CPU in row order (0, 2, 1, 3); c6, pc2, pc6, watts: per package. `summary` gives
    the summary row's Busy%, CPU%c1, CPU%c6, Pkg%pc2, Pkg%pc6, PkgWatt.
    """
    out = tsv(*COLUMNS)
    sb, sc1, sc6, spc2, spc6, sw = summary
    out += tsv(
        "-",
        "-",
        "-",
        120,
        sb,
        2400,
        2000,
        900,
        2,
        40,
        10,
        800,
        0.00,
        1.00,
        0.50,
        90.00,
        sc1,
        sc6,
        42,
        45,
        spc2,
        spc6,
        sw,
        20.00,
    )
    for k, (pkg, cpu) in enumerate([(0, 0), (0, 2), (1, 1), (1, 3)]):
        thread = [pkg, 0, cpu, 100, busy[k], 2400, 2000, 200, 0, 10, 2, 200, 0.00, 1.00, 0.50, 90.00, c1[k]]
        if k % 2 == 0:  # the core's and package's first CPU carries their columns
            thread += [c6[pkg], 40, 45, pc2[pkg], pc6[pkg], watts[pkg], 10.00]
        out += tsv(*thread)
    return out


PREAMBLE = (
    "turbostat version 2025.06.08 - Len Brown <lenb@kernel.org>\n"
    "Measurement interval: 5.000 seconds\n"
    "CPUID(0): GenuineIntel 0x16 CPUID levels\n"
    "cpu0: MSR_IA32_POWER_CTL: 0x2904005d (C1E auto-promotion: DISabled)\n"
    "cpu0: MSR_PKG_CST_CONFIG_CONTROL: 0x00000402 (UNlocked, pkg-cstate-limit=2 (pc6n))\n"
    "8 * 100.0 = 800.0 MHz max efficiency frequency\n"
    "current_driver: intel_idle\n"
    "cpu0: POLL: CPUIDLE CORE POLL IDLE\n"
    "cpu0: C1: MWAIT 0x00\n"
    "cpu0: C1E: MWAIT 0x01\n"
    "cpu0: C6: MWAIT 0x20\n"
    "cpu1: C6: MWAIT 0x20\n"
)
# Interval 1 summary, by turbostat's rules: Busy% and CPU%c1 averaged over the 4 CPUs ((10+5+2+1)/4,
# (5+15+3+4)/4), CPU%c6 over the 2 cores, Pkg% over the 2 packages, PkgWatt summed.
INTERVAL_1 = table(
    [10.0, 5.0, 2.0, 1.0], [5.0, 15.0, 3.0, 4.0], [80.0, 90.0], ["30.00", "40.00"], ["20.00", "30.00"],
    ["60.00", "50.00"], (4.50, 6.75, 85.00, 35.00, 25.00, 110.00),
)  # fmt: skip
INTERVAL_2 = table(
    [12.0, 6.0, 3.0, 1.0], [4.0, 14.0, 3.0, 5.0], [78.0, 88.0], ["31.00", "39.00"], ["nan", "(neg)"],
    ["61.00", "51.00"], (5.50, 6.50, 83.00, 35.00, "nan", 112.00),
)  # fmt: skip
OUTPUT = PREAMBLE + INTERVAL_1 + "turbostat: cpu3 jitter 2710 3051\n\n" + INTERVAL_2


def err(text: str | bytes) -> TurbostatError:
    with pytest.raises(TurbostatError) as e:
        parse_turbostat(text.encode() if isinstance(text, str) else text)
    return e.value


def test_intervals_summaries_and_short_rows() -> None:
    r = parse_turbostat(OUTPUT.encode())
    assert r.version == "2025.06.08" and r.interval_s == 5.0
    assert r.cpuidle_states == [
        ("POLL", "CPUIDLE CORE POLL IDLE"), ("C1", "MWAIT 0x00"), ("C1E", "MWAIT 0x01"), ("C6", "MWAIT 0x20"),
    ]  # fmt: skip
    assert r.pkg_cstate_limit == "2 (pc6n)" and r.c1e_promotion is False
    assert len(r.intervals) == 2
    first = r.intervals[0]
    assert first.line == PREAMBLE.count("\n") + 1
    assert [c.cpu for c in first.cpus] == [0, 2, 1, 3]
    assert [(c.package, c.core) for c in first.cpus] == [(0, 0), (0, 0), (1, 0), (1, 0)]
    sibling = first.cpus[1]
    assert "CPU%c1" in sibling.values and "CPU%c6" not in sibling.values  # the row ended early
    assert first.summary is not None and first.summary.cpu is None
    res = r.residency()
    assert res["Busy%"] == pytest.approx((4.50 + 5.50) / 2)
    assert res["CPU%c1"] == pytest.approx((6.75 + 6.50) / 2)
    assert res["CPU%c6"] == pytest.approx((85.0 + 83.0) / 2)
    assert res["Pkg%pc2"] == pytest.approx(35.0)
    assert res["Pkg%pc6"] == pytest.approx(25.0)  # interval 2 printed nan: missing, not zero
    assert res["PkgWatt"] == pytest.approx(111.0)
    assert r.cpu_means("Busy%") == {0: 11.0, 1: 2.5, 2: 5.5, 3: 1.0}
    assert r.cpu_means("CPU%c6") == {0: 79.0, 1: 89.0}  # only the cores' first CPUs print it
    assert r.intervals[1].cpus[2].values["Pkg%pc6"] is None  # (neg)
    assert "RAMWatt" in r.columns()
    assert TurbostatResult.model_validate_json(r.model_dump_json()) == r  # what the app stores comes back


def test_command_mode_without_preamble() -> None:
    text = "5.004 sec\n" + INTERVAL_1
    r = parse_turbostat(text.encode())
    assert r.interval_s == 5.004 and r.version is None and len(r.intervals) == 1


def test_summary_only_output() -> None:
    # --Summary: no identity columns, one row per interval under one header.
    text = tsv("Avg_MHz", "Busy%", "Bzy_MHz", "CPU%c1", "CPU%c6", "Pkg%pc6", "PkgWatt")
    text += tsv(50, 2.00, 2500, 10.00, 88.00, 40.00, 100.00) + tsv(
        52, 4.00, 2500, 12.00, 84.00, "**.**", 104.00
    )
    r = parse_turbostat(text.encode())
    assert len(r.intervals) == 2 and all(iv.cpus == [] for iv in r.intervals)
    assert r.residency() == {
        "Busy%": 3.0, "CPU%c1": 11.0, "CPU%c6": 86.0, "Pkg%pc2": None, "Pkg%pc6": 40.0, "PkgWatt": 102.0,
    }  # fmt: skip


def test_empty_and_binary() -> None:
    e = err("")
    assert (e.line, e.column) == (None, None) and "empty" in e.reason
    e = err(b"turbostat version 1\nBusy%\tCPU%c1\n1.0\t\x002.0\n")
    assert (e.line, e.column) == (3, 5) and "binary" in e.reason
    e = err(b"\xff\xd8\xff\xe0 a jpeg\n")
    assert (e.line, e.column) == (1, 1) and "UTF-8" in e.reason


def test_no_table() -> None:
    e = err("hello\nthis is not turbostat\n")
    assert e.line is None and "no turbostat table" in e.reason
    for odd in ("5.0.0 sec\n", "... sec\n", "Measurement interval: 1.2.3 seconds\n"):  # not numbers
        assert "no turbostat table" in err(odd).reason
    e = err(PREAMBLE + tsv(*COLUMNS))
    assert e.line == PREAMBLE.count("\n") + 1 and "no rows" in e.reason


def test_long_and_short_lines() -> None:
    lines = OUTPUT.split("\n")
    header_at = PREAMBLE.count("\n")  # 0-based index of the first column-name line
    long = lines.copy()
    long[header_at + 2] += "\t7"  # cpu0's row, one field too many
    e = err("\n".join(long))
    assert (e.file, e.line, e.column) == ("turbostat.txt", header_at + 3, len(COLUMNS) + 1)
    assert "long line" in e.reason
    short = lines.copy()
    short[header_at + 3] = "\t".join(short[header_at + 3].split("\t")[: THREAD - 1])  # cpu2 without CPU%c1
    e = err("\n".join(short))
    assert (e.line, e.column, e.column_name) == (header_at + 4, THREAD, "CPU%c1")
    assert "short line" in e.reason
    summary_short = lines.copy()
    summary_short[header_at + 1] = "\t".join(summary_short[header_at + 1].split("\t")[:-1])
    e = err("\n".join(summary_short))
    assert (e.line, e.column, e.column_name) == (header_at + 2, len(COLUMNS), "RAMWatt")
    assert "summary row" in e.reason


def test_bad_cells_and_lines() -> None:
    lines = OUTPUT.split("\n")
    header_at = PREAMBLE.count("\n")
    bad = lines.copy()
    cells = bad[header_at + 2].split("\t")
    cells[COLUMNS.index("Busy%")] = "busy"
    bad[header_at + 2] = "\t".join(cells)
    e = err("\n".join(bad))
    assert (e.line, e.column, e.column_name) == (header_at + 3, 5, "Busy%")
    bad = lines.copy()
    bad.insert(header_at + 3, "something else entirely")
    e = err("\n".join(bad))
    assert e.line == header_at + 4 and "not a turbostat row" in e.reason
    e = err(tsv("Busy%", "Busy%") + tsv(1, 2))
    assert (e.line, e.column) == (1, 2) and "repeated" in e.reason
    e = err(tsv("Busy%", "CPU") + tsv(2, "x1"))
    assert (e.line, e.column, e.column_name) == (2, 2, "CPU")


# ----------------------------------------------------------------------------------------- properties


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=2000))
def test_any_bytes_give_a_result_or_a_turbostat_error(data: bytes) -> None:
    try:
        parse_turbostat(data)
    except TurbostatError:
        pass


@settings(max_examples=200, deadline=None)
@given(st.integers(min_value=0, max_value=len(OUTPUT)), st.binary(max_size=20))
def test_output_cut_or_spliced_anywhere_gives_a_result_or_a_turbostat_error(cut: int, junk: bytes) -> None:
    data = OUTPUT.encode()
    for d in (data[:cut], data[:cut] + junk + data[cut:]):
        try:
            parse_turbostat(d)
        except TurbostatError as e:
            assert e.line is None or e.line >= 1
