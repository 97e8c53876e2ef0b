"""wult raw results (`datapoints.csv` + `info.yml` bytes) as typed measurements (archives: `wult_files`).

What a row means (wult's wult.yml and _WultDpProcess.py): WakeLatency is the time from the event
until the CPU runs `after_idle()`, IntrLatency until wult's interrupt handler runs, LDist how far
ahead the event was armed; `ReqCState` is the state Linux *requested*, CC*/MC*/PC*% what the core,
module and package *reached* during the stay. So rows are classed by requested state and by the
deepest hardware state their own counters show (DESIGN 6). With `IntrOff` = 1 the CPU leaves the
state, runs the exit housekeeping and only then the handler; with `IntrOff` = 0 (POLL, IRQ_ENABLE
C1) the handler runs first and WakeLatency includes it.

Times are kept in ns: format 1.0 wrote integer ns, 1.1 and later float microseconds. Any error
raises `WultError(file, line, column, reason)` and nothing is returned.
"""

from __future__ import annotations

import io
import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Literal

import numpy as np

from app.measurements.errors import FileError, decoded
from engine.result import LatencyStats
from engine.summary import latency_stats

DATAPOINTS = "datapoints.csv"
INFO = "info.yml"
# A p99.99 needs ~10^5 samples per class: the 10 largest of them lie beyond it (DESIGN 6).
P9999_SAMPLES = 100_000
# A percentile p has at least one sample beyond it only from 1 / (1 - p) samples on: with fewer,
# what is printed as the p99 is just the largest sample.
PERCENTILE_SAMPLES = {"p90": 10, "p99": 100, "p99.9": 1_000, "p99.99": P9999_SAMPLES}
# Medians of WakeLatency that no C-state reaches (a heuristic, not a kernel fact): POLL and C1-class
# states wake in a few microseconds, so a median over 200 us is most likely ns written where the
# format means us; and intel_idle refuses any exit latency over 5,000 us (`intel_idle.table=`'s
# check, 111f77a23348). Under format 1.0 (ns), a median below 50 ns for a state past POLL is
# most likely us written where ns are meant.
PLAUSIBLE_MEDIAN_US = {"shallow": 200.0, "deep": 5_000.0, "floor": 0.05}
# Ten classes of 10^5 (say five requested states, two reached each).
MAX_DATAPOINTS = 1_000_000
LDIST_QUANTILES = 101  # LDist's percentiles 0..100, kept for "simulate this"
MAX_REQ_STATES = 32  # as many as cpuidle registers (CPUIDLE_STATE_MAX is 10; sysfs dumps allow 32)

# format_version -> ns per unit of the time columns.
_NS_PER_UNIT = {"1.0": 1.0, "1.1": 1000.0, "1.2": 1000.0, "1.3": 1000.0}
_TIME_COLUMNS = {
    "WakeLatency", "IntrLatency", "SilentTime", "LDist", "WakeLatencyRaw", "IntrLatencyRaw", "SilentTimeRaw",
    "WarmupDelay", "LatchDelay",
}  # fmt: skip
_COUNT_COLUMNS = {"SMICnt", "NMICnt", "SWIRQCnt"}
_RESIDENCY = re.compile(r"^(CC|MC|PC)(\d{1,3})%$")
_STATE_NAME = re.compile(r"^[A-Za-z0-9_\-]{1,32}$")
_INFO_KEY = re.compile(r"^([A-Za-z_][A-Za-z0-9_\-]*)\s*:(?:\s+(.*?))?\s*$")


class WultError(FileError):
    """A wult result that cannot be read."""


