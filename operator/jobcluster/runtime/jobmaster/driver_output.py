"""What the program's driver wrote, and why it failed, read from the cluster's log directory.

The driver process (see :mod:`spark_application`) writes three files there,
appended to by every attempt of the job: ``driver.out`` (the program's stdout),
``driver.err`` (the program's stderr) and ``driver.log`` (Spark's log4j log of
the driver JVM). The REST endpoint serves the first two from a byte offset, so
an attached client streams them as they are written, on any target; the files
stay in the log directory after the cluster is gone.

A failed program's cause is taken from its own stderr: its last Python
traceback with the exception's whole message (for a ``Py4JJavaError`` the
Java exception and its causes, without the Java stack frames), else the last
lines (a ``SyntaxError`` in the script, ``sys.exit("message")``), and how the
process ended (its exit code, or the signal that killed it). When Spark
started executors that never registered, the last one's output (in the Spark
workers' work directories) is what the user needs to read instead.
"""

from __future__ import annotations

import re
import signal
from pathlib import Path

DRIVER_STDOUT_FILE = "driver.out"
DRIVER_STDERR_FILE = "driver.err"
DRIVER_LOG_FILE = "driver.log"
#: The streams a client can read, by the names of the REST paths.
OUTPUT_STREAMS = {"stdout": DRIVER_STDOUT_FILE, "stderr": DRIVER_STDERR_FILE}
#: Most bytes one read returns (1 MiB); a client reads again from where it stopped.
MAX_OUTPUT_CHUNK = 1 << 20

ERROR_TAIL_BYTES = 64 * 1024  # of stderr searched for the program's error
TAIL_LINES = 30  # of stderr shown when it holds no traceback
TRACEBACK_FRAME_LINES = 30  # lines of a traceback's frames shown (the innermost ones)
EXCEPTION_LINES = 40  # lines of an exception's message shown
_TRACEBACK_START = "Traceback (most recent call last)"
_JAVA_FRAME = re.compile(r"^\s+(at |\.\.\. \d+ more)")


def driver_output_file(log_dir: Path, stream: str) -> Path:
    """The file of ``stream`` (``stdout`` or ``stderr``) in ``log_dir``; ValueError for another name."""
    try:
        return log_dir / OUTPUT_STREAMS[stream]
    except KeyError:
        raise ValueError(f"unknown output stream {stream!r}; use one of {', '.join(OUTPUT_STREAMS)}") from None


def read_from(path: Path, offset: int, limit: int = MAX_OUTPUT_CHUNK) -> bytes:
    """Up to ``limit`` bytes of ``path`` from byte ``offset``; empty past the end or when there is no file yet."""
    try:
        with open(path, "rb") as f:
            f.seek(offset)
            return f.read(limit)
    except FileNotFoundError:
        return b""


def file_size(path: Path) -> int:
    """Size of ``path`` in bytes, 0 when it does not exist."""
    try:
        return path.stat().st_size
    except FileNotFoundError:
        return 0


def stderr_tail(path: Path, start: int) -> str:
    """The last ERROR_TAIL_BYTES of ``path`` written at or after byte ``start`` (one attempt's stderr)."""
    begin = max(start, file_size(path) - ERROR_TAIL_BYTES)
    return read_from(path, begin, ERROR_TAIL_BYTES).decode(errors="replace")


def exit_description(exit_code: int) -> str:
    """``the PySpark program exited with code 3`` / ``... was killed by signal SIGKILL`` (negative codes, as asyncio gives them)."""
    if exit_code < 0:
        try:
            name = signal.Signals(-exit_code).name
        except ValueError:
            name = str(-exit_code)
        return f"the PySpark program was killed by signal {name}"
    return f"the PySpark program exited with code {exit_code}"


def program_error(stderr: str) -> str:
    """The program's error in its ``stderr`` text: the last traceback, else the last TAIL_LINES lines.

    The traceback keeps its header, its innermost TRACEBACK_FRAME_LINES frame
    lines, and the exception's message up to EXCEPTION_LINES lines with Java
    stack frames (``\\tat ...``, ``\\t... N more``) left out, so that a
    ``Py4JJavaError`` shows the Java exception, its reason and its causes.
    """
    lines = stderr.splitlines()
    starts = [i for i, line in enumerate(lines) if line.startswith(_TRACEBACK_START)]
    if not starts:
        return "\n".join(lines[-TAIL_LINES:]).strip("\n")
    block = lines[starts[-1] :]
    # the frames are indented; the first line that is not starts the exception
    end = next((i for i, line in enumerate(block[1:], 1) if line and not line[0].isspace()), len(block))
    frames = block[1:end]
    if len(frames) > TRACEBACK_FRAME_LINES:
        frames = ["  ...", *frames[-TRACEBACK_FRAME_LINES:]]
    message = [line for line in block[end:] if not _JAVA_FRAME.match(line)]
    while message and not message[-1].strip():
        message.pop()
    if len(message) > EXCEPTION_LINES:
        message = [*message[:EXCEPTION_LINES], f"... ({len(message) - EXCEPTION_LINES} more lines in {DRIVER_STDERR_FILE})"]
    return "\n".join([block[0], *frames, *message])


def last_executor_output(log_dir: Path, app_id: str | None, lines: int = 10) -> tuple[Path, str] | None:
    """The directory of the newest executor of ``app_id`` (``<log_dir>/*-work/<app>/<exec>/``, the Spark
    workers' work dirs) and the last ``lines`` of its stderr and stdout; None when there is none."""
    if app_id is None:
        return None
    try:
        dirs = sorted((p for p in log_dir.glob(f"*-work/{app_id}/*") if p.is_dir()), key=lambda p: p.stat().st_mtime)
        if not dirs:
            return None
        tails = []
        for name in ("stderr", "stdout"):
            path = dirs[-1] / name
            if path.exists():
                text = path.read_text(errors="replace").splitlines()
                tails.append(f"[{name}]\n" + "\n".join(text[-lines:]))
    except OSError:
        return None
    return dirs[-1], "\n".join(tails)
