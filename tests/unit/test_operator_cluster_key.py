"""The operator's key (``--cluster-secret-key-file``, the chart's Secret): each FlinkJob's cluster secret is derived
from it, so that the operator re-derives a cluster's REST token without any right to read Secrets."""

from __future__ import annotations

from jobcluster.backends.kubernetes.descriptor import KubernetesClusterDescriptor
from jobcluster.backends.kubernetes.operator_hook import KubernetesOperatorHook
from jobcluster.client.operator_hook import ClusterRef
from jobcluster.security import derived_cluster_secret, rest_token
from tests.support.operator_start import start_operator

KEY = "k" * 48


def ref(name: str = "wc", uid: str = "u-1", namespace: str = "jobs") -> ClusterRef:
    return ClusterRef("kubernetes-application", namespace, name, uid)


def test_each_flinkjob_has_its_own_secret_which_the_key_derives_again():
    secrets = {derived_cluster_secret(KEY, owner) for owner in ("jobs/wc/u-1", "jobs/wc/u-2", "other/wc/u-1", "jobs/etl/u-1")}
    assert len(secrets) == 4 and all(len(s) == 64 and KEY not in s for s in secrets)
    assert derived_cluster_secret(KEY, "jobs/wc/u-1") == derived_cluster_secret(KEY, "jobs/wc/u-1")
    assert derived_cluster_secret("another key" * 4, "jobs/wc/u-1") != derived_cluster_secret(KEY, "jobs/wc/u-1")


def test_the_operators_descriptor_derives_the_token_and_reads_no_secret():
    """Without an API client call: the descriptor's token comes from the key, never from the cluster's Secret."""
    descriptor = KubernetesOperatorHook(api=None, cluster_secret_key=KEY).descriptor(ref())  # type: ignore[arg-type]
    assert isinstance(descriptor, KubernetesClusterDescriptor)
    token = descriptor._read_rest_token(None, "wc")  # type: ignore[arg-type]  # no API client is touched
    assert token == rest_token(derived_cluster_secret(KEY, "jobs/wc/u-1"))
    other = KubernetesOperatorHook(api=None, cluster_secret_key=KEY).descriptor(ref(uid="u-2"))  # type: ignore[arg-type]
    assert other._read_rest_token(None, "wc") != token  # type: ignore[attr-defined,arg-type]  # a FlinkJob made anew under the name


def test_a_short_key_stops_the_operator_at_its_start(tmp_path):
    key = tmp_path / "key"
    key.write_text("too-short\n")
    started = start_operator(tmp_path, "{}\n", "--cluster-secret-key-file", str(key))
    assert started.returncode == 2 and "holds 9 characters; the key needs at least 32" in started.stderr, started.stderr
