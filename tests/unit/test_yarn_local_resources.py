"""LocalResource descriptions: validation, JSON round trip, and YARN's rule for PUBLIC visibility."""

import pytest

from jobcluster.backends.yarn.errors import StagingError
from jobcluster.backends.yarn.local_resources import (
    LocalResourceDescriptor,
    LocalResourceType,
    LocalResourceVisibility,
    descriptors_from_json,
    descriptors_to_json,
    visibility_for,
)

GRAPH = LocalResourceDescriptor(
    key="job.graph",
    path="hdfs://127.0.0.1:9000/user/alice/.jobcluster/application_1_0001/job.graph",
    size=1234,
    modification_time=1_700_000_000_123,
)
ENV = LocalResourceDescriptor(
    key="environment",
    path="hdfs://127.0.0.1:9000/user/alice/.jobcluster/python/env-abc.tar.gz",
    size=300 << 20,
    modification_time=1_700_000_000_456,
    type=LocalResourceType.ARCHIVE,
    visibility=LocalResourceVisibility.PUBLIC,
)


def test_defaults_are_an_application_file():
    assert GRAPH.type is LocalResourceType.FILE
    assert GRAPH.visibility is LocalResourceVisibility.APPLICATION


def test_json_round_trip_keeps_every_field():
    text = descriptors_to_json([GRAPH, ENV])
    assert "\n" not in text  # fits an environment variable
    assert descriptors_from_json(text) == [GRAPH, ENV]
    assert descriptors_from_json(text)[1].type is LocalResourceType.ARCHIVE


@pytest.mark.parametrize("key", ["", "/abs", "../up", "a/../b", "./x", "a//b"])
def test_keys_must_stay_inside_the_working_directory(key):
    with pytest.raises(StagingError, match="key"):
        LocalResourceDescriptor(key=key, path=GRAPH.path, size=1, modification_time=1)


def test_subdirectory_keys_are_allowed():
    assert LocalResourceDescriptor(key="lib/deps.zip", path=GRAPH.path, size=1, modification_time=1).key == "lib/deps.zip"


def test_path_must_be_a_qualified_uri():
    with pytest.raises(StagingError, match="URI"):
        LocalResourceDescriptor(key="x", path="/user/alice/x", size=1, modification_time=1)


@pytest.mark.parametrize("text", ["not json", '{"key": "x"}', '[{"key": "x"}]', '[{"bogus": 1}]'])
def test_bad_json_is_a_staging_error(text):
    with pytest.raises(StagingError):
        descriptors_from_json(text)


def test_unknown_enum_value_is_refused():
    with pytest.raises(ValueError, match="WORLD"):
        LocalResourceDescriptor.from_dict({**GRAPH.to_dict(), "visibility": "WORLD"})


@pytest.mark.parametrize(
    ("file_perm", "ancestors", "expected"),
    [
        ("644", ["755", "755", "755"], LocalResourceVisibility.PUBLIC),
        ("444", ["711", "1777"], LocalResourceVisibility.PUBLIC),  # execute is enough on directories
        ("640", ["755", "755"], LocalResourceVisibility.PRIVATE),  # not world-readable
        ("644", ["755", "700", "755"], LocalResourceVisibility.PRIVATE),  # a home directory closed to others
        ("644", ["755", "754"], LocalResourceVisibility.PRIVATE),
    ],
)
def test_public_only_when_world_readable_through_world_executable_ancestors(file_perm, ancestors, expected):
    assert visibility_for(file_perm, ancestors) is expected
