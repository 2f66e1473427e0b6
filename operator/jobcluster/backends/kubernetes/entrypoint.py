"""KubernetesApplicationClusterEntrypoint: the JobManager pod's process, ``python -m jobcluster.backends.kubernetes.entrypoint``.

The JobClusterEntrypoint with the KubernetesResourceManagerDriver.  The
container's entry-point script (``entrypoints/jobmanager``, the image's
``<jobcluster.kubernetes.entrypoint.dir>/jobmanager``) copies the staged files
out of their ConfigMap, binds REST to the pod's IP, sets the environment of
``runtime/entrypoint/layout.py`` and ``exec``s this module.
"""

from __future__ import annotations

from jobcluster.backends.kubernetes.driver import create_driver
from jobcluster.runtime.entrypoint.bootstrap import run_entrypoint
from jobcluster.runtime.entrypoint.job_cluster_entrypoint import EntrypointContext

if __name__ == "__main__":
    run_entrypoint(EntrypointContext.from_env, create_driver)
