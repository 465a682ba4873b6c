// Package storetest is the conformance suite every store.Store
// implementation passes, and the test backends the rest of qo's tests loop
// over.
//
// Run exercises what the queue relies on: linearizable conditional writes
// under contention (create-only and If-Match), reads that never pair one
// write's body with another's ETag, versions newest first with
// their bodies, deletes, list paging, the server clock and the request
// counters. Where real servers legitimately differ (see store.Condition and
// store.Store.Delete) the suite accepts every documented behaviour.
package storetest

import (
	"bytes"
	"context"
	"crypto/md5"
	"encoding/hex"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/qo-queue/qo/store"
)

// Run runs the conformance suite. newStore returns a fresh, empty,
// versioned store each time it is called (it may skip t).
func Run(t *testing.T, newStore func(t testing.TB) store.Store) {
	tests := []struct {
		name string
		fn   func(t *testing.T, s store.Store)
	}{
		{"PutGet", testPutGet},
		{"CreateOnly", testCreateOnly},
		{"IfMatch", testIfMatch},
		{"CreateOnlyRace", testCreateOnlyRace},
		{"IfMatchRace", testIfMatchRace},
		{"NoTornReads", testNoTornReads},
		{"Versions", testVersions},
		{"Delete", testDelete},
		{"ListPaging", testListPaging},
		{"ListDelimiter", testListDelimiter},
		{"Clock", testClock},
		{"Counters", testCounters},
		{"BadInput", testBadInput},
		{"Tags", testTags},
		{"TaggedLifecycle", testTaggedLifecycle},
		{"GetLimited", testGetLimited},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := newStore(t)
			tc.fn(t, s)
		})
	}
}

