"""Measurements from real machines: loaders shared by the measurement page and its JSON twin,
importing a measurement, and what a measurement leads to (the run that reproduces it, a platform
calibrated on it).

An upload is one turbostat output, or a wult raw result (one zip/tar of its directory, or its
`datapoints.csv` and `info.yml`). It is parsed whole before anything is stored: a bad file is an
`InvalidInput` (422) naming the file, line and column. What is stored is the files as uploaded
(zipped, so the measurement can be parsed again) and the view built from them once.

"Simulate this": the config follows what the measurement says, as far as it says it: the platform
(one given, or an imported one, or a built-in one, that has every requested state), the requested
C-states (one: the `fixed` governor asks for it; several: the others are disabled), and wult's
experiment (`wult_run`): its timer on the measured CPU alone, each launch distance drawn from the
measured LDist, each event armed after the previous wake-up, the other CPUs idle. What it cannot
say (the delivery method, the other load) goes into the run's title and the answer's notes.
"""

from __future__ import annotations

import io
import re
import tarfile
import threading
import zipfile
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from typing import IO, Any

import numpy as np
import orjson
from sqlalchemy.orm import Session

from app.core.errors import Busy, InvalidInput, NotFound
from app.measurements import store, wult_run
from app.measurements.errors import FileError
from app.measurements.turbostat import KEY_COLUMNS, TurbostatResult, parse_turbostat
from app.measurements.wult import DATAPOINTS, INFO, WultError, WultMeasurement
from app.measurements.wult_files import basename, parse_wult_files
from app.platforms import service as platforms
from app.platforms import store as platform_store
from engine import BUILTIN_PLATFORMS, Platform
from engine.calibrate import MIN_SAMPLES, P9999_SAMPLES, apply_fit, fit_exit_latency
from engine.platforms import Param
from engine.summary import latency_stats

# The paths that take a measurement as their body (their own body limit, as the dump imports).
IMPORT_PATHS = ("/api/measurements", "/measurements")
METRICS = ("WakeLatency", "IntrLatency")
# turbostat columns shown per CPU on the page.
PER_CPU_COLUMNS = ("Busy%", "CPU%c1", "CPU%c6")
# The magic bytes of the archives a wult result may come in: zip, gzip, bzip2, xz, and a plain tar.
_ARCHIVE_MAGIC = (b"PK\x03\x04", b"\x1f\x8b", b"BZh", b"\xfd7zXZ")
_MAX_FILES = 2
# Imports parsed at once in this process: each peaks at ~60 MB (tracemalloc) for a million rows.
MAX_PARSING = 2
PARSING_RETRY_AFTER_S = 2
_parsing = threading.BoundedSemaphore(MAX_PARSING)


@contextmanager
def parsing() -> Iterator[None]:
    """One of the `MAX_PARSING` parse slots, or `Busy` (503, Retry-After) when none is free: a
    parse never waits, so no request holds a thread while others parse."""
    if not _parsing.acquire(blocking=False):
        busy = f"{MAX_PARSING} imports are being parsed; retry in {PARSING_RETRY_AFTER_S} s"
        raise Busy(busy, PARSING_RETRY_AFTER_S)
    try:
        yield
    finally:
        _parsing.release()


def measurement_path(measurement_id: str) -> str:
    return f"/measurements/{measurement_id}"


def measurement_error(err: FileError) -> InvalidInput:
    """A 422 whose `loc` names the file, line and column (`["body", file, "line", n, "column", m]`)."""
    loc: list[str | int] = ["body", err.file]
    if err.line is not None:
        loc += ["line", err.line]
    if err.column is not None:
        loc += ["column", err.column]
    return InvalidInput.one(loc, str(err), "measurement_invalid")


def _is_archive(data: bytes) -> bool:
    return data.startswith(_ARCHIVE_MAGIC) or data[257:262] == b"ustar"


