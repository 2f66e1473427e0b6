"""The REST endpoint speaks Flink's protocol at its edges: errors, versioned paths, cancel modes, body fields.

Each test runs the real aiohttp endpoint in-process against a stand-in
dispatcher (the dispatcher's own behaviour is tested in test_mini_dispatcher).
Field names and types are those of Flink 1.20's REST description and
serializers (JobDetails, TaskManagerInfo).
"""

from __future__ import annotations

import asyncio
import base64
import re
import time

import pytest
import requests

from jobcluster.cli.progress import ProgressPrinter
from jobcluster.client.cluster_client import ProgramOutput, RestClusterClient
from jobcluster.client.job_client import JobClient
from jobcluster.errors import ClusterClientError, JobNotFoundError
from jobcluster.heartbeat.manager import HeartbeatManager
from jobcluster.jobgraph.job_status import JobStatus
from jobcluster.runtime.rest.serialized_throwable import serialized_throwable
from tests.support.rest_standin import JOB_ID, MiB, StandInDispatcher
from tests.support.rest_standin import TOKEN as STANDIN_TOKEN
from tests.support.rest_standin import with_endpoint as _with_endpoint

TOKEN = {"Authorization": f"Bearer {STANDIN_TOKEN}"}


def test_every_error_is_flink_json_with_flink_status():
    def scenario(url, dispatcher):
        cases = [
            ("GET", "/no/such/path", 404),
            ("GET", "/v1/no/such/path", 404),
            ("GET", f"/jobs/{'f' * 32}", 404),  # a JobID, but no such job
            ("GET", f"/jobs/{'f' * 32}/execution-result", 404),
            ("GET", "/jobs/not-a-job-id", 400),
            ("GET", f"/jobs/{'g' * 32}", 400),  # 32 characters, not hex
            ("GET", f"/jobs/{JOB_ID}0", 400),  # 33 hex digits
            ("GET", "/jobs/abc/execution-result", 400),
            ("PATCH", "/jobs/abc?mode=cancel", 400),
            ("DELETE", "/overview", 405),
        ]
        for method, path, status in cases:
            resp = requests.request(method, url + path, headers=TOKEN, timeout=5)
            assert resp.status_code == status, (method, path, resp.text)
            assert resp.headers["Content-Type"].startswith("application/json"), (method, path)
            errors = resp.json()["errors"]
            assert isinstance(errors, list) and errors and all(isinstance(e, str) for e in errors)
        assert dispatcher.cancelled == []
        # An upper-case JobID is the same JobID, as Flink parses it.
        assert requests.get(f"{url}/jobs/{JOB_ID.upper()}", timeout=5).json()["jid"] == JOB_ID

    _with_endpoint(scenario)


def test_v1_serves_every_path_the_unversioned_path_serves():
    def scenario(url, dispatcher):
        for path in (
            "/overview",
            "/config",
            "/jobs",
            "/jobs/overview",
            f"/jobs/{JOB_ID}",
            f"/jobs/{JOB_ID}/execution-result",
            "/taskmanagers",
        ):
            plain, versioned = (requests.get(f"{url}{prefix}{path}", timeout=5) for prefix in ("", "/v1"))
            assert versioned.status_code == plain.status_code == 200, path
            assert versioned.json().keys() == plain.json().keys(), path
        for stream in ("stdout", "stderr"):
            assert requests.get(f"{url}/v1/jobs/{JOB_ID}/{stream}", timeout=5).status_code == 401  # private there too
        assert requests.patch(f"{url}/v1/jobs/{JOB_ID}?mode=cancel", headers=TOKEN, timeout=5).status_code == 202
        assert dispatcher.cancelled == [JOB_ID]

    _with_endpoint(scenario)


