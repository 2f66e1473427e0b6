"""The client's Python environment split into parts that change at different rates, each fingerprinted on its own.

Shipping the whole virtual environment as one archive made the first job after
any change (a package added, jobcluster edited) pack, upload and localize all
of it: about 390 MiB in 12,410 files, most of whose localization time is the
NodeManager setting the permissions of every unpacked file, one by one (without
Hadoop's native library, one ``chmod`` process per file: 3-4 ms each on the
test cluster). So it is shipped in parts, each its own ARCHIVE LocalResource
named by its content, and a change re-ships only the parts it touches:

- ``pyspark``: the ``pyspark`` and ``py4j`` distributions (Spark's jars: the
  bulk of the bytes), named by pyspark's version and a digest of the two
  distributions' ``RECORD`` files; the same for every job and every user of that
  pyspark. Key in the container: :data:`PYSPARK_KEY`.
- ``jobcluster``: the running jobcluster package (and its ``dist-info``);
  small, and new with every upgrade or edit of jobcluster. Key:
  :data:`JOBCLUSTER_KEY`.
- one part per large third-party distribution (at least
  :data:`PACKAGE_PART_MIN_RECORDS` files in its ``RECORD``), named by its name,
  version and a digest of its files: a package the user adds, upgrades or removes
  changes its own part only. Key: ``python-packages/<name>``. A distribution
  that shares a top-level name with another one (old-style namespace packages)
  or installs a ``.pth`` file stays in the environment part, where
  ``site-packages`` processing works as installed.
- ``environment``: everything else, with the venv's skeleton (``bin/python``,
  ``pyvenv.cfg``) and the small distributions (cheap to localize together). Key:
  ``environment``, so ``./environment/bin/python`` stays the container's Python
  as with a single venv-pack archive.

The environment part carries :data:`PARTS_PTH` and :data:`PARTS_MODULE`: the
``.pth`` file imports the module, which puts the other parts on
``sys.path``. ``sys.prefix`` of ``<dir>/environment/bin/python`` is
``<dir>/environment`` (``site`` takes the executable's path as given, without
resolving links), so the module's own ``__file__`` is
``<dir>/environment/lib/pythonX.Y/site-packages/...`` and four levels up,
joined lexically, is ``<dir>``: the working directory where the NodeManager
linked the other parts under their keys. Every process started with that
Python (the ApplicationMaster, TaskExecutors, Spark's Python workers) sees the
parts. (A plain path line in the ``.pth`` would do the same, but venv-pack takes
any path line leading out of the environment for an editable install and
refuses to pack.)

Pure functions over a site-packages directory; packing and shipping are
``pyenv.py``'s.
"""

from __future__ import annotations

import hashlib
import os
import posixpath
import re
import sys
from collections.abc import Iterable
from dataclasses import dataclass
from importlib.metadata import Distribution, PathDistribution
from pathlib import Path
from typing import Any

PYSPARK_KEY = "python-pyspark"
"""The pyspark part's name in a container's working directory (a hyphen: never an importable module name)."""

JOBCLUSTER_KEY = "python-jobcluster"
"""The jobcluster part's name in a container's working directory."""

PYSPARK_DISTRIBUTIONS = ("pyspark", "py4j")
"""Distributions in the pyspark part: pyspark pins its py4j, so they change together."""

PACKAGES_KEY = "python-packages"
"""Directory of the package parts in a container's working directory (``python-packages/<name>``)."""

PACKAGE_PART_MIN_RECORDS = 64
"""A third-party distribution with at least this many files in its ``RECORD`` gets a part of its own. Measured on
the development venv: 22 such distributions hold 92% of the environment's 14,705 files and directories; the
remaining 1,233 (about 4 s of localization on the test cluster) travel with the environment part."""

PARTS_MODULE = "_jobcluster_yarn_parts"
"""The module in the environment part's site-packages that puts the other parts on ``sys.path``."""

