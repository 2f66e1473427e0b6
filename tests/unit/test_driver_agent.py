"""The driver agent's logic (spark/driver_agent/agent.py): savepoints cut at the last commit, stop and hold, restore, warnings.

The agent's files are reached here through local paths (LocalFiles) and its
queries are stand-ins with PySpark's StreamingQuery surface; with real Spark,
Hadoop's FileSystem and Kafka the same paths run in tests/e2e/test_local_streaming.py.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from jobcluster.spark.checkpoints import SavepointError, StopWithSavepointFailed, parse_savepoint_metadata
from jobcluster.spark.driver_agent import pyspark_hooks
from jobcluster.spark.driver_agent.agent import DriverAgent, query_view
from jobcluster.spark.driver_agent.settings import AgentSettings
from tests.support.local_files import LocalFiles

JOB = "b36a7e8190b1466587f0b1cd682b5df9"


class Query:
    """A started query, as PySpark's StreamingQuery shows it."""

    def __init__(self, progress: list[dict[str, Any]] | None = None) -> None:
        self.id = "q-id"
        self.runId = "run-id"
        self.isActive = True
        self.recentProgress = progress or []
        self.status = {"message": "Waiting for next trigger", "isDataAvailable": False, "isTriggerActive": False}
        self.calls: list[str] = []

    @property
    def lastProgress(self) -> dict[str, Any] | None:
        return self.recentProgress[-1] if self.recentProgress else None

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


_AGENTS: list[DriverAgent] = []


@pytest.fixture(autouse=True)
def _release_leases():
    """Each test's agents end their lease renewals, as the program's end does."""
    yield
    while _AGENTS:
        _AGENTS.pop().release_leases()


def _agent(tmp_path: Path, **settings: Any) -> DriverAgent:
    values = {"port": 1, "job_id": JOB, "job_name": "wc", "checkpoint_root": str(tmp_path / "cp" / JOB)} | settings
    agent = DriverAgent(AgentSettings(**values), files=LocalFiles)
    _AGENTS.append(agent)
    return agent


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
    assert result["queries"] == {"wc": 2} and result["skipped"] == [] and result["replays"] == {}
    assert _files(location / "wc") == {
        "metadata",
        *(f"offsets/{b}" for b in range(4)),  # batch 3 planned: restored, it runs again with the same offsets
        *(f"commits/{b}" for b in range(3)),
        *(f"state/0/0/{v}.delta" for v in range(1, 4)),  # batch 3's version 4 is written again by its re-run
    }
    metadata = parse_savepoint_metadata((location / "_metadata").read_text(), str(location))
    assert (metadata.job_id, metadata.queries["wc"].committed_batch_id, metadata.queries["wc"].planned_batch_id) == (JOB, 2, 3)
    assert metadata.stopped is False
    assert metadata.queries["wc"].source == str(checkpoint)
    assert query.calls == [] and query.isActive, "a savepoint alone leaves the query running"


def test_stop_with_savepoint_stops_the_queries_and_holds_the_program_until_resumed(tmp_path):
    agent = _agent(tmp_path)
    _checkpoint(tmp_path / "cp" / JOB / "wc", offsets=2, commits=2)
    query = Query()
    agent.starting(None, "wc", None)
    agent.started(query, "wc", None)

    result = agent.savepoint(str(tmp_path / "sp"), stop=True, drain=False)

    assert query.calls == ["stop"] and result["queries"] == {"wc": 1}
    location = Path(result["location"].removeprefix("file:"))
    assert parse_savepoint_metadata((location / "_metadata").read_text(), str(location)).stopped
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
    saved = _files(Path(savepoint.removeprefix("file:")) / "wc")
    assert not any(f.startswith("_jobcluster_lease/") for f in saved), "a savepoint leaves the live driver's lease out"
    assert _files(new_root / "wc") == saved | {"_jobcluster_restored_from", "_jobcluster_lease/00000000000000000001"}
    assert [p.name for p in new_root.iterdir()] == ["wc"], "restored whole, renamed into place"
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