def test_cancel_modes_as_flink():
    def scenario(url, dispatcher):
        for query in ("?mode=CANCEL", "?mode=Cancel", "?mode=cancel", ""):
            assert requests.patch(f"{url}/jobs/{JOB_ID}{query}", headers=TOKEN, timeout=5).status_code == 202, query
        assert dispatcher.cancelled == [JOB_ID] * 4
        stop = requests.patch(f"{url}/jobs/{JOB_ID}?mode=stop", headers=TOKEN, timeout=5, allow_redirects=False)
        assert stop.status_code == 308 and "jobs/:jobId/stop" in stop.json()["errors"][0]
        bad = requests.patch(f"{url}/jobs/{JOB_ID}?mode=savepoint", headers=TOKEN, timeout=5)
        assert bad.status_code == 400 and "savepoint" in bad.json()["errors"][0]
        assert requests.patch(f"{url}/jobs/{JOB_ID}?mode=STOP", timeout=5).status_code == 401  # the token first
        assert dispatcher.cancelled == [JOB_ID] * 4
        with pytest.raises(JobNotFoundError, match="not found"):
            RestClusterClient(url, "c", token="t0ken").cancel("f" * 32)
        with pytest.raises(ClusterClientError, match="400"):
            RestClusterClient(url, "c", token="t0ken").cancel("nope")

    _with_endpoint(scenario)


def test_jobs_overview_carries_flink_job_details():
    def scenario(url, dispatcher):
        (job,) = requests.get(f"{url}/jobs/overview", timeout=5).json()["jobs"]
        assert job["jid"] == JOB_ID and job["name"] == "wordcount" and job["state"] == "RUNNING"
        assert job["last-modification"] == 1200
        assert job["pending-operators"] == 0 and job["jobType"] == "BATCH" and job["schedulerType"] == "Default"
        tasks = job["tasks"]
        states = {"created", "scheduled", "deploying", "running", "finished", "canceling", "canceled", "failed"}
        states |= {"reconciling", "initializing"}
        assert set(tasks) == states | {"total"} and all(type(n) is int for n in tasks.values())
        assert (tasks["total"], tasks["running"], tasks["finished"], tasks["failed"], tasks["scheduled"]) == (10, 3, 6, 1, 1)
        assert RestClusterClient(url, "c").list_jobs() == [job]

    _with_endpoint(scenario)


def test_taskmanagers_use_flink_names_and_types(capsys):
    def scenario(url, dispatcher):
        (tm,) = RestClusterClient(url, "c").task_managers()
        memory = tm["memoryConfiguration"]
        assert set(memory) == {
            "frameworkHeap",
            "taskHeap",
            "frameworkOffHeap",
            "taskOffHeap",
            "networkMemory",
            "managedMemory",
            "jvmMetaspace",
            "jvmOverhead",
            "totalFlinkMemory",
            "totalProcessMemory",
        }
        assert all(type(v) is int for v in memory.values())
        assert memory["taskHeap"] == 512 * MiB and memory["networkMemory"] == 64 * MiB
        assert memory["totalFlinkMemory"] == (128 + 128 + 512 + 0 + 64 + 256) * MiB
        assert memory["totalProcessMemory"] == memory["totalFlinkMemory"] + (256 + 192) * MiB
        assert tm["hardware"] == {"cpuCores": 8, "physicalMemory": 16 << 30, "freeMemory": 512 * MiB, "managedMemory": 256 * MiB}
        assert tm["slotsNumber"] == 2 and tm["freeSlots"] == 1
        assert tm["assignedTasks"] == 1  # Flink 2's client requires it: a subtask in each slot in use
        # Flink writes the time of the last heartbeat (ms since the epoch) under this name; the view's age is 2500 ms.
        now_ms = time.time() * 1000
        assert type(tm["timeSinceLastHeartbeat"]) is int and now_ms - 5000 < tm["timeSinceLastHeartbeat"] <= now_ms - 2500
        assert (tm["dataPort"], tm["jmxPort"], tm["blocked"], tm["path"]) == (-1, -1, False, "http://127.0.0.1:1/taskmanager")
        profile = {"cpuCores": 2.0, "taskHeapMemory": 512, "taskOffHeapMemory": 0, "managedMemory": 256, "networkMemory": 64}
        assert tm["totalResource"] == profile | {"extendedResources": {}}
        assert tm["freeResource"] == {k: v / 2 for k, v in profile.items()} | {"extendedResources": {}}  # one of two slots free
        ProgressPrinter().update(StandInDispatcher().job_details(JOB_ID), [tm])

    _with_endpoint(scenario)
    err = capsys.readouterr().err
    assert "process 1536 MiB (task heap 512 MiB, managed 256 MiB, network 64 MiB)" in err


