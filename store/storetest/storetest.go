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
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/qo-queue/qo/store"
)

// Contention parameters of the race tests. In -short mode the rounds are
// fewer; CI runs the full suite.
const (
	raceWriters = 20
	raceRounds  = 50
	shortRounds = 8

	tornReaders     = 4
	tornWrites      = 60
	tornShortWrites = 15
)

// clockBound is how far a store's Now may be from the local clock. The
// test servers run on this machine, so the real offset is near zero; the
// bound only catches gross errors (a wrong time zone, seconds read as
// milliseconds, an uninitialised estimate).
const clockBound = 2 * time.Minute

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

func rounds() int {
	if testing.Short() {
		return shortRounds
	}
	return raceRounds
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

// raceResult is one writer's outcome in a round.
type raceResult struct {
	etag string
	err  error
}

// race runs writers concurrently, released together, and returns their
// results.
func race(n int, write func(i int) (string, error)) []raceResult {
	results := make([]raceResult, n)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			etag, err := write(i)
			results[i] = raceResult{etag, err}
		}()
	}
	close(start)
	wg.Wait()
	return results
}

// oneWinner checks that exactly one writer won and every other one got
// ErrPreconditionFailed; it returns the winner.
func oneWinner(t *testing.T, round int, results []raceResult) int {
	t.Helper()
	winner := -1
	for i, r := range results {
		if r.err == nil {
			require.Equal(t, -1, winner, "round %d: writers %d and %d both won", round, winner, i)
			winner = i
			continue
		}
		require.ErrorIs(t, r.err, store.ErrPreconditionFailed, "round %d: writer %d lost with the wrong error", round, i)
	}
	require.NotEqual(t, -1, winner, "round %d: no writer won", round)
	return winner
}

func testCreateOnlyRace(t *testing.T, s store.Store) {
	ctx := ctxFor(t)
	for round := range rounds() {
		key := fmt.Sprintf("corace/%03d", round)
		results := race(raceWriters, func(i int) (string, error) {
			res, err := s.Put(ctx, key, fmt.Appendf(nil, "round %d writer %d", round, i), store.CreateOnly)
			return res.ETag, err
		})
		w := oneWinner(t, round, results)
		obj, err := s.Get(ctx, key)
		require.NoError(t, err)
		require.Equal(t, fmt.Sprintf("round %d writer %d", round, w), string(obj.Body), "round %d: the winner's body is stored", round)
		require.Equal(t, results[w].etag, obj.ETag)
	}
}

func testIfMatchRace(t *testing.T, s store.Store) {
	ctx := ctxFor(t)
	key := "imrace/task.json"
	res, err := s.Put(ctx, key, []byte("round -1"), store.CreateOnly)
	require.NoError(t, err)
	etag := res.ETag
	for round := range rounds() {
		results := race(raceWriters, func(i int) (string, error) {
			res, err := s.Put(ctx, key, fmt.Appendf(nil, "round %d writer %d", round, i), store.IfMatch(etag))
			return res.ETag, err
		})
		w := oneWinner(t, round, results)
		obj, err := s.Get(ctx, key)
		require.NoError(t, err)
		require.Equal(t, fmt.Sprintf("round %d writer %d", round, w), string(obj.Body), "round %d: the winner's body is stored", round)
		require.Equal(t, results[w].etag, obj.ETag)
		etag = obj.ETag
	}
	versions, err := s.ListVersions(ctx, key)
	require.NoError(t, err)
	require.Len(t, versions, rounds()+1, "one version per winning write, none for the losers")
}

func testNoTornReads(t *testing.T, s store.Store) {
	writes := tornWrites
	if testing.Short() {
		writes = tornShortWrites
	}
	bad, reads, err := tornReads(ctxFor(t), s, "torn/task.json", writes, tornReaders)
	require.NoError(t, err)
	require.NotZero(t, reads)
	require.Empty(t, bad[:min(len(bad), 5)], "%d of %d GETs during %d chained If-Match PUTs were inconsistent (the first ones shown)", len(bad), reads, writes)
}

