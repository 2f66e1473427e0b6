"""Object storage on the ``local`` target: input, output, checkpoints, savepoints and ``run -s`` all on ``s3a://``.

Against a real S3 API (moto's server, tests/infra/s3) through Hadoop's S3A
connector, which the client adds to the job's jars (``jobcluster.s3a.connector``:
fetched once by Ivy into the cache; pyspark carries no hadoop-aws). One
streaming word count reads text files from a bucket and writes its counts
there; it is stopped with a savepoint into ``s3a://``, more files arrive, and a
new job restored from that savepoint counts every word exactly once. No local
directory is involved but the cluster's own.
"""

from __future__ import annotations

import re
import time
import uuid

import pytest
from support import jobcluster

from tests.infra.s3.server import S3Server
from tests.support.streaming import PROGRAM, lines, s3_batches, wait_for_counts, word_counts

pytestmark = [pytest.mark.e2e, pytest.mark.s3]

COUNT_TIMEOUT = 240  # seconds for a job to count what was put


def _run_detached(*args: str) -> str:
    result = jobcluster("run", "-d", *args, check=True)
    return re.search(r"JobID ([0-9a-f]{32})", result.stdout).group(1)


def test_a_streaming_job_on_s3_is_stopped_with_a_savepoint_there_and_restored_exactly(home, monkeypatch, request, s3_server: S3Server):
    for key, value in S3Server.credentials_env().items():
        monkeypatch.setenv(key, value)  # S3A's default credential chain reads them; nothing lands in the configuration
    bucket = f"jobs-{uuid.uuid4().hex[:8]}"
    root = s3_server.create_bucket(bucket)
    parts = [lines(seed, 12) for seed in range(2)]
    for i, line in enumerate(parts[0]):
        s3_server.put_text(bucket, f"in/part0-{i:03}.txt", line + "\n")

    options = [item for key, value in s3_server.hadoop_options().items() for item in ("-D", f"{key}={value}")]
    options += ["-D", f"execution.checkpointing.dir={root}/checkpoints", "-D", f"execution.checkpointing.savepoint-dir={root}/savepoints"]
    program = [str(PROGRAM), "--input-dir", f"{root}/in", "--output", f"{root}/out", "--per-batch", "4"]

    first = _run_detached("-t", "local", *options, *program)
    request.addfinalizer(lambda: jobcluster("cancel", first))  # a failed check leaves no job running
    read = s3_batches(s3_server, bucket, "out")
    wait_for_counts(read, word_counts(parts[0]), COUNT_TIMEOUT, "the first job")
    # The driver's lease on the query's checkpoint is renewed every 5 s; S3 keeps no settable modification time,
    # so each renewal writes the lease's object again (another driver would otherwise take it within 15 s)
    (lease,) = [k for k in s3_server.keys(bucket, f"checkpoints/{first}/wordcount/_jobcluster_lease/") if not k.endswith("/")]
    renewed = s3_server.last_modified(bucket, lease)
    time.sleep(6.5)
    assert s3_server.last_modified(bucket, lease) != renewed, "the lease was renewed on S3"

    stopped = jobcluster("stop", first)
    assert stopped.returncode == 0, stopped.stdout + stopped.stderr
    savepoint = re.search(r"Savepoint completed\. Path: (\S+)", stopped.stdout).group(1)
    assert savepoint.startswith(f"{root}/savepoints/savepoint-{first[:6]}-"), savepoint
    assert any(k.endswith("/_metadata") for k in s3_server.keys(bucket, savepoint.removeprefix(f"{root}/"))), "the savepoint is on S3"

    for i, line in enumerate(parts[1]):
        s3_server.put_text(bucket, f"in/part1-{i:03}.txt", line + "\n")
    second = _run_detached("-t", "local", "-s", savepoint, *options, *program)
    request.addfinalizer(lambda: jobcluster("cancel", second))
    wait_for_counts(read, word_counts(parts[0] + parts[1]), COUNT_TIMEOUT, "the job restored from the savepoint on S3")
    assert any(k.startswith(f"checkpoints/{second}/") for k in s3_server.keys(bucket, "checkpoints/")), "checkpoints on S3"
