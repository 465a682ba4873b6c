package s3store_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/stretchr/testify/require"

	"github.com/qo-queue/qo/store"
	"github.com/qo-queue/qo/store/s3store"
	"github.com/qo-queue/qo/store/storetest"
)

func TestConformanceMinIO(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t testing.TB) store.Store { return storetest.MinIO(t) })
}

func ctxFor(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// TestMinIOErrors checks the friendly errors against a real server.
func TestMinIOErrors(t *testing.T) {
	t.Parallel()
	ctx := ctxFor(t)
	s := storetest.MinIO(t)

	t.Run("missing bucket", func(t *testing.T) {
		t.Parallel()
		cfg := storetest.S3Config(t, storetest.BucketName())
		m, err := s3store.New(ctx, cfg)
		require.NoError(t, err)
		for _, err := range []error{
			m.Ping(ctx),
			func() error { _, err := m.Get(ctx, "k"); return err }(),
			func() error { _, err := m.Put(ctx, "k", nil, store.IfMatch(`"x"`)); return err }(),
			func() error { _, err := m.List(ctx, store.ListParams{}); return err }(),
			func() error { _, err := m.ListVersions(ctx, "k"); return err }(),
			func() error { _, err := m.Versioning(ctx); return err }(),
		} {
			require.ErrorIs(t, err, store.ErrBucketNotFound)
			require.ErrorContains(t, err, cfg.Bucket)
			require.ErrorContains(t, err, "qo init")
		}
		// Any response tells the time, even an error.
		now, err := m.Now(ctx)
		require.NoError(t, err)
		require.WithinDuration(t, time.Now(), now, time.Minute)
	})

	t.Run("wrong secret", func(t *testing.T) {
		t.Parallel()
		cfg := storetest.S3Config(t, s.Bucket())
		cfg.SecretKey = "not-the-secret"
		m, err := s3store.New(ctx, cfg)
		require.NoError(t, err)
		_, err = m.Get(ctx, "k")
		require.ErrorIs(t, err, store.ErrAccessDenied)
		require.ErrorContains(t, err, "AWS_SECRET_ACCESS_KEY")
		require.ErrorIs(t, m.Ping(ctx), store.ErrAccessDenied)
	})

	t.Run("wrong access key", func(t *testing.T) {
		t.Parallel()
		cfg := storetest.S3Config(t, s.Bucket())
		cfg.AccessKey = "nobody"
		m, err := s3store.New(ctx, cfg)
		require.NoError(t, err)
		_, err = m.Put(ctx, "k", []byte("x"), store.Condition{})
		require.ErrorIs(t, err, store.ErrAccessDenied)
	})

	t.Run("if-match missing key", func(t *testing.T) {
		t.Parallel()
		// MinIO answers 404 NoSuchKey here; the caller sees a lost race.
		_, err := s.Put(ctx, "missing", []byte("x"), store.IfMatch(`"0123"`))
		require.ErrorIs(t, err, store.ErrPreconditionFailed)
		require.NotErrorIs(t, err, store.ErrNotFound)
		var se *s3store.Error
		require.ErrorAs(t, err, &se)
		require.Equal(t, "put", se.Op)
		require.Equal(t, "missing", se.Key)
	})

	t.Run("content type", func(t *testing.T) {
		t.Parallel()
		_, err := s.Put(ctx, "ct/task.json", []byte(`{}`), store.Condition{})
		require.NoError(t, err)
		out, err := s.Client().HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(s.Bucket()), Key: aws.String("ct/task.json")})
		require.NoError(t, err)
		require.Equal(t, "application/json", *out.ContentType)
	})
}

func TestUnreachable(t *testing.T) {
	t.Parallel()
	// A listener that is closed at once: connections are refused.
	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL
	srv.Close()

	ctx := ctxFor(t)
	s, err := s3store.New(ctx, s3store.Config{
		Endpoint: url, Bucket: "b", AccessKey: "k", SecretKey: "s", PathStyle: true, MaxAttempts: 2,
	})
	require.NoError(t, err)
	_, err = s.Get(ctx, "k")
	require.ErrorIs(t, err, store.ErrUnreachable)
	require.ErrorContains(t, err, url)
	require.ErrorContains(t, err, "S3_ENDPOINT")
	require.Equal(t, int64(2), s.Requests().Snapshot().Failed[store.OpGet], "both attempts counted")

	_, err = s.Now(ctx)
	require.ErrorIs(t, err, store.ErrUnreachable)
	_, _, ok := s.ClockOffset()
	require.False(t, ok)
}