func ctxFor(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// md5ETag is the ETag S3 servers give a single-part upload of body.
func md5ETag(body []byte) string {
	sum := md5.Sum(body)
	return `"` + hex.EncodeToString(sum[:]) + `"`
}

func testPutGet(t *testing.T, s store.Store) {
	ctx := ctxFor(t)
	for _, body := range [][]byte{
		[]byte(`{"hello":"world"}`),
		{},
		{0, 1, 2, 0xff, 0xfe, '\n'},
		bytes.Repeat([]byte("qo"), 64<<10),
	} {
		key := fmt.Sprintf("putget/%d.json", len(body))
		res, err := s.Put(ctx, key, body, store.Condition{})
		require.NoError(t, err)
		require.Equal(t, md5ETag(body), res.ETag, "the ETag of a simple put is the quoted MD5 of the body")
		require.NotEmpty(t, res.VersionID, "a versioned store returns a version id")

		obj, err := s.Get(ctx, key)
		require.NoError(t, err)
		require.Equal(t, key, obj.Key)
		require.True(t, bytes.Equal(body, obj.Body), "body round-trips")
		require.Equal(t, res.ETag, obj.ETag)
		require.Equal(t, res.VersionID, obj.VersionID)
		require.False(t, obj.LastModified.IsZero())
	}

	_, err := s.Get(ctx, "putget/missing.json")
	require.ErrorIs(t, err, store.ErrNotFound)

	// An unconditional put overwrites.
	_, err = s.Put(ctx, "putget/over", []byte("one"), store.Condition{})
	require.NoError(t, err)
	_, err = s.Put(ctx, "putget/over", []byte("two"), store.Condition{})
	require.NoError(t, err)
	obj, err := s.Get(ctx, "putget/over")
	require.NoError(t, err)
	require.Equal(t, "two", string(obj.Body))

	// The returned body is the caller's to keep.
	obj.Body[0] = 'X'
	again, err := s.Get(ctx, "putget/over")
	require.NoError(t, err)
	require.Equal(t, "two", string(again.Body))
}

func testCreateOnly(t *testing.T, s store.Store) {
	ctx := ctxFor(t)
	res, err := s.Put(ctx, "co/a", []byte("first"), store.CreateOnly)
	require.NoError(t, err)
	_, err = s.Put(ctx, "co/a", []byte("second"), store.CreateOnly)
	require.ErrorIs(t, err, store.ErrPreconditionFailed, "create-only over an existing object")
	obj, err := s.Get(ctx, "co/a")
	require.NoError(t, err)
	require.Equal(t, "first", string(obj.Body), "a failed create-only write changes nothing")
	require.Equal(t, res.ETag, obj.ETag)

	// Identical bytes are no exception.
	_, err = s.Put(ctx, "co/a", []byte("first"), store.CreateOnly)
	require.ErrorIs(t, err, store.ErrPreconditionFailed)

	// Creating a key whose name extends an existing one is independent.
	_, err = s.Put(ctx, "co/a2", []byte("other"), store.CreateOnly)
	require.NoError(t, err)
}

func testIfMatch(t *testing.T, s store.Store) {
	ctx := ctxFor(t)
	key := "im/task.json"
	v1, err := s.Put(ctx, key, []byte(`{"rev":1}`), store.Condition{})
	require.NoError(t, err)

	v2, err := s.Put(ctx, key, []byte(`{"rev":2}`), store.IfMatch(v1.ETag))
	require.NoError(t, err, "If-Match with the current ETag")
	require.NotEqual(t, v1.ETag, v2.ETag)
	require.NotEqual(t, v1.VersionID, v2.VersionID)

	cases := []struct {
		name string
		key  string
		etag string
	}{
		{"stale ETag", key, v1.ETag},
		{"bogus ETag", key, `"00000000000000000000000000000000"`},
		{"garbage ETag", key, `not-an-etag`},
		{"missing key", "im/missing.json", v2.ETag},
	}
	for _, tc := range cases {
		_, err := s.Put(ctx, tc.key, []byte(`{"rev":"lost"}`), store.IfMatch(tc.etag))
		require.ErrorIs(t, err, store.ErrPreconditionFailed, tc.name)
	}
	obj, err := s.Get(ctx, key)
	require.NoError(t, err)
	require.Equal(t, `{"rev":2}`, string(obj.Body), "failed conditional writes change nothing")
	require.Equal(t, v2.ETag, obj.ETag)
	_, err = s.Get(ctx, "im/missing.json")
	require.ErrorIs(t, err, store.ErrNotFound, "a failed If-Match must not create the key")

	// The ETag from Get works as well as the one from Put.
	_, err = s.Put(ctx, key, []byte(`{"rev":3}`), store.IfMatch(obj.ETag))
	require.NoError(t, err)

	// If-Match on a deleted key loses, with an ETag the key once had too.
	// (Not tested: the ETag of the very version the delete marker hides,
	// which versitygw accepts; see store.Condition.)
	require.NoError(t, s.Delete(ctx, key, store.Condition{}))
	for _, etag := range []string{v1.ETag, `"00000000000000000000000000000000"`} {
		_, err = s.Put(ctx, key, []byte(`{"rev":4}`), store.IfMatch(etag))
		require.ErrorIs(t, err, store.ErrPreconditionFailed, "If-Match %s on a deleted key", etag)
	}
	_, err = s.Get(ctx, key)
	require.ErrorIs(t, err, store.ErrNotFound)
}

func testBadInput(t *testing.T, s store.Store) {
	ctx := ctxFor(t)
	_, err := s.Put(ctx, "", []byte("x"), store.Condition{})
	require.Error(t, err, "empty key")
	_, err = s.Get(ctx, "")
	require.Error(t, err, "empty key")

	canceled, cancel := context.WithCancel(ctx)
	cancel()
	_, err = s.Get(canceled, "bad/a")
	require.ErrorIs(t, err, context.Canceled)
	_, err = s.Put(canceled, "bad/a", []byte("x"), store.Condition{})
	require.ErrorIs(t, err, context.Canceled)
	_, err = s.Get(ctx, "bad/a")
	require.ErrorIs(t, err, store.ErrNotFound, "a cancelled put wrote nothing")

	page, err := s.List(ctx, store.ListParams{Prefix: "bad/", Token: "bm90LWEtdG9rZW4"})
	if err == nil {
		require.Empty(t, page.Objects, "a foreign continuation token lists nothing or fails")
	}
}

// testGetLimited: a read bounded with store.GetLimited (store.WithMaxBytes)
// returns an object within the bound and refuses a larger one with a
// *store.TooLargeError that names the key and the bound, for the current
// object and for an old version alike.
func testGetLimited(t *testing.T, s store.Store) {
	ctx := ctxFor(t)
	const key = "limited/obj.json"
	small, err := s.Put(ctx, key, []byte("0123456789"), store.Condition{})
	require.NoError(t, err)
	_, err = s.Put(ctx, key, bytes.Repeat([]byte("x"), 1000), store.IfMatch(small.ETag))
	require.NoError(t, err)

	// Exactly at the bound: read.
	obj, err := store.GetLimited(ctx, s, key, 1000)
	require.NoError(t, err)
	require.Len(t, obj.Body, 1000)
	// Unbounded: read.
	_, err = store.GetLimited(ctx, s, key, 0)
	require.NoError(t, err)

	for _, get := range []struct {
		name string
		fn   func(ctx context.Context) (*store.Object, error)
	}{
		{"Get", func(ctx context.Context) (*store.Object, error) { return s.Get(ctx, key) }},
		{"GetLimited", func(ctx context.Context) (*store.Object, error) { return store.GetLimited(ctx, s, key, 999) }},
	} {
		obj, err := get.fn(store.WithMaxBytes(ctx, 999))
		require.ErrorIs(t, err, store.ErrTooLarge, get.name)
		require.Nil(t, obj, get.name)
		var tl *store.TooLargeError
		require.ErrorAs(t, err, &tl, get.name)
		require.Equal(t, key, tl.Key)
		require.EqualValues(t, 999, tl.Max)
		require.Contains(t, err.Error(), key)
		require.Contains(t, err.Error(), "999 bytes")
	}

	// An old version within the bound reads; the current one over it not.
	_, err = store.GetVersionLimited(ctx, s, key, small.VersionID, 10)
	require.NoError(t, err)
	vs, err := s.ListVersions(ctx, key)
	require.NoError(t, err)
	require.Len(t, vs, 2)
	_, err = store.GetVersionLimited(ctx, s, key, vs[0].VersionID, 10)
	require.ErrorIs(t, err, store.ErrTooLarge)

	// A missing key is still ErrNotFound, whatever the bound.
	_, err = store.GetLimited(ctx, s, "limited/missing.json", 1)
	require.ErrorIs(t, err, store.ErrNotFound)
}
