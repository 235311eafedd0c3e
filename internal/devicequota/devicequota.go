package devicequota

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/util/validation"
)

// Mappings maps a DeviceClass to the quota resource its devices count as.
type Mappings map[string]corev1.ResourceName

// Parse reads "RESOURCE=CLASS[,CLASS...][;RESOURCE=...]", the form of
// --device-class-mappings. A class maps to one resource only.
func Parse(s string) (Mappings, error) {
	m := Mappings{}
	if strings.TrimSpace(s) == "" {
		return m, nil
	}
	for _, entry := range strings.Split(s, ";") {
		res, classes, ok := strings.Cut(strings.TrimSpace(entry), "=")
		res = strings.TrimSpace(res)
		if !ok || res == "" || strings.TrimSpace(classes) == "" {
			return nil, fmt.Errorf("--device-class-mappings %q: %q is not RESOURCE=CLASS[,CLASS...]", s, entry)
		}
		if errs := validation.IsQualifiedName(res); len(errs) > 0 {
			return nil, fmt.Errorf("--device-class-mappings: resource %q: %s", res, strings.Join(errs, "; "))
		}
		for _, class := range strings.Split(classes, ",") {
			class = strings.TrimSpace(class)
			if errs := validation.IsDNS1123Subdomain(class); len(errs) > 0 {
				return nil, fmt.Errorf("--device-class-mappings: DeviceClass %q of %s: %s", class, res, strings.Join(errs, "; "))
			}
			if prev, dup := m[class]; dup {
				return nil, fmt.Errorf("--device-class-mappings: DeviceClass %s is mapped to both %s and %s", class, prev, res)
			}
			m[class] = corev1.ResourceName(res)
		}
	}
	return m, nil
}

// String is the flag form of m, resources and classes sorted.
func (m Mappings) String() string {
	byRes := map[corev1.ResourceName][]string{}
	for class, res := range m {
		byRes[res] = append(byRes[res], class)
	}
	var out []string
	for _, res := range slices.Sorted(maps.Keys(byRes)) {
		classes := byRes[res]
		slices.Sort(classes)
		out = append(out, string(res)+"="+strings.Join(classes, ","))
	}
	return strings.Join(out, ";")
}

// Templates looks up a ResourceClaimTemplate of the pod's namespace by name;
// false when there is none. A template is counted only once it carries
// Finalizer (Unkept until then).
type Templates func(name string) (*resourcev1.ResourceClaimTemplate, bool)

// Requests are the devices one pod with claims asks for, by quota resource,
// as whole numbers. An error names the claim and the field that cannot be
// counted; with no mappings there is nothing to count.
func (m Mappings) Requests(claims []corev1.PodResourceClaim, templates Templates) (map[corev1.ResourceName]int64, error) {
	if len(m) == 0 || len(claims) == 0 {
		return nil, nil
	}
	out := map[corev1.ResourceName]int64{}
	for _, c := range claims {
		at := fmt.Sprintf("resourceClaims[%s]", c.Name)
		switch {
		case c.ResourceClaimName != nil:
			return nil, fmt.Errorf("%s: resourceClaimName %s: a ResourceClaim shared by name is not counted against quota; use resourceClaimTemplateName", at, *c.ResourceClaimName)
		case c.ResourceClaimTemplateName == nil:
			return nil, fmt.Errorf("%s: names neither a ResourceClaimTemplate nor a ResourceClaim", at)
		}
		name := *c.ResourceClaimTemplateName
		t, ok := templates(name)
		if !ok {
			return nil, &MissingTemplate{Claim: c.Name, Name: name}
		}
		if !slices.Contains(t.Finalizers, Finalizer) {
			return nil, &Unkept{Claim: c.Name, Name: name}
		}
		at += " (ResourceClaimTemplate " + name + ")"
		for _, r := range t.Spec.Spec.Devices.Requests {
			res, n, err := m.request(r)
			if err != nil {
				return nil, fmt.Errorf("%s: spec.spec.devices.requests[%s]: %w", at, r.Name, err)
			}
			out[res] += n
		}
	}
	return out, nil
}

func (m Mappings) request(r resourcev1.DeviceRequest) (corev1.ResourceName, int64, error) {
	if len(r.FirstAvailable) > 0 || r.Exactly == nil {
		return "", 0, fmt.Errorf("firstAvailable (a list of alternatives) is not counted against quota yet; ask for exactly one DeviceClass")
	}
	e := r.Exactly
	res, ok := m[e.DeviceClassName]
	if !ok {
		return "", 0, fmt.Errorf("exactly.deviceClassName: DeviceClass %s is not mapped to a quota resource (berth controller --device-class-mappings)", e.DeviceClassName)
	}
	switch e.AllocationMode {
	case resourcev1.DeviceAllocationModeExactCount, "":
	default:
		return "", 0, fmt.Errorf("exactly.allocationMode: %s is not counted against quota; ask for an ExactCount", e.AllocationMode)
	}
	n := e.Count
	if n == 0 {
		n = 1 // the API server's default
	}
	return res, n, nil
}

// MissingTemplate is a claim whose ResourceClaimTemplate does not exist
// (yet): the pod could not start either, and counting waits for it.
type MissingTemplate struct{ Claim, Name string }

func (e *MissingTemplate) Error() string {
	return fmt.Sprintf("resourceClaims[%s]: ResourceClaimTemplate %s does not exist", e.Claim, e.Name)
}

// Unkept is a claim whose ResourceClaimTemplate does not have Finalizer
// yet: its devices are counted once berth has put it on, so that the
// template stays what was counted.
type Unkept struct{ Claim, Name string }

func (e *Unkept) Error() string {
	return fmt.Sprintf("resourceClaims[%s]: ResourceClaimTemplate %s: waiting for berth's finalizer %s, which keeps it as counted while workloads use it", e.Claim, e.Name, Finalizer)
}
