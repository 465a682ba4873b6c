package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"net"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/qo-queue/qo/internal/testutil"
	"github.com/qo-queue/qo/store/s3store"
	"github.com/qo-queue/qo/store/storetest"
)

// Exit codes of qo (see command/exitcodes.go).
const (
	exitUsage   = 2
	exitStorage = 5
)

// s3Env points qo at bucket on the test S3 server.
func s3Env(t *testing.T, bucket string) []string {
	cfg := storetest.S3Config(t, bucket)
	return []string{
		"S3_ENDPOINT=" + cfg.Endpoint,
		"S3_BUCKET=" + bucket,
		"S3_REGION=" + cfg.Region,
		"AWS_ACCESS_KEY_ID=" + cfg.AccessKey,
		"AWS_SECRET_ACCESS_KEY=" + cfg.SecretKey,
	}
}

// unversionedBucket creates a bucket without versioning on the test server.
func unversionedBucket(t *testing.T) string {
	t.Helper()
	cfg := storetest.S3Config(t, storetest.BucketName())
	s, err := s3store.New(context.Background(), cfg)
	require.NoError(t, err)
	require.NoError(t, s.CreateBucket(context.Background()))
	t.Cleanup(func() { storetest.RemoveBucket(t, s) })
	return cfg.Bucket
}

// doctorJSON is the part of `qo doctor --json` the tests read.
type doctorJSON struct {
	Target string `json:"target"`
	OK     bool   `json:"ok"`
	Checks []struct {
		Name   string `json:"name"`
		Status string `json:"status"`
		Detail string `json:"detail"`
		Fix    string `json:"fix"`
	} `json:"checks"`
}

func requireHealthyReport(t *testing.T, r result) {
	t.Helper()
	require.Equal(t, 0, r.code, r.String())
	require.Empty(t, r.stderr)
	require.Contains(t, r.stdout, "all checks passed", r.String())
	for _, check := range []string{"reachable", "credentials", "bucket", "versioning", "create-only",
		"if-match", "torn-reads", "list-paging", "versions", "clock", "lifecycle", "retention", "cleanup"} {
		require.Contains(t, r.stdout, check)
	}
}

func TestDoctorPassesOnMinIO(t *testing.T) {
	t.Parallel()
	bucket := storetest.MinIO(t).Bucket()
	env := s3Env(t, bucket)

	requireHealthyReport(t, qo(t, env, "doctor"))

	r := qo(t, env, "doctor", "--json")
	require.Equal(t, 0, r.code, r.String())
	var rep doctorJSON
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &rep), r.stdout)
	require.True(t, rep.OK)
	require.Len(t, rep.Checks, 13)
	require.Contains(t, rep.Target, bucket)
	for _, c := range rep.Checks {
		require.Contains(t, []string{"ok", "warn"}, c.Status, "%s: %s", c.Name, c.Detail)
	}

	// Connection flags work before and after the command name.
	creds := env[3:]
	cfg := storetest.S3Config(t, bucket)
	requireHealthyReport(t, qo(t, creds, "--endpoint", cfg.Endpoint, "--bucket", bucket, "doctor"))
	requireHealthyReport(t, qo(t, creds, "doctor", "--endpoint", cfg.Endpoint, "--bucket", bucket))

	// --fix-lifecycle adds the rules; afterwards no check warns.
	r = qo(t, env, "doctor", "--fix-lifecycle", "--json")
	require.Equal(t, 0, r.code, r.String())
	rep = doctorJSON{}
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &rep), r.stdout)
	for _, c := range rep.Checks {
		require.Equal(t, "ok", c.Status, "%s: %s", c.Name, c.Detail)
	}
}

// startGateway runs `qo gateway` and returns the environment it prints.
func startGateway(t *testing.T) []string {
	t.Helper()
	cmd := exec.Command(qoBin, "gateway", "--data-dir", t.TempDir(), "--bucket", "qo-e2e")
	cmd.Env = baseEnv(t)
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	stderr := &testutil.Buffer{}
	cmd.Stderr = stderr
	require.NoError(t, cmd.Start())
	exited := make(chan error, 1)
	t.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		select {
		case err := <-exited:
			require.NoError(t, err, "qo gateway stops cleanly on interrupt; stderr: %s", stderr.String())
		case <-time.After(30 * time.Second):
			_ = cmd.Process.Kill()
			t.Errorf("qo gateway did not stop within 30s of an interrupt")
		}
	})
	var env []string
	sc := bufio.NewScanner(out)
	for len(env) < 6 && sc.Scan() {
		env = append(env, sc.Text())
	}
	if len(env) < 6 {
		t.Fatalf("qo gateway printed %q, want its 6 environment lines; stderr: %s", env, stderr.String())
	}
	go func() {
		for sc.Scan() {
		}
		exited <- cmd.Wait()
	}()
	require.True(t, strings.HasPrefix(env[0], "S3_ENDPOINT=http://127.0.0.1:"), env[0])
	return env
}

