// Package doctor checks that a bucket can be trusted with a qo queue: the
// checks an operator needs before pointing workers at a provider.
//
// Run probes the store the way qo uses it: it writes a few small objects
// under a random "doctor/{random}/" prefix, races nothing, and removes
// every version of them afterwards (where the store can delete versions).
// Provider quirks are detected by trying, never assumed from the endpoint:
// a provider that silently ignores If-Match (Garage does) accepts a write
// with a stale ETag, and qo's compare-and-swap would be unsafe there.
//
// Checks, in order (names are stable: they appear in `qo doctor --json`):
//
//	reachable    the endpoint answers
//	credentials  the credentials are accepted
//	bucket       the bucket exists
//	versioning   bucket versioning is on (task history)
//	create-only  a PUT with If-None-Match: * refuses to overwrite
//	if-match     a PUT with a stale or bogus If-Match is refused
//	torn-reads   GETs during chained If-Match PUTs return the body and the
//	             ETag of the same write
//	list-paging  listings page with a limit, continuation and start-after
//	versions     versions are listed newest first and readable
//	clock        the server clock versus this machine's
//	lifecycle    rules expire old versions under the index prefixes
//	cleanup      the probe objects were removed
//
// When the endpoint, the credentials or the bucket fail, the later checks
// are reported as skipped.
package doctor

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/qo-queue/qo/store"
)

// Status is the outcome of one check.
type Status string

// Statuses, from best to worst (skip: not run because an earlier check
// failed or it does not apply).
const (
	StatusOK   Status = "ok"
	StatusSkip Status = "skip"
	StatusWarn Status = "warn"
	StatusFail Status = "fail"
)

// Check is the result of one check.
type Check struct {
	Name   string `json:"name"`
	Status Status `json:"status"`
	// Detail says what was found.
	Detail string `json:"detail,omitempty"`
	// Fix says what to do about a warning or failure.
	Fix string `json:"fix,omitempty"`
}

// Report is the result of Run.
type Report struct {
	// Target describes the store checked (e.g. `s3://bucket at endpoint`).
	Target string  `json:"target,omitempty"`
	Checks []Check `json:"checks"`
	// OK is true when no check failed (warnings allowed).
	OK bool `json:"ok"`
}

// Failures returns the failed checks.
func (r Report) Failures() []Check { return r.with(StatusFail) }

// Warnings returns the checks that passed with a warning.
func (r Report) Warnings() []Check { return r.with(StatusWarn) }

// Find returns the check with the given name.
func (r Report) Find(name string) (Check, bool) {
	for _, c := range r.Checks {
		if c.Name == name {
			return c, true
		}
	}
	return Check{}, false
}

func (r Report) with(st Status) []Check {
	var out []Check
	for _, c := range r.Checks {
		if c.Status == st {
			out = append(out, c)
		}
	}
	return out
}

// Check names.
const (
	CheckReachable   = "reachable"
	CheckCredentials = "credentials"
	CheckBucket      = "bucket"
	CheckVersioning  = "versioning"
	CheckCreateOnly  = "create-only"
	CheckIfMatch     = "if-match"
	CheckTornReads   = "torn-reads"
	CheckListPaging  = "list-paging"
	CheckVersions    = "versions"
	CheckClock       = "clock"
	CheckLifecycle   = "lifecycle"
	CheckRetention   = "retention"
	CheckCleanup     = "cleanup"
)

// Options tunes Run. The zero value is the default.
type Options struct {
	// AllowNoVersioning turns "versioning off" from a failure into a
	// warning (qo runs, without task history; QO_ALLOW_NO_VERSIONING=1).
	AllowNoVersioning bool
	// LifecyclePrefixes are the prefixes that should have a rule expiring
	// noncurrent versions; default IndexPrefixes.
	LifecyclePrefixes []string
	// Prefix is where probe objects are written, under a random
	// sub-prefix; default "doctor/".
	Prefix string
	// ClockWarn and ClockFail are the clock offsets (either direction)
	// from which the clock check warns and fails; defaults 30s and 10m
	// (S3 rejects requests signed more than 15 minutes off).
	ClockWarn, ClockFail time.Duration
	// Now is the local clock; default time.Now.
	Now func() time.Time
}

// Optional store capabilities Run uses when present.
type (
	// pinger checks endpoint, credentials and bucket in one request.
	pinger interface {
		Ping(ctx context.Context) error
	}
	// clockOffsetter reports the estimated server-minus-local offset.
	clockOffsetter interface {
		ClockOffset() (offset, uncertainty time.Duration, ok bool)
	}
	// bucketNamer names the bucket, for fixes.
	bucketNamer interface {
		Bucket() string
	}
)