def test_time_since_last_heartbeat_is_the_heartbeat_managers_age():
    async def main():
        answered = asyncio.Event()

        async def beat():
            answered.set()

        async def on_timeout(target):
            pass

        manager = HeartbeatManager("rm", 0.05, 10, on_timeout)
        assert manager.seconds_since_last_heartbeat("tm-1") is None
        manager.monitor_target("tm-1", beat)
        await asyncio.sleep(0.2)  # monitored, never asked: the age grows from when monitoring began
        assert manager.seconds_since_last_heartbeat("tm-1") >= 0.2
        manager.start()
        await answered.wait()
        await asyncio.sleep(0.01)
        assert manager.seconds_since_last_heartbeat("tm-1") < 0.15
        await manager.stop()

    started = time.monotonic()
    asyncio.run(main())
    assert time.monotonic() - started < 5


# Field names and JSON types of Flink 1.20's REST description (rest_v1_dispatcher.yml) for the bodies below.
IO_METRICS_FIELDS = {
    "read-bytes": int,
    "read-bytes-complete": bool,
    "write-bytes": int,
    "write-bytes-complete": bool,
    "read-records": int,
    "read-records-complete": bool,
    "write-records": int,
    "write-records-complete": bool,
    "accumulated-backpressured-time": int,
    "accumulated-idle-time": int,
    "accumulated-busy-time": float,
}
VERTEX_FIELDS = {
    "id": str,
    "slotSharingGroupId": str,
    "name": str,
    "maxParallelism": int,
    "parallelism": int,
    "status": str,
    "start-time": int,
    "end-time": int,
    "duration": int,
    "tasks": dict,
    "metrics": dict,
}
JOB_DETAILS_FIELDS = {
    "jid": str,
    "name": str,
    "isStoppable": bool,
    "state": str,
    "job-type": str,
    "start-time": int,
    "end-time": int,
    "duration": int,
    "maxParallelism": int,
    "now": int,
    "timestamps": dict,
    "vertices": list,
    "status-counts": dict,
    "plan": dict,
}
EXECUTION_STATES = {"CREATED", "SCHEDULED", "DEPLOYING", "RUNNING", "FINISHED", "CANCELING", "CANCELED", "FAILED", "RECONCILING"}
EXECUTION_STATES |= {"INITIALIZING"}
JOB_STATES = {"INITIALIZING", "CREATED", "RUNNING", "FAILING", "FAILED", "CANCELLING", "CANCELED", "FINISHED", "RESTARTING"}
JOB_STATES |= {"SUSPENDED", "RECONCILING"}


def _has_fields(body: dict, fields: dict) -> None:
    for name, kind in fields.items():
        assert name in body, name
        assert type(body[name]) is kind, (name, body[name])


