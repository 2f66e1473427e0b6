"""The REST endpoint speaks Flink's protocol at its edges: errors, versioned paths, cancel modes, body fields.

Each test runs the real aiohttp endpoint in-process against a stand-in
dispatcher (the dispatcher's own behaviour is tested in test_mini_dispatcher).
Field names and types are those of Flink 1.20's REST description and
serializers (JobDetails, TaskManagerInfo).
"""

from __future__ import annotations

import asyncio
import time

import pytest
import requests

from jobcluster.cli.progress import ProgressPrinter
from jobcluster.client.cluster_client import RestClusterClient
from jobcluster.errors import ClusterClientError, JobNotFoundError
from jobcluster.heartbeat.manager import HeartbeatManager
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
        assert tm["timeSinceLastHeartbeat"] == 2500 and tm["slotsNumber"] == 2 and tm["freeSlots"] == 1
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
