package main

import (
	"archive/tar"
	"bytes"
	"debug/buildinfo"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
)

// add runs `image add` as the release hook does.
func add(t *testing.T, dir, binary, platform, version string) string {
	t.Helper()
	var out bytes.Buffer
	if err := run([]string{"add", "--layout", dir, "--binary", binary, "--platform", platform, "--version", version,
		"--revision", "0123abc", "--created", "2026-11-25T10:00:00Z"}, &out); err != nil {
		t.Fatalf("image add %s: %v", platform, err)
	}
	return out.String()
}

// writeFile writes body to a new file in t's temporary directory.
func writeFile(t *testing.T, name, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

// platformImages returns the images of the index tagged version, by
// platform.
func platformImages(t *testing.T, dir, version string) (map[string]v1.Image, []string) {
	t.Helper()
	lp, err := layout.FromPath(dir)
	if err != nil {
		t.Fatalf("open the layout: %v", err)
	}
	idx, err := taggedIndex(lp, version)
	if err != nil {
		t.Fatalf("index %s: %v", version, err)
	}
	im, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	imgs := map[string]v1.Image{}
	var order []string
	for _, d := range im.Manifests {
		if d.Platform == nil {
			t.Fatalf("manifest %s has no platform", d.Digest)
		}
		img, err := idx.Image(d.Digest)
		if err != nil {
			t.Fatal(err)
		}
		imgs[d.Platform.String()] = img
		order = append(order, d.Platform.String())
	}
	return imgs, order
}

// file is one entry of an image's filesystem.
type file struct {
	hdr  tar.Header
	body []byte
}

// files flattens img's layers.
func files(t *testing.T, img v1.Image) map[string]file {
	t.Helper()
	rc := mutate.Extract(img)
	defer rc.Close()
	tr := tar.NewReader(rc)
	out := map[string]file{}
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatalf("read the image's files: %v", err)
		}
		body, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		out[strings.TrimSuffix(h.Name, "/")] = file{hdr: *h, body: body}
	}
}

func TestAddBuildsOneIndexOfLinuxPlatforms(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "qo_image_oci")
	first := writeFile(t, "qo-amd64", "amd64 binary, first build")
	arm := writeFile(t, "qo-arm64", "arm64 binary")
	second := writeFile(t, "qo-amd64-2", "amd64 binary, second build")

	add(t, dir, first, "linux/amd64", "1.2.3")
	add(t, dir, arm, "linux/arm64", "1.2.3")
	add(t, dir, second, "linux/amd64", "1.2.3") // replaces the first
	if out := add(t, dir, first, "darwin/arm64", "1.2.3"); !strings.Contains(out, "skipped") {
		t.Errorf("darwin: %q, want it skipped", out)
	}

	imgs, order := platformImages(t, dir, "1.2.3")
	if got := strings.Join(order, " "); got != "linux/amd64 linux/arm64" {
		t.Fatalf("platforms %q, want linux/amd64 linux/arm64 (one each, sorted)", got)
	}
	for platform, want := range map[string]string{"linux/amd64": "amd64 binary, second build", "linux/arm64": "arm64 binary"} {
		img := imgs[platform]
		fs := files(t, img)
		if got := string(fs["usr/local/bin/qo"].body); got != want {
			t.Errorf("%s: /usr/local/bin/qo holds %q, want %q", platform, got, want)
		}
		if m := fs["usr/local/bin/qo"].hdr.Mode; m != 0o755 {
			t.Errorf("%s: qo mode %o, want 755", platform, m)
		}
		if m := fs["tmp"].hdr.Mode; m != 0o1777 {
			t.Errorf("%s: /tmp mode %o, want 1777", platform, m)
		}
		if h := fs["home/nonroot"].hdr; h.Uid != nonrootID || h.Gid != nonrootID {
			t.Errorf("%s: /home/nonroot owned by %d:%d, want %d", platform, h.Uid, h.Gid, nonrootID)
		}
		if !strings.Contains(string(fs["etc/passwd"].body), "nonroot:x:65532:65532:") {
			t.Errorf("%s: /etc/passwd lacks the nonroot user:\n%s", platform, fs["etc/passwd"].body)
		}
		cf, err := img.ConfigFile()
		if err != nil {
			t.Fatal(err)
		}
		if got := cf.OS + "/" + cf.Architecture; got != platform {
			t.Errorf("config platform %s, want %s", got, platform)
		}
		if cf.Config.User != "65532:65532" || strings.Join(cf.Config.Entrypoint, " ") != binaryPath {
			t.Errorf("%s: user %q entrypoint %q, want 65532:65532 and %s", platform, cf.Config.User, cf.Config.Entrypoint, binaryPath)
		}
		if v := cf.Config.Labels["org.opencontainers.image.version"]; v != "1.2.3" {
			t.Errorf("%s: version label %q", platform, v)
		}
	}
}

func TestAddIsReproducible(t *testing.T) {
	t.Parallel()
	bin := writeFile(t, "qo", "the same binary")
	var digests []v1.Hash
	for range 2 {
		dir := filepath.Join(t.TempDir(), "oci")
		add(t, dir, bin, "linux/amd64", "1.0.0")
		imgs, _ := platformImages(t, dir, "1.0.0")
		d, err := imgs["linux/amd64"].Digest()
		if err != nil {
			t.Fatal(err)
		}
		digests = append(digests, d)
	}
	if digests[0] != digests[1] {
		t.Errorf("two builds of the same binary: %s and %s, want one digest", digests[0], digests[1])
	}
}

