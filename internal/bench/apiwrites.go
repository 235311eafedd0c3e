package bench

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"k8s.io/client-go/kubernetes"
)

// writeVerbs are the verbs of kube-apiserver's apiserver_request_total that
// change what is stored.
var writeVerbs = map[string]bool{"POST": true, "PUT": true, "PATCH": true, "APPLY": true, "DELETE": true, "DELETECOLLECTION": true}

// writesOf reads kube-apiserver's request counters: the writes it has served
// so far, by anyone, by resource ("pods", "pods/binding", "workloads/status").
func writesOf(ctx context.Context, kube kubernetes.Interface) (map[string]float64, error) {
	raw, err := kube.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return nil, fmt.Errorf("reading kube-apiserver's /metrics: %w", err)
	}
	return parseWrites(string(raw)), nil
}

// parseWrites sums the write requests of apiserver_request_total, in the
// Prometheus text format, by resource and subresource.
func parseWrites(text string) map[string]float64 {
	out := map[string]float64{}
	for line := range strings.SplitSeq(text, "\n") {
		rest, ok := strings.CutPrefix(line, "apiserver_request_total{")
		if !ok {
			continue
		}
		end := strings.LastIndex(rest, "}")
		if end < 0 {
			continue
		}
		labels := parseLabels(rest[:end])
		v, err := strconv.ParseFloat(strings.TrimSpace(rest[end+1:]), 64)
		if err != nil || !writeVerbs[labels["verb"]] {
			continue
		}
		res := labels["resource"]
		if s := labels["subresource"]; s != "" {
			res += "/" + s
		}
		out[res] += v
	}
	return out
}

// parseLabels reads `a="x",b="y"`; values may hold escaped quotes.
func parseLabels(s string) map[string]string {
	out := map[string]string{}
	for s != "" {
		eq := strings.Index(s, `="`)
		if eq < 0 {
			break
		}
		key := strings.TrimLeft(s[:eq], ", ")
		s = s[eq+2:]
		var b strings.Builder
		i := 0
		for ; i < len(s) && s[i] != '"'; i++ {
			if s[i] == '\\' && i+1 < len(s) {
				i++
			}
			b.WriteByte(s[i])
		}
		out[key] = b.String()
		s = s[min(i+1, len(s)):]
	}
	return out
}

// writeRows lists writes per pod by resource, the largest first, for a
// summary: "pods 2.0, workloads/status 1.5, ...".
func writeRows(writes map[string]float64, pods int) string {
	keys := slices.SortedFunc(maps.Keys(writes), func(a, b string) int {
		if writes[a] != writes[b] {
			if writes[a] > writes[b] {
				return -1
			}
			return 1
		}
		return strings.Compare(a, b)
	})
	var parts []string
	for _, k := range keys {
		if per := writes[k] / float64(max(pods, 1)); per >= 0.05 {
			parts = append(parts, fmt.Sprintf("%s %.2f", k, per))
		}
	}
	return strings.Join(parts, ", ")
}

// writesRow is a summary's row of API writes per pod, when they were read.
func writesRow(b *strings.Builder, writes map[string]float64, pods int) {
	if writes == nil {
		return
	}
	var total float64
	for _, v := range writes {
		total += v
	}
	fmt.Fprintf(b, "| API writes per pod (by anyone; by resource) | %.2f (%s) |\n", total/float64(max(pods, 1)), writeRows(writes, pods))
}
