{{/* The labels every object of berth's controller carries. */}}
{{- define "berth.labels" -}}
app.kubernetes.io/name: berth-controller
app.kubernetes.io/part-of: berth
{{- end }}

{{/* The selector of the controller's Pods. */}}
{{- define "berth.selector" -}}
app.kubernetes.io/name: berth-controller
{{- end }}

{{/* berth's image: the tag defaults to the chart's appVersion, with "+"
(not allowed in a tag) as "-", as make image tags it. */}}
{{- define "berth.image" -}}
{{ .Values.image.repository }}:{{ .Values.image.tag | default (.Chart.AppVersion | replace "+" "-") }}
{{- end }}

{{/* With cert-manager, its CA injector fills in caBundle from the
webhook's Certificate. */}}
{{- define "berth.caInjection" -}}
{{- if .Values.certManager.enabled -}}
annotations:
  cert-manager.io/inject-ca-from: {{ .Release.Namespace }}/berth-webhook
{{- end }}
{{- end }}

{{/* The kinds queued from configuration, as a YAML list:
controller.configuredKinds, then the kinds of each file
controller.configuredKindsOf names (kinds/<name>.yaml, berth's addons'). */}}
{{- define "berth.configuredKinds" -}}
{{- $kinds := .Values.controller.configuredKinds | default list -}}
{{- range .Values.controller.configuredKindsOf -}}
{{- $file := $.Files.Get (printf "kinds/%s.yaml" .) | fromYaml -}}
{{- if not $file.kinds -}}
{{- fail (printf "controller.configuredKindsOf: %q: the chart has no such kinds (ray, training-operator)" .) -}}
{{- end -}}
{{- $kinds = concat $kinds $file.kinds -}}
{{- end -}}
{{- toYaml $kinds -}}
{{- end }}