PARTS_PTH = f"{PARTS_MODULE}.pth"
"""The ``.pth`` file in the environment part's site-packages that imports :data:`PARTS_MODULE` at startup."""

FINGERPRINT_VERSION = "jobcluster-pyenv-parts-1"


def parts_pth_text() -> str:
    """The content of :data:`PARTS_PTH`."""
    return f"import {PARTS_MODULE}\n"


def parts_module_text() -> str:
    """The source of :data:`PARTS_MODULE` (see the module docstring for why the paths resolve in a container)."""
    keys = ", ".join(repr(k) for k in (PYSPARK_KEY, JOBCLUSTER_KEY))
    return (
        '"""Written by jobcluster: puts the parts of the Python environment shipped to YARN on sys.path."""\n'
        "import os\n"
        "import sys\n\n"
        "_HERE = os.path.dirname(os.path.abspath(__file__))\n"
        "_DIR = os.path.normpath(os.path.join(_HERE, os.pardir, os.pardir, os.pardir, os.pardir))\n"
        f"_PACKAGES = os.path.join(_DIR, {PACKAGES_KEY!r})\n"
        "_NAMES = sorted(os.listdir(_PACKAGES)) if os.path.isdir(_PACKAGES) else []\n"
        f"for _path in [os.path.join(_DIR, _key) for _key in ({keys})] + [os.path.join(_PACKAGES, _n) for _n in _NAMES]:\n"
        "    if os.path.isdir(_path) and _path not in sys.path:\n"
        "        sys.path.append(_path)\n"
    )


def distribution(site_packages: Path, name: str) -> tuple[Path, Distribution] | None:
    """The metadata directory and distribution ``name`` (PEP 503 name match) in ``site_packages``, or None: a
    wheel's ``.dist-info``, or the ``.egg-info`` of a legacy ``setup.py install`` (what pip does with an sdist
    when the ``wheel`` package is missing, as in the image's venv: pyspark is an sdist)."""
    wanted = _normalize(name)
    for info in sorted([*site_packages.glob("*.dist-info"), *site_packages.glob("*.egg-info")]):
        dist = PathDistribution(info)
        if info.is_dir() and _normalize(dist.metadata["Name"] or "") == wanted:
            return info, dist
    return None


def installed_paths(info: Path, dist: Distribution) -> list[str]:
    """The posix paths, relative to site-packages, of the files a distribution installed: a ``.dist-info``'s RECORD,
    or an ``.egg-info``'s ``installed-files.txt`` (relative to the ``.egg-info``; importlib.metadata of Python 3.11
    reads SOURCES.txt instead, the source tree's paths)."""
    installed = info / "installed-files.txt"
    if info.suffix == ".egg-info" and installed.is_file():
        lines = installed.read_text(errors="replace").splitlines()
        return [posixpath.normpath(posixpath.join(info.name, line)) for line in lines if line.strip()]
    return [file.as_posix() for file in dist.files or ()]


def top_level_entries(found: tuple[Path, Distribution], site_packages: Path) -> set[str]:
    """The names directly in ``site_packages`` that a distribution installed (package directories, modules, its
    metadata directory); files it installed outside site-packages (``../../../bin/...``) are not among them."""
    info, dist = found
    entries = {info.name}
    for path in installed_paths(info, dist):
        first = path.split("/", 1)[0]
        if first and first not in ("..", ".", "__pycache__") and (site_packages / first).exists():
            entries.add(first)
    return entries


def pyspark_entries(site_packages: Path) -> set[str]:
    """The site-packages entries of the pyspark part (empty when pyspark is not installed there)."""
    entries: set[str] = set()
    for name in PYSPARK_DISTRIBUTIONS:
        dist = distribution(site_packages, name)
        if dist is not None:
            entries |= top_level_entries(dist, site_packages)
    return entries