def parse_upload(files: Mapping[str, bytes]) -> WultMeasurement | TurbostatResult:
    """A wult result or a turbostat output from the uploaded files (by name)."""
    if not files:
        raise InvalidInput.one(["body"], "no file: send a wult result or a turbostat output", "missing")
    if len(files) > _MAX_FILES:
        raise InvalidInput.one(
            ["body"], f"{len(files)} files: send one archive or turbostat output, or wult's two files"
        )
    names = {basename(n) for n in files}
    ((first_name, first),) = list(files.items())[:1]
    try:
        if names & {DATAPOINTS, INFO} or (len(files) == 1 and _is_archive(first)):
            return parse_wult_files(files)
        if len(files) > 1:
            raise InvalidInput.one(
                ["body"], f"files {sorted(names)}: a wult result is datapoints.csv and info.yml"
            )
        if first[:200].lstrip().startswith(b"WakeLatency") or b",ReqCState" in first[:1000]:
            raise WultError(first_name, None, None, "a wult datapoints.csv without its info.yml")
        return parse_turbostat(first, first_name)
    except FileError as err:
        raise measurement_error(err) from None


def pack_files(files: Mapping[str, bytes]) -> bytes:
    """The uploaded files as one deflated zip, by base name."""
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", compression=zipfile.ZIP_DEFLATED, compresslevel=6) as zf:
        for name, data in files.items():
            zf.writestr(basename(name) or "upload", data)
    return out.getvalue()


def unpack_files(blob: bytes) -> dict[str, bytes]:
    with zipfile.ZipFile(io.BytesIO(blob)) as zf:
        return {i.filename: zf.read(i) for i in zf.infolist()}


# --- the stored view ----------------------------------------------------------------------------


def _stats(samples: np.ndarray | None, mask: np.ndarray | None = None) -> dict[str, Any] | None:
    """`latency_stats` of whole-ns samples (of the rows in `mask`), with one temporary: the
    rows are rounded straight into the int64 array the statistics read."""
    if samples is None:
        return None
    rows = samples if mask is None else np.compress(mask, samples)
    whole_ns = np.empty(rows.size, dtype=np.int64)
    np.rint(rows, out=whole_ns, casting="unsafe")
    del rows
    return latency_stats(whole_ns).model_dump()


def _mean(values: np.ndarray, mask: np.ndarray | None = None) -> float:
    """A column's mean (of the rows in `mask`), summed in float64 without a full-size copy."""
    if mask is None:
        return round(float(values.mean(dtype=np.float64)), 4)
    return round(float(np.mean(values, where=mask, dtype=np.float64)), 4)


def wult_view(m: WultMeasurement) -> dict[str, Any]:
    """Distributions per requested C-state (as wult shows them), over all rows, and the conditions."""
    requested = []
    for c in m.classes:
        if c.reached != "any":
            continue
        mask = m.mask(c.req_cstate)
        requested.append(
            {
                "req_cstate": c.req_cstate,
                "count": c.count,
                "intr_off": c.intr_off,
                "enough_for_p9999": c.enough_for_p9999,
                "stats": {k: _stats(_metric(m, k), mask) for k in METRICS},
                "residency": {col: _mean(v, mask) for col, v in m.residency_pct.items()},
            }
        )
    conditions = asdict(m.conditions())
    return {
        "kind": "wult",
        "info": {**asdict(m.info), "delivery": m.info.delivery},
        "count": m.count,
        "columns": list(m.columns),
        "classes": [asdict(c) for c in m.classes],
        "requested": requested,
        "overall": {k: _stats(_metric(m, k)) for k in METRICS},
        "residency": {col: _mean(v) for col, v in m.residency_pct.items()},
        "conditions": conditions,
        "notes": list(m.notes),
    }


def _metric(m: WultMeasurement, metric: str) -> np.ndarray | None:
    return m.wake_latency_ns if metric == "WakeLatency" else m.intr_latency_ns


def turbostat_view(t: TurbostatResult) -> dict[str, Any]:
    """Summary means of every column, the key residency columns, per-CPU means of a few."""
    columns = [c for c in t.columns() if c not in ("Package", "Die", "Node", "Core", "CPU")]
    summary = {c: t.summary_mean(c) for c in columns}
    return {
        "kind": "turbostat",
        "version": t.version,
        "interval_s": t.interval_s,
        "intervals": len(t.intervals),
        "cpus": len({r.cpu for iv in t.intervals for r in iv.cpus if r.cpu is not None}),
        "columns": columns,
        "summary": {c: v for c, v in summary.items() if v is not None},
        "residency": {c: v for c, v in t.residency().items() if v is not None},
        "per_cpu": {c: t.cpu_means(c) for c in PER_CPU_COLUMNS if c in columns},
        "cpuidle_states": [list(s) for s in t.cpuidle_states],
        "pkg_cstate_limit": t.pkg_cstate_limit,
        "c1e_promotion": t.c1e_promotion,
        "key_columns": list(KEY_COLUMNS),
    }


