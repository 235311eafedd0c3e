package integration

import (
	"fmt"
	"strconv"

	berthv1 "github.com/berth-dev/berth/api/v1beta1"
)

// The pod-template annotations that ask for topology-aware placement,
// berth's; Kueue's (kueue.x-k8s.io/...) are honoured too.
const (
	RequiredTopologyAnnotation      = "berth.dev/podset-required-topology"
	PreferredTopologyAnnotation     = "berth.dev/podset-preferred-topology"
	UnconstrainedTopologyAnnotation = "berth.dev/podset-unconstrained-topology"
	SliceTopologyAnnotation         = "berth.dev/podset-slice-required-topology"
	SliceSizeAnnotation             = "berth.dev/podset-slice-size"
)

// annotation reads berth's annotation, else Kueue's of the same name; it
// says which it read.
func annotation(ann map[string]string, berth string) (key, value string, ok bool) {
	if v, ok := ann[berth]; ok {
		return berth, v, true
	}
	kueue := "kueue.x-k8s.io/" + berth[len("berth.dev/"):]
	v, ok := ann[kueue]
	return kueue, v, ok
}

// TopologyRequestOf reads a pod template's topology annotations: nil when
// it has none, an error naming the annotation when they are wrong.
func TopologyRequestOf(ann map[string]string) (*berthv1.TopologyRequest, error) {
	var out berthv1.TopologyRequest
	var modes []string
	if k, v, ok := annotation(ann, RequiredTopologyAnnotation); ok {
		if v == "" {
			return nil, fmt.Errorf("annotation %s is empty: it names a level (a node label of the Topology)", k)
		}
		out.Required, modes = &v, append(modes, k)
	}
	if k, v, ok := annotation(ann, PreferredTopologyAnnotation); ok {
		if v == "" {
			return nil, fmt.Errorf("annotation %s is empty: it names a level (a node label of the Topology)", k)
		}
		out.Preferred, modes = &v, append(modes, k)
	}
	if k, v, ok := annotation(ann, UnconstrainedTopologyAnnotation); ok {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return nil, fmt.Errorf("annotation %s=%q: want true or false", k, v)
		}
		if b {
			out.Unconstrained, modes = &b, append(modes, k)
		}
	}
	sk, sv, hasSlice := annotation(ann, SliceTopologyAnnotation)
	zk, zv, hasSize := annotation(ann, SliceSizeAnnotation)
	switch {
	case len(modes) > 1:
		return nil, fmt.Errorf("annotations %s and %s: set only one", modes[0], modes[1])
	case len(modes) == 0 && (hasSlice || hasSize):
		return nil, fmt.Errorf("annotation %s needs a required, preferred or unconstrained topology annotation too", map[bool]string{true: sk, false: zk}[hasSlice])
	case len(modes) == 0:
		return nil, nil
	case hasSlice != hasSize:
		return nil, fmt.Errorf("annotations %s and %s go together", SliceTopologyAnnotation, SliceSizeAnnotation)
	}
	if hasSlice {
		n, err := strconv.ParseInt(zv, 10, 32)
		if err != nil || n < 1 {
			return nil, fmt.Errorf("annotation %s=%q: want a whole number of pods, 1 or more", zk, zv)
		}
		if sv == "" {
			return nil, fmt.Errorf("annotation %s is empty: it names a level (a node label of the Topology)", sk)
		}
		size := int32(n)
		out.SliceRequiredLevel, out.SliceSize = &sv, &size
	}
	return &out, nil
}

// HasTopologyAnnotations reports whether a pod template asks for placement
// at all, rightly or not.
func HasTopologyAnnotations(ann map[string]string) bool {
	for _, a := range []string{RequiredTopologyAnnotation, PreferredTopologyAnnotation, UnconstrainedTopologyAnnotation,
		SliceTopologyAnnotation, SliceSizeAnnotation} {
		if _, _, ok := annotation(ann, a); ok {
			return true
		}
	}
	return false
}
