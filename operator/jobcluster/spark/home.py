"""Where Spark is: the pyspark distribution installed with jobcluster.

The pyspark wheel carries a full Spark (``bin/spark-class``, ``bin/spark-submit``
and ``jars/``), so no separate Spark download is needed; ``SPARK_HOME`` wins
when set. Spark needs a Java 17 runtime, found through ``JAVA_HOME`` or ``PATH``.
"""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import sys
from functools import cache
from importlib import metadata
from pathlib import Path

from jobcluster.errors import SparkError


def spark_home() -> Path:
    """The Spark installation to use (``$SPARK_HOME`` or the pyspark package directory)."""
    if os.environ.get("SPARK_HOME"):
        return Path(os.environ["SPARK_HOME"])
    spec = importlib.util.find_spec("pyspark")  # found, not imported: importing pyspark takes a while
    if spec is None or not spec.submodule_search_locations:
        raise SparkError("pyspark is not installed in this environment, and SPARK_HOME is not set: pip install 'pyspark[sql]'")
    return Path(next(iter(spec.submodule_search_locations)))


#: Spark's core jar names its Scala line and Spark's version: ``spark-core_2.13-4.3.0.jar``.
_SPARK_CORE_JAR = re.compile(r"^spark-core_(\d+\.\d+)-(\d[^/]*)\.jar$")


@cache
def spark_version() -> str:
    """The version of the Spark that this process's Spark processes run (``"4.3.0"``).

    Read off the installation's ``jars/spark-core_<scala>-<version>.jar`` (what
    :func:`spark_home` runs, ``$SPARK_HOME`` included), else the installed
    pyspark distribution's version; ``"unknown"`` when neither is there.
    """
    try:
        jars = sorted((spark_home() / "jars").glob("spark-core_*.jar"))
    except SparkError:
        jars = []
    for jar in jars:
        match = _SPARK_CORE_JAR.match(jar.name)
        if match:
            return match.group(2)
    try:
        return metadata.version("pyspark")
    except metadata.PackageNotFoundError:
        return "unknown"


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
