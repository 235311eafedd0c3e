// Command image builds berth's OCI image (package image) from the work tree
// in the current directory, for `make image`: a static berth for each
// platform (CGO off, -trimpath, stamped with version.FromGit), assembled
// into one image index, written as an OCI archive (--output) or pushed to a
// registry (--push). Two builds of one commit give one digest: the Go
// build is reproducible with the same toolchain, and the assembly takes its
// times from the commit.
package main

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/berth-dev/berth/internal/image"
	"github.com/berth-dev/berth/internal/version"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "image:", err)
		os.Exit(1)
	}
}

func run() error {
	var platforms []string
	for _, p := range image.Platforms {
		platforms = append(platforms, p.String())
	}
	output := flag.String("output", "bin/berth-image.tar", "write the image here as an OCI archive (berth image load, ctr images import)")
	push := flag.String("push", "", "push the image to this reference (registry/repository[:tag], the tag by default berth's version) instead of writing --output")
	tag := flag.String("tag", "", "the image reference the archive names (default berth.dev/berth:<version>)")
	only := flag.String("platforms", strings.Join(platforms, ","), "comma-separated os/arch to build for")
	flag.Parse()

	v, ok, err := version.FromGit(".")
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("not in a git work tree: the image is labelled with its commit")
	}
	dir, err := os.MkdirTemp("", "berth-image-build-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	spec := image.Spec{Version: v, Binaries: map[string]string{}}
	for _, p := range strings.Split(*only, ",") {
		goos, arch, ok := strings.Cut(strings.TrimSpace(p), "/")
		if !ok {
			return fmt.Errorf("--platforms: %q is not os/arch", p)
		}
		bin := filepath.Join(dir, "berth-"+goos+"-"+arch)
		fmt.Fprintf(os.Stderr, "building berth %s for %s/%s\n", v.Version, goos, arch)
		cmd := exec.Command("go", "build", "-trimpath", "-ldflags", "-s -w -buildid= "+version.LDFlags(v), "-o", bin, "./cmd/berth")
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS="+goos, "GOARCH="+arch, "GOFLAGS=-buildvcs=false")
		cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("building for %s/%s: %w", goos, arch, err)
		}
		spec.Binaries[goos+"/"+arch] = bin
	}
	idx, err := image.Build(spec)
	if err != nil {
		return err
	}
	digest, err := idx.Digest()
	if err != nil {
		return err
	}
	if *push != "" {
		if !strings.Contains((*push)[strings.LastIndex(*push, "/")+1:], ":") && !strings.Contains(*push, "@") {
			*push += ":" + tagOf(v.Version)
		}
		if err := image.Push(*push, idx); err != nil {
			return err
		}
		fmt.Printf("pushed %s@%s\n", *push, digest)
		return nil
	}
	ref := *tag
	if ref == "" {
		ref = "berth.dev/berth:" + tagOf(v.Version)
	}
	if err := os.MkdirAll(filepath.Dir(*output), 0o755); err != nil {
		return err
	}
	if err := image.WriteArchive(*output, idx, ref); err != nil {
		return err
	}
	fmt.Printf("wrote %s (%s, %s)\n", *output, ref, digest)
	return nil
}

// tagOf is the image tag for berth's version: "+" (not allowed in a tag)
// as "-". The chart's default image tag is made the same way.
func tagOf(version string) string { return strings.ReplaceAll(version, "+", "-") }
