"""The test cluster enforces physical and virtual memory: a container whose process tree outgrows its size, or
reserves more address space than the cluster's ratio allows, is killed by YARN.

An ApplicationMaster container of the smallest size (256 MiB) runs a Python one-liner that fills 768 MiB
and holds it. The NodeManager's container monitor (pmem check on, see tests/infra/hadoop/siteconf.py) must
kill it with exit status -104 (KILLED_EXCEEDED_PMEM), which the ResourceManager reports as the attempt's
exit code with the monitor's diagnostics; with the check off the process would sleep its 90 s and exit 0.

Then a job cluster's TaskExecutor container killed so: the client's progress and the job's failure cause
say so with YARN's status and numbers, and name the option to change. Last the ApplicationMaster killed for its
virtual memory (the check Hadoop turns on by default): the client names it, with YARN's numbers and what to change.
"""

from __future__ import annotations

import re
import shlex
import sys
import time

import psutil
import pytest

from jobcluster.backends.yarn.container_requests import ContainerResource
from jobcluster.backends.yarn.staging import HdfsPaths, StagingDirectory
from jobcluster.backends.yarn.statuses import KILLED_EXCEEDED_PMEM
from jobcluster.backends.yarn.submission import submit_application_master
from jobcluster.backends.yarn.yarn_client import ApplicationMasterSpec, NewApplication, YarnClient
from tests.infra.hadoop.cluster import HadoopCluster
from tests.infra.hadoop.siteconf import MIN_ALLOCATION_MB, VMEM_PMEM_RATIO
from tests.integration.hadoop.test_yarn_client import (  # noqa: F401 - fixtures
    APP_TIMEOUT,
    TEST_TYPE,
    am_logs,
    hadoop_conf,
    no_leftovers,
    paths,
    yarn,
)
from tests.integration.hadoop.test_yarn_job_cluster import (  # noqa: F401 - fixtures
    PROGRAMS,
    application_id_in,
    cli,
    cli_env,
    pmem_kills,
    yarn_clean,
)

pytestmark = pytest.mark.hadoop

HOG_MIB = 3 * MIN_ALLOCATION_MB
"""What the container's process fills: three times its size, so YARN kills it at the first look."""
KILLS_HEAD = r"(?:TaskManager|\d+ TaskManagers) killed for memory while the job ran:\n"  # memory_kills.py's head of the cause


def test_a_container_past_its_physical_memory_is_killed_with_exit_status_104(
    hadoop_cluster: HadoopCluster,
    yarn: YarnClient,  # noqa: F811
    paths: HdfsPaths,  # noqa: F811
    no_leftovers: None,  # noqa: F811
) -> None:
    # bytes * n writes every page (memset), so all of it is resident; no quotes (the NM's bash -c "...").
    hog = f"import time; hog = bytes([1]) * ({HOG_MIB} << 20); print(len(hog) >> 20, flush=True); time.sleep(90)"

    def build(application: NewApplication, staging: StagingDirectory) -> ApplicationMasterSpec:
        return ApplicationMasterSpec(
            name="jobcluster-pmem-test",
            application_type=TEST_TYPE,
            resource=ContainerResource(MIN_ALLOCATION_MB, 1),
            command=f"{sys.executable} -c {shlex.quote(hog)} 1><LOG_DIR>/am.out 2><LOG_DIR>/am.err",
        )

    started = time.monotonic()
    submitted = submit_application_master(yarn, paths, None, build, until=lambda r: r.is_terminal, timeout=APP_TIMEOUT)
    submitted.staging.remove()
    report = submitted.report
    elapsed = time.monotonic() - started

    logs = am_logs(hadoop_cluster, report.application_id)
    assert (report.state, report.final_status) == ("FAILED", "FAILED"), f"{report}\n{logs}"
    # The ResourceManager's account of the attempt: the AM container's exit code, then the NodeManager's reason.
    assert f"exited with  exitCode: {KILLED_EXCEEDED_PMEM}" in report.diagnostics, report.diagnostics
    limit = re.search(
        r"Container \[pid=(\d+),containerID=\S+\] is running (\d+)B beyond the 'PHYSICAL' memory limit\. "
        r"Current usage: ([\d.]+) ([MG])B of (\d+) MB physical memory used",
        report.diagnostics,
    )
    assert limit, report.diagnostics
    pid, beyond = int(limit.group(1)), int(limit.group(2))
    used_mib = float(limit.group(3)) * (1024 if limit.group(4) == "G" else 1)
    assert int(limit.group(5)) == MIN_ALLOCATION_MB
    # The monitor may look while the hog is still being written: past the size is all that must hold.
    assert used_mib > MIN_ALLOCATION_MB and abs((beyond >> 20) - (used_mib - MIN_ALLOCATION_MB)) <= 1, report.diagnostics
    assert "Killing container." in report.diagnostics, report.diagnostics
    assert elapsed < 60, f"killed only after {elapsed:.0f} s (the process would have slept 90 s)"
    assert not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE, "the killed process tree lives on"


