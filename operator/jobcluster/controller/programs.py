"""A FlinkJob's program as a PackagedProgram: inline source and ``http(s)://`` files fetched into a scratch dir.

``local:///path`` stays a URI (already in the image: never fetched, never
staged); inline source and fetched files become files that the descriptor
stages with the job (in the cluster's ConfigMap on Kubernetes, on HDFS on YARN).

Why URLs are restricted: the operator fetches from inside the cluster, with the
network reach of its pod, whatever URL a FlinkJob's author names; unchecked,
anyone allowed to create a FlinkJob could make it request in-cluster services
or cloud metadata endpoints.  So it fetches only URLs under the prefixes its
installer allows (``jobcluster operator --allow-program-url``, the chart's
``allowedProgramUrls``), none by default, and follows a redirect only to a URL
that is allowed too.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple
from urllib.parse import unquote, urljoin, urlsplit

import requests

from jobcluster.client.descriptor import PackagedProgram
from jobcluster.client.operator_hook import InvalidSpecError
from jobcluster.client.program import packaged_program
from jobcluster.controller.resource import JobSpec
from jobcluster.errors import JobGraphError

MAX_FETCH_BYTES = 1 << 20  # a program staged in a ConfigMap must fit its ~1 MiB; bigger ones belong in the image
FETCH_TIMEOUT = (5.0, 30.0)  # seconds: connect, read
MAX_REDIRECTS = 5  # as many hops as a CDN or artifact store needs; each is checked against the allowed prefixes
ALLOW_OPTION = "--allow-program-url"
CHART_VALUE = "allowedProgramUrls"
_DEFAULT_PORTS = {"http": 80, "https": 443}

Fetch = Callable[[str], bytes]


class _Location(NamedTuple):
    """An http(s) URL reduced to what decides where a request goes: scheme, host, port and path."""

    scheme: str
    host: str
    port: int
    path: str


def _location(url: str) -> _Location | None:
    """The location of ``url``; None when it is not a plain http(s) URL with a host, or when clients and
    servers could read it differently (backslashes, control characters or spaces, a bad port, ``.``/``..``
    or an encoded ``/`` or ``\\`` in a path segment), so that no prefix can be said to cover it."""
    if "\\" in url or any(ord(char) <= 0x20 or ord(char) == 0x7F for char in url):
        return None
    split = urlsplit(url)
    scheme = split.scheme.lower()
    try:
        port = split.port
    except ValueError:
        return None
    if scheme not in _DEFAULT_PORTS or not split.hostname:
        return None
    path = split.path or "/"
    if any(_unsafe_segment(unquote(segment)) for segment in path.split("/")):
        return None
    return _Location(scheme, split.hostname, port or _DEFAULT_PORTS[scheme], path)


def _unsafe_segment(segment: str) -> bool:
    """Whether a decoded path segment could move a server's reading of the path above where it appears."""
    return segment in (".", "..") or "/" in segment or "\\" in segment


@dataclass(frozen=True)
class UrlPrefix:
    """An allowed URL prefix: it covers a URL whose scheme, host and port are the prefix's and whose path is the
    prefix's path or below it, by whole segments (``https://h/jobs`` covers ``https://h/jobs/a.py``, not
    ``https://h/jobs-old/a.py``; ``https://h/jobs/`` only what is below ``/jobs/``)."""

    text: str
    location: _Location

    @classmethod
    def parse(cls, text: str) -> UrlPrefix:
        """The prefix ``text``.

        Raises:
            ValueError: ``text`` is not an http(s) URL with a host, or has a query, fragment or user info.
        """
        location = _location(text)
        split = urlsplit(text)
        if location is None or split.query or split.fragment or split.username is not None:
            raise ValueError(
                f"{text!r} is not a URL prefix: give an http:// or https:// URL with a host and, optionally, a path "
                "(no query, fragment or user), e.g. https://artifacts.example.com/jobs/"
            )
        return cls(text, location)

    def covers(self, url: str) -> bool:
        """Whether ``url`` is under this prefix (False for a URL :func:`_location` cannot read safely)."""
        location = _location(url)
        if location is None or location[:3] != self.location[:3]:
            return False
        base = self.location.path
        return location.path == base or location.path.startswith(base if base.endswith("/") else base + "/")


