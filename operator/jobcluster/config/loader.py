"""Loading the configuration: the conf dir's ``jobcluster.yaml`` and ``config.yaml``, then ``-D`` overrides.

Why this order: as in Flink, sizes and settings live in a configuration file
(the shipped one, or the user's conf dir), and the command line only
overrides.  A conf dir without the file is legal and means "only the built-in
defaults" — which, as in Flink, leaves the TaskManager memory unconfigured.

The conf dir may hold ``jobcluster.yaml``, Flink's ``config.yaml`` (the file
Flink 2 reads, and Flink 1.19+ beside the older ``flink-conf.yaml``), or both:
the keys are the same either way, and a key both files set to different values
is an error naming the two files, since neither the order nor a silent winner
would be what the user meant.  A file may use flat Flink keys
(``taskmanager.memory.process.size: 1728m``) or nested YAML (``taskmanager:
{memory: {process.size: 1728m}}``); nested mappings are flattened by joining
keys with dots, as Flink 2.x does.  Scalars become their text (``true``/``false``
for booleans), lists are joined with ``;``, and keys with an empty value are
ignored.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

from jobcluster.config.configuration import Configuration, value_to_text
from jobcluster.errors import IllegalConfigurationError

CONFIG_FILE_NAME = "jobcluster.yaml"
#: Flink's configuration file (Flink 2; Flink 1.19+ reads it before the legacy flink-conf.yaml), read beside ours.
FLINK_CONFIG_FILE_NAME = "config.yaml"
CONFIG_FILE_NAMES = (CONFIG_FILE_NAME, FLINK_CONFIG_FILE_NAME)
#: Environment variable naming the default conf dir (like Flink's FLINK_CONF_DIR).
CONF_DIR_ENV = "JOBCLUSTER_CONF_DIR"


def default_conf_dir() -> Path:
    """``$JOBCLUSTER_CONF_DIR`` if set and non-empty, else the conf dir shipped in the package."""
    from_env = os.environ.get(CONF_DIR_ENV, "").strip()
    if from_env:
        return Path(from_env)
    return Path(__file__).resolve().parent.parent / "conf"


def load_configuration(
    conf_dir: Path | str | None = None,
    dynamic_properties: Mapping[str, str] | None = None,
) -> Configuration:
    """Read ``conf_dir/jobcluster.yaml`` and ``conf_dir/config.yaml`` (those present) and apply ``dynamic_properties``
    on top.

    ``conf_dir=None`` means :func:`default_conf_dir`.

    Raises:
        IllegalConfigurationError: the conf dir does not exist or is not a
            directory, a file cannot be read, is not YAML, or is not a mapping,
            or the two files set one key to different values.
    """
    directory = Path(conf_dir) if conf_dir is not None else default_conf_dir()
    if not directory.is_dir():
        raise IllegalConfigurationError(f"The configuration directory '{directory}' does not exist or is not a directory.")
    config = Configuration()
    config.update(read_config_files(config_files(directory)))
    for key, value in (dynamic_properties or {}).items():
        config.set(key, value)
    return config


def config_files(directory: Path) -> list[Path]:
    """The configuration files present in ``directory``, ``jobcluster.yaml`` first."""
    return [directory / name for name in CONFIG_FILE_NAMES if (directory / name).is_file()]


def read_config_files(paths: list[Path]) -> dict[str, str]:
    """The keys of all ``paths`` together (see the module docstring).

    Raises:
        IllegalConfigurationError: a file is unusable (:func:`read_config_file`), or two set one key differently.
    """
    merged: dict[str, str] = {}
    origin: dict[str, Path] = {}
    for path in paths:
        for key, value in read_config_file(path).items():
            if key in merged and merged[key] != value:
                raise IllegalConfigurationError(
                    f"{key} is {merged[key]!r} in '{origin[key]}' and {value!r} in '{path}': set it in one of the two files"
                )
            merged[key], origin[key] = value, path
    return merged


def read_config_file(path: Path) -> dict[str, str]:
    """The flattened ``key -> text`` content of one YAML configuration file.

    Raises:
        IllegalConfigurationError: unreadable, not YAML, or not a mapping at the top.
    """
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as error:
        raise IllegalConfigurationError(f"Cannot read configuration file '{path}': {error}") from error
    try:
        document = yaml.safe_load(text)
    except yaml.YAMLError as error:
        raise IllegalConfigurationError(f"Configuration file '{path}' is not valid YAML: {error}") from error
    if document is None:
        return {}
    if not isinstance(document, Mapping):
        raise IllegalConfigurationError(
            f"Configuration file '{path}' must hold a mapping of keys to values, not a {type(document).__name__}."
        )
    flat: dict[str, str] = {}
    _flatten(document, "", flat)
    return flat


def _flatten(node: Mapping[Any, Any], prefix: str, into: dict[str, str]) -> None:
    for raw_key, value in node.items():
        key = f"{prefix}{raw_key}"
        if isinstance(value, Mapping):
            _flatten(value, f"{key}.", into)
        elif value is not None:
            into[key] = value_to_text(value)


def parse_dynamic_property(text: str) -> tuple[str, str]:
    """Split one ``-D`` argument ``key=value`` at the first ``=``.

    Blanks around the key and value are removed; the value may be empty.
    ``key`` alone is refused: it is most often a forgotten ``=value``, and
    guessing ``true`` would silently change an option the user meant to size.

    Raises:
        IllegalConfigurationError: no ``=``, or the key is empty.
    """
    key, separator, value = text.partition("=")
    key = key.strip()
    if not separator:
        raise IllegalConfigurationError(f"'{text}' has no '='; expected key=value, e.g. -D {key or 'key'}=value.")
    if not key:
        raise IllegalConfigurationError(f"'{text}' has no key; expected key=value.")
    return key, value.strip()