def test_a_savepoint_records_the_jobs_parallelism_and_a_restore_says_what_it_read_and_when(tmp_path):
    source = _agent(tmp_path, parallelism=2)
    _checkpoint(tmp_path / "cp" / JOB / "wc", offsets=2, commits=2)
    source.starting(None, "wc", None)
    source.started(Query(), "wc", None)
    savepoint = source.savepoint(str(tmp_path / "sp"), stop=False, drain=False)["location"]
    location = Path(savepoint.removeprefix("file:"))
    assert parse_savepoint_metadata((location / "_metadata").read_text(), savepoint).parallelism == 2
    assert source.restore_view() is None, "a job started afresh restored nothing"

    restored = _agent(tmp_path, checkpoint_root=str(tmp_path / "cp" / ("c" * 32)), restore_path=savepoint, parallelism=3)
    assert restored.restore_view() is None, "not before its first query starts (the savepoint is read then)"
    before = int(time.time() * 1000)
    restored.starting(None, "wc", None)
    view = restored.restore_view()
    assert view is not None and (view["path"], view["parallelism"]) == (savepoint, 2)
    assert before <= view["restoredAt"] <= int(time.time() * 1000)

    # a savepoint of a jobcluster that did not record its parallelism: read as None
    metadata = json.loads((location / "_metadata").read_text())
    del metadata["parallelism"]
    (location / "_metadata").write_text(json.dumps(metadata))
    older = _agent(tmp_path, checkpoint_root=str(tmp_path / "cp" / ("d" * 32)), restore_path=savepoint)
    older.starting(None, "wc", None)
    assert older.restore_view()["parallelism"] is None


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
    with pytest.raises(SavepointError, match=r"q-id without a name or checkpoint.*would lose that state"):
        agent.savepoint(str(tmp_path / "sp"), stop=True, drain=False)

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


class FailingCopy(LocalFiles):
    """Hadoop's FileSystem where copying a file named ``fail_on`` fails as a full or refused target would."""

    fail_on = "commits"

    def copy(self, source: str, target: str) -> None:
        if f"/{self.fail_on}/" in source:
            raise RuntimeError(
                "An error occurred while calling z:org.apache.hadoop.fs.FileUtil.copy.\n"
                ": org.apache.hadoop.hdfs.protocol.DSQuotaExceededException: The DiskSpace quota of /sp is exceeded\n\tat ..."
            )
        super().copy(source, target)


def _running(agent: DriverAgent, name: str = "wc") -> Query:
    query = Query()
    agent.starting(None, name, None)
    agent.started(query, name, None)
    return query


def test_a_stop_whose_copy_fails_leaves_no_savepoint_and_fails_the_program_over(tmp_path):
    agent = DriverAgent(AgentSettings(port=1, job_id=JOB, job_name="wc", checkpoint_root=str(tmp_path / "cp" / JOB)), files=FailingCopy)
    _checkpoint(tmp_path / "cp" / JOB / "wc", offsets=2, commits=2)
    query = _running(agent)

    with pytest.raises(StopWithSavepointFailed, match=r"failed after its streaming queries stopped: .*DSQuotaExceededException"):
        agent.savepoint(str(tmp_path / "sp"), stop=True, drain=False)

    assert query.calls == ["stop"]
    assert list((tmp_path / "sp").iterdir()) == [], "a failed savepoint is removed, not left without _metadata"
    raised: list[BaseException] = []

    def program_waits() -> None:
        try:
            agent.after_await()
        except StopWithSavepointFailed as exc:
            raised.append(exc)

    waited = threading.Thread(target=program_waits)
    waited.start()
    waited.join(0.3)
    assert waited.is_alive(), "held until the JobMaster knows, so that the program's end is taken as a failover"
    agent.resume_program()
    waited.join(5)
    assert not waited.is_alive() and len(raised) == 1, "the program fails at its wait"


def test_a_savepoint_that_cannot_be_written_is_refused_before_anything_stops(tmp_path):
    agent = _agent(tmp_path)
    _checkpoint(tmp_path / "cp" / JOB / "wc", offsets=2, commits=2)
    query = _running(agent)
    (tmp_path / "file").write_text("a regular file")

    with pytest.raises(SavepointError, match="cannot create the savepoint directory") as refused:
        agent.savepoint(str(tmp_path / "file" / "sp"), stop=True, drain=False)

    assert not isinstance(refused.value, StopWithSavepointFailed)
    assert query.calls == [] and query.isActive, "the job runs on"
    agent.after_await()  # not held