def build_view(parsed: WultMeasurement | TurbostatResult) -> dict[str, Any]:
    return wult_view(parsed) if isinstance(parsed, WultMeasurement) else turbostat_view(parsed)


def default_title(parsed: WultMeasurement | TurbostatResult, files: Mapping[str, bytes]) -> str:
    if isinstance(parsed, WultMeasurement):
        req = ", ".join(parsed.req_names)
        report = f" {parsed.info.reportid}" if parsed.info.reportid else ""
        return f"wult{report} ({req}; delivery {parsed.info.delivery})"
    return f"turbostat {basename(next(iter(files)))}"


# --- create, read ------------------------------------------------------------------------------


@dataclass
class MeasurementView:
    """A measurement as pages and the API show it."""

    id: str
    title: str
    kind: str
    unlisted: bool
    created_at: Any
    view: dict[str, Any]

    @property
    def url(self) -> str:
        return measurement_path(self.id)

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "url": self.url,
            "title": self.title,
            "kind": self.kind,
            "unlisted": self.unlisted,
            "created_at": self.created_at,
            **self.view,
        }


def create_measurement(
    session: Session, files: Mapping[str, bytes], *, title: str = "", unlisted: bool = False
) -> tuple[MeasurementView, str]:
    """Parse and store a measurement; (its view, its delete token). Nothing is stored on an error."""
    if len(title) > 200:
        raise InvalidInput.one(["body", "title"], "at most 200 characters", "too_long")
    with parsing():
        parsed = parse_upload(files)
        view = build_view(parsed)
        title = title or default_title(parsed, files)[:200]
        del parsed
    new = store.create_measurement(
        session,
        kind=view["kind"],
        view=orjson.dumps(view, option=orjson.OPT_SERIALIZE_NUMPY | orjson.OPT_NON_STR_KEYS),
        files=pack_files(files),
        title=title,
        unlisted=unlisted,
    )
    return _read(new.measurement), new.delete_token


def _read(row: Any) -> MeasurementView:
    return MeasurementView(
        id=row.id,
        title=row.title,
        kind=row.kind,
        unlisted=row.unlisted,
        created_at=row.created_at,
        view=orjson.loads(row.view),
    )


def load_measurement_view(session: Session, measurement_id: str) -> MeasurementView:
    row = store.get_measurement(session, measurement_id)
    if row is None:
        raise NotFound(f"measurement {measurement_id!r} not found")
    return _read(row)


def load_parsed(session: Session, measurement_id: str) -> WultMeasurement | TurbostatResult:
    """The measurement parsed again from its stored files (to calibrate or to rebuild its view)."""
    row = store.get_measurement(session, measurement_id)
    if row is None:
        raise NotFound(f"measurement {measurement_id!r} not found")
    return parse_upload(unpack_files(row.files))


# --- what a measurement leads to -----------------------------------------------------------

# Built-in platforms in the order they are tried when nothing else names one.
_BUILTIN_ORDER = ("skx", "icx", "wsm")
_REACHED = re.compile(r"(CC|MC|PC)(\d+)")


def _requested(view: dict[str, Any]) -> list[str]:
    if view["kind"] == "wult":
        return [r["req_cstate"] for r in view["requested"]]
    return [name for name, _desc in view.get("cpuidle_states", [])]


def choose_platform(session: Session, wanted: list[str], given: str | None = None) -> tuple[str, str]:
    """(platform name, why): `given`, else the newest imported platform with every wanted state,
    else the first built-in one with them all, else skx."""
    if given:
        platforms.platform_view(session, given)  # NotFound for an unknown name
        return given, f"platform {given!r} as asked"
    names = set(wanted)
    imported = [p for p in platforms.platforms_view(session).platforms if p.custom and p.machine is not None]
    for p in sorted(imported, key=lambda p: p.created_at or 0, reverse=True):
        if names <= {s.name for s in p.table.states}:
            return p.name, f"imported platform {p.name!r} has every requested state"
    for name in _BUILTIN_ORDER:
        if name in BUILTIN_PLATFORMS and names <= {s.name for s in BUILTIN_PLATFORMS[name].states}:
            return name, f"built-in {name!r} has every requested state ({', '.join(wanted) or 'none named'})"
    return "skx", "no platform has every requested state: skx, with the states it lacks left out"


