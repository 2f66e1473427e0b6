"""HadoopFiles (spark/driver_agent/hadoop_files.py) over this machine's paths, for the driver agent's unit tests."""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path
from typing import Any


class LocalFiles:
    """HadoopFiles' surface over this machine's paths (URIs ``file:/x`` or plain paths), with Hadoop's copy semantics."""

    def __init__(self, spark: Any) -> None:
        pass

    @staticmethod
    def _p(uri: str) -> Path:
        return Path(uri.removeprefix("file:"))

    def qualified(self, uri: str) -> str:
        return f"file:{self._p(uri)}"

    def exists(self, uri: str) -> bool:
        return self._p(uri).exists()

    def names(self, uri: str) -> list[str]:
        path = self._p(uri)
        return [p.name for p in path.iterdir()] if path.is_dir() else []

    def files(self, uri: str) -> list[str]:
        root = self._p(uri)
        return [str(p.relative_to(root)) for p in root.rglob("*") if p.is_file()] if root.is_dir() else []

    def copy(self, source: str, target: str) -> None:
        src, dst = self._p(source), self._p(target)
        if not src.exists():
            raise RuntimeError(
                f"An error occurred while calling z:org.apache.hadoop.fs.FileUtil.copy.\n: java.io.FileNotFoundException: {src}"
            )
        if dst.is_dir():  # Hadoop's FileUtil.copy (checkDest): onto an existing directory is into it
            dst = dst / src.name
        dst.parent.mkdir(parents=True, exist_ok=True)
        if src.is_dir():
            shutil.copytree(src, dst)
        else:
            shutil.copyfile(src, dst)

    def mkdirs(self, uri: str) -> None:
        self._p(uri).mkdir(parents=True, exist_ok=True)

    def rename(self, source: str, target: str) -> None:
        if self._p(target).exists():
            raise OSError(f"rename({source}, {target}) returned false")
        self._p(source).rename(self._p(target))

    def read_text(self, uri: str) -> str:
        return self._p(uri).read_text()

    def write_text_atomically(self, uri: str, text: str) -> None:
        assert not self._p(uri).exists()
        self._p(uri).parent.mkdir(parents=True, exist_ok=True)
        self._p(uri).write_text(text)

    def create_exclusively(self, uri: str, text: str) -> bool:
        try:
            with self._p(uri).open("x") as file:
                file.write(text)
        except FileExistsError:
            return False
        return True

    def modification_time(self, uri: str) -> int | None:
        try:
            return self._p(uri).stat().st_mtime_ns // 1_000_000
        except FileNotFoundError:
            return None

    def set_modification_time(self, uri: str, millis: int) -> None:
        os.utime(self._p(uri), ns=(time.time_ns(), millis * 1_000_000))

    def delete(self, uri: str) -> bool:
        path = self._p(uri)
        existed = path.exists()
        if path.is_dir():
            shutil.rmtree(path, ignore_errors=True)
        else:
            path.unlink(missing_ok=True)
        return existed
