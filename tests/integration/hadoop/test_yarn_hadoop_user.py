"""The operator's per-namespace Hadoop user in a real Hadoop client JVM: after ``act_as`` the JVM's login user (the
one YARN and HDFS see from its calls) is the mapped user, whatever the process's own ``HADOOP_USER_NAME``. The whole
path, a FlinkJob's application submitted as its namespace's user, runs in tests/integration/k8s/test_chart.py."""

from __future__ import annotations

import pytest

from jobcluster.backends.yarn.gateway import JvmGateway
from jobcluster.backends.yarn.yarn_client import act_as

pytestmark = pytest.mark.hadoop


def test_the_jvm_acts_as_the_mapped_user_not_the_processs(monkeypatch):
    monkeypatch.setenv("HADOOP_USER_NAME", "the-operators-own")
    with JvmGateway() as gateway:
        ugi = gateway.jvm.org.apache.hadoop.security.UserGroupInformation
        act_as(gateway, "analytics")
        assert ugi.getLoginUser().getShortUserName() == "analytics"
        assert ugi.getCurrentUser().getShortUserName() == "analytics"
