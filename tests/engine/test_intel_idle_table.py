"""`intel_idle.table=`, rule by rule, against the kernel's messages (111f77a23348, be6a150829b3).

The expected texts are the printk strings of cmdline_table_adjust() and param_set_copystring()
with intel_idle's pr_fmt prefix, written out here, not taken from the implementation.
"""

from __future__ import annotations

import pytest

from engine import BUILTIN_PLATFORMS, load_platform
from engine.intel_idle_table import TableStringError, adjust_rows, apply_table_string, table_string

# The example table of commit 111f77a23348's message.
EXAMPLE = [("POLL", 0, 0), ("C1", 1, 2), ("C1E", 10, 10), ("C6", 100, 500)]
FAILED = "intel_idle: Failed to adjust C-states with data from 'intel_idle.table'"
ADJUSTED = "intel_idle: Adjusted C-states with data from 'intel_idle.table'"


def rows_after(table: str) -> list[tuple[str, int, int]] | None:
    result = adjust_rows(EXAMPLE, table)
    return result.rows if result.applied else None


def test_the_commit_messages_examples() -> None:
    result = adjust_rows(EXAMPLE, "C1:2:2,C1E:5:20,C6:150:600")
    assert result.applied and result.rows == [("POLL", 0, 0), ("C1", 2, 2), ("C1E", 5, 20), ("C6", 150, 600)]
    assert result.log == [
        "intel_idle: C-state from cmdline: name=C1, latency=2, residency=2",
        "intel_idle: C-state from cmdline: name=C1E, latency=5, residency=20",
        "intel_idle: C-state from cmdline: name=C6, latency=150, residency=600",
        ADJUSTED,
    ]
    # "C6::400": only the residency changes.
    assert rows_after("C6::400") == [("POLL", 0, 0), ("C1", 1, 2), ("C1E", 10, 10), ("C6", 100, 400)]


def test_empty_fields_keep_the_value() -> None:
    assert rows_after("C6:120:") == [*EXAMPLE[:3], ("C6", 120, 500)]
    assert rows_after("C6::") == EXAMPLE
    assert rows_after("C1E::20")[2] == ("C1E", 10, 20)  # type: ignore[index]


def test_up_to_three_extra_fields_are_ignored_a_fourth_is_an_error() -> None:
    assert rows_after("C6:100:600:x:y:z") == [*EXAMPLE[:3], ("C6", 100, 600)]
    result = adjust_rows(EXAMPLE, "C6:100:600:x:y:z:w")
    assert not result.applied and result.rows == EXAMPLE
    assert result.error == "intel_idle: Too many fields for C-state 'C6'"
    assert result.log[-1] == FAILED


def test_poll_and_unknown_names_are_skipped_with_the_kernels_message() -> None:
    result = adjust_rows(EXAMPLE, "POLL:1:1,C9:1:1,C6::600")
    assert result.applied and result.rows[3] == ("C6", 100, 600)
    assert result.log[:2] == ["intel_idle: Cannot adjust POLL", "intel_idle: C-state 'C9' was not found"]
    # A skipped entry's fields are not even parsed.
    assert rows_after("C9:abc:def") == EXAMPLE


@pytest.mark.parametrize(
    "bad",
    [
        "C6",  # no ':' after the name
        "C6:100",  # no ':' after the latency
        "C6:abc:600",  # not a number
        "C6:-1:600",  # kstrtouint takes no sign but '+'
        "C6:100:600,",  # a trailing comma leaves an empty entry
        "C6:100:600, C1:1:1",  # whitespace ends a field: the next entry is malformed
        "C6:100 :600",
        "C6:4294967296:600",  # over UINT_MAX
        "C6:08:600",  # 0-prefixed is octal
    ],
)
def test_any_parse_error_makes_the_kernel_ignore_the_whole_string(bad: str) -> None:
    result = adjust_rows(EXAMPLE, bad)
    assert not result.applied and result.rows == EXAMPLE
    assert result.log[-1] == FAILED
    # Entries before the bad one are not applied either.
    assert not adjust_rows(EXAMPLE, "C1:1:3," + bad).applied


def test_numbers_are_kstrtouint_base_0() -> None:
    assert rows_after("C6:0x64:0764")[3] == ("C6", 100, 500)  # type: ignore[index]
    assert rows_after("C6:+100:500\n")[3] == ("C6", 100, 500)  # type: ignore[index]