def test_job_details_are_flinks_job_details_info():
    def scenario(url, dispatcher):
        details = requests.get(f"{url}/v1/jobs/{JOB_ID}", timeout=5).json()
        _has_fields(details, JOB_DETAILS_FIELDS)
        assert details["job-type"] == "BATCH" and details["isStoppable"] is False and details["maxParallelism"] == 128
        assert set(details["timestamps"]) == JOB_STATES and details["timestamps"]["RUNNING"] == 1200
        assert details["timestamps"]["FAILING"] == 0
        assert set(details["status-counts"]) == EXECUTION_STATES
        assert details["status-counts"]["RUNNING"] == 1 and sum(details["status-counts"].values()) == 1
        (vertex,) = details["vertices"]
        _has_fields(vertex, VERTEX_FIELDS)
        _has_fields(vertex["metrics"], IO_METRICS_FIELDS)
        assert vertex["status"] == "RUNNING" and vertex["parallelism"] == 4 and re.fullmatch(r"[0-9a-f]{32}", vertex["slotSharingGroupId"])
        assert set(vertex["tasks"]) == EXECUTION_STATES
        metrics = vertex["metrics"]
        assert (metrics["read-bytes"], metrics["read-records"], metrics["write-bytes"], metrics["write-records"]) == (4096, 40, 512, 5)
        assert metrics["read-bytes-complete"] is True
        assert (vertex["tasks"]["RUNNING"], vertex["tasks"]["FINISHED"], vertex["tasks"]["FAILED"], vertex["tasks"]["SCHEDULED"]) == (
            3,
            6,
            1,
            1,
        )
        assert [n["id"] for n in details["plan"]["nodes"]] == [vertex["id"]]
        # jobcluster's own fields ride along (Flink's reader ignores them); the status path Flink's client polls.
        assert details["restarts"] == 1 and details["slots"] == {"required": 1, "held": 1} and details["spark"]["tasks_total"] == 10
        assert requests.get(f"{url}/jobs/{JOB_ID}/status", timeout=5).json() == {"status": "RUNNING"}
        dispatcher.finish(JobStatus.FINISHED)
        done = requests.get(f"{url}/jobs/{JOB_ID}", timeout=5).json()
        assert done["state"] == "FINISHED" and done["vertices"][0]["status"] == "FINISHED" and done["status-counts"]["FINISHED"] == 1

    _with_endpoint(scenario)


def test_execution_result_is_what_flinks_job_result_serializer_writes():
    def scenario(url, dispatcher):
        path = f"{url}/jobs/{JOB_ID}/execution-result"
        assert requests.get(path, timeout=5).json() == {"status": {"id": "IN_PROGRESS"}}
        dispatcher.finish(JobStatus.FINISHED, exit_code=0)
        body = requests.get(path, timeout=5).json()
        assert body["status"] == {"id": "COMPLETED"}
        # Exactly Flink 1.20's keys: its JobResultDeserializer breaks on others; no failure-cause on success.
        assert body["job-execution-result"] == {
            "id": JOB_ID,
            "application-status": "SUCCEEDED",
            "accumulator-results": {},
            "net-runtime": 3000,
        }

    _with_endpoint(scenario)


def test_a_failed_jobs_result_carries_a_serialized_throwable_and_jobclusters_client_reads_it():
    cause = "the PySpark program exited with code 3\nTraceback (most recent call last):\nValueError: boom"

    def scenario(url, dispatcher):
        client = RestClusterClient(url, "c")
        assert JobClient(client, JOB_ID).details()["state"] == "RUNNING"
        dispatcher.finish(JobStatus.FAILED, cause, 3)
        result = client.execution_result(JOB_ID)
        assert set(result) == {"id", "application-status", "accumulator-results", "net-runtime", "failure-cause"}
        assert result["application-status"] == "FAILED"
        failure = result["failure-cause"]
        assert set(failure) == {"class", "stack-trace", "serialized-throwable"} and failure["stack-trace"] == cause
        serialized = base64.b64decode(failure["serialized-throwable"])
        assert serialized[:4] == bytes.fromhex("aced0005") and b"org.apache.flink.util.SerializedThrowable" in serialized
        assert failure["class"].encode() in serialized and b"ValueError: boom" in serialized
        ended = JobClient(client, JOB_ID).wait_for_result()
        assert (ended.status, ended.job_name, ended.failure_cause, ended.program_exit_code, ended.restarts) == (
            "FAILED",
            "wordcount",
            cause,
            3,
            1,
        )
        assert ended.duration_ms == 3000 and not ended.succeeded

    _with_endpoint(scenario)


