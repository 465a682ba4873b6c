package s3store

import (
	"context"
	"crypto/md5"
	"encoding/hex"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/qo-queue/qo/store"
)

// pair is one answer of tearServer to a GET: a body and the ETag sent
// with it.
type pair struct{ body, etag string }

func md5Of(body string) string {
	sum := md5.Sum([]byte(body))
	return `"` + hex.EncodeToString(sum[:]) + `"`
}

// whole is a body with its own MD5 ETag.
func whole(body string) pair { return pair{body, md5Of(body)} }

// torn is body old with the ETag of body new.
func torn(old, new string) pair { return pair{old, md5Of(new)} }

// tearServer answers GETs of a key with the pairs queued for it, in order
// (the last one again once they run out), and PUTs with an ETag made by
// putETag. It counts the GETs.
type tearServer struct {
	mu      sync.Mutex
	answers map[string][]pair
	gets    int
	putETag func(body []byte) string
}

func (f *tearServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Date", time.Now().UTC().Format(http.TimeFormat))
	key := strings.TrimPrefix(r.URL.Path, "/b/")
	f.mu.Lock()
	defer f.mu.Unlock()
	switch r.Method {
	case http.MethodPut:
		body, _ := io.ReadAll(r.Body)
		w.Header().Set("ETag", f.putETag(body))
		w.Header().Set("x-amz-version-id", "v1")
	case http.MethodGet:
		f.gets++
		q := f.answers[key]
		if len(q) == 0 {
			w.WriteHeader(http.StatusNotFound)
			_, _ = w.Write([]byte(`<?xml version="1.0" encoding="UTF-8"?><Error><Code>NoSuchKey</Code></Error>`))
			return
		}
		a := q[0]
		if len(q) > 1 {
			f.answers[key] = q[1:]
		}
		w.Header().Set("ETag", a.etag)
		w.Header().Set("x-amz-version-id", "v1")
		_, _ = w.Write([]byte(a.body))
	}
}

func (f *tearServer) getCount() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.gets
}

// newTearStore is a Store on f whose backoff waits are recorded, not
// slept.
func newTearStore(t *testing.T, f *tearServer) (*Store, *[]time.Duration) {
	t.Helper()
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	s, err := New(context.Background(), Config{Endpoint: srv.URL, Bucket: "b", AccessKey: "k", SecretKey: "s", PathStyle: true, MaxAttempts: 1})
	require.NoError(t, err)
	var mu sync.Mutex
	var waits []time.Duration
	s.etags.sleep = func(ctx context.Context, d time.Duration) error {
		mu.Lock()
		defer mu.Unlock()
		waits = append(waits, d)
		return ctx.Err()
	}
	return s, &waits
}

func md5ETags(body []byte) string { return md5Of(string(body)) }

// sseETags is a server whose ETags are not body MD5s (as AWS with SSE-KMS).
func sseETags(body []byte) string { return `"` + strings.Repeat("ab", 16) + `"` }