def _advance(checkpoint: Path, retain: int) -> None:
    """The query plans and commits its next batch; maintenance keeps the newest ``retain`` batches and state versions."""
    batch = max(int(p.name) for p in (checkpoint / "offsets").iterdir()) + 1
    (checkpoint / "offsets" / str(batch)).write_text(f"offsets {batch}")
    (checkpoint / "state" / "0" / "0" / f"{batch + 1}.snapshot").write_text(f"state {batch + 1}")
    (checkpoint / "commits" / str(batch)).write_text(f"commit {batch}")
    for log in ("offsets", "commits"):
        for old in (checkpoint / log).iterdir():
            if int(old.name) <= batch - retain:
                old.unlink()
    for old in (checkpoint / "state" / "0" / "0").iterdir():
        if int(old.name.split(".")[0]) <= batch + 1 - retain:
            old.unlink()


def test_a_copy_that_maintenance_overtakes_is_taken_again_and_never_completed_short(tmp_path, monkeypatch):
    """Spark deletes by retention counted from its newest batch: a copy that fell behind it is incomplete, and is retried."""
    checkpoint = _checkpoint(tmp_path / "cp" / JOB / "wc", offsets=3, commits=3)
    advances = iter(range(3))  # the query commits 3 batches during the first copies, then idles

    class Racing(LocalFiles):
        def copy(self, source: str, target: str) -> None:
            if next(advances, None) is not None:
                _advance(checkpoint, retain=2)
            super().copy(source, target)

    agent = DriverAgent(AgentSettings(port=1, job_id=JOB, job_name="wc", checkpoint_root=str(tmp_path / "cp" / JOB)), files=Racing)
    agent._retain = 2  # the session's spark.sql.streaming.minBatchesToRetain, as starting() reads it
    query = Query()
    agent.started(query, "wc", None)
    agent._files = Racing(None)

    result = agent.savepoint(str(tmp_path / "sp"), stop=False, drain=False)

    location = Path(result["location"].removeprefix("file:"))
    committed = result["queries"]["wc"]
    assert committed == 5, "cut where the query was once it stopped racing the copy"
    copied = _files(location / "wc")
    assert {f"commits/{committed}", f"offsets/{committed}", f"state/0/0/{committed + 1}.snapshot"} <= copied

    always = DriverAgent(AgentSettings(port=1, job_id=JOB, job_name="wc", checkpoint_root=str(tmp_path / "cp" / JOB)))

    class Forever(LocalFiles):
        def copy(self, source: str, target: str) -> None:
            _advance(checkpoint, retain=2)
            super().copy(source, target)

    always._files, always._retain = Forever(None), 2
    always.started(Query(), "wc", None)
    with pytest.raises(SavepointError, match=r"query 'wc' .*within the (savepoint's )?timeout"):
        always.savepoint(str(tmp_path / "sp2"), stop=False, drain=False, time_limit=1.0)
    assert list((tmp_path / "sp2").iterdir()) == [], "no incomplete savepoint is left"


def test_an_interrupted_restore_is_copied_again_whole_and_another_runs_checkpoint_is_refused(tmp_path):
    source = _agent(tmp_path)
    _checkpoint(tmp_path / "cp" / JOB / "wc", offsets=3, commits=3)
    _running(source)
    savepoint = source.savepoint(str(tmp_path / "sp"), stop=False, drain=False)["location"]
    new_root = tmp_path / "cp" / ("c" * 32)
    (new_root / "wc.restoring-0badc0de" / "offsets").mkdir(parents=True)  # the attempt before died while copying

    restored = _agent(tmp_path, checkpoint_root=str(new_root), restore_path=savepoint)
    restored.starting(None, "wc", None)

    assert sorted(p.name for p in new_root.iterdir()) == ["wc"]
    assert "commits/2" in _files(new_root / "wc") and not (new_root / "wc" / "wc").exists(), "not nested into a leftover"

    explicit = tmp_path / "mine"
    _checkpoint(explicit, offsets=9, commits=9)  # an earlier run's checkpoint at the query's own location
    with pytest.raises(SavepointError, match=r"its checkpoint location .*mine already holds a checkpoint.*new checkpointLocation"):
        _agent(tmp_path, restore_path=savepoint).starting(None, "wc", str(explicit))


