"""A wult raw result as it arrives: one zip or tar of the result directory, or its two files.

Finds `datapoints.csv` and `info.yml` among uploaded files or archive members, with bounds on what
an archive may unpack to, and reads the CSV as a stream: 1 MiB at a time, each block of whole lines
parsed by `app.measurements.wult` as it parses a file, and only the columns a measurement keeps
copied into arrays allocated once for the rows the member's size announces (float32: see
`_stored_dtype`). So a million-row result costs its arrays, not its text. Errors are the same
`WultError(file, line, column, reason)` (line numbers of the whole file); the file is then the
archive (or archive:member).
"""

from __future__ import annotations

import dataclasses
import io
import lzma
import re
import tarfile
import zipfile
import zlib
from collections.abc import Callable, Iterator, Mapping
from functools import partial
from typing import IO

import numpy as np

from app.measurements import wult
from app.measurements.wult import DATAPOINTS, INFO, MAX_DATAPOINTS, MAX_REQ_STATES, WultError, WultMeasurement

# Uncompressed bounds. A CSV row is ~130 bytes, so a million rows fit in 128 MiB; a bigger member
# is refused from its stated size, before a byte of it is unpacked.
MAX_CSV_BYTES = 128 * 1024 * 1024
MAX_INFO_BYTES = 1024 * 1024
# What every member of a tar may add up to (a tar is read in order: its listing unpacks what it skips).
MAX_ARCHIVE_BYTES = MAX_CSV_BYTES + 32 * 1024 * 1024
CHUNK_BYTES = 1024 * 1024  # read at a time; no CSV line may be longer
# What a damaged archive can raise while it is listed or unpacked (zipfile lets zlib's and lzma's
# errors through, NotImplementedError for unknown methods, RuntimeError for encrypted members).
_ARCHIVE_ERRORS = (
    OSError, EOFError, ValueError, RuntimeError, NotImplementedError, zipfile.BadZipFile, tarfile.TarError,
    zlib.error, lzma.LZMAError,
)  # fmt: skip
_BLANK = b" \t\r\n"


def parse_wult_files(files: Mapping[str, bytes]) -> WultMeasurement:
    """Uploaded files by name: one zip/tar of the result directory, or datapoints.csv and info.yml."""
    if len(files) == 1:
        ((name, data),) = files.items()
        if basename(name) not in (DATAPOINTS, INFO):
            return parse_wult_archive(data, name)
    by_base = {basename(n): (n, d) for n, d in files.items()}
    csv = by_base.get(DATAPOINTS)
    info = by_base.get(INFO)
    csv_name = csv[0] if csv else DATAPOINTS
    info_name = info[0] if info else INFO
    _check_pair(csv is not None, info is not None, csv_name, info_name)
    assert csv is not None and info is not None
    return read_datapoints(io.BytesIO(csv[1]), csv_name, wult._parse_info(info[1], info_name), len(csv[1]))


def parse_wult_archive(data: bytes, name: str = "archive") -> WultMeasurement:
    """A zip or tar (plain, gz, bz2, xz) holding one wult result directory."""
    members = _archive_members(data, name)
    csvs = sorted(p for p in members if basename(p) == DATAPOINTS)
    if not csvs:
        raise WultError(name, None, None, "no datapoints.csv in the archive")
    if len(csvs) > 1:
        raise WultError(name, None, None, f"several wult results in one archive: {', '.join(csvs[:3])}")
    csv_path = csvs[0]
    info_path = csv_path[: -len(DATAPOINTS)] + INFO
    csv_where, info_where = f"{name}:{csv_path}", f"{name}:{info_path}"
    _check_pair(True, info_path in members, csv_where, info_where)
    csv_size, open_csv = _bounded(csv_where, members[csv_path], MAX_CSV_BYTES)
    info = wult._parse_info(_read_member(info_where, members[info_path], MAX_INFO_BYTES), info_where)
    try:
        with open_csv() as stream:
            return read_datapoints(stream, csv_where, info, csv_size)
    except _ARCHIVE_ERRORS as err:
        if isinstance(err, WultError):
            raise
        raise WultError(csv_where, None, None, f"cannot unpack ({err})") from None


def basename(path: str) -> str:
    """The file name of an upload or archive member, whichever separator its path uses."""
    return path.replace("\\", "/").rstrip("/").rsplit("/", 1)[-1]


