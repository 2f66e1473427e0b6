"""The FlinkJob operator from the chart on the Kerberized YARN test cluster (issue 42, row 4): its pod logs in from the
keytab in a Secret (``yarn.kerberos``), and runs two namespaces' FlinkJobs at once, each as its namespace's Hadoop user
through Hadoop's proxy users.

The operator pod runs the job image (the ``kerberos`` extra compiled in) in the node's network, as the chart's YARN
example does (the test cluster listens on 127.0.0.1 only); the realm's krb5.conf comes from a ConfigMap, the CA of the
cluster's HTTPS from another (``extraVolumes``, ``REQUESTS_CA_BUNDLE``). Namespace ``a`` maps to alice, ``b`` to bob;
the cluster lets the ``operator`` principal impersonate the group both are in (``KERBEROS_SETTINGS``).

Checked: the operator says whom it logged in as; both word counts finish with exact counts in their user's home; YARN
ran each application as its namespace's user, never as the operator; each staging directory is gone; nothing of the
release is left after uninstall.
"""

from __future__ import annotations

import functools
import json
import re
import sys
import tempfile
import uuid
from collections import Counter
from pathlib import Path

import kubernetes
import pytest
import yaml

from jobcluster.backends.yarn.hadoop_conf import HadoopConfiguration
from jobcluster.backends.yarn.staging import STAGING_ROOT
from tests.infra.hadoop.cluster import FS_SHELL
from tests.infra.hadoop.secure_cluster import KerberizedHadoopCluster, curl
from tests.infra.hadoop.secureconf import ADMIN
from tests.infra.k8s.cluster import free_port
from tests.integration.conftest import OPERATOR_USER
from tests.integration.k8s.test_chart import CHART, TEST_VALUES, TIMEOUT, image_values, operator_pods, wait_for_the_operator
from tests.integration.k8s.waiting import wait_for

pytestmark = [pytest.mark.k8s, pytest.mark.hadoop, pytest.mark.kerberos]

REPO = Path(__file__).resolve().parents[3]
USERS = {"a": "alice", "b": "bob"}  # namespace suffix -> the Hadoop user the chart maps it to


def put_corpus(cluster: KerberizedHadoopCluster, user: str, local: Path, root: str) -> Counter:
    """A corpus of a few files for ``user``, put into ``root/corpus`` on HDFS as that user (its ticket); the words it
    holds."""
    local.mkdir()
    expected: Counter = Counter()
    for n in range(3):
        text = f"{user} reads HDFS {n}\nthe fox and the {user} dog\n" * (n + 2)
        (local / f"part{n}.txt").write_text(text)
        expected.update(re.findall(r"[a-z0-9_]+", text.lower()))
    env = cluster.kinit(user, local.parent / f"{user}.ccache")
    for args in (("-mkdir", "-p", root), ("-put", "-f", str(local), f"{root}/corpus")):
        done = cluster.run_tool(FS_SHELL, *args, env=env)
        assert done.returncode == 0, done.stderr
    return expected


def word_counts(cluster: KerberizedHadoopCluster, directory: str, admin: dict[str, str]) -> tuple[Counter, str]:
    """The ``word<TAB>count`` lines of the part files under ``directory`` and the directory's owner, read with the
    HDFS superuser's ticket ``admin``."""
    cat = cluster.run_tool(FS_SHELL, "-cat", f"{directory}/part-*", env=admin)
    stat = cluster.run_tool(FS_SHELL, "-stat", "%u", directory, env=admin)
    assert cat.returncode == 0 and stat.returncode == 0, cat.stderr + stat.stderr
    counts: Counter = Counter()
    for line in cat.stdout.splitlines():
        word, count = line.rsplit("\t", 1)
        counts[word] = int(count)
    return counts, stat.stdout.strip()


def removed(cluster: KerberizedHadoopCluster, path: str) -> bool:
    return cluster.webhdfs(path, "GETFILESTATUS")[0] == 404


def flinkjob(namespace: str, corpus: str, out: str, ca_cert: Path) -> dict:
    """manifests/examples/wordcount-yarn.yaml in ``namespace``, reading ``corpus`` and writing ``out`` (HDFS); the
    ApplicationMaster's Python reaches WebHDFS over HTTPS with the test CA, and the node's Python runs the job (nothing
    shipped: shipping over SPNEGO is staging like any other, which the client's Kerberos tests cover)."""
    document = yaml.safe_load((REPO / "manifests" / "examples" / "wordcount-yarn.yaml").read_text())
    document["metadata"] = {"name": "wordcount-kerberos", "namespace": namespace}
    document["spec"]["job"]["args"] = ["--input", corpus, "--output", out]
    document["spec"]["job"]["parallelism"] = 2
    document["spec"]["flinkConfiguration"] |= {
        "containerized.master.env.REQUESTS_CA_BUNDLE": str(ca_cert),
        "python.executable": sys.executable,
    }
    return document


