package storetest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"testing"
	"time"

	"github.com/qo-queue/qo/store"
	"github.com/qo-queue/qo/store/memstore"
	"github.com/qo-queue/qo/store/s3store"
)

// Environment variables naming the test S3 server (scripts/test.sh sets
// them after starting MinIO).
const (
	EnvEndpoint  = "QO_TEST_S3_ENDPOINT"
	EnvAccessKey = "QO_TEST_S3_ACCESS_KEY"
	EnvSecretKey = "QO_TEST_S3_SECRET_KEY"
	EnvRegion    = "QO_TEST_S3_REGION"
	// EnvRequireS3 set to 1 turns a missing endpoint into a test failure
	// (CI sets it, so CI never silently skips the S3 tests).
	EnvRequireS3 = "QO_TEST_REQUIRE_S3"
)

// Backend is a store implementation tests can run against.
type Backend struct {
	Name string
	// New returns a fresh, empty store. It may skip the test (t.Skip) when
	// the backend is not available.
	New func(t testing.TB) store.Store
}

// Backends returns every backend tests should loop over: "mem" (always)
// and "minio" (a fresh versioned bucket on the test S3 server; skips
// loudly when none is configured).
//
//	for _, b := range storetest.Backends() {
//		t.Run(b.Name, func(t *testing.T) { s := b.New(t); ... })
//	}
func Backends() []Backend {
	return []Backend{
		{Name: "mem", New: func(testing.TB) store.Store { return memstore.New() }},
		{Name: "minio", New: func(t testing.TB) store.Store { return MinIO(t) }},
	}
}

// S3Config returns the s3store configuration of the test server named by
// the QO_TEST_S3_* variables, for bucket. It skips t when no server is
// configured, or fails it when QO_TEST_REQUIRE_S3=1.
func S3Config(t testing.TB, bucket string) s3store.Config {
	t.Helper()
	endpoint := os.Getenv(EnvEndpoint)
	if endpoint == "" {
		msg := "*** " + EnvEndpoint + " is not set: SKIPPING this test against a real S3 server. " +
			"Run scripts/test.sh, which starts MinIO and runs every test. ***"
		if os.Getenv(EnvRequireS3) == "1" {
			t.Fatal(msg + " (" + EnvRequireS3 + "=1 makes this a failure)")
		}
		t.Skip(msg)
	}
	region := os.Getenv(EnvRegion)
	if region == "" {
		region = s3store.DefaultRegion
	}
	return s3store.Config{
		Endpoint:  endpoint,
		Region:    region,
		Bucket:    bucket,
		AccessKey: os.Getenv(EnvAccessKey),
		SecretKey: os.Getenv(EnvSecretKey),
		PathStyle: true,
	}
}

// BucketName returns a fresh random bucket name "qo-test-...".
func BucketName() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return "qo-test-" + hex.EncodeToString(b[:])
}

// MinIO returns a store on a fresh bucket, with versioning enabled, on the
// test S3 server named by the QO_TEST_S3_* variables. The bucket and all
// its versions are removed when the test ends. It skips t when no server is
// configured (fails it under QO_TEST_REQUIRE_S3=1).
func MinIO(t testing.TB) *s3store.Store {
	t.Helper()
	cfg := S3Config(t, BucketName())
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s, err := s3store.New(ctx, cfg)
	if err != nil {
		t.Fatalf("test S3 store: %v", err)
	}
	if err := s.CreateBucket(ctx); err != nil {
		t.Fatalf("test S3 store: %v", err)
	}
	t.Cleanup(func() { RemoveBucket(t, s) })
	if err := s.EnableVersioning(ctx); err != nil {
		t.Fatalf("test S3 store: %v", err)
	}
	return s
}

// RemoveBucket deletes every version and delete marker in s's bucket and
// then the bucket. Failures are logged, not fatal: cleanup must not hide
// the test's own result.
func RemoveBucket(t testing.TB, s *s3store.Store) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := s.RemoveBucket(ctx); err != nil {
		t.Logf("cleanup of bucket %s: %v", s.Bucket(), err)
	}
}

// ForEach runs fn as a parallel subtest once per backend in Backends, named
// after it.
func ForEach(t *testing.T, fn func(t *testing.T, b Backend)) {
	t.Helper()
	for _, b := range Backends() {
		t.Run(b.Name, func(t *testing.T) {
			t.Parallel()
			fn(t, b)
		})
	}
}
