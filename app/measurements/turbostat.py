"""turbostat output (its default tab-separated layout) as typed intervals of summary and per-CPU rows.

Each interval is a column-name line, a summary row (`-` in Package/Die/Node/Core/CPU) and one row
per CPU; names are reprinted every interval. Rows end early on purpose: core columns (CPU%c6,
CoreTmp, ...) appear only on a core's first CPU, package columns (Pkg%pc6, PkgWatt, ...) only on a
package's first CPU. Cells `-`, `nan`, `(neg)` and `**.**` are missing values. The preamble
(version, MSR decodes, cpuidle states) is read for what a simulation can use and otherwise skipped.
Any error raises `TurbostatError(file, line, column, reason)` and nothing is returned.
"""

from __future__ import annotations

import functools
import math
import re

from pydantic import BaseModel, ConfigDict

from app.measurements.errors import FileError, decoded
from engine.metrics import TURBOSTAT_KEY_COLUMNS

# The columns a residency comparison reads (where present); the summary row averages thread
# columns over CPUs, core columns over cores and package columns over packages, and sums watts.
KEY_COLUMNS = TURBOSTAT_KEY_COLUMNS
_IDENTITY = ("Package", "Die", "Node", "Core", "CPU")
# A column-name line holds at least one of these, so a preamble line is never taken for one.
_ANCHORS = {*KEY_COLUMNS, "Avg_MHz", "Bzy_MHz", "TSC_MHz", "CPU", "Core", "Package", "CoreTmp", "PkgTmp"}
_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_%+\-.#]*$")
# Columns printed only on a core's or a package's first CPU (turbostat.c's format_counters):
# everything from the first of them on may be missing from a CPU's row.
_CORE_OR_PACKAGE = re.compile(
    r"^(CPU%c(?!1$)\d+|Mod%c\d+|CoreTmp|CoreThr|Cor_J|CorWatt|Pkg|Pk%|PKG_|GFX|SAM|RAM|Totl%|Any%|CPUGFX|"
    r"Uncore|UMHz|SysWatt|Sys_J|CPU%LPI|SYS%LPI)"
)
_MISSING = {"-", "nan", "-nan", "(neg)", "**.**", ""}
# What a column's values can be, by what turbostat prints in it (format_counters() in
# tools/power/x86/turbostat/turbostat.c): (pattern of names, low, high, what the values are). The
# first match wins; a cell outside its range is damage, refused with its line and column.
_RANGES = (
    # Shares of the interval; counters read a moment apart can overshoot 100 by a little (1 point
    # allowed: a guess at the skew, not a kernel fact).
    (re.compile(r"%"), 0.0, 101.0, "a share of the interval in %"),
    (re.compile(r"MHz"), 0.0, 100_000.0, "a frequency in MHz"),
    (re.compile(r"Watt"), 0.0, 100_000.0, "a power in W"),
    (re.compile(r"_J$"), 0.0, 1e15, "an energy in J"),
    # Degrees C (tjMax less the thermal margin): -40..150 spans every part's operating range (a guess).
    (re.compile(r"Tmp$"), -40.0, 150.0, "a temperature in degrees C"),
    (re.compile(r"^IPC$"), 0.0, 64.0, "instructions per cycle"),
    # Everything else turbostat prints is a count or a raw counter: unsigned 64-bit.
    (re.compile(r""), 0.0, 2.0**64, "a count"),
)
_NUMBER = re.compile(r"^-?(\d+(\.\d*)?|\.\d+)([eE][-+]?\d+)?$")


class TurbostatError(FileError):
    """turbostat output that cannot be read."""


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class TurbostatRow(_Model):
    """One row: its identity (None in the summary) and the values it printed (None: a missing cell).

    A column the row stops before is absent from `values`: it belongs to another CPU of the core
    or package."""

    line: int
    package: int | None = None
    die: int | None = None
    core: int | None = None
    cpu: int | None = None
    values: dict[str, float | None]


class TurbostatInterval(_Model):
    line: int  # of its column-name line
    columns: list[str]
    summary: TurbostatRow | None
    cpus: list[TurbostatRow]