def test_at_most_255_characters() -> None:
    fits = "C6:100:600:" + "x" * (255 - len("C6:100:600:"))
    assert len(fits) == 255 and rows_after(fits) == [*EXAMPLE[:3], ("C6", 100, 600)]
    result = adjust_rows(EXAMPLE, fits + "x")
    assert not result.applied
    assert result.log == ["intel_idle.table: string doesn't fit in 255 chars."]


@pytest.mark.parametrize(
    ("table", "state"),
    [
        ("C1:0:2", "C1"),  # latency 0 is POLL's only
        ("C6:5001:6000", "C6"),  # latency over 5,000 us
        ("C6:100:100001", "C6"),  # residency over 100,000 us
        ("C6:100:99", "C6"),  # residency below latency
        ("C1E:1:10", "C1E"),  # latency not above C1's 1
        ("C1E:10:2", "C1E"),  # residency not above C1's 2 (and below its latency)
        ("C1E:11:11,C6:11:500", "C6"),  # latency ties with the previous state
        ("C1E:10:500", "C6"),  # C6's own row now ties with C1E's residency: the whole table is checked
    ],
)
def test_validation_over_the_whole_resulting_table(table: str, state: str) -> None:
    result = adjust_rows(EXAMPLE, table)
    assert not result.applied and result.rows == EXAMPLE
    assert result.error == f"intel_idle: C-state '{state}' validation failed"
    assert result.log[-2:] == [result.error, FAILED]


def test_poll_counts_as_zero_zero() -> None:
    assert rows_after("C1:1:1")[1] == ("C1", 1, 1)  # type: ignore[index]
    assert rows_after("C1:5000:100000,C1E:5000:100000") is None
    assert rows_after("C1:1:1,C1E:5000:5000,C6:5000:100000") is None
    assert rows_after("C1:1:1,C1E:4999:5000,C6:5000:100000")[3] == ("C6", 5000, 100000)  # type: ignore[index]


def test_apply_to_a_platform() -> None:
    skx = load_platform("skx")
    custom = apply_table_string(skx, "C6:120:500", name="skx-c6-120")
    c6 = custom.states[3]
    assert (c6.name, c6.exit_latency_us, c6.target_residency_us) == ("C6", 120, 500)
    assert custom.name == "skx-c6-120" and custom.states[1] == skx.states[1]
    # The measured core-C6 figure (92 us) still fits under 120; the estimate median is recomputed.
    assert c6.core_exit_latency_us is not None and c6.core_exit_latency_us.value == 92
    with pytest.raises(TableStringError, match="C-state 'C6' validation failed") as info:
        apply_table_string(skx, "C6:5:500")
    assert info.value.log[-1] == FAILED


def test_a_table_with_ties_refuses_any_string() -> None:
    """snb C6/C7 share 345 us: even a string that only touches C1 fails, on C7."""
    snb = load_platform("snb")
    with pytest.raises(TableStringError, match="C-state 'C7' validation failed"):
        apply_table_string(snb, "C1:1:1")


@pytest.mark.parametrize("pid", sorted(p for p, t in BUILTIN_PLATFORMS.items() if t.driver == "intel_idle"))
def test_every_intel_idle_platform_as_a_string(pid: str) -> None:
    platform = load_platform(pid)
    answer = table_string(platform)
    if pid in ("skl", "snb"):
        assert answer.string is None and answer.error is not None
        assert "validation failed" in answer.error and "strictly greater" in answer.error
        return
    assert answer.error is None and answer.string
    # The string gives the table back, and names every registered state (adl's unusable C1 is not).
    again = apply_table_string(platform, answer.string)
    assert [(s.exit_latency_us, s.target_residency_us) for s in again.states] == [
        (s.exit_latency_us, s.target_residency_us) for s in platform.states
    ]
    assert ("C1:" in answer.string) == (pid not in ("adl", "adl_l", "mtl_l"))


def test_other_drivers_have_no_string() -> None:
    answer = table_string(load_platform("acpi_idle"))
    assert (
        answer.string is None
        and answer.error == "not intel_idle: acpi_idle's table is registered by acpi_idle"
    )
