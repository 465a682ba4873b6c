package doctor_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/stretchr/testify/require"

	"github.com/qo-queue/qo/internal/testutil"
	"github.com/qo-queue/qo/store"
	"github.com/qo-queue/qo/store/doctor"
	"github.com/qo-queue/qo/store/gateway"
	"github.com/qo-queue/qo/store/memstore"
	"github.com/qo-queue/qo/store/s3store"
	"github.com/qo-queue/qo/store/storetest"
)

func TestMain(m *testing.M) {
	gateway.MaybeRunChild()
	os.Exit(m.Run())
}

var allChecks = []string{
	doctor.CheckReachable, doctor.CheckCredentials, doctor.CheckBucket, doctor.CheckVersioning,
	doctor.CheckCreateOnly, doctor.CheckIfMatch, doctor.CheckTornReads, doctor.CheckListPaging, doctor.CheckVersions,
	doctor.CheckClock, doctor.CheckLifecycle, doctor.CheckRetention, doctor.CheckCleanup,
}

// requireChecks asserts the report has every check, in order, with the
// given statuses (checks not in want must be ok).
func requireChecks(t *testing.T, r doctor.Report, want map[string]doctor.Status) {
	t.Helper()
	var names []string
	for _, c := range r.Checks {
		names = append(names, c.Name)
	}
	require.Equal(t, allChecks, names, "every check, in order")
	for _, c := range r.Checks {
		st, ok := want[c.Name]
		if !ok {
			st = doctor.StatusOK
		}
		if !ok && c.Name == doctor.CheckRetention && c.Status == doctor.StatusSkip {
			continue // a test wrapper that hides the store's tagging
		}
		require.Equal(t, st, c.Status, "check %s: %s (fix: %s)", c.Name, c.Detail, c.Fix)
		if c.Status == doctor.StatusWarn || c.Status == doctor.StatusFail {
			require.NotEmpty(t, c.Detail, "check %s explains itself", c.Name)
		}
	}
	failed := false
	for _, st := range want {
		failed = failed || st == doctor.StatusFail
	}
	require.Equal(t, !failed, r.OK)
}

func TestHealthyMemstore(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := memstore.New()
	r := doctor.Run(ctx, s, doctor.Options{})
	requireChecks(t, r, map[string]doctor.Status{doctor.CheckLifecycle: doctor.StatusWarn})
	lc, _ := r.Find(doctor.CheckLifecycle)
	require.Contains(t, lc.Detail, "ready/")
	require.Contains(t, lc.Fix, "--fix-lifecycle")

	// Probes leave no current object behind.
	page, err := s.List(ctx, store.ListParams{Prefix: "doctor/"})
	require.NoError(t, err)
	require.Empty(t, page.Objects)

	added, err := doctor.FixLifecycle(ctx, s, nil)
	require.NoError(t, err)
	require.Len(t, added, len(doctor.IndexPrefixes))
	r = doctor.Run(ctx, s, doctor.Options{})
	requireChecks(t, r, nil)

	added, err = doctor.FixLifecycle(ctx, s, nil)
	require.NoError(t, err)
	require.Empty(t, added, "nothing to add the second time")
}

func TestVersioningOff(t *testing.T) {
	t.Parallel()
	skipped := map[string]doctor.Status{
		doctor.CheckVersions:  doctor.StatusSkip,
		doctor.CheckLifecycle: doctor.StatusSkip,
	}
	t.Run("refused", func(t *testing.T) {
		t.Parallel()
		r := doctor.Run(context.Background(), memstore.New(memstore.WithoutVersioning()), doctor.Options{})
		want := map[string]doctor.Status{doctor.CheckVersioning: doctor.StatusFail}
		for k, v := range skipped {
			want[k] = v
		}
		requireChecks(t, r, want)
		c, _ := r.Find(doctor.CheckVersioning)
		require.Contains(t, c.Fix, "QO_ALLOW_NO_VERSIONING=1")
		require.Contains(t, c.Fix, "put-bucket-versioning")
	})
	t.Run("allowed", func(t *testing.T) {
		t.Parallel()
		r := doctor.Run(context.Background(), memstore.New(memstore.WithoutVersioning()), doctor.Options{AllowNoVersioning: true})
		want := map[string]doctor.Status{doctor.CheckVersioning: doctor.StatusWarn}
		for k, v := range skipped {
			want[k] = v
		}
		requireChecks(t, r, want)
	})
}

