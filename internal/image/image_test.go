package image_test

import (
	"archive/tar"
	"crypto/sha256"
	"errors"
	"io"
	"log"
	"maps"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/berth-dev/berth/internal/image"
	"github.com/berth-dev/berth/internal/version"
)

// binaries writes one file per platform standing in for berth's binary:
// what the image does with a binary does not depend on what it holds.
func binaries(t *testing.T) map[string]string {
	dir := t.TempDir()
	out := map[string]string{}
	for _, p := range image.Platforms {
		path := filepath.Join(dir, p.Architecture)
		if err := os.WriteFile(path, []byte("berth for "+p.String()), 0o755); err != nil {
			t.Fatal(err)
		}
		out[p.String()] = path
	}
	return out
}

var at = version.Info{Version: "v0.0.0-20261126011500-165114dabcde", Commit: "165114dabcdef0123456789abcdef0123456789a",
	Date: "2026-11-26T01:15:00Z", GoVersion: "go1.26.8"}

func TestImageIsNonRootWithoutShellForEachPlatform(t *testing.T) {
	idx, err := image.Build(image.Spec{Binaries: binaries(t), Version: at})
	if err != nil {
		t.Fatal(err)
	}
	m, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	var platforms []string
	for _, d := range m.Manifests {
		platforms = append(platforms, d.Platform.String())
		img, err := idx.Image(d.Digest)
		if err != nil {
			t.Fatal(err)
		}
		cfg, err := img.ConfigFile()
		if err != nil {
			t.Fatal(err)
		}
		if cfg.OS+"/"+cfg.Architecture != d.Platform.String() {
			t.Errorf("%s: its config says %s/%s", d.Platform, cfg.OS, cfg.Architecture)
		}
		if cfg.Config.User != "65532:65532" || !slices.Equal(cfg.Config.Entrypoint, []string{"/berth"}) {
			t.Errorf("%s: user %q, entrypoint %v; want a numeric non-root user and /berth", d.Platform, cfg.Config.User, cfg.Config.Entrypoint)
		}
		for k, want := range map[string]string{"org.opencontainers.image.version": at.Version,
			"org.opencontainers.image.revision": at.Commit, "org.opencontainers.image.source": image.Source,
			"org.opencontainers.image.created": at.Date} {
			if cfg.Config.Labels[k] != want {
				t.Errorf("%s: label %s = %q, want %q", d.Platform, k, cfg.Config.Labels[k], want)
			}
		}
		files := layerFiles(t, img)
		if !slices.Equal(slices.Sorted(mapKeys(files)), []string{"berth", "tmp/"}) {
			t.Errorf("%s: the image holds %v; want the binary and /tmp alone (no shell, nothing else)", d.Platform, slices.Sorted(mapKeys(files)))
		}
		if files["berth"] != "berth for "+d.Platform.String() {
			t.Errorf("%s: /berth is %q, not that platform's binary", d.Platform, files["berth"])
		}
	}
	slices.Sort(platforms)
	if !slices.Equal(platforms, []string{"linux/amd64", "linux/arm64"}) {
		t.Errorf("platforms %v, want linux/amd64 and linux/arm64", platforms)
	}
}

func TestSameInputsSameDigestAndArchive(t *testing.T) {
	bins := binaries(t)
	var digests []v1.Hash
	var archives [][32]byte
	for range 2 {
		idx, err := image.Build(image.Spec{Binaries: bins, Version: at})
		if err != nil {
			t.Fatal(err)
		}
		d, err := idx.Digest()
		if err != nil {
			t.Fatal(err)
		}
		digests = append(digests, d)
		path := filepath.Join(t.TempDir(), "berth.tar")
		if err := image.WriteArchive(path, idx, "berth.dev/berth:test"); err != nil {
			t.Fatal(err)
		}
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		archives = append(archives, sha256.Sum256(data))
	}
	if digests[0] != digests[1] {
		t.Errorf("two builds of the same binaries and commit: digests %s and %s", digests[0], digests[1])
	}
	if archives[0] != archives[1] {
		t.Error("two archives of the same index differ")
	}
	// Another commit is another image.
	other := at
	other.Commit, other.Date = "0000000000000000000000000000000000000000", "2026-11-27T00:00:00Z"
	idx, err := image.Build(image.Spec{Binaries: bins, Version: other})
	if err != nil {
		t.Fatal(err)
	}
	if d, _ := idx.Digest(); d == digests[0] {
		t.Error("another commit made the same digest")
	}
}

func TestArchiveIsAnOCILayoutNamingTheImage(t *testing.T) {
	idx, err := image.Build(image.Spec{Binaries: binaries(t), Version: at})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "berth.tar")
	if err := image.WriteArchive(path, idx, "berth.dev/berth:test"); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	seen := map[string]string{}
	readTar(t, f, seen)
	if !strings.Contains(seen["oci-layout"], `"imageLayoutVersion"`) {
		t.Errorf("no oci-layout file: %v", slices.Sorted(mapKeys(seen)))
	}
	d, _ := idx.Digest()
	if !strings.Contains(seen["index.json"], d.String()) || !strings.Contains(seen["index.json"], "berth.dev/berth:test") {
		t.Errorf("index.json does not name the image index %s as berth.dev/berth:test:\n%s", d, seen["index.json"])
	}
	if _, ok := seen["blobs/sha256/"+d.Hex]; !ok {
		t.Errorf("the index's blob is not in the archive")
	}
}

func TestPushToARegistry(t *testing.T) {
	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	defer srv.Close()
	idx, err := image.Build(image.Spec{Binaries: binaries(t), Version: at})
	if err != nil {
		t.Fatal(err)
	}
	ref := strings.TrimPrefix(srv.URL, "http://") + "/berth/berth:test"
	if err := image.Push(ref, idx); err != nil {
		t.Fatal(err)
	}
	r, err := name.ParseReference(ref)
	if err != nil {
		t.Fatal(err)
	}
	got, err := remote.Index(r)
	if err != nil {
		t.Fatalf("pulling back %s: %v", ref, err)
	}
	want, _ := idx.Digest()
	if d, _ := got.Digest(); d != want {
		t.Errorf("the registry has %s, pushed %s", d, want)
	}
	m, err := got.IndexManifest()
	if err != nil || len(m.Manifests) != 2 {
		t.Fatalf("pulled index: %v, %+v", err, m)
	}
	img, err := got.Image(m.Manifests[0].Digest)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := img.Layers(); err != nil {
		t.Errorf("the image's layers did not come back: %v", err)
	}
}

func layerFiles(t *testing.T, img v1.Image) map[string]string {
	layers, err := img.Layers()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, l := range layers {
		rc, err := l.Uncompressed()
		if err != nil {
			t.Fatal(err)
		}
		readTar(t, rc, out)
		rc.Close()
	}
	return out
}

// readTar adds each file of the tar stream r to files, by name.
func readTar(t *testing.T, r io.Reader, files map[string]string) {
	t.Helper()
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		files[h.Name] = string(data)
	}
}

func mapKeys[V any](m map[string]V) func(func(string) bool) { return maps.Keys(m) }