# turbostat's preamble: "CPUID(1): family:model:stepping 0x6:8f:8 (6:143:8)" (process_cpuid() in
# tools/power/x86/turbostat/turbostat.c); a /proc/cpuinfo copy (a wult result's stats) names both too.
_CPUID = re.compile(
    rb"CPUID\(1\): family:model:stepping 0x[0-9a-f]+:[0-9a-f]+:[0-9a-f]+ \((\d{1,4}):(\d{1,4}):\d{1,4}\)"
)
_CPUINFO_FAMILY = re.compile(rb"^cpu family\s*:\s*(\d{1,4})\s*$", re.M)
_CPUINFO_MODEL = re.compile(rb"^model\s*:\s*(\d{1,4})\s*$", re.M)
# What the CPU model is looked for in: at most this many bytes of a measurement's files and
# archive members, read a block at a time (a result's text files; never a whole member in memory).
_MAX_SCANNED = 64 * 2**20
_SCAN_BLOCK = 2**20
_OVERLAP = 4096  # a match cut by a block's end is found whole in the next


def _streams(name: str, data: bytes) -> Iterator[IO[bytes]]:
    """A stored file as a stream, or its archive members' (a wult result's directory)."""
    try:
        if zipfile.is_zipfile(io.BytesIO(data)):
            with zipfile.ZipFile(io.BytesIO(data)) as zf:
                for info in zf.infolist():
                    with zf.open(info) as f:
                        yield f
            return
        if name.endswith((".tar", ".tar.gz", ".tgz")) or data[:2] == b"\x1f\x8b":
            with tarfile.open(fileobj=io.BytesIO(data)) as tf:
                for m in tf:
                    if m.isfile() and (f := tf.extractfile(m)) is not None:
                        yield f
            return
    except (zipfile.BadZipFile, tarfile.TarError, OSError, EOFError, ValueError):
        return
    yield io.BytesIO(data)


def measured_cpu(files: Mapping[str, bytes]) -> tuple[int, int] | None:
    """(family, model) of the CPU a measurement's files name: turbostat's CPUID(1) line, or
    /proc/cpuinfo's `cpu family` and `model`; None when none does."""
    budget = _MAX_SCANNED
    for name, data in files.items():
        for stream in _streams(name, data):
            tail = b""
            while budget > 0 and (block := stream.read(min(_SCAN_BLOCK, budget))):
                budget -= len(block)
                text = tail + block
                tail = text[-_OVERLAP:]
                m = _CPUID.search(text)
                if m:
                    return int(m.group(1)), int(m.group(2))
                fam, mod = _CPUINFO_FAMILY.search(text), _CPUINFO_MODEL.search(text)
                if fam and mod:
                    return int(fam.group(1)), int(mod.group(1))
            if budget <= 0:
                return None
    return None


def stored_cpu(session: Session, measurement_id: str) -> tuple[int, int] | None:
    """`measured_cpu` of a stored measurement's files."""
    row = store.get_measurement(session, measurement_id)
    if row is None:
        raise NotFound(f"measurement {measurement_id!r} not found")
    return measured_cpu(unpack_files(row.files))


def simulation_platform(
    session: Session, measurement_id: str, wanted: list[str], given: str | None
) -> tuple[str, str]:
    """(platform, why) of "Simulate this": `given`, else the one platform of the CPU model the
    measurement names (an imported machine of that model, else the built-in table for it); with
    none, or several, a 422 at `body.platform` listing the candidates. Never merely the newest import."""
    if given:
        platforms.platform_view(session, given)  # NotFound for an unknown name
        return given, f"platform {given!r} as asked"
    cpu = stored_cpu(session, measurement_id)
    every = platforms.platforms_view(session).platforms
    if cpu is not None:
        family, model = cpu
        imported = [
            p.name
            for p in every
            if p.machine is not None and (p.machine.get("cpu_family"), p.machine.get("cpu_model")) == cpu
        ]
        builtin = [
            p.name
            for p in every
            if not p.custom and any((c.family, c.model) == cpu for c in p.table.cpu_models)
        ]
        found = imported or builtin
        if len(found) == 1:
            kind = "imported machine" if imported else "built-in table"
            return found[0], f"{kind} {found[0]!r} is the measured CPU's (family {family}, model {model})"
        named = f"the measured CPU (family {family}, model {model})"
        why = f"several platforms are {named}" if found else f"no platform is {named}"
    else:
        found, why = [], "the measurement names no CPU model (turbostat's CPUID(1) line, /proc/cpuinfo)"
    names = set(wanted)
    candidates = found or [p.name for p in every if names <= {s.name for s in p.table.states}]
    raise InvalidInput.one(
        ["body", "platform"],
        f"{why}: choose the platform; candidates with every measured state: "
        f"{', '.join(candidates[:20]) or 'none'}"
        + (f" ({len(candidates) - 20} more)" if len(candidates) > 20 else ""),
        "missing",
    )