class TurbostatResult(_Model):
    """Every interval, and what the preamble said."""

    version: str | None = None
    interval_s: float | None = None
    cpuidle_states: list[tuple[str, str]] = []  # (name, desc) as the preamble lists them for the first CPU
    pkg_cstate_limit: str | None = None  # MSR_PKG_CST_CONFIG_CONTROL's decode, e.g. "2 (pc6n)"
    c1e_promotion: bool | None = None  # MSR_POWER_CTL's C1E auto-promotion
    intervals: list[TurbostatInterval]

    def columns(self) -> list[str]:
        """Every column any interval printed, in first-seen order."""
        out: dict[str, None] = {}
        for iv in self.intervals:
            out.update(dict.fromkeys(iv.columns))
        return list(out)

    def summary_mean(self, column: str) -> float | None:
        """The mean of a column's summary values over the intervals (None: never printed)."""
        vals = [
            v
            for iv in self.intervals
            if iv.summary is not None and (v := iv.summary.values.get(column)) is not None
        ]
        return sum(vals) / len(vals) if vals else None

    def cpu_means(self, column: str) -> dict[int, float]:
        """Per CPU, the mean of a column over the intervals where that CPU's row printed it."""
        acc: dict[int, list[float]] = {}
        for iv in self.intervals:
            for r in iv.cpus:
                v = r.values.get(column)
                if r.cpu is not None and v is not None:
                    acc.setdefault(r.cpu, []).append(v)
        return {cpu: sum(v) / len(v) for cpu, v in sorted(acc.items())}

    def residency(self) -> dict[str, float | None]:
        """Busy%, CPU%c1, CPU%c6, Pkg%pc2, Pkg%pc6 and PkgWatt from the summary rows, where present.

        Busy% and CPU%c1 are per thread, CPU%c6 per core and Pkg% per package (averaged), PkgWatt
        the sum over packages; with SMT, Busy% + CPU%c1 + CPU%c6 of the summary need not be 100."""
        return {c: self.summary_mean(c) for c in KEY_COLUMNS}


def parse_turbostat(data: bytes, name: str = "turbostat.txt") -> TurbostatResult:
    """Parse turbostat's text output (interval or command mode, with or without the preamble)."""
    lines = decoded(data, name, TurbostatError).split("\n")
    version: str | None = None
    interval_s: float | None = None
    states: list[tuple[str, str]] = []
    state_cpu: str | None = None
    limit: str | None = None
    c1e: bool | None = None
    intervals: list[TurbostatInterval] = []
    columns: list[str] | None = None
    header_line = 0
    summary: TurbostatRow | None = None
    cpus: list[TurbostatRow] = []

    def close() -> None:
        if columns is not None and (summary is not None or cpus):
            intervals.append(
                TurbostatInterval(line=header_line, columns=columns, summary=summary, cpus=list(cpus))
            )

    for n, raw in enumerate(lines, start=1):
        line = raw.rstrip("\r")
        if not line.strip():
            continue
        if _is_message(line):
            m = re.match(r"^(\d+(?:\.\d+)?) sec\s*$", line)  # command mode: the command's run time
            if m:
                interval_s = float(m.group(1))
            continue
        cells = line.split("\t") if "\t" in line else line.split()
        if _is_header(cells):
            close()
            columns, header_line, summary, cpus = _check_header(cells, name, n), n, None, []
            continue
        if columns is None or not _looks_like_row(cells):
            # The preamble; after the first table only rows and messages may follow.
            m = re.match(r"^turbostat version (\S+)", line)
            if m:
                version = m.group(1)
            m = re.match(r"^Measurement interval: (\d+(?:\.\d+)?) sec", line)
            if m:
                interval_s = float(m.group(1))
            m = re.match(r"^(cpu\d+): ([A-Za-z0-9_\-]+): ((?:MWAIT|CPUIDLE|ACPI).*)$", line)
            if m and state_cpu in (None, m.group(1)):
                state_cpu = m.group(1)
                states.append((m.group(2), m.group(3).strip()))
            m = re.search(r"pkg-cstate-limit=(\d+(?: \([^)]*\))?)", line)
            if m:
                limit = m.group(1)
            m = re.search(r"C1E auto-promotion: (EN|DIS)abled", line)
            if m:
                c1e = m.group(1) == "EN"
            if columns is not None:
                raise TurbostatError(name, n, None, f"not a turbostat row or message: {line[:60]!r}")
            continue
        row = _row(cells, columns, name, n)
        if row.cpu is None:  # the summary: `-` in CPU, or no CPU column at all (--Summary)
            if summary is not None or cpus:
                close()  # --Summary prints one row per interval under one header
                summary, cpus = None, []
            summary = row
        else:
            cpus.append(row)
    close()
    if not intervals:
        if columns is not None:
            raise TurbostatError(name, header_line, None, "a column-name line but no rows after it")
        raise TurbostatError(
            name, None, None, "no turbostat table: no tab-separated column-name line with Busy%, CPU%c1, ..."
        )
    return TurbostatResult(
        version=version,
        interval_s=interval_s,
        cpuidle_states=states,
        pkg_cstate_limit=limit,
        c1e_promotion=c1e,
        intervals=intervals,
    )