func TestDoctorPassesOnEmbeddedGateway(t *testing.T) {
	t.Parallel()
	env := startGateway(t)
	requireHealthyReport(t, qo(t, env, "doctor"))
}

func TestBadInputIsOneClearLine(t *testing.T) {
	t.Parallel()
	good := storetest.MinIO(t).Bucket()
	env := s3Env(t, good)
	endpoint := strings.TrimPrefix(env[0], "S3_ENDPOINT=")
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	deadEndpoint := "http://" + closed.Addr().String()
	require.NoError(t, closed.Close())
	unversioned := unversionedBucket(t)

	with := func(extra ...string) []string { return append(append([]string{}, env...), extra...) }
	tests := []struct {
		name string
		env  []string
		args []string
		code int
		want []string // substrings of the one stderr line
	}{
		{"no bucket", env[:1], []string{"doctor"}, exitUsage,
			[]string{"no bucket configured", "S3_BUCKET", "--bucket"}},
		{"unreachable endpoint", with("S3_ENDPOINT=" + deadEndpoint), []string{"doctor"}, exitStorage,
			[]string{"cannot reach S3 at " + deadEndpoint, "connection refused", "S3_ENDPOINT"}},
		{"wrong credentials", with("AWS_SECRET_ACCESS_KEY=not-the-secret"), []string{"doctor"}, exitStorage,
			[]string{"refused the credentials", "AWS_SECRET_ACCESS_KEY"}},
		{"missing bucket", with("S3_BUCKET=qo-no-such-bucket-e2e"), []string{"doctor"}, exitStorage,
			[]string{`bucket "qo-no-such-bucket-e2e" does not exist at ` + endpoint, "qo init"}},
		{"versioning off", with("S3_BUCKET=" + unversioned), []string{"doctor"}, exitStorage,
			[]string{"versioning off", "put-bucket-versioning", "QO_ALLOW_NO_VERSIONING=1"}},
		{"malformed endpoint", with("S3_ENDPOINT=127.0.0.1:9000"), []string{"doctor"}, exitUsage,
			[]string{"is not a URL like http://127.0.0.1:9000"}},
		{"unknown flag", env, []string{"doctor", "--frobnicate"}, exitUsage,
			[]string{"flag provided but not defined", "qo doctor --help"}},
		{"unknown command", env, []string{"frobnicate"}, exitUsage,
			[]string{`unknown command "frobnicate"`, "qo --help"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := qo(t, tt.env, tt.args...)
			require.Equal(t, tt.code, r.code, r.String())
			line := strings.TrimSuffix(r.stderr, "\n")
			require.NotContains(t, line, "\n", "one line on stderr: %s", r.stderr)
			require.True(t, strings.HasPrefix(line, "qo: "), line)
			for _, w := range tt.want {
				require.Contains(t, line, w)
			}
			for _, noise := range []string{"goroutine ", "panic", "operation error", "RequestID"} {
				require.NotContains(t, line, noise)
			}
		})
	}

	t.Run("versioning off allowed", func(t *testing.T) {
		t.Parallel()
		r := qo(t, with("S3_BUCKET="+unversioned, "QO_ALLOW_NO_VERSIONING=1"), "doctor")
		require.Equal(t, 0, r.code, r.String())
		require.Contains(t, r.stdout, "task history is unavailable")
	})
}

func TestVersionAndHelp(t *testing.T) {
	t.Parallel()
	r := qo(t, nil, "version")
	require.Equal(t, 0, r.code, r.String())
	require.True(t, strings.HasPrefix(r.stdout, "qo "), r.stdout)

	r = qo(t, nil, "--help")
	require.Equal(t, 0, r.code, r.String())
	for _, w := range []string{"Examples:", "S3_BUCKET", "doctor", "Exit codes"} {
		require.Contains(t, r.stdout, w)
	}
	require.NotRegexp(t, `(?m)^\s+gateway\s`, r.stdout, "plumbing stays hidden")
}
