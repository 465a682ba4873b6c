package memstore_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/qo-queue/qo/store"
	"github.com/qo-queue/qo/store/memstore"
	"github.com/qo-queue/qo/store/storetest"
)

func TestConformance(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(testing.TB) store.Store { return memstore.New() })
}

func TestClock(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clk := storetest.NewClock(time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC))
	s := memstore.New(memstore.WithClock(clk))

	now, err := s.Now(ctx)
	require.NoError(t, err)
	require.Equal(t, clk.Now(), now)

	_, err = s.Put(ctx, "a", []byte("1"), store.Condition{})
	require.NoError(t, err)
	clk.Advance(time.Hour)
	_, err = s.Put(ctx, "a", []byte("2"), store.Condition{})
	require.NoError(t, err)

	obj, err := s.Get(ctx, "a")
	require.NoError(t, err)
	require.Equal(t, clk.Now(), obj.LastModified)
	vs, err := s.ListVersions(ctx, "a")
	require.NoError(t, err)
	require.Len(t, vs, 2)
	require.Equal(t, time.Hour, vs[0].LastModified.Sub(vs[1].LastModified))
	require.Equal(t, clk.Now(), store.ServerClock(s).Now())
}

func TestCreateOnlyAfterDelete(t *testing.T) {
	t.Parallel()
	// memstore follows AWS S3 and MinIO here (versitygw refuses).
	ctx := context.Background()
	s := memstore.New()
	_, err := s.Put(ctx, "k", []byte("1"), store.CreateOnly)
	require.NoError(t, err)
	require.NoError(t, s.Delete(ctx, "k", store.Condition{}))
	_, err = s.Put(ctx, "k", []byte("2"), store.CreateOnly)
	require.NoError(t, err)
}

func TestDeleteMissingWritesMarker(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := memstore.New()
	require.NoError(t, s.Delete(ctx, "k", store.Condition{}))
	vs, err := s.ListVersions(ctx, "k")
	require.NoError(t, err)
	require.Len(t, vs, 1)
	require.True(t, vs[0].DeleteMarker)
	require.ErrorIs(t, s.Delete(ctx, "k", store.IfMatch(`"abc"`)), store.ErrPreconditionFailed)
}

func TestWithoutVersioning(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := memstore.New(memstore.WithoutVersioning())
	on, err := s.Versioning(ctx)
	require.NoError(t, err)
	require.False(t, on)

	r1, err := s.Put(ctx, "k", []byte("1"), store.Condition{})
	require.NoError(t, err)
	require.Empty(t, r1.VersionID)
	_, err = s.Put(ctx, "k", []byte("2"), store.IfMatch(r1.ETag))
	require.NoError(t, err)
	vs, err := s.ListVersions(ctx, "k")
	require.NoError(t, err)
	require.Len(t, vs, 1, "an unversioned store keeps only the current object")
	require.Equal(t, "null", vs[0].VersionID)
	obj, err := s.GetVersion(ctx, "k", "null")
	require.NoError(t, err)
	require.Equal(t, "2", string(obj.Body))

	require.NoError(t, s.Delete(ctx, "k", store.Condition{}))
	vs, err = s.ListVersions(ctx, "k")
	require.NoError(t, err)
	require.Empty(t, vs, "an unversioned delete leaves nothing")

	// Turning versioning on keeps older objects as the "null" version.
	_, err = s.Put(ctx, "old", []byte("old"), store.Condition{})
	require.NoError(t, err)
	require.NoError(t, s.EnableVersioning(ctx))
	r2, err := s.Put(ctx, "old", []byte("new"), store.Condition{})
	require.NoError(t, err)
	require.NotEmpty(t, r2.VersionID)
	vs, err = s.ListVersions(ctx, "old")
	require.NoError(t, err)
	require.Len(t, vs, 2)
	require.Equal(t, []string{r2.VersionID, "null"}, []string{vs[0].VersionID, vs[1].VersionID})
}

func TestIfMatchForms(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := memstore.New()
	r, err := s.Put(ctx, "k", []byte("1"), store.Condition{})
	require.NoError(t, err)
	require.Equal(t, memstore.ETag([]byte("1")), r.ETag)

	tests := []struct {
		name  string
		etag  string
		wantE error
	}{
		{"unquoted current", r.ETag[1 : len(r.ETag)-1], nil},
		{"wildcard", "*", nil},
		{"other", `"x"`, store.ErrPreconditionFailed},
	}
	for _, tc := range tests {
		_, err := s.Put(ctx, "k", []byte("1"), store.IfMatch(tc.etag))
		if tc.wantE == nil {
			require.NoError(t, err, tc.name)
		} else {
			require.ErrorIs(t, err, tc.wantE, tc.name)
		}
	}
	_, err = s.Put(ctx, "missing", []byte("1"), store.IfMatch("*"))
	require.ErrorIs(t, err, store.ErrPreconditionFailed, "wildcard If-Match on a missing key")
}

func TestListToken(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := memstore.New()
	_, err := s.List(ctx, store.ListParams{Token: "%%%"})
	require.ErrorContains(t, err, "continuation token")
}

func TestAdmin(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := memstore.New()
	require.NoError(t, s.CreateBucket(ctx))
	on, err := s.Versioning(ctx)
	require.NoError(t, err)
	require.True(t, on)

	rules, err := s.Lifecycle(ctx)
	require.NoError(t, err)
	require.Nil(t, rules)
	want := []store.LifecycleRule{{ID: "tasks", Prefix: "tasks/", NoncurrentDays: 30, ExpiredDeleteMarkers: true}}
	require.NoError(t, s.SetLifecycle(ctx, want))
	rules, err = s.Lifecycle(ctx)
	require.NoError(t, err)
	require.Equal(t, want, rules)
	require.Error(t, s.SetLifecycle(ctx, []store.LifecycleRule{{Prefix: "x/"}}), "a rule without id")
	require.NoError(t, s.SetLifecycle(ctx, nil))
	rules, err = s.Lifecycle(ctx)
	require.NoError(t, err)
	require.Nil(t, rules)

	require.NoError(t, s.SetCORS(ctx, []string{"*"}))
	require.Equal(t, int64(9), s.Requests().Snapshot().Total(store.OpOther))
}

func TestCancelledContext(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	s := memstore.New()
	_, err := s.Now(ctx)
	require.ErrorIs(t, err, context.Canceled)
	_, err = s.ListVersions(ctx, "k")
	require.ErrorIs(t, err, context.Canceled)
	require.ErrorIs(t, s.Delete(ctx, "k", store.Condition{}), context.Canceled)
}

func TestIfMatchOnDeletedKey(t *testing.T) {
	t.Parallel()
	// memstore follows AWS S3 and MinIO: once deleted, no ETag matches,
	// not even the one of the version the delete marker hides.
	ctx := context.Background()
	s := memstore.New()
	r, err := s.Put(ctx, "k", []byte("1"), store.Condition{})
	require.NoError(t, err)
	require.NoError(t, s.Delete(ctx, "k", store.Condition{}))
	_, err = s.Put(ctx, "k", []byte("2"), store.IfMatch(r.ETag))
	require.ErrorIs(t, err, store.ErrPreconditionFailed)
	require.ErrorIs(t, s.Delete(ctx, "k", store.IfMatch(r.ETag)), store.ErrPreconditionFailed)
}
