"""A FlinkJob's program as a PackagedProgram: inline source and ``http(s)://`` files fetched into a scratch dir.

``local:///path`` stays a URI (already in the image: never fetched, never
staged); inline source and fetched files become files that the descriptor
stages with the job (in the cluster's ConfigMap on Kubernetes, on HDFS on YARN).
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Callable
from pathlib import Path
from urllib.parse import urlsplit

import requests

from jobcluster.client.descriptor import PackagedProgram
from jobcluster.client.operator_hook import InvalidSpecError
from jobcluster.client.program import packaged_program
from jobcluster.controller.resource import JobSpec
from jobcluster.errors import JobGraphError

MAX_FETCH_BYTES = 1 << 20  # a program staged in a ConfigMap must fit its ~1 MiB; bigger ones belong in the image
FETCH_TIMEOUT = (5.0, 30.0)  # seconds: connect, read

Fetch = Callable[[str], bytes]


def fetch_url(url: str) -> bytes:
    """The content at ``url``, at most :data:`MAX_FETCH_BYTES`.

    Raises:
        InvalidSpecError: the URL cannot be fetched (with the reason), or its content is larger.
    """
    try:
        with requests.get(url, timeout=FETCH_TIMEOUT, stream=True) as response:
            response.raise_for_status()
            content = response.raw.read(MAX_FETCH_BYTES + 1, decode_content=True)
    except requests.RequestException as exc:
        raise InvalidSpecError(f"cannot fetch {url}: {exc}", reason="ProgramNotFetched") from None
    if len(content) > MAX_FETCH_BYTES:
        raise InvalidSpecError(
            f"{url} is larger than {MAX_FETCH_BYTES >> 20} MiB; put it in the image and give it as local:///path",
            reason="ProgramNotFetched",
        )
    return bytes(content)


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
    try:
        return packaged_program(program, job.args, py_files)
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