// faulty wraps a store and breaks one behaviour.
type faulty struct {
	store.Store
	admin             store.Admin // default: the wrapped store
	ignoreIfMatch     bool
	ignoreIfNoneMatch bool
	ignoreLimit       bool
	connectErr        error
	offset            time.Duration
	lifecycleErr      error
}

// GetUnchecked forwards to the wrapped store's, if it has one.
func (f *faulty) GetUnchecked(ctx context.Context, key string) (*store.Object, error) {
	if u, ok := f.Store.(store.UncheckedGetter); ok {
		return u.GetUnchecked(ctx, key)
	}
	return f.Store.Get(ctx, key)
}

func (f *faulty) Put(ctx context.Context, key string, body []byte, cond store.Condition) (store.PutResult, error) {
	if f.ignoreIfMatch {
		cond.IfMatch = ""
	}
	if f.ignoreIfNoneMatch {
		cond.IfNoneMatch = false
	}
	return f.Store.Put(ctx, key, body, cond)
}

func (f *faulty) List(ctx context.Context, p store.ListParams) (store.ListPage, error) {
	if f.connectErr != nil {
		return store.ListPage{}, f.connectErr
	}
	if f.ignoreLimit {
		p.Limit = 0
	}
	return f.Store.List(ctx, p)
}

func (f *faulty) ClockOffset() (time.Duration, time.Duration, bool) {
	return f.offset, 500 * time.Millisecond, true
}

func (f *faulty) adm() store.Admin {
	if f.admin != nil {
		return f.admin
	}
	return f.Store.(store.Admin)
}

func (f *faulty) Versioning(ctx context.Context) (bool, error) { return f.adm().Versioning(ctx) }
func (f *faulty) CreateBucket(ctx context.Context) error       { return nil }
func (f *faulty) EnableVersioning(ctx context.Context) error {
	return f.adm().EnableVersioning(ctx)
}
func (f *faulty) SetLifecycle(ctx context.Context, rules []store.LifecycleRule) error {
	if f.lifecycleErr != nil {
		return f.lifecycleErr
	}
	return f.adm().SetLifecycle(ctx, rules)
}
func (f *faulty) Lifecycle(ctx context.Context) ([]store.LifecycleRule, error) {
	if f.lifecycleErr != nil {
		return nil, f.lifecycleErr
	}
	return f.adm().Lifecycle(ctx)
}
func (f *faulty) SetCORS(ctx context.Context, origins []string) error { return nil }