def jobcluster_entries(site_packages: Path, package_name: str = "jobcluster") -> set[str]:
    """The site-packages entries of the jobcluster part that live in site-packages: its ``dist-info``, its package
    directory when installed normally, and the files of an editable install (``__editable__*``), which the
    environment part must not carry (they point at the client's source tree)."""
    entries = {p.name for p in site_packages.glob(f"__editable__*{package_name}*")}
    dist = distribution(site_packages, package_name)
    if dist is not None:
        entries |= top_level_entries(dist, site_packages)
    return entries


@dataclass(frozen=True)
class PackagePart:
    """A third-party distribution shipped as a part of its own: ``name`` (PEP 503 normalized), ``version``, and its
    top-level ``entries`` in site-packages."""

    name: str
    version: str
    entries: frozenset[str]

    @property
    def key(self) -> str:
        return f"{PACKAGES_KEY}/{self.name}"


def package_parts(site_packages: Path, taken: Iterable[str] = (), min_records: int = PACKAGE_PART_MIN_RECORDS) -> list[PackagePart]:
    """The distributions of ``site_packages`` that get a part of their own (see the module docstring), by name;
    ``taken``: entries of other parts (pyspark's, jobcluster's), whose distributions are not among them."""
    owners: dict[str, list[str]] = {}
    candidates = []
    for info in sorted(site_packages.glob("*.dist-info")):
        dist = PathDistribution(info)
        entries = top_level_entries((info, dist), site_packages)
        name = _normalize(dist.metadata["Name"] or info.name)
        for entry in entries:
            owners.setdefault(entry, []).append(name)
        candidates.append((name, dist, entries))
    blocked = set(taken)
    parts = []
    for name, dist, entries in candidates:
        if entries & blocked or any(len(owners[e]) > 1 or e.endswith(".pth") for e in entries):
            continue
        if len(dist.files or ()) >= min_records:
            parts.append(PackagePart(name, dist.version, frozenset(entries)))
    return sorted(parts, key=lambda p: p.name)


def pyspark_version(site_packages: Path) -> str | None:
    found = distribution(site_packages, "pyspark")
    return None if found is None else found[1].version


@dataclass(frozen=True)
class Split:
    """Which top-level entries of one site-packages go to which part (the environment part: everything else)."""

    site_packages: Path
    pyspark: frozenset[str]
    jobcluster: frozenset[str]
    packages: tuple[PackagePart, ...] = ()

    @property
    def excluded(self) -> frozenset[str]:
        """Entries the environment part leaves out."""
        return self.pyspark | self.jobcluster | frozenset(e for p in self.packages for e in p.entries)


def split(site_packages: Path, package_name: str = "jobcluster", min_records: int = PACKAGE_PART_MIN_RECORDS) -> Split:
    """Split ``site_packages`` into the parts (see the module docstring)."""
    pyspark = pyspark_entries(site_packages)
    jobcluster = jobcluster_entries(site_packages, package_name) - pyspark
    packages = package_parts(site_packages, pyspark | jobcluster | {package_name}, min_records)
    return Split(site_packages, frozenset(pyspark), frozenset(jobcluster), tuple(packages))


# -- fingerprints ---------------------------------------------------------------------


def python_tag() -> str:
    """``py3.11``: bytecode in ``__pycache__`` and extension modules are for one Python version."""
    return f"py{sys.version_info.major}.{sys.version_info.minor}"


def files(root: Path) -> list[tuple[str, Path]]:
    """Every file and symlink below ``root`` except compiled bytecode, as (posix relative path, path), sorted;
    symlinked directories are listed as links, not followed."""
    entries: list[tuple[str, Path]] = []
    top = str(root)
    for directory, dirs, names in os.walk(top):
        relative = directory[len(top) + 1 :]
        prefix = f"{relative}/" if relative else ""
        links = [d for d in dirs if os.path.islink(os.path.join(directory, d))]
        dirs[:] = [d for d in dirs if d != "__pycache__" and d not in links]
        entries.extend((prefix + name, Path(directory, name)) for name in (*names, *links))
    return sorted(entries)


