"""Open a user's file safely: the path, its size, and what its first bytes say it is, each as an InputError.

Logs, traces and scenario files all come through here, so every one of them answers a directory, a device,
an unreadable file, a compressed archive, UTF-16 or a binary file with the same one-line message.
"""

from __future__ import annotations

import io
from pathlib import Path
from typing import BinaryIO

from engine_model.errors import InputError

SNIFF_BYTES = 65536
MAX_NAME = 80
MAGIC = (  # (first bytes, what the file is) for formats people upload by mistake
    (b"\x1f\x8b", "gzip-compressed: decompress it first (gunzip)"),
    (b"PK\x03\x04", "a zip archive: extract the file first"),
    (b"BZh", "bzip2-compressed: decompress it first (bunzip2)"),
    (b"\xfd7zXZ\x00", "xz-compressed: decompress it first (unxz)"),
    (b"(\xb5/\xfd", "zstd-compressed: decompress it first (unzstd)"),
    (b"\xff\xfe", "UTF-16 text: save it as UTF-8"),
    (b"\xfe\xff", "UTF-16 text: save it as UTF-8"),
)


def name_of(path: str | Path) -> str:
    """A path short enough to quote in a one-line message."""
    text = str(path)
    return text if len(text) <= MAX_NAME else f"{text[:MAX_NAME - 3]}..."


def open_file(path: str | Path, max_bytes: int) -> BinaryIO:
    """A regular file opened for reading, after its size is checked; never a directory, device or pipe."""
    where = name_of(path)
    try:
        path = Path(path)
        size = path.stat().st_size if path.is_file() else None
        handle = path.open("rb") if size is not None and size <= max_bytes else None
    except (OSError, ValueError) as err:
        raise InputError(where, f"cannot be read ({reason(err)})") from None
    if size is None:
        raise InputError(where, "is not a readable file (a directory, a device or missing)")
    if handle is None:
        raise InputError(where, f"is {size:,} bytes; the limit is {max_bytes:,}")
    return handle


def reason(err: Exception) -> str:
    return getattr(err, "strerror", None) or type(err).__name__


def read_capped(path: str | Path, max_bytes: int) -> bytes:
    """The whole file, reading at most max_bytes + 1 bytes (a /proc file reports size 0 but may hold more)."""
    where = name_of(path)
    with open_file(path, max_bytes) as handle:
        try:
            data = handle.read(max_bytes + 1)
        except OSError as err:
            raise InputError(where, f"cannot be read ({reason(err)})") from None
    if len(data) > max_bytes:
        raise InputError(where, f"is more than {max_bytes:,} bytes; that is the limit")
    sniff(data[:SNIFF_BYTES], where)
    return data


def sniff(head: bytes, where: str) -> None:
    """Reject what is plainly not a text file: compressed archives, UTF-16 and binary data (NUL bytes)."""
    for magic, what in MAGIC:
        if head.startswith(magic):
            raise InputError(where, f"is {what}")
    nul = head.find(b"\x00")
    if nul >= 0:
        line_no = head.count(b"\n", 0, nul) + 1
        raise InputError(f"{where} line {line_no}", "contains NUL bytes: this looks binary, not a text file")


def decode(data: bytes) -> tuple[str, int | None]:
    """UTF-8 text, and the first line that held bytes that are not UTF-8 (replaced by U+FFFD), or None."""
    try:
        return data.decode("utf-8"), None
    except UnicodeDecodeError as err:
        return data.decode("utf-8", "replace"), data.count(b"\n", 0, err.start) + 1


class Lines:
    """The lines of a text, a byte string or a file, read one at a time and never all at once.

    Yields (line number, text without its line ending, whether it ended with a newline); a line longer
    than max_line is yielded as None and skipped over without being held. `bad_line` is the first line
    that held bytes that are not UTF-8 (they were replaced), or None.
    """

    def __init__(self, source: str | bytes | Path, *, max_bytes: int, max_line: int, where: str = "trace"):
        self.max_line, self.bad_line = max_line, None
        self.where = name_of(source) if isinstance(source, Path) else where
        if isinstance(source, str):
            if len(source) > max_bytes:
                raise InputError(where, f"is {len(source):,} characters; the limit is {max_bytes:,}")
            sniff(source[:SNIFF_BYTES].encode("utf-8", "surrogatepass"), where)
            self.text, self.handle = source, None
            return
        if isinstance(source, bytes | bytearray):
            if len(source) > max_bytes:
                raise InputError(where, f"is {len(source):,} bytes; the limit is {max_bytes:,}")
            self.handle = io.BytesIO(source)
        elif isinstance(source, Path):
            self.handle = open_file(source, max_bytes)
        else:
            raise InputError(where, f"expected text, bytes or a Path, got {type(source).__name__}")
        self.text = None
        sniff(self._read(lambda: self.handle.read(SNIFF_BYTES)), self.where)
        self._read(lambda: self.handle.seek(0))

    def __enter__(self) -> Lines:
        return self

    def __exit__(self, *exc) -> None:
        if self.handle is not None:
            self.handle.close()

    def _read(self, call):
        try:
            return call()
        except OSError as err:
            raise InputError(self.where, f"cannot be read ({reason(err)})") from None

    def __iter__(self):
        return self._text_lines() if self.text is not None else self._file_lines()

    def _text_lines(self):
        text, start, line_no = self.text, 0, 0
        while start < len(text):
            end = text.find("\n", start)
            line_no += 1
            complete = end >= 0
            end = end if complete else len(text)
            line = text[start:end] if end - start <= self.max_line else None
            start = end + 1
            yield line_no, None if line is None else line.rstrip("\r"), complete

    def _file_lines(self):
        line_no = 0
        while raw := self._read(lambda: self.handle.readline(self.max_line + 1)):
            line_no += 1
            complete = raw.endswith(b"\n")
            if not complete and len(raw) > self.max_line:
                yield line_no, None, self._skip_rest()
                continue
            yield line_no, self._decode(raw, line_no).rstrip("\n").rstrip("\r"), complete

    def _skip_rest(self) -> bool:
        """Read past the rest of an over-long line, a megabyte at a time; False when the file ended first."""
        while raw := self._read(lambda: self.handle.readline(1 << 20)):
            if raw.endswith(b"\n"):
                return True
        return False

    def _decode(self, raw: bytes, line_no: int) -> str:
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError:
            self.bad_line = self.bad_line or line_no
            return raw.decode("utf-8", "replace")
