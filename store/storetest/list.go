package storetest

import (
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/qo-queue/qo/store"
)

// putMany writes keys concurrently (a few at a time) with body = key.
func putMany(t *testing.T, s store.Store, keys []string) {
	t.Helper()
	ctx := ctxFor(t)
	errs := make(chan error, len(keys))
	sem := make(chan struct{}, 8)
	var wg sync.WaitGroup
	for _, k := range keys {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			_, err := s.Put(ctx, k, []byte(k), store.Condition{})
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
}

// listAll pages through a listing and returns the keys and common
// prefixes, checking each page's size and order.
func listAll(t *testing.T, s store.Store, p store.ListParams) (keys, prefixes []string, pages int) {
	t.Helper()
	ctx := ctxFor(t)
	last := ""
	for {
		page, err := s.List(ctx, p)
		require.NoError(t, err)
		pages++
		require.LessOrEqual(t, len(page.Objects)+len(page.CommonPrefixes), p.Limit, "page size (objects and common prefixes)")
		for _, o := range page.Objects {
			require.Greater(t, o.Key, last, "keys in order, no duplicates")
			require.True(t, strings.HasPrefix(o.Key, p.Prefix))
			require.Equal(t, md5ETag([]byte(o.Key)), o.ETag)
			require.Equal(t, int64(len(o.Key)), o.Size)
			require.False(t, o.LastModified.IsZero())
			last = o.Key
			keys = append(keys, o.Key)
		}
		prefixes = append(prefixes, page.CommonPrefixes...)
		if page.NextToken == "" {
			return keys, prefixes, pages
		}
		require.Less(t, pages, 10000, "listing does not end")
		p.Token = page.NextToken
	}
}

func testListPaging(t *testing.T, s store.Store) {
	ctx := ctxFor(t)
	var keys []string
	for i := range 300 {
		keys = append(keys, fmt.Sprintf("ls/k%04d", i))
	}
	putMany(t, s, append(keys, "ls-outside", "lr/x"))

	got, _, pages := listAll(t, s, store.ListParams{Prefix: "ls/", Limit: 70})
	require.Equal(t, keys, got, "every key exactly once, in order")
	require.Equal(t, 5, pages, "300 keys in pages of 70")

	// Exactly full pages: the last page must not be empty-with-a-token
	// forever; one trailing empty page is tolerated.
	got, _, pages = listAll(t, s, store.ListParams{Prefix: "ls/", Limit: 100})
	require.Equal(t, keys, got)
	require.LessOrEqual(t, pages, 4)

	// Start-after skips up to and including the given key, also when
	// it does not exist.
	got, _, _ = listAll(t, s, store.ListParams{Prefix: "ls/", StartAfter: "ls/k0149", Limit: 40})
	require.Equal(t, keys[150:], got)
	got, _, _ = listAll(t, s, store.ListParams{Prefix: "ls/", StartAfter: "ls/k0149x", Limit: 1000})
	require.Equal(t, keys[150:], got)

	// The queue's pattern: one page at a time, resuming with StartAfter.
	var resumed []string
	after := ""
	for {
		page, err := s.List(ctx, store.ListParams{Prefix: "ls/", StartAfter: after, Limit: 64})
		require.NoError(t, err)
		for _, o := range page.Objects {
			resumed = append(resumed, o.Key)
		}
		if page.NextToken == "" {
			break
		}
		after = page.Objects[len(page.Objects)-1].Key
	}
	require.Equal(t, keys, resumed)

	// Default page size covers all 300 in one page.
	page, err := s.List(ctx, store.ListParams{Prefix: "ls/"})
	require.NoError(t, err)
	require.Len(t, page.Objects, 300)
	require.Empty(t, page.NextToken)

	// A prefix that matches nothing.
	page, err = s.List(ctx, store.ListParams{Prefix: "nothing-here/", Limit: 10})
	require.NoError(t, err)
	require.Empty(t, page.Objects)
	require.Empty(t, page.CommonPrefixes)
	require.Empty(t, page.NextToken)

	// A single-key page.
	page, err = s.List(ctx, store.ListParams{Prefix: "ls/", Limit: 1})
	require.NoError(t, err)
	require.Len(t, page.Objects, 1)
	require.Equal(t, "ls/k0000", page.Objects[0].Key)
	require.NotEmpty(t, page.NextToken)
}

func testListDelimiter(t *testing.T, s store.Store) {
	var keys []string
	dirs := []string{"a", "b", "c", "d"}
	for _, d := range dirs {
		for i := range 60 {
			keys = append(keys, fmt.Sprintf("tree/%s/%03d", d, i))
		}
	}
	keys = append(keys, "tree/a-file", "tree/b/sub/deep", "tree/z-file")
	putMany(t, s, keys)

	wantPrefixes := []string{"tree/a/", "tree/b/", "tree/c/", "tree/d/"}
	wantFiles := []string{"tree/a-file", "tree/z-file"}
	for _, limit := range []int{1, 2, 3, 1000} {
		files, prefixes, _ := listAll(t, s, store.ListParams{Prefix: "tree/", Delimiter: "/", Limit: limit})
		require.Equal(t, wantFiles, files, "limit %d", limit)
		require.Equal(t, wantPrefixes, prefixes, "limit %d: each common prefix once", limit)
	}

	// One level down.
	files, prefixes, _ := listAll(t, s, store.ListParams{Prefix: "tree/b/", Delimiter: "/", Limit: 25})
	require.Len(t, files, 60)
	require.Equal(t, []string{"tree/b/sub/"}, prefixes)

	// Start-after combined with a delimiter.
	files, prefixes, _ = listAll(t, s, store.ListParams{Prefix: "tree/", Delimiter: "/", StartAfter: "tree/b/zzz", Limit: 2})
	require.Equal(t, []string{"tree/z-file"}, files)
	require.Equal(t, []string{"tree/c/", "tree/d/"}, prefixes)

	// No delimiter: everything, in order.
	all, prefixes, _ := listAll(t, s, store.ListParams{Prefix: "tree/", Limit: 100})
	require.Empty(t, prefixes)
	want := append([]string(nil), keys...)
	sort.Strings(want)
	require.Equal(t, want, all)
}
