package main

import (
	"archive/tar"
	"bytes"
	"debug/buildinfo"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"

	"github.com/qo-queue/qo/internal/testutil"
	"github.com/qo-queue/qo/store/storetest"
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
// this machine's platform and runs qo in it: as root, chrooted into the
// image's files and as the image's user, so a binary that needs anything
// outside the image, or a wrong entrypoint or user, fails here. It runs
// `qo version`, the commands the image leaves out, and every command the
// manifests and docs/deploy.md run, on a bucket of the test S3 server.
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
	c := container{rootfs: rootfs, cf: cf, uid: uid, gid: gid}
	code, stdout, stderr := c.run(t, nil, "version")
	if code != 0 {
		t.Fatalf("qo version in the image: exit %d\n%s%s", code, stdout, stderr)
	}
	if !strings.Contains(stdout, version) {
		t.Errorf("qo version printed %q, want the image's version %s", stdout, version)
	}

	// The image's qo is built without the embedded S3 server (the tag
	// nogateway): the commands that need it say so and exit 2 (a usage
	// error), before they listen or serve anything.
	t.Run("without the gateway", func(t *testing.T) {
		if !hasSetting(info, "-tags", "nogateway") || hasDep(info, "github.com/versity/versitygw") {
			t.Errorf("the image's qo carries the embedded S3 gateway: build it with -tags nogateway (.goreleaser.yaml, build qo-image)")
		}
		tests := []struct {
			name string
			args []string
		}{
			{"dev", []string{"dev", "--data-dir", "qo-dev"}},
			{"gateway", []string{"gateway", "--data-dir", "qo-gateway"}},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				code, stdout, stderr := c.run(t, nil, tt.args...)
				if code != 2 || !strings.Contains(stderr, "built without the embedded S3 gateway") {
					t.Errorf("qo %s: exit %d\nstdout: %s\nstderr: %s\nwant exit 2 and the gateway's absence named", strings.Join(tt.args, " "), code, stdout, stderr)
				}
			})
		}
	})

	// The commands deploy/kubernetes and docs/deploy.md run in the image, in
	// their order: the init Job, doctor, a worker that runs a task, the
	// standalone monitor and qo serve, each long-running one until ready on
	// its probe's route and then stopped as Kubernetes stops it (SIGTERM,
	// exit 0).
	t.Run("on a bucket", func(t *testing.T) {
		bucket := storetest.MinIO(t).Bucket() // skips (or fails in CI) without MinIO
		cfg := storetest.S3Config(t, bucket)
		env := []string{"S3_ENDPOINT=" + cfg.Endpoint, "S3_BUCKET=" + bucket, "S3_REGION=" + cfg.Region,
			"AWS_ACCESS_KEY_ID=" + cfg.AccessKey, "AWS_SECRET_ACCESS_KEY=" + cfg.SecretKey}
		for _, args := range [][]string{{"init", "--shard-chars", "1", "--tasks-retention-days", "0"}, {"doctor"}} {
			if code, stdout, stderr := c.run(t, env, args...); code != 0 {
				t.Fatalf("qo %s in the image: exit %d\n%s%s", strings.Join(args, " "), code, stdout, stderr)
			}
		}

		addr := testutil.FreeAddr(t)
		worker := c.start(t, append(env, "QO_METRICS_ADDR="+addr), "worker")
		worker.waitHTTP(t, "http://"+addr+"/readyz")
		code, id, stderr := c.run(t, env, "submit", "--type", "echo", "--input", `{"from":"the image"}`)
		if code != 0 {
			t.Fatalf("qo submit in the image: exit %d\n%s", code, stderr)
		}
		if code, stdout, stderr := c.run(t, env, "wait", "--timeout", "1m", strings.TrimSpace(id)); code != 0 {
			t.Fatalf("qo wait in the image: exit %d\n%s%s", code, stdout, stderr)
		}
		worker.stop(t)

		addr = testutil.FreeAddr(t)
		monitor := c.start(t, append(env, "QO_METRICS_ADDR="+addr), "monitor")
		monitor.waitHTTP(t, "http://"+addr+"/healthz")
		monitor.stop(t)

		addr = testutil.FreeAddr(t)
		serve := c.start(t, append(env, "QO_API_ADDR="+addr), "serve")
		serve.waitHTTP(t, "http://"+addr+"/readyz")
		serve.stop(t)
	})
}

