package s3store_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/qo-queue/qo/store"
	"github.com/qo-queue/qo/store/s3store"
	"github.com/qo-queue/qo/store/storetest"
)

// TestTempCredentials mints bucket-scoped credentials from MinIO's STS and
// uses them: they work in their bucket and nowhere else.
func TestTempCredentials(t *testing.T) {
	t.Parallel()
	s := storetest.MinIO(t)
	other := storetest.MinIO(t)
	ctx := context.Background()
	creds, err := s.TempCredentials(ctx, s3store.TempCredentialsOptions{Duration: 20 * time.Minute})
	require.NoError(t, err)
	require.NotEmpty(t, creds.SessionToken)
	require.WithinDuration(t, time.Now().Add(20*time.Minute), creds.Expires, 2*time.Minute)

	cfg := storetest.S3Config(t, s.Bucket())
	cfg.AccessKey, cfg.SecretKey, cfg.SessionToken = creds.AccessKeyID, creds.SecretAccessKey, creds.SessionToken
	scoped, err := s3store.New(ctx, cfg)
	require.NoError(t, err)
	_, err = scoped.Put(ctx, "probe.json", []byte(`{}`), store.Condition{})
	require.NoError(t, err)
	obj, err := scoped.Get(ctx, "probe.json")
	require.NoError(t, err)
	require.Equal(t, `{}`, string(obj.Body))

	cfg.Bucket = other.Bucket()
	outside, err := s3store.New(ctx, cfg)
	require.NoError(t, err)
	_, err = outside.Put(ctx, "probe.json", []byte(`{}`), store.Condition{})
	require.ErrorIs(t, err, store.ErrAccessDenied, "the credentials are scoped to one bucket")
}