func TestDetectsBrokenProviders(t *testing.T) {
	t.Parallel()
	skipAfterConnect := func(failed string) map[string]doctor.Status {
		want := map[string]doctor.Status{}
		seen := false
		for _, c := range allChecks {
			if seen {
				want[c] = doctor.StatusSkip
			}
			if c == failed {
				want[c] = doctor.StatusFail
				seen = true
			}
		}
		return want
	}
	lcOK := []store.LifecycleRule{{ID: "qo-all", Prefix: "", NoncurrentDays: 3}}
	tests := []struct {
		name   string
		f      faulty
		wrap   func(store.Store) store.Store // around the memstore, inside f
		want   map[string]doctor.Status
		detail string // in the first failing or warning check
	}{
		{
			name:   "tears reads (like versitygw with sidecar metadata)",
			wrap:   func(s store.Store) store.Store { return storetest.Tearing(s) },
			want:   map[string]doctor.Status{doctor.CheckTornReads: doctor.StatusFail},
			detail: "returned a body and an ETag of different writes",
		},
		{
			name:   "tears reads behind a client that re-reads until they settle",
			wrap:   func(s store.Store) store.Store { return settling{storetest.Tearing(s)} },
			want:   map[string]doctor.Status{doctor.CheckTornReads: doctor.StatusFail},
			detail: "returned a body and an ETag of different writes",
		},
		{
			name:   "lists versions oldest first (like gofakes3)",
			wrap:   func(s store.Store) store.Store { return storetest.ReversedVersions{Store: s} },
			want:   map[string]doctor.Status{doctor.CheckVersions: doctor.StatusWarn},
			detail: "listed oldest first",
		},
		{
			name:   "ignores If-Match (like Garage)",
			f:      faulty{ignoreIfMatch: true},
			want:   map[string]doctor.Status{doctor.CheckIfMatch: doctor.StatusFail, doctor.CheckVersions: doctor.StatusOK},
			detail: "ignores If-Match",
		},
		{
			name:   "ignores If-None-Match",
			f:      faulty{ignoreIfNoneMatch: true},
			want:   map[string]doctor.Status{doctor.CheckCreateOnly: doctor.StatusFail},
			detail: "ignored If-None-Match",
		},
		{
			name:   "ignores the page size",
			f:      faulty{ignoreLimit: true},
			want:   map[string]doctor.Status{doctor.CheckListPaging: doctor.StatusFail},
			detail: "a page of limit 2 held 5 keys",
		},
		{
			name:   "unreachable",
			f:      faulty{connectErr: fmt.Errorf("list: %w: connection refused", store.ErrUnreachable)},
			want:   skipAfterConnect(doctor.CheckReachable),
			detail: "connection refused",
		},
		{
			name: "wrong credentials",
			f:    faulty{connectErr: fmt.Errorf("list: %w: InvalidAccessKeyId", store.ErrAccessDenied)},
			want: func() map[string]doctor.Status {
				w := skipAfterConnect(doctor.CheckCredentials)
				delete(w, doctor.CheckReachable)
				return w
			}(),
			detail: "InvalidAccessKeyId",
		},
		{
			name: "missing bucket",
			f:    faulty{connectErr: fmt.Errorf("list: %w", store.ErrBucketNotFound)},
			want: func() map[string]doctor.Status {
				w := skipAfterConnect(doctor.CheckBucket)
				delete(w, doctor.CheckReachable)
				delete(w, doctor.CheckCredentials)
				return w
			}(),
			detail: "bucket not found",
		},
		{
			name:   "clock far off",
			f:      faulty{offset: -time.Hour},
			want:   map[string]doctor.Status{doctor.CheckClock: doctor.StatusFail, doctor.CheckLifecycle: doctor.StatusWarn},
			detail: "1h0m0s behind",
		},
		{
			name:   "clock somewhat off",
			f:      faulty{offset: 2 * time.Minute},
			want:   map[string]doctor.Status{doctor.CheckClock: doctor.StatusWarn, doctor.CheckLifecycle: doctor.StatusWarn},
			detail: "2m0s ahead",
		},
		{
			name:   "no lifecycle support",
			f:      faulty{lifecycleErr: fmt.Errorf("get lifecycle: %w", store.ErrNotSupported)},
			want:   map[string]doctor.Status{doctor.CheckLifecycle: doctor.StatusWarn},
			detail: "does not support lifecycle rules",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := tt.f
			mem := memstore.New()
			f.Store, f.admin = mem, mem
			if tt.wrap != nil {
				f.Store = tt.wrap(mem)
			}
			if _, set := tt.want[doctor.CheckLifecycle]; !set {
				require.NoError(t, mem.SetLifecycle(context.Background(), lcOK))
			}
			r := doctor.Run(context.Background(), &f, doctor.Options{})
			requireChecks(t, r, tt.want)
			for _, c := range r.Checks {
				if c.Status == doctor.StatusFail || c.Status == doctor.StatusWarn {
					require.Contains(t, c.Detail, tt.detail)
					break
				}
			}
		})
	}
}

func TestFixLifecycleKeepsForeignRules(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := memstore.New()
	foreign := []store.LifecycleRule{{ID: "archive-after-90", Prefix: "tasks/", NoncurrentDays: 90}}
	require.NoError(t, s.SetLifecycle(ctx, foreign))
	_, err := doctor.FixLifecycle(ctx, s, nil)
	require.ErrorIs(t, err, doctor.ErrForeignLifecycle)
	require.ErrorContains(t, err, "archive-after-90")
	require.ErrorContains(t, err, `prefix "ready/"`)
	got, err := s.Lifecycle(ctx)
	require.NoError(t, err)
	require.Equal(t, foreign, got, "foreign rules untouched")

	// A rule covering everything satisfies every prefix.
	require.NoError(t, s.SetLifecycle(ctx, []store.LifecycleRule{{ID: "all", NoncurrentDays: 7}}))
	added, err := doctor.FixLifecycle(ctx, s, nil)
	require.NoError(t, err)
	require.Empty(t, added)
}