def simulation_config(
    session: Session, measurement_id: str, *, platform: str | None = None
) -> tuple[dict[str, Any], str, list[str], bool]:
    """(config, run title, notes, unlisted) of the run that reproduces a measurement's conditions:
    an unlisted measurement's run is unlisted too (its title names the measurement)."""
    m = load_measurement_view(session, measurement_id)
    view = m.view
    wanted = _requested(view)
    name, why = simulation_platform(session, measurement_id, wanted, platform)
    table = platforms.platform_view(session, name).table
    states = [s.name for s in table.states]
    notes = [why]
    config: dict[str, Any] = {"platform": name, "seed": 1}
    title = f"Simulating {m.title}"[:200]
    if view["kind"] == "wult":
        requested = [s for s in wanted if s in states]
        lost = [s for s in wanted if s not in states]
        if lost:
            notes.append(f"requested states not in {name!r}, left out: {', '.join(lost)}")
        deep = [s for s in requested if s != "POLL"]
        if len(requested) == 1 and deep:
            config["governor"] = {"name": "fixed", "fixed_state": deep[0]}
            notes.append(f"the fixed governor asks for {deep[0]}, as wult's only requested state")
        elif requested:
            config["states"] = {"disabled": [s for s in states if s not in requested]}
            notes.append(f"only the requested states stay enabled: {', '.join(requested)}")
        quantiles = _ldist_quantiles(session, measurement_id, view)
        timer, duration_ms, timer_notes = wult_run.wult_timer(view, quantiles)
        n_cpus = wult_run.cpu_count(table)
        cpu, cpu_note = wult_run.measured_cpu(view["info"].get("cpu"), n_cpus)
        timer["cpus"] = [cpu]
        config["wakeups"] = {
            "timers": [timer],
            "interrupts": {"rate_hz": 0.0},
            "ipis": {"rate_hz": 0.0},
            "sched_wakeups": {"rate_hz": 0.0},
        }
        config["duration_ms"] = duration_ms
        config["topology"] = {"sockets": table.topology.sockets}
        notes += [cpu_note, *timer_notes]
        notes.append(
            f"the other {n_cpus - 1} CPUs of {name!r} idle with no wake-up source but the tick "
            "(assumed: wult is run on an otherwise idle machine, and the result holds no other load)"
        )
        delivery = view["info"].get("delivery", "unknown")
        notes.append(
            f"delivery {delivery!r} ({view['info'].get('devid') or 'no devid'}): the model's wake-up is a "
            "timer interrupt the governor sees; a NIC's adds its PCIe path, which the model does not have"
        )
        title = f"Simulating {m.title} (delivery {delivery})"[:200]
    else:
        notes.append("turbostat says no load: the default mixed load on that table")
    return config, title, notes, m.unlisted


def _ldist_quantiles(session: Session, measurement_id: str, view: dict[str, Any]) -> list[float] | None:
    """LDist's percentiles (us), from the stored view or, for a view stored before it kept them,
    from the measurement parsed again."""
    quantiles = view["conditions"].get("ldist_quantiles_us")
    if quantiles is None and view["conditions"].get("ldist_us"):
        with parsing():
            parsed = load_parsed(session, measurement_id)
            assert isinstance(parsed, WultMeasurement)
            quantiles = parsed.conditions().ldist_quantiles_us
    return None if quantiles is None else [float(q) for q in quantiles]


# --- calibration -------------------------------------------------------------------------------


def _depth(reached: str) -> tuple[int, int, int]:
    found = {k: int(v) for k, v in _REACHED.findall(reached)}
    return found.get("CC", 0), found.get("MC", 0), found.get("PC", 0)


