"""PipelineExecutor: deploys a JobGraph as a job cluster through a ClusterDescriptor.

The CLI picks the descriptor by ``execution.target`` from the backend registry;
this class does the target-independent part: size the cluster from the memory
model, refuse what Spark could not run before anything is deployed, deploy,
and return a JobClient.
"""

from __future__ import annotations

from jobcluster.client.descriptor import ClusterDescriptor, ClusterSpecification, PackagedProgram
from jobcluster.client.job_client import JobClient
from jobcluster.config import options
from jobcluster.config.configuration import Configuration
from jobcluster.jobgraph.model import JobGraph
from jobcluster.memory.jobmanager import job_manager_process_spec_from_config
from jobcluster.memory.managed import ManagedMemoryConsumers
from jobcluster.memory.size import MiB
from jobcluster.memory.taskexecutor import task_executor_process_spec_from_config
from jobcluster.spark.conf import user_spark_conf
from jobcluster.spark.parallelism import spark_parallelism
from jobcluster.spark.sizing import spark_sizing_for_job_manager, spark_sizing_for_task_executor


def cluster_specification(config: Configuration) -> ClusterSpecification:
    """Container sizes from the memory model, after checking what the cluster will give Spark.

    Raises:
        IllegalConfigurationError: Flink's memory model rejects the sizes or the managed
            memory consumer weights, the parallelism cannot be reached within
            ``slotmanager.number-of-slots.max``, or a ``spark.*`` key sets something the
            cluster decides.
        SparkError: a container misses Spark's minimums.
    """
    jm = job_manager_process_spec_from_config(config)
    tm = task_executor_process_spec_from_config(config)
    spark_sizing_for_job_manager(jm)
    spark_sizing_for_task_executor(tm, ManagedMemoryConsumers.from_config(config))
    spark_parallelism(config.get(options.PARALLELISM_DEFAULT), tm.num_slots, config.get(options.SLOT_MANAGER_MAX_SLOTS))
    user_spark_conf(config)
    return ClusterSpecification(
        master_memory_mib=jm.total_process // MiB,
        task_manager_memory_mib=tm.total_process // MiB,
        slots_per_task_manager=tm.num_slots,
    )


class PipelineExecutor:
    """Runs JobGraphs on the target of ``descriptor``."""

    def __init__(self, descriptor: ClusterDescriptor) -> None:
        self.descriptor = descriptor

    def execute(self, graph: JobGraph, program: PackagedProgram, config: Configuration) -> JobClient:
        spec = cluster_specification(config)
        cluster_client = self.descriptor.deploy_job_cluster(spec, graph, program, config)
        return JobClient(cluster_client, graph.job_id)
