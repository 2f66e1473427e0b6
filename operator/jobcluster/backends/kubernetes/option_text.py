"""Flink's text forms of map and list-of-map options, read into plain dicts.

Flink writes a map option as ``key1:value1,key2:value2`` and a list of maps
as such maps separated by ``;`` (``ConfigurationUtils.convertToProperties`` and
the ``kubernetes.*.tolerations`` / ``kubernetes.jobmanager.owner.reference``
docs).  A value may itself hold ``:`` (everything after the first one is the
value), never ``,`` or ``;``.
"""

from __future__ import annotations

from jobcluster.config.config_option import ConfigOption
from jobcluster.config.configuration import Configuration
from jobcluster.errors import IllegalConfigurationError

MAP_FORM = "'key1:value1,key2:value2'"


def parse_map(key: str, text: str) -> dict[str, str]:
    """``key1:value1,key2:value2`` → ``{"key1": "value1", "key2": "value2"}``; blank text → ``{}``.

    Raises:
        IllegalConfigurationError: an entry without ``:`` or with an empty key; names ``key``.
    """
    result: dict[str, str] = {}
    for entry in (part.strip() for part in text.split(",")):
        if not entry:
            continue
        name, sep, value = entry.partition(":")
        if not sep or not name.strip():
            raise IllegalConfigurationError(f"{key}: '{text}' is not a map; expected {MAP_FORM} (entry '{entry}' has no 'key:').")
        result[name.strip()] = value.strip()
    return result


def parse_map_list(key: str, text: str) -> list[dict[str, str]]:
    """``k:v,k:v;k:v`` → a list of maps (see :func:`parse_map`), empty items skipped."""
    return [parse_map(key, item) for item in text.split(";") if item.strip()]


def map_option(config: Configuration, option: ConfigOption[str | None]) -> dict[str, str]:
    """The map a ``str`` option holds in Flink's map form; ``{}`` when unset."""
    text = config.get(option)
    return {} if text is None else parse_map(option.key, text)


def map_list_option(config: Configuration, option: ConfigOption[str | None]) -> list[dict[str, str]]:
    """The list of maps a ``str`` option holds in Flink's form; ``[]`` when unset."""
    text = config.get(option)
    return [] if text is None else parse_map_list(option.key, text)