def test_a_task_executor_killed_for_its_memory_is_reported_with_yarns_numbers_and_the_option_to_change(
    cli_env: dict[str, str],  # noqa: F811
    hadoop_cluster: HadoopCluster,
    yarn_clean: None,  # noqa: F811
) -> None:
    """The executor JVM of the shipped 2560m TaskManager allocates 3 GiB of native memory (outside its limits): YARN kills
    the container; one task failure fails the job (spark.task.maxFailures=1), which then fails in seconds (after the
    replacement's kill too, when Spark did not count the first loss)."""
    python = ("-D", f"python.executable={sys.executable}")  # nothing packed or shipped: the test's Python is on the node
    program = f"local://{PROGRAMS / 'native_memory.py'}"
    result = cli(cli_env, "run", "-t", "yarn-per-job", "-p", "1", "-D", "spark.task.maxFailures=1", *python, program, "--mib", "3072")
    assert result.returncode == 1, result.stderr
    application = application_id_in(result.stderr)
    assert pmem_kills(hadoop_cluster, application), "the NodeManager killed a container of the job for its memory"

    # the client's progress: the lost TaskManager in YARN's words and numbers, and the option to change with its sizes
    lost = re.search(r"TaskExecutor (container_\S+) lost: worker terminated: (.*)", result.stderr)
    assert lost, result.stderr
    container, cause = lost.groups()
    usage = re.match(
        r"exit status -104 \(KILLED_EXCEEDED_PMEM\): killed by YARN for exceeding its physical memory limit "
        r"\(Current usage: ([\d.]+) GB of 2\.5 GB physical memory used\)\. The JVM overhead \(384m of the 2560m container\) holds ",
        cause,
    )
    # YARN rounds its usage to a tenth of a GB: a process tree just past 2.5 GB reads "2.5 GB of 2.5 GB"
    assert usage and float(usage.group(1)) >= 2.5, cause
    overhead = re.search(r"raise taskmanager\.memory\.jvm-overhead\.min to at least (\d+)m \(and \.max, if lower\)", cause)
    assert overhead and int(overhead.group(1)) > 384, cause  # the overhead plus the excess YARN measured
    assert "raise taskmanager.memory.process.size by as much too (to at least" in cause, cause

    # the job's failure cause: the program's error (Spark's lost executor), then the memory kills. Spark counts an
    # executor's loss against the task only when the worker reports the executor's exit; when the whole container
    # goes first ("worker lost") the task runs again on the replacement, which is killed too: one kill or more
    assert "ExecutorLostFailure" in result.stderr, result.stderr
    kills = re.search(rf"{KILLS_HEAD}((?:  .*\n?)+)", result.stderr)
    assert kills and f"  {container}: worker terminated: {cause}" in kills.group(1).splitlines(), result.stderr
    # ...which YARN's view of the application keeps (the end of the cause)
    final = re.search(rf"YARN application {application} FINISHED with final status FAILED: (.*)", result.stderr, re.DOTALL)
    assert final and re.search(KILLS_HEAD, final.group(1)), result.stderr


def test_an_application_master_past_its_virtual_memory_is_killed_and_named_with_the_numbers_and_what_to_change(
    cli_env: dict[str, str],  # noqa: F811
    yarn_clean: None,  # noqa: F811
) -> None:
    """The driver reserves 16 GiB of address space it never uses: more than the ApplicationMaster's 1792 MiB container
    times the test cluster's vmem-pmem-ratio, far less than its physical limit. One attempt: nothing runs it again."""
    python = ("-D", f"python.executable={sys.executable}")
    program = f"local://{PROGRAMS / 'address_space.py'}"
    result = cli(cli_env, "run", "-t", "yarn-per-job", "-p", "1", "-D", "yarn.application-attempts=1", *python, program, "--mib", "16384")
    assert result.returncode == 1, result.stderr
    application = application_id_in(result.stderr)
    named = re.search(
        rf"YARN application {application} FAILED with final status FAILED: The ApplicationMaster \(the JobManager\) was killed "
        r"by YARN for exceeding its virtual memory limit \(Current usage: ([\d.]+) GB of ([\d.]+) GB virtual memory used\)\. "
        r"YARN's virtual memory limit is the container's size times the cluster's yarn\.nodemanager\.vmem-pmem-ratio",
        result.stderr,
    )
    assert named and float(named.group(1)) > float(named.group(2)) == round(1792 * VMEM_PMEM_RATIO / 1024, 1), result.stderr
    assert "raise jobmanager.memory.process.size, or the ratio (or turn yarn.nodemanager.vmem-check-enabled off)" in result.stderr
