"""The cluster id: the JobManager Deployment's name and the prefix of every object of a job cluster.

Why 45 characters and DNS-1035: the id becomes the Service ``<cluster-id>-rest``,
whose name must be a DNS-1035 label of at most 63 characters, and Flink caps the
id at 45 (``Constants.MAXIMUM_CHARACTERS_OF_CLUSTER_ID``) so that every derived
name fits.  Flink leaves the format to the API server; checking it here gives the
error before anything is created.
"""

from __future__ import annotations

import re

from jobcluster.backends.kubernetes.config_options import KUBERNETES_CLUSTER_ID
from jobcluster.config.configuration import Configuration
from jobcluster.errors import IllegalConfigurationError

MAX_CLUSTER_ID_LENGTH = 45
DEFAULT_CLUSTER_ID_PREFIX = "jobcluster-"
DNS_1035_LABEL = re.compile(r"[a-z]([-a-z0-9]*[a-z0-9])?")


def check_cluster_id(cluster_id: str) -> str:
    """``cluster_id`` itself when it is a valid cluster id.

    Raises:
        IllegalConfigurationError: blank, longer than 45 characters, or not a
            DNS-1035 label (lowercase letters, digits and '-', starting with a
            letter, ending with a letter or digit); the message names
            ``kubernetes.cluster-id`` and the rule broken.
    """
    key = KUBERNETES_CLUSTER_ID.key
    if not cluster_id.strip():
        raise IllegalConfigurationError(f"{key} must not be blank.")
    if len(cluster_id) > MAX_CLUSTER_ID_LENGTH:
        raise IllegalConfigurationError(
            f"{key} '{cluster_id}' is {len(cluster_id)} characters long; it must be no more than {MAX_CLUSTER_ID_LENGTH} characters."
        )
    if not DNS_1035_LABEL.fullmatch(cluster_id):
        raise IllegalConfigurationError(
            f"{key} '{cluster_id}' is not a valid cluster id: it must consist of lowercase letters, digits and '-', "
            "start with a letter and end with a letter or digit (a DNS-1035 label, regex '[a-z]([-a-z0-9]*[a-z0-9])?')."
        )
    return cluster_id


def default_cluster_id(job_id: str) -> str:
    """``jobcluster-<job id>`` cut to 45 characters (Flink: ``flink-cluster-<id>``), always a valid id."""
    return check_cluster_id((DEFAULT_CLUSTER_ID_PREFIX + job_id.lower())[:MAX_CLUSTER_ID_LENGTH].rstrip("-"))


def cluster_id_from_config(config: Configuration, job_id: str) -> str:
    """``kubernetes.cluster-id`` if set (checked), else the default derived from ``job_id``.

    Raises:
        IllegalConfigurationError: see :func:`check_cluster_id`.
    """
    configured = config.get(KUBERNETES_CLUSTER_ID)
    return default_cluster_id(job_id) if configured is None else check_cluster_id(configured)
