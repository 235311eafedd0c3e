// Package config embeds the generated manifests (CRDs, RBAC) so that berth can
// install them itself: `berth up`, `berth install` and the tests all apply
// exactly what is committed here.
package config

import (
	"embed"
	"io/fs"
	"path"
	"sort"
)

//go:embed crd/bases/*.yaml rbac/role.yaml local/*.yaml
var manifests embed.FS

// CRDs returns the CustomResourceDefinition manifests, sorted by file name.
func CRDs() ([][]byte, error) { return readAll(manifests, "crd/bases") }

// LocalRBAC returns what the controller of a local control plane needs: its
// namespace, its roles (generated from the code's RBAC markers) and bindings
// to the user its client certificate names.
func LocalRBAC() ([][]byte, error) {
	ns, err := readAll(manifests, "local")
	if err != nil {
		return nil, err
	}
	roles, err := readAll(manifests, "rbac")
	if err != nil {
		return nil, err
	}
	// The namespace first: the Role lives in it. Bindings may precede roles.
	return append(ns, roles...), nil
}

func readAll(fsys embed.FS, dir string) ([][]byte, error) {
	entries, err := fs.ReadDir(fsys, dir)
	if err != nil {
		return nil, err
	}
	names := make([]string, 0, len(entries))
	for _, e := range entries {
		names = append(names, e.Name())
	}
	sort.Strings(names)
	out := make([][]byte, 0, len(names))
	for _, n := range names {
		data, err := fs.ReadFile(fsys, path.Join(dir, n))
		if err != nil {
			return nil, err
		}
		out = append(out, data)
	}
	return out, nil
}
