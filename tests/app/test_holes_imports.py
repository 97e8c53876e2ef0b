"""Measurement imports streamed and bounded (issue 23, hole 1): a wult CSV read from its archive
1 MiB at a time gives the measurement and the errors the whole file gives; its memory is its
kept arrays, not its text; a member over the size limit is refused from its stated size; at most
two imports parse at once."""

from __future__ import annotations

import io
import tarfile
import tracemalloc
import zipfile
from typing import Any

import numpy as np
import pytest

from app.measurements.service import wult_view
from app.measurements.wult import WultError, parse_wult
from app.measurements.wult_files import CHUNK_BYTES, MAX_CSV_BYTES, parse_wult_archive, parse_wult_files
from tests.app.measurements.test_wult import HEADER, INFO, ROWS, csv

# Columns the import validates but does not keep (wult's raw cycle counters), to make rows wide.
WIDE_HEADER = HEADER + ",TotCyc,CC0Cyc,SMIWake"


def wide_rows(n: int) -> list[str]:
    """`n` rows cycling through the five sample rows, each with three unkept wide columns."""
    return [f"{ROWS[i % len(ROWS)]},{123456789012 + i},{987654321098 - i},{i % 7}" for i in range(n)]


def zipped(datapoints: bytes, info: bytes = INFO.encode()) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("r/datapoints.csv", datapoints)
        zf.writestr("r/info.yml", info)
    return buf.getvalue()


def same(a: Any, b: Any) -> None:
    """The same measurement, whichever of the two was read block by block (its float columns kept
    as float32: each value the float32 nearest the whole-file reader's), and the same view."""
    assert (a.req_names, a.reached_names, a.classes, a.notes, a.columns) == (
        b.req_names, b.reached_names, b.classes, b.notes, b.columns,
    )  # fmt: skip
    for field in ("req_index", "reached_index", "intr_off"):
        assert np.array_equal(getattr(a, field), getattr(b, field)), field
    for field in ("wake_latency_ns", "intr_latency_ns", "ldist_ns", "silent_time_ns"):
        assert np.array_equal(*_as_narrower(getattr(a, field), getattr(b, field))), field
    assert a.residency_pct.keys() == b.residency_pct.keys()
    for col in a.residency_pct:
        assert np.array_equal(*_as_narrower(a.residency_pct[col], b.residency_pct[col])), col
    assert wult_view(a) == wult_view(b)


