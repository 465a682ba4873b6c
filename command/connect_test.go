package command

import (
	"bytes"
	"context"
	"os"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/urfave/cli/v2"

	"github.com/qo-queue/qo/devenv"
	"github.com/qo-queue/qo/internal/testutil"
	"github.com/qo-queue/qo/store"
	"github.com/qo-queue/qo/store/s3store"
	"github.com/qo-queue/qo/store/storetest"
)

// probeApp is an app with the connection flags and one command, "probe",
// that runs action.
func probeApp(stderr *bytes.Buffer, action cli.ActionFunc) *cli.App {
	probe := &cli.Command{Name: "probe", Action: action}
	prepareCommand(probe, true)
	return &cli.App{
		Name:           "qo",
		Flags:          connectionFlags(),
		Commands:       []*cli.Command{probe},
		ErrWriter:      stderr,
		Writer:         &bytes.Buffer{},
		ExitErrHandler: func(*cli.Context, error) {},
	}
}

func TestStoreConfigFromFlags(t *testing.T) {
	// Not parallel: some cases set environment variables.
	tests := []struct {
		name string
		env  map[string]string
		args []string
		want s3store.Config
		err  string
	}{
		{name: "no bucket", args: []string{"probe"}, err: "no bucket configured: set S3_BUCKET or pass --bucket NAME"},
		{name: "flags after the command", args: []string{"probe", "--bucket", "b1", "--endpoint", "http://h:1"},
			want: s3store.Config{Bucket: "b1", Endpoint: "http://h:1", PathStyle: true}},
		{name: "flags before the command", args: []string{"--bucket", "b2", "--region", "eu-west-1", "probe"},
			want: s3store.Config{Bucket: "b2", Region: "eu-west-1"}},
		{name: "after wins over before", args: []string{"--bucket", "outer", "probe", "--bucket", "inner"},
			want: s3store.Config{Bucket: "inner"}},
		{name: "environment", env: map[string]string{"S3_BUCKET": "envb", "AWS_REGION": "ap-south-1", "AWS_PROFILE": "p"},
			args: []string{"probe"}, want: s3store.Config{Bucket: "envb", Region: "ap-south-1", Profile: "p"}},
		{name: "flag beats environment", env: map[string]string{"S3_BUCKET": "envb"},
			args: []string{"--bucket", "flagb", "probe"}, want: s3store.Config{Bucket: "flagb"}},
		{name: "flag after the command beats environment", env: map[string]string{"S3_BUCKET": "envb", "S3_PATH_STYLE": "true"},
			args: []string{"probe", "--bucket", "flagb", "--path-style=false"}, want: s3store.Config{Bucket: "flagb"}},
		{name: "environment path style", env: map[string]string{"S3_BUCKET": "envb", "S3_PATH_STYLE": "true"},
			args: []string{"probe"}, want: s3store.Config{Bucket: "envb", PathStyle: true}},
		{name: "path style off explicitly", env: map[string]string{"S3_PATH_STYLE": "false"},
			args: []string{"probe", "--bucket", "b", "--endpoint", "http://h:1"},
			want: s3store.Config{Bucket: "b", Endpoint: "http://h:1"}},
		{name: "path style on for AWS", args: []string{"--path-style", "probe", "--bucket", "b"},
			want: s3store.Config{Bucket: "b", PathStyle: true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, v := range []string{"S3_BUCKET", "S3_ENDPOINT", "S3_REGION", "AWS_REGION", "S3_PATH_STYLE", "AWS_PROFILE"} {
				t.Setenv(v, "") // restored after the test
				require.NoError(t, os.Unsetenv(v))
			}
			for k, v := range tt.env {
				t.Setenv(k, v)
			}
			t.Setenv(devenv.EnvDataDir, t.TempDir()) // no `qo dev` to discover
			var got s3store.Config
			var stderr bytes.Buffer
			err := probeApp(&stderr, func(c *cli.Context) error {
				var err error
				got, err = storeConfig(c)
				return err
			}).Run(append([]string{"qo"}, tt.args...))
			if tt.err != "" {
				require.ErrorContains(t, err, tt.err)
				require.Equal(t, exitUsage, exitCode(err))
				return
			}
			require.NoError(t, err)
			require.Equal(t, tt.want, got)
		})
	}
}

func TestOpenStore(t *testing.T) {
	// Not parallel: the credentials and QO_ALLOW_NO_VERSIONING come from
	// the environment.
	good := storetest.MinIO(t)
	cfg := storetest.S3Config(t, good.Bucket())
	unversioned, err := s3store.New(context.Background(), storetest.S3Config(t, storetest.BucketName()))
	require.NoError(t, err)
	require.NoError(t, unversioned.CreateBucket(context.Background()))
	t.Cleanup(func() { storetest.RemoveBucket(t, unversioned) })
	dead := "http://" + testutil.FreeAddr(t)

	tests := []struct {
		name     string
		endpoint string
		bucket   string
		secret   string
		allow    bool
		kind     error
		want     string
		warning  string
	}{
		{name: "healthy", bucket: good.Bucket()},
		{name: "unreachable", endpoint: dead, bucket: good.Bucket(), kind: store.ErrUnreachable,
			want: "cannot reach S3 at " + dead},
		{name: "wrong credentials", bucket: good.Bucket(), secret: "wrong", kind: store.ErrAccessDenied,
			want: "refused the credentials"},
		{name: "missing bucket", bucket: "qo-no-such-bucket", kind: store.ErrBucketNotFound,
			want: `bucket "qo-no-such-bucket" does not exist`},
		{name: "versioning off", bucket: unversioned.Bucket(), want: "has versioning off"},
		{name: "versioning off allowed", bucket: unversioned.Bucket(), allow: true,
			warning: "has versioning off (QO_ALLOW_NO_VERSIONING=1): task history is unavailable"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			endpoint := cfg.Endpoint
			if tt.endpoint != "" {
				endpoint = tt.endpoint
			}
			secret := cfg.SecretKey
			if tt.secret != "" {
				secret = tt.secret
			}
			t.Setenv("AWS_ACCESS_KEY_ID", cfg.AccessKey)
			t.Setenv("AWS_SECRET_ACCESS_KEY", secret)
			t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
			if tt.allow {
				t.Setenv(envAllowNoVersioning, "1")
			} else {
				t.Setenv(envAllowNoVersioning, "")
			}
			var stderr bytes.Buffer
			var s *s3store.Store
			err := probeApp(&stderr, func(c *cli.Context) error {
				var err error
				s, err = openStore(c)
				return err
			}).Run([]string{"qo", "probe", "--endpoint", endpoint, "--bucket", tt.bucket})
			if tt.want == "" {
				require.NoError(t, err)
				require.NotNil(t, s)
				if tt.warning != "" {
					require.Contains(t, stderr.String(), tt.warning)
				} else {
					require.Empty(t, stderr.String())
				}
				return
			}
			require.Error(t, err)
			require.Contains(t, err.Error(), tt.want)
			require.Equal(t, exitStorage, exitCode(err))
			if tt.kind != nil {
				require.ErrorIs(t, err, tt.kind)
			}
			line := errorLine(err)
			require.NotContains(t, line, "\n")
			require.NotContains(t, line, "operation error", "no SDK noise")
		})
	}
}