@dataclass(frozen=True)
class WultInfo:
    """What info.yml says; `delivery` is the event source family, which shifts the figures."""

    format_version: str
    toolname: str | None = None
    toolver: str | None = None
    reportid: str | None = None
    cpu: int | None = None  # the measured CPU (`cpunum` before wult 1.12.34)
    devid: str | None = None
    devdescr: str | None = None
    date: str | None = None
    duration: str | None = None
    resolution_ns: int | None = None

    @property
    def delivery(self) -> Literal["tdt", "hrt", "nic", "unknown"]:
        """tdt: TSC deadline timer; hrt: a Linux hrtimer; nic: an I210 NIC's timer interrupt (via PCIe)."""
        if not self.devid:
            return "unknown"
        d = self.devid.lower()
        if d.startswith("tdt"):
            return "tdt"
        if d.startswith("hrt"):
            return "hrt"
        return "nic"


@dataclass(frozen=True)
class WultClass:
    """One class of wake-ups: a requested state and the hardware state reached ("any": all of them)."""

    req_cstate: str
    reached: str
    count: int
    intr_off: bool | None  # None: mixed, or no IntrOff column
    enough_for_p9999: bool
    # The percentiles (of PERCENTILE_SAMPLES) this class has too few samples for.
    thin_percentiles: tuple[str, ...] = ()


@dataclass(frozen=True)
class WultConditions:
    """What a simulation needs to reproduce a wult run, as far as the result says it."""

    cpu: int | None
    delivery: str
    requested: dict[str, int]  # datapoints per requested state, shallow to deep
    intr_off: dict[str, bool | None]  # per requested state; None: mixed or unknown
    ldist_us: tuple[float, float, float] | None  # min, median, max launch distance
    # LDist's quantiles at 0%, 1%, ..., 100% (us), for resampling a distribution that is not uniform.
    ldist_quantiles_us: tuple[float, ...] | None = None


