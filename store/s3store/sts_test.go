package s3store_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/qo-queue/qo/queue"
	"github.com/qo-queue/qo/store"
	"github.com/qo-queue/qo/store/s3store"
	"github.com/qo-queue/qo/store/storetest"
)

// TestTempCredentials mints credentials scoped to the queue's keys from
// MinIO's STS and uses them: they work on the queue's keys of their bucket
// and nowhere else.
func TestTempCredentials(t *testing.T) {
	t.Parallel()
	s := storetest.MinIO(t)
	other := storetest.MinIO(t)
	ctx := context.Background()
	creds, err := s.TempCredentials(ctx, s3store.TempCredentialsOptions{Access: s3store.Access{Read: queue.Keys(), Put: []string{queue.TasksPrefix}, Delete: []string{queue.TasksPrefix}}, Duration: 20 * time.Minute})
	require.NoError(t, err)
	require.NotEmpty(t, creds.SessionToken)
	require.WithinDuration(t, time.Now().Add(20*time.Minute), creds.Expires, 2*time.Minute)

	cfg := storetest.S3Config(t, s.Bucket())
	cfg.AccessKey, cfg.SecretKey, cfg.SessionToken = creds.AccessKeyID, creds.SecretAccessKey, creds.SessionToken
	scoped, err := s3store.New(ctx, cfg)
	require.NoError(t, err)
	task := "tasks/0/" + queue.NewID().String() + ".json"
	_, err = scoped.Put(ctx, task, []byte(`{}`), store.Condition{})
	require.NoError(t, err)
	obj, err := scoped.Get(ctx, task)
	require.NoError(t, err)
	require.Equal(t, `{}`, string(obj.Body))
	_, err = scoped.List(ctx, store.ListParams{Prefix: queue.ReadyPrefix})
	require.NoError(t, err, "the page lists the indexes")

	// The web UI's own files are public code every operator runs: a link's
	// credentials must not replace them, nor touch anything outside the
	// queue's keys.
	for _, key := range []string{"ui/index.html", "ui/app.js", "notes/probe.json"} {
		_, err = scoped.Put(ctx, key, []byte(`alert(1)`), store.Condition{})
		require.ErrorIs(t, err, store.ErrAccessDenied, "writing %s", key)
	}
	_, err = s.Put(ctx, "ui/index.html", []byte(`<p>qo</p>`), store.Condition{})
	require.NoError(t, err)
	require.ErrorIs(t, scoped.Delete(ctx, "ui/index.html", store.Condition{}), store.ErrAccessDenied)

	cfg.Bucket = other.Bucket()
	outside, err := s3store.New(ctx, cfg)
	require.NoError(t, err)
	_, err = outside.Put(ctx, task, []byte(`{}`), store.Condition{})
	require.ErrorIs(t, err, store.ErrAccessDenied, "the credentials are scoped to one bucket")
}

func TestSessionPolicy(t *testing.T) {
	t.Parallel()
	doc, err := s3store.SessionPolicy("b", s3store.Access{Read: []string{"queue.json", "tasks/"}, Put: []string{"tasks/"}, Delete: []string{"ready/"}})
	require.NoError(t, err)
	require.JSONEq(t, `{"Version":"2012-10-17","Statement":[
		{"Effect":"Allow","Action":["s3:GetObject","s3:GetObjectVersion"],"Resource":["arn:aws:s3:::b/queue.json"]},
		{"Effect":"Allow","Action":["s3:GetObject","s3:GetObjectVersion","s3:PutObject"],"Resource":["arn:aws:s3:::b/tasks/*"]},
		{"Effect":"Allow","Action":["s3:DeleteObject"],"Resource":["arn:aws:s3:::b/ready/*"]},
		{"Effect":"Allow","Action":["s3:ListBucket","s3:ListBucketVersions"],"Resource":["arn:aws:s3:::b"]}]}`, doc)

	doc, err = s3store.SessionPolicy("b", s3store.Access{Read: []string{"tasks/"}})
	require.NoError(t, err)
	require.NotContains(t, doc, "Put", "read-only: no write statement")
	require.NotContains(t, doc, "Delete")

	for _, keys := range [][]string{nil, {""}, {"/"}, {"tasks/*"}, {"tasks/", "ui?"}} {
		_, err := s3store.SessionPolicy("b", s3store.Access{Read: keys})
		require.Error(t, err, "read %q", keys)
		_, err = s3store.SessionPolicy("b", s3store.Access{Read: []string{"tasks/"}, Put: keys, Delete: keys})
		if len(keys) > 0 {
			require.Error(t, err, "put %q", keys)
		}
	}
}
