"""The driver agent's logic (spark/driver_agent/agent.py): savepoints cut at the last commit, stop and hold, restore, warnings.

The agent's files are reached here through local paths (LocalFiles) and its
queries are stand-ins with PySpark's StreamingQuery surface; with real Spark,
Hadoop's FileSystem and Kafka the same paths run in tests/e2e/test_local_streaming.py.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

from jobcluster.spark.checkpoints import SavepointError, parse_savepoint_metadata
from jobcluster.spark.driver_agent.agent import DriverAgent, query_view
from jobcluster.spark.driver_agent.settings import AgentSettings

JOB = "b36a7e8190b1466587f0b1cd682b5df9"


class LocalFiles:
    """HadoopFiles' surface over this machine's paths (URIs ``file:/x`` or plain paths)."""

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
        dst.parent.mkdir(parents=True, exist_ok=True)
        if src.is_dir():
            shutil.copytree(src, dst)
        else:
            shutil.copyfile(src, dst)

    def read_text(self, uri: str) -> str:
        return self._p(uri).read_text()

    def write_text(self, uri: str, text: str) -> None:
        self._p(uri).parent.mkdir(parents=True, exist_ok=True)
        self._p(uri).write_text(text)

    def delete(self, uri: str) -> bool:
        existed = self._p(uri).exists()
        shutil.rmtree(self._p(uri), ignore_errors=True)
        return existed


class Query:
    """A started query, as PySpark's StreamingQuery shows it."""

    def __init__(self, progress: list[dict[str, Any]] | None = None) -> None:
        self.id = "q-id"
        self.runId = "run-id"
        self.isActive = True
        self.recentProgress = progress or []
        self.calls: list[str] = []

    def stop(self) -> None:
        self.calls.append("stop")
        self.isActive = False

    def processAllAvailable(self) -> None:
        self.calls.append("processAllAvailable")

    def exception(self) -> None:
        return None


def _checkpoint(root: Path, offsets: int, commits: int) -> Path:
    """A query's checkpoint: offsets 0..offsets-1, commits 0..commits-1, state versions 1..offsets."""
    (root / "metadata").parent.mkdir(parents=True, exist_ok=True)
    (root / "metadata").write_text('{"id": "q-id"}')
    for batch in range(offsets):
        (root / "offsets").mkdir(exist_ok=True)
        (root / "offsets" / str(batch)).write_text(f"offsets {batch}")
        (root / "state" / "0" / "0").mkdir(parents=True, exist_ok=True)
        (root / "state" / "0" / "0" / f"{batch + 1}.delta").write_text(f"state {batch + 1}")
    for batch in range(commits):
        (root / "commits").mkdir(exist_ok=True)
        (root / "commits" / str(batch)).write_text(f"commit {batch}")
    return root


def _agent(tmp_path: Path, **settings: Any) -> DriverAgent:
    values = {"port": 1, "job_id": JOB, "job_name": "wc", "checkpoint_root": str(tmp_path / "cp" / JOB)} | settings
    return DriverAgent(AgentSettings(**values), files=LocalFiles)


def _files(root: Path) -> set[str]:
    return {str(p.relative_to(root)) for p in root.rglob("*") if p.is_file()}


def test_a_savepoint_while_running_is_the_checkpoint_cut_at_its_last_commit(tmp_path):
    agent = _agent(tmp_path)
    checkpoint = _checkpoint(tmp_path / "cp" / JOB / "wc", offsets=4, commits=3)  # batch 3 logged, not committed
    agent.starting(None, "wc", None)
    query = Query()
    agent.started(query, "wc", None)

    result = agent.savepoint(str(tmp_path / "sp"), stop=False, drain=False)

    location = Path(result["location"].removeprefix("file:"))
    assert location.parent == tmp_path / "sp" and location.name.startswith(f"savepoint-{JOB[:6]}-")
    assert result["queries"] == {"wc": 2} and result["skipped"] == []
    assert _files(location / "wc") == {
        "metadata",
        *(f"offsets/{b}" for b in range(3)),
        *(f"commits/{b}" for b in range(3)),
        *(f"state/0/0/{v}.delta" for v in range(1, 4)),
    }
    metadata = parse_savepoint_metadata((location / "_metadata").read_text(), str(location))
    assert (metadata.job_id, metadata.queries["wc"].committed_batch_id) == (JOB, 2)
    assert metadata.queries["wc"].source == str(checkpoint)
    assert query.calls == [] and query.isActive, "a savepoint alone leaves the query running"


