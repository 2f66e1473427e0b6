"""Jars a job needs that the cluster's Spark lacks: the S3A connector, for ``s3a://`` URIs.

spark-submit users add it by hand (``--packages org.apache.hadoop:hadoop-aws:<Spark's Hadoop>``,
then chase the matching AWS SDK). jobcluster's client adds it to the job's jars when the job
names an ``s3a://`` URI and the Spark the cluster runs is the client's own (``local``,
``local-cluster``, ``yarn-application``, which ships it); the Kubernetes image carries it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

from jobcluster.client.descriptor import PackagedProgram
from jobcluster.config import options
from jobcluster.config.configuration import Configuration
from jobcluster.errors import JobGraphError
from jobcluster.spark.s3a_connector import ConnectorError, connector_jars, hadoop_version, has_connector, spark_jars_dir

S3A_SCHEME = "s3a://"
#: Spark's options for where ``--packages`` are resolved, read the same way here.
SPARK_JARS_REPOSITORIES = "spark.jars.repositories"
SPARK_JARS_IVY_SETTINGS = "spark.jars.ivySettings"


def names_s3a(program: PackagedProgram, config: Configuration) -> bool:
    """Whether the program's arguments or any configuration value (checkpoint and savepoint directories, ``-s``,
    ``spark.*``) name an ``s3a://`` URI."""
    return any(S3A_SCHEME in text for text in (*program.args, *config.to_dict().values()))


def with_s3a_connector(
    program: PackagedProgram, config: Configuration, runs_client_spark: bool, progress: Callable[[str], None] = lambda _: None
) -> PackagedProgram:
    """``program`` with the S3A connector's jars added to its ``--jars`` when ``jobcluster.s3a.connector`` asks for
    them (``auto``: the job names ``s3a://``), the cluster runs the client's Spark, and neither Spark's jars nor
    the program's hold ``hadoop-aws``; ``program`` itself otherwise.

    Raises:
        JobGraphError: the connector is needed and cannot be had (Spark's Hadoop unknown here, no Java, Ivy failed),
            with what to do instead.
    """
    mode = config.get(options.S3A_CONNECTOR)
    if mode == "never" or not runs_client_spark or (mode == "auto" and not names_s3a(program, config)):
        return program
    raw = config.to_dict()
    try:
        spark_jars = spark_jars_dir()
        if has_connector([*spark_jars.iterdir(), *program.jars]):
            return program
        jars = connector_jars(
            hadoop_version(spark_jars),
            repositories=[r.strip() for r in raw.get(SPARK_JARS_REPOSITORIES, "").split(",") if r.strip()],
            ivy_settings=raw.get(SPARK_JARS_IVY_SETTINGS) or None,
            progress=progress,
        )
    except ConnectorError as exc:
        raise JobGraphError(f"the S3A connector cannot be added (jobcluster.s3a.connector: {mode}): {exc}") from exc
    return dataclasses.replace(program, jars=(*program.jars, *jars))
