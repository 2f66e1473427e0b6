"""The Spark version jobcluster names (``--version``, ``info``, REST ``/config``): the Spark its processes run."""

from __future__ import annotations

import json
import platform
from importlib import metadata

from click.testing import CliRunner

import jobcluster
from jobcluster.cli.main import cli
from jobcluster.spark import home


def test_the_version_is_that_of_the_installed_pysparks_spark(monkeypatch):
    monkeypatch.delenv("SPARK_HOME", raising=False)
    home.spark_version.cache_clear()
    assert home.spark_version() == metadata.version("pyspark")


def test_a_spark_home_names_its_own_version(monkeypatch, tmp_path):
    (tmp_path / "jars").mkdir()
    for name in ("spark-core-tests.jar", "spark-core_2.12-3.5.7.jar", "spark-sql_2.12-3.5.7.jar"):
        (tmp_path / "jars" / name).touch()
    monkeypatch.setenv("SPARK_HOME", str(tmp_path))
    home.spark_version.cache_clear()
    try:
        assert home.spark_version() == "3.5.7"
    finally:
        home.spark_version.cache_clear()


def test_a_spark_home_without_spark_falls_back_to_pysparks_version(monkeypatch, tmp_path):
    monkeypatch.setenv("SPARK_HOME", str(tmp_path))
    home.spark_version.cache_clear()
    try:
        assert home.spark_version() == metadata.version("pyspark")
    finally:
        home.spark_version.cache_clear()


def test_the_cli_names_spark_and_python_in_its_version():
    result = CliRunner().invoke(cli, ["--version"])
    assert result.exit_code == 0
    assert result.output == f"jobcluster {jobcluster.__version__} (Spark {home.spark_version()}, Python {platform.python_version()})\n"


def test_info_names_the_spark_version(tmp_path):
    program = tmp_path / "job.py"
    program.write_text("print('hi')\n")
    result = CliRunner().invoke(cli, ["info", str(program)])
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["sparkVersion"] == metadata.version("pyspark")