def recorded_files(site_packages: Path, prefix: str = "") -> set[str]:
    """``prefix``-relative paths (``prefix``: site-packages' path relative to the walked root) whose sha256 pip
    recorded in a ``RECORD``: hashing their RECORD stands for them."""
    covered: set[str] = set()
    for record in site_packages.glob("*.dist-info/RECORD"):
        for line in record.read_text(errors="replace").splitlines():
            # RECORD is CSV (path,hash,size); paths with commas are quoted, and simply stay uncovered.
            path, _, rest = line.partition(",")
            if rest.startswith("sha256="):
                covered.add(posixpath.normpath(posixpath.join(prefix, path)) if prefix else posixpath.normpath(path))
    return covered


def hash_file(digest: Any, relative: str, path: Path) -> None:
    digest.update(relative.encode() + b"\0")
    if path.is_symlink():
        digest.update(b"->" + os.readlink(path).encode() + b"\0")
        return
    with open(path, "rb") as f:
        digest.update(hashlib.file_digest(f, "sha256").digest())


def hash_tree(digest: Any, root: Path, covered: set[str], label: str = "", keep: Iterable[str] | None = None) -> None:
    """Add every file below ``root`` (only the top-level entries ``keep`` when given) to ``digest``: a file pip
    recorded (``covered``) through its RECORD, any other by its content."""
    wanted = None if keep is None else set(keep)
    for relative, path in files(root):
        if wanted is not None and relative.split("/", 1)[0] not in wanted:
            continue
        if relative.endswith(".dist-info/RECORD") or relative not in covered:
            hash_file(digest, label + relative, path)


def pyspark_fingerprint(parts: Split) -> str:
    """The pyspark part's digest: its files (through RECORD) and the Python version its bytecode is for."""
    digest = hashlib.sha256(f"{FINGERPRINT_VERSION}\0pyspark\0{python_tag()}\0".encode())
    hash_tree(digest, parts.site_packages, recorded_files(parts.site_packages), keep=parts.pyspark)
    return digest.hexdigest()


def package_fingerprint(parts: Split, package: PackagePart) -> str:
    """A package part's digest: its files (through RECORD) and the Python version its bytecode and extension
    modules are for."""
    digest = hashlib.sha256(f"{FINGERPRINT_VERSION}\0package\0{package.name}\0{python_tag()}\0".encode())
    hash_tree(digest, parts.site_packages, recorded_files(parts.site_packages), keep=package.entries)
    return digest.hexdigest()


def jobcluster_fingerprint(parts: Split, package: Path) -> str:
    """The jobcluster part's digest: every file of the package directory ``package`` and of the site-packages
    entries of the part (its dist-info), by content."""
    digest = hashlib.sha256(f"{FINGERPRINT_VERSION}\0jobcluster\0{python_tag()}\0".encode())
    hash_tree(digest, package, set(), label=f"{package.name}/")
    editable = {e for e in parts.jobcluster if e.startswith("__editable__")}
    hash_tree(digest, parts.site_packages, set(), keep=parts.jobcluster - editable - {package.name})
    return digest.hexdigest()


def environment_fingerprint(prefix: Path, parts: Split) -> str:
    """The environment part's digest: the interpreter, every file of the venv outside the other parts (a file pip
    recorded through its RECORD), and the ``.pth`` that links the parts."""
    digest = hashlib.sha256(f"{FINGERPRINT_VERSION}\0environment\0{sys.version}\0{sys.platform}\0".encode())
    digest.update((parts_pth_text() + parts_module_text()).encode())
    sp_relative = parts.site_packages.relative_to(prefix).as_posix()
    covered = recorded_files(parts.site_packages, sp_relative)
    inside = f"{sp_relative}/"
    for relative, path in files(prefix):
        if relative.startswith(inside) and relative[len(inside) :].split("/", 1)[0] in parts.excluded:
            continue
        if relative.endswith(".dist-info/RECORD") or relative not in covered:
            hash_file(digest, relative, path)
    return digest.hexdigest()


def _normalize(name: str) -> str:
    """PEP 503 name normalization."""
    return re.sub(r"[-_.]+", "-", name).lower()
