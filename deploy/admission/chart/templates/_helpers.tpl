{{- define "kmultiarch-admission.name" -}}
{{- printf "%s" .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "kmultiarch-admission.labels" -}}
app.kubernetes.io/name: kmultiarch-admission
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{- define "kmultiarch-admission.selector" -}}
app.kubernetes.io/name: kmultiarch-admission
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}
