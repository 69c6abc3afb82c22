{{/*
Helpers shared by the templates: names, labels, the image and the configuration texts.
*/}}

{{/* The chart name, overridable. */}}
{{- define "sidecar-injector.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* The full name: the release name, with the chart name unless the release already has it. */}}
{{- define "sidecar-injector.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{/* chart-version for the helm.sh/chart label. */}}
{{- define "sidecar-injector.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* The labels that select the injector's pods. */}}
{{- define "sidecar-injector.selectorLabels" -}}
app.kubernetes.io/name: {{ include "sidecar-injector.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{/* The labels of every object. */}}
{{- define "sidecar-injector.labels" -}}
helm.sh/chart: {{ include "sidecar-injector.chart" . }}
{{ include "sidecar-injector.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/component: sidecar-injector
app.kubernetes.io/part-of: sidecar-injector
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{/* Object names, each defaulting to a form of the full name. */}}
{{- define "sidecar-injector.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "sidecar-injector.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}
{{- define "sidecar-injector.serviceName" -}}
{{- default (include "sidecar-injector.fullname" .) .Values.service.name }}
{{- end }}
{{- define "sidecar-injector.webhookName" -}}
{{- default (include "sidecar-injector.fullname" .) .Values.webhook.name }}
{{- end }}
{{- define "sidecar-injector.injectorConfigMapName" -}}
{{- default (include "sidecar-injector.fullname" .) .Values.injectorConfig.name }}
{{- end }}
{{- define "sidecar-injector.meshConfigMapName" -}}
{{- default (printf "%s-mesh" (include "sidecar-injector.fullname" .)) .Values.meshConfig.name }}
{{- end }}
{{- define "sidecar-injector.caSecretName" -}}
{{- default (printf "%s-ca" (include "sidecar-injector.fullname" .)) .Values.certificates.caSecret }}
{{- end }}
{{- define "sidecar-injector.tlsSecretName" -}}
{{- default (printf "%s-tls" (include "sidecar-injector.fullname" .)) .Values.certificates.tlsSecret }}
{{- end }}
{{- define "sidecar-injector.leaseName" -}}
{{- printf "%s-leader" (include "sidecar-injector.fullname" .) }}
{{- end }}
{{/* Cluster-scoped objects carry the namespace, so two releases of the same name never collide. */}}
{{- define "sidecar-injector.clusterRoleName" -}}
{{- printf "%s-%s" (include "sidecar-injector.fullname" .) .Release.Namespace | trunc 253 }}
{{- end }}

{{/* The image reference: repository@digest, else repository:tag (tag defaults to appVersion). */}}
{{- define "sidecar-injector.image" -}}
{{- if .Values.image.digest }}
{{- printf "%s@%s" .Values.image.repository .Values.image.digest }}
{{- else }}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) }}
{{- end }}
{{- end }}

{{/* host:port for a listener; an IPv6 address is bracketed. */}}
{{- define "sidecar-injector.listen" -}}
{{- $host := index . 0 }}
{{- if contains ":" $host }}{{ printf "[%s]:%v" $host (index . 1) }}{{ else }}{{ printf "%s:%v" $host (index . 1) }}{{ end }}
{{- end }}

{{/*
The suffix of each webhook's name: Istio's in the istio mode (the drop-in), else one of our own
(FULLNAME.NAMESPACE.svc), so an istiod in the same cluster, which keeps the caBundle of
webhooks named *.sidecar-injector.istio.io, never touches ours.
*/}}
{{- define "sidecar-injector.webhookSuffix" -}}
{{- if eq .Values.webhook.namespaceSelection "istio" }}sidecar-injector.istio.io{{ else }}{{ include "sidecar-injector.fullname" . }}.{{ .Release.Namespace }}.svc{{ end }}
{{- end }}

{{/* sideEffects: Events are written for admissions that are not dry runs. */}}
{{- define "sidecar-injector.sideEffects" -}}
{{- if .Values.events }}NoneOnDryRun{{ else }}None{{ end }}
{{- end }}

{{/*
The `config` key of the injector ConfigMap: the chart's default configuration
(files/injector-config.yaml, the injector's embedded one) with the values' settings over it.
*/}}
{{- define "sidecar-injector.injectorConfig" -}}
{{- $base := .Files.Get "files/injector-config.yaml" | fromYaml }}
{{- $c := .Values.injectorConfig }}
{{- $templates := mustMergeOverwrite (dict) ($base.templates | default dict) $c.templates }}
{{- $out := dict "policy" $c.policy "defaultTemplates" $c.defaultTemplates "templates" $templates }}
{{- with $c.neverInjectSelector }}{{ $_ := set $out "neverInjectSelector" . }}{{ end }}
{{- with $c.alwaysInjectSelector }}{{ $_ := set $out "alwaysInjectSelector" . }}{{ end }}
{{- with $c.injectedAnnotations }}{{ $_ := set $out "injectedAnnotations" . }}{{ end }}
{{- with $c.aliases }}{{ $_ := set $out "aliases" . }}{{ end }}
{{- toYaml $out }}
{{- end }}

{{/* The `values` key: files/values.json with injectorConfig.values merged over it. */}}
{{- define "sidecar-injector.injectorValues" -}}
{{- $base := .Files.Get "files/values.json" | fromJson }}
{{- mustMergeOverwrite $base (deepCopy .Values.injectorConfig.values) | toPrettyJson }}
{{- end }}

{{/* The `mesh` key: files/mesh.yaml with meshConfig.mesh merged over it. */}}
{{- define "sidecar-injector.mesh" -}}
{{- $base := .Files.Get "files/mesh.yaml" | fromYaml }}
{{- mustMergeOverwrite $base (deepCopy .Values.meshConfig.mesh) | toYaml }}
{{- end }}
