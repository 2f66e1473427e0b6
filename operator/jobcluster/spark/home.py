"""Where Spark is: the pyspark distribution installed with jobcluster.

The pyspark wheel carries a full Spark (``bin/spark-class``, ``bin/spark-submit``
and ``jars/``), so no separate Spark download is needed; ``SPARK_HOME`` wins
when set. Spark needs a Java 17 runtime, found through ``JAVA_HOME`` or ``PATH``.
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

from jobcluster.errors import SparkError


def spark_home() -> Path:
    """The Spark installation to use (``$SPARK_HOME`` or the pyspark package directory)."""
    if os.environ.get("SPARK_HOME"):
        return Path(os.environ["SPARK_HOME"])
    import pyspark  # imported late: only processes that launch Spark need it

    return Path(pyspark.__file__).parent


def python_command() -> str:
    """How Spark's executors name the Python of their PySpark workers (``spark.pyspark.python``).

    The interpreter's file name, found through ``PATH``, which :func:`spark_env` starts with this
    process's interpreter directory: so each executor runs the Python of the TaskExecutor that
    started its Spark worker, wherever that is installed in its container (a shipped environment
    is unpacked at a different path in every YARN container), as ``./environment/bin/python``
    does under ``spark-submit --archives`` on YARN.
    """
    return Path(sys.executable).name


def spark_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    """Environment for Spark processes: SPARK_HOME, Python for PySpark workers (first on ``PATH``), no stray config."""
    env = dict(os.environ)
    env["SPARK_HOME"] = str(spark_home())
    env["PATH"] = os.pathsep.join(filter(None, (str(Path(sys.executable).parent), env.get("PATH"))))
    env["PYSPARK_PYTHON"] = sys.executable
    env["PYSPARK_DRIVER_PYTHON"] = sys.executable
    env.pop("SPARK_CONF_DIR", None)
    env.setdefault("SPARK_NO_DAEMONIZE", "1")
    env.update(extra or {})
    return env


def check_java() -> str:
    """Path of ``java``; raises SparkError saying how to install Java 17 when there is none."""
    java_home = os.environ.get("JAVA_HOME")
    java = Path(java_home, "bin", "java") if java_home else shutil.which("java")
    if not java or not Path(java).exists():
        raise SparkError(
            "Java was not found: Spark needs a Java 17 runtime. Install one (e.g. `apt-get install openjdk-17-jre-headless`) "
            "and put it on PATH or set JAVA_HOME."
        )
    return str(java)