// tornReads writes key writes times, each PUT presenting the ETag the
// previous one returned, while readers goroutines GET it until the writes
// are done, and once more after. It returns what was wrong with the GETs
// (empty on a conforming store) and how many there were. A GET is wrong
// when its body and ETag come from different writes (a torn read, which
// lets a compare-and-swap succeed on a stale read), when its ETag is none
// a PUT returned, or when it returns a write older than one whose PUT had
// returned before the GET was sent. err reports a request that failed.
func tornReads(ctx context.Context, s store.Store, key string, writes, readers int) (bad []string, reads int, err error) {
	pad := strings.Repeat("q", 1<<10)
	bodyOf := func(seq int) []byte { return fmt.Appendf(nil, `{"seq":%d,"pad":%q}`, seq, pad) }
	res, err := s.Put(ctx, key, bodyOf(0), store.Condition{})
	if err != nil {
		return nil, 0, fmt.Errorf("first write: %w", err)
	}
	type read struct {
		floor int // the newest write whose PUT had returned when the GET was sent
		seq   int // the write the body names (-1: none)
		etag  string
	}
	var (
		mu       sync.Mutex
		seqOf    = map[string]int{res.ETag: 0}
		returned int
		all      []read
		readErr  error
		wg       sync.WaitGroup
	)
	done := make(chan struct{})
	for range readers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				last := false
				select {
				case <-done:
					last = true // one read of the last write
				default:
				}
				mu.Lock()
				floor := returned
				mu.Unlock()
				obj, err := s.Get(ctx, key)
				mu.Lock()
				if err != nil {
					if readErr == nil {
						readErr = err
					}
					mu.Unlock()
					return
				}
				r := read{floor: floor, seq: -1, etag: obj.ETag}
				var b struct {
					Seq *int `json:"seq"`
				}
				if json.Unmarshal(obj.Body, &b) == nil && b.Seq != nil {
					r.seq = *b.Seq
				}
				all = append(all, r)
				mu.Unlock()
				if last {
					return
				}
			}
		}()
	}
	etag := res.ETag
	var writeErr error
	for i := 1; i <= writes; i++ {
		res, err := s.Put(ctx, key, bodyOf(i), store.IfMatch(etag))
		if err != nil {
			writeErr = fmt.Errorf("write %d (If-Match the ETag write %d returned): %w", i, i-1, err)
			break
		}
		mu.Lock()
		seqOf[res.ETag], returned = i, i
		mu.Unlock()
		etag = res.ETag
	}
	close(done)
	wg.Wait()
	if writeErr != nil {
		return nil, len(all), writeErr
	}
	if readErr != nil {
		return nil, len(all), fmt.Errorf("GET during the writes: %w", readErr)
	}
	for _, r := range all {
		seq, known := seqOf[r.etag]
		switch {
		case r.seq < 0:
			bad = append(bad, fmt.Sprintf("a body that is none of the writes, ETag %s", r.etag))
		case !known:
			bad = append(bad, fmt.Sprintf("the body of write %d with ETag %s, which no write returned", r.seq, r.etag))
		case seq != r.seq:
			bad = append(bad, fmt.Sprintf("the body of write %d with the ETag of write %d (torn)", r.seq, seq))
		case r.seq < r.floor:
			bad = append(bad, fmt.Sprintf("write %d, sent after write %d had returned (stale)", r.seq, r.floor))
		}
	}
	return bad, len(all), nil
}

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

func testClock(t *testing.T, s store.Store) {
	ctx := ctxFor(t)
	// Before any other request: a store must still tell the time.
	now, err := s.Now(ctx)
	require.NoError(t, err)
	require.WithinDuration(t, time.Now(), now, clockBound, "server time is near local time")

	res, err := s.Put(ctx, "clock/a", []byte("a"), store.Condition{})
	require.NoError(t, err)
	obj, err := s.Get(ctx, "clock/a")
	require.NoError(t, err)
	require.Equal(t, res.ETag, obj.ETag)
	now, err = s.Now(ctx)
	require.NoError(t, err)
	require.WithinDuration(t, now, obj.LastModified, clockBound, "last-modified is on the server clock")
	require.WithinDuration(t, time.Now(), now, clockBound)

	// Now reads a cached estimate: asking repeatedly sends no request.
	if c, ok := s.(store.Counted); ok {
		before := c.Requests().Snapshot()
		for range 10 {
			_, err := s.Now(ctx)
			require.NoError(t, err)
		}
		diff := c.Requests().Snapshot().Sub(before)
		require.Empty(t, diff.String(), "Now sent requests: %s", diff)
	}

	require.WithinDuration(t, time.Now(), store.ServerClock(s).Now(), clockBound)
}

func testCounters(t *testing.T, s store.Store) {
	c, ok := s.(store.Counted)
	if !ok {
		t.Skip("the store does not count requests")
	}
	ctx := ctxFor(t)
	res, err := s.Put(ctx, "cnt/a", []byte("a"), store.Condition{})
	require.NoError(t, err)

	steps := []struct {
		name   string
		op     store.Op
		failed bool
		do     func() error
	}{
		{"put", store.OpPut, false, func() error {
			_, err := s.Put(ctx, "cnt/b", []byte("b"), store.Condition{})
			return err
		}},
		{"lost put", store.OpPut, true, func() error {
			_, err := s.Put(ctx, "cnt/a", []byte("x"), store.CreateOnly)
			if errors.Is(err, store.ErrPreconditionFailed) {
				return nil
			}
			return fmt.Errorf("want precondition failed, got %v", err)
		}},
		{"get", store.OpGet, false, func() error {
			_, err := s.Get(ctx, "cnt/a")
			return err
		}},
		{"get missing", store.OpGet, true, func() error {
			_, err := s.Get(ctx, "cnt/missing")
			if errors.Is(err, store.ErrNotFound) {
				return nil
			}
			return fmt.Errorf("want not found, got %v", err)
		}},
		{"get version", store.OpGet, false, func() error {
			_, err := s.GetVersion(ctx, "cnt/a", res.VersionID)
			return err
		}},
		{"list", store.OpList, false, func() error {
			_, err := s.List(ctx, store.ListParams{Prefix: "cnt/"})
			return err
		}},
		{"list versions", store.OpListVersions, false, func() error {
			_, err := s.ListVersions(ctx, "cnt/a")
			return err
		}},
		{"delete", store.OpDelete, false, func() error {
			return s.Delete(ctx, "cnt/b", store.Condition{})
		}},
	}
	for _, st := range steps {
		before := c.Requests().Snapshot()
		require.NoError(t, st.do(), st.name)
		d := c.Requests().Snapshot().Sub(before)
		if st.failed {
			require.GreaterOrEqual(t, d.Failed[st.op], int64(1), "%s: counted as failed: %s", st.name, d)
		} else {
			require.GreaterOrEqual(t, d.OK[st.op], int64(1), "%s: counted as ok: %s", st.name, d)
		}
		for _, op := range store.Ops {
			if op != st.op && op != store.OpHead && op != store.OpOther {
				require.Zero(t, d.Total(op), "%s: counted as %s too: %s", st.name, op, d)
			}
		}
	}
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