def _check_pair(has_csv: bool, has_info: bool, csv_name: str, info_name: str) -> None:
    """`parse_wult`'s refusals of a result missing one of its files, in its order."""
    if not has_info:
        raise WultError(
            info_name, None, None, "missing info.yml: a wult raw result has datapoints.csv and info.yml"
        )
    if not has_csv:
        raise WultError(csv_name, None, None, "missing datapoints.csv")


# --------------------------------------------------------------------------- the CSV, streamed


def read_datapoints(stream: IO[bytes], name: str, info: wult.WultInfo, size: int) -> WultMeasurement:
    """A measurement from a datapoints.csv stream of `size` bytes (as stated: the arrays' estimate).

    A file of one block is parsed by wult's own reader as it stands; a longer one block by block,
    each block with the header before it, errors moved to the file's line numbers."""
    blocks = _blocks(stream, name)
    head = next(blocks, b"")
    header = head[: head.find(b"\n") + 1] or head
    second = next(blocks, None)
    if second is None:
        return wult._parse_datapoints(head, name, info)
    merged = _Merged(name, size)
    first_line = 2  # of the block's first line in the file
    blank_from: int | None = None  # the first of blank lines that must be followed by nothing
    first_blocks = [head[len(header) :], second]
    del head, second  # no block outlives its turn
    for block in _chain(first_blocks, blocks):
        filled = block.rstrip(_BLANK)
        if filled and blank_from is not None:
            raise WultError(name, blank_from, None, "empty line")
        if filled:
            try:
                part = wult._parse_datapoints(header + block, name, info)
            except WultError as err:
                raise _moved(err, first_line) from None
            merged.add(part, first_line, len(block))
            if block[len(filled) :].count(b"\n") > 1:  # blank lines after its last row
                blank_from = first_line + filled.count(b"\n") + 1
        elif blank_from is None:
            blank_from = first_line
        first_line += block.count(b"\n")
    return merged.measurement()


def _blocks(stream: IO[bytes], name: str) -> Iterator[bytes]:
    """Whole lines, about CHUNK_BYTES at a time (the last block may lack its final newline)."""
    rest, total, line = b"", 0, 1
    while chunk := stream.read(CHUNK_BYTES):
        total += len(chunk)
        if total > MAX_CSV_BYTES:
            raise WultError(name, None, None, f"more than the {MAX_CSV_BYTES:,} bytes allowed once unpacked")
        buf = rest + chunk
        cut = buf.rfind(b"\n") + 1
        first_end = buf.find(b"\n")  # only the first line can have begun in an earlier chunk
        if (first_end if first_end >= 0 else len(buf)) > CHUNK_BYTES:
            raise WultError(name, line, None, f"a line longer than {CHUNK_BYTES:,} bytes")
        rest = buf[cut:]
        if cut:
            line += buf.count(b"\n", 0, cut)
            yield buf[:cut]
    if rest:
        yield rest


def _chain(first: list[bytes], rest: Iterator[bytes]) -> Iterator[bytes]:
    """The non-empty blocks of `first`, popped as they go (so none is held after its turn), then `rest`."""
    while first:
        if part := first.pop(0):
            yield part
            del part
    yield from rest


def _moved(err: WultError, first_line: int) -> WultError:
    """A block's error at the file's line (a block's line 1 is the header, the file's too)."""
    line = err.line if err.line is None or err.line == 1 else err.line + first_line - 2
    return WultError(err.file, line, err.column, err.reason, err.column_name)


