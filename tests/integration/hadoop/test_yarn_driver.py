"""The YarnResourceManagerDriver inside a real ApplicationMaster, against the real ResourceManager and NodeManager.

The ApplicationMaster (yarn_driver_am.py) is submitted through the client's submission code with a staged
payload; it registers through the driver, gets two TaskExecutor-sized containers, launches a command in each
that needs the staged payload, releases one early, sees the other's completion with YARN's exit status, and
unregisters SUCCEEDED, after which the driver removes the staging directory.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import pytest

from jobcluster.backends.yarn.container_env import ENV_LOCAL_RESOURCES, application_master_command, encode_local_resources
from jobcluster.backends.yarn.container_requests import ContainerResource
from jobcluster.backends.yarn.staging import HdfsPaths, StagingDirectory
from jobcluster.backends.yarn.submission import submit_application_master
from jobcluster.backends.yarn.yarn_client import ApplicationMasterSpec, ApplicationReport, NewApplication, YarnClient
from tests.infra.hadoop.cluster import HadoopCluster
from tests.integration.hadoop.test_yarn_client import (  # noqa: F401 - fixtures
    APP_TIMEOUT,
    TEST_TYPE,
    am_logs,
    hadoop_conf,
    no_leftovers,
    paths,
    yarn,
)

pytestmark = pytest.mark.hadoop

HARNESS = Path(__file__).with_name("yarn_driver_am.py")


def test_driver_registers_allocates_launches_releases_and_unregisters(
    hadoop_cluster: HadoopCluster,
    yarn: YarnClient,  # noqa: F811
    paths: HdfsPaths,  # noqa: F811
    no_leftovers: None,  # noqa: F811
) -> None:
    base = paths.staging_base(None)
    seen: dict[str, StagingDirectory] = {}

    def build(application: NewApplication, staging: StagingDirectory) -> ApplicationMasterSpec:
        seen["staging"] = staging
        files = (staging.upload(HARNESS), staging.write("payload.txt", b"staged\n"))
        return ApplicationMasterSpec(
            name="jobcluster-driver-test",
            application_type=TEST_TYPE,
            resource=ContainerResource(512, 1),
            command=application_master_command([sys.executable, HARNESS.name, "--staging-base", base], "am"),
            environment={"HADOOP_CONF_DIR": str(hadoop_cluster.hadoop_conf_dir), ENV_LOCAL_RESOURCES: encode_local_resources(files)},
            local_resources=files,
        )

    running: list[ApplicationReport] = []
    submitted = submit_application_master(
        yarn,
        paths,
        None,
        build,
        until=lambda r: r.is_terminal,
        on_change=lambda r: running.append(r) if r.state == "RUNNING" else None,
        timeout=APP_TIMEOUT,
    )
    report = submitted.report
    logs = am_logs(hadoop_cluster, report.application_id)
    assert (report.state, report.final_status) == ("FINISHED", "SUCCEEDED"), f"{report}\n{logs}"
    assert "driver harness done" in report.diagnostics

    out = next((hadoop_cluster.log_dir / "userlogs" / report.application_id).glob("*/am.out")).read_text()
    result = json.loads(next(line for line in out.splitlines() if line.startswith("RESULT "))[len("RESULT ") :])
    assert result["errors"] == [] and result["recovered"] == []
    # The AM command gave the entrypoint the node's host, the container's directories; the driver registered them.
    assert all(result["entrypoint"].values()), result["entrypoint"]
    assert running, "never saw RUNNING"
    assert (running[0].host, running[0].rpc_port) == (result["entrypoint"]["bind_host"], 4242)
    # Exactly the requested size, as YARN allocated it (1g, one slot → 1024 MiB, 1 vcore).
    assert result["requested"] == [1024, 1]
    assert sorted(result["allocated"].values()) == [[1024, 1], [1024, 1]]
    assert set(result["allocated"]) == {result["released"], result["completed"]}
    # Only the container that ran to its end is reported, with the command's exit status 3 (it found the
    # staged payload; without it the command exits 1), the released one is not.
    assert list(result["terminated"]) == [result["completed"]]
    assert "Exit code:3." in result["terminated"][result["completed"]], result["terminated"]
    assert result["terminated"][result["completed"]].startswith("exit code 3: exited with an error of its own"), result["terminated"]
    assert result["held_after"] == []
    # A container larger than YARN's maximum is refused before YARN is asked, naming what to change.
    assert "exceeds the maximum container" in result["oversized_error"], result["oversized_error"]
    assert "taskmanager.memory.process.size" in result["oversized_error"]
    # A request YARN has not fulfilled when the driver releases its workers fails instead of hanging.
    assert result["pending_before_terminate"] is True
    assert "released before YARN allocated" in result["pending_error"], result["pending_error"]

    # The driver removes the staging directory right after unregistering (Flink's order), so just after
    # the client sees FINISHED.
    deadline = time.monotonic() + 30
    while seen["staging"].exists() and time.monotonic() < deadline:
        time.sleep(0.25)
    assert not seen["staging"].exists()