def test_overview_and_config_carry_flinks_fields():
    def scenario(url, dispatcher):
        overview = requests.get(f"{url}/overview", timeout=5).json()
        counts = ("taskmanagers", "slots-total", "slots-available", "jobs-running", "jobs-finished", "jobs-cancelled", "jobs-failed")
        _has_fields(overview, dict.fromkeys((*counts, "taskmanagers-blocked", "slots-free-and-blocked"), int))
        _has_fields(overview, {"flink-version": str, "flink-commit": str})
        assert (overview["taskmanagers"], overview["slots-total"], overview["slots-available"], overview["jobs-running"]) == (1, 2, 1, 1)
        config = requests.get(f"{url}/config", timeout=5).json()
        _has_fields(
            config,
            {
                "refresh-interval": int,
                "timezone-name": str,
                "timezone-offset": int,
                "flink-version": str,
                "flink-revision": str,
                "features": dict,
            },
        )
        assert config["features"] == {"web-submit": False, "web-cancel": True, "web-rescale": False, "web-history": False}

    _with_endpoint(scenario)


def _operation(url: str, path: str) -> dict:
    """Poll an asynchronous operation's status until it is COMPLETED; its ``operation``."""
    for _ in range(100):
        body = requests.get(url + path, timeout=5).json()
        if body["status"]["id"] == "COMPLETED":
            return body["operation"]
        time.sleep(0.05)
    raise AssertionError(f"{path} never completed")


def test_stop_with_savepoint_fails_as_flink_fails_it_for_a_batch_job():
    def scenario(url, dispatcher):
        stop = f"{url}/jobs/{JOB_ID}/stop"
        assert requests.post(stop, json={"drain": False}, timeout=5).status_code == 401
        triggered = requests.post(stop, json={"drain": False}, headers=TOKEN, timeout=5)
        assert triggered.status_code == 202
        trigger_id = triggered.json()["request-id"]
        assert re.fullmatch(r"[0-9a-f]{32}", trigger_id)
        failure = _operation(url, f"/jobs/{JOB_ID}/savepoints/{trigger_id}")["failure-cause"]
        assert failure["class"] == "org.apache.flink.runtime.checkpoint.CheckpointException"
        assert f"Job {JOB_ID} is not a streaming job" in failure["stack-trace"]
        assert base64.b64decode(failure["serialized-throwable"])[:2] == b"\xac\xed"
        # Flink's idempotent retry: the client's triggerId names the operation; a savepoint fails alike.
        mine = "ab" * 16
        again = requests.post(f"{url}/v1/jobs/{JOB_ID}/savepoints", json={"triggerId": mine}, headers=TOKEN, timeout=5)
        assert again.status_code == 202 and again.json() == {"request-id": mine}
        assert "failure-cause" in _operation(url, f"/jobs/{JOB_ID}/savepoints/{mine}")
        assert requests.get(f"{url}/jobs/{JOB_ID}/savepoints/{'c' * 32}", timeout=5).status_code == 404
        assert requests.post(f"{url}/jobs/{'f' * 32}/stop", json={}, headers=TOKEN, timeout=5).status_code == 404
        assert requests.post(stop, data="{", headers=TOKEN, timeout=5).status_code == 400
        assert requests.post(stop, json=[], headers=TOKEN, timeout=5).status_code == 400
        assert requests.post(stop, json={"targetDirectory": 3}, headers=TOKEN, timeout=5).status_code == 400
        assert dispatcher.cancelled == [] and requests.get(f"{url}/jobs/{JOB_ID}/status", timeout=5).json()["status"] == "RUNNING"
        assert requests.get(f"{url}/jobs/{JOB_ID}", timeout=5).json()["job-type"] == "BATCH"

    _with_endpoint(scenario)