// The release builds its targets in parallel: each hook's platform must
// survive the others' rewrites of the index.
func TestAddConcurrentBuildsKeepEveryPlatform(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "oci")
	platforms := []string{"linux/amd64", "linux/arm64", "linux/riscv64", "linux/s390x"}
	var wg sync.WaitGroup
	errs := make(chan error, len(platforms))
	for _, p := range platforms {
		bin := writeFile(t, "qo", "binary for "+p)
		wg.Go(func() {
			if err := run([]string{"add", "--layout", dir, "--binary", bin, "--platform", p, "--version", "2.0.0"}, io.Discard); err != nil {
				errs <- fmt.Errorf("%s: %w", p, err)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	_, order := platformImages(t, dir, "2.0.0")
	if len(order) != len(platforms) {
		t.Errorf("platforms %v, want all of %v", order, platforms)
	}
}

func TestAddRefusesBadInput(t *testing.T) {
	t.Parallel()
	bin := writeFile(t, "qo", "x")
	dir := filepath.Join(t.TempDir(), "oci")
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"no command", nil, "no command"},
		{"unknown command", []string{"build"}, `unknown command "build"`},
		{"missing flags", []string{"add", "--layout", dir}, "add needs --layout, --binary, --platform and --version"},
		{"platform without arch", []string{"add", "--layout", dir, "--binary", bin, "--platform", "linux", "--version", "1"}, "want OS/ARCH"},
		{"bad time", []string{"add", "--layout", dir, "--binary", bin, "--platform", "linux/amd64", "--version", "1", "--created", "yesterday"}, "want RFC 3339"},
		{"missing binary", []string{"add", "--layout", dir, "--binary", bin + ".nope", "--platform", "linux/amd64", "--version", "1"}, "read the binary"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := run(tt.args, io.Discard)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %v, want one containing %q", err, tt.want)
			}
		})
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("refused calls left a layout behind (stat: %v)", err)
	}
}

// TestReleaseImageRuns opens the image the snapshot build made
// (scripts/release.sh single, which the test command runs first), unpacks
// this machine's platform and runs `qo version` in it: as root, chrooted
// into the image's files and as the image's user, so a binary that needs
// anything outside the image, or a wrong entrypoint or user, fails here.
func TestReleaseImageRuns(t *testing.T) {
	dir := filepath.Join("..", "..", "dist", "qo_image_oci")
	if _, err := os.Stat(filepath.Join(dir, "index.json")); err != nil {
		if os.Getenv("QO_TEST_REQUIRE_IMAGE") != "" {
			t.Fatalf("no release image at %s (scripts/release.sh single builds it): %v", dir, err)
		}
		t.Skipf("no release image at %s: run scripts/release.sh single first", dir)
	}
	lp, err := layout.FromPath(dir)
	if err != nil {
		t.Fatal(err)
	}
	root, err := lp.ImageIndex()
	if err != nil {
		t.Fatal(err)
	}
	rim, err := root.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if len(rim.Manifests) != 1 {
		t.Fatalf("the layout tags %d indexes, want 1", len(rim.Manifests))
	}
	version := rim.Manifests[0].Annotations[refAnnotation]
	imgs, order := platformImages(t, dir, version)
	platform := "linux/" + runtime.GOARCH
	img, ok := imgs[platform]
	if !ok {
		t.Fatalf("the image has platforms %v, not this machine's %s", order, platform)
	}
	size, err := compressedSize(img)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("image %s %s: %.1f MB to pull", version, platform, float64(size)/1e6)

	rootfs := t.TempDir()
	if err := os.Chmod(rootfs, 0o755); err != nil { // the image's / as its user sees it
		t.Fatal(err)
	}
	unpack(t, img, rootfs)
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(rootfs, binaryPath)
	info, err := buildinfo.ReadFile(bin)
	if err != nil {
		t.Fatalf("the image's qo is no Go binary: %v", err)
	}
	if !hasDep(info, "golang.org/x/crypto/x509roots/fallback") {
		t.Errorf("the image's qo lacks the fallback CA roots: TLS to S3 would fail in an image with no CA file")
	}
	if runtime.GOOS != "linux" {
		t.Skip("running the image's binary needs linux")
	}
	if len(cf.Config.Entrypoint) != 1 {
		t.Fatalf("entrypoint %q, want the qo binary alone", cf.Config.Entrypoint)
	}
	var uid, gid uint32
	if _, err := fmt.Sscanf(cf.Config.User, "%d:%d", &uid, &gid); err != nil || uid == 0 {
		t.Fatalf("the image's user %q: want a numeric non-root uid:gid", cf.Config.User)
	}
	cmd := inImage(rootfs, cf.Config.Entrypoint[0], uid, gid, "version")
	cmd.Env = cf.Config.Env
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("qo version in the image: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), version) {
		t.Errorf("qo version printed %q, want the image's version %s", out, version)
	}
}

// unpack writes img's filesystem under dir.
func unpack(t *testing.T, img v1.Image, dir string) {
	t.Helper()
	for name, f := range files(t, img) {
		p := filepath.Join(dir, name)
		switch f.hdr.Typeflag {
		case tar.TypeDir:
			if err := os.MkdirAll(p, f.hdr.FileInfo().Mode().Perm()|0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(p, f.hdr.FileInfo().Mode()); err != nil {
				t.Fatal(err)
			}
		case tar.TypeReg:
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, f.body, f.hdr.FileInfo().Mode().Perm()); err != nil {
				t.Fatal(err)
			}
		default:
			t.Fatalf("unexpected entry %s of type %c", name, f.hdr.Typeflag)
		}
		if os.Geteuid() == 0 {
			if err := os.Lchown(p, f.hdr.Uid, f.hdr.Gid); err != nil {
				t.Fatal(err)
			}
		}
	}
}

func hasDep(info *buildinfo.BuildInfo, path string) bool {
	for _, d := range info.Deps {
		if d.Path == path {
			return true
		}
	}
	return false
}
