// Package config embeds the generated manifests (CRDs, RBAC) so that berth can
// install them itself: `berth up`, `berth install` and the tests all apply
// exactly what is committed here.
package config

import (
	"embed"
	"errors"
	"io/fs"
	"path"
	"sort"
)

//go:embed crd/bases/*.yaml rbac/role.yaml rbac/users.yaml local/*.yaml sim/crd/*.yaml sim/rbac/role.yaml
var manifests embed.FS

//go:embed addons/*/crd/*.yaml addons/*/rbac/role.yaml addons/*/local.yaml addons/*/kinds.yaml
var addons embed.FS

// CRDs returns the CustomResourceDefinition manifests, sorted by file name:
// berth's, then the simulator's (KWOK's Stage).
func CRDs() ([][]byte, error) {
	crds, err := readAll(manifests, "crd/bases")
	if err != nil {
		return nil, err
	}
	sim, err := SimCRDs()
	return append(crds, sim...), err
}

// SimCRDs returns only the simulator's CustomResourceDefinitions.
func SimCRDs() ([][]byte, error) { return readAll(manifests, "sim/crd") }

// LocalRBAC returns what the controller and the simulator of a local control
// plane need: the controller's namespace, their roles (generated from the
// code's RBAC markers) and bindings to the users their client certificates
// name; and the roles for berth's users (rbac/users.yaml). Without the
// controller, berth's own roles are left out (the bindings in local/ are
// the caller's to leave out).
func LocalRBAC(controller bool) ([][]byte, error) {
	ns, err := readAll(manifests, "local")
	if err != nil {
		return nil, err
	}
	var roles [][]byte
	if controller {
		if roles, err = readAll(manifests, "rbac"); err != nil {
			return nil, err
		}
	}
	simRoles, err := readAll(manifests, "sim/rbac")
	if err != nil {
		return nil, err
	}
	roles = append(roles, simRoles...)
	// The namespace first: the Role lives in it. Bindings may precede roles.
	return append(ns, roles...), nil
}

func readAll(fsys fs.FS, dir string) ([][]byte, error) {
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

// Addon returns what addon name (`berth up --with`) needs installed: its
// CRDs (generated from its Go module's types), then its role (generated
// from its controllers' RBAC markers) and local.yaml, which binds the role
// to the user the addon authenticates as.
func Addon(name string) ([][]byte, error) {
	dir := path.Join("addons", name)
	crds, err := readAll(addons, path.Join(dir, "crd"))
	if err != nil {
		return nil, err
	}
	role, err := fs.ReadFile(addons, path.Join(dir, "rbac", "role.yaml"))
	if err != nil {
		return nil, err
	}
	local, err := fs.ReadFile(addons, path.Join(dir, "local.yaml"))
	if err != nil {
		return nil, err
	}
	return append(crds, role, local), nil
}

// AddonKinds returns the kinds addon name's objects are queued as from
// configuration (a --configured-kinds file), or nil when it has none.
func AddonKinds(name string) ([]byte, error) {
	data, err := fs.ReadFile(addons, path.Join("addons", name, "kinds.yaml"))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	return data, err
}
