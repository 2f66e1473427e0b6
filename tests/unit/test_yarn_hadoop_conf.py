"""Reading HADOOP_CONF_DIR: the directory, the default FS, WebHDFS addresses (or a gateway's), the ResourceManager address."""

import pytest

from jobcluster.backends.yarn.errors import YarnConfigurationError
from jobcluster.backends.yarn.hadoop_conf import HadoopConfiguration, hadoop_conf_dir
from jobcluster.backends.yarn.staging import webhdfs_client


def site(props: dict[str, str]) -> str:
    body = "".join(f"<property><name>{k}</name><value>{v}</value></property>" for k, v in props.items())
    return f'<?xml version="1.0"?><configuration>{body}</configuration>'


def conf(tmp_path, core=None, hdfs=None, yarn=None) -> HadoopConfiguration:
    for name, props in (("core-site.xml", core), ("hdfs-site.xml", hdfs), ("yarn-site.xml", yarn)):
        if props is not None:
            (tmp_path / name).write_text(site(props))
    return HadoopConfiguration.load(tmp_path)


def test_conf_dir_from_hadoop_then_yarn_variable(tmp_path):
    (tmp_path / "yarn-site.xml").write_text(site({}))
    assert hadoop_conf_dir({"HADOOP_CONF_DIR": str(tmp_path)}) == tmp_path
    assert hadoop_conf_dir({"HADOOP_CONF_DIR": " ", "YARN_CONF_DIR": str(tmp_path)}) == tmp_path


def test_env_hadoop_conf_dir_comes_first(tmp_path):
    configured, environment = tmp_path / "configured", tmp_path / "environment"
    for path in (configured, environment):
        path.mkdir()
        (path / "core-site.xml").write_text(site({}))
    assert hadoop_conf_dir({"HADOOP_CONF_DIR": str(environment)}, configured=str(configured)) == configured
    assert hadoop_conf_dir({"HADOOP_CONF_DIR": str(environment)}, configured=None) == environment
    with pytest.raises(YarnConfigurationError, match=r"env\.hadoop\.conf\.dir=/nonexistent is not a directory"):
        hadoop_conf_dir({"HADOOP_CONF_DIR": str(environment)}, configured="/nonexistent")


@pytest.mark.parametrize(
    ("environ", "message"),
    [
        ({}, "Neither HADOOP_CONF_DIR nor YARN_CONF_DIR is set"),
        ({"HADOOP_CONF_DIR": "/nonexistent/conf"}, "is not a directory"),
        ({"YARN_CONF_DIR": "EMPTY"}, "holds none of core-site.xml"),
    ],
)
def test_conf_dir_errors_say_what_to_fix(tmp_path, environ, message):
    environ = {k: str(tmp_path) if v == "EMPTY" else v for k, v in environ.items()}
    with pytest.raises(YarnConfigurationError, match=message):
        hadoop_conf_dir(environ)


def test_later_files_win_and_references_expand(tmp_path, monkeypatch):
    monkeypatch.setenv("JC_TEST_HOST", "nn.example")
    c = conf(
        tmp_path,
        core={"fs.defaultFS": "hdfs://${env.JC_TEST_HOST}:8020/", "x": "core"},
        yarn={
            "x": "yarn",
            "yarn.resourcemanager.hostname": "rm.example",
            "yarn.resourcemanager.address": "${yarn.resourcemanager.hostname}:8050",
        },
    )
    assert c.get("x") == "yarn"
    assert c.default_fs == "hdfs://nn.example:8020"
    assert c.resourcemanager_address() == "rm.example:8050"
    assert c.get("missing", "d") == "d"


def test_webhdfs_url_from_the_http_address(tmp_path):
    c = conf(tmp_path, core={"fs.defaultFS": "hdfs://nn:8020"}, hdfs={"dfs.namenode.http-address": "nn-http:50070"})
    assert c.webhdfs_urls() == ["http://nn-http:50070"]


def test_webhdfs_url_defaults_to_the_namenode_host(tmp_path):
    c = conf(tmp_path, core={"fs.defaultFS": "hdfs://nn:8020"}, hdfs={"dfs.namenode.http-address": "0.0.0.0:9870"})
    assert c.webhdfs_urls() == ["http://nn:9870"]
    other = tmp_path / "other"
    other.mkdir()
    assert conf(other, core={"fs.defaultFS": "hdfs://nn2:8020"}).webhdfs_urls() == ["http://nn2:9870"]