// remainingProbeVersions counts versions and delete markers under doctor/.
func remainingProbeVersions(t *testing.T, s *s3store.Store) int {
	t.Helper()
	out, err := s.Client().ListObjectVersions(context.Background(), &s3.ListObjectVersionsInput{
		Bucket: aws.String(s.Bucket()), Prefix: aws.String("doctor/"),
	})
	require.NoError(t, err)
	return len(out.Versions) + len(out.DeleteMarkers)
}

func TestMinIO(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := storetest.MinIO(t)
	r := doctor.Run(ctx, s, doctor.Options{})
	requireChecks(t, r, map[string]doctor.Status{doctor.CheckLifecycle: doctor.StatusWarn})
	require.Contains(t, r.Target, s.Bucket())
	require.Zero(t, remainingProbeVersions(t, s), "every version of every probe is removed")

	added, err := doctor.FixLifecycle(ctx, s, nil)
	require.NoError(t, err)
	require.NotEmpty(t, added)
	r = doctor.Run(ctx, s, doctor.Options{})
	requireChecks(t, r, nil)
}

func TestMinIOBadConnections(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	good := storetest.MinIO(t)
	deadEndpoint := "http://" + testutil.FreeAddr(t)

	tests := []struct {
		name   string
		change func(*s3store.Config)
		failed string
	}{
		{"unreachable", func(c *s3store.Config) { c.Endpoint = deadEndpoint; c.MaxAttempts = 1 }, doctor.CheckReachable},
		{"wrong secret", func(c *s3store.Config) { c.SecretKey = "wrong-secret" }, doctor.CheckCredentials},
		{"missing bucket", func(c *s3store.Config) { c.Bucket = storetest.BucketName() }, doctor.CheckBucket},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			cfg := storetest.S3Config(t, good.Bucket())
			tt.change(&cfg)
			s, err := s3store.New(ctx, cfg)
			require.NoError(t, err)
			r := doctor.Run(ctx, s, doctor.Options{})
			require.False(t, r.OK)
			c, ok := r.Find(tt.failed)
			require.True(t, ok)
			require.Equal(t, doctor.StatusFail, c.Status, c.Detail)
			require.NotEmpty(t, c.Fix)
			fails := r.Failures()
			require.Len(t, fails, 1, "only the first broken link fails; the rest is skipped")
			last := r.Checks[len(r.Checks)-1]
			require.Equal(t, doctor.StatusSkip, last.Status)
		})
	}
}

func TestGateway(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	g, err := gateway.Start(ctx, gateway.Options{
		DataDir: t.TempDir(), AccessKey: "qo-doctor", SecretKey: "qo-doctor-secret", Bucket: "qo-doctor",
	})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, g.Stop()) })
	s, err := s3store.New(ctx, s3store.Config{
		Endpoint: g.Endpoint(), Bucket: "qo-doctor", AccessKey: "qo-doctor", SecretKey: "qo-doctor-secret", PathStyle: true,
	})
	require.NoError(t, err)
	r := doctor.Run(ctx, s, doctor.Options{})
	for _, c := range r.Checks {
		t.Logf("%-12s %-4s %s", c.Name, c.Status, c.Detail)
	}
	require.True(t, r.OK, "failures: %v", r.Failures())
	for _, c := range r.Checks {
		if c.Name == doctor.CheckLifecycle {
			// versitygw has no lifecycle rules: a warning, not a failure.
			require.Contains(t, []doctor.Status{doctor.StatusOK, doctor.StatusWarn}, c.Status)
			continue
		}
		require.Equal(t, doctor.StatusOK, c.Status, "%s: %s", c.Name, c.Detail)
	}
	require.Zero(t, remainingProbeVersions(t, s), "every version of every probe is removed")
	require.False(t, strings.Contains(r.Target, "AWS"), r.Target)
}

