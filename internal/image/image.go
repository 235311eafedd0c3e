// Package image assembles berth's OCI image from berth binaries, one per
// platform: a single layer holding the static binary at /berth (and an
// empty /tmp), run as a non-root user, with no shell and nothing else; the
// OCI labels say its version, commit and source. Everything that goes in
// is fixed by the binaries and the commit (file times and the image's
// creation time are the commit's), so two builds of one commit have one
// digest. The index can be written as an OCI archive (a tarball that
// `ctr images import` and `berth image load` read) or pushed to a registry.
package image

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/berth-dev/berth/internal/version"
)

// User is who berth runs as in its image: numeric, so that Kubernetes can
// check runAsNonRoot without a passwd file.
const User = "65532:65532"

// Source is where berth's source lives, for the image's labels.
const Source = "https://github.com/berth-dev/berth"

// Platforms are the platforms berth's image is built for.
var Platforms = []v1.Platform{{OS: "linux", Architecture: "amd64"}, {OS: "linux", Architecture: "arm64"}}

// Spec is what an image is made of.
type Spec struct {
	// Binaries are the berth binary of each platform ("linux/amd64"), by
	// file path.
	Binaries map[string]string
	// Version is the build's; its date is the image's creation time.
	Version version.Info
	// Entrypoint and Cmd default to /berth and controller.
	Entrypoint, Cmd []string
	// Stored: the layer is not compressed (an image loaded on this
	// machine only, where compressing would cost more than it saves).
	Stored bool
	// Files are more files for every platform's image, by their path in
	// the image, from the files of this machine at the given paths (the
	// shared libraries a binary built with cgo needs, say).
	Files map[string]string
}

// Build makes the image index of s: one image per platform of Binaries.
func Build(s Spec) (v1.ImageIndex, error) {
	if len(s.Binaries) == 0 {
		return nil, fmt.Errorf("no binaries to build an image from")
	}
	created := time.Unix(0, 0).UTC()
	if s.Version.Date != "" {
		t, err := time.Parse(time.RFC3339, s.Version.Date)
		if err != nil {
			return nil, fmt.Errorf("the version's date %q: %w", s.Version.Date, err)
		}
		created = t.UTC()
	}
	labels := map[string]string{
		"org.opencontainers.image.title":    "berth",
		"org.opencontainers.image.source":   Source,
		"org.opencontainers.image.version":  s.Version.Version,
		"org.opencontainers.image.revision": s.Version.Commit,
		"org.opencontainers.image.created":  created.Format(time.RFC3339),
	}
	idx := mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
	idx = mutate.Annotations(idx, labels).(v1.ImageIndex)
	for _, key := range slices.Sorted(maps.Keys(s.Binaries)) {
		goos, arch, ok := strings.Cut(key, "/")
		if !ok || goos == "" || arch == "" {
			return nil, fmt.Errorf("platform %q: want os/arch, such as linux/amd64", key)
		}
		bin, err := os.ReadFile(s.Binaries[key])
		if err != nil {
			return nil, fmt.Errorf("the %s binary: %w", key, err)
		}
		files := []file{{name: "berth", mode: 0o555, data: bin}}
		for _, name := range slices.Sorted(maps.Keys(s.Files)) {
			data, err := os.ReadFile(s.Files[name])
			if err != nil {
				return nil, fmt.Errorf("%s for %s: %w", s.Files[name], name, err)
			}
			files = append(files, file{name: strings.TrimPrefix(name, "/"), mode: 0o555, data: data})
		}
		l, err := layer(files, created, s.Stored)
		if err != nil {
			return nil, err
		}
		img, err := mutate.Append(mutate.MediaType(empty.Image, types.OCIManifestSchema1), mutate.Addendum{
			Layer: l, MediaType: types.OCILayer,
			History: v1.History{Created: v1.Time{Time: created}, CreatedBy: "berth's image build (make image)", Comment: "the berth binary"},
		})
		if err != nil {
			return nil, err
		}
		img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
		cfg, err := img.ConfigFile()
		if err != nil {
			return nil, err
		}
		cfg = cfg.DeepCopy()
		cfg.OS, cfg.Architecture, cfg.Created = goos, arch, v1.Time{Time: created}
		entrypoint, cmd := s.Entrypoint, s.Cmd
		if entrypoint == nil {
			entrypoint, cmd = []string{"/berth"}, []string{"controller"}
		}
		cfg.Config = v1.Config{
			User:       User,
			Entrypoint: entrypoint,
			Cmd:        cmd,
			WorkingDir: "/",
			Env:        []string{"TMPDIR=/tmp"},
			Labels:     labels,
		}
		if img, err = mutate.ConfigFile(img, cfg); err != nil {
			return nil, err
		}
		idx = mutate.AppendManifests(idx, mutate.IndexAddendum{Add: img,
			Descriptor: v1.Descriptor{Platform: &v1.Platform{OS: goos, Architecture: arch}}})
	}
	return idx, nil
}