def test_a_streaming_jobs_savepoints_and_stop_in_flinks_shapes():
    dispatcher = StandInDispatcher()
    dispatcher.queries = [
        {
            "name": "wordcount",
            "id": "q-1",
            "committedBatchId": 7,
            "checkpoint": f"file:/cp/{JOB_ID}/wordcount",
            "history": [
                {"batchId": 6, "triggerTime": 10_000, "durationMs": 300, "numInputRows": 5, "stateBytes": 2048},
                {"batchId": 7, "triggerTime": 11_000, "durationMs": 500, "numInputRows": 9, "stateBytes": 4096},
            ],
        }
    ]

    def scenario(url, dispatcher):
        job = requests.get(f"{url}/jobs/{JOB_ID}", timeout=5).json()
        assert (job["job-type"], job["isStoppable"], job["plan"]["type"]) == ("STREAMING", True, "STREAMING")
        assert requests.get(f"{url}/jobs/overview", timeout=5).json()["jobs"][0]["jobType"] == "STREAMING"
        stats = requests.get(f"{url}/jobs/{JOB_ID}/checkpoints", timeout=5).json()
        assert stats["counts"] == {"restored": 0, "total": 8, "in_progress": 0, "completed": 8, "failed": 0}
        assert [c["id"] for c in stats["history"]] == [7, 6]  # newest first
        latest = stats["latest"]["completed"]
        assert (latest["id"], latest["end_to_end_duration"], latest["state_size"]) == (7, 500, 4096)
        assert latest["external_path"] == f"file:/cp/{JOB_ID}/wordcount/commits/7"
        assert stats["summary"]["state_size"] == {"min": 2048, "max": 4096, "avg": 3072}
        config = requests.get(f"{url}/jobs/{JOB_ID}/checkpoints/config", timeout=5).json()
        assert (config["mode"], config["timeout"], config["externalization"]["enabled"]) == ("exactly_once", 600_000, True)
        # No directory given and none configured: the operation fails with Flink's advice.
        trigger = requests.post(f"{url}/jobs/{JOB_ID}/savepoints", json={}, headers=TOKEN, timeout=5).json()["request-id"]
        assert "No savepoint directory" in _operation(url, f"/jobs/{JOB_ID}/savepoints/{trigger}")["failure-cause"]["stack-trace"]
        # A savepoint while running, then a stop with one: each completes with its location.
        body = {"target-directory": "file:/sp", "cancel-job": False}
        trigger = requests.post(f"{url}/jobs/{JOB_ID}/savepoints", json=body, headers=TOKEN, timeout=5).json()["request-id"]
        assert _operation(url, f"/jobs/{JOB_ID}/savepoints/{trigger}") == {"location": f"file:/sp/savepoint-{JOB_ID[:6]}-000000000000"}
        assert requests.get(f"{url}/jobs/{JOB_ID}/status", timeout=5).json()["status"] == "RUNNING"
        trigger = requests.post(
            f"{url}/jobs/{JOB_ID}/stop", json={"targetDirectory": "hdfs://nn/sp", "drain": True}, headers=TOKEN, timeout=5
        ).json()["request-id"]
        assert _operation(url, f"/jobs/{JOB_ID}/savepoints/{trigger}")["location"].startswith("hdfs://nn/sp/savepoint-")
        assert dispatcher.triggered == [(None, False, False), ("file:/sp", False, False), ("hdfs://nn/sp", True, True)]
        assert requests.get(f"{url}/jobs/{JOB_ID}/status", timeout=5).json()["status"] == "FINISHED"
        stats = requests.get(f"{url}/jobs/{JOB_ID}/checkpoints", timeout=5).json()
        assert stats["latest"]["savepoint"]["external_path"].startswith("hdfs://nn/sp/savepoint-")

    _with_endpoint(scenario, dispatcher)