class Session:
    """A SparkSession's ``conf``, as the program set it."""

    def __init__(self, **conf: str) -> None:
        self.conf = self
        self._values = conf

    def get(self, key: str, default: str | None = None) -> str | None:
        return self._values.get(key, default)


def test_a_restore_goes_where_the_programs_own_checkpoint_location_puts_the_query(tmp_path, capsys):
    source = _agent(tmp_path)
    _checkpoint(tmp_path / "cp" / JOB / "wc", offsets=2, commits=2)
    _running(source)
    savepoint = source.savepoint(str(tmp_path / "sp"), stop=False, drain=False)["location"]
    own_root = tmp_path / "programs-own"

    restored = _agent(tmp_path, checkpoint_root=str(tmp_path / "cp" / ("c" * 32)), restore_path=savepoint)
    restored.starting(Session(**{"spark.sql.streaming.checkpointLocation": str(own_root)}), "wc", None)

    assert "commits/1" in _files(own_root / "wc"), "where Spark will look for it"
    assert "was taken while its job ran on: query 'wc' writes again what came after it" in capsys.readouterr().err


def test_a_stop_waits_for_the_running_micro_batch_and_keeps_the_one_it_had_to_interrupt(tmp_path):
    agent = _agent(tmp_path)
    checkpoint = _checkpoint(tmp_path / "cp" / JOB / "wc", offsets=3, commits=2)  # batch 2 runs
    query = _running(agent)
    query.status["isTriggerActive"] = True

    def batch_ends() -> None:
        (checkpoint / "commits" / "2").write_text("commit 2")
        query.status["isTriggerActive"] = False

    threading.Timer(0.3, batch_ends).start()
    result = agent.savepoint(str(tmp_path / "sp"), stop=True, drain=False)
    assert (result["queries"], result["replays"]) == ({"wc": 2}, {}), "stopped after batch 2 committed"

    back_to_back = _agent(tmp_path, job_id="f" * 32, checkpoint_root=str(tmp_path / "cp4"))
    checkpoint = _checkpoint(tmp_path / "cp4" / "wc", offsets=3, commits=2)  # batch 2 runs, and the next starts at once
    busy = _running(back_to_back)
    busy.status["isTriggerActive"] = True  # never a gap between two triggers

    def next_batch_starts() -> None:
        (checkpoint / "commits" / "2").write_text("commit 2")
        (checkpoint / "offsets" / "3").write_text("offsets 3")
        busy.recentProgress.append(_progress(2, time.time(), 3, 1, 1))

    threading.Timer(0.3, next_batch_starts).start()
    started = time.monotonic()
    result = back_to_back.savepoint(str(tmp_path / "sp"), stop=True, drain=False, time_limit=60)
    assert time.monotonic() - started < 10, "stopped once the batch running at the request committed"
    assert (result["queries"], result["replays"]) == ({"wc": 2}, {"wc": 3}), "the batch begun meanwhile replays"

    again = _agent(tmp_path, job_id="d" * 32, checkpoint_root=str(tmp_path / "cp2"))
    _checkpoint(tmp_path / "cp2" / "wc", offsets=3, commits=2)
    busy = _running(again)
    busy.status["isTriggerActive"] = True  # a micro-batch longer than the savepoint may wait
    result = again.savepoint(str(tmp_path / "sp"), stop=True, drain=False, time_limit=0.4)
    assert busy.calls == ["stop"] and (result["queries"], result["replays"]) == ({"wc": 1}, {"wc": 2})


def _progress(batch: int, at: float, rows: int, end: Any, latest: Any) -> dict[str, Any]:
    stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(at)) + f".{int(at * 1000) % 1000:03d}Z"
    durations = {"addBatch": 5, "triggerExecution": 9} if rows else {"triggerExecution": 1}
    source = {"endOffset": end, "latestOffset": latest}
    return {"batchId": batch, "timestamp": stamp, "numInputRows": rows, "durationMs": durations, "sources": [source]}


