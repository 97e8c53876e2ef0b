"""The pasteable reports (app/compare/report.py): the kernel test robot's layout, checked byte for
byte against a real robot mail (tests/data/robot/), and Markdown."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from app.compare.report import (
    ReportSide,
    format_change,
    format_stddev,
    format_value,
    render_markdown,
    render_text,
    robot_table,
)
from app.compare.stats import (
    MetricComparison,
    MetricSpec,
    PairComparison,
    Side,
    SideSummary,
    Significance,
    compare_sides,
)

ROBOT = Path(__file__).resolve().parents[2] / "data" / "robot"
MAIL = "202508251419.d8117ed7-lkp@intel.com"


def _from_figures(row: list[Any]) -> MetricComparison:
    name, unit, base_mean, base_pct, change, other_mean, other_pct = row
    return MetricComparison(
        key=name,
        base=SideSummary(3, base_mean, None, base_pct),
        other=SideSummary(3, other_mean, None, other_pct),
        change=change,
        change_unit=unit,
        ci95=None,
        ci95_method=None,
        ci95_reason=None,
        test=Significance("welch_t", 0.001, 0.001),
        verdict="higher" if change > 0 else "lower",  # the robot lists changed metrics only
    )


def _mail() -> tuple[dict[str, Any], PairComparison]:
    data = json.loads((ROBOT / f"{MAIL}.json").read_text(encoding="utf-8"))
    base, other = (s["id"] for s in data["sides"])
    return data, PairComparison(base, other, False, tuple(_from_figures(r) for r in data["rows"]))


def test_the_robots_table_byte_for_byte() -> None:
    data, pair = _mail()
    table = robot_table(
        [pair],
        sides=[ReportSide(**s) for s in data["sides"]],
        parameters=dict(data["parameters"]),
    )
    golden = (ROBOT / f"{MAIL}.txt").read_bytes()
    assert table.encode("utf-8") == golden


def test_the_golden_file_is_the_mails_own_header() -> None:
    """Guards the golden file itself: its header lines are the ones every robot table has."""
    lines = (ROBOT / f"{MAIL}.txt").read_text(encoding="utf-8").split("\n")
    assert lines[0] == "=" * 89
    assert lines[4] == "commit: "
    assert lines[10] == "         %stddev     %change         %stddev"
    assert lines[11] == "             \\          |                \\  "


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (0.5, "      0.50"),
        (999.994, "    999.99"),
        (1000.0, "      1000"),
        (8181.9, "      8181"),
        (100_000_000, " 100000000"),
        (100_000_001, "     1e+08"),
        (9.124e9, " 9.124e+09"),
        (-12.5, "    -12.50"),
        (None, "       n/a"),
    ],
)
def test_values_in_ten_characters(value: float | None, text: str) -> None:
    assert format_value(value) == text


@pytest.mark.parametrize(
    ("pct", "text"),
    [(None, "      "), (2.0, "      "), (2.01, " ±  2%"), (23.9, " ± 23%"), (146.0, " ±146%")],
)
def test_stddev_shown_above_two_percent(pct: float | None, text: str) -> None:
    assert format_stddev(pct) == text


@pytest.mark.parametrize(
    ("change", "unit", "text"),
    [
        (14.6, "%", "     +14.6% "),
        (-0.07, "pp", "      -0.1  "),
        (0.0, "pp", "      +0.0  "),
        (123456.0, "%", "  +1.2e+05% "),
        (None, "%", "       n/a% "),
    ],
)
def test_changes_in_twelve_characters(change: float | None, unit: str, text: str) -> None:
    assert format_change(change, unit) == text


ENERGY = MetricSpec("energy.joules", "%", "down")
BUSY = MetricSpec("turbostat.Busy%", "pp")
C6 = MetricSpec("cpuidle.C6.usage", "%")


def _pairs(n_others: int = 1) -> list[PairComparison]:
    """Energy +20% (exact), Busy% +3 pp (Welch, significant), C6 usage unchanged."""
    base = Side("run-a", [1, 2, 3], {ENERGY.key: [5, 5, 5], BUSY.key: [1, 2, 3], C6.key: [100, 110, 90]})
    other = Side("run-b", [4, 5, 6], {ENERGY.key: [6, 6, 6], BUSY.key: [4, 5, 6], C6.key: [101, 109, 90]})
    return compare_sides([ENERGY, BUSY, C6], [base] + [other] * n_others)


def test_rows_with_a_verdict_first_the_rest_only_with_all() -> None:
    pairs = _pairs()
    rows = robot_table(pairs).split("\n")[9:]
    assert rows[0] == "      5.00           +20.0%       6.00        energy.joules"
    assert rows[1] == "      2.00 ± 50%      +3.0        5.00 ± 20%  turbostat.Busy%"
    assert rows[2] == ""  # the table's end
    everything = robot_table(pairs, all=True).split("\n")[9:]
    assert everything[2] == ""
    assert everything[3] == "    100.00 ± 10%      +0.0%     100.00 ±  9%  cpuidle.C6.usage"


def test_without_parameters_the_header_starts_at_commit() -> None:
    lines = robot_table(_pairs(), sides=[ReportSide("run-a", "menu"), ReportSide("run-b")]).split("\n")
    assert lines[:7] == [
        "=" * 89,
        "commit: ",
        '  run-a ("menu")',
        "  run-b",
        "",
        "           run-a                       run-b ",
        "---------------- --------------------------- ",
    ]


def test_more_sides_add_columns() -> None:
    lines = robot_table(_pairs(2), names={ENERGY.key: "energy.J"}).split("\n")
    assert lines[8] == "         %stddev     %change         %stddev     %change         %stddev"
    assert lines[9] == "             \\          |                \\          |                \\  "
    assert lines[10] == "      5.00           +20.0%       6.00           +20.0%       6.00        energy.J"


def test_text_footer_names_the_link_the_versions_and_the_rule() -> None:
    text = render_text(
        _pairs(),
        link="http://127.0.0.1:8000/compare?ids=run-a,run-b",
        versions={"idlelab": "0.1.0", "engine": "9"},
    )
    footer = text.rsplit("\n\n", 1)[1]
    assert footer.split("\n") == [
        "2 of 3 metrics changed: significant after Benjamini-Hochberg at 5% over 2 tests and at or",
        "above each metric's practical threshold; the others are left out.",
        "Compare: http://127.0.0.1:8000/compare?ids=run-a,run-b",
        "Versions: idlelab 0.1.0, engine 9",
        "",
    ]
    assert text.startswith(robot_table(_pairs()))
    warned = render_text(_pairs(), warnings=["CPU counts differ: 96 against 128", "engine versions differ"])
    assert warned.split("\n")[:3] == [
        "Warning: CPU counts differ: 96 against 128",
        "Warning: engine versions differ",
        "",
    ]
    assert warned.split("\n", 3)[3].startswith(robot_table(_pairs()))


def test_markdown_tables_and_escaping() -> None:
    md = render_markdown(
        _pairs(),
        sides=[ReportSide("run-a", "C1E *on*"), ReportSide("run-b", "C1E off")],
        parameters={"platform": "skx", "duration_ms": "1000"},
        link="http://h/compare?ids=run-a,run-b",
        versions={"engine": "9"},
        warnings=["durations differ: 1000 ms against 200 ms"],
        all=True,
    )
    lines = md.split("\n")
    assert lines[0] == '### run-b ("C1E off") against run-a ("C1E \\*on\\*")'
    assert lines[2] == "> **Warning:** durations differ: 1000 ms against 200 ms"
    assert lines[4] == "`platform=skx`, `duration_ms=1000`"
    assert lines[6] == "| metric | run-a | change | 95% CI | p (BH) | run-b | verdict |"
    assert lines[8] == "| `energy.joules` | 5.00 | +20.0% | [+20.0%, +20.0%] | exact | 6.00 | worse |"
    assert lines[9].startswith(
        "| `turbostat.Busy%` | 2.00 ± 50% | +3.0 pp | [+0.73, +5.27] pp | 0.0426 | 5.00 ± 20% |"
    )
    assert lines[9].endswith(" higher |")
    assert "#### Without a significant change" in lines
    assert any(line.startswith("| `cpuidle.C6.usage` | 100.00 ± 10% | +0.0% |") for line in lines)
    assert "[Compare](http://h/compare?ids=run-a,run-b)" in lines
    assert lines[-2] == "Versions: engine `9`"


def test_fewer_than_three_repeats_show_no_verdict() -> None:
    base = Side("a", [1, 2], {ENERGY.key: [5, 6]})
    other = Side("b", [3, 4], {ENERGY.key: [7, 8]})
    pairs = compare_sides([ENERGY], [base, other])
    assert robot_table(pairs).split("\n")[9] == ""  # no row has a verdict
    md = render_markdown(pairs, all=True)
    assert "No metric changed significantly." in md
    assert "| `energy.joules` | 5.50 ± 12% | +36.4% | n/a | n/a | 7.50 ± 9% | n/a |" in md


def test_pairs_must_share_a_base_and_metrics() -> None:
    a, b = _pairs(1)[0], _pairs(1)[0]
    moved = PairComparison("other-base", b.other_id, b.paired, b.metrics)
    with pytest.raises(ValueError, match=r"pairs\[1\]\.base_id"):
        robot_table([a, moved])
    with pytest.raises(ValueError, match=r"pairs\[1\]\.metrics"):
        robot_table([a, PairComparison(a.base_id, "x", False, a.metrics[:1])])
    with pytest.raises(ValueError, match="sides: 1 names for 2"):
        robot_table([a], sides=[ReportSide("x")])


def test_markdown_keeps_titles_and_names_as_text() -> None:
    md = render_markdown(
        _pairs(),
        sides=[ReportSide("run-a", "<b>C1E</b> & *menu*"), ReportSide("run-b", "a|b")],
        names={ENERGY.key: "energy|J"},
    )
    assert md.split("\n")[0] == '### run-b ("a\\|b") against run-a ("\\<b\\>C1E\\</b\\> \\& \\*menu\\*")'
    assert "| `energy\\|J` | 5.00 |" in md