// container runs qo commands in an unpacked image, as a container runtime
// would: the image's entrypoint, user, working directory and environment.
type container struct {
	rootfs   string
	cf       *v1.ConfigFile
	uid, gid uint32
}

func (c container) command(env []string, args ...string) *exec.Cmd {
	cmd := inImage(c.rootfs, c.cf.Config.WorkingDir, c.cf.Config.Entrypoint[0], c.uid, c.gid, args...)
	cmd.Env = append(slices.Clone(c.cf.Config.Env), env...)
	return cmd
}

// run runs qo with args to its end.
func (c container) run(t *testing.T, env []string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	cmd := c.command(env, args...)
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		code = ee.ExitCode()
	case err != nil:
		t.Fatalf("run qo %s in the image: %v", strings.Join(args, " "), err)
	}
	return code, out.String(), errOut.String()
}

// process is a long-running qo in the image.
type process struct {
	name string
	cmd  *exec.Cmd
	out  testutil.Buffer // stdout and stderr, as they come
	done chan struct{}
	err  error // the exit status, once done is closed
}

// start starts qo with args; it is killed when the test ends, if still
// running.
func (c container) start(t *testing.T, env []string, args ...string) *process {
	t.Helper()
	p := &process{name: "qo " + strings.Join(args, " "), cmd: c.command(env, args...), done: make(chan struct{})}
	p.cmd.Stdout, p.cmd.Stderr = &p.out, &p.out
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("start %s in the image: %v", p.name, err)
	}
	go func() {
		p.err = p.cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(p.kill)
	return p
}

func (p *process) kill() {
	select {
	case <-p.done:
	default:
		_ = p.cmd.Process.Kill()
		<-p.done
	}
}

// waitHTTP waits until url answers 200, failing when the process exits
// first or a minute passes.
func (p *process) waitHTTP(t *testing.T, url string) {
	t.Helper()
	var last any
	testutil.Poll{Limit: time.Minute, Every: 50 * time.Millisecond}.Until(t, func() bool {
		select {
		case <-p.done:
			t.Fatalf("%s exited (%v) before %s answered\n%s", p.name, p.err, url, p.out.String())
		default:
		}
		resp, err := http.Get(url)
		if err != nil {
			last = err
			return false
		}
		_ = resp.Body.Close()
		last = resp.Status
		return resp.StatusCode == http.StatusOK
	}, "%s: %s to answer 200 (last: %s)\n%s", p.name, url, testutil.Lazy(func() string { return fmt.Sprint(last) }), &p.out)
}

// stop sends SIGTERM and wants a clean exit.
func (p *process) stop(t *testing.T) {
	t.Helper()
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatalf("signal %s: %v", p.name, err)
	}
	select {
	case <-p.done:
	case <-time.After(time.Minute):
		p.kill()
		t.Fatalf("%s still ran a minute after SIGTERM\n%s", p.name, p.out.String())
	}
	if p.err != nil {
		t.Errorf("%s after SIGTERM: %v, want exit 0\n%s", p.name, p.err, p.out.String())
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

func hasSetting(info *buildinfo.BuildInfo, key, value string) bool {
	for _, s := range info.Settings {
		if s.Key == key && s.Value == value {
			return true
		}
	}
	return false
}

func hasDep(info *buildinfo.BuildInfo, path string) bool {
	for _, d := range info.Deps {
		if d.Path == path {
			return true
		}
	}
	return false
}
