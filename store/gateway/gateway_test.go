//go:build !nogateway

package gateway_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/qo-queue/qo/internal/testutil"
	"github.com/qo-queue/qo/store"
	"github.com/qo-queue/qo/store/gateway"
	"github.com/qo-queue/qo/store/s3store"
	"github.com/qo-queue/qo/store/storetest"
)

const (
	testAccessKey = "qo-test"
	testSecretKey = "qo-test-secret"
	// helperEnv turns the test binary into a parent process that starts a
	// gateway, prints the child's pid and waits to be killed.
	helperEnv = "QO_GATEWAY_TEST_HELPER"
)

func TestMain(m *testing.M) {
	gateway.MaybeRunChild()
	if dir := os.Getenv(helperEnv); dir != "" {
		os.Exit(runHelperParent(dir))
	}
	code := m.Run()
	stopShared()
	os.Exit(code)
}

// runHelperParent starts a gateway, prints "pid N" and blocks until killed.
func runHelperParent(dir string) int {
	g, err := gateway.Start(context.Background(), gateway.Options{
		DataDir: dir, AccessKey: testAccessKey, SecretKey: testSecretKey, Bucket: "helper",
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fmt.Printf("pid %d\n", g.PID())
	select {}
}

var shared struct {
	once sync.Once
	g    *gateway.Gateway
	dir  string
	err  error
}

// sharedGateway is one gateway for the tests that only need a server.
func sharedGateway(t testing.TB) *gateway.Gateway {
	t.Helper()
	shared.once.Do(func() {
		shared.dir, shared.err = os.MkdirTemp("", "qo-gateway-test-")
		if shared.err != nil {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		shared.g, shared.err = gateway.Start(ctx, gateway.Options{
			DataDir: shared.dir, AccessKey: testAccessKey, SecretKey: testSecretKey,
		})
	})
	require.NoError(t, shared.err)
	return shared.g
}

func stopShared() {
	if shared.g != nil {
		if err := shared.g.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "stop shared gateway:", err)
		}
	}
	if shared.dir != "" {
		_ = os.RemoveAll(shared.dir)
	}
}

// newStore returns a store on a fresh versioned bucket of g.
func newStore(t testing.TB, g *gateway.Gateway) *s3store.Store {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s, err := s3store.New(ctx, s3store.Config{
		Endpoint: g.Endpoint(), Region: g.Region(), Bucket: storetest.BucketName(),
		AccessKey: testAccessKey, SecretKey: testSecretKey, PathStyle: true,
	})
	require.NoError(t, err)
	require.NoError(t, s.CreateBucket(ctx))
	require.NoError(t, s.EnableVersioning(ctx))
	t.Cleanup(func() { storetest.RemoveBucket(t, s) })
	return s
}

// storeOn returns a store on an existing bucket of g.
func storeOn(t testing.TB, g *gateway.Gateway, bucket string) *s3store.Store {
	t.Helper()
	s, err := s3store.New(context.Background(), s3store.Config{
		Endpoint: g.Endpoint(), Region: g.Region(), Bucket: bucket,
		AccessKey: testAccessKey, SecretKey: testSecretKey, PathStyle: true,
	})
	require.NoError(t, err)
	return s
}

func TestConformance(t *testing.T) {
	g := sharedGateway(t)
	storetest.Run(t, func(t testing.TB) store.Store { return newStore(t, g) })
}

func TestConformanceSidecarMetadata(t *testing.T) {
	if testing.Short() {
		t.Skip("second gateway: skipped in -short")
	}
	g := startGateway(t, gateway.Options{SidecarMetadata: true})
	require.True(t, g.SidecarMetadata())
	storetest.Run(t, func(t testing.TB) store.Store { return newStore(t, g) })
}

// startGateway starts a gateway in a temp dir, stopped at the end of the test.
func startGateway(t *testing.T, opts gateway.Options) *gateway.Gateway {
	t.Helper()
	if opts.DataDir == "" {
		opts.DataDir = t.TempDir()
	}
	opts.AccessKey, opts.SecretKey = testAccessKey, testSecretKey
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	g, err := gateway.Start(ctx, opts)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, g.Stop()) })
	return g
}

func TestStartCreatesVersionedBucketAndDataSurvivesRestart(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()
	g := startGateway(t, gateway.Options{DataDir: dir, Bucket: "qo-data"})
	require.True(t, strings.HasPrefix(g.Endpoint(), "http://127.0.0.1:"), g.Endpoint())
	s := storeOn(t, g, "qo-data")
	on, err := s.Versioning(ctx)
	require.NoError(t, err)
	require.True(t, on, "Start must enable versioning on the bucket it creates")

	first, err := s.Put(ctx, "k", []byte("one"), store.CreateOnly)
	require.NoError(t, err)
	_, err = s.Put(ctx, "k", []byte("two"), store.IfMatch(first.ETag))
	require.NoError(t, err)
	require.NoError(t, g.Stop())
	require.NoError(t, g.Stop(), "Stop is idempotent")
	<-g.Done()

	// Same data dir, same bucket: Start finds the bucket and keeps the data.
	g2 := startGateway(t, gateway.Options{DataDir: dir, Bucket: "qo-data"})
	s2 := storeOn(t, g2, "qo-data")
	obj, err := s2.Get(ctx, "k")
	require.NoError(t, err)
	require.Equal(t, "two", string(obj.Body))
	vs, err := s2.ListVersions(ctx, "k")
	require.NoError(t, err)
	require.Len(t, vs, 2)
	old, err := s2.GetVersion(ctx, "k", vs[1].VersionID)
	require.NoError(t, err)
	require.Equal(t, "one", string(old.Body))
	for _, sub := range []string{"buckets/qo-data", "versions"} {
		require.DirExists(t, filepath.Join(dir, sub))
	}
}