@dataclass(frozen=True)
class WultMeasurement:
    """A wult result: per-wake-up arrays (ns), the classes they fall in, and notes on what is missing."""

    info: WultInfo
    columns: tuple[str, ...]
    req_names: tuple[str, ...]
    req_index: np.ndarray  # into req_names, per row
    reached_names: tuple[str, ...]
    reached_index: np.ndarray  # into reached_names, per row
    wake_latency_ns: np.ndarray
    intr_latency_ns: np.ndarray | None
    intr_off: np.ndarray | None  # bool per row
    ldist_ns: np.ndarray | None
    silent_time_ns: np.ndarray | None
    residency_pct: dict[str, np.ndarray]  # CC0%, CC1%, CC6%, PC2%, PC6%, ... as wult wrote them
    classes: tuple[WultClass, ...]
    notes: tuple[str, ...] = field(default=())

    @property
    def count(self) -> int:
        return int(self.wake_latency_ns.size)

    def mask(self, req_cstate: str, reached: str | None = None) -> np.ndarray:
        """Rows of a requested state, optionally only those that reached `reached`."""
        if req_cstate not in self.req_names:
            raise KeyError(f"no datapoints requested {req_cstate!r}; requested: {', '.join(self.req_names)}")
        m: np.ndarray = self.req_index == self.req_names.index(req_cstate)
        if reached is not None and reached != "any":
            if reached not in self.reached_names:
                return np.zeros_like(m)
            m &= self.reached_index == self.reached_names.index(reached)
        return m

    def wake_latency(self, req_cstate: str, reached: str | None = None) -> np.ndarray:
        """WakeLatency samples (ns) of a class, as wult plots them."""
        return _f64(self.wake_latency_ns[self.mask(req_cstate, reached)])

    def intr_latency(self, req_cstate: str, reached: str | None = None) -> np.ndarray | None:
        """IntrLatency samples (ns) of a class; None when the result has no IntrLatency column."""
        if self.intr_latency_ns is None:
            return None
        return _f64(self.intr_latency_ns[self.mask(req_cstate, reached)])

    def exit_latency_ns(self, req_cstate: str, reached: str | None = None) -> tuple[np.ndarray, str]:
        """Samples of the hardware exit (plus what cannot be separated from it), and what they are.

        IntrOff = 1: WakeLatency (the first instruction after MWAIT). IntrOff = 0: the interrupt
        is taken straight out of MWAIT and WakeLatency also holds the handler, so IntrLatency
        (exit + interrupt entry) is the closer measure.
        """
        m = self.mask(req_cstate, reached)
        if self.intr_off is None:
            what = "WakeLatency (no IntrOff column: assumed taken with interrupts off)"
            return _f64(self.wake_latency_ns[m]), what
        on = m & ~self.intr_off
        off = m & self.intr_off
        if on.any() and self.intr_latency_ns is None:
            what = "WakeLatency of IntrOff=1 rows (IntrOff=0 rows have no IntrLatency)"
            return _f64(self.wake_latency_ns[off]), what
        parts = [self.wake_latency_ns[off]]
        what = ["WakeLatency of IntrOff=1 rows"] if off.any() else []
        if on.any() and self.intr_latency_ns is not None:
            parts.append(self.intr_latency_ns[on])
            what.append("IntrLatency of IntrOff=0 rows (exit + interrupt entry)")
        return _f64(np.concatenate(parts)), " and ".join(what) or "no rows"

    def latency_stats(
        self, metric: Literal["WakeLatency", "IntrLatency"], req_cstate: str, reached: str | None = None
    ) -> LatencyStats | None:
        """A class's distribution in the simulation's own shape (same percentiles, same log bins),
        so measured and simulated latencies overlay on one axis; None without that column."""
        samples = self.wake_latency(req_cstate, reached) if metric == "WakeLatency" else None
        if metric == "IntrLatency":
            samples = self.intr_latency(req_cstate, reached)
        if samples is None:
            return None
        return latency_stats(np.rint(samples).astype(np.int64))  # whole ns, as the engine counts

    def conditions(self) -> WultConditions:
        """The measured CPU, delivery, requested states and launch distances, for "simulate this"."""
        any_class = {c.req_cstate: c for c in self.classes if c.reached == "any"}
        ldist = quantiles = None
        if self.ldist_ns is not None and self.count:
            q = np.quantile(_f64(self.ldist_ns), np.linspace(0.0, 1.0, LDIST_QUANTILES)) / 1000.0
            quantiles = tuple(round(float(v), 4) for v in q)
            ldist = (float(q[0]), float(q[LDIST_QUANTILES // 2]), float(q[-1]))
        return WultConditions(
            cpu=self.info.cpu,
            delivery=self.info.delivery,
            requested={r: any_class[r].count for r in self.req_names},
            intr_off={r: any_class[r].intr_off for r in self.req_names},
            ldist_us=ldist,
            ldist_quantiles_us=quantiles,
        )

    def ldist_range_ns(self, req_cstate: str | None = None) -> tuple[float, float] | None:
        """The launch distances used (for a simulation's wake-up interval); None without LDist."""
        if self.ldist_ns is None or self.count == 0:
            return None
        v = self.ldist_ns if req_cstate is None else self.ldist_ns[self.mask(req_cstate)]
        return (float(v.min()), float(v.max())) if v.size else None


def _f64(samples: np.ndarray) -> np.ndarray:
    """Samples as float64 (a long file's columns are kept as float32, see `wult_files`), so what
    is computed from them does not depend on how the file was read."""
    return samples.astype(np.float64, copy=False)


# ------------------------------------------------------------------------------------------- input


def parse_wult(datapoints_csv: bytes | None, info_yml: bytes | None, *, csv_name: str = DATAPOINTS,
               info_name: str = INFO) -> WultMeasurement:  # fmt: skip
    """A wult result from its two files' bytes (None: the file was not given)."""
    if info_yml is None:
        raise WultError(
            info_name, None, None, "missing info.yml: a wult raw result has datapoints.csv and info.yml"
        )
    if datapoints_csv is None:
        raise WultError(csv_name, None, None, "missing datapoints.csv")
    info = _parse_info(info_yml, info_name)
    return _parse_datapoints(datapoints_csv, csv_name, info)


# --------------------------------------------------------------------------------------- info.yml


def _parse_info(data: bytes, name: str) -> WultInfo:
    """The top-level `key: value` scalars of info.yml (nested blocks are skipped: nothing here needs them)."""
    text = decoded(data, name, WultError)
    found: dict[str, tuple[str, int, int]] = {}  # key -> (value, line, column of the value)
    for n, raw_line in enumerate(text.split("\n"), start=1):
        line = raw_line.rstrip("\r")
        stripped = line.strip()
        if not stripped or stripped.startswith("#") or stripped in ("---", "..."):
            continue
        if line[0] in " \t" or stripped.startswith("- "):
            continue  # inside a nested block or list
        m = _INFO_KEY.match(line)
        if not m:
            raise WultError(name, n, 1, f"not a 'key: value' line: {line[:60]!r}")
        key, value = m.group(1), m.group(2) or ""
        if key in found:
            raise WultError(name, n, 1, f"{key!r} repeated (first on line {found[key][1]})")
        found[key] = (_scalar(value, name, n, m.start(2) + 1 if m.group(2) else len(line)), n, m.start(2) + 1)
    if "toolname" in found and found["toolname"][0] != "wult":
        v, n, c = found["toolname"]
        raise WultError(name, n, c, f"toolname {v!r}: not a wult result (ndl and pbe measure other things)")
    if "format_version" not in found:
        raise WultError(name, None, None, "no format_version: the units of the times are unknown")
    fv, n, c = found["format_version"]
    if fv not in _NS_PER_UNIT:
        raise WultError(
            name, n, c, f"unknown units: format_version {fv!r} (known: {', '.join(sorted(_NS_PER_UNIT))})"
        )

    def text_of(key: str) -> str | None:
        return found[key][0] if key in found and found[key][0] != "" else None

    def int_of(key: str) -> int | None:
        if key not in found:
            return None
        v, n, c = found[key]
        if not re.fullmatch(r"\d{1,9}", v):
            raise WultError(name, n, c, f"{key}: expected a non-negative integer, got {v!r}")
        return int(v)

    return WultInfo(
        format_version=fv,
        toolname=text_of("toolname"),
        toolver=text_of("toolver"),
        reportid=text_of("reportid"),
        cpu=int_of("cpu") if "cpu" in found else int_of("cpunum"),
        devid=text_of("devid"),
        devdescr=text_of("devdescr"),
        date=text_of("date"),
        duration=text_of("duration"),
        resolution_ns=int_of("resolution"),
    )


def _scalar(value: str, name: str, line: int, col: int) -> str:
    """A YAML plain, 'single' or "double" quoted scalar, as text."""
    if value[:1] in ("'", '"'):
        q = value[0]
        end = value.rfind(q)
        if end == 0:
            raise WultError(name, line, col, f"unterminated quoted value {value!r}")
        inner = value[1:end]
        return inner.replace("''", "'") if q == "'" else inner.replace('\\"', '"')
    return re.split(r"\s+#", value, maxsplit=1)[0].strip()


# --------------------------------------------------------------------------------- datapoints.csv


def _parse_datapoints(data: bytes, name: str, info: WultInfo) -> WultMeasurement:
    text = decoded(data, name, WultError)
    header_text = text.split("\n", 1)[0].rstrip("\r")
    header = [h.strip() for h in header_text.split(",")]
    # Format 1.2 wrote the derived CC1 column under two names (1.3 was made to end that).
    header = ["CC1Derived%" if h == "DerivedCC1%" else h for h in header]
    seen: dict[str, int] = {}
    for i, h in enumerate(header, start=1):
        if not h:
            raise WultError(name, 1, i, "empty column name")
        if h in seen:
            raise WultError(name, 1, i, f"column {h!r} repeated (also column {seen[h]})", h)
        seen[h] = i
    for required in ("WakeLatency", "ReqCState"):
        if required not in seen:
            raise WultError(name, 1, None, f"no {required} column: not a wult C-state latency result")
    starts, ends = _check_lines(data, name, header)
    kinds = [_kind(h) for h in header]
    table, state_names = _read_columns(data, text, name, header, kinds, starts, ends)
    used = [i for i, k in enumerate(kinds) if k != "other"]
    column = {header[i]: table[:, j] for j, i in enumerate(used)}

    # ReqCState codes were handed out in order of appearance; renumber them shallow to deep.
    req_names = tuple(sorted(state_names, key=_state_sort_key))
    remap = np.array([req_names.index(s) for s in state_names], dtype=np.int16)
    req_index = remap[column["ReqCState"].astype(np.int64)]
    scale = _NS_PER_UNIT[info.format_version]
    n_rows = int(table.shape[0])

    def times(col: str) -> np.ndarray | None:
        return column[col] * scale if col in column else None

    wake = times("WakeLatency")
    assert wake is not None
    intr = times("IntrLatency")
    intr_off = column["IntrOff"] > 0 if "IntrOff" in column else None
    residency = {h: column[h].copy() for h, k in zip(header, kinds, strict=True) if k == "pct"}
    reached_names, reached_index, reach_note = _classify(residency, n_rows)
    notes = [reach_note] if reach_note else []
    if info.delivery == "tdt" and intr is not None:
        notes.append(
            "delivery by the TSC deadline timer: its IntrLatency may belong to another timer event "
            "(newer wult drops the column), so treat it with care"
        )
    if intr_off is None:
        notes.append("no IntrOff column: whether the handler ran before the exit housekeeping is unknown")
    classes = _classes(req_names, req_index, reached_names, reached_index, intr_off)
    notes += _implausible(req_names, req_index, wake, info.format_version)
    for c in classes:
        if c.reached == "any" and "p99" in c.thin_percentiles:
            notes.append(
                f"{c.req_cstate}: {c.count:,} datapoint(s): too few for its "
                f"{', '.join(c.thin_percentiles)} (a p99 needs {PERCENTILE_SAMPLES['p99']} samples): "
                "what they show is the largest sample"
            )
    short = [c for c in classes if not c.enough_for_p9999]
    if short:
        notes.append(
            f"{len(short)} of {len(classes)} classes have fewer than {P9999_SAMPLES:,} samples: "
            "too few for a 99.99th percentile read from the data"
        )
    return WultMeasurement(
        info=info,
        columns=tuple(header),
        req_names=req_names,
        req_index=req_index,
        reached_names=reached_names,
        reached_index=reached_index,
        wake_latency_ns=wake,
        intr_latency_ns=intr,
        intr_off=intr_off,
        ldist_ns=times("LDist"),
        silent_time_ns=times("SilentTime"),
        residency_pct=residency,
        classes=classes,
        notes=tuple(notes),
    )


def _implausible(
    req_names: tuple[str, ...], req_index: np.ndarray, wake_ns: np.ndarray, fv: str
) -> list[str]:
    """Warnings for requested states whose median WakeLatency no C-state has (PLAUSIBLE_MEDIAN_US):
    the times are most likely in another unit than `format_version` says."""
    unit = "ns" if _NS_PER_UNIT[fv] == 1.0 else "us"
    out = []
    for r, name in enumerate(req_names):
        samples = wake_ns[req_index == r]
        if not samples.size:
            continue
        median_us = float(np.median(samples)) / 1000.0
        shallow = _state_sort_key(name)[0] <= 1  # POLL, C1, C1E, C1_ACPI
        ceiling = PLAUSIBLE_MEDIAN_US["shallow" if shallow else "deep"]
        if median_us > ceiling:
            out.append(
                f"implausible WakeLatency: {name}'s median reads {median_us:,.0f} us "
                f"(over {ceiling:,.0f} us): "
                f"format_version {fv} means the times are in {unit}; if the file holds ns, every latency "
                "here is 1000 times too large"
            )
        elif unit == "ns" and name != "POLL" and median_us < PLAUSIBLE_MEDIAN_US["floor"]:
            out.append(
                f"implausible WakeLatency: {name}'s median reads {median_us * 1000:.1f} ns: format_version "
                f"{fv} means ns; if the file holds us, every latency here is 1000 times too small"
            )
    return out


CellKind = Literal["time", "pct", "bool", "count", "state", "float", "other"]
# A time column's ceiling in the file's own unit (us or ns): far beyond any wake-up, and small
# enough that ns values stay exact integers in int64 and float64 arithmetic.
_MAX_TIME = 1e12
# IntrOff as wult writes it: 0/1 from older drivers, Python's True/False since.
_FLAGS = {"1": 1.0, "True": 1.0, "true": 1.0, "0": 0.0, "False": 0.0, "false": 0.0}


def _check_lines(data: bytes, name: str, header: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """Every data line's byte span, after checking field counts and blank lines without splitting any.

    Works on the bytes with numpy (a million rows in a fraction of a second); line numbers are
    the text's, since UTF-8 keeps newlines single bytes.
    """
    buf = np.frombuffer(data, dtype=np.uint8)
    newlines = np.flatnonzero(buf == ord("\n"))
    ends = newlines if buf[-1] == ord("\n") else np.append(newlines, buf.size)
    starts = np.concatenate(([0], newlines[: ends.size - 1] + 1))
    # Per line, commas and blanks are counted from their sorted positions (no per-byte running sums).
    commas = np.flatnonzero(buf == ord(","))
    blanks = np.flatnonzero((buf == ord(" ")) | (buf == ord("\t")) | (buf == ord("\r")))
    fields = np.searchsorted(commas, ends) - np.searchsorted(commas, starts) + 1
    blank = np.searchsorted(blanks, ends) - np.searchsorted(blanks, starts) == ends - starts
    starts, ends, fields, blank = starts[1:], ends[1:], fields[1:], blank[1:]  # the header is line 1
    filled = np.flatnonzero(~blank)
    if filled.size == 0:
        raise WultError(name, None, None, "no datapoints: the file has only its header")
    last = int(filled[-1])
    holes = np.flatnonzero(blank[:last])  # blank lines at the very end are the file's last newline(s)
    if holes.size:
        raise WultError(name, int(holes[0]) + 2, None, "empty line")
    if last + 1 > MAX_DATAPOINTS:
        raise WultError(name, MAX_DATAPOINTS + 2, None, f"more than {MAX_DATAPOINTS:,} datapoints")
    ncol = len(header)
    wrong = np.flatnonzero(fields[: last + 1] != ncol)
    if wrong.size:
        r = int(wrong[0])
        got = int(fields[r])
        if got < ncol:
            raise WultError(
                name, r + 2, got + 1, f"short line: {got} fields, the header has {ncol}", header[got]
            )
        raise WultError(name, r + 2, ncol + 1, f"long line: {got} fields, the header has {ncol}")
    return starts[: last + 1], ends[: last + 1]


def _read_columns(
    data: bytes,
    text: str,
    name: str,
    header: list[str],
    kinds: list[CellKind],
    starts: np.ndarray,
    ends: np.ndarray,
) -> tuple[np.ndarray, list[str]]:
    """The used columns as one float array (ReqCState as codes into the returned names).

    numpy's C reader does the bulk; any cell it or the range checks refuse is then read again by
    `_cell`, alone, for a message naming its line and column.
    """
    used = [i for i, k in enumerate(kinds) if k != "other"]
    state_names: list[str] = []
    codes: dict[str, int] = {}

    def state(cell: str) -> float:
        v = cell.strip()
        if not _STATE_NAME.match(v):
            return -1.0
        code = codes.get(v)
        if code is None:
            if len(state_names) == MAX_REQ_STATES:
                return float(MAX_REQ_STATES)  # one too many: refused below, with its line
            code = codes[v] = len(state_names)
            state_names.append(v)
        return float(code)

    def flag(cell: str) -> float:
        return _FLAGS.get(cell.strip(), -1.0)

    converters: dict[int | str, Callable[[str], float]] = {
        i: state if kinds[i] == "state" else flag for i in used if kinds[i] in ("state", "bool")
    }
    try:
        table = np.loadtxt(
            io.StringIO(text), delimiter=",", skiprows=1, usecols=used, converters=converters,
            comments=None, dtype=np.float64, ndmin=2, max_rows=ends.size,
        )  # fmt: skip
    except ValueError as err:
        m = re.search(r"at row (\d+)", str(err))
        hint = int(m.group(1)) if m else 0
        _raise_first_bad(data, name, header, kinds, starts, ends, hint)
        raise WultError(name, None, None, f"unreadable datapoints ({err})") from None
    if state_names and len(state_names) == MAX_REQ_STATES:
        j = [i for i in used if kinds[i] == "state"][0]
        over = np.flatnonzero(table[:, used.index(j)] == MAX_REQ_STATES)
        if over.size:
            r = int(over[0])
            raise WultError(
                name, r + 2, j + 1, f"more than {MAX_REQ_STATES} different requested states", header[j]
            )
    bad = ~np.isfinite(table)
    for j, i in enumerate(used):
        col = table[:, j]
        if kinds[i] in ("state", "bool"):
            bad[:, j] |= col < 0
        elif kinds[i] == "time":
            bad[:, j] |= (col < 0) | (col > _MAX_TIME)
        elif kinds[i] == "pct":
            bad[:, j] |= (col < 0) | (col > 100)
        elif kinds[i] == "count":
            bad[:, j] |= (col < 0) | (col != np.floor(col))
    if bad.any():
        r = int(np.argmax(bad.any(axis=1)))
        _raise_first_bad(data, name, header, kinds, starts, ends, r)
        raise WultError(name, r + 2, None, "a value out of range")  # the row check above agrees; not reached
    return table, state_names


def _raise_first_bad(
    data: bytes,
    name: str,
    header: list[str],
    kinds: list[CellKind],
    starts: np.ndarray,
    ends: np.ndarray,
    hint: int,
) -> None:
    """Raise the WultError of the first bad cell, looking at row `hint` first, then from the top."""
    first = [hint] if 0 <= hint < starts.size else []
    for r in [*first, *range(starts.size)]:
        # Byte offsets cut on newlines, which are whole characters in UTF-8.
        cells = data[int(starts[r]) : int(ends[r])].decode("utf-8").rstrip("\r").split(",")
        for i, k in enumerate(kinds):
            if k == "state":
                _state_cell(cells[i], name, r + 2, i + 1, header[i])
            elif k != "other":
                _cell(cells[i], k, name, r + 2, i + 1, header[i])


def _kind(col: str) -> CellKind:
    if col in _TIME_COLUMNS:
        return "time"
    if col.endswith("%"):
        return "pct"
    if col == "IntrOff":
        return "bool"
    if col in _COUNT_COLUMNS:
        return "count"
    if col == "ReqCState":
        return "state"
    if col == "CPUFreq":
        return "float"
    return "other"  # columns this import does not use (raw fields with --keep-raw-data, new ones)


def _state_cell(cell: str, name: str, line: int, col: int, colname: str) -> str:
    v = cell.strip()
    if not _STATE_NAME.match(v):
        raise WultError(name, line, col, f"expected a Linux C-state name such as C6, got {cell!r}", colname)
    return v


def _cell(cell: str, kind: CellKind, name: str, line: int, col: int, colname: str) -> float:
    v = cell.strip()
    if kind == "bool":
        if v in _FLAGS:
            return _FLAGS[v]
        raise WultError(name, line, col, f"expected 0 or 1, got {cell!r}", colname)
    try:
        x = float(v)
    except ValueError:
        raise WultError(name, line, col, f"expected a number, got {cell!r}", colname) from None
    if not math.isfinite(x):
        raise WultError(name, line, col, f"expected a finite number, got {cell!r}", colname)
    if kind == "time" and x < 0:
        raise WultError(name, line, col, f"negative time {cell!r}", colname)
    if kind == "time" and x > _MAX_TIME:
        raise WultError(name, line, col, f"a time of {cell!r} is beyond any wake-up", colname)
    if kind == "count" and (x < 0 or x != math.floor(x)):
        raise WultError(name, line, col, f"expected a count, got {cell!r}", colname)
    if kind == "pct" and not 0.0 <= x <= 100.0:
        # wult clamps 100-300 % to 100 and drops rows over 300 %: anything else is damage.
        raise WultError(name, line, col, f"a residency percentage out of 0..100: {cell!r}", colname)
    return x


def _state_sort_key(name: str) -> tuple[int, str]:
    """POLL first, then C1 < C1E < C6 < C10 by number."""
    if name == "POLL":
        return (-1, name)
    m = re.match(r"^C(\d+)", name)
    return (int(m.group(1)) if m else 1000, name)


def _classify(residency: Mapping[str, np.ndarray], n: int) -> tuple[tuple[str, ...], np.ndarray, str]:
    """Each row's reached state: its deepest core state with a non-zero share (CC0 if none), then the
    deepest module and package states with one, e.g. "CC6+PC6". wult writes two decimals, so a
    share reads non-zero from 0.005 % of the stay up."""
    groups: dict[str, list[tuple[int, str]]] = {"CC": [], "MC": [], "PC": []}
    for col in residency:
        m = _RESIDENCY.match(col)
        if m and not (m.group(1) == "CC" and m.group(2) == "0"):
            groups[m.group(1)].append((int(m.group(2)), col))
    if "CC1%" not in residency and "CC1Derived%" in residency:
        groups["CC"].append((1, "CC1Derived%"))  # no hardware CC1 counter: wult derives it
    if not any(groups.values()):
        return (
            ("unknown",),
            np.zeros(n, dtype=np.int16),
            ("no C-state residency columns: rows are classed by the requested state only"),
        )
    deepest: list[np.ndarray] = []
    for prefix in ("CC", "MC", "PC"):
        d = np.zeros(n, dtype=np.int64)  # 0: none reached
        for num, col in sorted(groups[prefix]):
            d[residency[col] > 0] = num
        deepest.append(d)
    # One integer per (core, module, package) combination (state numbers are < 1000), then a
    # label per distinct combination.
    keys, index = np.unique(deepest[0] * 1_000_000 + deepest[1] * 1000 + deepest[2], return_inverse=True)
    names = []
    for key in keys.tolist():
        cc, mc, pc = key // 1_000_000, key // 1000 % 1000, key % 1000
        names.append(f"CC{cc}" + (f"+MC{mc}" if mc else "") + (f"+PC{pc}" if pc else ""))
    return tuple(names), index.astype(np.int16), ""


def _classes(
    req_names: tuple[str, ...],
    req_index: np.ndarray,
    reached_names: tuple[str, ...],
    reached_index: np.ndarray,
    intr_off: np.ndarray | None,
) -> tuple[WultClass, ...]:
    out: list[WultClass] = []

    def one(req: str, reached: str, m: np.ndarray) -> WultClass:
        count = int(m.sum())
        off: bool | None = None
        if intr_off is not None and count:
            vals = intr_off[m]
            off = bool(vals[0]) if (vals == vals[0]).all() else None
        thin = tuple(p for p, need in PERCENTILE_SAMPLES.items() if count < need)
        return WultClass(req, reached, count, off, count >= P9999_SAMPLES, thin)

    for r, req in enumerate(req_names):
        m_req = req_index == r
        out.append(one(req, "any", m_req))
        for k in sorted(np.unique(reached_index[m_req]).tolist(), key=lambda k: reached_names[k]):
            out.append(one(req, reached_names[k], m_req & (reached_index == k)))
    return tuple(out)
