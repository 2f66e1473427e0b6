"""What the program's driver wrote, and why it failed, read from the cluster's log directory.

The program's stdout and stderr (see :mod:`spark_application`) are pipes that
the JobMaster copies into ``driver.out`` and ``driver.err``, each kept to a
bounded size by rotation (``driver.out.1``, ... see :mod:`rolling_output`,
``jobcluster.driver.output.max-file-size`` and ``jobcluster.driver.output.max-files``),
and written to by every attempt of the job; the driver JVM writes Spark's log4j
log to ``driver.log``. The REST endpoint serves stdout and stderr from a
logical byte offset (the position in everything the stream received since the
job began), so an attached client streams them as they are written, on any
target; the files stay in the log directory after the cluster is gone.

A failed program's cause is taken from its own stderr: its last Python
traceback with the exception's whole message (for a ``Py4JJavaError`` the
Java exception and its causes, without the Java stack frames), else the last
lines (a ``SyntaxError`` in the script, ``sys.exit("message")``), and how the
process ended (its exit code, or the signal that killed it). When Spark
started executors that never registered, the last one's output (in the Spark
workers' work directories) is what the user needs to read instead. When a
task's Python function ran out of its PySpark worker's memory limit
(``MemoryError``), the cause also says which options raise that limit.
"""

from __future__ import annotations

import re
import signal
import sys
from collections.abc import Callable
from pathlib import Path

from jobcluster.runtime.jobmaster.rolling_output import RollingOutputFile

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
_MEMORY_ERROR = re.compile(r"^MemoryError\b")
#: What Spark writes where it carries a traceback from a PySpark worker to the driver: on the traceback's first line
#: (a Py4JJavaError's ``org.apache.spark.api.python.PythonException: Traceback ...``) or just before it (PySpark's
#: ``...captured.PythonException:`` and "An exception was thrown from the Python worker").
_PYSPARK_WORKER_MARKS = ("PythonException", "from the Python worker")


class DriverOutputFiles:
    """The program's stdout and stderr of one job, each kept as rolling files in ``log_dir``.

    ``max_file_size`` (bytes) and ``max_files`` (the live file included) bound
    each stream to at most their product on disk; ValueError when either is below 1.
    One object serves every attempt of the job, so offsets run on over attempts.
    ``console``: each stream also goes to this process's stream of the same name
    (``jobcluster.driver.output.console``).
    """

    def __init__(self, log_dir: Path, max_file_size: int, max_files: int, console: bool = False) -> None:
        self._streams = {stream: RollingOutputFile(log_dir / name, max_file_size, max_files) for stream, name in OUTPUT_STREAMS.items()}
        self._console = {"stdout": sys.stdout, "stderr": sys.stderr} if console else {}

    @property
    def stdout(self) -> RollingOutputFile:
        return self._streams["stdout"]

    @property
    def stderr(self) -> RollingOutputFile:
        return self._streams["stderr"]

    def stream(self, name: str) -> RollingOutputFile:
        """The stream called ``name`` (``stdout`` or ``stderr``); ValueError for another name."""
        try:
            return self._streams[name]
        except KeyError:
            raise ValueError(f"unknown output stream {name!r}; use one of {', '.join(OUTPUT_STREAMS)}") from None

    def sink(self, name: str) -> Callable[[bytes], None]:
        """What the program's stream ``name`` is written to: its rolling files, then this process's stream of that
        name when the output goes to the console too; ValueError for another name."""
        files = self.stream(name)
        console = self._console.get(name)
        if console is None:
            return files.write

        def write(data: bytes) -> None:
            files.write(data)
            try:
                console.buffer.write(data)
                console.buffer.flush()
            except (OSError, ValueError):  # a closed or broken console: the files keep the output
                pass

        return write

    def close(self) -> None:
        for stream in self._streams.values():
            stream.close()


def stderr_tail(stderr: RollingOutputFile, start: int) -> str:
    """The last ERROR_TAIL_BYTES of ``stderr`` written at or after logical byte ``start`` (one attempt's stderr),
    across its files; what was rotated away is not there."""
    begin = max(start, stderr.end() - ERROR_TAIL_BYTES)
    return stderr.read(begin, ERROR_TAIL_BYTES).data.decode(errors="replace")


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


def is_pyspark_worker_memory_error(stderr: str) -> bool:
    """Whether the program's ``stderr`` ends in a task's ``MemoryError`` in a PySpark worker: its last traceback that
    ends in ``MemoryError`` is one Spark carried from a worker. A ``MemoryError`` of the program's own process (the
    driver's Python, which has no such limit) is not one."""
    lines = stderr.splitlines()
    last = next((i for i in range(len(lines) - 1, -1, -1) if _MEMORY_ERROR.match(lines[i])), None)
    if last is None:
        return False
    start = next((i for i in range(last, -1, -1) if _TRACEBACK_START in lines[i]), 0)
    return any(mark in line for line in lines[max(0, start - 2) : start + 1] for mark in _PYSPARK_WORKER_MARKS)


def with_memory_error_hint(cause: str, stderr: str, hint: str | None) -> str:
    """``cause`` followed by ``hint`` (what the PySpark workers' limit is and which options raise it) on a line of
    its own, when the program's ``stderr`` shows a PySpark worker's ``MemoryError`` (see
    :func:`is_pyspark_worker_memory_error`) and there is a hint; else ``cause`` unchanged."""
    if hint is None or not is_pyspark_worker_memory_error(stderr):
        return cause
    return f"{cause.rstrip()}\n{hint}"


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