def test_the_charts_operator_logs_in_from_its_keytab_and_runs_each_namespaces_flinkjob_as_its_hadoop_user(
    k8s_cluster, k8s_api, k8s_image, kerberized_hadoop_cluster: KerberizedHadoopCluster, tmp_path
):
    cluster = kerberized_hadoop_cluster
    suffix = uuid.uuid4().hex[:6]
    system = f"jobcluster-system-{suffix}"
    namespaces = {f"tenant-{key}-{suffix}": user for key, user in USERS.items()}
    core = kubernetes.client.CoreV1Api(k8s_api)
    custom = kubernetes.client.CustomObjectsApi(k8s_api)
    hadoop = HadoopConfiguration.load(cluster.hadoop_conf_dir)
    admin = cluster.kinit(ADMIN, tmp_path / "admin.ccache", use_keytab=True)

    expected, outputs = {}, {}
    for namespace, user in namespaces.items():
        root = f"/user/{user}/kerberos-{suffix}"
        expected[namespace] = put_corpus(cluster, user, tmp_path / namespace, root)
        outputs[namespace] = f"{root}/out"
    for namespace in (system, *namespaces):
        metadata = kubernetes.client.V1ObjectMeta(name=namespace)
        core.create_namespace(kubernetes.client.V1Namespace(metadata=metadata), _request_timeout=TIMEOUT)
    for namespace in namespaces:
        k8s_cluster.kubectl("create", "configmap", "hadoop-conf", "-n", namespace, f"--from-file={cluster.hadoop_conf_dir}")
    keytab = ["create", "secret", "generic", "operator-keytab", "-n", system, f"--from-file=krb5.keytab={cluster.keytab(OPERATOR_USER)}"]
    k8s_cluster.kubectl(*keytab)
    # in a pod, MIT Kerberos would make the short name localhost localhost.<the pod's first search domain>, a host of
    # no realm it knows: the docs' advice for clusters whose hosts have short names
    krb5 = tmp_path / "krb5.conf"
    krb5.write_text(cluster.krb5_conf.read_text().replace("[libdefaults]\n", '[libdefaults]\n  qualify_shortname = ""\n', 1))
    k8s_cluster.kubectl("create", "configmap", "realm", "-n", system, f"--from-file=krb5.conf={krb5}")
    k8s_cluster.kubectl("create", "configmap", "hadoop-ca", "-n", system, f"--from-file=ca.pem={cluster.ca_cert}")
    values = tmp_path / "kerberos-values.yaml"
    values.write_text(
        yaml.safe_dump(
            {
                "watchNamespaces": list(namespaces),
                "hostNetwork": True,
                "replicas": 1,
                "metrics": {"port": free_port()},  # a port of this machine, in the node's network
                "yarn": {
                    "hadoopUsers": namespaces,
                    "kerberos": {
                        "principal": cluster.principal(OPERATOR_USER),
                        "keytabSecret": "operator-keytab",
                        "krb5ConfigMap": "realm",
                    },
                },
                "extraVolumes": [{"name": "hadoop-ca", "configMap": {"name": "hadoop-ca"}}],
                "extraVolumeMounts": [{"name": "hadoop-ca", "mountPath": "/etc/hadoop-ca", "readOnly": True}],
                "extraEnv": [{"name": "REQUESTS_CA_BUNDLE", "value": "/etc/hadoop-ca/ca.pem"}],
            }
        )
    )
    release = ["jobcluster", "-n", system]
    operator_log = lambda: k8s_cluster.kubectl("logs", "-n", system, "deployment/jobcluster-operator", "--tail=80", check=False).stdout  # noqa: E731
    try:
        installed = k8s_cluster.helm("install", *release, str(CHART), "-f", str(TEST_VALUES), *image_values(k8s_image), "-f", str(values))
        assert "STATUS: deployed" in installed.stdout, installed.stdout
        wait_for_the_operator(core, system)
        login = f"logged in to Kerberos as {cluster.principal(OPERATOR_USER)} from the keytab"
        wait_for(lambda: login in operator_log(), timeout=60, interval=1, what="the operator's login in its log")  # ready: running

        for namespace in namespaces:
            with tempfile.NamedTemporaryFile("w", suffix=".yaml") as manifest:
                corpus = f"{hadoop.default_fs}{outputs[namespace].rsplit('/', 1)[0]}/corpus"
                manifest.write(yaml.safe_dump(flinkjob(namespace, corpus, f"{hadoop.default_fs}{outputs[namespace]}", cluster.ca_cert)))
                manifest.flush()
                k8s_cluster.kubectl("apply", "-f", manifest.name)

        def succeeded(namespace: str) -> dict | None:
            args = ("jobcluster.io", "v1alpha1", namespace, "flinkjobs", "wordcount-kerberos")
            document: dict = custom.get_namespaced_custom_object(*args)  # type: ignore[assignment]
            conditions = {c["type"]: c for c in (document.get("status") or {}).get("conditions", [])}
            assert conditions.get("Failed", {}).get("status") != "True", f"{document['status']}\n{operator_log()}"
            return document if conditions.get("Succeeded", {}).get("status") == "True" else None

        for namespace, user in namespaces.items():
            try:
                document = wait_for(functools.partial(succeeded, namespace), timeout=420, interval=2, what=f"{namespace}'s FlinkJob")
            except AssertionError as exc:
                raise AssertionError(f"{exc}\n{operator_log()}") from None
            assert document is not None
            application = document["status"]["clusterId"]
            # YARN's own view, over SPNEGO as the superuser (the test cluster has no YARN ACLs)
            status, body = curl(f"{cluster.resourcemanager_web_url}/ws/v1/cluster/apps/{application}", admin, cacert=cluster.ca_cert)
            assert status == 200, body
            report = json.loads(body)["app"]
            assert (report["user"], report["finalStatus"]) == (user, "SUCCEEDED"), report
            counts, owner = word_counts(cluster, outputs[namespace], admin)
            assert counts == expected[namespace] and owner == user
            staging = f"/user/{user}/{STAGING_ROOT}/{application}"
            assert wait_for(functools.partial(removed, cluster, staging), timeout=60, what="the staging directory removed")
    finally:
        k8s_cluster.helm("uninstall", *release, "--wait", check=False)
    assert operator_pods(core, system) == [] or wait_for(lambda: operator_pods(core, system) == [], timeout=60, what="the operator gone")
    for namespace in (system, *namespaces):
        core.delete_namespace(namespace, _request_timeout=TIMEOUT)
