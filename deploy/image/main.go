// Command image builds qo's container image without a container engine.
//
// The release (.goreleaser.yaml) runs it after each build of the image's
// binary (linux, -tags nogateway: without the embedded S3 server of qo dev):
//
//	go -C deploy run ./image add --layout ../dist/qo_image_oci --binary PATH --platform linux/amd64 --version V ...
//
// It runs in deploy/, the module it belongs to, so its paths are absolute
// or relative to deploy/.
//
// Each call puts the binary of one platform into an image (one layer:
// /usr/local/bin/qo, an /etc/passwd naming the non-root user 65532, a home
// and a /tmp; no shell, no package manager, no CA file, since qo carries
// its fallback roots) and records that image in the multi-platform index
// of an OCI image layout, replacing an earlier image of the same platform.
// Builds run in parallel, so the index is rewritten under a file lock.
// Platforms other than linux are skipped: containers run Linux.
//
// A release publishes the layout with crane (scripts/release.sh
// push-image), which pushes the index and every platform's image.
package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/match"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

const (
	// binaryPath is where qo lives in the image; the entrypoint.
	binaryPath = "/usr/local/bin/qo"
	// uid and gid of the image's user: "nonroot" of distroless images,
	// which the Kubernetes manifests name in runAsUser.
	nonrootID = 65532
	// refAnnotation names the multi-platform index in the layout's
	// index.json (the OCI layout's tag).
	refAnnotation = "org.opencontainers.image.ref.name"
)

const usage = `usage:
  image add  --layout DIR --binary FILE --platform OS/ARCH --version V [--revision SHA] [--created RFC3339]
`

// errUsage marks errors after which the usage is printed.
var errUsage = errors.New("usage")

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "image:", err)
		if errors.Is(err, errUsage) {
			fmt.Fprint(os.Stderr, usage)
		}
		os.Exit(1)
	}
}

func run(args []string, out io.Writer) error {
	if len(args) == 0 {
		return fmt.Errorf("%w: no command", errUsage)
	}
	switch args[0] {
	case "add":
		return runAdd(args[1:], out)
	default:
		return fmt.Errorf("%w: unknown command %q", errUsage, args[0])
	}
}

func runAdd(args []string, out io.Writer) error {
	fs := flag.NewFlagSet("add", flag.ContinueOnError)
	dir := fs.String("layout", "", "OCI image layout directory (made if missing)")
	binary := fs.String("binary", "", "the qo binary of this platform")
	platform := fs.String("platform", "", "OS/ARCH of the binary, e.g. linux/arm64")
	version := fs.String("version", "", "qo's version: the label and the layout's tag")
	revision := fs.String("revision", "", "the source commit (label)")
	created := fs.String("created", "", "creation time, RFC 3339 (default: the Unix epoch, for reproducible images)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *dir == "" || *binary == "" || *platform == "" || *version == "" {
		return fmt.Errorf("%w: add needs --layout, --binary, --platform and --version", errUsage)
	}
	os_, arch, ok := strings.Cut(*platform, "/")
	if !ok || os_ == "" || arch == "" {
		return fmt.Errorf("--platform %q: want OS/ARCH, e.g. linux/amd64", *platform)
	}
	if os_ != "linux" {
		fmt.Fprintf(out, "image: %s skipped (images are linux only)\n", *platform)
		return nil
	}
	when := time.Unix(0, 0).UTC()
	if *created != "" {
		t, err := time.Parse(time.RFC3339, *created)
		if err != nil {
			return fmt.Errorf("--created %q: want RFC 3339, e.g. 2026-01-02T15:04:05Z: %w", *created, err)
		}
		if t.Year() >= 1970 { // a snapshot without git history passes year 1
			when = t.UTC()
		}
	}
	bin, err := os.ReadFile(*binary)
	if err != nil {
		return fmt.Errorf("read the binary: %w", err)
	}
	spec := imageSpec{Binary: bin, Platform: v1.Platform{OS: os_, Architecture: arch}, Version: *version, Revision: *revision, Created: when}
	img, err := buildImage(spec)
	if err != nil {
		return err
	}
	if err := addToLayout(*dir, *version, img, spec.Platform); err != nil {
		return err
	}
	size, err := compressedSize(img)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "image: %s %s added to %s (%.1f MB to pull, binary %.1f MB)\n",
		*version, *platform, *dir, float64(size)/1e6, float64(len(bin))/1e6)
	return nil
}

