{{/* The operator's objects: <release>-operator ("jobcluster-operator" for the release the README installs). */}}
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

{{- define "jobcluster-operator.image" -}}
{{- printf "%s:%s" .Values.image.repository (.Values.image.tag | default .Chart.AppVersion) -}}
{{- end -}}

{{/* Namespaces where the job clusters' ServiceAccount and Role go: the watched ones, else the release's. */}}
{{- define "jobcluster-operator.jobNamespaces" -}}
{{- if .Values.watchNamespaces -}}
{{- join "," .Values.watchNamespaces -}}
{{- else -}}
{{- .Release.Namespace -}}
{{- end -}}
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
- apiGroups: [""]
  resources: [services, configmaps]
  verbs: [get, list, create, delete]
- apiGroups: [""]
  resources: [secrets]
  verbs: [get, create]
- apiGroups: [""]
  resources: [pods]
  verbs: [get, list, watch]
{{- end -}}
