"""The S3A connector (Hadoop's ``hadoop-aws`` and the AWS SDK it was built with) for Spark's own Hadoop.

``s3a://`` URIs need ``hadoop-aws`` of exactly Spark's Hadoop version and the AWS
SDK v2 modules that Hadoop release was built and tested with. Hadoop's pom asks
for the SDK's ``bundle`` jar (~690 MB); the connector needs only the S3 client,
its transfer manager, the STS client (assumed roles, web identity) and what
they depend on (~13 MB), so that is what is fetched. Spark already carries Netty, SLF4J and Apache HttpClient: those are
left out, as two copies of a class on one classpath are a bug waiting to happen.

The jars are resolved by Apache Ivy, the resolver Spark ships in ``jars/`` and
uses for ``--packages``: checksums checked, transitive dependencies followed,
``spark.jars.repositories`` searched before Maven Central, or
``spark.jars.ivySettings`` used instead, as Spark does.

Standard library only: the image build runs this file on its own (``python
s3a_connector.py --install``, into Spark's ``jars/``) before jobcluster is
installed, so that the image's layer with the jars survives changes to
jobcluster's code.
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.util
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from xml.sax.saxutils import quoteattr

MAVEN_CENTRAL = "https://repo1.maven.org/maven2/"
RESOLVE_TIMEOUT = 900.0  # seconds for Ivy to resolve and download the ~35 jars, first time
_COMPLETE = ".complete"


@dataclass(frozen=True)
class ConnectorVersions:
    """What a Hadoop release's ``hadoop-aws`` was built with (``hadoop-project``'s pom): the AWS SDK v2 version
    (``aws-java-sdk-v2.version``) and, from Hadoop 3.4.2, the S3 Analytics Accelerator library's
    (``amazon-s3-analyticsaccelerator-s3.version``; ``None`` before)."""

    hadoop: str
    aws_sdk: str
    analytics_accelerator: str | None = None


#: Hadoop's releases with the AWS SDK v2 (3.4.0 on), as Spark 4 ships them: 4.0 has 3.4.1, 4.3 has 3.5.0.
KNOWN_VERSIONS = {
    v.hadoop: v
    for v in (
        ConnectorVersions("3.4.0", "2.23.19"),
        ConnectorVersions("3.4.1", "2.24.6"),
        ConnectorVersions("3.4.2", "2.29.52", "1.2.1"),
        ConnectorVersions("3.4.3", "2.35.4", "1.3.1"),
        ConnectorVersions("3.5.0", "2.35.4", "1.3.1"),
    )
}

#: Already among Spark's jars (or not needed by S3A): never fetched a second time.
_EXCLUDED_ORGANISATIONS = ("io.netty", "org.slf4j", "org.apache.httpcomponents", "commons-logging", "commons-codec")

_HADOOP_CLIENT_JAR = re.compile(r"^hadoop-(?:client-api|common)-(\d+\.\d+\.\d+)\.jar$")
_HADOOP_AWS_JAR = re.compile(r"(?:^|_)hadoop-aws-\d[^/]*\.jar$")


class ConnectorError(Exception):
    """The connector cannot be had: an unknown Hadoop version, no Java, or Ivy failed (its last lines attached)."""


def spark_jars_dir() -> Path:
    """``jars/`` of the Spark this process runs (``$SPARK_HOME``, else the installed pyspark), without importing pyspark.

    Raises ConnectorError when there is none."""
    if os.environ.get("SPARK_HOME"):
        jars = Path(os.environ["SPARK_HOME"], "jars")
    else:
        spec = importlib.util.find_spec("pyspark")
        if spec is None or not spec.submodule_search_locations:
            raise ConnectorError("pyspark is not installed in this environment, and SPARK_HOME is not set")
        jars = Path(next(iter(spec.submodule_search_locations)), "jars")
    if not jars.is_dir():
        raise ConnectorError(f"Spark has no jars directory at {jars}")
    return jars


def hadoop_version(jars: Path) -> str:
    """The Hadoop version of Spark's jars directory (``hadoop-client-api-3.5.0.jar`` -> ``"3.5.0"``).

    Raises ConnectorError when no Hadoop client jar is there (a Spark built without Hadoop)."""
    for jar in sorted(jars.iterdir()):
        match = _HADOOP_CLIENT_JAR.match(jar.name)
        if match:
            return match.group(1)
    raise ConnectorError(f"no Hadoop client jar (hadoop-client-api-*.jar) in {jars}: a Spark without Hadoop needs its own hadoop-aws")


def has_connector(jars: Iterable[Path]) -> bool:
    """Whether one of ``jars`` is ``hadoop-aws`` (as Maven names it, or Ivy's ``org.apache.hadoop_hadoop-aws-...``)."""
    return any(_HADOOP_AWS_JAR.search(Path(jar).name) for jar in jars)


def versions_for(hadoop: str) -> ConnectorVersions:
    """The connector's versions for Hadoop ``hadoop``; ConnectorError naming what to do for a release not known here."""
    try:
        return KNOWN_VERSIONS[hadoop]
    except KeyError:
        known = ", ".join(KNOWN_VERSIONS)
        raise ConnectorError(
            f"jobcluster knows the S3A connector of Hadoop {known}, and Spark's Hadoop is {hadoop}: "
            f"pass hadoop-aws-{hadoop}.jar and the AWS SDK jars it needs with --jars"
        ) from None


def build_ivy_module(versions: ConnectorVersions) -> str:
    """An ``ivy.xml`` whose one configuration is the connector's jars: hadoop-aws alone, the SDK's S3 client,
    transfer manager and STS client with their dependencies, the analytics accelerator alone, minus what Spark
    carries."""
    deps = [
        ("org.apache.hadoop", "hadoop-aws", versions.hadoop, False),
        ("software.amazon.awssdk", "s3", versions.aws_sdk, True),
        ("software.amazon.awssdk", "s3-transfer-manager", versions.aws_sdk, True),
        # assumed roles and web identity (EKS's IAM roles for service accounts, GKE's workload identity federation)
        ("software.amazon.awssdk", "sts", versions.aws_sdk, True),
    ]
    if versions.analytics_accelerator:
        deps.append(("software.amazon.s3.analyticsaccelerator", "analyticsaccelerator-s3", versions.analytics_accelerator, False))
    lines = [
        '<ivy-module version="2.0">',
        '  <info organisation="jobcluster" module="s3a-connector"/>',
        '  <configurations><conf name="default"/></configurations>',
        "  <dependencies>",
        *(
            f"    <dependency org={quoteattr(org)} name={quoteattr(name)} rev={quoteattr(rev)} "
            f'transitive="{str(transitive).lower()}" conf="default->default"/>'
            for org, name, rev, transitive in deps
        ),
        *(f"    <exclude org={quoteattr(org)}/>" for org in _EXCLUDED_ORGANISATIONS),
        "  </dependencies>",
        "</ivy-module>",
    ]
    return "\n".join(lines) + "\n"


def build_ivy_settings(repositories: Sequence[str] = ()) -> str:
    """An ``ivysettings.xml`` resolving from ``repositories`` (Maven layout, Spark's ``spark.jars.repositories``)
    in order, then Maven Central."""
    urls = [*(r if r.endswith("/") else r + "/" for r in repositories), MAVEN_CENTRAL]
    resolvers = [f'      <ibiblio name={quoteattr(f"repo-{i}")} m2compatible="true" root={quoteattr(url)}/>' for i, url in enumerate(urls)]
    return "\n".join(
        [
            "<ivysettings>",
            '  <settings defaultResolver="chain"/>',
            "  <resolvers>",
            '    <chain name="chain" returnFirst="true">',
            *resolvers,
            "    </chain>",
            "  </resolvers>",
            "</ivysettings>",
            "",
        ]
    )


def default_cache_dir(environ: dict[str, str] | None = None) -> Path:
    """``$JOBCLUSTER_CACHE/s3a-connector`` (default ``~/.cache/jobcluster/s3a-connector``)."""
    env = os.environ if environ is None else environ
    base = env.get("JOBCLUSTER_CACHE") or os.path.join(os.path.expanduser("~"), ".cache", "jobcluster")
    return Path(base, "s3a-connector")


def connector_jars(
    hadoop: str,
    cache: Path | None = None,
    repositories: Sequence[str] = (),
    ivy_settings: str | None = None,
    progress: Callable[[str], None] = lambda _: None,
) -> list[Path]:
    """The connector's jars for Hadoop ``hadoop``, fetched once into ``cache/hadoop-<version>-<digest of the
    modules>/`` and reused.

    ``repositories``: Maven repositories searched before Maven Central (``spark.jars.repositories``);
    ``ivy_settings``: an Ivy settings file used instead (``spark.jars.ivySettings``); ``progress`` is told
    before a download starts. Raises ConnectorError (unknown version, no Java, Ivy failed or timed out).
    """
    versions = versions_for(hadoop)
    if ivy_settings and not os.path.isfile(ivy_settings):
        raise ConnectorError(f"spark.jars.ivySettings names {ivy_settings}, which is not a file")
    module = build_ivy_module(versions)
    # named by what is resolved, so that another set of modules is never taken for this one
    target = (cache or default_cache_dir()) / f"hadoop-{versions.hadoop}-{hashlib.sha256(module.encode()).hexdigest()[:12]}"
    if not (target / _COMPLETE).is_file():
        progress(
            f"Fetching the S3A connector (hadoop-aws {versions.hadoop}, AWS SDK {versions.aws_sdk}) "
            f"from {ivy_settings or ', '.join([*repositories, MAVEN_CENTRAL])} into {target}"
        )
        _resolve(module, target, repositories, ivy_settings)
    return sorted(p for p in target.glob("*.jar"))


def _resolve(module: str, target: Path, repositories: Sequence[str], ivy_settings: str | None) -> None:
    """Ivy's resolution of ``module`` (an ivy.xml) into a scratch directory beside ``target``, renamed to it once
    complete."""
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=target.parent, prefix=".resolving-") as scratch:
        work = Path(scratch)
        (work / "ivy.xml").write_text(module)
        settings = Path(ivy_settings) if ivy_settings else work / "ivysettings.xml"
        if not ivy_settings:
            settings.write_text(build_ivy_settings(repositories))
        jars = work / "jars"
        command = [
            _java(),
            "-jar",
            str(_ivy_jar()),
            "-settings",
            str(settings),
            "-ivy",
            str(work / "ivy.xml"),
            "-cache",
            str(target.parent / "ivy-cache"),
            "-confs",
            "default",
            "-types",
            "jar",
            "-retrieve",
            f"{jars}/[organisation]_[artifact]-[revision](-[classifier]).[ext]",
        ]
        try:
            done = subprocess.run(command, capture_output=True, text=True, timeout=RESOLVE_TIMEOUT, check=False)
        except subprocess.TimeoutExpired:
            raise ConnectorError(f"Ivy did not resolve the S3A connector within {RESOLVE_TIMEOUT:.0f} s") from None
        if done.returncode != 0 or not has_connector(jars.glob("*.jar")):
            tail = _ivy_problems(done.stdout + done.stderr)
            raise ConnectorError(
                "Ivy could not resolve the S3A connector; a Maven mirror is set with -D spark.jars.repositories=URL "
                f"(or -D spark.jars.ivySettings=FILE), or the jars can be given with --jars. Ivy said:\n{tail}"
            )
        (jars / _COMPLETE).write_text(module)
        if (target / _COMPLETE).is_file():
            return  # another client finished first, and may be reading its jars: keep them
        shutil.rmtree(target, ignore_errors=True)  # what an interrupted older resolution left
        try:
            jars.rename(target)
        except OSError:
            if not (target / _COMPLETE).is_file():  # not another client's complete result: a real failure
                raise