func TestConfigErrors(t *testing.T) {
	t.Parallel()
	ctx := ctxFor(t)
	tests := []struct {
		name string
		cfg  s3store.Config
		want string
	}{
		{"no bucket", s3store.Config{Endpoint: "http://127.0.0.1:1"}, "S3_BUCKET"},
		{"bad endpoint", s3store.Config{Endpoint: "127.0.0.1:9000", Bucket: "b"}, "S3_ENDPOINT"},
		{"bad scheme", s3store.Config{Endpoint: "ftp://x", Bucket: "b"}, "S3_ENDPOINT"},
		{"secret missing", s3store.Config{Endpoint: "http://x", Bucket: "b", AccessKey: "a"}, "AWS_SECRET_ACCESS_KEY"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := s3store.New(ctx, tc.cfg)
			require.ErrorContains(t, err, tc.want)
		})
	}
}

// TestCountsRetries: a server that answers 503 to the first request; the
// SDK retries, and both attempts are counted.
func TestCountsRetries(t *testing.T) {
	t.Parallel()
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Date", time.Now().UTC().Format(http.TimeFormat))
		if calls.Add(1) == 1 {
			w.Header().Set("Content-Type", "application/xml")
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = w.Write([]byte(`<?xml version="1.0" encoding="UTF-8"?><Error><Code>SlowDown</Code><Message>slow down</Message></Error>`))
			return
		}
		w.Header().Set("ETag", `"0cc175b9c0f1b6a831c399e269772661"`)
		w.Header().Set("x-amz-version-id", "v1")
		w.WriteHeader(http.StatusOK)
	}))
	t.Cleanup(srv.Close)

	var observed atomic.Int32
	ctx := ctxFor(t)
	s, err := s3store.New(ctx, s3store.Config{
		Endpoint: srv.URL, Bucket: "b", AccessKey: "k", SecretKey: "s", PathStyle: true,
		Observe: func(op store.Op, d time.Duration, err error) {
			if op == store.OpPut {
				observed.Add(1)
			}
		},
	})
	require.NoError(t, err)
	res, err := s.Put(ctx, "a.txt", []byte("a"), store.Condition{})
	require.NoError(t, err)
	require.Equal(t, "v1", res.VersionID)
	require.Equal(t, int32(2), calls.Load())

	c := s.Requests().Snapshot()
	require.Equal(t, int64(1), c.Failed[store.OpPut], "the 503")
	require.Equal(t, int64(1), c.OK[store.OpPut], "the retry")
	require.Equal(t, int32(2), observed.Load(), "Observe sees every attempt")

	off, unc, ok := s.ClockOffset()
	require.True(t, ok)
	require.LessOrEqual(t, unc, time.Second, "two Date headers bound the offset to within the Date resolution")
	require.Less(t, off.Abs(), 5*time.Second)
}

// A worker's requests in flight at once keep their connections for the
// next burst: 32 concurrent GETs, three times over, open at most 32
// connections (the SDK's default pool kept 10, so every later burst opened
// 22 more).
func TestReusesConnections(t *testing.T) {
	t.Parallel()
	var opened atomic.Int32
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte(`{}`))
	}))
	srv.Config.ConnState = func(_ net.Conn, st http.ConnState) {
		if st == http.StateNew {
			opened.Add(1)
		}
	}
	srv.Start()
	t.Cleanup(srv.Close)
	ctx := ctxFor(t)
	s, err := s3store.New(ctx, s3store.Config{Endpoint: srv.URL, Bucket: "b", AccessKey: "k", SecretKey: "s", PathStyle: true})
	require.NoError(t, err)
	const burst = 32
	for range 3 {
		errs := make([]error, burst)
		var wg sync.WaitGroup
		for i := range burst {
			wg.Go(func() { _, errs[i] = s.Get(ctx, fmt.Sprintf("k%d", i)) })
		}
		wg.Wait()
		require.NoError(t, errors.Join(errs...))
	}
	require.LessOrEqual(t, opened.Load(), int32(burst))
}