def _as_narrower(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    dtype = min(a.dtype, b.dtype, key=lambda d: d.itemsize)
    return a.astype(dtype), b.astype(dtype)


def test_a_file_of_many_blocks_gives_the_whole_files_measurement() -> None:
    data = csv(*wide_rows(60_000), header=WIDE_HEADER)
    assert len(data) > 5 * CHUNK_BYTES
    streamed = parse_wult_archive(zipped(data), "r.zip")
    same(streamed, parse_wult(data, INFO.encode()))
    assert streamed.count == 60_000
    same(parse_wult_files({"datapoints.csv": data, "info.yml": INFO.encode()}), streamed)


@pytest.mark.parametrize(
    ("damage", "column", "words"),
    [
        (lambda r: r.rsplit(",", 2)[0], 16, "short line"),
        (lambda r: r + ",7", 18, "long line"),
        (lambda r: r.replace("C6", "C6!", 1) if "C6" in r else "-5" + r[r.index(",") :], None, ""),
        (lambda r: "", None, "empty line"),
    ],
)
def test_errors_in_a_later_block_name_the_files_line(damage: Any, column: int | None, words: str) -> None:
    rows = wide_rows(40_000)
    rows[33_333] = damage(rows[33_333])
    data = csv(*rows, header=WIDE_HEADER)
    with pytest.raises(WultError) as whole:
        parse_wult(data, INFO.encode())
    with pytest.raises(WultError) as streamed:
        parse_wult_archive(zipped(data), "r.zip")
    w, s = whole.value, streamed.value
    assert (s.line, s.column, s.reason, s.column_name) == (w.line, w.column, w.reason, w.column_name)
    assert s.line == 33_335 and s.file == "r.zip:r/datapoints.csv"
    if column is not None:
        assert s.column == column
    assert words in s.reason


def test_blank_lines_at_a_blocks_end_are_refused_when_rows_follow() -> None:
    rows = wide_rows(30_000)
    text = csv(*rows, header=WIDE_HEADER)
    cut = text.index(b"\n", CHUNK_BYTES - 200) + 1  # blank lines at the end of the first block
    data = text[:cut] + b"\n \n" + text[cut:]
    with pytest.raises(WultError) as e:
        parse_wult_archive(zipped(data), "r.zip")
    assert e.value.line == text[:cut].count(b"\n") + 1 and "empty line" in e.value.reason
    # ...and kept when nothing follows them, as the whole file's reader keeps them.
    assert parse_wult_archive(zipped(text + b"\n\n \n"), "r.zip").count == 30_000


def test_more_than_32_requested_states_over_blocks() -> None:
    rows = wide_rows(40_000)
    for k in range(40):
        i = 1000 * k + 500  # a C6 row
        rows[i] = rows[i].replace(",C6,", f",C{20 + k},")
    rows = [r.replace(",POLL,", ",C6,") for r in rows]
    data = csv(*rows, header=WIDE_HEADER)
    with pytest.raises(WultError) as whole:
        parse_wult(data, INFO.encode())
    with pytest.raises(WultError) as streamed:
        parse_wult_archive(zipped(data), "r.zip")
    assert (streamed.value.line, streamed.value.column) == (whole.value.line, whole.value.column)
    assert "more than 32" in streamed.value.reason


def test_a_line_longer_than_a_block_is_refused() -> None:
    data = csv(*ROWS[:2], "9" * (CHUNK_BYTES + 10), *ROWS)
    with pytest.raises(WultError) as e:
        parse_wult_archive(zipped(data), "r.zip")
    assert e.value.line == 4 and "longer than" in e.value.reason


def big_member(size: int) -> bytes:
    """A zip whose datapoints.csv states `size` bytes (written in pieces: the test holds no copy)."""
    buf = io.BytesIO()
    row = (ROWS[0] + "\n").encode()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("r/info.yml", INFO)
        with zf.open("r/datapoints.csv", "w") as f:
            f.write((HEADER + "\n").encode())
            piece = row * (CHUNK_BYTES // len(row))
            written = 0
            while written < size:
                f.write(piece)
                written += len(piece)
    return buf.getvalue()


def test_a_150_mb_member_is_refused_from_its_stated_size_with_little_memory() -> None:
    data = big_member(150_000_000)
    assert len(data) < 1_000_000
    tracemalloc.start()
    try:
        with pytest.raises(WultError) as e:
            parse_wult_archive(data, "big.zip")
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert e.value.file == "big.zip:r/datapoints.csv" and f"{MAX_CSV_BYTES:,} allowed" in e.value.reason
    assert peak < 2 * 1024 * 1024


def test_a_tar_that_unpacks_too_far_is_refused_before_it_is_unpacked() -> None:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tf:
        for name, size in (("r/info.yml", None), ("r/big.bin", 200 * 1024 * 1024)):
            ti = tarfile.TarInfo(name)
            if size is None:
                ti.size = len(INFO)
                tf.addfile(ti, io.BytesIO(INFO.encode()))
            else:
                ti.size = size
                tf.addfile(ti, _Zeros(size))
    tracemalloc.start()
    try:
        with pytest.raises(WultError) as e:
            parse_wult_archive(buf.getvalue(), "big.tgz")
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert e.value.file == "big.tgz:r/big.bin" and "unpacks to more than" in e.value.reason
    assert peak < 2 * 1024 * 1024


class _Zeros(io.RawIOBase):
    def __init__(self, size: int) -> None:
        self.left = size

    def readinto(self, b: Any) -> int:
        n = min(len(b), self.left)
        b[:n] = bytes(n)
        self.left -= n
        return n

    def readable(self) -> bool:
        return True


def test_peak_memory_is_the_kept_arrays_not_the_text() -> None:
    """200,000 wide rows (~18 MB of CSV): the import's peak is a small multiple of the arrays it
    keeps (the whole-file reader peaked at 136 MB here: bytes, text, offsets of every comma)."""
    rows = 200_000
    data = zipped(csv(*wide_rows(rows), header=WIDE_HEADER))
    text_bytes = zipfile.ZipFile(io.BytesIO(data)).getinfo("r/datapoints.csv").file_size
    assert text_bytes > 18_000_000
    tracemalloc.start()
    try:
        m = parse_wult_archive(data, "r.zip")
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert m.count == rows
    # Kept: four time columns, IntrOff, six residency columns and a code per row, allocated once
    # (83 bytes a row as float64, the bound kept from then; 43 as the float32 they now are);
    # besides them, a block's transients and the classification's.
    kept = rows * (4 * 8 + 1 + 6 * 8 + 2)
    assert peak < 3 * kept, (peak, kept, text_bytes)


def test_a_long_files_columns_are_float32_and_its_view_peaks_under_twice_their_float64_size() -> None:
    """200,000 wide rows imported and their view built: the kept float columns are float32 (half
    the bytes), and the peak of both steps stays under twice what the kept columns took as
    float64 (83 bytes a row; the float64 import peaked at 180 bytes a row here, 122 now)."""
    from app.measurements.service import build_view

    rows = 200_000
    data = zipped(csv(*wide_rows(rows), header=WIDE_HEADER))
    build_view(parse_wult_archive(zipped(csv(*wide_rows(20_000), header=WIDE_HEADER)), "r.zip"))  # compiled
    tracemalloc.start()
    try:
        m = parse_wult_archive(data, "r.zip")
        view = build_view(m)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert view["count"] == rows
    floats = [m.wake_latency_ns, m.intr_latency_ns, m.ldist_ns, m.silent_time_ns, *m.residency_pct.values()]
    assert {a.dtype for a in floats} == {np.dtype(np.float32)}
    float64_kept = rows * (4 * 8 + 1 + 6 * 8 + 2)
    assert peak < 2 * float64_kept, (peak, float64_kept)


@pytest.mark.parametrize("app_client", ["sqlite"], indirect=True)
def test_a_third_import_while_two_parse_is_503_with_retry_after(app_client: Any) -> None:
    from app.measurements import service

    files = {"files": ("r.zip", zipped(csv(*ROWS)), "application/zip")}
    held = [service._parsing.acquire(blocking=False) for _ in range(service.MAX_PARSING)]
    assert all(held)
    try:
        r = app_client.post("/api/measurements", files=files)
        assert r.status_code == 503 and r.headers["retry-after"] == "2"
        assert "imports are being parsed" in r.json()["detail"]
    finally:
        for _ in held:
            service._parsing.release()
    r = app_client.post("/api/measurements", files=files)
    assert r.status_code == 201, r.text
    assert r.json()["count"] == len(ROWS)


def test_the_cpu_model_is_found_in_a_big_member_a_block_at_a_time() -> None:
    from app.measurements.service import measured_cpu

    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("r/info.yml", INFO)
        zf.writestr("r/stats/dmesg", b"[    0.000000] nothing here\n" * 500_000)  # ~14 MB
        zf.writestr("r/stats/cpuinfo", b"x" * (CHUNK_BYTES - 10) + b"\ncpu family\t: 6\nmodel\t\t: 85\n")
    tracemalloc.start()
    try:
        found = measured_cpu({"r.zip": buf.getvalue()})
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert found == (6, 85)
    assert peak < 8 * CHUNK_BYTES  # the whole-member reader held the 14 MB dmesg