func TestProbe(t *testing.T) {
	t.Parallel()
	const key = "monitor/probe.json"
	for _, tc := range []struct {
		name   string
		f      faulty
		detail string // "" when the probe passes
	}{
		{"conforming", faulty{}, ""},
		{"ignores If-None-Match", faulty{ignoreIfNoneMatch: true}, "ignored If-None-Match"},
		{"ignores If-Match", faulty{ignoreIfMatch: true}, "ignores If-Match"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := tc.f
			f.Store = memstore.New()
			for range 2 { // creating the key, and finding it there
				err := doctor.Probe(t.Context(), &f, key)
				if tc.detail == "" {
					require.NoError(t, err)
					continue
				}
				require.ErrorIs(t, err, doctor.ErrUnsafe)
				require.ErrorContains(t, err, tc.detail)
				require.ErrorContains(t, err, doctor.ProvidersDoc)
			}
			if tc.detail == "" {
				vs, err := f.Store.ListVersions(t.Context(), key)
				require.NoError(t, err)
				require.Len(t, vs, 1, "only the first probe writes")
			}
		})
	}

	// A failed request is no verdict on the server.
	down := &faulty{Store: brokenPuts{memstore.New()}}
	err := doctor.Probe(t.Context(), down, key)
	require.ErrorIs(t, err, store.ErrUnreachable)
	require.NotErrorIs(t, err, doctor.ErrUnsafe)
}

// brokenPuts fails every PUT as unreachable.
type brokenPuts struct{ store.Store }

func (brokenPuts) Put(context.Context, string, []byte, store.Condition) (store.PutResult, error) {
	return store.PutResult{}, fmt.Errorf("put: %w: connection refused", store.ErrUnreachable)
}

// laggingETags returns, on every other GET of a key it wrote twice, the
// latest body with the ETag of the write before it: the tear in the safe
// direction (a compare-and-swap based on it fails).
type laggingETags struct {
	store.Store
	mu     sync.Mutex
	gets   int
	prev   map[string]string // the ETag before the latest write
	latest map[string]string
}

func (l *laggingETags) Put(ctx context.Context, key string, body []byte, cond store.Condition) (store.PutResult, error) {
	res, err := l.Store.Put(ctx, key, body, cond)
	if err == nil {
		l.mu.Lock()
		if e, ok := l.latest[key]; ok {
			l.prev[key] = e
		}
		l.latest[key] = res.ETag
		l.mu.Unlock()
	}
	return res, err
}

func (l *laggingETags) Get(ctx context.Context, key string) (*store.Object, error) {
	obj, err := l.Store.Get(ctx, key)
	if err != nil {
		return obj, err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.gets++
	if prev, ok := l.prev[key]; ok && l.gets%2 == 0 && obj.ETag == l.latest[key] {
		obj.ETag = prev
	}
	return obj, nil
}

func TestTornReadsInTheSafeDirectionWarn(t *testing.T) {
	t.Parallel()
	mem := memstore.New()
	require.NoError(t, mem.SetLifecycle(t.Context(), []store.LifecycleRule{{ID: "qo-all", NoncurrentDays: 3}}))
	f := &faulty{Store: &laggingETags{Store: mem, prev: map[string]string{}, latest: map[string]string{}}, admin: mem}
	r := doctor.Run(t.Context(), f, doctor.Options{})
	requireChecks(t, r, map[string]doctor.Status{doctor.CheckTornReads: doctor.StatusWarn})
	c, _ := r.Find(doctor.CheckTornReads)
	require.Contains(t, c.Detail, "with the ETag of the write before it")
	require.Contains(t, c.Detail, "safe for qo")
}

// settling hides a tearing store's tears from Get, as s3store's check of
// each body against its ETag does, and shows them to GetUnchecked.
type settling struct{ *storetest.TearingStore }

func (s settling) Get(ctx context.Context, key string) (*store.Object, error) {
	for {
		before := s.Torn()
		obj, err := s.TearingStore.Get(ctx, key)
		if err != nil || s.Torn() == before {
			return obj, err
		}
	}
}

func (s settling) GetUnchecked(ctx context.Context, key string) (*store.Object, error) {
	return s.TearingStore.Get(ctx, key)
}
