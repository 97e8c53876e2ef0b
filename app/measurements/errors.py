"""The one error a measured file gives when it cannot be read: the file, line and column named."""

from __future__ import annotations


class FileError(ValueError):
    """A file that cannot be read: which file, line and column (1-based; None: the whole file)."""

    def __init__(
        self, file: str, line: int | None, column: int | None, reason: str, column_name: str | None = None
    ) -> None:
        where = file
        if line is not None:
            where += f", line {line}"
        if column is not None:
            where += f", column {column}" + (f" ({column_name})" if column_name else "")
        super().__init__(f"{where}: {reason}")
        self.file = file
        self.line = line
        self.column = column
        self.column_name = column_name
        self.reason = reason


def decoded(data: bytes, name: str, error: type[FileError] = FileError) -> str:
    """A measured file's text: `error` naming the line and column of a NUL byte or of bytes that
    are not UTF-8, or saying the file is empty."""
    at, reason, text = data.find(b"\0"), "binary data (a NUL byte): not a text file", ""
    if at < 0:
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as err:
            at, reason = err.start, "binary data: not UTF-8 text"
    if at >= 0:
        raise error(name, data.count(b"\n", 0, at) + 1, at - data.rfind(b"\n", 0, at), reason)
    if not text.strip():
        raise error(name, None, None, "the file is empty")
    return text