// BenchmarkRequestOverhead is the client's own cost of a conditional PUT
// against a server that answers at once (the server runs in the same
// process: compare runs, not absolute figures).
func BenchmarkRequestOverhead(b *testing.B) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("ETag", `"0123456789abcdef0123456789abcdef"`)
		w.Header().Set("x-amz-version-id", "v1")
	}))
	b.Cleanup(srv.Close)
	ctx := context.Background()
	s, err := s3store.New(ctx, s3store.Config{Endpoint: srv.URL, Bucket: "b", AccessKey: "k", SecretKey: "s", PathStyle: true})
	require.NoError(b, err)
	body := []byte(`{"format":1,"id":"0193d3c4-5b6a-7c8d-9e0f-112233445566","type":"noop","status":"running"}`)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := s.Put(ctx, "tasks/0/0193d3c4-5b6a-7c8d-9e0f-112233445566.json", body, store.IfMatch(`"abc"`)); err != nil {
			b.Fatal(err)
		}
	}
}

// TestErrorMapping drives a fake server through the answers real servers
// give and checks the sentinel each becomes.
func TestErrorMapping(t *testing.T) {
	t.Parallel()
	type answer struct {
		status int
		code   string
	}
	tests := []struct {
		name   string
		answer answer
		call   func(ctx context.Context, s *s3store.Store) error
		want   error
		notIs  error
		msg    string
	}{
		{"412 on If-Match", answer{412, "PreconditionFailed"}, putIfMatch, store.ErrPreconditionFailed, store.ErrNotFound, ""},
		{"412 on create-only", answer{412, "PreconditionFailed"}, putCreateOnly, store.ErrPreconditionFailed, nil, ""},
		{"404 NoSuchKey on If-Match", answer{404, "NoSuchKey"}, putIfMatch, store.ErrPreconditionFailed, store.ErrNotFound, ""},
		{"409 conflict on If-Match", answer{409, "ConditionalRequestConflict"}, putIfMatch, store.ErrPreconditionFailed, nil, ""},
		{"404 NoSuchKey on get", answer{404, "NoSuchKey"}, get, store.ErrNotFound, nil, ""},
		{"404 NoSuchVersion", answer{404, "NoSuchVersion"}, getVersion, store.ErrNotFound, nil, ""},
		{"400 bad version id", answer{400, "InvalidArgument"}, getVersion, store.ErrNotFound, nil, ""},
		{"405 delete marker version", answer{405, "MethodNotAllowed"}, getVersion, store.ErrNotFound, nil, ""},
		{"NoSuchBucket on put", answer{404, "NoSuchBucket"}, putIfMatch, store.ErrBucketNotFound, store.ErrPreconditionFailed, "qo init"},
		{"NoSuchBucket on list", answer{404, "NoSuchBucket"}, list, store.ErrBucketNotFound, nil, "qo init"},
		{"AccessDenied", answer{403, "AccessDenied"}, get, store.ErrAccessDenied, nil, "AWS_ACCESS_KEY_ID"},
		{"InvalidAccessKeyId", answer{403, "InvalidAccessKeyId"}, list, store.ErrAccessDenied, nil, "credentials"},
		{"SignatureDoesNotMatch", answer{403, "SignatureDoesNotMatch"}, putIfMatch, store.ErrAccessDenied, nil, "credentials"},
		{"501 CORS", answer{501, "NotImplemented"}, setCORS, store.ErrNotSupported, nil, ""},
		{"501 lifecycle", answer{501, "NotImplemented"}, setLifecycle, store.ErrNotSupported, nil, ""},
		{"404 on unconditional delete", answer{404, "NoSuchKey"}, deleteKey, nil, nil, ""},
		{"500", answer{500, "InternalError"}, list, nil, nil, "InternalError"},
		// versitygw's answer to an unknown access key: the bucket exists.
		{"404 XAdminUserNotFound", answer{404, "XAdminUserNotFound"}, versioning, store.ErrAccessDenied, store.ErrBucketNotFound, "credentials"},
		{"404 NoSuchBucket on versioning", answer{404, "NoSuchBucket"}, versioning, store.ErrBucketNotFound, nil, "qo init"},
		{"404 other code on versioning", answer{404, "SomethingElse"}, versioning, nil, store.ErrBucketNotFound, "SomethingElse"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Date", time.Now().UTC().Format(http.TimeFormat))
				w.Header().Set("Content-Type", "application/xml")
				w.WriteHeader(tc.answer.status)
				if r.Method != http.MethodHead {
					_, _ = w.Write([]byte(`<?xml version="1.0" encoding="UTF-8"?><Error><Code>` + tc.answer.code + `</Code><Message>test answer</Message></Error>`))
				}
			}))
			t.Cleanup(srv.Close)
			ctx := ctxFor(t)
			s, err := s3store.New(ctx, s3store.Config{
				Endpoint: srv.URL, Bucket: "qo-bucket", AccessKey: "k", SecretKey: "s", PathStyle: true, MaxAttempts: 1,
			})
			require.NoError(t, err)
			err = tc.call(ctx, s)
			if tc.want == nil && tc.msg == "" {
				require.NoError(t, err)
				return
			}
			require.Error(t, err)
			if tc.want != nil {
				require.ErrorIs(t, err, tc.want)
			}
			for _, sentinel := range []error{store.ErrNotFound, store.ErrPreconditionFailed, store.ErrBucketNotFound,
				store.ErrAccessDenied, store.ErrUnreachable, store.ErrNotSupported} {
				if sentinel != tc.want {
					require.NotErrorIs(t, err, sentinel)
				}
			}
			if tc.notIs != nil {
				require.NotErrorIs(t, err, tc.notIs)
			}
			require.ErrorContains(t, err, "qo-bucket")
			require.ErrorContains(t, err, srv.URL)
			require.ErrorContains(t, err, tc.msg)
			require.NotContains(t, err.Error(), "\n")
		})
	}
}

