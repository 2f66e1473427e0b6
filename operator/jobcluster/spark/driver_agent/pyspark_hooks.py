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
_CHECKPOINT = "_jobcluster_checkpoint"


def _explicit_checkpoint(writer: Any, options: Mapping[str, Any]) -> str | None:
    for key, value in options.items():
        if key.lower() == _CHECKPOINT_OPTION and value is not None:
            return str(value)
    return getattr(writer, _CHECKPOINT, None)


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
            if key.lower() == _CHECKPOINT_OPTION and value is not None:
                setattr(self, _CHECKPOINT, str(value))
            return original(self, key, value)

        return wrapper

    def options(original: Callable[..., Any]) -> Callable[..., Any]:
        def wrapper(self: Any, **given: Any) -> Any:
            checkpoint = _explicit_checkpoint(self, given)
            if checkpoint is not None:
                setattr(self, _CHECKPOINT, checkpoint)
            return original(self, **given)

        return wrapper

    def start(original: Callable[..., Any]) -> Callable[..., Any]:
        def wrapper(self: Any, *args: Any, queryName: str | None = None, **given: Any) -> Any:
            name = queryName or getattr(self, _NAME, None)
            checkpoint = _explicit_checkpoint(self, given)
            agent.starting(self._df.sparkSession, name, checkpoint)
            handle = original(self, *args, queryName=queryName, **given)
            agent.started(handle, name, checkpoint)
            return handle

        return wrapper

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
    _wrap(DataStreamWriter, "start", start)
    _wrap(DataStreamWriter, "toTable", start)
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
            handle = original(self, *args, queryName=queryName, **given)
            agent.started_through_connect(handle, name)
            return handle

        return wrapper

    def hook(module: Any) -> None:
        writer = module.DataStreamWriter
        _wrap(writer, "queryName", query_name)
        _wrap(writer, "start", start)
        _wrap(writer, "toTable", start)

    wrapt.register_post_import_hook(hook, _CONNECT_WRITER)
