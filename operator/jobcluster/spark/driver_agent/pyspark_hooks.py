"""The PySpark methods the driver agent wraps, so that an unmodified program's streaming queries are seen.

Why wrapping: a query's name and explicit ``checkpointLocation`` live only in
the JVM's DataStreamWriter until it starts, and nothing in PySpark runs
between "the program asked for the query" and "Spark opened its checkpoint",
which is when a savepoint's copy must be put in place. Each wrapper records or
asks the agent and then calls PySpark's own method with the same arguments.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from typing import Any

import wrapt

from jobcluster.spark.driver_agent.agent import DriverAgent

_CHECKPOINT_OPTION = "checkpointlocation"  # Spark reads option keys case-insensitively
_NAME = "_jobcluster_query_name"
_OPTIONS = "_jobcluster_options"
_FORMAT = "_jobcluster_format"
#: The formats Spark writes through its file sink (given a path); no format at all is spark.sql.sources.default, parquet.
_FILE_SINK_FORMATS = frozenset({"parquet", "json", "csv", "orc", "text", "avro"})


def _record(writer: Any, options: Mapping[str, Any]) -> None:
    """Remember a writer's options (keys lowercased, as Spark reads them), which PySpark keeps only in the JVM."""
    recorded = getattr(writer, _OPTIONS, {})
    setattr(writer, _OPTIONS, recorded | {key.lower(): str(value) for key, value in options.items() if value is not None})


def _explicit_checkpoint(writer: Any, options: Mapping[str, Any]) -> str | None:
    _record(writer, options)
    return getattr(writer, _OPTIONS, {}).get(_CHECKPOINT_OPTION)


def _file_sink(writer: Any, args: tuple[Any, ...], given: Mapping[str, Any]) -> str | None:
    """The output path of a start (``start(path, format, ...)``) that writes through Spark's file sink; None for another sink."""
    path = (args[0] if args else given.get("path")) or getattr(writer, _OPTIONS, {}).get("path")
    sink_format = (args[1] if len(args) > 1 else given.get("format")) or getattr(writer, _FORMAT, None) or "parquet"
    return str(path) if path and str(sink_format).lower() in _FILE_SINK_FORMATS else None


def _wrap(cls: type, name: str, make: Callable[[Callable[..., Any]], Callable[..., Any]]) -> None:
    original = getattr(cls, name)
    setattr(cls, name, functools.wraps(original)(make(original)))


def install(agent: DriverAgent) -> None:
    """Wrap DataStreamWriter's builders and starts and the queries' waits to report to ``agent``; Spark Connect's too."""
    from pyspark.sql.streaming.query import StreamingQuery, StreamingQueryManager
    from pyspark.sql.streaming.readwriter import DataStreamWriter

    def query_name(original: Callable[..., Any]) -> Callable[..., Any]:
        def wrapper(self: Any, queryName: str) -> Any:
            setattr(self, _NAME, queryName)
            return original(self, queryName)

        return wrapper

    def option(original: Callable[..., Any]) -> Callable[..., Any]:
        def wrapper(self: Any, key: str, value: Any) -> Any:
            _record(self, {key: value})
            return original(self, key, value)

        return wrapper

    def options(original: Callable[..., Any]) -> Callable[..., Any]:
        def wrapper(self: Any, **given: Any) -> Any:
            _record(self, given)
            return original(self, **given)

        return wrapper

    def format_(original: Callable[..., Any]) -> Callable[..., Any]:
        def wrapper(self: Any, source: str) -> Any:
            setattr(self, _FORMAT, source)
            return original(self, source)

        return wrapper

    def starter(writes_files: bool) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
        """``start`` (``writes_files``: its path and format may make it Spark's file sink) or ``toTable``."""

        def make(original: Callable[..., Any]) -> Callable[..., Any]:
            def wrapper(self: Any, *args: Any, queryName: str | None = None, **given: Any) -> Any:
                positional = args[4] if writes_files and len(args) > 4 else None  # start(path, format, outputMode, partitionBy, queryName)
                name = queryName or positional or getattr(self, _NAME, None)
                checkpoint = _explicit_checkpoint(self, given)
                agent.starting(self._df.sparkSession, name, checkpoint, _file_sink(self, args, given) if writes_files else None)
                named = {"queryName": queryName} if queryName is not None else {}  # not twice when given by position
                handle = original(self, *args, **named, **given)
                agent.started(handle, name, checkpoint)
                return handle

            return wrapper

        return make

    def await_termination(original: Callable[..., Any]) -> Callable[..., Any]:
        def wrapper(self: Any, timeout: int | None = None) -> Any:
            agent.before_await()
            result = original(self, timeout)
            if not self.isActive:
                agent.after_await()
            return result

        return wrapper

    def await_any_termination(original: Callable[..., Any]) -> Callable[..., Any]:
        def wrapper(self: Any, timeout: int | None = None) -> Any:
            agent.before_await()
            result = original(self, timeout)
            if result is not False:  # False: the timeout passed with every query still running
                agent.after_await()
            return result

        return wrapper

    _wrap(DataStreamWriter, "queryName", query_name)
    _wrap(DataStreamWriter, "option", option)
    _wrap(DataStreamWriter, "options", options)
    _wrap(DataStreamWriter, "format", format_)
    _wrap(DataStreamWriter, "start", starter(writes_files=True))
    _wrap(DataStreamWriter, "toTable", starter(writes_files=False))
    _wrap(StreamingQuery, "awaitTermination", await_termination)
    _wrap(StreamingQueryManager, "awaitAnyTermination", await_any_termination)
    _install_connect(agent, query_name)


_CONNECT_WRITER = "pyspark.sql.connect.streaming.readwriter"


def _install_connect(agent: DriverAgent, query_name: Callable[[Callable[..., Any]], Callable[..., Any]]) -> None:
    """Wrap Spark Connect's DataStreamWriter starts (Spark 3.5+) once the program imports Spark Connect.

    Deferred with a post-import hook: importing PySpark's Connect client costs
    about 1 CPU second (pandas, pyarrow, grpc), which a program that never
    reaches Connect should not pay; one that does imports it on its way there.
    """

    def start(original: Callable[..., Any]) -> Callable[..., Any]:
        def wrapper(self: Any, *args: Any, queryName: str | None = None, **given: Any) -> Any:
            name = queryName or getattr(self, _NAME, None)
            agent.starting_through_connect(name)
            handle = original(self, *args, **({"queryName": queryName} if queryName is not None else {}), **given)
            agent.started_through_connect(handle, name)
            return handle

        return wrapper

    def hook(module: Any) -> None:
        writer = module.DataStreamWriter
        _wrap(writer, "queryName", query_name)
        _wrap(writer, "start", start)
        _wrap(writer, "toTable", start)

    wrapt.register_post_import_hook(hook, _CONNECT_WRITER)
