package configured

import (
	"fmt"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

// CheckSchema refuses a configuration whose paths the kind's CRD does not
// have, or has with another type: a path that is not there would be read as
// "not suspended" or "no pods", and berth would let objects run unqueued.
// Where the schema leaves fields open (x-kubernetes-preserve-unknown-fields,
// additionalProperties: true) the rest of a path is taken on trust.
func CheckSchema(c Compiled, crd *apiextensionsv1.CustomResourceDefinition) error {
	var version *apiextensionsv1.CustomResourceDefinitionVersion
	for i := range crd.Spec.Versions {
		if crd.Spec.Versions[i].Name == c.Version {
			version = &crd.Spec.Versions[i]
		}
	}
	what := fmt.Sprintf("%s (CustomResourceDefinition %s)", c.GVK.GroupKind(), crd.Name)
	switch {
	case crd.Spec.Group != c.Group || crd.Spec.Names.Kind != c.Kind:
		return fmt.Errorf("%s: defines %s, not %s", what, crd.Spec.Names.Kind+"."+crd.Spec.Group, c.GVK.GroupKind())
	case version == nil:
		return fmt.Errorf("%s: has no version %s", what, c.Version)
	case !version.Served:
		return fmt.Errorf("%s: version %s is not served", what, c.Version)
	case version.Schema == nil || version.Schema.OpenAPIV3Schema == nil:
		return fmt.Errorf("%s: version %s has no schema to check the paths against", what, c.Version)
	}
	root := version.Schema.OpenAPIV3Schema
	if _, err := find(root, c.Suspend, "boolean"); err != nil {
		return fmt.Errorf("%s: suspend: %w", what, err)
	}
	for i, ps := range c.PodSets {
		at := fmt.Sprintf("%s: podSets[%d]", what, i)
		in := root
		if ps.List != nil {
			list, err := find(root, ps.List, "array")
			if err != nil {
				return fmt.Errorf("%s.list: %w", at, err)
			}
			if list == nil {
				continue // open schema: the rest is taken on trust
			}
			if list.Items == nil || list.Items.Schema == nil {
				return fmt.Errorf("%s.list: %s: the schema does not say what its entries are", at, ps.List)
			}
			in = list.Items.Schema
			if _, err := find(in, ps.NameFrom, "string"); err != nil {
				return fmt.Errorf("%s.nameFrom: %w", at, err)
			}
		}
		if _, err := find(in, ps.Template, "object"); err != nil {
			return fmt.Errorf("%s.template: %w", at, err)
		}
		for _, f := range []struct {
			name string
			p    Path
		}{{"count", ps.Count}, {"minCount", ps.MinCount}, {"maxCount", ps.MaxCount}, {"podsPerCount", ps.PodsPerCount}} {
			if f.p == nil {
				continue
			}
			if _, err := find(in, f.p, "integer"); err != nil {
				return fmt.Errorf("%s.%s: %w", at, f.name, err)
			}
		}
	}
	for i, p := range c.Unsupported {
		if _, err := find(root, p, ""); err != nil {
			return fmt.Errorf("%s: unsupported[%d]: %w", what, i, err)
		}
	}
	for i, r := range c.Requires {
		if _, err := find(root, r.Path, ""); err != nil {
			return fmt.Errorf("%s: requires[%d].path: %w", what, i, err)
		}
	}
	for i, ps := range c.PodSets {
		if ps.When == nil {
			continue
		}
		if _, err := find(root, ps.When.Path, ""); err != nil {
			return fmt.Errorf("%s: podSets[%d].when.path: %w", what, i, err)
		}
	}
	if c.FinishedField != nil {
		if _, err := find(root, c.FinishedField, "string"); err != nil {
			return fmt.Errorf("%s: finished.field: %w", what, err)
		}
	}
	if version.Subresources == nil || version.Subresources.Status == nil {
		// Without it a namespace user could write the conditions that
		// finish an object's Workload while its pods run on.
		return fmt.Errorf("%s: version %s has no status subresource; berth reads how an object ended from its status, which only the kind's controller may then write", what, c.Version)
	}
	return nil
}

// find finds path in s, and checks its type is want ("": any). It returns
// the field's schema, or nil where the schema leaves the rest of the path
// open.
func find(s *apiextensionsv1.JSONSchemaProps, path Path, want string) (*apiextensionsv1.JSONSchemaProps, error) {
	for i, name := range path {
		if next, ok := s.Properties[name]; ok {
			s = &next
			continue
		}
		ap := s.AdditionalProperties
		switch {
		case ap != nil && ap.Schema != nil:
			s = ap.Schema // a map: name is one of its keys
		case (ap != nil && ap.Allows) || (s.XPreserveUnknownFields != nil && *s.XPreserveUnknownFields):
			return nil, nil
		default:
			return nil, fmt.Errorf("%s: the schema has no field %q at %s", path, name, orRoot(path[:i]))
		}
	}
	if want != "" && s.Type != want && !(s.Type == "" && s.XPreserveUnknownFields != nil && *s.XPreserveUnknownFields) {
		got := s.Type
		if got == "" {
			got = "untyped"
		}
		return nil, fmt.Errorf("%s: is %s in the schema, want %s", path, got, want)
	}
	return s, nil
}

func orRoot(p Path) string {
	if len(p) == 0 {
		return "the top"
	}
	return strings.Join(p, ".")
}
