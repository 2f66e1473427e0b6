"""The checkpoint and savepoint layout (spark/checkpoints.py) and the client's savepoint checks (client/savepoints.py)."""

import re

import pytest

from jobcluster.client.savepoints import dispose_local_savepoint, local_path, read_local_savepoint
from jobcluster.spark.checkpoints import (
    QuerySavepoint,
    SavepointError,
    SavepointMetadata,
    committed_batch,
    job_checkpoint_root,
    keep_in_savepoint,
    new_savepoint_name,
    non_restored_state_error,
    parse_savepoint_metadata,
    unrestored_queries,
)

JOB = "b36a7e8190b1466587f0b1cd682b5df9"


def test_a_jobs_root_and_a_savepoints_name_follow_flink():
    assert job_checkpoint_root("hdfs://nn:9000/cp/", JOB) == f"hdfs://nn:9000/cp/{JOB}"
    first, second = new_savepoint_name(JOB), new_savepoint_name(JOB)
    assert re.fullmatch(r"savepoint-b36a7e-[0-9a-f]{12}", first) and first != second


def test_the_committed_batch_is_the_highest_commit_file():
    assert committed_batch(["0", "1", ".1.crc", "10", "9", ".10.crc"]) == 10
    assert committed_batch([]) is None and committed_batch([".tmp-file"]) is None


@pytest.mark.parametrize(
    ("relative", "kept"),
    [
        ("metadata", True),
        ("offsets/5", True),
        ("offsets/.5.crc", True),
        ("offsets/6", False),  # logged, never committed: the restored query runs batch 6 again
        ("commits/5", True),
        ("commits/6", False),
        ("sources/0/0", True),  # a source reconciles its own log with the offsets
        ("sources/0/7", True),
        ("state/0/1/6.delta", True),  # batch 5 wrote version 6
        ("state/0/1/.6.delta.crc", True),
        ("state/0/1/7.delta", False),
        ("state/0/1/4.snapshot", True),
        ("state/0/1/7.zip", False),
        ("state/0/_metadata/schema", True),
        ("state/0/1/SSTs/000012-abc.sst", True),
        ("offsets/.6.9be55246-60cb-420c-97a2-49eb84bf92d9.tmp", False),  # being written
        ("state/0/1/.5.delta.3f2a.tmp", False),
        ("offsets/..6.9be55246.tmp.crc", False),
        # Spark 4: RocksDB's files under checkpoint format v2 (<version>_<unique id>), and Spark's own checksum files
        ("state/0/0/6_764e8e10-b791-4381-a76d-eb4db28185f8.zip", True),
        ("state/0/0/.6_764e8e10-b791-4381-a76d-eb4db28185f8.zip.crc", True),
        ("state/0/0/7_0084c38e-f02d-4663-85d4-528eaf11c26c.zip", False),
        ("state/0/0/7_0084c38e-f02d-4663-85d4-528eaf11c26c.changelog", False),
        ("state/0/0/7_0084c38e-f02d-4663-85d4-528eaf11c26c.zip.crc", False),
        ("state/0/0/.7_0084c38e-f02d-4663-85d4-528eaf11c26c.zip.crc.crc", False),
        ("state/0/0/7.zip.crc", False),
        ("state/0/0/6.changelog.crc", True),
        ("state/0/_stateSchema/default/0_1b98917c-3392-475d-8d8e-9d832f70470e", True),  # the schema, by batch: kept
        ("state/0/_metadata/v2/7", True),
    ],
)
def test_a_savepoint_is_cut_at_the_last_committed_batch(relative, kept):
    assert keep_in_savepoint(relative, committed=5) is kept


def test_a_query_without_a_committed_batch_keeps_only_what_is_not_a_batch():
    assert not keep_in_savepoint("offsets/0", None)
    assert keep_in_savepoint("state/0/1/1.delta", None) is False
    assert keep_in_savepoint("metadata", None)


def test_metadata_round_trips_and_foreign_files_are_refused():
    metadata = SavepointMetadata(
        job_id=JOB, job_name="wc", created=1, queries={"wordcount": QuerySavepoint(committed_batch_id=5, source="file:/cp")}
    )
    text = metadata.to_json()
    assert '"committedBatchId": 5' in text and '"jobId"' in text
    assert parse_savepoint_metadata(text, "p") == metadata
    with pytest.raises(SavepointError, match="p is not a jobcluster savepoint"):
        parse_savepoint_metadata('{"version": 1}', "p")
    with pytest.raises(SavepointError, match="not a jobcluster savepoint"):
        parse_savepoint_metadata("\x00binary", "p")


def test_unrestored_queries_name_what_the_program_did_not_start():
    metadata = SavepointMetadata(
        job_id=JOB,
        job_name="wc",
        created=1,
        queries={n: QuerySavepoint(committed_batch_id=1, source="s") for n in ("b", "a", "c")},
    )
    assert unrestored_queries(metadata, ["a", "x"]) == ["b", "c"]
    message = non_restored_state_error("file:/sp/savepoint-1", ["b", "c"])
    assert "queries 'b', 'c'" in message and "--allowNonRestoredState" in message


def test_the_client_reads_local_savepoints_and_leaves_others_to_the_cluster(tmp_path):
    assert local_path("hdfs://nn:9000/sp") is None
    assert local_path(f"file:{tmp_path}") == tmp_path == local_path(f"file://{tmp_path}") == local_path(str(tmp_path))
    assert read_local_savepoint("hdfs://nn:9000/sp/savepoint-1") is None
    with pytest.raises(SavepointError, match="does not exist"):
        read_local_savepoint(str(tmp_path / "missing"))
    with pytest.raises(SavepointError, match="is not a savepoint: it has no _metadata"):
        read_local_savepoint(str(tmp_path))
    savepoint = tmp_path / "savepoint-b36a7e-000000000000"
    (savepoint / "wordcount").mkdir(parents=True)
    metadata = SavepointMetadata(job_id=JOB, job_name="wc", created=1, queries={})
    (savepoint / "_metadata").write_text(metadata.to_json())
    assert read_local_savepoint(f"file:{savepoint}") == metadata
    with pytest.raises(SavepointError, match="not on this machine"):
        dispose_local_savepoint("hdfs://nn:9000/sp/savepoint-1")
    with pytest.raises(SavepointError, match="not a savepoint"):
        dispose_local_savepoint(str(savepoint / "wordcount"))
    assert (savepoint / "wordcount").is_dir()
    dispose_local_savepoint(str(savepoint))
    assert not savepoint.exists() and tmp_path.exists()