def test_savepoint_disposal_in_flinks_shapes_apart_from_the_jobs_savepoints():
    def scenario(url, dispatcher):
        body = {"savepoint-path": "file:/sp/savepoint-012345-000000000000"}
        assert requests.post(f"{url}/savepoint-disposal", json=body, timeout=5).status_code == 401
        answered = requests.post(f"{url}/v1/savepoint-disposal", json=body, headers=TOKEN, timeout=5)
        assert answered.status_code == 200  # Flink's trigger of a disposal answers 200, not 202
        trigger = answered.json()["request-id"]
        assert _operation(url, f"/savepoint-disposal/{trigger}") == {}  # Flink's AsynchronousOperationInfo: no location
        assert dispatcher.disposed == ["file:/sp/savepoint-012345-000000000000"]
        assert requests.get(f"{url}/jobs/{JOB_ID}/savepoints/{trigger}", timeout=5).status_code == 404
        assert requests.get(f"{url}/jobs/{JOB_ID}/checkpoints", timeout=5).json()["latest"]["savepoint"] is None
        refused = {"savepoint-path": "/tmp/not-a-savepoint", "triggerId": "D" * 32}
        trigger = requests.post(f"{url}/savepoint-disposal", json=refused, headers=TOKEN, timeout=5).json()["request-id"]
        assert trigger == "d" * 32
        assert "has no _metadata file" in _operation(url, f"/savepoint-disposal/{trigger}")["failure-cause"]["stack-trace"]
        missing = requests.post(f"{url}/savepoint-disposal", json={}, headers=TOKEN, timeout=5)
        assert missing.status_code == 400 and "savepoint-path" in missing.json()["errors"][0]
        assert requests.get(f"{url}/savepoint-disposal/{'e' * 32}", timeout=5).status_code == 404

    _with_endpoint(scenario)


def test_cancel_takes_an_upper_case_job_id():
    def scenario(url, dispatcher):
        assert requests.patch(f"{url}/jobs/{JOB_ID.upper()}?mode=cancel", headers=TOKEN, timeout=5).status_code == 202
        assert dispatcher.cancelled == [JOB_ID]
        RestClusterClient(url, "c", token=STANDIN_TOKEN).cancel(JOB_ID.upper())
        assert dispatcher.cancelled == [JOB_ID, JOB_ID]

    _with_endpoint(scenario)


def test_serialized_throwable_strings_are_javas_modified_utf8():
    data = serialized_throwable("x.Y", "nul\x00 and \U0001f600", "t" * 70_000)
    assert b"nul\xc0\x80 and \xed\xa0\xbd\xed\xb8\x80" in data  # NUL as two bytes, a non-BMP character as a surrogate pair
    assert b"\x7c" + (70_000).to_bytes(8, "big") + b"ttt" in data  # beyond 65535 bytes: TC_LONGSTRING


def test_program_output_is_served_by_logical_offset_and_says_where_it_resumed(tmp_path):
    from jobcluster.runtime.jobmaster.rolling_output import RollingOutputFile

    stdout = RollingOutputFile(tmp_path / "driver.out", max_file_size=10, max_files=2)
    stdout.write(b"".join(f"{i:04d}\n".encode() for i in range(10)))  # 50 bytes: 30..49 kept

    class WithOutput(StandInDispatcher):
        async def job_output(self, job_id: str, stream: str, offset: int):
            self._job(job_id)
            if offset < 0:
                raise ValueError("offset must be 0 or more")
            return stdout.read(offset, 1 << 20)

    def scenario(url, dispatcher):
        client = RestClusterClient(url, "c", token=STANDIN_TOKEN)
        resp = requests.get(f"{url}/jobs/{JOB_ID}/stdout?offset=35", headers=TOKEN, timeout=5)
        assert resp.content == b"0007\n0008\n0009\n" and resp.headers["X-Output-Offset"] == "35"
        assert client.job_output(JOB_ID, "stdout", 0) == ProgramOutput(30, b"0006\n0007\n0008\n0009\n")
        assert client.job_output(JOB_ID, "stdout", 50) == ProgramOutput(50, b"")
        resp = requests.get(f"{url}/jobs/{JOB_ID}/stdout?offset=-1", headers=TOKEN, timeout=5)
        assert resp.status_code == 400

    _with_endpoint(scenario, WithOutput())


def test_a_streaming_jobs_type_and_queries_reach_the_client():
    from jobcluster.runtime.rest import flink_bodies

    details = StandInDispatcher().job_details(JOB_ID)
    streaming = {"queries": [{"name": "q", "id": "i", "runId": "r", "active": True, "batchId": 3}]}
    body = flink_bodies.job_details_info({**details, "job-type": "STREAMING", "streaming": streaming})
    assert body["job-type"] == "STREAMING" and body["streaming"] == streaming
    assert flink_bodies.job_details_info(details)["job-type"] == "BATCH"