func putIfMatch(ctx context.Context, s *s3store.Store) error {
	_, err := s.Put(ctx, "k.json", []byte("x"), store.IfMatch(`"abc"`))
	return err
}

func putCreateOnly(ctx context.Context, s *s3store.Store) error {
	_, err := s.Put(ctx, "k.json", []byte("x"), store.CreateOnly)
	return err
}

func get(ctx context.Context, s *s3store.Store) error {
	_, err := s.Get(ctx, "k.json")
	return err
}

func getVersion(ctx context.Context, s *s3store.Store) error {
	_, err := s.GetVersion(ctx, "k.json", "some-version")
	return err
}

func list(ctx context.Context, s *s3store.Store) error {
	_, err := s.List(ctx, store.ListParams{Prefix: "p/"})
	return err
}

func versioning(ctx context.Context, s *s3store.Store) error {
	_, err := s.Versioning(ctx)
	return err
}

func deleteKey(ctx context.Context, s *s3store.Store) error {
	return s.Delete(ctx, "k.json", store.Condition{})
}

func setCORS(ctx context.Context, s *s3store.Store) error {
	return s.SetCORS(ctx, []string{"*"})
}

func setLifecycle(ctx context.Context, s *s3store.Store) error {
	return s.SetLifecycle(ctx, []store.LifecycleRule{{ID: "r", Prefix: "p/", NoncurrentDays: 1}})
}

// TestMinIOAdmin covers the bucket configuration calls on a real server.
func TestMinIOAdmin(t *testing.T) {
	t.Parallel()
	ctx := ctxFor(t)
	s := storetest.MinIO(t)

	on, err := s.Versioning(ctx)
	require.NoError(t, err)
	require.True(t, on)
	require.NoError(t, s.CreateBucket(ctx), "creating an existing bucket of ours is fine")

	rules, err := s.Lifecycle(ctx)
	require.NoError(t, err)
	require.Empty(t, rules)
	want := []store.LifecycleRule{
		{ID: "tasks", Prefix: "tasks/", NoncurrentDays: 30, ExpiredDeleteMarkers: true},
		{ID: "ready", Prefix: "ready/", NoncurrentDays: 1},
	}
	require.NoError(t, s.SetLifecycle(ctx, want))
	rules, err = s.Lifecycle(ctx)
	require.NoError(t, err)
	require.ElementsMatch(t, want, rules)
	require.NoError(t, s.SetLifecycle(ctx, nil))
	rules, err = s.Lifecycle(ctx)
	require.NoError(t, err)
	require.Empty(t, rules)

	err = s.SetLifecycle(ctx, []store.LifecycleRule{{ID: "x", Prefix: "x/"}})
	require.ErrorContains(t, err, "no action")

	// MinIO answers 501 to PutBucketCors (it exposes the headers anyway).
	err = s.SetCORS(ctx, []string{"http://localhost:8080"})
	if err != nil {
		require.ErrorIs(t, err, store.ErrNotSupported)
	}
	require.Positive(t, s.Requests().Snapshot().Total(store.OpOther))
}

