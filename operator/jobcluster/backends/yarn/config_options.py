"""The options of the ``yarn-application`` target: Flink's ``YarnConfigOptions`` keys and defaults.

Why here: as Flink keeps them in flink-yarn rather than flink-core, the options
only YARN reads live beside the YARN backend; ``backends/registry.py`` collects
them with every other option, so the client checks them before it deploys and
``make docs`` documents them.  Besides the ``yarn.*`` keys: Flink's
``env.hadoop.conf.dir`` (the client's Hadoop configuration), PyFlink's ``python.executable``
(the containers' Python), Flink's ``security.kerberos.login.*`` (a keytab login, which only the YARN target reads
so far) and jobcluster's own ``jobcluster.yarn.shared-files.retention`` and the operator's
``jobcluster.operator.yarn.client-jvms``.  :mod:`jobcluster.backends.yarn.options` reads them
for one deployment.
"""

from __future__ import annotations

from typing import Any

from jobcluster.config.config_option import ConfigOption, options_declared_in

YARN_APPLICATION_NAME = ConfigOption(
    "yarn.application.name",
    "str",
    None,
    description="Name of the YARN application. Unset: the job's name (pipeline.name).",
)
YARN_APPLICATION_QUEUE = ConfigOption(
    "yarn.application.queue",
    "str",
    None,
    description="YARN queue the application is submitted to. Unset: YARN's default queue. "
    "A queue the ResourceManager does not list only gives a warning (placement rules may create it), as in Flink.",
)
YARN_APPLICATION_PRIORITY = ConfigOption(
    "yarn.application.priority",
    "int",
    -1,
    description="Priority of the YARN application (a non-negative integer, larger is more urgent); -1 = YARN's default.",
)
YARN_APPLICATION_TYPE = ConfigOption(
    "yarn.application.type",
    "str",
    None,
    description="Application type shown by YARN; 'jobcluster list' finds job clusters by it. Unset: 'jobcluster'.",
)
YARN_APPLICATION_NODE_LABEL = ConfigOption(
    "yarn.application.node-label",
    "str",
    None,
    description="YARN node-label expression for the application's containers. Unset: no label.",
)
YARN_APPLICATION_ATTEMPTS = ConfigOption(
    "yarn.application-attempts",
    "int",
    None,
    description="Number of ApplicationMaster attempts (the first run plus restarts); also capped by YARN's "
    "yarn.resourcemanager.am.max-attempts. Unset: 1.",
)
YARN_APPMASTER_VCORES = ConfigOption(
    "yarn.appmaster.vcores",
    "int",
    1,
    description="Virtual cores of the ApplicationMaster (JobManager) container.",
)
YARN_CONTAINERS_VCORES = ConfigOption(
    "yarn.containers.vcores",
    "int",
    -1,
    description="Virtual cores of each TaskExecutor container when taskmanager.cpu.cores is unset; -1 = taskmanager.numberOfTaskSlots.",
)
YARN_TAGS = ConfigOption(
    "yarn.tags",
    "str",
    "",
    description="Comma-separated tags of the YARN application (jobcluster adds one carrying the JobID).",
)
YARN_STAGING_DIRECTORY = ConfigOption(
    "yarn.staging-directory",
    "str",
    None,
    description="Base directory on the default file system (HDFS) under which the client stages a job's files "
    "in .jobcluster/<application id>/. Unset: the user's HDFS home directory.",
)
YARN_HEARTBEAT_INTERVAL = ConfigOption(
    "yarn.heartbeat.interval",
    "int",
    5,
    deprecated_keys=("yarn.heartbeat-delay",),
    description="Time between the ApplicationMaster's heartbeats with the YARN ResourceManager, in whole "
    "seconds (Flink's unit for this key), while no container is requested.",
)
YARN_CONTAINER_REQUEST_HEARTBEAT_INTERVAL = ConfigOption(
    "yarn.heartbeat.container-request-interval",
    "duration",
    0.5,
    description="Time between heartbeats with the YARN ResourceManager while containers are requested "
    "(seconds; Flink duration syntax, a plain number is milliseconds): allocations arrive with heartbeats.",
)
YARN_APPLICATION_ID = ConfigOption(
    "yarn.application.id",
    "str",
    None,
    description="The YARN application of a running job cluster (application_<cluster timestamp>_<sequence>), "
    "for commands that act on it, like Flink's -yid.",
)
ENV_HADOOP_CONF_DIR = ConfigOption(
    "env.hadoop.conf.dir",
    "str",
    None,
    description="The client's Hadoop configuration directory (core-site.xml, yarn-site.xml, hdfs-site.xml); "
    "takes precedence over HADOOP_CONF_DIR and YARN_CONF_DIR (Flink's option). The containers use the "
    "NodeManagers' own configuration.",
)
YARN_WEBHDFS_URL = ConfigOption(
    "jobcluster.yarn.webhdfs.url",
    "str",
    None,
    description="The WebHDFS endpoint the client stages files through and reads HDFS with: a gateway such as HttpFS "
    "(http://httpfs.example.com:14000) or Apache Knox (https://knox.example.com:8443/gateway/<topology>), for a "
    "client that reaches neither the NameNode's HTTP port nor the DataNodes (WebHDFS writes go to a DataNode). Unset: "
    "the NameNode's dfs.namenode.http-address (every NameNode of an HA nameservice). The containers use the NameNode.",
)
YARN_RESOURCEMANAGER_API = ConfigOption(
    "jobcluster.yarn.resourcemanager.api",
    "str",
    "rpc",
    choices=("rpc", "rest"),
    description="How the client submits, lists and kills applications: rpc, Hadoop RPC to yarn.resourcemanager.address "
    "(YARN's Java client, in a JVM the client starts; Kerberos included); rest, the ResourceManager's REST API on its "
    "web port (yarn.resourcemanager.webapp.address), with no JVM, for a client that reaches only that port. rest acts "
    "as the client's Hadoop user (user.name), which the ResourceManager accepts only with Hadoop's HTTP authentication "
    "on (simple: hadoop.http.filter.initializers=org.apache.hadoop.security.AuthenticationFilterInitializer).",
)
YARN_JOBMANAGER_REST_ACCESS = ConfigOption(
    "jobcluster.yarn.jobmanager.rest-access",
    "str",
    "direct",
    choices=("direct", "web-proxy"),
    description="How the client reaches the JobManager's REST endpoint to follow, list, cancel, stop and savepoint the "
    "job: direct, at the host and port the ApplicationMaster registered (a NodeManager's, rest.bind-port); web-proxy, "
    "through YARN's web proxy on the ResourceManager's web port (the application's tracking URL), for a client that "
    "reaches no NodeManager. The proxy forwards only GET and PUT and no Authorization header: the client sends its "
    "changes as PUT and the cluster's token as the token query parameter.",
)
PYTHON_EXECUTABLE = ConfigOption(
    "python.executable",
    "str",
    None,
    fallback_keys=("jobcluster.yarn.python",),
    description="On YARN, the Python the containers run (PyFlink's key; jobcluster.yarn.python is its alias): an "
    "absolute path of a Python with jobcluster and pyspark installed on every node (nothing is shipped), or a path into "
    "one of python.archives (<name>/bin/python3.11: that interpreter runs the client's shipped environment). Unset: the "
    "client's own Python environment is packed, uploaded once to HDFS and shipped to the containers, which then need "
    "the client's Python at the same path.",
)
PYTHON_ARCHIVES = ConfigOption(
    "python.archives",
    "str",
    None,
    description="On YARN, archives unpacked into every container's working directory (PyFlink's key and format): "
    "comma-separated path[#name] entries, each a local file (uploaded once per content) or an hdfs:// file, unpacked "
    "into <name> (default: the archive's file name); .tar.gz, .tgz, .tar, .zip or .jar. With python.executable "
    "pointing into one (a relocatable CPython of the client's version, e.g. cpython.tar.gz#python with "
    "python.executable=python/bin/python3.11), the containers need no Python of their own.",
)

