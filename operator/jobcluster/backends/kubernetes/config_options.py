"""The options of the ``kubernetes-application`` target: Flink's ``KubernetesConfigOptions`` keys and defaults.

Why here: as Flink keeps them in flink-kubernetes rather than flink-core, the
options only Kubernetes reads live beside the Kubernetes backend;
``backends/registry.py`` collects them with every other option, so the client
checks them before it deploys and ``make docs`` documents them.  Besides the
``kubernetes.*`` keys, jobcluster's own ``jobcluster.kubernetes.*``.
"""

from __future__ import annotations

from typing import Any

from jobcluster.config.config_option import ConfigOption, options_declared_in

KUBERNETES_CLUSTER_ID = ConfigOption(
    "kubernetes.cluster-id",
    "str",
    None,
    description="Name of the job cluster on Kubernetes: the JobManager Deployment's name and the prefix of every "
    "object of the cluster. At most 45 characters of [a-z0-9-], starting with a letter and ending with a letter or "
    "digit (a DNS-1035 label). Unset: 'jobcluster-' + the JobID.",
)
KUBERNETES_NAMESPACE = ConfigOption(
    "kubernetes.namespace",
    "str",
    "default",
    description="Namespace the job cluster's objects are created in.",
)
KUBERNETES_CONTEXT = ConfigOption(
    "kubernetes.context",
    "str",
    None,
    description="kubeconfig context to use. Unset: the kubeconfig's current context.",
)
KUBERNETES_CONFIG_FILE = ConfigOption(
    "kubernetes.config.file",
    "str",
    None,
    description="kubeconfig file of the client. Unset: as kubectl finds it ($KUBECONFIG, then ~/.kube/config), "
    "or the in-cluster service account.",
)
KUBERNETES_SERVICE_ACCOUNT = ConfigOption(
    "kubernetes.service-account",
    "str",
    "default",
    description="Service account of the JobManager and TaskManager pods, unless their own keys are set.",
)
KUBERNETES_JOB_MANAGER_SERVICE_ACCOUNT = ConfigOption(
    "kubernetes.jobmanager.service-account",
    "str",
    "default",
    fallback_keys=("kubernetes.service-account",),
    description="Service account of the JobManager pod. It needs the permissions of manifests/rbac.yaml "
    "(it creates, watches and deletes the TaskManager pods).",
)
KUBERNETES_TASK_MANAGER_SERVICE_ACCOUNT = ConfigOption(
    "kubernetes.taskmanager.service-account",
    "str",
    "default",
    fallback_keys=("kubernetes.service-account",),
    description="Service account of the TaskManager pods.",
)
KUBERNETES_CONTAINER_IMAGE = ConfigOption(
    "kubernetes.container.image.ref",
    "str",
    "jobcluster:0.1.0",
    deprecated_keys=("kubernetes.container.image",),
    description="Image of the JobManager and TaskManager containers (built from entrypoints/Dockerfile).",
)
KUBERNETES_CONTAINER_IMAGE_PULL_POLICY = ConfigOption(
    "kubernetes.container.image.pull-policy",
    "str",
    "IfNotPresent",
    description="Pull policy of the containers' image.",
    choices=("IfNotPresent", "Always", "Never"),
)
KUBERNETES_CONTAINER_IMAGE_PULL_SECRETS = ConfigOption(
    "kubernetes.container.image.pull-secrets",
    "str",
    "",
    description="Names of the Secrets (type kubernetes.io/dockerconfigjson, in kubernetes.namespace) the JobManager and "
    "TaskManager pods pull their image with, separated by ';', e.g. 'registry-a;registry-b' (Flink's option).",
)
KUBERNETES_ENTRYPOINT_DIR = ConfigOption(
    "jobcluster.kubernetes.entrypoint.dir",
    "str",
    "/opt/jobcluster/bin",
    description="Directory holding the 'jobmanager' and 'taskmanager' entry-point scripts (entrypoints/) where the "
    "pods run; the containers' command is '<dir>/jobmanager' or '<dir>/taskmanager'.",
)
KUBERNETES_JOB_MANAGER_CPU = ConfigOption(
    "kubernetes.jobmanager.cpu.amount",
    "double",
    1.0,
    description="CPU request of the JobManager pod (cores).",
    positive=True,
)
KUBERNETES_JOB_MANAGER_CPU_LIMIT_FACTOR = ConfigOption(
    "kubernetes.jobmanager.cpu.limit-factor",
    "double",
    1.0,
    description="The JobManager pod's CPU limit = its request x this factor (at least 1).",
    minimum=1,
)
KUBERNETES_JOB_MANAGER_MEMORY_LIMIT_FACTOR = ConfigOption(
    "kubernetes.jobmanager.memory.limit-factor",
    "double",
    1.0,
    description="The JobManager pod's memory limit = its request (jobmanager.memory.process.size) x this factor (at least 1).",
    minimum=1,
)
KUBERNETES_TASK_MANAGER_CPU = ConfigOption(
    "kubernetes.taskmanager.cpu.amount",
    "double",
    -1.0,
    description="CPU request of a TaskManager pod (cores), used when taskmanager.cpu.cores is unset; "
    "not positive: taskmanager.numberOfTaskSlots.",
)
KUBERNETES_TASK_MANAGER_CPU_LIMIT_FACTOR = ConfigOption(
    "kubernetes.taskmanager.cpu.limit-factor",
    "double",
    1.0,
    description="A TaskManager pod's CPU limit = its request x this factor (at least 1).",
    minimum=1,
)
KUBERNETES_TASK_MANAGER_MEMORY_LIMIT_FACTOR = ConfigOption(
    "kubernetes.taskmanager.memory.limit-factor",
    "double",
    1.0,
    description="A TaskManager pod's memory limit = its request (the TaskExecutor's Total Process Memory) x this factor (at least 1).",
    minimum=1,
)
KUBERNETES_JOB_MANAGER_LABELS = ConfigOption(
    "kubernetes.jobmanager.labels",
    "str",
    None,
    description="Extra labels of the JobManager Deployment and pod, as 'key1:value1,key2:value2'.",
)
KUBERNETES_TASK_MANAGER_LABELS = ConfigOption(
    "kubernetes.taskmanager.labels",
    "str",
    None,
    description="Extra labels of the TaskManager pods, as 'key1:value1,key2:value2'.",
)
KUBERNETES_JOB_MANAGER_ANNOTATIONS = ConfigOption(
    "kubernetes.jobmanager.annotations",
    "str",
    None,
    description="Annotations of the JobManager pod, as 'key1:value1,key2:value2'.",
)
KUBERNETES_TASK_MANAGER_ANNOTATIONS = ConfigOption(
    "kubernetes.taskmanager.annotations",
    "str",
    None,
    description="Annotations of the TaskManager pods, as 'key1:value1,key2:value2'.",
)
KUBERNETES_JOB_MANAGER_NODE_SELECTOR = ConfigOption(
    "kubernetes.jobmanager.node-selector",
    "str",
    None,
    description="Node selector of the JobManager pod, as 'key1:value1,key2:value2'.",
)
KUBERNETES_TASK_MANAGER_NODE_SELECTOR = ConfigOption(
    "kubernetes.taskmanager.node-selector",
    "str",
    None,
    description="Node selector of the TaskManager pods, as 'key1:value1,key2:value2'.",
)
KUBERNETES_JOB_MANAGER_TOLERATIONS = ConfigOption(
    "kubernetes.jobmanager.tolerations",
    "str",
    None,
    description="Tolerations of the JobManager pod, ';'-separated, each 'key:k,operator:Equal,value:v,effect:NoSchedule' "
    "(fields of a Kubernetes toleration; tolerationSeconds an integer).",
)
KUBERNETES_TASK_MANAGER_TOLERATIONS = ConfigOption(
    "kubernetes.taskmanager.tolerations",
    "str",
    None,
    description="Tolerations of the TaskManager pods, in the form of kubernetes.jobmanager.tolerations.",
)
KUBERNETES_REST_SERVICE_EXPOSED_TYPE = ConfigOption(
    "kubernetes.rest-service.exposed.type",
    "str",
    "ClusterIP",
    description="Type of the REST Service '<cluster-id>-rest'. Headless_ClusterIP is a ClusterIP Service without a cluster IP.",
    choices=("ClusterIP", "NodePort", "LoadBalancer", "Headless_ClusterIP"),
)
KUBERNETES_REST_ENDPOINT = ConfigOption(
    "jobcluster.kubernetes.rest.endpoint",
    "str",
    "pod-ip",
    description="How the client reaches the job cluster's REST API: 'pod-ip' = the JobManager pod's IP and rest.port, "
    "and when that IP cannot be reached from the client (off the pod network), a local port-forward through the API "
    "server's pods/portforward; 'port-forward' = always that port-forward; 'service' = the REST Service "
    "'<cluster-id>-rest' by kubernetes.rest-service.exposed.type, as Flink's client does.",
    choices=("pod-ip", "port-forward", "service"),
)
KUBERNETES_INGRESS_TEMPLATE = ConfigOption(
    "jobcluster.kubernetes.ingress.template",
    "str",
    None,
    description="An Ingress '<cluster-id>' to the REST Service, from this template (the Flink Kubernetes Operator's "
    "spec.ingress.template): {{name}} and {{namespace}} are replaced by the cluster id and the namespace; the part "
    "before the first '/' is the rule's host, the rest the path (pathType ImplementationSpecific), e.g. "
    "'flink.example.com/{{namespace}}/{{name}}(/|$)(.*)', '{{name}}.{{namespace}}.flink.example.com' (path '/', "
    "Prefix) or '/{{namespace}}/{{name}}(/|$)(.*)' (any host). Unset or blank: no Ingress. Needs an ingress "
    "controller in the cluster.",
)
KUBERNETES_INGRESS_CLASS_NAME = ConfigOption(
    "jobcluster.kubernetes.ingress.class-name",
    "str",
    None,
    description="ingressClassName of the Ingress (jobcluster.kubernetes.ingress.template), e.g. 'nginx'. Unset: the "
    "cluster's default IngressClass.",
)
KUBERNETES_INGRESS_ANNOTATIONS = ConfigOption(
    "jobcluster.kubernetes.ingress.annotations",
    "str",
    None,
    description="Annotations of the Ingress, as 'key1:value1,key2:value2', e.g. 'nginx.ingress.kubernetes.io/rewrite-target:/$2'.",
)
KUBERNETES_INGRESS_LABELS = ConfigOption(
    "jobcluster.kubernetes.ingress.labels",
    "str",
    None,
    description="Extra labels of the Ingress, as 'key1:value1,key2:value2'.",
)
KUBERNETES_INGRESS_TLS = ConfigOption(
    "jobcluster.kubernetes.ingress.tls",
    "str",
    None,
    description="The Ingress's spec.tls, as a JSON list of {hosts, secretName}, e.g. "
    '\'[{"hosts": ["flink.example.com"], "secretName": "flink-tls"}]\'.',
)
KUBERNETES_JOB_MANAGER_STARTUP_TIMEOUT = ConfigOption(
    "jobcluster.kubernetes.jobmanager.startup-timeout",
    "duration",
    300.0,
    description="Time the client waits for the JobManager pod to run and serve REST (seconds; includes scheduling "
    "and pulling the image); the cluster is deleted when it does not.",
    positive=True,
)
KUBERNETES_JOB_MANAGER_ATTEMPTS = ConfigOption(
    "jobcluster.kubernetes.jobmanager.attempts",
    "int",
    3,
    description="How many times the JobManager may start within jobcluster.kubernetes.jobmanager.attempts-interval, "
    "its first start included, as YARN bounds ApplicationMaster attempts (yarn.application-attempts with "
    "yarn.application-attempt-failures-validity-interval). The Deployment starts it again when its pod is deleted, "
    "evicted or lost with its node, or its container exits or is OOM-killed; each start runs the job again (a batch "
    "job from its beginning, a streaming job from its checkpoints). One start more fails the job with the count and "
    "removes the cluster.",
    positive=True,
)
KUBERNETES_JOB_MANAGER_ATTEMPTS_INTERVAL = ConfigOption(
    "jobcluster.kubernetes.jobmanager.attempts-interval",
    "duration",
    600.0,
    description="The window of jobcluster.kubernetes.jobmanager.attempts (seconds): starts longer ago no longer "
    "count, so a long streaming job survives node losses spread over time.",
    positive=True,
)
KUBERNETES_JOB_MANAGER_OWNER_REFERENCE = ConfigOption(
    "kubernetes.jobmanager.owner.reference",
    "str",
    None,
    description="Owners of the JobManager Deployment, ';'-separated, each 'apiVersion:v1,kind:K,name:n,uid:u' "
    "(optionally controller:true, blockOwnerDeletion:true). Deleting an owner deletes the whole job cluster.",
)
KUBERNETES_SECRETS = ConfigOption(
    "kubernetes.secrets",
    "str",
    None,
    description="Secrets of the namespace mounted read-only in the JobManager and TaskManager containers, as "
    "'foo:/opt/secrets-foo,bar:/opt/secrets-bar' (a file per key). For credentials: never put them in the configuration.",
)
KUBERNETES_ENV_SECRET_KEY_REF = ConfigOption(
    "kubernetes.env.secretKeyRef",
    "str",
    None,
    description="Environment variables of the JobManager and TaskManager containers set from Secrets of the namespace, "
    "';'-separated, each 'env:FOO_ENV,secret:foo_secret,key:foo_key'.",
)
KUBERNETES_POD_TEMPLATE_FILE = ConfigOption(
    "kubernetes.pod-template-file.default",
    "str",
    None,
    deprecated_keys=("kubernetes.pod-template-file",),
    description="Pod template (a YAML Pod) for the JobManager and TaskManager pods, unless their own keys are set. "
    "The main container is the one named 'jobcluster-main-container'.",
)
KUBERNETES_JOB_MANAGER_POD_TEMPLATE_FILE = ConfigOption(
    "kubernetes.pod-template-file.jobmanager",
    "str",
    None,
    fallback_keys=("kubernetes.pod-template-file.default",),
    deprecated_keys=("kubernetes.pod-template-file",),
    description="Pod template of the JobManager pod.",
)
KUBERNETES_TASK_MANAGER_POD_TEMPLATE_FILE = ConfigOption(
    "kubernetes.pod-template-file.taskmanager",
    "str",
    None,
    fallback_keys=("kubernetes.pod-template-file.default",),
    deprecated_keys=("kubernetes.pod-template-file",),
    description="Pod template of the TaskManager pods.",
)


#: Every option above, in documentation order.
KUBERNETES_OPTIONS: tuple[ConfigOption[Any], ...] = options_declared_in(globals())
