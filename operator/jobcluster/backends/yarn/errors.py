"""The YARN backend's errors, below the project's one hierarchy.

A deployment that fails is a :class:`~jobcluster.errors.DeploymentError`, so
the CLI reports it like any other target's; the subclasses say which part of
the YARN flow failed. The library error (py4j's Java exception, the ``hdfs``
package's HdfsError, an OSError) is chained as ``__cause__``.
"""

from __future__ import annotations

from jobcluster.errors import DeploymentError, IllegalConfigurationError, PlatformUnavailableError


class YarnConfigurationError(IllegalConfigurationError):
    """A ``yarn.*`` option or the Hadoop configuration directory is unusable; the message names the key."""


class YarnDeploymentError(DeploymentError):
    """The ResourceManager cannot run the job cluster as specified (Flink's YarnDeploymentException)."""


class StagingError(DeploymentError):
    """Files could not be staged on, read back from, or removed from the distributed file system."""


class PythonEnvironmentError(DeploymentError):
    """The Python environment for the containers could not be packed or shipped."""


class YarnClientError(DeploymentError):
    """A call to the YARN ResourceManager failed or it is unreachable."""


class YarnUnavailableError(YarnClientError, PlatformUnavailableError):
    """The ResourceManager did not answer, or answered 5xx: a later attempt may succeed."""
