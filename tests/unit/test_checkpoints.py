"""The checkpoint and savepoint layout (spark/checkpoints.py) and the client's savepoint checks (client/savepoints.py)."""

import re

import pytest

from jobcluster.client.savepoints import dispose_local_savepoint, local_path, read_local_savepoint
from jobcluster.spark.checkpoints import (
    Cut,
    QuerySavepoint,
    SavepointError,
    SavepointMetadata,
    job_checkpoint_root,
    last_batch,
    new_savepoint_name,
    non_restored_state_error,
    overtaken,
    parse_savepoint_metadata,
    plan_savepoint_copy,
    state_partitions,
    unrestored_queries,
)

JOB = "b36a7e8190b1466587f0b1cd682b5df9"


def test_a_jobs_root_and_a_savepoints_name_follow_flink():
    assert job_checkpoint_root("hdfs://nn:9000/cp/", JOB) == f"hdfs://nn:9000/cp/{JOB}"
    first, second = new_savepoint_name(JOB), new_savepoint_name(JOB)
    assert re.fullmatch(r"savepoint-b36a7e-[0-9a-f]{12}", first) and first != second


def test_the_last_batch_is_the_highest_log_file():
    assert last_batch(["0", "1", ".1.crc", "10", "9", ".10.crc"]) == 10
    assert last_batch([]) is None and last_batch([".tmp-file"]) is None


CHECKPOINT = [
    "metadata",
    "_jobcluster_restored_from",
    *(f"offsets/{b}" for b in range(7)),  # batch 6 planned, not committed
    "offsets/.5.crc",
    "offsets/.7.9be55246-60cb-420c-97a2-49eb84bf92d9.tmp",  # being written
    *(f"commits/{b}" for b in range(6)),
    "sources/0/0",
    "sources/0/5.compact",
    "sources/0/6",
    "sources/0/7",
    # an HDFS-backed store: snapshot at 4, deltas 1..7 (7: the interrupted batch 6's, partial)
    *(f"state/0/1/{v}.delta" for v in range(1, 8)),
    "state/0/1/.6.delta.crc",
    "state/0/1/4.snapshot",
    "state/0/1/.5.delta.3f2a.tmp",
    # RocksDB with changelog checkpointing, format v2: snapshots 2 and 5, changelogs after them
    "state/0/0/2_764e8e10-b791-4381-a76d-eb4db28185f8.zip",
    "state/0/0/5_0084c38e-f02d-4663-85d4-528eaf11c26c.zip",
    "state/0/0/5_0084c38e-f02d-4663-85d4-528eaf11c26c.zip.crc",
    "state/0/0/.5_0084c38e-f02d-4663-85d4-528eaf11c26c.zip.crc.crc",
    "state/0/0/6_1b98917c-3392-475d-8d8e-9d832f70470e.changelog",
    "state/0/0/7_2c98917c-3392-475d-8d8e-9d832f70470e.changelog",
    "state/0/0/3_3d98917c-3392-475d-8d8e-9d832f70470e.changelog",
    "state/0/0/SSTs/000012-abc.sst",
    "state/0/_metadata/schema",
    "state/0/_stateSchema/default/0_1b98917c-3392-475d-8d8e-9d832f70470e",
    "state/0/_metadata/v2/7",
]


