"""Reading an upload line by line in bounded memory (the streamed parsers' one line reader).

A line is at most :data:`MAX_LINE_BYTES` long, so a file without newlines is refused at that
length instead of being read whole; UTF-8 is checked line by line, so the error names the line.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import IO

from .records import IngestError

#: longest line of a CSV, JSONL or LIBSVM upload
MAX_LINE_BYTES = 16 * 1024 * 1024
BOM = b"\xef\xbb\xbf"


def binary_lines(fh: IO[bytes]) -> Iterator[tuple[int, bytes]]:
    """``(line number from 1, raw line with its newline)`` of ``fh``; a UTF-8 BOM at the start
    is dropped; IngestError naming the line when one is longer than :data:`MAX_LINE_BYTES`."""
    number = 0
    while True:
        raw = fh.readline(MAX_LINE_BYTES + 1)
        if not raw:
            return
        number += 1
        if len(raw) > MAX_LINE_BYTES:
            raise IngestError(f"line {number}: longer than {MAX_LINE_BYTES} bytes")
        if number == 1 and raw.startswith(BOM):
            raw = raw[len(BOM):]
        yield number, raw


def text_lines(fh: IO[bytes]) -> Iterator[tuple[int, str]]:
    """:func:`binary_lines` decoded as UTF-8; IngestError naming the line and the file offset
    of the first byte that is not UTF-8."""
    offset = 0
    for number, raw in binary_lines(fh):
        try:
            yield number, raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise IngestError(f"line {number}: not valid UTF-8 (byte {offset + exc.start})") from None
        offset += len(raw)