func TestContentType(t *testing.T) {
	t.Parallel()
	tests := map[string]string{
		"tasks/0/abc.json": "application/json",
		"a.JSON":           "application/json",
		"ready/123/0/x":    "application/octet-stream",
		"index.html":       "text/html; charset=utf-8",
		"a.weird-ext":      "application/octet-stream",
	}
	for key, want := range tests {
		require.Equal(t, want, s3store.ContentType(key), key)
	}
}

// TestListVersionsOrderAndPaging serves two pages of ListObjectVersions in
// which versions and delete markers share timestamps: only the document
// order tells which is newer. The second page also holds a longer key that
// shares the prefix and must not be returned.
func TestListVersionsOrderAndPaging(t *testing.T) {
	t.Parallel()
	const head = `<?xml version="1.0" encoding="UTF-8"?><ListVersionsResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Name>b</Name><Prefix>k</Prefix>`
	entry := func(kind, key, id string, latest bool, sec int) string {
		lm := time.Date(2030, 1, 1, 0, 0, sec, 0, time.UTC).Format(time.RFC3339)
		s := "<" + kind + "><Key>" + key + "</Key><VersionId>" + id + "</VersionId><IsLatest>"
		if latest {
			s += "true"
		} else {
			s += "false"
		}
		s += "</IsLatest><LastModified>" + lm + "</LastModified>"
		if kind == "Version" {
			s += `<ETag>"e-` + id + `"</ETag><Size>3</Size>`
		}
		return s + "</" + kind + ">"
	}
	page1 := head + `<IsTruncated>true</IsTruncated><NextKeyMarker>k</NextKeyMarker><NextVersionIdMarker>v3</NextVersionIdMarker>` +
		entry("Version", "k", "v5", true, 9) + entry("DeleteMarker", "k", "v4", false, 8) + entry("Version", "k", "v3", false, 8) +
		`</ListVersionsResult>`
	page2 := head + `<IsTruncated>true</IsTruncated><NextKeyMarker>k2</NextKeyMarker><NextVersionIdMarker>w1</NextVersionIdMarker>` +
		entry("DeleteMarker", "k", "v2", false, 7) + entry("Version", "k", "v1", false, 7) + entry("Version", "k2", "w1", true, 9) +
		`</ListVersionsResult>`

	var requests atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		q := r.URL.Query()
		w.Header().Set("Date", time.Now().UTC().Format(http.TimeFormat))
		w.Header().Set("Content-Type", "application/xml")
		switch {
		case !q.Has("versions") || q.Get("prefix") != "k":
			w.WriteHeader(http.StatusBadRequest)
		case q.Get("key-marker") == "":
			_, _ = w.Write([]byte(page1))
		case q.Get("key-marker") == "k" && q.Get("version-id-marker") == "v3":
			_, _ = w.Write([]byte(page2))
		default:
			w.WriteHeader(http.StatusBadRequest)
		}
	}))
	t.Cleanup(srv.Close)
	ctx := ctxFor(t)
	s, err := s3store.New(ctx, s3store.Config{Endpoint: srv.URL, Bucket: "b", AccessKey: "k", SecretKey: "s", PathStyle: true, MaxAttempts: 1})
	require.NoError(t, err)

	vs, err := s.ListVersions(ctx, "k")
	require.NoError(t, err)
	var ids []string
	var markers []bool
	for _, v := range vs {
		require.Equal(t, "k", v.Key)
		ids = append(ids, v.VersionID)
		markers = append(markers, v.DeleteMarker)
	}
	require.Equal(t, []string{"v5", "v4", "v3", "v2", "v1"}, ids)
	require.Equal(t, []bool{false, true, false, true, false}, markers)
	require.True(t, vs[0].IsLatest)
	require.Equal(t, `"e-v5"`, vs[0].ETag)
	require.Equal(t, int32(2), requests.Load(), "stops at the first longer key")
	require.Equal(t, int64(2), s.Requests().Snapshot().OK[store.OpListVersions])
}