def test_a_savepoint_is_sparks_recovery_image_a_planned_batch_runs_again_with_its_offsets():
    plan = plan_savepoint_copy(CHECKPOINT, Cut(planned=6, committed=5))

    assert set(plan.files) == {
        "metadata",
        *(f"offsets/{b}" for b in range(7)),  # the planned batch 6 too: restored, Spark runs it again with these offsets
        "offsets/.5.crc",
        *(f"commits/{b}" for b in range(6)),
        "sources/0/0",
        "sources/0/5.compact",
        "sources/0/6",
        "sources/0/7",  # a source reconciles its own log with the offsets
        # version 6 (batch 5's) rebuilt: from snapshot 4 and the deltas after it; batch 6's partial version 7 left out
        "state/0/1/4.snapshot",
        "state/0/1/5.delta",
        "state/0/1/6.delta",
        "state/0/1/.6.delta.crc",
        "state/0/0/5_0084c38e-f02d-4663-85d4-528eaf11c26c.zip",
        "state/0/0/5_0084c38e-f02d-4663-85d4-528eaf11c26c.zip.crc",
        "state/0/0/.5_0084c38e-f02d-4663-85d4-528eaf11c26c.zip.crc.crc",
        "state/0/0/6_1b98917c-3392-475d-8d8e-9d832f70470e.changelog",
        "state/0/0/SSTs/000012-abc.sst",
        "state/0/_metadata/schema",
        "state/0/_stateSchema/default/0_1b98917c-3392-475d-8d8e-9d832f70470e",
        "state/0/_metadata/v2/7",
    }
    assert plan.required == {
        "metadata",
        "offsets/6",
        "offsets/5",
        "commits/5",
        "sources/0/5.compact",  # the file source's log entries of the batch run again and the one before
        "sources/0/6",
        "state/0/1/4.snapshot",
        "state/0/1/5.delta",
        "state/0/1/6.delta",
        "state/0/0/5_0084c38e-f02d-4663-85d4-528eaf11c26c.zip",
        "state/0/0/6_1b98917c-3392-475d-8d8e-9d832f70470e.changelog",
    }
    assert set(plan.files[: len(plan.required)]) == plan.required, "what maintenance may delete soonest is copied first"
    assert plan.shared, "RocksDB's SSTs are shared between versions: which ones the cut needs is not in their names"


def test_a_stopped_query_is_cut_at_its_commit_and_a_store_without_a_snapshot_keeps_every_delta():
    files = ["metadata", "offsets/0", "offsets/1", "commits/0", "commits/1", "state/0/0/1.delta", "state/0/0/2.delta"]
    plan = plan_savepoint_copy(files, Cut(planned=1, committed=1))
    assert set(plan.files) == set(files)
    assert plan.required == {"metadata", "offsets/1", "offsets/0", "commits/1", "state/0/0/1.delta", "state/0/0/2.delta"}
    assert not plan.shared, "every file the default state store needs is named by its version"


def test_a_query_without_a_committed_batch_keeps_its_plan_and_no_state():
    plan = plan_savepoint_copy(["metadata", "offsets/0", "state/0/1/1.delta"], Cut(planned=0, committed=None))
    assert set(plan.files) == {"metadata", "offsets/0"} and plan.required == {"metadata", "offsets/0"}
    assert plan_savepoint_copy(["metadata"], Cut(None, None)).files == ["metadata"]


@pytest.mark.parametrize(
    ("planned_now", "retain", "overtaken_"), [(6, 100, False), (104, 100, False), (105, 100, True), (6, 2, False), (7, 2, True)]
)
def test_a_copy_is_overtaken_once_the_query_planned_past_what_sparks_maintenance_keeps(planned_now, retain, overtaken_):
    assert overtaken(Cut(planned=6, committed=5), planned_now, retain) is overtaken_
    assert overtaken(Cut(planned=0, committed=None), 500, 2) is False  # no state version to lose yet


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


def test_the_state_partitions_are_those_the_checkpoints_offset_log_fixed():
    offsets = (
        "v1\n"
        '{"batchWatermarkMs":0,"batchTimestampMs":1795680000000,"conf":{"spark.sql.shuffle.partitions":"2",'
        '"spark.sql.streaming.stateStore.providerClass":"org.apache.spark.sql.execution.streaming.state.HDFSBackedStateStoreProvider"}}\n'
        '{"logOffset":3}\n'
    )
    assert state_partitions(offsets) == 2
    assert state_partitions("v1\n{}\n") is None and state_partitions("offsets 3") is None