// file is one file of the layer, by its path in the image.
type file struct {
	name string
	mode int64
	data []byte
}

// layer is the image's one layer: its files (the berth binary first),
// their directories, and /tmp, writable by anyone; owned by root and timed
// at the commit.
func layer(files []file, at time.Time, stored bool) (v1.Layer, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	write := func(h tar.Header, data []byte) error {
		h.ModTime, h.Format = at, tar.FormatPAX
		if err := tw.WriteHeader(&h); err != nil {
			return err
		}
		_, err := tw.Write(data)
		return err
	}
	if err := write(tar.Header{Typeflag: tar.TypeDir, Name: "tmp/", Mode: 0o1777}, nil); err != nil {
		return nil, err
	}
	dirs := map[string]bool{}
	for _, f := range files {
		var parents []string
		for d := path.Dir(f.name); d != "." && !dirs[d]; d = path.Dir(d) {
			parents = append(parents, d)
			dirs[d] = true
		}
		slices.Reverse(parents)
		for _, d := range parents {
			if err := write(tar.Header{Typeflag: tar.TypeDir, Name: d + "/", Mode: 0o755}, nil); err != nil {
				return nil, err
			}
		}
		if err := write(tar.Header{Typeflag: tar.TypeReg, Name: f.name, Mode: f.mode, Size: int64(len(f.data))}, f.data); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	data := buf.Bytes()
	opts := []tarball.LayerOption{tarball.WithMediaType(types.OCILayer)}
	if stored {
		opts = append(opts, tarball.WithCompressionLevel(gzip.NoCompression))
	}
	return tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(data)), nil }, opts...)
}

// WriteArchive writes idx as an OCI archive: the OCI layout (oci-layout,
// index.json naming the image ref, blobs/) in one tar file, its entries in
// order and timed at 0, so the same index makes the same file.
func WriteArchive(path string, idx v1.ImageIndex, ref string) error {
	dir, err := os.MkdirTemp("", "berth-image-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	p, err := layout.Write(dir, empty.Index)
	if err != nil {
		return err
	}
	if err := p.AppendIndex(idx, layout.WithAnnotations(map[string]string{
		"org.opencontainers.image.ref.name": ref, // what containerd names the image it imports
		"io.containerd.image.name":          ref,
	})); err != nil {
		return fmt.Errorf("writing the OCI layout: %w", err)
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		f.Close()
		return err
	}
	defer root.Close()
	tw := tar.NewWriter(f)
	err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == dir {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		hdr := &tar.Header{Name: filepath.ToSlash(rel), Mode: 0o644, ModTime: time.Unix(0, 0), Format: tar.FormatPAX}
		if d.IsDir() {
			hdr.Typeflag, hdr.Name, hdr.Mode = tar.TypeDir, hdr.Name+"/", 0o755
			return tw.WriteHeader(hdr)
		}
		data, err := root.ReadFile(rel)
		if err != nil {
			return err
		}
		hdr.Typeflag, hdr.Size = tar.TypeReg, int64(len(data))
		if err := tw.WriteHeader(hdr); err != nil {
			return err
		}
		_, err = tw.Write(data)
		return err
	})
	if err == nil {
		err = tw.Close()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(path)
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}

// Push pushes idx to ref (registry/repository:tag), with the credentials
// of the local Docker config when there are any.
func Push(ref string, idx v1.ImageIndex, opts ...remote.Option) error {
	r, err := name.ParseReference(ref)
	if err != nil {
		return fmt.Errorf("image reference %q: %w", ref, err)
	}
	opts = append([]remote.Option{remote.WithAuthFromKeychain(authn.DefaultKeychain)}, opts...)
	if err := remote.WriteIndex(r, idx, opts...); err != nil {
		return fmt.Errorf("pushing %s: %w", ref, err)
	}
	return nil
}
