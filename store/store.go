// Package store is the one storage seam of qo: a small key/value interface
// with compare-and-swap writes, object versions and an authoritative clock.
//
// Everything above this package (queue, worker, monitor, UIs) talks to a
// Store and never learns which implementation it runs on. Implementations:
//
//   - s3store: any S3-compatible server (AWS S3, MinIO, the embedded gateway)
//   - memstore: an in-memory store for fast unit tests
//
// Every implementation passes the conformance suite in store/storetest.
//
// # Consistency assumption
//
// A Store must be strongly consistent: a successful Put is visible to every
// later Get and List, and conditional writes are linearizable per key (of N
// racing writers presenting the same ETag, exactly one wins). AWS S3 has
// offered this since December 2020; MinIO and versitygw do too.
//
// A read must also be whole: the ETag a Get returns is the ETag of the
// body it returns, since a compare-and-swap presents that ETag as the
// version the caller based its change on. A server that pairs an old body
// with the ETag of the write that replaced it (a torn read) lets a stale
// writer win: versitygw's sidecar metadata mode did (docs/reliability.md,
// "Torn reads in versitygw's sidecar metadata mode"). s3store checks every
// Get's body against its ETag where the server's ETags are body MD5s (it
// learns whether they are from its own Puts), reads again a few times on a
// mismatch and then fails with ErrTornRead, which matches
// ErrPreconditionFailed: callers treat it as a lost race (the queue as
// queue.ErrConflict). On a healthy server the check costs no request.
//
// # Keys
//
// Keys are non-empty UTF-8 strings; "/" separates levels for listings with
// a delimiter. A key must not equal another key's prefix up to a "/" ("a/b"
// and "a/b/c" cannot both exist): servers that store objects as files
// (versitygw's posix backend) refuse the second one.
//
// # Concurrency
//
// Implementations must be safe for concurrent use by multiple goroutines.
package store

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Sentinel errors. Implementations wrap them with the operation and key, so
// callers branch with errors.Is.
var (
	// ErrNotFound: the key (or version) does not exist.
	ErrNotFound = errors.New("not found")
	// ErrPreconditionFailed: a conditional write or delete lost the race
	// (HTTP 412, or 404 for If-Match on a missing key, which some servers
	// answer instead). Either way the caller's view of the object is stale.
	ErrPreconditionFailed = errors.New("precondition failed")
	// ErrTornRead: a read returned a body that is not the body of the ETag
	// it came with (the server paired one version's body with another's
	// ETag), and reading again did not settle it. It also matches
	// ErrPreconditionFailed: the caller cannot base a compare-and-swap on
	// what it read, which is a lost race. See "Consistency assumption".
	ErrTornRead error = tornRead{}
	// ErrNotSupported: the provider lacks a feature qo relies on.
	ErrNotSupported = errors.New("not supported by this provider")

	// The errors below describe a misconfigured or unavailable bucket rather
	// than the state of one key. Implementations wrap them with the
	// endpoint, the bucket and the fix, so the message can be shown to an
	// operator as it is.

	// ErrBucketNotFound: the configured bucket does not exist.
	ErrBucketNotFound = errors.New("bucket not found")
	// ErrAccessDenied: the credentials are missing, wrong, or lack a
	// permission.
	ErrAccessDenied = errors.New("access denied")
	// ErrUnreachable: the endpoint could not be reached (connection
	// refused, DNS failure, timeout).
	ErrUnreachable = errors.New("storage endpoint unreachable")
)

// tornRead is the type of ErrTornRead, which matches ErrPreconditionFailed.
type tornRead struct{}

func (tornRead) Error() string { return "torn read" }

func (tornRead) Is(target error) bool { return target == ErrPreconditionFailed }

// Condition guards a Put or Delete. The zero value is unconditional.
type Condition struct {
	// IfMatch, when set, applies the write only if the current object's ETag
	// equals it (compare-and-swap).
	IfMatch string
	// IfNoneMatch applies the write only if no object exists at the key
	// (create-only, "If-None-Match: *"). A delete marker in a versioned
	// bucket may count as an object on some servers: never rely on
	// re-creating a deleted key with a create-only write.
	IfNoneMatch bool
}