// TestCredentialChain: without static keys the standard AWS chain supplies
// the credentials, from the environment or from a named profile. (Not
// parallel: it sets environment variables.)
func TestCredentialChain(t *testing.T) {
	base := storetest.S3Config(t, "")
	bucket := storetest.MinIO(t).Bucket()
	dir := t.TempDir()
	credFile := dir + "/credentials"
	require.NoError(t, os.WriteFile(credFile, []byte("[qo-test]\naws_access_key_id = "+base.AccessKey+
		"\naws_secret_access_key = "+base.SecretKey+"\n"), 0o600))
	require.NoError(t, os.WriteFile(dir+"/config", nil, 0o600))
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", credFile)
	t.Setenv("AWS_CONFIG_FILE", dir+"/config")
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	t.Setenv("AWS_PROFILE", "")
	t.Setenv("AWS_ACCESS_KEY_ID", "")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "")
	ctx := ctxFor(t)
	cfg := base
	cfg.Bucket, cfg.AccessKey, cfg.SecretKey = bucket, "", ""

	t.Run("profile", func(t *testing.T) {
		c := cfg
		c.Profile = "qo-test"
		s, err := s3store.New(ctx, c)
		require.NoError(t, err)
		require.NoError(t, s.Ping(ctx))
	})
	t.Run("missing profile", func(t *testing.T) {
		c := cfg
		c.Profile = "qo-no-such-profile"
		_, err := s3store.New(ctx, c)
		require.ErrorContains(t, err, "AWS_PROFILE")
	})
	t.Run("environment", func(t *testing.T) {
		t.Setenv("AWS_ACCESS_KEY_ID", base.AccessKey)
		t.Setenv("AWS_SECRET_ACCESS_KEY", base.SecretKey)
		s, err := s3store.New(ctx, cfg)
		require.NoError(t, err)
		require.NoError(t, s.Ping(ctx))
	})
	t.Run("none", func(t *testing.T) {
		s, err := s3store.New(ctx, cfg)
		require.NoError(t, err)
		err = s.Ping(ctx)
		require.ErrorIs(t, err, store.ErrAccessDenied)
		require.ErrorContains(t, err, "AWS_PROFILE")
		require.NotContains(t, err.Error(), "\n")
		t.Log(err)
	})
}

// TestCreateBucketAlreadyExists: BucketAlreadyExists is ours when the
// bucket answers these credentials (gofakes3 says it for an owned bucket)
// and another account's otherwise.
func TestCreateBucketAlreadyExists(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name       string
		headStatus int
		wantErr    string
	}{
		{"ours", http.StatusOK, ""},
		{"another account's", http.StatusForbidden, "choose another S3_BUCKET"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Date", time.Now().UTC().Format(http.TimeFormat))
				if r.Method == http.MethodHead {
					w.WriteHeader(tc.headStatus)
					return
				}
				w.Header().Set("Content-Type", "application/xml")
				w.WriteHeader(http.StatusConflict)
				_, _ = w.Write([]byte(`<?xml version="1.0" encoding="UTF-8"?><Error><Code>BucketAlreadyExists</Code><Message>taken</Message></Error>`))
			}))
			t.Cleanup(srv.Close)
			ctx := ctxFor(t)
			s, err := s3store.New(ctx, s3store.Config{
				Endpoint: srv.URL, Bucket: "qo-bucket", AccessKey: "k", SecretKey: "s", PathStyle: true, MaxAttempts: 1,
			})
			require.NoError(t, err)
			err = s.CreateBucket(ctx)
			if tc.wantErr == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorContains(t, err, tc.wantErr)
		})
	}
}

