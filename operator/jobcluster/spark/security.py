"""How every Spark process of a job cluster is locked down: authenticated, bound to the cluster's host, no kill links.

Why: the Spark master runs any application that registers with it, as the
job's user, so only the cluster's own processes may talk to it and to its
workers and executors. Spark's shared-secret authentication
(``spark.authenticate``) does that; its AES-based network encryption
(``spark.network.crypto.enabled``) can be added with
``jobcluster.security.encrypt-data-plane``.

How the secret reaches each process, without a command line (Spark's
``SecurityManager``, 3.5 and 4.x):

- the master, the workers and the driver read ``spark-defaults.conf`` from
  ``SPARK_CONF_DIR``; :meth:`SparkSecurity.install` writes it with mode 0600
  into a 0700 directory. The driver must have the secret in its
  configuration: with a ``spark://`` master Spark refuses the environment
  variable and secret files (those are for YARN and Kubernetes only);
- executors get it from their worker in the ``_SPARK_AUTH_SECRET``
  environment variable (Spark's own mechanism), and ``spark.authenticate``
  and ``spark.network.*`` from the driver with their startup options; the
  PySpark workers inherit the executor's environment.

Every target can provide this: a directory it writes at container start
(local, YARN), or a Kubernetes Secret mounted as the configuration directory.

Binding: Spark's web UIs (master, worker, driver) bind to ``SPARK_LOCAL_IP``,
else to all interfaces, so every Spark process gets ``SPARK_LOCAL_IP``; their
RPC and block manager ports bind to the host each is given (``--host``,
``spark.driver.bindAddress``); the py4j gateway and the PySpark daemons bind
to loopback by themselves.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from jobcluster.security import private_directory, write_private_file

#: The file Spark's launchers read from ``SPARK_CONF_DIR`` (master, worker, spark-submit, pyspark's gateway).
SPARK_DEFAULTS_FILE = "spark-defaults.conf"


_ESCAPED = {"\\": "\\\\", "\n": "\\n", "\r": "\\r", "\t": "\\t", "\f": "\\f"}


def properties_text(properties: Mapping[str, str]) -> str:
    """``properties`` as a Java properties file (``java.util.Properties.load``, which Spark's launchers use for
    ``spark-defaults.conf`` and ``--properties-file``): one ``key=value`` line each, escaped so that any text comes
    back as it is (Spark then trims each value's surrounding whitespace, as it does for its own files)."""
    lines = []
    for key, value in properties.items():
        escaped_key = "".join(_ESCAPED.get(c) or ("\\" + c if c in " =:#!" else c) for c in key)
        lines.append(f"{escaped_key}={''.join(_ESCAPED.get(c) or c for c in value)}\n")
    return "".join(lines)


@dataclass(frozen=True)
class SparkSecurity:
    """``secret``: Spark's shared secret of the cluster; ``bind_host``: the address every Spark socket binds to;
    ``encrypt_data_plane``: also encrypt Spark's RPC and block transfers
    [jobcluster.security.encrypt-data-plane]."""

    secret: str
    bind_host: str
    encrypt_data_plane: bool = False

    def settings(self) -> dict[str, str]:
        """The Spark settings that carry no secret, for the daemons and the driver alike."""
        return {
            "spark.authenticate": "true",
            "spark.network.crypto.enabled": str(self.encrypt_data_plane).lower(),
            # cancel goes through the cluster's REST API, which checks the cluster's token; the UIs have no login
            "spark.ui.killEnabled": "false",
            "spark.master.ui.decommission.allow.mode": "DENY",
            "spark.master.rest.enabled": "false",
        }

    def install(self, conf_dir: Path) -> dict[str, str]:
        """Write ``conf_dir/spark-defaults.conf`` (0600; ``conf_dir`` created 0700) with the secret and :meth:`settings`.

        Returns the environment every Spark process started with it needs
        (``SPARK_CONF_DIR``, ``SPARK_LOCAL_IP``). Raises OSError.
        """
        properties = {**self.settings(), "spark.authenticate.secret": self.secret}
        write_private_file(private_directory(conf_dir) / SPARK_DEFAULTS_FILE, properties_text(properties))
        return {"SPARK_CONF_DIR": str(conf_dir), "SPARK_LOCAL_IP": self.bind_host}