// VersionDeleter is implemented by stores that can permanently delete one
// version of a key (or a delete marker). Run uses it to leave no trace.
type VersionDeleter interface {
	DeleteVersion(ctx context.Context, key, versionID string) error
}

// Run checks s and returns the report. It never panics on a misbehaving
// store and always tries to clean up what it wrote.
func Run(ctx context.Context, s store.Store, opts Options) Report {
	opts.defaults()
	d := &doctor{s: s, opts: opts, bucket: "BUCKET"}
	if bn, ok := s.(bucketNamer); ok && bn.Bucket() != "" {
		d.bucket = bn.Bucket()
	}
	if st, ok := s.(fmt.Stringer); ok {
		d.report.Target = st.String()
	}
	d.prefix = opts.Prefix + randomHex(6) + "/"
	d.run(ctx)
	d.report.OK = len(d.report.Failures()) == 0
	return d.report
}

func (o *Options) defaults() {
	if o.LifecyclePrefixes == nil {
		o.LifecyclePrefixes = IndexPrefixes
	}
	if o.Prefix == "" {
		o.Prefix = "doctor/"
	}
	if !strings.HasSuffix(o.Prefix, "/") {
		o.Prefix += "/"
	}
	if o.ClockWarn <= 0 {
		o.ClockWarn = 30 * time.Second
	}
	if o.ClockFail <= 0 {
		o.ClockFail = 10 * time.Minute
	}
	if o.Now == nil {
		o.Now = time.Now
	}
}

type doctor struct {
	s      store.Store
	opts   Options
	bucket string
	prefix string
	report Report

	versioning bool     // bucket versioning is known to be on
	written    []string // probe keys, for cleanup
	// The probe key with the most chained writes (the torn-reads probe's,
	// else the if-match probe's), for the versions check.
	verKey    string
	verWrites []probeWrite // successful writes of verKey, oldest first
}

type probeWrite struct{ etag, body string }

func (d *doctor) add(name string, st Status, detail, fix string) {
	d.report.Checks = append(d.report.Checks, Check{Name: name, Status: st, Detail: detail, Fix: fix})
}

func (d *doctor) skip(reason string, names ...string) {
	for _, n := range names {
		d.add(n, StatusSkip, reason, "")
	}
}

func (d *doctor) run(ctx context.Context) {
	if !d.connect(ctx) {
		return
	}
	d.checkVersioning(ctx)
	d.checkCreateOnly(ctx)
	d.checkIfMatch(ctx)
	d.checkTornReads(ctx)
	d.checkListPaging(ctx)
	d.checkVersions(ctx)
	d.checkClock(ctx)
	d.checkLifecycle(ctx)
	d.checkRetention(ctx)
	d.cleanup(ctx)
}

// put writes a probe object and remembers it for cleanup.
func (d *doctor) put(ctx context.Context, key, body string, cond store.Condition) (store.PutResult, error) {
	res, err := d.s.Put(ctx, key, []byte(body), cond)
	if err == nil || !errors.Is(err, store.ErrPreconditionFailed) {
		d.remember(key)
	}
	return res, err
}

func (d *doctor) remember(key string) {
	for _, k := range d.written {
		if k == key {
			return
		}
	}
	d.written = append(d.written, key)
}

// body returns a probe body that differs on every call (the ETag is the
// MD5 of the body, so equal bodies would be indistinguishable).
func body(what string) string {
	return fmt.Sprintf(`{"qo_doctor":%q,"nonce":%q}`, what, randomHex(8))
}

// ProvidersDoc is the page on S3 servers and providers tested with qo.
const ProvidersDoc = "docs/providers.md"

const unsafeProvider = "qo needs conditional writes honoured to be safe; use a provider that does (AWS S3, MinIO, SeaweedFS, versitygw, ...: see " + ProvidersDoc + ") or report the bug to this one"

// bogusETag is an ETag no object has.
const bogusETag = `"00000000000000000000000000000000"`

func notSupportedFix(err error) string {
	if errors.Is(err, store.ErrNotSupported) {
		return unsafeProvider
	}
	if errors.Is(err, store.ErrAccessDenied) {
		return "allow s3:PutObject on the bucket to these credentials"
	}
	return ""
}

func permFix(err error, perm string) string {
	if errors.Is(err, store.ErrAccessDenied) {
		return "allow " + perm + " on the bucket to these credentials"
	}
	return ""
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
