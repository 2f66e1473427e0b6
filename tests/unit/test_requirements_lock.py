"""The images' lock files (entrypoints/requirements.txt and requirements-operator.txt, `make lock`) against
pyproject.toml: every dependency is pinned at a version its specifier allows, and every pin carries hashes (pip
install --require-hashes refuses a file without one)."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

REPO = Path(__file__).resolve().parents[2]
LOCK = REPO / "entrypoints" / "requirements.txt"


def pins(text: str) -> dict[str, tuple[str, list[str]]]:
    """The lock file's pins: normalized name → (version, its SHA-256 hashes)."""
    pinned: dict[str, tuple[str, list[str]]] = {}
    for entry in re.split(r"\n(?=\S)", re.sub(r"^#.*\n?", "", text, flags=re.M)):
        if match := re.match(r"([A-Za-z0-9._-]+)==(\S+)", entry):
            pinned[canonicalize_name(match[1])] = (match[2], re.findall(r"--hash=sha256:([0-9a-f]{64})", entry))
    return pinned


def test_every_dependency_of_pyproject_is_pinned_within_its_range_with_hashes():
    """The dependencies and the ``kerberos`` extra (the Makefile's JOB_IMAGE_EXTRAS: the operator on the job image logs in
    to Kerberized YARN clusters)."""
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    dependencies = [Requirement(d) for d in [*project["dependencies"], *project["optional-dependencies"]["kerberos"]]]
    pinned = pins(LOCK.read_text())
    due = "run `make lock` (entrypoints/requirements.txt is behind pyproject.toml)"
    for requirement in dependencies:
        name = canonicalize_name(requirement.name)
        assert name in pinned, f"{requirement} is not pinned: {due}"
        version = pinned[name][0]
        assert requirement.specifier.contains(version, prereleases=True), f"{requirement} excludes the pinned {version}: {due}"
    assert all(hashes for _, hashes in pinned.values()), [name for name, (_, hashes) in pinned.items() if not hashes]
    assert not re.search(r"^--(find-links|index-url|extra-index-url)", LOCK.read_text(), re.M), "no machine's own package source"


def test_the_operator_image_pins_the_same_versions_without_spark():
    """entrypoints/requirements-operator.txt: the operator's image (no Spark, no Java) gets pyproject.toml's
    dependencies but those only a job cluster or YARN needs, at the versions of the job image, with hashes."""
    excluded = {"pyspark", "hdfs", "venv-pack", "wrapt"}  # the Makefile's OPERATOR_EXCLUDED
    dependencies = [Requirement(d) for d in tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["dependencies"]]
    job, operator = pins(LOCK.read_text()), pins((REPO / "entrypoints" / "requirements-operator.txt").read_text())
    for requirement in dependencies:
        name = canonicalize_name(requirement.name)
        assert (name in operator) != (name in excluded), f"{requirement}: run `make lock`"
    assert not {"pyspark", "py4j", "pandas", "pyarrow", "numpy"} & set(operator), "no Spark, nor what only Spark needs"
    assert all(job[name][0] == version and hashes for name, (version, hashes) in operator.items()), "the job image's versions"


def test_the_pins_parse_as_pip_reads_them():
    text = "# comment\nfoo==1.2 \\\n    --hash=sha256:" + "a" * 64 + "\n    # via bar\nbaz-qux==3 \\\n    --hash=sha256:" + "b" * 64 + "\n"
    assert pins(text) == {"foo": ("1.2", ["a" * 64]), "baz-qux": ("3", ["b" * 64])}