def calibrate(
    session: Session,
    measurement_id: str,
    *,
    limit: int,
    platform: str | None = None,
    name: str | None = None,
) -> tuple[Platform, list[dict[str, Any]]]:
    """A custom platform whose states wult measured enough of carry a measured exit distribution:
    median (and, with >= 10^5 samples, the hardware's 99.99th percentile `hw_exit_latency_us`),
    labelled `measured` with the measurement's id. The table figures the governor sees stay the
    kernel's. Per state, the deepest hardware state its datapoints reached with enough samples
    is fitted (wult classes rows by their own CC/PC counters). Returns (table, per-state fits)."""
    with parsing():
        return _calibrate(session, measurement_id, platform, name, limit)


def _calibrate(
    session: Session, measurement_id: str, platform: str | None, name: str | None, limit: int
) -> tuple[Platform, list[dict[str, Any]]]:
    parsed = load_parsed(session, measurement_id)
    if not isinstance(parsed, WultMeasurement):
        assert isinstance(parsed, TurbostatResult)
        raise InvalidInput.one(
            ["path", "measurement_id"], "only a wult measurement has exit latencies to fit", "value_error"
        )
    view = load_measurement_view(session, measurement_id).view
    base_name, _ = choose_platform(session, list(parsed.req_names), platform)
    base_view = platforms.platform_view(session, base_name)
    base = base_view.table
    source = f"wult measurement {measurement_id}"
    fits: list[dict[str, Any]] = []
    states = list(base.states)
    for i, state in enumerate(states):
        if state.is_poll or state.name not in parsed.req_names:
            continue
        classes = [c for c in parsed.classes if c.req_cstate == state.name and c.reached != "any"]
        enough = [c for c in classes if c.count >= MIN_SAMPLES]
        if not enough:
            total = sum(c.count for c in classes)
            reason = f"{total} samples, {MIN_SAMPLES} needed"
            fits.append({"state": state.name, "fitted": False, "reason": reason})
            continue
        cls = max(enough, key=lambda c: _depth(c.reached))
        reached = None if cls.reached == "unknown" else cls.reached
        samples, what = parsed.exit_latency_ns(state.name, reached)
        samples = samples[samples > 0]
        try:
            fit = fit_exit_latency(samples)
            fitted = apply_fit(state, fit, f"{source}, class {cls.reached}")
        except ValueError as err:
            fits.append({"state": state.name, "fitted": False, "reason": str(err)})
            continue
        if fit.count >= P9999_SAMPLES:
            label = f"{source}, class {cls.reached}: 99.99th percentile of {fit.count:,} samples"
            worst = Param(value=round(fit.p9999_us, 3), kind="measured", source=label)
            fitted = fitted.model_copy(update={"hw_exit_latency_us": worst})
        states[i] = fitted
        fits.append(
            {
                "state": state.name,
                "fitted": True,
                "reached": cls.reached,
                "samples": what,
                **fit.model_dump(),
                "hw_exit_latency_us": fitted.hw_exit_latency_us.value if fitted.hw_exit_latency_us else None,
            }
        )
    if not any(f["fitted"] for f in fits):
        reasons = "; ".join(f"{f['state']}: {f['reason']}" for f in fits) or "no requested state in the table"
        raise InvalidInput.one(["path", "measurement_id"], f"nothing to calibrate ({reasons})", "value_error")
    default = re.sub(r"[^a-z0-9_\-]", "-", f"{base_name}-cal-{measurement_id.lower()}")
    name = name or platforms.unique_name(session, default)
    if platforms.taken(session, name):
        raise InvalidInput.one(["body", "name"], f"platform {name!r} already exists", "value_error")
    fitted_names = ", ".join(f["state"] for f in fits if f["fitted"])
    delivery = view["info"].get("delivery", "unknown")
    table = Platform.model_validate(
        {
            **base.model_dump(),
            "name": name,
            "title": f"{base.title}, exit latencies of {fitted_names} measured by wult"[:200],
            "states": [s.model_dump() for s in states],
            "notes": [
                *base.notes,
                f"Exit-latency distributions of {fitted_names} fitted to {source} (delivery {delivery}); "
                "the table figures the governor sees are the kernel's.",
            ],
        }
    )
    based_on = base_name if base_name in BUILTIN_PLATFORMS else (base_view.based_on or "")
    platform_store.create_platform(session, table, based_on=based_on, limit=limit)
    return table, fits
