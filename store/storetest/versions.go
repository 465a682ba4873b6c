package storetest

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/qo-queue/qo/store"
)

func testVersions(t *testing.T, s store.Store) {
	ctx := ctxFor(t)
	key := "ver/task.json"
	vs, err := s.ListVersions(ctx, key)
	require.NoError(t, err, "versions of a key never written")
	require.Empty(t, vs)

	// Keys that share the prefix must not leak into the key's versions.
	// (No "ver/task.json/x": see store.Store on keys and directories.)
	for _, other := range []string{"ver/task.json2", "ver/task.json.bak", "ver/task.jso"} {
		_, err := s.Put(ctx, other, []byte("noise"), store.Condition{})
		require.NoError(t, err)
	}

	var puts []store.PutResult
	var bodies []string
	for i := range 5 {
		body := fmt.Sprintf(`{"rev":%d}`, i)
		cond := store.Condition{}
		if i > 0 {
			cond = store.IfMatch(puts[i-1].ETag)
		}
		res, err := s.Put(ctx, key, []byte(body), cond)
		require.NoError(t, err)
		puts = append(puts, res)
		bodies = append(bodies, body)
	}
	// A repeated body makes a new version with an ETag equal to an old one.
	res, err := s.Put(ctx, key, []byte(bodies[0]), store.Condition{})
	require.NoError(t, err)
	puts = append(puts, res)
	bodies = append(bodies, bodies[0])
	require.Equal(t, puts[0].ETag, res.ETag, "same bytes, same ETag")
	require.NotEqual(t, puts[0].VersionID, res.VersionID, "same bytes, new version")

	checkVersions := func(vs []store.Version, markers int) {
		t.Helper()
		require.Len(t, vs, len(puts)+markers)
		for i, v := range vs {
			require.Equal(t, key, v.Key)
			require.Equal(t, i == 0, v.IsLatest, "only the newest version is latest")
		}
		for i := range markers {
			require.True(t, vs[i].DeleteMarker)
		}
		for i, v := range vs[markers:] {
			p := len(puts) - 1 - i // newest first
			require.False(t, v.DeleteMarker)
			require.Equal(t, puts[p].VersionID, v.VersionID, "version %d is put %d (newest first)", i, p)
			require.Equal(t, puts[p].ETag, v.ETag)
			require.Equal(t, int64(len(bodies[p])), v.Size)
			obj, err := s.GetVersion(ctx, key, v.VersionID)
			require.NoError(t, err)
			require.Equal(t, bodies[p], string(obj.Body))
			require.Equal(t, puts[p].ETag, obj.ETag)
			require.Equal(t, v.VersionID, obj.VersionID)
		}
		// Versions (not delete markers, whose time some servers report
		// oddly) are newest first by time too.
		for i := markers + 1; i < len(vs); i++ {
			require.False(t, vs[i].LastModified.After(vs[i-1].LastModified), "newest first by time too")
		}
	}
	vs, err = s.ListVersions(ctx, key)
	require.NoError(t, err)
	checkVersions(vs, 0)

	// After a delete: a delete marker on top, old versions still readable.
	require.NoError(t, s.Delete(ctx, key, store.Condition{}))
	vs, err = s.ListVersions(ctx, key)
	require.NoError(t, err)
	checkVersions(vs, 1)
	_, err = s.GetVersion(ctx, key, vs[0].VersionID)
	require.ErrorIs(t, err, store.ErrNotFound, "the version of a delete marker has no body")

	// Writing again stacks a new version on top of the marker.
	res, err = s.Put(ctx, key, []byte(`{"rev":"back"}`), store.Condition{})
	require.NoError(t, err)
	vs, err = s.ListVersions(ctx, key)
	require.NoError(t, err)
	require.Len(t, vs, len(puts)+2)
	require.Equal(t, res.VersionID, vs[0].VersionID)
	require.True(t, vs[1].DeleteMarker)

	_, err = s.GetVersion(ctx, key, "qo-no-such-version")
	require.ErrorIs(t, err, store.ErrNotFound, "unknown version id")
	_, err = s.GetVersion(ctx, "ver/missing.json", puts[0].VersionID)
	require.ErrorIs(t, err, store.ErrNotFound, "version id of another key")
}

func testDelete(t *testing.T, s store.Store) {
	ctx := ctxFor(t)
	_, err := s.Put(ctx, "del/a", []byte("a"), store.Condition{})
	require.NoError(t, err)
	require.NoError(t, s.Delete(ctx, "del/a", store.Condition{}))
	_, err = s.Get(ctx, "del/a")
	require.ErrorIs(t, err, store.ErrNotFound)
	require.NoError(t, s.Delete(ctx, "del/a", store.Condition{}), "deleting a deleted key")
	require.NoError(t, s.Delete(ctx, "del/never-written", store.Condition{}), "deleting a missing key")

	// A conditional delete with the current ETag deletes.
	res, err := s.Put(ctx, "del/b", []byte("b1"), store.Condition{})
	require.NoError(t, err)
	require.NoError(t, s.Delete(ctx, "del/b", store.IfMatch(res.ETag)))
	_, err = s.Get(ctx, "del/b")
	require.ErrorIs(t, err, store.ErrNotFound)

	// With a stale ETag it is best-effort: refused, or (on servers that
	// ignore If-Match on DELETE) performed. Nothing else is acceptable.
	old, err := s.Put(ctx, "del/c", []byte("c1"), store.Condition{})
	require.NoError(t, err)
	_, err = s.Put(ctx, "del/c", []byte("c2"), store.Condition{})
	require.NoError(t, err)
	err = s.Delete(ctx, "del/c", store.IfMatch(old.ETag))
	obj, getErr := s.Get(ctx, "del/c")
	if err == nil {
		require.ErrorIs(t, getErr, store.ErrNotFound, "a delete that reports success deleted")
	} else {
		require.ErrorIs(t, err, store.ErrPreconditionFailed)
		require.NoError(t, getErr)
		require.Equal(t, "c2", string(obj.Body), "a refused delete changes nothing")
	}

	// Create-only cannot guard a delete.
	require.Error(t, s.Delete(ctx, "del/d", store.CreateOnly))

	// Deleted keys leave listings.
	page, err := s.List(ctx, store.ListParams{Prefix: "del/"})
	require.NoError(t, err)
	for _, o := range page.Objects {
		require.Equal(t, "del/c", o.Key, "only the key whose delete was refused is listed")
	}
}
