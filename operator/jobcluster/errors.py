"""The one error hierarchy of jobcluster.

Every layer raises its own subclass of :class:`JobClusterError`, and a
library error that caused it is chained as ``__cause__``, so the CLI can print
one clear line for any failure and still keep the full story in the logs.
"""


class JobClusterError(Exception):
    """Root of every error jobcluster raises on purpose.

    ``transient``: the failure may pass by itself (the platform did not answer, something the job needs is not
    there yet); the FlinkJob operator retries such a deployment with backoff, within the startup deadline, and
    fails a FlinkJob at once on any other.
    """

    transient = False


class IllegalConfigurationError(JobClusterError):
    """A configuration value is malformed or inconsistent (Flink's IllegalConfigurationException)."""


class JobGraphError(JobClusterError):
    """A JobGraph cannot be built, written or read back."""


class RpcError(JobClusterError):
    """A remote call failed: unreachable endpoint, timeout, or a refused call."""


class FencingTokenError(RpcError):
    """A call carried a stale or missing fencing token, or no valid cluster secret."""


class ResourceManagerError(JobClusterError):
    """The ResourceManager or one of its drivers failed."""


class SparkError(JobClusterError):
    """The Spark data plane could not be started or does not fit the memory model."""


class DeploymentError(JobClusterError):
    """A job cluster could not be deployed; nothing of it is left behind."""


class PlatformUnavailableError(DeploymentError):
    """The platform (the Kubernetes API server, YARN's ResourceManager) did not answer, or answered that it cannot
    serve now (HTTP 5xx, 429): it may answer a later attempt."""

    transient = True


class ClusterClientError(JobClusterError):
    """The client could not reach a cluster, or the cluster refused a request."""


class ClusterUnreachableError(ClusterClientError):
    """The cluster's REST API did not answer at all (connection refused, timed out)."""


class ClusterUnavailableError(ClusterUnreachableError):
    """The cluster's REST API answered that it cannot serve now (HTTP 5xx, 429): the same request may pass later."""


class NotFoundError(JobClusterError):
    """What a call named does not exist: an object of the platform (a Kubernetes 404), a job (Flink's REST 404)."""


class UnknownTaskExecutorError(NotFoundError):
    """No TaskExecutor of that ResourceID is registered at the ResourceManager (never was, or it ended)."""


class AlreadyExistsError(JobClusterError):
    """What a call was to create exists already (Kubernetes' 409 AlreadyExists); transient, as an object being
    deleted still holds its name until the garbage collector is done with it."""

    transient = True


class JobNotFoundError(ClusterClientError, NotFoundError):
    """No running cluster knows the requested job id."""


class JvmGatewayError(DeploymentError):
    """The py4j gateway JVM (Hadoop's Java clients) could not be started or stopped."""
