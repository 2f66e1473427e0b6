"""Where the operator's YARN hook takes a FlinkJob's Hadoop client files from: its ConfigMap, else the files kept in its status.

The ConfigMaps are a dict read through the hook's reader (the real API server and
ResourceManager run in tests/integration/k8s/test_chart.py, which deletes the
ConfigMap of a running FlinkJob); a fresh hook is an operator restarted with
nothing in memory.
"""

from __future__ import annotations

import pytest

from jobcluster.backends.yarn.operator_hook import YarnOperatorHook, hadoop_users
from jobcluster.client.operator_hook import ClusterRef, InvalidSpecError
from jobcluster.config.configuration import Configuration

DEPLOYED = {"core-site.xml": "<configuration>deployed</configuration>", "yarn-site.xml": "<configuration/>"}
EDITED = {"core-site.xml": "<configuration>edited</configuration>", "README": "not a site file"}


def hook_of(tmp_path, config_maps: dict[tuple[str, str], dict[str, str]]) -> YarnOperatorHook:
    return YarnOperatorHook(lambda namespace, name: config_maps.get((namespace, name)), tmp_path)


def files_in(directory) -> dict[str, str]:
    return {path.name: path.read_text() for path in directory.iterdir() if not path.name.startswith(".")}


def ref(access: dict[str, str] | None = None, config_map: str | None = "hadoop") -> ClusterRef:
    return ClusterRef("yarn-per-job", "jobs", "wc", "u-1", "application_1_0001", config_map, access or {})


def test_a_deployment_keeps_the_site_files_of_the_config_map_and_refuses_without_it(tmp_path):
    hook = hook_of(tmp_path, {("jobs", "hadoop"): {**DEPLOYED, "README": "x"}})
    assert hook.access(ref()) == DEPLOYED, "only the site files are kept"
    assert files_in(hook.hadoop_conf_dir(ref(), refresh=True)) == DEPLOYED
    gone = hook_of(tmp_path, {})
    with pytest.raises(InvalidSpecError, match="does not exist") as refused:
        gone.hadoop_conf_dir(ref(DEPLOYED), refresh=True)
    assert refused.value.reason == "HadoopConfigurationMissing", "files kept from an earlier deployment do not deploy"
    with pytest.raises(InvalidSpecError, match="required"):
        gone.access(ref(config_map=None))


def test_a_restarted_operator_reaches_the_cluster_with_the_kept_files_once_the_config_map_is_gone(tmp_path):
    restarted = hook_of(tmp_path, {})
    assert files_in(restarted.hadoop_conf_dir(ref(DEPLOYED))) == DEPLOYED
    assert files_in(restarted.hadoop_conf_dir(ref(DEPLOYED, config_map=None))) == DEPLOYED, "a spec edited to name none"
    with pytest.raises(InvalidSpecError, match="does not exist"):
        restarted.hadoop_conf_dir(ref())  # neither the ConfigMap nor kept files: nothing says where YARN is


def test_an_existing_config_map_comes_before_the_kept_files(tmp_path):
    hook = hook_of(tmp_path, {("jobs", "hadoop"): EDITED})
    assert files_in(hook.hadoop_conf_dir(ref(DEPLOYED))) == {"core-site.xml": EDITED["core-site.xml"]}
    empty = hook_of(tmp_path / "other", {("jobs", "hadoop"): {"README": "x"}})
    assert files_in(empty.hadoop_conf_dir(ref(DEPLOYED))) == DEPLOYED, "a ConfigMap without a site file is no configuration"


