package connect

import (
	"context"
	"os"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/qo-queue/qo/queue"
	"github.com/qo-queue/qo/store/s3store"
	"github.com/qo-queue/qo/store/storetest"
)

// TestOpenS3 opens queues on the test S3 server: by settings (credentials
// from the AWS variables) and through a qo dev state file. Not parallel:
// it sets the environment.
func TestOpenS3(t *testing.T) {
	ctx := context.Background()
	withQueue := storetest.MinIO(t)
	_, err := queue.Init(ctx, withQueue, 1)
	require.NoError(t, err)
	empty := storetest.MinIO(t)
	cfg := storetest.S3Config(t, storetest.BucketName())
	unversioned, err := s3store.New(ctx, cfg)
	require.NoError(t, err)
	require.NoError(t, unversioned.CreateBucket(ctx))
	t.Cleanup(func() { storetest.RemoveBucket(t, unversioned) })
	t.Setenv("AWS_ACCESS_KEY_ID", cfg.AccessKey)
	t.Setenv("AWS_SECRET_ACCESS_KEY", cfg.SecretKey)
	t.Setenv(EnvDevDataDir, t.TempDir()) // no qo dev unless a case writes one

	tests := []struct {
		name     string
		settings Settings
		dev      bool // a qo dev state file names withQueue's bucket
		err      error
	}{
		{"a versioned bucket with a queue", Settings{Bucket: withQueue.Bucket(), Endpoint: cfg.Endpoint, Region: cfg.Region}, false, nil},
		{"the bucket of a running qo dev", Settings{}, true, nil},
		{"no queue in the bucket", Settings{Bucket: empty.Bucket(), Endpoint: cfg.Endpoint, Region: cfg.Region}, false, queue.ErrNotInitialized},
		{"versioning off", Settings{Bucket: unversioned.Bucket(), Endpoint: cfg.Endpoint, Region: cfg.Region}, false, ErrVersioningOff},
		{"versioning off, allowed: then the missing queue", Settings{Bucket: unversioned.Bucket(), Endpoint: cfg.Endpoint, Region: cfg.Region, AllowNoVersioning: true}, false, queue.ErrNotInitialized},
		{"nothing set, no qo dev", Settings{}, false, ErrNoBucket},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.dev {
				dir := t.TempDir()
				t.Setenv(EnvDevDataDir, dir)
				// Other credentials in the environment: the state file's win.
				t.Setenv("AWS_ACCESS_KEY_ID", "wrong")
				writeDevState(t, dir, DevState{Endpoint: cfg.Endpoint, Bucket: withQueue.Bucket(), Region: cfg.Region,
					AccessKey: cfg.AccessKey, SecretKey: cfg.SecretKey, PID: os.Getpid()})
			}
			q, err := tt.settings.Open(ctx, queue.Options{})
			if tt.err != nil {
				require.ErrorIs(t, err, tt.err)
				return
			}
			require.NoError(t, err)
			task, _, err := q.Submit(ctx, queue.SubmitRequest{Type: "echo"})
			require.NoError(t, err)
			got, err := q.Get(ctx, task.ID)
			require.NoError(t, err)
			require.Equal(t, queue.StatusPending, got.Status)
		})
	}
}