// imageSpec is what one platform's image is made of.
type imageSpec struct {
	Binary   []byte
	Platform v1.Platform
	Version  string
	Revision string
	Created  time.Time
}

// buildImage returns the image of one platform: an empty base, one layer,
// and a config that runs qo as the non-root user.
func buildImage(s imageSpec) (v1.Image, error) {
	layerTar, err := rootfs(s.Binary, s.Created)
	if err != nil {
		return nil, err
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(layerTar)), nil
	}, tarball.WithCompressionLevel(gzip.DefaultCompression), tarball.WithMediaType(types.OCILayer))
	if err != nil {
		return nil, fmt.Errorf("make the layer: %w", err)
	}
	img := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	img, err = mutate.Append(img, mutate.Addendum{
		Layer:   layer,
		History: v1.History{Created: v1.Time{Time: s.Created}, CreatedBy: "qo release: " + binaryPath + " and a non-root user", Comment: "deploy/image"},
	})
	if err != nil {
		return nil, fmt.Errorf("add the layer: %w", err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture, cf.Variant = s.Platform.OS, s.Platform.Architecture, s.Platform.Variant
	cf.Created = v1.Time{Time: s.Created}
	cf.Config = v1.Config{
		Entrypoint: []string{binaryPath},
		User:       fmt.Sprintf("%d:%d", nonrootID, nonrootID),
		WorkingDir: "/home/nonroot",
		Env:        []string{"PATH=/usr/local/bin", "HOME=/home/nonroot"},
		Labels: map[string]string{
			"org.opencontainers.image.title":       "qo",
			"org.opencontainers.image.description": "a distributed task queue that needs nothing but an S3 bucket",
			"org.opencontainers.image.version":     s.Version,
			"org.opencontainers.image.revision":    s.Revision,
			"org.opencontainers.image.created":     s.Created.Format(time.RFC3339),
			"org.opencontainers.image.source":      "https://github.com/qo-queue/qo",
			"org.opencontainers.image.licenses":    "Apache-2.0",
		},
	}
	img, err = mutate.ConfigFile(img, cf)
	if err != nil {
		return nil, fmt.Errorf("set the image config: %w", err)
	}
	return img, nil
}

// rootfs returns the layer's tar: every entry owned by root but the home
// directory, with one modification time so that equal inputs give equal
// digests.
func rootfs(binary []byte, mtime time.Time) ([]byte, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	entries := []struct {
		name string
		mode int64
		id   int
		body string
		dir  bool
	}{
		{name: "etc/", mode: 0o755, dir: true},
		{name: "etc/group", mode: 0o644, body: "root:x:0:\nnonroot:x:65532:\n"},
		{name: "etc/passwd", mode: 0o644, body: "root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n"},
		{name: "home/", mode: 0o755, dir: true},
		{name: "home/nonroot/", mode: 0o700, id: nonrootID, dir: true},
		{name: "tmp/", mode: 0o1777, dir: true},
		{name: "usr/", mode: 0o755, dir: true},
		{name: "usr/local/", mode: 0o755, dir: true},
		{name: "usr/local/bin/", mode: 0o755, dir: true},
	}
	for _, e := range entries {
		h := &tar.Header{Name: e.name, Mode: e.mode, Uid: e.id, Gid: e.id, ModTime: mtime, Format: tar.FormatPAX}
		if e.dir {
			h.Typeflag = tar.TypeDir
		} else {
			h.Typeflag, h.Size = tar.TypeReg, int64(len(e.body))
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, err
		}
		if _, err := io.WriteString(tw, e.body); err != nil {
			return nil, err
		}
	}
	h := &tar.Header{Name: strings.TrimPrefix(binaryPath, "/"), Typeflag: tar.TypeReg, Mode: 0o755, Size: int64(len(binary)), ModTime: mtime, Format: tar.FormatPAX}
	if err := tw.WriteHeader(h); err != nil {
		return nil, err
	}
	if _, err := tw.Write(binary); err != nil {
		return nil, err
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// addToLayout records img as the image of platform p in the
// multi-platform index tagged version in the layout at dir, replacing an
// earlier image of the same platform. Concurrent calls (one per build
// target) are serialised by a lock file beside the layout.
func addToLayout(dir, version string, img v1.Image, p v1.Platform) error {
	if err := os.MkdirAll(filepath.Dir(filepath.Clean(dir)), 0o755); err != nil {
		return fmt.Errorf("make the layout's parent: %w", err)
	}
	unlock, err := lockFile(filepath.Clean(dir) + ".lock")
	if err != nil {
		return err
	}
	defer unlock()
	lp, err := layout.FromPath(dir)
	if err != nil {
		if lp, err = layout.Write(dir, empty.Index); err != nil {
			return fmt.Errorf("make the layout %s: %w", dir, err)
		}
	}
	// The platforms already in the index, but p.
	var adds []mutate.IndexAddendum
	if old, err := taggedIndex(lp, version); err == nil {
		im, err := old.IndexManifest()
		if err != nil {
			return err
		}
		for _, d := range im.Manifests {
			if d.Platform != nil && d.Platform.Equals(p) {
				continue
			}
			other, err := old.Image(d.Digest)
			if err != nil {
				return fmt.Errorf("read the %s image of the layout: %w", d.Platform, err)
			}
			adds = append(adds, mutate.IndexAddendum{Add: other, Descriptor: v1.Descriptor{Platform: d.Platform}})
		}
	} else if !errors.Is(err, errNoTag) {
		return err
	}
	pc := p
	adds = append(adds, mutate.IndexAddendum{Add: img, Descriptor: v1.Descriptor{Platform: &pc}})
	// A stable order whatever order the builds finished in.
	slices.SortFunc(adds, func(a, b mutate.IndexAddendum) int {
		return strings.Compare(a.Descriptor.Platform.String(), b.Descriptor.Platform.String())
	})
	idx := mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
	idx = mutate.AppendManifests(idx, adds...)
	if err := lp.ReplaceIndex(idx, match.Annotation(refAnnotation, version),
		layout.WithAnnotations(map[string]string{refAnnotation: version})); err != nil {
		return fmt.Errorf("write the index to %s: %w", dir, err)
	}
	return nil
}

var errNoTag = errors.New("no index with that tag")

// taggedIndex returns the multi-platform index tagged version.
func taggedIndex(lp layout.Path, version string) (v1.ImageIndex, error) {
	root, err := lp.ImageIndex()
	if err != nil {
		return nil, fmt.Errorf("read the layout: %w", err)
	}
	im, err := root.IndexManifest()
	if err != nil {
		return nil, fmt.Errorf("read the layout's index: %w", err)
	}
	for _, d := range im.Manifests {
		if d.Annotations[refAnnotation] == version && d.MediaType.IsIndex() {
			return root.ImageIndex(d.Digest)
		}
	}
	return nil, errNoTag
}

// compressedSize is what a pull downloads: the layers and the config.
func compressedSize(img v1.Image) (int64, error) {
	m, err := img.Manifest()
	if err != nil {
		return 0, err
	}
	n := m.Config.Size
	for _, l := range m.Layers {
		n += l.Size
	}
	return n, nil
}

// lockFile takes the lock at path, made by creating the file exclusively
// (portable, and builds are short), and returns its release.
func lockFile(path string) (unlock func(), err error) {
	deadline := time.Now().Add(2 * time.Minute)
	for {
		f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
		if err == nil {
			f.Close()
			return func() { os.Remove(path) }, nil
		}
		if !errors.Is(err, os.ErrExist) {
			return nil, fmt.Errorf("lock the layout: %w", err)
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("lock the layout: %s held for 2 minutes (left by a killed build? remove it)", path)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