// Conditions and deleted keys: servers disagree once a key's latest version
// is a delete marker. A create-only write succeeds on AWS S3 and MinIO but
// fails on versitygw. An If-Match write presenting the ETag of the version
// the marker hides fails on AWS S3 and MinIO, but versitygw accepts it, and
// with its sidecar metadata stores the write as another delete marker (the
// write is lost although it reported success). So: never write a deleted
// key conditionally. Objects that are compared-and-swapped (tasks, leases)
// are updated in place, never deleted and re-created.

// CreateOnly is the condition for a write that must not overwrite anything.
var CreateOnly = Condition{IfNoneMatch: true}

// IfMatch returns the compare-and-swap condition for etag.
func IfMatch(etag string) Condition { return Condition{IfMatch: etag} }

// Object is the body of a key plus the metadata qo relies on.
type Object struct {
	Key          string
	Body         []byte
	ETag         string // opaque; pass back unchanged in Condition.IfMatch
	VersionID    string // empty when the bucket is not versioned
	LastModified time.Time
}

// PutResult reports the identity of the version a Put created.
type PutResult struct {
	ETag      string
	VersionID string
}

// ListParams selects a page of keys in lexicographic order.
type ListParams struct {
	Prefix     string
	StartAfter string // only keys strictly greater than this
	// Delimiter groups keys sharing the prefix up to the delimiter into
	// ListPage.CommonPrefixes (e.g. "/" to list one "directory" level).
	Delimiter string
	Limit     int    // page size; <= 0 means the provider default (1000)
	Token     string // continuation token from a previous ListPage
}

// ObjectInfo is one entry of a List page.
type ObjectInfo struct {
	Key          string
	ETag         string
	Size         int64
	LastModified time.Time
}

// ListPage is one page of a listing. NextToken is empty on the last page.
type ListPage struct {
	Objects        []ObjectInfo
	CommonPrefixes []string
	NextToken      string
}

// Version is one version of a key, from ListVersions.
type Version struct {
	Key          string
	VersionID    string
	ETag         string
	LastModified time.Time
	IsLatest     bool
	DeleteMarker bool
	Size         int64
}

// Store is the storage interface qo is built on.
type Store interface {
	// Get returns the current version of key, or ErrNotFound.
	Get(ctx context.Context, key string) (*Object, error)
	// GetVersion returns one version of key by id, or ErrNotFound.
	GetVersion(ctx context.Context, key, versionID string) (*Object, error)
	// Put writes body at key if cond holds, else ErrPreconditionFailed.
	Put(ctx context.Context, key string, body []byte, cond Condition) (PutResult, error)
	// Delete removes key (a delete marker in a versioned bucket). Deleting a
	// missing key is not an error. A conditional delete is best-effort: some
	// servers ignore If-Match on DELETE and delete anyway.
	Delete(ctx context.Context, key string, cond Condition) error
	// List returns one page of keys under a prefix, in lexicographic order.
	List(ctx context.Context, p ListParams) (ListPage, error)
	// ListVersions returns every version (and delete marker) of exactly key,
	// newest first.
	ListVersions(ctx context.Context, key string) ([]Version, error)
	// Now returns the server's current time: the authoritative clock for
	// leases and scheduling. Implementations estimate it from responses they
	// already receive and never write an object just to read the time.
	Now(ctx context.Context) (time.Time, error)
}

// Clock is the time source above the store. Production code uses the
// store's authoritative time (see ServerClock); tests inject a fake.
type Clock interface {
	Now() time.Time
}

// ClockFunc adapts a function to Clock.
type ClockFunc func() time.Time

// Now implements Clock.
func (f ClockFunc) Now() time.Time { return f() }

// ServerClock is a Clock reading s.Now. Implementations answer from a cached
// offset, so this is cheap; if the store cannot answer (no response seen yet
// and the server is unreachable) it falls back to the local clock.
func ServerClock(s Store) Clock {
	return ClockFunc(func() time.Time {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		t, err := s.Now(ctx)
		if err != nil {
			return time.Now()
		}
		return t
	})
}

