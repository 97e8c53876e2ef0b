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
