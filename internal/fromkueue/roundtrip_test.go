package fromkueue

import (
	"reflect"
	"slices"
	"strconv"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/util/json"
)

// toKueue writes a berth object in Kueue v1beta2's form: its group and
// version, Kueue's names for renamed fields and values, and
// admissionChecksStrategy for a ClusterQueue's admissionChecks. Fields
// Kueue lacks stay as they are: this is the other half of the round trip,
// not a way back to Kueue.
func toKueue(obj map[string]any) map[string]any {
	kind := obj["kind"].(string)
	out := map[string]any{}
	for k, v := range obj {
		out[k] = v
	}
	out["apiVersion"] = Group + "/v1beta2"
	back := map[string]string{}
	for from, to := range renames[kind] {
		back[to] = from
	}
	if spec, ok := obj["spec"].(map[string]any); ok {
		out["spec"] = rename(kind, "spec", spec, back)
		if checks, ok := spec["admissionChecks"].([]any); ok && kind == "ClusterQueue" && len(checks) > 0 {
			s := out["spec"].(map[string]any)
			delete(s, "admissionChecks")
			var rules []any
			for _, c := range checks {
				rules = append(rules, map[string]any{"name": c})
			}
			s["admissionChecksStrategy"] = map[string]any{"admissionChecks": rules}
		}
	}
	return out
}

func rename(kind, path string, v any, back map[string]string) any {
	switch val := v.(type) {
	case map[string]any:
		out := map[string]any{}
		for k, sub := range val {
			name := k
			if from, ok := back[path+"."+k]; ok {
				name = from[len(path)+1:]
			}
			out[name] = rename(kind, path+"."+k, sub, back)
		}
		return out
	case []any:
		out := make([]any, len(val))
		for i, e := range val {
			out[i] = rename(kind, path, e, back)
		}
		return out
	case string:
		for from, to := range values[kind+" "+path] {
			if to == val {
				return from
			}
		}
	}
	return v
}

// gen makes a value for schema s from the fuzzer's bytes: each optional
// field present or not, lists and maps of up to two, enums from their
// values.
type gen struct {
	data []byte
	i    int
}

func (g *gen) next() byte {
	if g.i >= len(g.data) {
		return 0
	}
	g.i++
	return g.data[g.i-1]
}

func (g *gen) value(s *apiextensionsv1.JSONSchemaProps, depth int) any {
	switch {
	case s.XIntOrString:
		return strconv.Itoa(int(g.next() % 100)) // a quantity
	case len(s.Enum) > 0:
		var v any
		_ = json.Unmarshal(s.Enum[int(g.next())%len(s.Enum)].Raw, &v)
		return v
	}
	switch s.Type {
	case "object":
		out := map[string]any{}
		if len(s.Properties) == 0 {
			for i := range int(g.next() % 3) {
				out["k"+strconv.Itoa(i)] = "v" + strconv.Itoa(int(g.next()))
			}
			return out
		}
		var names []string
		for n := range s.Properties {
			names = append(names, n)
		}
		slices.Sort(names)
		for _, n := range names {
			if depth < 8 && g.next()%2 == 1 {
				p := s.Properties[n]
				out[n] = g.value(&p, depth+1)
			}
		}
		return out
	case "array":
		var out []any
		for range int(g.next() % 3) {
			out = append(out, g.value(s.Items.Schema, depth+1))
		}
		if out == nil {
			out = []any{}
		}
		return out
	case "integer":
		return int64(g.next())
	case "boolean":
		return g.next()%2 == 1
	}
	return "s" + strconv.Itoa(int(g.next()))
}

// FuzzRoundTrip: any berth object of a kind Import handles, written in
// Kueue's form and imported again, comes back whole, nothing dropped.
func FuzzRoundTrip(f *testing.F) {
	f.Add(uint8(4), []byte{1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 3, 1, 1, 1, 1})
	f.Add(uint8(1), []byte{1, 1, 0, 1, 1, 2, 1, 1, 1})
	f.Fuzz(func(t *testing.T, k uint8, data []byte) {
		kind := Kinds[int(k)%len(Kinds)]
		schema, err := schemaOf(kind)
		if err != nil {
			t.Fatal(err)
		}
		g := &gen{data: data}
		obj := map[string]any{"apiVersion": BerthAPIVersion, "kind": kind, "metadata": map[string]any{"name": "x"}}
		var names []string
		for n := range schema.Properties {
			names = append(names, n)
		}
		slices.Sort(names)
		for _, n := range names {
			if n == "apiVersion" || n == "kind" || n == "metadata" || n == "status" || g.next()%2 == 0 {
				continue
			}
			p := schema.Properties[n]
			obj[n] = g.value(&p, 0)
		}
		if kind == "Topology" {
			obj["spec"] = map[string]any{"levels": []any{map[string]any{"nodeLabel": "rack"}}}
		}
		got, err := Import(toKueue(obj))
		if err != nil {
			t.Fatalf("importing %v: %v", toKueue(obj), err)
		}
		if len(got.Dropped) > 0 || !reflect.DeepEqual(got.Object, obj) {
			t.Fatalf("round trip of %s lost something:\n berth:    %v\n kueue:    %v\n imported: %v\n dropped:  %v",
				kind, obj, toKueue(obj), got.Object, got.Dropped)
		}
	})
}