// UncheckedGetter is implemented by stores whose Get checks each body
// against its ETag and reads again on a mismatch (see ErrTornRead).
// GetUnchecked is one read, returned as the server answered it: qo doctor
// uses it to see whether the server itself tears reads, which the check
// would otherwise hide.
type UncheckedGetter interface {
	GetUnchecked(ctx context.Context, key string) (*Object, error)
}

// Admin is implemented by stores that can inspect and configure their
// bucket. qo init, qo doctor and qo dev use it; the queue never does.
type Admin interface {
	// CreateBucket creates the bucket if it does not exist.
	CreateBucket(ctx context.Context) error
	// Versioning reports whether bucket versioning is enabled.
	Versioning(ctx context.Context) (bool, error)
	// EnableVersioning turns bucket versioning on.
	EnableVersioning(ctx context.Context) error
	// SetLifecycle installs the given lifecycle rules, replacing existing
	// ones. ErrNotSupported when the provider has no lifecycle support.
	SetLifecycle(ctx context.Context, rules []LifecycleRule) error
	// Lifecycle returns the installed rules (nil when none).
	Lifecycle(ctx context.Context) ([]LifecycleRule, error)
	// SetCORS allows browsers from origins to read and write the bucket and
	// exposes the headers the web UI needs (ETag, Date, x-amz-version-id),
	// through one rule of qo's own that replaces the one an earlier call
	// set; the bucket's other CORS rules stay as they are.
	// ErrNotSupported when the provider rejects bucket CORS (MinIO exposes
	// those headers by default).
	SetCORS(ctx context.Context, origins []string) error
}

// LifecycleRule expires old data under a prefix.
type LifecycleRule struct {
	ID     string `json:"id"`
	Prefix string `json:"prefix"`
	// Tag, when its Key is set, limits the rule to objects carrying it.
	Tag Tag `json:"tag,omitzero"`
	// ExpirationDays expires current versions this many days after they
	// were written (0: keep). On a versioned bucket the current version
	// becomes noncurrent behind a delete marker. Not with
	// ExpiredDeleteMarkers in the same rule (S3 refuses that).
	ExpirationDays int `json:"expiration_days,omitempty"`
	// NoncurrentDays expires noncurrent versions this many days after they
	// became noncurrent (0: keep).
	NoncurrentDays int `json:"noncurrent_days"`
	// ExpiredDeleteMarkers removes delete markers with no versions left.
	ExpiredDeleteMarkers bool `json:"expired_delete_markers"`
}

// Tag is an object tag.
type Tag struct {
	Key   string `json:"key"`
	Value string `json:"value"`
}

// Tagger is implemented by stores that tag an object in the request that
// writes it (S3's x-amz-tagging header: no extra request), so lifecycle
// rules can filter on the tag.
type Tagger interface {
	// PutTagged is Put with the tags set on the version written.
	PutTagged(ctx context.Context, key string, body []byte, cond Condition, tags []Tag) (PutResult, error)
	// Tags returns the tags of the current version of key.
	Tags(ctx context.Context, key string) ([]Tag, error)
}

// CheckLifecycleRule reports a rule S3 would refuse or that does nothing.
func CheckLifecycleRule(r LifecycleRule) error {
	switch {
	case r.ID == "":
		return fmt.Errorf("rule (prefix %q) has no id: give every rule a unique id", r.Prefix)
	case r.NoncurrentDays < 0 || r.ExpirationDays < 0:
		return fmt.Errorf("rule %q: negative days: use 0 to keep objects", r.ID)
	case r.NoncurrentDays == 0 && r.ExpirationDays == 0 && !r.ExpiredDeleteMarkers:
		return fmt.Errorf("rule %q has no action: set expiration days, noncurrent days or expired delete markers", r.ID)
	case r.ExpirationDays > 0 && r.ExpiredDeleteMarkers:
		return fmt.Errorf("rule %q: expiration days and expired delete markers cannot share a rule: make two rules", r.ID)
	}
	return nil
}
