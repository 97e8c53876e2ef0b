"""Loaders shared by the measurement page and its JSON twin; importing a measurement.

An upload is one turbostat output, or a wult raw result (one zip/tar of its directory, or its
`datapoints.csv` and `info.yml`). It is parsed whole before anything is stored: a bad file is an
`InvalidInput` (422) naming the file, line and column. What is stored is the files as uploaded
(zipped, so the measurement can be parsed again) and the view built from them once.
"""

from __future__ import annotations

import io
import zipfile
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
import orjson
from sqlalchemy.orm import Session

from app.errors import InvalidInput, NotFound
from app.measurements import store
from app.measurements.errors import FileError
from app.measurements.turbostat import KEY_COLUMNS, TurbostatResult, parse_turbostat
from app.measurements.wult import DATAPOINTS, INFO, WultError, WultMeasurement
from app.measurements.wult_files import basename, parse_wult_files
from engine.summary import latency_stats

# The paths that take a measurement as their body (their own body limit, as the dump imports).
IMPORT_PATHS = ("/api/measurements", "/measurements")
METRICS = ("WakeLatency", "IntrLatency")
# turbostat columns shown per CPU on the page.
PER_CPU_COLUMNS = ("Busy%", "CPU%c1", "CPU%c6")
# The magic bytes of the archives a wult result may come in: zip, gzip, bzip2, xz, and a plain tar.
_ARCHIVE_MAGIC = (b"PK\x03\x04", b"\x1f\x8b", b"BZh", b"\xfd7zXZ")
_MAX_FILES = 2


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


def _stats(samples: np.ndarray | None) -> dict[str, Any] | None:
    if samples is None:
        return None
    return latency_stats(np.rint(samples).astype(np.int64)).model_dump()


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
                "stats": {k: _stats(_masked(_metric(m, k), mask)) for k in METRICS},
                "residency": {col: round(float(v[mask].mean()), 4) for col, v in m.residency_pct.items()},
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
        "residency": {col: round(float(v.mean()), 4) for col, v in m.residency_pct.items()},
        "conditions": conditions,
        "notes": list(m.notes),
    }


def _metric(m: WultMeasurement, metric: str) -> np.ndarray | None:
    return m.wake_latency_ns if metric == "WakeLatency" else m.intr_latency_ns


def _masked(samples: np.ndarray | None, mask: np.ndarray) -> np.ndarray | None:
    return None if samples is None else samples[mask]


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
    parsed = parse_upload(files)
    view = build_view(parsed)
    new = store.create_measurement(
        session,
        kind=view["kind"],
        view=orjson.dumps(view, option=orjson.OPT_SERIALIZE_NUMPY | orjson.OPT_NON_STR_KEYS),
        files=pack_files(files),
        title=title or default_title(parsed, files)[:200],
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
