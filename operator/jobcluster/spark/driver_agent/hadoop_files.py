"""Files of checkpoints and savepoints, through Hadoop's FileSystem in the driver's JVM.

Why the driver's JVM: it is what Spark itself checkpoints with, so a
checkpoint root on a local path, a Kubernetes volume or ``hdfs://`` (with the
driver's Hadoop configuration) is read and written exactly as Spark reads and
writes it, with no second client to configure. Every method is a blocking
py4j call: the agent runs them off its event loop.
"""

from __future__ import annotations

import os
import secrets
from typing import Any

# A file that goes away while it is listed or copied: Spark's maintenance removes old batches of a running query.
_GONE = ("java.io.FileNotFoundException", "FileNotFoundException")


def is_file_gone(exc: BaseException) -> bool:
    """Whether a py4j error is Java's FileNotFoundException (the file was removed meanwhile)."""
    return any(name in str(exc) for name in _GONE)


def java_reason(exc: BaseException) -> str:
    """A py4j error as a reason a user can read: the Java exception's first line (``org.apache...Exception: message``)."""
    java = getattr(exc, "java_exception", None)
    if java is not None:
        try:
            return str(java.toString())
        except Exception:  # noqa: BLE001 - the JVM side is gone: the Python text below
            pass
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    causes = [line for line in lines if "Exception:" in line or "Error:" in line]
    return causes[0] if causes else (lines[0] if lines else type(exc).__name__)