@dataclass(frozen=True)
class ProgramUrls:
    """The URL prefixes the operator fetches programs (and ``pyFiles``, ``jars``) from; none: it fetches nothing."""

    prefixes: tuple[UrlPrefix, ...] = ()

    @classmethod
    def of(cls, texts: Iterable[str]) -> ProgramUrls:
        """The allowlist of the prefixes ``texts``. Raises ValueError: see :meth:`UrlPrefix.parse`."""
        return cls(tuple(UrlPrefix.parse(text) for text in texts))

    def allows(self, url: str) -> bool:
        """Whether some prefix covers ``url``."""
        return any(prefix.covers(url) for prefix in self.prefixes)

    def check(self, url: str, redirected_from: str | None = None) -> str:
        """``url`` itself when it is allowed.

        Raises:
            InvalidSpecError: reason ``ProgramUrlNotAllowed``; the message names the allowed prefixes, the
                operator's option and chart value that allow more, and the alternatives in the spec.
        """
        if self.allows(url):
            return url
        allowed = ", ".join(prefix.text for prefix in self.prefixes) or "none: the operator fetches no URL"
        what = f"{redirected_from} redirects to {url}, which" if redirected_from else f"the URL {url}"
        raise InvalidSpecError(
            f"{what} is not under a URL prefix the operator may fetch programs from (allowed: {allowed}). "
            f"The operator's installer allows a prefix with {ALLOW_OPTION} PREFIX (Helm chart value {CHART_VALUE}); "
            "or put the program in the image (local:///path/in/image.py) or inline, as spec.job.source",
            reason="ProgramUrlNotAllowed",
        )

    def fetch(self, url: str) -> bytes:
        """The content at ``url``, at most :data:`MAX_FETCH_BYTES`, following up to :data:`MAX_REDIRECTS`
        redirects, each to an allowed URL.

        Raises:
            InvalidSpecError: ``ProgramUrlNotAllowed`` for ``url`` or a redirect not allowed (see :meth:`check`);
                ``ProgramNotFetched`` when it cannot be fetched (with the reason), redirects too often, or its
                content is larger.
        """
        current = self.check(url)
        for _ in range(MAX_REDIRECTS + 1):
            try:
                # redirects are followed here, not by requests, so that each hop is checked before it is requested
                with requests.get(current, timeout=FETCH_TIMEOUT, stream=True, allow_redirects=False) as response:
                    if response.is_redirect:
                        current = self.check(urljoin(current, response.headers["location"]), redirected_from=current)
                        continue
                    if not response.ok or response.status_code >= 300:
                        raise InvalidSpecError(
                            f"cannot fetch {current}: HTTP {response.status_code} {response.reason}",
                            reason="ProgramNotFetched",
                            transient=response.status_code >= 500 or response.status_code == 429,  # the server may recover
                        )
                    content = response.raw.read(MAX_FETCH_BYTES + 1, decode_content=True)
            except requests.RequestException as exc:
                raise InvalidSpecError(f"cannot fetch {current}: {exc}", reason="ProgramNotFetched", transient=True) from None
            if len(content) > MAX_FETCH_BYTES:
                raise InvalidSpecError(
                    f"{current} is larger than {MAX_FETCH_BYTES >> 20} MiB; put it in the image and give it as local:///path",
                    reason="ProgramNotFetched",
                )
            return bytes(content)
        raise InvalidSpecError(f"cannot fetch {url}: more than {MAX_REDIRECTS} redirects", reason="ProgramNotFetched")


# The operator process's allowlist: set once at its start (jobcluster operator), before any FlinkJob is reconciled.
_allowed = ProgramUrls()


def allow_program_urls(prefixes: Iterable[str]) -> ProgramUrls:
    """Make ``prefixes`` the URL prefixes :func:`fetch_url` fetches from (replacing any before); returns them.

    Raises:
        ValueError: a prefix that is not an http(s) URL with a host (see :meth:`UrlPrefix.parse`).
    """
    global _allowed
    _allowed = ProgramUrls.of(prefixes)
    return _allowed


def fetch_url(url: str) -> bytes:
    """The content at ``url`` under the operator's allowlist (:func:`allow_program_urls`); see :meth:`ProgramUrls.fetch`.

    Raises:
        InvalidSpecError: ``ProgramUrlNotAllowed`` or ``ProgramNotFetched``.
    """
    return _allowed.fetch(url)


def job_program(job: JobSpec, name: str, scratch: Path, fetch: Fetch = fetch_url) -> PackagedProgram:
    """The PackagedProgram of ``job``: inline ``source`` written as ``<name>.py``, URLs fetched, ``local://`` kept.

    Raises:
        InvalidSpecError: a URL that cannot be fetched, or a URI the client refuses.
    """
    if job.source is not None:
        script = scratch / f"{re.sub(r'[^A-Za-z0-9_]', '_', name)}.py"
        script.write_text(job.source)
        program = str(script)
    else:
        assert job.program is not None
        program = _local_copy(job.program, scratch, fetch)
    py_files = [_local_copy(uri, scratch / "py-files", fetch) for uri in job.py_files]
    jars = [_local_copy(uri, scratch / "jars", fetch) for uri in job.jars]
    try:
        return packaged_program(program, job.args, py_files, jars)
    except JobGraphError as exc:  # the client's words are the user's fix
        raise InvalidSpecError(str(exc)) from None


def _local_copy(uri: str, directory: Path, fetch: Fetch) -> str:
    """``uri`` itself for ``local://``; else the path of its fetched copy in ``directory``."""
    if uri.startswith("local://"):
        return uri
    file_name = posixpath.basename(urlsplit(uri).path) or "program.py"
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / file_name
    path.write_bytes(fetch(uri))
    return str(path)