def _ivy_problems(output: str) -> str:
    """What of Ivy's output says why: the unresolved modules and the first errors (its last lines otherwise)."""
    lines = [line.strip() for line in output.splitlines() if line.strip()]
    unresolved = [line.removeprefix(":: ") for line in lines if re.match(r"^:: \S+#\S+;", line)]
    errors = [line for line in lines if line.startswith("Server access error") or "Exception" in line][:2]
    return "\n".join(unresolved + errors or lines[-8:])


def _ivy_jar() -> Path:
    found = sorted(spark_jars_dir().glob("ivy-*.jar"))
    if not found:
        raise ConnectorError(f"no Apache Ivy jar (ivy-*.jar) among Spark's jars in {spark_jars_dir()}")
    return found[-1]


def _java() -> str:
    java_home = os.environ.get("JAVA_HOME")
    java = os.path.join(java_home, "bin", "java") if java_home else shutil.which("java")
    if not java or not os.path.exists(java):
        raise ConnectorError("Java was not found (JAVA_HOME or PATH): Ivy, which fetches the S3A connector, runs on it")
    return java


def main(argv: Sequence[str] | None = None) -> int:
    """``python s3a_connector.py [--into DIR | --install]``: fetch the connector of this Spark's Hadoop, copy it into
    DIR or Spark's own ``jars/``, print the jars' paths. Exit 1 with the reason on stderr when it cannot be had."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    where = parser.add_mutually_exclusive_group()
    where.add_argument("--into", type=Path, help="directory to copy the jars into (default: only fetch into the cache)")
    where.add_argument("--install", action="store_true", help="copy them into Spark's own jars/ (the image build)")
    args = parser.parse_args(argv)
    try:
        spark_jars = spark_jars_dir()
        jars = connector_jars(hadoop_version(spark_jars), progress=lambda line: print(line, file=sys.stderr))
    except ConnectorError as exc:
        print(f"s3a_connector: {exc}", file=sys.stderr)
        return 1
    into = spark_jars if args.install else args.into
    for jar in jars:
        if into:
            shutil.copy2(jar, into / jar.name)
        print(into / jar.name if into else jar)
    return 0


if __name__ == "__main__":
    sys.exit(main())