class HadoopFiles:
    """Paths and URIs (``/tmp/x``, ``file:/x``, ``hdfs://nn:9000/x``) of the driver's JVM; ``spark``: the program's SparkSession."""

    def __init__(self, spark: Any) -> None:
        context = spark.sparkContext
        self._jvm = context._jvm
        self._conf = context._jsc.hadoopConfiguration()

    def _path(self, uri: str) -> Any:
        return self._jvm.org.apache.hadoop.fs.Path(uri)

    def _fs(self, path: Any) -> Any:
        return path.getFileSystem(self._conf)

    def qualified(self, uri: str) -> str:
        """``uri`` with its file system's scheme and authority (``/tmp/x`` → ``file:/tmp/x``)."""
        path = self._path(uri)
        return str(self._fs(path).makeQualified(path).toString())

    def exists(self, uri: str) -> bool:
        path = self._path(uri)
        return bool(self._fs(path).exists(path))

    def names(self, uri: str) -> list[str]:
        """Names of the entries of directory ``uri``; empty when it does not exist."""
        path = self._path(uri)
        fs = self._fs(path)
        if not fs.exists(path):
            return []
        return [str(status.getPath().getName()) for status in fs.listStatus(path)]

    def files(self, uri: str) -> list[str]:
        """Every file below directory ``uri``, as paths relative to it (``/``-separated); empty when it does not exist.

        Walked one directory at a time, so that a directory a running query removes
        meanwhile (Spark's maintenance of old batches) is passed over, not an error.
        """
        root = self._path(uri)
        fs = self._fs(root)
        prefix = str(fs.makeQualified(root).toUri().getPath()).rstrip("/") + "/"
        found: list[str] = []
        pending = [root]
        while pending:
            try:
                statuses = fs.listStatus(pending.pop())
            except Exception as exc:
                if is_file_gone(exc):
                    continue
                raise
            for status in statuses:
                if status.isDirectory():
                    pending.append(status.getPath())
                else:
                    found.append(str(status.getPath().toUri().getPath()).removeprefix(prefix))
        return found

    def copy(self, source: str, target: str) -> None:
        """Copy file or directory ``source`` to ``target`` (created, with its parents). Raises py4j's error on failure.

        As Hadoop's ``FileUtil.copy``: a directory copied onto an existing directory goes *into* it (``target/<name>``).
        """
        src, dst = self._path(source), self._path(target)
        self._jvm.org.apache.hadoop.fs.FileUtil.copy(self._fs(src), src, self._fs(dst), dst, False, self._conf)

    def mkdirs(self, uri: str) -> None:
        """Create directory ``uri`` with its parents; raises py4j's error when it cannot be (a file in the way, permissions)."""
        path = self._path(uri)
        if not self._fs(path).mkdirs(path):
            raise OSError(f"Hadoop's FileSystem.mkdirs({uri}) returned false")

    def rename(self, source: str, target: str) -> None:
        """Rename ``source`` to ``target``, which must not exist (atomic on HDFS and POSIX file systems)."""
        src, dst = self._path(source), self._path(target)
        if not self._fs(src).rename(src, dst):
            raise OSError(f"Hadoop's FileSystem.rename({source}, {target}) returned false (does the target exist?)")

    def read_text(self, uri: str) -> str:
        path = self._path(uri)
        stream = self._fs(path).open(path)
        try:
            return str(self._jvm.org.apache.commons.io.IOUtils.toString(stream, "UTF-8"))
        finally:
            stream.close()

    def write_text_atomically(self, uri: str, text: str) -> None:
        """Write ``text`` (UTF-8) to ``uri``, which must not exist: into a hidden sibling, then renamed into place, so
        that a reader finds the whole file or none."""
        parent, _, name = uri.rpartition("/")
        staging = f"{parent}/.{name}.{secrets.token_hex(4)}.tmp"
        path = self._path(staging)
        stream = self._fs(path).create(path, True)
        try:
            stream.write(bytearray(text.encode()))
        finally:
            stream.close()
        self.rename(staging, uri)

    def create_exclusively(self, uri: str, text: str) -> bool:
        """Create file ``uri`` holding ``text`` (UTF-8) unless it exists; False when it does.

        Exclusive where the file system can be: HDFS's create without overwrite is one
        NameNode operation, and a local or NFS path is created by the OS with ``O_EXCL``
        (Hadoop's local file system checks, then creates). Other schemes: Hadoop's create
        without overwrite, as exclusive as their store makes it.
        """
        qualified = self.qualified(uri)
        if qualified.startswith("file:"):
            return _create_local_exclusively(self._path(qualified).toUri().getPath(), text)
        path = self._path(qualified)
        try:
            stream = self._fs(path).create(path, False)
        except Exception as exc:
            if "FileAlreadyExistsException" in str(exc) or "AlreadyBeingCreatedException" in str(exc):
                return False
            raise
        try:
            stream.write(bytearray(text.encode()))
        finally:
            stream.close()
        return True

    def modification_time(self, uri: str) -> int | None:
        """``uri``'s modification time (ms since the epoch, as its file system keeps it); None when it does not exist."""
        path = self._path(uri)
        try:
            return int(self._fs(path).getFileStatus(path).getModificationTime())
        except Exception as exc:
            if is_file_gone(exc):
                return None
            raise

    def set_modification_time(self, uri: str, millis: int) -> None:
        """Set ``uri``'s modification time to ``millis`` (ms since the epoch; its access time stays).

        Where the store ignores ``setTimes`` (S3A: an object's time is that of its last write), the file is written
        again with its own text, which gives it the store's present time instead: either way a reader sees a change.
        An object store replaces an object whole, so no reader sees it half-written.
        """
        path = self._path(uri)
        fs = self._fs(path)
        before = int(fs.getFileStatus(path).getModificationTime())
        fs.setTimes(path, millis, -1)
        if int(fs.getFileStatus(path).getModificationTime()) == before != millis:
            text = self.read_text(uri)
            stream = fs.create(path, True)
            try:
                stream.write(bytearray(text.encode()))
            finally:
                stream.close()

    def delete(self, uri: str) -> bool:
        """Delete ``uri`` and everything below it; False when it did not exist."""
        path = self._path(uri)
        return bool(self._fs(path).delete(path, True))


def _create_local_exclusively(path: str, text: str) -> bool:
    try:
        descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    except FileExistsError:
        return False
    with os.fdopen(descriptor, "w", encoding="utf-8") as file:
        file.write(text)
    return True