def test_a_drain_processes_the_input_there_at_the_request_and_is_bounded(tmp_path):
    agent = _agent(tmp_path)
    _checkpoint(tmp_path / "cp" / JOB / "wc", offsets=2, commits=2)
    query = _running(agent)
    now = time.time()
    query.recentProgress = [_progress(1, now - 5, 10, '{"t":{"0":10}}', '{"t":{"0":10}}')]

    def steady_input() -> None:  # each trigger finds more: the drain ends at what was there at its first trigger
        time.sleep(0.2)
        query.recentProgress.append(_progress(2, time.time(), 30, '{"t":{"0":25}}', '{"t":{"0":40}}'))
        time.sleep(0.3)
        query.recentProgress.append(_progress(3, time.time(), 30, '{"t":{"0":40}}', '{"t":{"0":70}}'))

    feeder = threading.Thread(target=steady_input)
    feeder.start()
    agent.savepoint(str(tmp_path / "sp"), stop=True, drain=True)
    feeder.join()
    assert query.calls == ["stop"] and query.recentProgress[-1]["batchId"] == 3

    bounded = _agent(tmp_path, job_id="e" * 32, checkpoint_root=str(tmp_path / "cp3"))
    _checkpoint(tmp_path / "cp3" / "wc", offsets=2, commits=2)
    behind = _running(bounded)
    behind.recentProgress = [_progress(2, time.time() + 0.1, 30, '{"t":{"0":25}}', '{"t":{"0":40}}')]
    with pytest.raises(SavepointError, match=r"--drain: 'wc' did not process the input available at the request.*the job runs on"):
        bounded.savepoint(str(tmp_path / "sp"), stop=True, drain=True, time_limit=0.5)
    assert behind.calls == [] and behind.isActive
    bounded.after_await()  # not held


def test_an_idle_query_keeps_its_last_committed_batch_past_sparks_recent_progress(tmp_path):
    agent = _agent(tmp_path)
    query = _running(agent)
    query.recentProgress = [_progress(7, time.time(), 3, 1, 1)]
    assert agent.query_views()[0]["committedBatchId"] == 7
    query.recentProgress = [_progress(8, time.time(), 0, 1, 1) for _ in range(100)]  # no-data reports only
    view = agent.query_views()[0]
    assert view["committedBatchId"] == 7 and [h["batchId"] for h in view["history"]] == [7]


def test_a_second_savepoint_while_one_runs_is_refused(tmp_path):
    agent = _agent(tmp_path)
    _checkpoint(tmp_path / "cp" / JOB / "wc", offsets=2, commits=2)
    _running(agent)
    agent._savepoint_lock.acquire()
    with pytest.raises(SavepointError, match="already taking a savepoint"):
        agent.savepoint(str(tmp_path / "sp"), stop=False, drain=False)


def test_a_restore_says_the_state_keeps_the_partitions_of_its_first_run_and_the_view_reports_them(tmp_path, capsys):
    source = _agent(tmp_path)
    checkpoint = _checkpoint(tmp_path / "cp" / JOB / "wc", offsets=2, commits=2)
    (checkpoint / "offsets" / "1").write_text('v1\n{"conf":{"spark.sql.shuffle.partitions":"2"}}\n{"logOffset":1}\n')
    query = _running(source)
    query.recentProgress = [_progress(1, time.time(), 3, 1, 1)]
    assert source.query_views()[0]["statePartitions"] == 2
    savepoint = source.savepoint(str(tmp_path / "sp"), stop=False, drain=False)["location"]

    restored = _agent(tmp_path, checkpoint_root=str(tmp_path / "cp" / ("c" * 32)), restore_path=savepoint)
    restored.starting(Session(**{"spark.sql.shuffle.partitions": "8"}), "wc", None)
    assert "query 'wc' keeps the 2 state partitions of its first run" in capsys.readouterr().err

    same = _agent(tmp_path, checkpoint_root=str(tmp_path / "cp" / ("d" * 32)), restore_path=savepoint)
    same.starting(Session(**{"spark.sql.shuffle.partitions": "2"}), "wc", None)
    assert "state partitions" not in capsys.readouterr().err