KERBEROS_LOGIN_KEYTAB = ConfigOption(
    "security.kerberos.login.keytab",
    "str",
    None,
    deprecated_keys=("security.keytab",),
    description="On a Kerberized YARN cluster: the absolute path of a keytab with the keys of "
    "security.kerberos.login.principal (Flink's key). The client logs in from it (no kinit needed) and checks it before "
    "anything is deployed; it is shipped to the ApplicationMaster only, private to the application (mode 600 in the "
    "staging directory, removed with it). Set both or neither; unset: the ticket cache (kinit).",
)
KERBEROS_LOGIN_PRINCIPAL = ConfigOption(
    "security.kerberos.login.principal",
    "str",
    None,
    deprecated_keys=("security.principal",),
    description="The Kerberos principal whose keys security.kerberos.login.keytab holds (alice@EXAMPLE.COM; without a "
    "realm, the default realm of krb5.conf). Flink's key.",
)

DELEGATION_TOKENS_ENABLED = ConfigOption(
    "security.delegation.tokens.enabled",
    "bool",
    True,
    deprecated_keys=("security.kerberos.fetch.delegation-token",),
    description="With a keytab login (security.kerberos.login.keytab) on a Kerberized YARN cluster: whether the JobManager "
    "obtains fresh HDFS delegation tokens from the shipped keytab before the current ones expire and hands them to the "
    "Spark driver, its executors and later TaskExecutor containers, so that a job outlives its tokens' maximum lifetime "
    "(Flink's DelegationTokenManager). false: the job runs on the client's tokens alone.",
)
DELEGATION_TOKENS_RENEWAL_TIME_RATIO = ConfigOption(
    "security.delegation.tokens.renewal.time-ratio",
    "double",
    0.75,
    positive=True,
    description="When the JobManager obtains new delegation tokens: this fraction of the time from now until the "
    "earliest of the current tokens must be renewed (Flink's key and default).",
)
DELEGATION_TOKENS_RENEWAL_RETRY_BACKOFF = ConfigOption(
    "security.delegation.tokens.renewal.retry.backoff",
    "duration",
    3600.0,
    positive=True,
    description="How long the JobManager waits before it tries again to obtain delegation tokens after a failure "
    "(seconds; Flink duration syntax; Flink's default, 1 h). The job keeps running on its current tokens meanwhile.",
)

