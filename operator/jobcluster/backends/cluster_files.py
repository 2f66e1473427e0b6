"""The files of a job cluster, defined once: every target stages the same ones under the same names.

What a JobManager reads from its cluster directory (``runtime/entrypoint/layout.py``):
the program and its artifacts under ``artifacts/``, the serialized JobGraph, the
effective configuration, and the cluster's secret. A ClusterDescriptor only decides
*where* they go (a private local directory, HDFS as LocalResources, a ConfigMap), and
how the one private file travels (YARN: a PRIVATE LocalResource; Kubernetes: the
cluster's Secret; local: a 0600 file of the 0700 cluster directory).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import yaml

from jobcluster.client.descriptor import PackagedProgram
from jobcluster.client.program import staged_files
from jobcluster.config.configuration import Configuration
from jobcluster.jobgraph.model import JobGraph
from jobcluster.runtime.entrypoint import layout


@dataclass(frozen=True)
class StagedFile:
    """One file of the cluster directory: ``name`` relative to it, and either ``data`` or ``source`` (a client file
    staged as it is, e.g. uploaded without reading it into memory). ``private``: the cluster secret, which never goes
    where the other files go when the platform has a private channel."""

    name: str
    data: bytes | None = None
    source: Path | None = None
    private: bool = False

    def read(self) -> bytes:
        """The file's content (``source`` is read now); raises OSError."""
        if self.data is not None:
            return self.data
        assert self.source is not None, f"{self.name} has neither data nor source"
        return self.source.read_bytes()


def cluster_files(graph: JobGraph, program: PackagedProgram, config: Configuration, secret: str) -> list[StagedFile]:
    """The files to stage for one job cluster, in order: the program's files, the JobGraph, the configuration, the secret."""
    files = [StagedFile(f"{layout.ARTIFACTS_DIR}/{path.name}", source=path) for path in staged_files(program)]
    files.append(StagedFile(layout.JOB_GRAPH_FILE, graph.model_dump_json(indent=2).encode()))
    files.append(StagedFile(layout.CONFIG_FILE, yaml.safe_dump(config.to_dict(), sort_keys=True).encode()))
    files.append(StagedFile(layout.SECRET_FILE, secret.encode(), private=True))
    return files
