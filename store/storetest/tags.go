package storetest

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/qo-queue/qo/store"
)

// testTags: a store that tags objects in the writing request keeps the tags
// with that version only, honours the write's condition, and reads them
// back.
func testTags(t *testing.T, s store.Store) {
	tg, ok := s.(store.Tagger)
	if !ok {
		t.Skip("this store does not tag objects")
	}
	ctx := ctxFor(t)
	tags := []store.Tag{{Key: "qo-retention", Value: "finished"}}
	res, err := s.Put(ctx, "tags/obj", []byte(`{"v":1}`), store.CreateOnly)
	require.NoError(t, err)
	_, err = tg.PutTagged(ctx, "tags/obj", []byte(`{"v":2}`), store.IfMatch(`"stale"`), tags)
	require.ErrorIs(t, err, store.ErrPreconditionFailed, "the condition still guards a tagged write")
	got, err := tg.Tags(ctx, "tags/obj")
	require.NoError(t, err)
	require.Empty(t, got)
	_, err = tg.PutTagged(ctx, "tags/obj", []byte(`{"v":2}`), store.IfMatch(res.ETag), tags)
	require.NoError(t, err)
	got, err = tg.Tags(ctx, "tags/obj")
	require.NoError(t, err)
	require.Equal(t, tags, got)
	obj, err := s.Get(ctx, "tags/obj")
	require.NoError(t, err)
	require.JSONEq(t, `{"v":2}`, string(obj.Body))
	// A new version written with other tags carries those. (An untagged
	// write keeps no tags on AWS and MinIO, but versitygw's sidecar mode
	// keeps the previous version's: qo tags every write of a tagged key.)
	live := []store.Tag{{Key: "qo-retention", Value: "live"}}
	_, err = tg.PutTagged(ctx, "tags/obj", []byte(`{"v":3}`), store.Condition{}, live)
	require.NoError(t, err)
	got, err = tg.Tags(ctx, "tags/obj")
	require.NoError(t, err)
	require.Equal(t, live, got, "tags belong to the version that was written with them")
}

// testTaggedLifecycle: a rule expiring current objects that carry a tag is
// stored and read back as given (expiry itself takes days: not testable).
func testTaggedLifecycle(t *testing.T, s store.Store) {
	admin, ok := s.(store.Admin)
	if !ok {
		t.Skip("this store has no bucket administration")
	}
	ctx := ctxFor(t)
	rules := []store.LifecycleRule{
		{ID: "finished", Prefix: "tasks/", Tag: store.Tag{Key: "qo-retention", Value: "finished"}, ExpirationDays: 30},
		{ID: "history", Prefix: "tasks/", NoncurrentDays: 30, ExpiredDeleteMarkers: true},
	}
	err := admin.SetLifecycle(ctx, rules)
	if errors.Is(err, store.ErrNotSupported) {
		t.Skipf("lifecycle rules are not supported here: %v", err)
	}
	require.NoError(t, err)
	got, err := admin.Lifecycle(ctx)
	require.NoError(t, err)
	require.ElementsMatch(t, rules, got)
	require.Error(t, admin.SetLifecycle(ctx, []store.LifecycleRule{{ID: "both", Prefix: "x/", ExpirationDays: 1, ExpiredDeleteMarkers: true}}),
		"S3 refuses expiration days and expired delete markers in one rule")
}
