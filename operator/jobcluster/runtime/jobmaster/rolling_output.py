"""One output stream of the program kept in a bounded set of rolling files, read by logical byte offset.

A streaming job runs for days, and what its program prints must not fill the
disk. The stream is written to a *live* file (``driver.out``); when the next
byte would make it larger than ``max_file_size``, it is renamed to
``driver.out.1`` (the previous ``.1`` becomes ``.2``, and so on) and a new
live file is started. At most ``max_files`` files are kept, the live one
included, so one stream takes at most ``max_files * max_file_size`` bytes; the
oldest file is deleted when another would be one too many. The naming is
log4j's ``RollingFileAppender`` / logback's fixed-window one.

Why not ``logging.handlers.RotatingFileHandler``: it rolls over between log
*records*, text it encodes itself, and keeps a record whole even when the record
alone is larger than the limit, so a file's size is not bounded and a byte
offset cannot be mapped to a file. Here the stream is bytes as the program
wrote them (any encoding, partial lines), split at exactly ``max_file_size``
bytes, which keeps both the bound and the offset arithmetic exact: a file is
rotated only once it is full, so every rotated file holds exactly
``max_file_size`` bytes and the live file at most that.

Offsets are *logical*: byte N is the N-th byte the stream received since this
object was created (over every attempt of the job, which all write to the
same object), whatever file holds it now. Files found in place when the object
is created (a previous JobManager's) are taken as the beginning of the stream:
offset 0 is their oldest kept byte. A read from an offset whose file was
deleted starts at the oldest byte still kept, and says so.

Writes come from the threads that copy the program's pipes, reads from the
REST endpoint's worker threads; one lock orders them, so a read never sees a
file half renamed.
"""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO


@dataclass(frozen=True)
class OutputChunk:
    """Bytes of a stream: ``data`` begins at logical byte ``offset`` (which may lie after the offset asked for)."""

    offset: int
    data: bytes


class RollingOutputFile:
    """The stream kept in ``path`` and its rotated files ``path.1`` .. ``path.<max_files - 1>``.

    ``max_file_size``: bytes per file (at least 1); ``max_files``: files kept,
    the live one included (at least 1). ValueError for smaller values. The
    files are opened lazily, on the first write; :meth:`close` closes the live
    file (writing afterwards opens it again).
    """

    def __init__(self, path: Path, max_file_size: int, max_files: int) -> None:
        if max_file_size < 1:
            raise ValueError(f"max_file_size must be at least 1 byte, got {max_file_size}")
        if max_files < 1:
            raise ValueError(f"max_files must be at least 1, got {max_files}")
        self.path = path
        self.max_file_size = max_file_size
        self.max_files = max_files
        self._lock = threading.Lock()
        self._live: BinaryIO | None = None
        # Logical offset of the first byte of each kept file, newest (the live file) first; the sizes follow from
        # the next one's start, the live file's from its own size. Read from the files in place (see the module).
        self._starts = self._existing_starts()

    def _existing_starts(self) -> list[int]:
        sizes = [_size(self._file(i)) for i in range(self.max_files)]
        # a gap (a missing rotated file) ends what belongs to this stream: older files are from another configuration
        kept = next((i for i in range(1, self.max_files) if sizes[i] is None), self.max_files)
        starts: list[int] = []
        total = 0
        for size in reversed([s or 0 for s in sizes[:kept]]):
            starts.insert(0, total)
            total += size
        return starts

    def _file(self, index: int) -> Path:
        return self.path if index == 0 else self.path.with_name(f"{self.path.name}.{index}")

    # ---- writing ----------------------------------------------------------------------

    def write(self, data: bytes) -> None:
        """Append ``data`` (any length; a write larger than a file spans files); OSError from the file system."""
        with self._lock:
            view = memoryview(data)
            while view:
                live = self._open_live()
                used = live.tell()
                if used >= self.max_file_size:
                    self._roll()
                    continue
                room = self.max_file_size - used
                live.write(view[:room])
                view = view[room:]
            if self._live is not None:
                self._live.flush()  # readers open the files themselves: what was written must be in them

    def _open_live(self) -> BinaryIO:
        if self._live is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._live = open(self.path, "ab")  # noqa: SIM115 - kept open across writes, closed by close() or _roll()
        return self._live

    def _roll(self) -> None:
        """The live file becomes ``.1``, each ``.i`` becomes ``.i+1``, the oldest beyond ``max_files`` is deleted."""
        assert self._live is not None
        end = self._starts[0] + self._live.tell()
        self._live.close()
        self._live = None
        try:
            os.unlink(self._file(self.max_files - 1))
        except FileNotFoundError:
            pass
        for index in range(self.max_files - 2, -1, -1):
            try:
                os.replace(self._file(index), self._file(index + 1))
            except FileNotFoundError:
                pass
        self._starts = [end, *self._starts][: self.max_files]

    def close(self) -> None:
        with self._lock:
            if self._live is not None:
                self._live.close()
                self._live = None

    # ---- reading ----------------------------------------------------------------------

    def end(self) -> int:
        """The logical offset after the last byte written (the stream's length in bytes)."""
        with self._lock:
            return self._starts[0] + self._live_size()

    def first_kept(self) -> int:
        """The logical offset of the oldest byte still kept; bytes before it were rotated away."""
        with self._lock:
            return self._starts[-1]

    def _live_size(self) -> int:
        if self._live is not None:
            return self._live.tell()
        return _size(self.path) or 0

    def read(self, offset: int, limit: int) -> OutputChunk:
        """Up to ``limit`` bytes from logical byte ``offset``, across files; from the oldest kept byte when
        ``offset`` was rotated away (``chunk.offset`` says where the bytes begin, and is never before ``offset``).
        Empty at or past the end. ValueError for a negative ``offset``."""
        if offset < 0:
            raise ValueError(f"offset must be 0 or more, got {offset}")
        with self._lock:
            start = max(offset, self._starts[-1])
            parts: list[bytes] = []
            remaining = limit
            position = start
            # oldest first: index i holds [starts[i], starts[i-1]) with the live file (i = 0) open-ended
            for index in range(len(self._starts) - 1, -1, -1):
                if remaining <= 0:
                    break
                file_start = self._starts[index]
                file_end = self._starts[index - 1] if index > 0 else None
                if file_end is not None and position >= file_end:
                    continue
                data = _read(self._file(index), position - file_start, remaining)
                parts.append(data)
                position += len(data)
                remaining -= len(data)
                if file_end is not None and position < file_end:
                    break  # the file is shorter than its place in the stream says: nothing after it is contiguous
            return OutputChunk(start, b"".join(parts))


def _size(path: Path) -> int | None:
    try:
        return path.stat().st_size
    except FileNotFoundError:
        return None


def _read(path: Path, position: int, limit: int) -> bytes:
    try:
        with open(path, "rb") as f:
            f.seek(position)
            return f.read(limit)
    except FileNotFoundError:
        return b""