def test_stop_with_savepoint_stops_the_queries_and_holds_the_program_until_resumed(tmp_path):
    agent = _agent(tmp_path)
    _checkpoint(tmp_path / "cp" / JOB / "wc", offsets=2, commits=2)
    query = Query()
    agent.starting(None, "wc", None)
    agent.started(query, "wc", None)

    result = agent.savepoint(str(tmp_path / "sp"), stop=True, drain=True)

    assert query.calls == ["processAllAvailable", "stop"] and result["queries"] == {"wc": 1}
    waited = threading.Thread(target=agent.after_await)
    waited.start()
    waited.join(0.3)
    assert waited.is_alive(), "the program is held until the JobMaster has the savepoint's path"
    agent.resume_program()
    waited.join(5)
    assert not waited.is_alive()


def test_a_restore_copies_each_named_query_once_and_refuses_to_drop_one(tmp_path, capsys):
    source = _agent(tmp_path)
    _checkpoint(tmp_path / "cp" / JOB / "wc", offsets=3, commits=3)
    _checkpoint(tmp_path / "cp" / JOB / "other", offsets=1, commits=1)
    for name in ("wc", "other"):
        source.starting(None, name, None)
        source.started(Query(), name, None)
    savepoint = source.savepoint(str(tmp_path / "sp"), stop=False, drain=False)["location"]

    new_root = tmp_path / "cp" / ("c" * 32)
    restored = _agent(tmp_path, checkpoint_root=str(new_root), restore_path=savepoint)
    restored.starting(None, "wc", None)
    assert _files(new_root / "wc") == _files(Path(savepoint.removeprefix("file:")) / "wc")
    (new_root / "wc" / "commits" / "3").write_text("committed after the restore")
    restored.starting(None, "wc", None)  # a failover of the restored job: its own checkpoint wins
    assert (new_root / "wc" / "commits" / "3").exists()
    restored.started(Query(), "wc", None)
    with pytest.raises(SavepointError, match="holds state of the streaming query 'other', which the program did not start"):
        restored.before_await()

    allowed = _agent(tmp_path, checkpoint_root=str(tmp_path / "cp3"), restore_path=savepoint, allow_non_restored_state=True)
    allowed.starting(None, "wc", None)
    allowed.started(Query(), "wc", None)
    allowed.before_await()
    assert "state of 'other' in savepoint" in capsys.readouterr().err


def test_a_missing_savepoint_or_one_that_is_not_fails_the_querys_start(tmp_path):
    with pytest.raises(SavepointError, match="does not exist"):
        _agent(tmp_path, restore_path=str(tmp_path / "missing")).starting(None, "wc", None)
    (tmp_path / "plain").mkdir()
    with pytest.raises(SavepointError, match="is not a savepoint: it has no _metadata"):
        _agent(tmp_path, restore_path=str(tmp_path / "plain")).starting(None, "wc", None)


def test_queries_that_cannot_be_restored_are_warned_about_and_left_out(tmp_path, capsys):
    agent = _agent(tmp_path)
    agent.starting(None, None, None)
    agent.started(Query(), None, None)
    assert "streaming query q-id has no name" in capsys.readouterr().err
    assert agent.savepoint(str(tmp_path / "sp"), stop=False, drain=False)["skipped"] == ["q-id"]

    without_root = _agent(tmp_path, checkpoint_root=None)
    without_root.starting(None, "wc", None)
    without_root.started(Query(), "wc", None)
    assert "execution.checkpointing.dir is not set" in capsys.readouterr().err


def test_no_query_no_savepoint_and_only_savepoints_are_disposed(tmp_path):
    agent = _agent(tmp_path)
    with pytest.raises(SavepointError, match="is not a streaming job"):
        agent.savepoint(str(tmp_path / "sp"), stop=False, drain=False)
    _checkpoint(tmp_path / "cp" / JOB / "wc", offsets=1, commits=1)
    agent.starting(None, "wc", None)
    agent.started(Query(), "wc", None)
    location = agent.savepoint(str(tmp_path / "sp"), stop=False, drain=False)["location"]
    with pytest.raises(SavepointError, match="not a savepoint"):
        agent.dispose_savepoint(str(tmp_path / "cp" / JOB))
    assert (tmp_path / "cp" / JOB / "wc").exists()
    agent.dispose_savepoint(location)
    assert not Path(location.removeprefix("file:")).exists()