def test_a_restore_into_a_file_sink_whose_log_is_past_the_savepoint_is_refused(tmp_path):
    """Spark's file sink skips a batch id its log holds: restoring an older savepoint into that output would lose data."""
    source = _agent(tmp_path)
    _checkpoint(tmp_path / "cp" / JOB / "wc", offsets=3, commits=3)
    _running(source)
    savepoint = source.savepoint(str(tmp_path / "sp"), stop=False, drain=False)["location"]  # batch 2 committed
    output = tmp_path / "out"
    (output / "_spark_metadata").mkdir(parents=True)
    for name in ("0", "1", "2", ".2.crc"):
        (output / "_spark_metadata" / name).write_text("v1\n")

    at_the_cut = _agent(tmp_path, checkpoint_root=str(tmp_path / "cp" / ("c" * 32)), restore_path=savepoint)
    at_the_cut.starting(None, "wc", None, file_sink=str(output))  # the sink is where the savepoint is: restored
    (output / "_spark_metadata" / "9.compact").write_text("v1\n")  # the job ran on after the savepoint
    past = _agent(tmp_path, checkpoint_root=str(tmp_path / "cp" / ("d" * 32)), restore_path=savepoint)
    with pytest.raises(SavepointError, match=r"already holds batches up to 9, past the savepoint's 2.*Restore into a new output"):
        past.starting(None, "wc", None, file_sink=str(output))
    assert not (tmp_path / "cp" / ("d" * 32)).exists(), "refused before anything was copied"
    fresh = _agent(tmp_path, checkpoint_root=str(tmp_path / "cp" / ("e" * 32)), restore_path=savepoint)
    fresh.starting(None, "wc", None, file_sink=str(tmp_path / "new-out"))


@pytest.mark.parametrize(
    ("fmt", "options", "args", "given", "sink"),
    [
        ("json", {}, ("/out",), {}, "/out"),
        (None, {}, (), {"path": "/out"}, "/out"),  # no format: spark.sql.sources.default, parquet
        ("parquet", {"path": "/opt"}, (), {}, "/opt"),
        ("kafka", {}, (), {}, None),
        (None, {}, ("/out", "console"), {}, None),
        ("csv", {}, (), {}, None),  # no path: no file sink to look at
    ],
)
def test_the_hooks_see_a_query_that_writes_through_the_file_sink(fmt, options, args, given, sink):
    writer = type("Writer", (), {})()
    if fmt:
        setattr(writer, pyspark_hooks._FORMAT, fmt)
    pyspark_hooks._record(writer, options)
    assert pyspark_hooks._file_sink(writer, args, given) == sink


class JavaQuery:
    """The JVM side of a query as py4j shows it: ``recentProgress()`` an array of reports whose ``json()`` is counted."""

    def __init__(self, reports: list[dict[str, Any]]) -> None:
        self.reports, self.converted = reports, 0

    def recentProgress(self) -> list[Any]:
        query = self

        class Report:
            def __init__(self, report: dict[str, Any]) -> None:
                self.report = report

            def json(self) -> str:
                query.converted += 1
                return json.dumps(self.report)

        return [Report(r) for r in self.reports]


def test_the_progress_of_a_query_is_read_from_the_end_of_sparks_list_only_as_far_as_it_is_new(tmp_path):
    agent = _agent(tmp_path)
    query = _running(agent)
    now = time.time()
    ran = [_progress(b, now - 100 + b, 3, 1, 1) for b in range(5)]
    idle = [_progress(5, now - 50 + i / 10, 0, 1, 1) for i in range(95)]  # an idle trigger names the batch it did not run
    query._jsq = JavaQuery(ran + idle)
    first = agent.query_views()[0]
    assert first["committedBatchId"] == 4 and [h["batchId"] for h in first["history"]] == [0, 1, 2, 3, 4]
    converted = query._jsq.converted
    assert agent.query_views()[0]["committedBatchId"] == 4
    assert query._jsq.converted - converted == 2, "idle since the last look: the last report, and the one that ends the walk"

    query._jsq.reports = ran + idle[:40] + [_progress(5, now, 7, 1, 1), _progress(6, now, 0, 1, 1)]
    converted = query._jsq.converted
    view = agent.query_views()[0]
    assert view["committedBatchId"] == 5 and view["batchId"] == 6 and view["history"][-1]["batchId"] == 5
    assert query._jsq.converted - converted == 3, "the new batch, the report after it, and the one before that stops the walk"