OPERATOR_YARN_CLIENT_JVMS = ConfigOption(
    "jobcluster.operator.yarn.client-jvms",
    "int",
    2,
    description="The FlinkJob operator's bound on the YARN client JVMs it runs at once (read from its "
    "defaultConfiguration only): one per yarn-application deployment until its ApplicationMaster serves, one per "
    "removal. Each takes about 175 MiB of the operator pod's memory (measured: its RSS after ResourceManager calls): "
    "raise the chart's resources.limits.memory (768Mi: the operator's ~150 MiB and two JVMs) with it. A deployment "
    "or removal past the bound waits for one to end (5 min at most, then it is tried again).",
)

OPERATOR_YARN_HADOOP_USERS = ConfigOption(
    "jobcluster.operator.yarn.hadoop-users",
    "str",
    None,
    description="The Hadoop user the FlinkJob operator submits each namespace's yarn-application FlinkJobs as (read from its "
    "defaultConfiguration only), as 'namespace1:user1,namespace2:user2'; '*' stands for every namespace not listed. A "
    "FlinkJob of a namespace with no user is refused (HadoopUserNotMapped). Its staging directory, application and "
    "files on HDFS are that user's, so FlinkJobs of namespaces mapped to different users cannot read each other's.",
)

YARN_SHARED_FILES_RETENTION = ConfigOption(
    "jobcluster.yarn.shared-files.retention",
    "duration",
    7 * 86400.0,
    description="How long a file shared by the jobs on HDFS (the parts of the shipped Python environment and "
    "Flink's web dashboard, in <staging base>/.jobcluster/python/ and .jobcluster/dashboard/) is kept after a job "
    "last used it (seconds; Flink duration syntax). Pruned when a job cluster is deployed and by `jobcluster prune "
    "-t yarn-application`; a file that an active application of yarn.application.type may use is never removed.",
    positive=True,
)


#: Every option above, in documentation order.
YARN_OPTIONS: tuple[ConfigOption[Any], ...] = options_declared_in(globals())