class _Merged:
    """The kept columns of every block so far, in arrays allocated for the rows `size` bytes hold."""

    def __init__(self, name: str, size: int) -> None:
        self.name, self.size, self.rows = name, size, 0
        self.first: WultMeasurement | None = None
        self.states: list[str] = []  # requested states in order of appearance; codes index it
        self.codes = np.empty(0, dtype=np.int16)
        # Each block's rows are classed by wult's reader as it reads the block (a class depends on
        # the row alone); the labels in order of appearance, and per row an index into them.
        self.reached: list[str] = []
        self.reached_codes = np.empty(0, dtype=np.int16)
        self.columns: dict[str, np.ndarray] = {}

    def add(self, part: WultMeasurement, first_line: int, nbytes: int) -> None:
        """Append a block's rows (`nbytes` long, its first on line `first_line` of the file)."""
        n = part.count
        if self.rows + n > MAX_DATAPOINTS:
            raise WultError(self.name, MAX_DATAPOINTS + 2, None, f"more than {MAX_DATAPOINTS:,} datapoints")
        if self.first is None:
            self.first = part
            self._allocate(min(MAX_DATAPOINTS, n * self.size // max(1, nbytes) + n))
        elif self.rows + n > self.codes.size:  # the stated size undercounted: grow by half
            self._allocate(min(MAX_DATAPOINTS, max(self.rows + n, self.codes.size * 3 // 2)))
        for state in part.req_names:
            if state not in self.states:
                self.states.append(state)
        if len(self.states) > MAX_REQ_STATES:
            over = [part.req_names.index(s) for s in self.states[MAX_REQ_STATES:]]
            row = int(np.flatnonzero(np.isin(part.req_index, over))[0])
            col = part.columns.index("ReqCState")
            reason = f"more than {MAX_REQ_STATES} different requested states"
            raise WultError(self.name, first_line + row, col + 1, reason, "ReqCState")
        to_code = np.array([self.states.index(s) for s in part.req_names], dtype=np.int16)
        end = self.rows + n
        self.codes[self.rows : end] = to_code[part.req_index]
        self.reached += [label for label in part.reached_names if label not in self.reached]
        to_reached = np.array([self.reached.index(r) for r in part.reached_names], dtype=np.int16)
        self.reached_codes[self.rows : end] = to_reached[part.reached_index]
        for key, values in _kept(part).items():
            self.columns[key][self.rows : end] = values
        self.rows = end

    def _allocate(self, capacity: int) -> None:
        assert self.first is not None
        grown = {key: np.empty(capacity, dtype=_stored_dtype(v)) for key, v in _kept(self.first).items()}
        for key, old in self.columns.items():
            grown[key][: self.rows] = old[: self.rows]
        codes = np.empty(capacity, dtype=np.int16)
        codes[: self.rows] = self.codes[: self.rows]
        reached = np.empty(capacity, dtype=np.int16)
        reached[: self.rows] = self.reached_codes[: self.rows]
        self.columns, self.codes, self.reached_codes = grown, codes, reached

    def measurement(self) -> WultMeasurement:
        """The whole file's measurement, classed and noted as wult's reader does."""
        first, n = self.first, self.rows
        assert first is not None
        column = {key: v[:n] for key, v in self.columns.items()}
        req_names = tuple(sorted(self.states, key=wult._state_sort_key))
        remap = np.array([req_names.index(s) for s in self.states], dtype=np.int16)
        req_index = remap[self.codes[:n]]
        residency = {k.removeprefix("pct:"): v for k, v in column.items() if k.startswith("pct:")}
        reached_names = tuple(sorted(self.reached, key=_reached_order))
        to_sorted = np.array([reached_names.index(r) for r in self.reached], dtype=np.int16)
        reached_index = to_sorted[self.reached_codes[:n]]
        intr_off = column.get("intr_off")
        classes = wult._classes(req_names, req_index, reached_names, reached_index, intr_off)
        # Every note but the last depends on the header and info.yml alone; the last, on the counts.
        notes = list(first.notes[:-1] if any(not c.enough_for_p9999 for c in first.classes) else first.notes)
        short = [c for c in classes if not c.enough_for_p9999]
        if short:
            notes.append(_short_note(len(short), len(classes)))
        return dataclasses.replace(
            first,
            req_names=req_names,
            req_index=req_index,
            reached_names=reached_names,
            reached_index=reached_index,
            wake_latency_ns=column["wake"],
            intr_latency_ns=column.get("intr"),
            intr_off=intr_off,
            ldist_ns=column.get("ldist"),
            silent_time_ns=column.get("silent"),
            residency_pct=residency,
            classes=classes,
            notes=tuple(notes),
        )


_REACHED_LABEL = re.compile(r"^CC(\d+)(?:\+MC(\d+))?(?:\+PC(\d+))?$")


def _reached_order(label: str) -> tuple[int, int, int]:
    """wult's reader's order of class labels ("CC6+PC6"): by core, then module, then package state."""
    m = _REACHED_LABEL.match(label)
    return (int(m.group(1)), int(m.group(2) or 0), int(m.group(3) or 0)) if m else (0, 0, 0)


def _short_note(short: int, classes: int) -> str:
    """wult's reader's note on classes too small for a p99.99 (its words)."""
    return (
        f"{short} of {classes} classes have fewer than {wult.P9999_SAMPLES:,} samples: "
        "too few for a 99.99th percentile read from the data"
    )


def _stored_dtype(values: np.ndarray) -> np.dtype:
    """float32 for the kept float columns, halving a million rows' arrays (~80 MB to ~40 MB).

    Precision allows it. Times: every statistic rounds them to whole ns first (as the engine
    counts), and a float32 holds every whole ns below 2**24 ns (16.8 ms, far above a wake-up's
    us to hundreds of us) exactly, beyond that within 6e-8 relative; only a sample whose ns
    fraction sits at one half may round the other way, by 1 ns. Residency percentages: a
    float32's seven significant digits keep them within 4e-6, far below the 1e-4 the view rounds
    their means to (summed in float64). Samples handed out for fits are float64 again."""
    return np.dtype(np.float32) if values.dtype == np.float64 else values.dtype


def _kept(m: WultMeasurement) -> dict[str, np.ndarray]:
    """The per-row arrays a measurement keeps (besides its requested-state codes), by key."""
    arrays = {"wake": m.wake_latency_ns, "intr": m.intr_latency_ns, "intr_off": m.intr_off,
              "ldist": m.ldist_ns, "silent": m.silent_time_ns}  # fmt: skip
    kept = {k: v for k, v in arrays.items() if v is not None}
    kept.update({f"pct:{col}": v for col, v in m.residency_pct.items()})
    return kept


# ------------------------------------------------------------------------------------- archives


Opener = Callable[[], IO[bytes]]


def _archive_members(data: bytes, name: str) -> dict[str, tuple[int, Opener]]:
    """Regular files of a zip or tar: their stated size and how to open them."""
    if data[:4] == b"PK\x03\x04":
        try:
            zf = zipfile.ZipFile(io.BytesIO(data))
            infos = [i for i in zf.infolist() if not i.is_dir()]
        except _ARCHIVE_ERRORS as err:
            raise WultError(name, None, None, f"a broken zip archive ({err})") from None
        return {i.filename: (i.file_size, partial(zf.open, i)) for i in infos}
    members: list[tarfile.TarInfo] = []
    try:
        tf = tarfile.open(fileobj=io.BytesIO(data), mode="r:*")
        total = 0
        # Member by member: each header is read before the data it announces is skipped (unpacked).
        while (m := tf.next()) is not None:
            total += m.size
            if total > MAX_ARCHIVE_BYTES:
                raise WultError(
                    f"{name}:{m.name}", None, None,
                    f"the archive unpacks to more than the {MAX_ARCHIVE_BYTES:,} bytes allowed",
                )  # fmt: skip
            if m.isfile():
                members.append(m)
    except _ARCHIVE_ERRORS as err:
        if isinstance(err, WultError):
            raise
        raise WultError(name, None, None, f"not a zip or tar archive ({err})") from None

    def opener(m: tarfile.TarInfo) -> IO[bytes]:
        f = tf.extractfile(m)
        assert f is not None  # regular files only
        return f

    return {m.name: (m.size, partial(opener, m)) for m in members}


def _bounded(where: str, entry: tuple[int, Opener], limit: int) -> tuple[int, Opener]:
    """A member that states no more than `limit` bytes (a zip or tar member yields no more than
    it states)."""
    size, _ = entry
    if size > limit:
        raise WultError(where, None, None, f"{size:,} bytes unpacked, more than the {limit:,} allowed")
    return entry


def _read_member(where: str, entry: tuple[int, Opener], limit: int) -> bytes:
    """One small member's bytes, refusing more than `limit`."""
    _, open_ = _bounded(where, entry, limit)
    try:
        with open_() as f:
            out = f.read(limit + 1)
    except _ARCHIVE_ERRORS as err:
        raise WultError(where, None, None, f"cannot unpack ({err})") from None
    if len(out) > limit:
        raise WultError(where, None, None, f"more than the {limit:,} bytes allowed once unpacked")
    return out
