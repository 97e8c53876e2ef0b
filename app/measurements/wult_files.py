"""A wult raw result as it arrives: one zip or tar of the result directory, or its two files.

Finds `datapoints.csv` and `info.yml` among uploaded files or archive members, with bounds on what
an archive may unpack to, and hands their bytes to `app.measurements.wult.parse_wult`. Errors are
the same `WultError(file, line, column, reason)`; the file is then the archive (or archive:member).
"""

from __future__ import annotations

import io
import lzma
import tarfile
import zipfile
import zlib
from collections.abc import Callable, Mapping
from functools import partial
from typing import IO

from app.measurements.wult import DATAPOINTS, INFO, WultError, WultMeasurement, parse_wult

# Uncompressed bounds on what an archive may unpack to (the request body itself is capped at
# 8 MiB by the caller): a CSV row is ~130 bytes, so a million rows fit.
MAX_CSV_BYTES = 160 * 1024 * 1024
MAX_INFO_BYTES = 1024 * 1024
# What a damaged archive can raise while it is listed or unpacked (zipfile lets zlib's and lzma's
# errors through, NotImplementedError for unknown methods, RuntimeError for encrypted members).
_ARCHIVE_ERRORS = (
    OSError, EOFError, ValueError, RuntimeError, NotImplementedError, zipfile.BadZipFile, tarfile.TarError,
    zlib.error, lzma.LZMAError,
)  # fmt: skip


def parse_wult_files(files: Mapping[str, bytes]) -> WultMeasurement:
    """Uploaded files by name: one zip/tar of the result directory, or datapoints.csv and info.yml."""
    if len(files) == 1:
        ((name, data),) = files.items()
        if basename(name) not in (DATAPOINTS, INFO):
            return parse_wult_archive(data, name)
    by_base = {basename(n): (n, d) for n, d in files.items()}
    csv = by_base.get(DATAPOINTS)
    info = by_base.get(INFO)
    return parse_wult(
        csv[1] if csv else None,
        info[1] if info else None,
        csv_name=csv[0] if csv else DATAPOINTS,
        info_name=info[0] if info else INFO,
    )


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
    csv_bytes = _read_member(name, csv_path, members[csv_path], MAX_CSV_BYTES)
    info_bytes = (
        _read_member(name, info_path, members[info_path], MAX_INFO_BYTES) if info_path in members else None
    )
    return parse_wult(csv_bytes, info_bytes, csv_name=f"{name}:{csv_path}", info_name=f"{name}:{info_path}")


def basename(path: str) -> str:
    """The file name of an upload or archive member, whichever separator its path uses."""
    return path.replace("\\", "/").rstrip("/").rsplit("/", 1)[-1]


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
    try:
        tf = tarfile.open(fileobj=io.BytesIO(data), mode="r:*")
        members = [m for m in tf.getmembers() if m.isfile()]
    except _ARCHIVE_ERRORS as err:
        raise WultError(name, None, None, f"not a zip or tar archive ({err})") from None

    def opener(m: tarfile.TarInfo) -> IO[bytes]:
        f = tf.extractfile(m)
        assert f is not None  # regular files only
        return f

    return {m.name: (m.size, partial(opener, m)) for m in members}


def _read_member(archive: str, member: str, entry: tuple[int, Opener], limit: int) -> bytes:
    """One member's bytes, refusing more than `limit` (a stated size can lie)."""
    where = f"{archive}:{member}"
    size, open_ = entry
    if size > limit:
        raise WultError(where, None, None, f"{size:,} bytes unpacked, more than the {limit:,} allowed")
    try:
        with open_() as f:
            out = f.read(limit + 1)
    except _ARCHIVE_ERRORS as err:
        raise WultError(where, None, None, f"cannot unpack ({err})") from None
    if len(out) > limit:
        raise WultError(where, None, None, f"more than the {limit:,} bytes allowed once unpacked")
    return out