// TestNoCredentials: with no credentials anywhere and an instance metadata
// service that answers 403 (as some hosts' do), the error says there are
// no credentials, not that S3 refused them; and when the endpoint does not
// answer either, it says so first. The SDK's warnings on the way go to the
// store's logger, not to stderr.
func TestNoCredentials(t *testing.T) {
	// Not parallel: the credential chain reads the environment.
	imds := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusForbidden)
	}))
	t.Cleanup(imds.Close)
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(dir+"/empty", nil, 0o600))
	for k, v := range map[string]string{
		"AWS_ACCESS_KEY_ID": "", "AWS_SECRET_ACCESS_KEY": "", "AWS_SESSION_TOKEN": "", "AWS_PROFILE": "",
		"AWS_SHARED_CREDENTIALS_FILE": dir + "/empty", "AWS_CONFIG_FILE": dir + "/empty",
		"AWS_WEB_IDENTITY_TOKEN_FILE": "", "AWS_CONTAINER_CREDENTIALS_FULL_URI": "",
		"AWS_CONTAINER_CREDENTIALS_RELATIVE_URI": "",
		"AWS_EC2_METADATA_DISABLED":              "", "AWS_EC2_METADATA_SERVICE_ENDPOINT": imds.URL,
	} {
		t.Setenv(k, v)
	}
	answering := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	t.Cleanup(answering.Close)
	closed := httptest.NewServer(http.NotFoundHandler())
	closedURL := closed.URL
	closed.Close()

	tests := []struct {
		name     string
		endpoint string
		want     error
		msg      string
	}{
		{"endpoint answers", answering.URL, store.ErrAccessDenied, "no usable credentials"},
		{"endpoint unreachable", closedURL, store.ErrUnreachable, "S3_ENDPOINT"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var logs logBuffer
			ctx := ctxFor(t)
			s, err := s3store.New(ctx, s3store.Config{
				Endpoint: tc.endpoint, Bucket: "qo-bucket", PathStyle: true, MaxAttempts: 1,
				Logger: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
			})
			require.NoError(t, err)
			_, err = s.Versioning(ctx)
			require.ErrorIs(t, err, tc.want)
			for _, other := range []error{store.ErrAccessDenied, store.ErrUnreachable, store.ErrBucketNotFound} {
				if other != tc.want {
					require.NotErrorIs(t, err, other)
				}
			}
			require.ErrorContains(t, err, tc.msg)
			require.NotContains(t, err.Error(), "HTTP 403", "the metadata service's 403 is not the S3 server's")
			var se *s3store.Error
			require.ErrorAs(t, err, &se)
			require.Zero(t, se.Status)
			require.Contains(t, logs.String(), "aws sdk: ", "the SDK's warning went to the logger")
		})
	}
}

// logBuffer is an io.Writer safe for concurrent use.
type logBuffer struct {
	mu sync.Mutex
	b  []byte
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.b = append(l.b, p...)
	return len(p), nil
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return string(l.b)
}

// A bounded Get refuses an object over the bound by its Content-Length,
// and one whose size the server does not announce (a chunked body, here
// an endless one) after reading one byte past the bound: never the whole
// body.
func TestGetLimitedRefusesBeforeReading(t *testing.T) {
	t.Parallel()
	var sent atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Date", time.Now().UTC().Format(http.TimeFormat))
		w.Header().Set("ETag", `"opaque-etag-1"`)
		chunk := bytes.Repeat([]byte("x"), 4096)
		if r.URL.Path == "/b/announced" {
			w.Header().Set("Content-Length", "5000")
			_, _ = w.Write(bytes.Repeat([]byte("x"), 5000))
			return
		}
		// No Content-Length: chunked, until the client goes away or
		// 16 MiB were sent.
		for range (16 << 20) / len(chunk) {
			n, err := w.Write(chunk)
			sent.Add(int64(n))
			if err != nil {
				return
			}
			w.(http.Flusher).Flush()
		}
	}))
	t.Cleanup(srv.Close)
	ctx := ctxFor(t)
	s, err := s3store.New(ctx, s3store.Config{Endpoint: srv.URL, Bucket: "b", AccessKey: "k", SecretKey: "s", PathStyle: true, MaxAttempts: 1})
	require.NoError(t, err)

	_, err = store.GetLimited(ctx, s, "announced", 1000)
	var tl *store.TooLargeError
	require.ErrorAs(t, err, &tl)
	require.Equal(t, store.TooLargeError{Key: "announced", Size: 5000, Max: 1000}, *tl)
	require.ErrorContains(t, err, "object announced is 5000 bytes, over the limit of 1000 bytes")

	_, err = store.GetLimited(ctx, s, "endless", 1000)
	require.ErrorAs(t, err, &tl)
	require.Equal(t, store.TooLargeError{Key: "endless", Max: 1000}, *tl)
	require.ErrorContains(t, err, "object endless is over the limit of 1000 bytes")
	srv.CloseClientConnections()
	require.Less(t, sent.Load(), int64(16<<20), "the client stopped reading")
}