def test_names_that_are_not_site_files_never_become_files_of_the_operator(tmp_path):
    """Whoever may write a FlinkJob's status or its ConfigMap cannot have the operator write elsewhere: a key
    ``../../...`` (into another tenant's Hadoop directory, the packed Python environment) or any other ``*.xml``."""
    work = tmp_path / "work"
    escapes = {
        "../../victims/hadoop/yarn-site.xml": "<configuration>attacker</configuration>",
        "capacity-scheduler.xml": "<configuration/>",
        "yarn-site.xml/../core-site.xml": "<configuration/>",
    }
    for reader in ({}, {("jobs", "hadoop"): escapes}):
        hook = YarnOperatorHook(lambda namespace, name, reader=reader: reader.get((namespace, name)), work)
        # a ConfigMap of none but those names holds no site file: the kept ones serve, never the others
        assert files_in(hook.hadoop_conf_dir(ref({**DEPLOYED, **escapes}))) == DEPLOYED
    with pytest.raises(InvalidSpecError, match=r"holds no Hadoop site file \(core-site.xml, hdfs-site.xml, yarn-site.xml\)"):
        hook.hadoop_conf_dir(ref(), refresh=True)
    written = sorted(str(path.relative_to(tmp_path)) for path in tmp_path.rglob("*") if path.is_file())
    assert written and all(path.rsplit("/", 1)[-1] in ("core-site.xml", "yarn-site.xml") for path in written), written
    assert not [path for path in written if "victims" in path], written


def test_each_namespace_runs_on_yarn_as_its_own_hadoop_user_and_one_with_none_is_refused(tmp_path):
    users = hadoop_users({"jobcluster.operator.yarn.hadoop-users": "jobs:etl, reporting:bi"})
    assert users == {"jobs": "etl", "reporting": "bi"}
    hook = YarnOperatorHook(lambda namespace, name: DEPLOYED, tmp_path, hadoop_users=users)
    assert hook.descriptor(ref()).hadoop_user == "etl"  # type: ignore[attr-defined]
    hook.prepare(ref(), Configuration())
    other = ClusterRef("yarn-per-job", "sandbox", "wc", "u-2", "", "hadoop")
    with pytest.raises(InvalidSpecError, match=r"namespace sandbox has no Hadoop user .* jobcluster.operator.yarn.hadoop-users") as refused:
        hook.prepare(other, Configuration())
    assert refused.value.reason == "HadoopUserNotMapped"
    assert hook.descriptor(other).hadoop_user != "etl"  # type: ignore[attr-defined]  # looked at as the operator's own
    everyone = YarnOperatorHook(lambda namespace, name: DEPLOYED, tmp_path, hadoop_users={"*": "shared", "jobs": "etl"})
    assert everyone.hadoop_user("sandbox") == "shared" and everyone.hadoop_user("jobs") == "etl"
    everyone.prepare(other, Configuration())


def test_a_flinkjobs_python_archives_are_on_hdfs_never_the_operators_own_files(tmp_path):
    hook = YarnOperatorHook(lambda namespace, name: DEPLOYED, tmp_path)
    on_hdfs = Configuration({"python.archives": "hdfs:///apps/cpython-3.11.tar.gz#cpython"})
    assert hook.prepare(ref(), on_hdfs).get_raw("python.archives") == "hdfs:///apps/cpython-3.11.tar.gz#cpython"
    for local in ("/opt/jobcluster/venv/lib/x.tar.gz#x", "file:///etc/keys.zip#k,hdfs:///apps/a.tgz#a"):
        with pytest.raises(InvalidSpecError, match=r"would be read from the operator's own file system") as refused:
            hook.prepare(ref(), Configuration({"python.archives": local}))
        assert refused.value.reason == "LocalFileNotAllowed"
    with pytest.raises(InvalidSpecError, match=r"python\.archives: 'hdfs:///x\.rpm' is not an archive"):
        hook.prepare(ref(), Configuration({"python.archives": "hdfs:///x.rpm"}))


@pytest.mark.parametrize(
    ("text", "said"), [("jobs", "not a key:value entry"), ("jobs:etl:x", "not a key:value entry"), ("jobs:-rf /", "not a Hadoop user")]
)
def test_a_bad_hadoop_user_map_stops_the_operator(text, said):
    with pytest.raises(InvalidSpecError, match=said):
        hadoop_users({"jobcluster.operator.yarn.hadoop-users": text})