def test_webhdfs_urls_of_an_ha_nameservice(tmp_path):
    c = conf(
        tmp_path,
        core={"fs.defaultFS": "hdfs://prod"},
        hdfs={
            "dfs.ha.namenodes.prod": "nn1, nn2",
            "dfs.namenode.https-address.prod.nn1": "a:9871",
            "dfs.namenode.https-address.prod.nn2": "b:9871",
            "dfs.http.policy": "HTTPS_ONLY",
        },
    )
    assert c.webhdfs_urls() == ["https://a:9871", "https://b:9871"]


def test_a_local_default_fs_is_refused(tmp_path):
    with pytest.raises(YarnConfigurationError, match=r"fs\.defaultFS"):
        conf(tmp_path, core={"fs.defaultFS": "file:///"}).webhdfs_urls()


def test_resourcemanager_from_hostname_or_ha_ids(tmp_path):
    assert conf(tmp_path, yarn={"yarn.resourcemanager.hostname": "rm"}).resourcemanager_address() == "rm:8032"
    ha = {"yarn.resourcemanager.ha.rm-ids": "rm1,rm2", "yarn.resourcemanager.hostname.rm1": "r1"}
    assert conf(tmp_path, yarn=ha).resourcemanager_address() == "r1:8032"


def test_no_resourcemanager_is_a_clear_error(tmp_path):
    with pytest.raises(YarnConfigurationError, match="names no ResourceManager"):
        conf(tmp_path, core={"fs.defaultFS": "hdfs://nn:8020"}, yarn={}).resourcemanager_address()


def test_malformed_xml_names_the_file(tmp_path):
    (tmp_path / "core-site.xml").write_text("<configuration><property>")
    with pytest.raises(YarnConfigurationError, match=r"core-site\.xml"):
        HadoopConfiguration.load(tmp_path)


@pytest.mark.parametrize(
    ("yarn", "url"),
    [
        ({"yarn.resourcemanager.webapp.address": "rm.example.com:18088"}, "http://rm.example.com:18088"),
        ({"yarn.resourcemanager.hostname": "rm"}, "http://rm:8088"),
        ({"yarn.resourcemanager.address": "rm:8032", "yarn.resourcemanager.webapp.address": "0.0.0.0:9999"}, "http://rm:9999"),
        ({"yarn.resourcemanager.hostname": "rm", "yarn.http.policy": "HTTPS_ONLY"}, "https://rm:8090"),
        (
            {"yarn.resourcemanager.ha.rm-ids": "rm1,rm2", "yarn.resourcemanager.hostname.rm1": "r1"},
            "http://r1:8088",
        ),
        (
            {"yarn.resourcemanager.ha.rm-ids": "rm1,rm2", "yarn.resourcemanager.webapp.address.rm1": "r1:8188"},
            "http://r1:8188",
        ),
    ],
)
def test_resourcemanager_web_services_url(tmp_path, yarn, url):
    assert conf(tmp_path, yarn=yarn).resourcemanager_webapp_url() == url


def test_every_resource_manager_of_an_ha_cluster_is_known_the_first_first(tmp_path):
    """Where the operator may follow a standby's redirect (and nowhere else)."""
    yarn = {
        "yarn.resourcemanager.ha.rm-ids": "rm1,rm2,rm3",
        "yarn.resourcemanager.hostname.rm1": "r1",
        "yarn.resourcemanager.hostname.rm2": "r2",
        "yarn.resourcemanager.webapp.address.rm3": "r3:8188",
    }
    assert conf(tmp_path, yarn=yarn).resourcemanager_webapp_urls() == ["http://r1:8088", "http://r2:8088", "http://r3:8188"]
    assert conf(tmp_path, yarn={"yarn.resourcemanager.hostname": "rm"}).resourcemanager_webapp_urls() == ["http://rm:8088"]


def test_a_webhdfs_gateway_replaces_the_namenodes_for_the_client(tmp_path):
    c = conf(tmp_path, core={"fs.defaultFS": "hdfs://nn:8020"})
    assert webhdfs_client(c, user="alice").url == "http://nn:9870"
    assert webhdfs_client(c, user="alice", url="http://httpfs:14000/").url == "http://httpfs:14000"
    assert webhdfs_client(c, url="https://knox:8443/gateway/default").url == "https://knox:8443/gateway/default"
    for wrong in ("httpfs:14000", "hdfs://nn:8020", "http://"):
        with pytest.raises(YarnConfigurationError, match=r"jobcluster\.yarn\.webhdfs\.url .* must be an http:// or https:// URL"):
            webhdfs_client(c, url=wrong)