func TestSidecarChoiceIsSticky(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	g := startGateway(t, gateway.Options{DataDir: dir, SidecarMetadata: true, Bucket: "qo-b1"})
	require.True(t, g.SidecarMetadata())
	require.DirExists(t, filepath.Join(dir, "meta"))
	require.NoError(t, g.Stop())
	// Without the option, an existing meta/ directory keeps sidecar mode.
	g2 := startGateway(t, gateway.Options{DataDir: dir, Bucket: "qo-b1"})
	require.True(t, g2.SidecarMetadata())
}

func TestStartRejectsBadOptions(t *testing.T) {
	t.Parallel()
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { _ = busy.Close() })

	tests := []struct {
		name string
		opts gateway.Options
		want string
	}{
		{"no data dir", gateway.Options{AccessKey: "a", SecretKey: "b"}, "DataDir is required"},
		{"no credentials", gateway.Options{DataDir: t.TempDir()}, "AccessKey and SecretKey are required"},
		{"address without port", gateway.Options{DataDir: t.TempDir(), AccessKey: "a", SecretKey: "b", Addr: "127.0.0.1"}, "must be host:port"},
		{"bad port", gateway.Options{DataDir: t.TempDir(), AccessKey: "a", SecretKey: "b", Addr: "127.0.0.1:http"}, "port must be a number"},
		{"short bucket name", gateway.Options{DataDir: t.TempDir(), AccessKey: "a", SecretKey: "b", Bucket: "qo"}, "bucket name \"qo\" is invalid"},
		{"bucket name with capitals", gateway.Options{DataDir: t.TempDir(), AccessKey: "a", SecretKey: "b", Bucket: "Jobs"}, "is invalid"},
		{"address in use", gateway.Options{DataDir: t.TempDir(), AccessKey: "a", SecretKey: "b", Addr: busy.Addr().String()}, "address already in use"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var logs bytes.Buffer
			tt.opts.Logger = slog.New(slog.NewTextHandler(&logs, nil))
			g, err := gateway.Start(context.Background(), tt.opts)
			if err == nil {
				_ = g.Stop()
			}
			require.ErrorContains(t, err, tt.want)
		})
	}
}

// TestChildDiesWithParent kills (SIGKILL) a process that started a gateway
// and checks that the gateway child goes away too.
func TestChildDiesWithParent(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("reads process state from /proc")
	}
	t.Parallel()
	exe, err := os.Executable()
	require.NoError(t, err)
	helper := exec.Command(exe)
	helper.Env = append(os.Environ(), helperEnv+"="+t.TempDir())
	stderr := &testutil.Buffer{}
	helper.Stderr = stderr
	out, err := helper.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, helper.Start())
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		_ = helper.Process.Kill()
		_ = helper.Wait()
		t.Fatalf("helper printed no pid: %v; stderr: %s", err, stderr.String())
	}
	pid, err := strconv.Atoi(strings.TrimSpace(strings.TrimPrefix(line, "pid ")))
	require.NoError(t, err, line)
	require.True(t, testutil.ProcessAlive(pid), "gateway child should run while its parent lives")

	require.NoError(t, helper.Process.Kill())
	_ = helper.Wait()
	if s := stderr.String(); s != "" {
		t.Logf("helper stderr: %s", s)
	}
	testutil.Eventually(t, func() bool { return !testutil.ProcessAlive(pid) }, "gateway child %d to die with its parent", pid)
}

// BenchmarkStart measures the time from Start to a gateway that answers S3
// requests with a versioned bucket, and the child's resident memory.
func BenchmarkStart(b *testing.B) {
	var rss int64
	for b.Loop() {
		dir := b.TempDir()
		g, err := gateway.Start(context.Background(), gateway.Options{
			DataDir: dir, AccessKey: testAccessKey, SecretKey: testSecretKey, Bucket: "bench",
		})
		require.NoError(b, err)
		b.StopTimer()
		rss = max(rss, rssKiB(g.PID()))
		require.NoError(b, g.Stop())
		b.StartTimer()
	}
	if rss > 0 {
		b.ReportMetric(float64(rss)/1024, "child-rss-MiB")
	}
}

// rssKiB reads VmRSS of pid on Linux (0 elsewhere).
func rssKiB(pid int) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmRSS:" {
			n, _ := strconv.ParseInt(f[1], 10, 64)
			return n
		}
	}
	return 0
}

// TestWrongKeys: wrong credentials against a bucket that exists are
// reported as refused credentials, never as a missing bucket (versitygw
// answers an unknown access key with 404).
func TestWrongKeys(t *testing.T) {
	t.Parallel()
	g := sharedGateway(t)
	bucket := newStore(t, g).Bucket()
	tests := []struct{ name, access, secret string }{
		{"unknown access key", "qo-no-such-user", testSecretKey},
		{"wrong secret", testAccessKey, "wrong-secret"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			s, err := s3store.New(ctx, s3store.Config{
				Endpoint: g.Endpoint(), Region: g.Region(), Bucket: bucket,
				AccessKey: tc.access, SecretKey: tc.secret, PathStyle: true, MaxAttempts: 1,
			})
			require.NoError(t, err)
			_, err = s.Versioning(ctx)
			require.ErrorIs(t, err, store.ErrAccessDenied)
			require.NotErrorIs(t, err, store.ErrBucketNotFound)
			_, err = s.List(ctx, store.ListParams{Prefix: "tasks/"})
			require.ErrorIs(t, err, store.ErrAccessDenied)
			require.NotErrorIs(t, err, store.ErrBucketNotFound)
		})
	}
}