// Every Get and GetVersion is checked against a tearing server: a read
// that settles on re-read returns the settled pair, one that does not is
// ErrTornRead (a lost race), and a healthy server costs no re-read.
func TestTornReads(t *testing.T) {
	t.Parallel()
	const pending, running = `{"status":"pending"}`, `{"status":"running"}`
	tests := []struct {
		name    string
		putETag func([]byte) string
		put     bool // a Put first, which tells the store what ETags are
		reads   []pair
		version bool // GetVersion instead of Get
		want    *pair
		torn    bool
		rereads int64
	}{
		{"healthy", md5ETags, true, []pair{whole(running)}, false, &pair{running, md5Of(running)}, false, 0},
		{"healthy before any put", md5ETags, false, []pair{whole(running)}, false, &pair{running, md5Of(running)}, false, 0},
		{"torn once", md5ETags, true, []pair{torn(pending, running), whole(running)}, false, &pair{running, md5Of(running)}, false, 1},
		{"torn once, version", md5ETags, true, []pair{torn(pending, running), whole(running)}, true, &pair{running, md5Of(running)}, false, 1},
		{"torn twice, then a newer write", md5ETags, true,
			[]pair{torn(pending, running), torn(running, `{"status":"completed"}`), whole(`{"status":"completed"}`)}, false,
			&pair{`{"status":"completed"}`, md5Of(`{"status":"completed"}`)}, false, 2},
		{"torn throughout", md5ETags, true, []pair{torn(pending, running)}, false, nil, true, 3},
		{"torn throughout, version", md5ETags, true, []pair{torn(pending, running)}, true, nil, true, 3},
		{"torn before any put", md5ETags, false, []pair{torn(pending, running), whole(running)}, false, &pair{running, md5Of(running)}, false, 1},
		{"opaque ETags, learnt from a put", sseETags, true, []pair{{running, sseETags(nil)}}, false, &pair{running, sseETags(nil)}, false, 0},
		{"opaque ETags before any put", sseETags, false, []pair{{running, sseETags(nil)}}, false, &pair{running, sseETags(nil)}, false, 1},
		{"multipart ETag", md5ETags, true, []pair{{running, `"0123456789abcdef0123456789abcdef-2"`}}, false,
			&pair{running, `"0123456789abcdef0123456789abcdef-2"`}, false, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := &tearServer{answers: map[string][]pair{"tasks/t.json": tc.reads}, putETag: tc.putETag}
			s, waits := newTearStore(t, f)
			ctx := context.Background()
			if tc.put {
				_, err := s.Put(ctx, "workers/w.json", []byte(`{"id":"w"}`), store.Condition{})
				require.NoError(t, err)
			}
			var obj *store.Object
			var err error
			if tc.version {
				obj, err = s.GetVersion(ctx, "tasks/t.json", "v1")
			} else {
				obj, err = s.Get(ctx, "tasks/t.json")
			}
			rereads, tornGets := s.TornReadStats()
			require.Equal(t, tc.rereads, rereads, "re-reads")
			require.Equal(t, int(tc.rereads)+1, f.getCount(), "GET requests")
			require.Len(t, *waits, int(tc.rereads), "a backoff before each re-read")
			if tc.torn {
				require.ErrorIs(t, err, store.ErrTornRead)
				require.ErrorIs(t, err, store.ErrPreconditionFailed, "a torn read is a lost race")
				require.NotErrorIs(t, err, store.ErrNotFound)
				require.ErrorContains(t, err, "tasks/t.json")
				require.ErrorContains(t, err, "is not its ETag")
				require.Equal(t, int64(1), tornGets)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.want.body, string(obj.Body))
			require.Equal(t, tc.want.etag, obj.ETag)
			require.Zero(t, tornGets)
		})
	}
}

// Before any Put, the same mismatch on two objects shows a server whose
// ETags are not MD5s: later Gets cost no re-read. A Put whose ETag is the
// MD5 of its body turns the check on again.
func TestTornReadLearnsOpaqueETags(t *testing.T) {
	t.Parallel()
	opaque := pair{`{}`, sseETags(nil)}
	f := &tearServer{answers: map[string][]pair{"a": {opaque}, "b": {opaque}, "c": {opaque}, "d": {torn("old", "new"), whole("new")}}, putETag: md5ETags}
	s, _ := newTearStore(t, f)
	ctx := context.Background()
	for _, key := range []string{"a", "b"} {
		_, err := s.Get(ctx, key)
		require.NoError(t, err)
	}
	md5, known := s.ETagsAreMD5()
	require.True(t, known)
	require.False(t, md5)
	rereads, _ := s.TornReadStats()
	require.Equal(t, int64(2), rereads, "one re-read for each of the first two objects")
	_, err := s.Get(ctx, "c")
	require.NoError(t, err)
	rereads, _ = s.TornReadStats()
	require.Equal(t, int64(2), rereads, "none once the ETags are known not to be MD5s")

	_, err = s.Put(ctx, "e", []byte("e"), store.Condition{})
	require.NoError(t, err)
	md5, known = s.ETagsAreMD5()
	require.True(t, md5 && known)
	obj, err := s.Get(ctx, "d")
	require.NoError(t, err)
	require.Equal(t, "new", string(obj.Body))
}

// A context that ends during the backoff ends the Get with its error.
func TestTornReadContext(t *testing.T) {
	t.Parallel()
	f := &tearServer{answers: map[string][]pair{"k": {torn("old", "new")}}, putETag: md5ETags}
	s, _ := newTearStore(t, f)
	ctx, cancel := context.WithCancel(context.Background())
	_, err := s.Put(ctx, "w", []byte("w"), store.Condition{})
	require.NoError(t, err)
	s.etags.sleep = func(context.Context, time.Duration) error { cancel(); return context.Canceled }
	_, err = s.Get(ctx, "k")
	require.ErrorIs(t, err, context.Canceled)
	require.False(t, errors.Is(err, store.ErrTornRead))
}