def _is_header(cells: list[str]) -> bool:
    return any(c in _ANCHORS for c in cells) and all(_NAME.match(c) for c in cells)


def _check_header(cells: list[str], name: str, n: int) -> list[str]:
    seen: dict[str, int] = {}
    for i, c in enumerate(cells, start=1):
        if c in seen:
            raise TurbostatError(name, n, i, f"column {c!r} repeated (also column {seen[c]})", c)
        seen[c] = i
    return cells


def _looks_like_row(cells: list[str]) -> bool:
    first = cells[0].strip()
    return bool(_NUMBER.match(first)) or first in _MISSING


def _is_message(line: str) -> bool:
    return line.startswith("turbostat:") or bool(re.match(r"^\d+(?:\.\d+)? sec\s*$", line))


def _row(cells: list[str], columns: list[str], name: str, n: int) -> TurbostatRow:
    ncol = len(columns)
    if len(cells) > ncol:
        raise TurbostatError(name, n, ncol + 1, f"long line: {len(cells)} fields, the header has {ncol}")
    cpu_col = columns.index("CPU") if "CPU" in columns else None
    is_summary = cpu_col is None or (cpu_col < len(cells) and cells[cpu_col].strip() == "-")
    if len(cells) < ncol:
        first_shared = next((i for i, c in enumerate(columns) if _CORE_OR_PACKAGE.match(c)), ncol)
        if is_summary or len(cells) < first_shared:
            shortest = ncol if is_summary else first_shared
            raise TurbostatError(
                name,
                n,
                len(cells) + 1,
                f"short line: {len(cells)} fields, {'the summary row needs' if is_summary else 'at least'} "
                f"{shortest}",
                columns[len(cells)],
            )
    values: dict[str, float | None] = {}
    ids: dict[str, int | None] = {}
    for i, cell in enumerate(cells):
        col = columns[i]
        v = cell.strip()
        if col in _IDENTITY:
            if v == "-":
                ids[col] = None
            elif re.fullmatch(r"[0-9]{1,9}", v):
                ids[col] = int(v)
            else:
                raise TurbostatError(name, n, i + 1, f"expected a number or '-', got {cell!r}", col)
            continue
        values[col] = _value(v, cell, name, n, i + 1, col)
    return TurbostatRow(
        line=n,
        package=ids.get("Package"),
        die=ids.get("Die"),
        core=ids.get("Core"),
        cpu=ids.get("CPU"),
        values=values,
    )


def _value(v: str, cell: str, name: str, n: int, col: int, colname: str) -> float | None:
    if v in _MISSING:
        return None  # turbostat's own spellings of "no value" (a 0/0 prints nan)
    if _NUMBER.match(v):
        x = float(v)
    elif re.fullmatch(r"0x[0-9a-fA-F]{1,16}", v):  # raw counters added with --add ...,raw
        x = float(int(v, 16))
    else:
        raise TurbostatError(name, n, col, f"expected a number, got {cell!r}", colname)
    low, high, meaning = _range(colname)
    if not (math.isfinite(x) and low <= x <= high):
        raise TurbostatError(name, n, col, f"{cell!r} is not {meaning} ({low:g}..{high:g})", colname)
    return x


@functools.cache
def _range(colname: str) -> tuple[float, float, str]:
    return next((low, high, what) for pattern, low, high, what in _RANGES if pattern.search(colname))
