{{/* The operator's objects: <release>-operator ("jobcluster-operator" for the release the docs install). */}}
{{- define "jobcluster-operator.fullname" -}}
{{- printf "%s-operator" (.Release.Name | trimSuffix "-operator") | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "jobcluster-operator.labels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{- define "jobcluster-operator.selectorLabels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "jobcluster-operator.leaseName" -}}
{{- .Values.leaderElection.leaseName | default (include "jobcluster-operator.fullname" .) -}}
{{- end -}}

{{- define "jobcluster-operator.image" -}}
{{- printf "%s:%s" .Values.image.repository (.Values.image.tag | default .Chart.AppVersion) -}}
{{- end -}}

{{/* The operator pod's image: its own small one, unless it serves YARN (yarn.hadoopUsers), whose client needs the
job image's Java and Spark. */}}
{{- define "jobcluster-operator.operatorImage" -}}
{{- if .Values.yarn.hadoopUsers -}}
{{- include "jobcluster-operator.image" . -}}
{{- else -}}
{{- printf "%s:%s" .Values.operatorImage.repository (.Values.operatorImage.tag | default .Chart.AppVersion) -}}
{{- end -}}
{{- end -}}

{{/* The namespaces whose FlinkJobs the operator runs, as a JSON list; empty when it watches all of them
(watchAllNamespaces). Read with: include "jobcluster-operator.watchedNamespaces" . | fromJsonArray */}}
{{- define "jobcluster-operator.watchedNamespaces" -}}
{{- if .Values.watchAllNamespaces -}}[]{{- else -}}{{ toJson (compact (.Values.watchNamespaces | default list)) }}{{- end -}}
{{- end -}}

{{/* With all namespaces watched: the ClusterRole the operator binds the JobManager's ServiceAccount to in each
FlinkJob's namespace (empty when the chart creates no job ServiceAccounts or watches given namespaces). */}}
{{- define "jobcluster-operator.jobManagerClusterRole" -}}
{{- if and .Values.jobServiceAccount.create .Values.watchAllNamespaces -}}
{{- printf "%s-jobmanager" (include "jobcluster-operator.fullname" .) | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{/* What the JobManager pods may do in their namespace: the rules of manifests/rbac.yaml. */}}
{{- define "jobcluster-operator.jobManagerRules" -}}
- apiGroups: [""]
  resources: ["pods"]
  verbs: ["create", "delete", "get", "list", "watch"]
- apiGroups: [""]
  resources: ["configmaps"]
  verbs: ["get", "create"]
- apiGroups: ["apps"]
  resources: ["deployments"]
  verbs: ["get", "patch", "delete"]
{{- end -}}

{{/* The names of imagePullSecrets, ';'-separated (Flink's kubernetes.container.image.pull-secrets). */}}
{{- define "jobcluster-operator.pullSecretNames" -}}
{{- $names := list -}}
{{- range .Values.imagePullSecrets -}}
{{- $names = append $names .name -}}
{{- end -}}
{{- join ";" $names -}}
{{- end -}}

{{/* What the operator may do with FlinkJobs and the job clusters' objects (least privilege). */}}
{{- define "jobcluster-operator.namespacedRules" -}}
- apiGroups: [jobcluster.io]
  resources: [flinkjobs]
  verbs: [get, list, watch, patch, update, delete]
- apiGroups: [jobcluster.io]
  resources: [flinkjobs/status]
  verbs: [get, patch, update]
- apiGroups: [jobcluster.io]
  resources: [flinkjobs/finalizers]
  verbs: [update]
- apiGroups: [""]
  resources: [events]
  verbs: [create, patch]
- apiGroups: [events.k8s.io]
  resources: [events]
  verbs: [create, patch]
- apiGroups: [apps]
  resources: [deployments]
  verbs: [get, list, watch, create, delete]
- apiGroups: [apps]
  resources: [replicasets]
  verbs: [list]
- apiGroups: [""]
  resources: [services]
  verbs: [get, list, create, delete]
# watch: the job result a JobManager records as its job ends is the event that brings the operator's look forward
- apiGroups: [""]
  resources: [configmaps]
  verbs: [get, list, watch, create, delete]
# the Ingress of a FlinkJob's spec.ingress (or of the chart's ingress default); used only when one is configured
- apiGroups: [networking.k8s.io]
  resources: [ingresses]
  verbs: [get, list, create, delete]
# each cluster's Secret, created with its Deployment; never read: the operator derives the secrets from its key
- apiGroups: [""]
  resources: [secrets]
  verbs: [create]
- apiGroups: [""]
  resources: [pods]
  verbs: [get, list, watch]
{{- end -}}