def test_a_query_view_takes_the_last_committed_micro_batch_from_its_progress():
    ran = {
        "batchId": 4,
        "timestamp": "2026-11-26T08:00:00.000Z",
        "numInputRows": 20,
        "inputRowsPerSecond": 10.0,
        "processedRowsPerSecond": 40.0,
        "durationMs": {"addBatch": 300, "triggerExecution": 500},
        "stateOperators": [{"numRowsTotal": 7, "memoryUsedBytes": 2048}, {"numRowsTotal": 3, "memoryUsedBytes": 1024}],
    }
    idle = {"batchId": 5, "timestamp": "2026-11-26T08:00:05.000Z", "numInputRows": 0, "durationMs": {"triggerExecution": 1}}
    view = query_view(Query([ran, idle]), "wc", "file:/cp/wc")
    assert (view["batchId"], view["committedBatchId"], view["numInputRows"]) == (5, 4, 0)
    assert view["lastCommitTime"] == 1795680000000 + 500 and view["lastProgressTime"] == 1795680005000
    assert [h["batchId"] for h in view["history"]] == [4] and view["history"][0]["stateBytes"] == 3072
    assert query_view(Query([ran]), "wc", None)["stateRows"] == 10


def test_a_query_through_spark_connect_refuses_savepoints_and_stops_while_the_job_runs_on(tmp_path, capsys):
    agent = _agent(tmp_path)
    _checkpoint(tmp_path / "cp" / JOB / "wc", offsets=2, commits=2)
    classic, connect = Query(), Query()
    connect.id = "connect-id"
    agent.starting(None, "wc", None)
    agent.started(classic, "wc", None)
    agent.starting_through_connect("remote")
    agent.started_through_connect(connect, "remote")
    assert "streaming query remote runs through Spark Connect" in capsys.readouterr().err

    for stop in (False, True):
        with pytest.raises(SavepointError, match=r"streaming query remote through Spark Connect.*without Spark Connect"):
            agent.savepoint(str(tmp_path / "sp"), stop=stop, drain=False)
    assert classic.calls == [] and connect.calls == [], "nothing was stopped: the job runs on"
    assert not (tmp_path / "sp").exists()
    assert [v["name"] for v in agent.query_views()] == ["wc", "remote"], "its progress is still shown"
    waited = threading.Thread(target=agent.after_await)
    waited.start()
    waited.join(5)
    assert not waited.is_alive(), "a refused stop does not hold the program"


def test_a_restore_refuses_a_query_that_starts_through_spark_connect(tmp_path):
    agent = _agent(tmp_path, restore_path=str(tmp_path / "savepoint"))
    with pytest.raises(SavepointError, match=r"cannot restore streaming query wc from savepoint .*: it starts through Spark Connect"):
        agent.starting_through_connect("wc")
    assert agent.query_views() == []


def test_a_query_view_takes_figures_a_progress_report_lacks_as_zero():
    """PySpark 4's progress reports (Spark Connect's above all) hold None, or NaN, where a figure is unknown."""
    report = {
        "batchId": 4,
        "timestamp": "2026-11-28T06:00:00.000Z",
        "durationMs": {"addBatch": 3, "triggerExecution": None},
        "numInputRows": None,
        "inputRowsPerSecond": float("nan"),
        "processedRowsPerSecond": None,
        "stateOperators": [{"numRowsTotal": None, "memoryUsedBytes": 10}],
    }
    view = query_view(Query([report]), "ticks", None)
    assert (view["batchId"], view["committedBatchId"], view["numInputRows"]) == (4, 4, 0)
    assert (view["inputRowsPerSecond"], view["processedRowsPerSecond"], view["stateRows"], view["stateBytes"]) == (0.0, 0.0, 0, 10)
    assert view["history"] == [{"batchId": 4, "triggerTime": 1795845600000, "durationMs": 0, "numInputRows": 0, "stateBytes": 10}]


def test_spark_connects_writer_is_wrapped_only_once_the_program_imports_it():
    """The hooks leave PySpark's Connect client unimported (about 1 CPU second) until a program reaches for it."""
    check = (
        "import sys\n"
        "from jobcluster.spark.driver_agent.agent import DriverAgent\n"
        "from jobcluster.spark.driver_agent.pyspark_hooks import install\n"
        "from jobcluster.spark.driver_agent.settings import AgentSettings\n"
        "install(DriverAgent(AgentSettings(port=1, job_id='j', job_name='n', checkpoint_root=None)))\n"
        "assert 'pyspark.sql.connect' not in sys.modules, 'imported up front'\n"
        "from pyspark.sql.connect.streaming.readwriter import DataStreamWriter\n"
        "print(DataStreamWriter.start.__code__.co_name, DataStreamWriter.queryName.__code__.co_name)\n"
    )
    result = subprocess.run([sys.executable, "-W", "ignore", "-c", check], capture_output=True, text=True, timeout=60, check=False)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["wrapper", "wrapper"]
