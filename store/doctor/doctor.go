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
	"sort"
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

// IndexPrefixes are the key prefixes whose objects qo rewrites or deletes
// constantly (ready and lease indexes, worker heartbeats, shard and monitor
// leases). Their old versions have no value, and without a lifecycle rule a
// versioned bucket keeps every one of them forever. Task objects (tasks/)
// are deliberately not here: their versions are the task history.
var IndexPrefixes = []string{"ready/", "leases/", "dead/", "workers/", "shard-leases/", "monitor/"}

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

// connect runs the reachable, credentials and bucket checks; false means
// nothing else can run.
func (d *doctor) connect(ctx context.Context) bool {
	start := d.opts.Now()
	var err error
	if p, ok := d.s.(pinger); ok {
		err = p.Ping(ctx)
	} else {
		_, err = d.s.List(ctx, store.ListParams{Prefix: d.prefix, Limit: 1})
	}
	took := d.opts.Now().Sub(start)
	if took >= time.Millisecond {
		took = took.Round(time.Millisecond)
	} else {
		took = took.Round(10 * time.Microsecond)
	}
	after := []string{CheckVersioning, CheckCreateOnly, CheckIfMatch, CheckTornReads, CheckListPaging,
		CheckVersions, CheckClock, CheckLifecycle, CheckRetention, CheckCleanup}
	switch {
	case err == nil:
		d.add(CheckReachable, StatusOK, fmt.Sprintf("answered in %v", took), "")
		d.add(CheckCredentials, StatusOK, "accepted", "")
		d.add(CheckBucket, StatusOK, fmt.Sprintf("%q exists", d.bucket), "")
		return true
	case errors.Is(err, store.ErrUnreachable):
		d.add(CheckReachable, StatusFail, err.Error(),
			"check S3_ENDPOINT (or --endpoint) and that the server is running and reachable from here")
		d.skip("endpoint unreachable", append([]string{CheckCredentials, CheckBucket}, after...)...)
	case errors.Is(err, store.ErrAccessDenied):
		d.add(CheckReachable, StatusOK, fmt.Sprintf("answered in %v", took), "")
		d.add(CheckCredentials, StatusFail, err.Error(),
			"check AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (or AWS_PROFILE), and that they may read and write the bucket")
		d.skip("credentials rejected", append([]string{CheckBucket}, after...)...)
	case errors.Is(err, store.ErrBucketNotFound):
		d.add(CheckReachable, StatusOK, fmt.Sprintf("answered in %v", took), "")
		d.add(CheckCredentials, StatusOK, "accepted", "")
		d.add(CheckBucket, StatusFail, err.Error(),
			fmt.Sprintf("create the bucket (qo init does), or check S3_BUCKET (or --bucket); it is %q now", d.bucket))
		d.skip("bucket missing", after...)
	default:
		d.add(CheckReachable, StatusFail, err.Error(), "check S3_ENDPOINT (or --endpoint), S3_REGION and the server's logs")
		d.skip("endpoint did not answer properly", append([]string{CheckCredentials, CheckBucket}, after...)...)
	}
	return false
}

func (d *doctor) versioningFix() string {
	return fmt.Sprintf("enable it (aws s3api put-bucket-versioning --bucket %s --versioning-configuration Status=Enabled, or mc version enable ALIAS/%s), or set QO_ALLOW_NO_VERSIONING=1 to run without task history",
		d.bucket, d.bucket)
}

func (d *doctor) checkVersioning(ctx context.Context) {
	a, ok := d.s.(store.Admin)
	if !ok {
		d.add(CheckVersioning, StatusWarn, "this store cannot report its versioning", "")
		return
	}
	on, err := a.Versioning(ctx)
	switch {
	case err != nil:
		d.add(CheckVersioning, StatusFail, "cannot read the bucket's versioning: "+err.Error(),
			"allow s3:GetBucketVersioning to these credentials")
	case on:
		d.versioning = true
		d.add(CheckVersioning, StatusOK, "enabled", "")
	case d.opts.AllowNoVersioning:
		d.add(CheckVersioning, StatusWarn, "off, allowed by QO_ALLOW_NO_VERSIONING=1: task history is unavailable", d.versioningFix())
	default:
		d.add(CheckVersioning, StatusFail, "off: qo keeps task history in object versions", d.versioningFix())
	}
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

func (d *doctor) checkCreateOnly(ctx context.Context) {
	key := d.prefix + "create-only.json"
	if _, err := d.put(ctx, key, body("create-only 1"), store.CreateOnly); err != nil {
		d.add(CheckCreateOnly, StatusFail, "create-only PUT (If-None-Match: *) of a new key failed: "+err.Error(), notSupportedFix(err))
		return
	}
	_, err := d.put(ctx, key, body("create-only 2"), store.CreateOnly)
	if c := judgeOverwrite(err); c != nil {
		d.report.Checks = append(d.report.Checks, *c)
		return
	}
	d.add(CheckCreateOnly, StatusOK, "a second create-only PUT of the same key was refused", "")
}

// judgeOverwrite judges a create-only PUT of a key that exists: nil when
// it was refused, else the failed create-only check.
func judgeOverwrite(err error) *Check {
	switch {
	case errors.Is(err, store.ErrPreconditionFailed):
		return nil
	case err == nil:
		return &Check{Name: CheckCreateOnly, Status: StatusFail,
			Detail: "the provider ignored If-None-Match: * and overwrote an existing object", Fix: unsafeProvider}
	default:
		return &Check{Name: CheckCreateOnly, Status: StatusFail,
			Detail: "a create-only PUT of an existing key failed with an unexpected error: " + err.Error(), Fix: notSupportedFix(err)}
	}
}

// judgeStaleIfMatch judges a PUT presenting what (a stale or bogus ETag)
// in If-Match: nil when it was refused, else the failed if-match check.
func judgeStaleIfMatch(what string, err error) *Check {
	switch {
	case errors.Is(err, store.ErrPreconditionFailed):
		return nil
	case err == nil:
		return &Check{Name: CheckIfMatch, Status: StatusFail,
			Detail: fmt.Sprintf("the provider accepted a PUT with %s in If-Match: it ignores If-Match, so compare-and-swap is not enforced", what),
			Fix:    unsafeProvider}
	default:
		return &Check{Name: CheckIfMatch, Status: StatusFail,
			Detail: fmt.Sprintf("PUT with %s in If-Match failed with an unexpected error: %v", what, err), Fix: notSupportedFix(err)}
	}
}

func notSupportedFix(err error) string {
	if errors.Is(err, store.ErrNotSupported) {
		return unsafeProvider
	}
	if errors.Is(err, store.ErrAccessDenied) {
		return "allow s3:PutObject on the bucket to these credentials"
	}
	return ""
}

func (d *doctor) checkIfMatch(ctx context.Context) {
	key := d.prefix + "if-match.json"
	d.verKey = key
	write := func(b string, cond store.Condition) (store.PutResult, error) {
		res, err := d.put(ctx, key, b, cond)
		if err == nil {
			d.verWrites = append(d.verWrites, probeWrite{res.ETag, b})
		}
		return res, err
	}
	firstBody, secondBody := body("if-match 1"), body("if-match 2")
	first, err := write(firstBody, store.Condition{})
	if err != nil {
		d.add(CheckIfMatch, StatusFail, "plain PUT failed: "+err.Error(), notSupportedFix(err))
		return
	}
	second, err := write(secondBody, store.IfMatch(first.ETag))
	if err != nil {
		d.add(CheckIfMatch, StatusFail, "PUT with the current ETag in If-Match failed: "+err.Error(), unsafeProvider)
		return
	}
	if first.ETag == second.ETag {
		d.add(CheckIfMatch, StatusFail, fmt.Sprintf("two different bodies got the same ETag %s", first.ETag), unsafeProvider)
		return
	}
	for _, stale := range []struct{ what, etag string }{
		{"a stale ETag", first.ETag},
		{"a bogus ETag", bogusETag},
	} {
		_, err := write(body("if-match lost"), store.IfMatch(stale.etag))
		if c := judgeStaleIfMatch(stale.what, err); c != nil {
			d.report.Checks = append(d.report.Checks, *c)
			return
		}
	}
	obj, err := d.s.Get(ctx, key)
	switch {
	case err != nil:
		d.add(CheckIfMatch, StatusFail, "reading the probe back failed: "+err.Error(), "")
	case string(obj.Body) != secondBody:
		d.add(CheckIfMatch, StatusFail, "a refused conditional PUT changed the object anyway", unsafeProvider)
	case obj.ETag != second.ETag:
		d.add(CheckIfMatch, StatusFail, fmt.Sprintf("GET returned ETag %s, the PUT returned %s: ETags are not stable", obj.ETag, second.ETag), unsafeProvider)
	default:
		d.add(CheckIfMatch, StatusOK, "PUT with the current ETag succeeded; stale and bogus ETags were refused", "")
	}
}

func (d *doctor) checkListPaging(ctx context.Context) {
	const n = 5
	dir := d.prefix + "list/"
	want := make([]string, n)
	for i := range want {
		want[i] = fmt.Sprintf("%s%d.json", dir, i)
		if _, err := d.put(ctx, want[i], body("list"), store.Condition{}); err != nil {
			d.add(CheckListPaging, StatusFail, "writing probe keys failed: "+err.Error(), "")
			return
		}
	}
	fix := "qo pages listings with max-keys and continuation tokens; this provider's listing does not conform to the S3 API"
	var got []string
	token := ""
	pages := 0
	for {
		page, err := d.s.List(ctx, store.ListParams{Prefix: dir, Limit: 2, Token: token})
		if err != nil {
			d.add(CheckListPaging, StatusFail, "LIST failed: "+err.Error(), permFix(err, "s3:ListBucket"))
			return
		}
		pages++
		if len(page.Objects) > 2 {
			d.add(CheckListPaging, StatusFail, fmt.Sprintf("a page of limit 2 held %d keys", len(page.Objects)), fix)
			return
		}
		for _, o := range page.Objects {
			got = append(got, o.Key)
		}
		if page.NextToken == "" {
			break
		}
		if page.NextToken == token || pages > n+1 {
			d.add(CheckListPaging, StatusFail, "the continuation token does not advance", fix)
			return
		}
		token = page.NextToken
	}
	if !equal(got, want) {
		d.add(CheckListPaging, StatusFail, fmt.Sprintf("paging with limit 2 returned %v, want %v", got, want), fix)
		return
	}
	page, err := d.s.List(ctx, store.ListParams{Prefix: dir, StartAfter: want[1], Limit: 2})
	if err != nil {
		d.add(CheckListPaging, StatusFail, "LIST with start-after failed: "+err.Error(), "")
		return
	}
	var after []string
	for _, o := range page.Objects {
		after = append(after, o.Key)
	}
	if !equal(after, want[2:4]) {
		d.add(CheckListPaging, StatusFail, fmt.Sprintf("LIST after %s returned %v, want %v", want[1], after, want[2:4]), fix)
		return
	}
	d.add(CheckListPaging, StatusOK, fmt.Sprintf("%d keys in %d pages of 2, in order; start-after honoured", n, pages), "")
}

func permFix(err error, perm string) string {
	if errors.Is(err, store.ErrAccessDenied) {
		return "allow " + perm + " on the bucket to these credentials"
	}
	return ""
}

func equal(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func (d *doctor) checkVersions(ctx context.Context) {
	if !d.versioning {
		d.add(CheckVersions, StatusSkip, "versioning is not on", "")
		return
	}
	if len(d.verWrites) < 2 {
		d.add(CheckVersions, StatusSkip, "the probes did not write two versions of a key", "")
		return
	}
	writes := d.verWrites
	vs, err := d.s.ListVersions(ctx, d.verKey)
	if err != nil {
		d.add(CheckVersions, StatusFail, "LIST versions failed: "+err.Error(), permFix(err, "s3:ListBucketVersions"))
		return
	}
	// Where each write is listed (bodies differ, so do ETags).
	pos := make([]int, len(writes))
	for w := range writes {
		pos[w] = -1
		for i, v := range vs {
			if v.ETag == writes[w].etag && !v.DeleteMarker {
				pos[w] = i
			}
		}
		if pos[w] < 0 {
			d.add(CheckVersions, StatusFail, fmt.Sprintf("%d writes of a key left %d versions: write %d is not listed", len(writes), len(vs), w+1),
				"qo reads task history from object versions; check that versioning really is enabled")
			return
		}
	}
	oldest := vs[pos[0]]
	obj, err := d.s.GetVersion(ctx, d.verKey, oldest.VersionID)
	switch {
	case err != nil:
		d.add(CheckVersions, StatusFail, "GET of an old version failed: "+err.Error(), permFix(err, "s3:GetObjectVersion"))
		return
	case string(obj.Body) != writes[0].body:
		d.add(CheckVersions, StatusFail, "GET of an old version returned another body", "")
		return
	}
	newestFirst, oldestFirst := true, true
	for w := 1; w < len(writes); w++ {
		newestFirst = newestFirst && pos[w] < pos[w-1]
		oldestFirst = oldestFirst && pos[w] > pos[w-1]
	}
	latest := vs[pos[len(writes)-1]].IsLatest
	effect := "qo orders task history by rev, so qo history is right, but tools that trust the listing's order (aws s3api list-object-versions, scripts) show task history out of order"
	switch {
	case newestFirst && latest:
		d.add(CheckVersions, StatusOK, fmt.Sprintf("%d versions listed newest first; old versions readable", len(writes)), "")
	case oldestFirst:
		d.add(CheckVersions, StatusWarn, fmt.Sprintf("%d versions are listed oldest first (the S3 API lists them newest first): %s", len(writes), effect),
			"nothing to do for qo; report it to the provider")
	case !latest:
		d.add(CheckVersions, StatusWarn, "the newest write is not marked as the latest version (IsLatest): "+effect,
			"nothing to do for qo; report it to the provider")
	default:
		d.add(CheckVersions, StatusWarn, fmt.Sprintf("%d versions are listed in neither newest-first nor oldest-first order: %s", len(writes), effect),
			"nothing to do for qo; report it to the provider")
	}
}

func (d *doctor) checkClock(ctx context.Context) {
	var offset, uncertainty time.Duration
	known := false
	if co, ok := d.s.(clockOffsetter); ok {
		offset, uncertainty, known = co.ClockOffset()
	}
	if !known {
		local := d.opts.Now()
		server, err := d.s.Now(ctx)
		if err != nil {
			d.add(CheckClock, StatusWarn, "cannot read the server's clock: "+err.Error(), "")
			return
		}
		offset = server.Sub(local)
	}
	abs := offset
	if abs < 0 {
		abs = -abs
	}
	dir := "ahead of"
	if offset < 0 {
		dir = "behind"
	}
	detail := fmt.Sprintf("server clock is %v %s this machine's", abs.Round(time.Millisecond), dir)
	if uncertainty > 0 {
		detail += fmt.Sprintf(" (±%v)", uncertainty.Round(time.Millisecond))
	}
	fix := "synchronise this machine's clock (NTP, e.g. systemd-timesyncd or chrony)"
	switch {
	case abs >= d.opts.ClockFail:
		d.add(CheckClock, StatusFail, detail+": S3 rejects requests signed more than 15 minutes off", fix)
	case abs >= d.opts.ClockWarn:
		d.add(CheckClock, StatusWarn, detail+": qo schedules by the server's clock, so this is safe, but local timestamps will disagree with the bucket's", fix)
	default:
		d.add(CheckClock, StatusOK, detail, "")
	}
}

// RecommendedLifecycle returns the rules qo recommends for prefixes:
// noncurrent versions expire after one day and delete markers left without
// versions are removed.
func RecommendedLifecycle(prefixes []string) []store.LifecycleRule {
	rules := make([]store.LifecycleRule, 0, len(prefixes))
	for _, p := range prefixes {
		rules = append(rules, store.LifecycleRule{
			ID:                   "qo-expire-old-" + strings.TrimSuffix(strings.ReplaceAll(p, "/", "-"), "-"),
			Prefix:               p,
			NoncurrentDays:       1,
			ExpiredDeleteMarkers: true,
		})
	}
	return rules
}

// uncovered returns the prefixes no rule expires noncurrent versions under.
func uncovered(rules []store.LifecycleRule, prefixes []string) []string {
	var missing []string
	for _, p := range prefixes {
		covered := false
		for _, r := range rules {
			if r.NoncurrentDays > 0 && strings.HasPrefix(p, r.Prefix) {
				covered = true
				break
			}
		}
		if !covered {
			missing = append(missing, p)
		}
	}
	return missing
}

func (d *doctor) checkLifecycle(ctx context.Context) {
	if !d.versioning {
		d.add(CheckLifecycle, StatusSkip, "versioning is not on: no old versions to expire", "")
		return
	}
	a, ok := d.s.(store.Admin)
	if !ok {
		d.add(CheckLifecycle, StatusSkip, "this store cannot report lifecycle rules", "")
		return
	}
	rules, err := a.Lifecycle(ctx)
	switch {
	case errors.Is(err, store.ErrNotSupported):
		d.add(CheckLifecycle, StatusWarn,
			"the provider does not support lifecycle rules: old versions under "+strings.Join(d.opts.LifecyclePrefixes, ", ")+" accumulate",
			"delete noncurrent versions under those prefixes periodically, or use a provider with lifecycle rules")
		return
	case err != nil:
		d.add(CheckLifecycle, StatusWarn, "cannot read lifecycle rules: "+err.Error(), permFix(err, "s3:GetLifecycleConfiguration"))
		return
	}
	missing := uncovered(rules, d.opts.LifecyclePrefixes)
	if len(missing) == 0 {
		d.add(CheckLifecycle, StatusOK, "old versions expire under "+strings.Join(d.opts.LifecyclePrefixes, ", "), "")
		return
	}
	d.add(CheckLifecycle, StatusWarn,
		"no rule expires old versions under "+strings.Join(missing, ", ")+": every state change leaves a version there, kept forever",
		"run qo doctor --fix-lifecycle to add rules expiring them after 1 day")
}

// checkRetention reports whether finished task objects can expire: the
// provider must keep a tag written with an object (tried on a probe), and
// a lifecycle rule must expire current objects under tasks/ that carry
// qo's retention tag (qo init --tasks-retention-days installs it).
func (d *doctor) checkRetention(ctx context.Context) {
	tg, ok := d.s.(store.Tagger)
	if !ok {
		d.add(CheckRetention, StatusSkip, "this store cannot tag objects", "")
		return
	}
	key := d.prefix + "tagged"
	tag := store.Tag{Key: "qo-retention", Value: "finished"}
	_, err := tg.PutTagged(ctx, key, []byte(body("tagged")), store.Condition{}, []store.Tag{tag})
	if err == nil {
		d.remember(key)
		var tags []store.Tag
		tags, err = tg.Tags(ctx, key)
		if err == nil && (len(tags) != 1 || tags[0] != tag) {
			err = fmt.Errorf("the object came back tagged %v", tags)
		}
	}
	if err != nil {
		d.add(CheckRetention, StatusWarn, "objects cannot be tagged as they are written ("+err.Error()+"): finished tasks cannot expire by a lifecycle rule, only their old versions",
			permFix(err, "s3:PutObjectTagging and s3:GetObjectTagging"))
		return
	}
	a, ok := d.s.(store.Admin)
	if !ok {
		d.add(CheckRetention, StatusOK, "objects can be tagged as they are written", "")
		return
	}
	rules, err := a.Lifecycle(ctx)
	switch {
	case errors.Is(err, store.ErrNotSupported):
		d.add(CheckRetention, StatusOK, "objects can be tagged, but the provider has no lifecycle rules: finished tasks are kept until deleted by hand", "")
		return
	case err != nil:
		d.add(CheckRetention, StatusWarn, "objects can be tagged, but lifecycle rules cannot be read: "+err.Error(), permFix(err, "s3:GetLifecycleConfiguration"))
		return
	}
	for _, r := range rules {
		if r.ExpirationDays > 0 && r.Tag == tag && strings.HasPrefix("tasks/", r.Prefix) {
			d.add(CheckRetention, StatusOK, fmt.Sprintf("finished tasks expire %d days after they finish (rule %s)", r.ExpirationDays, r.ID), "")
			return
		}
	}
	d.add(CheckRetention, StatusOK, "objects can be tagged; finished tasks are kept forever (no expiry rule)",
		"to expire them: qo init --tasks-retention-days N")
}

// ErrForeignLifecycle: the bucket has lifecycle rules qo did not write, so
// FixLifecycle will not replace the configuration.
var ErrForeignLifecycle = errors.New("the bucket has lifecycle rules qo did not write")

// FixLifecycle adds RecommendedLifecycle rules for the prefixes (default
// IndexPrefixes) that no rule covers and returns the rules it added. A
// bucket's lifecycle configuration is replaced as a whole, and rules qo
// cannot fully read back might lose parts, so it refuses (with
// ErrForeignLifecycle, naming the rules to add by hand) when the bucket
// has rules whose ID does not start with "qo-".
func FixLifecycle(ctx context.Context, s store.Store, prefixes []string) ([]store.LifecycleRule, error) {
	if prefixes == nil {
		prefixes = IndexPrefixes
	}
	a, ok := s.(store.Admin)
	if !ok {
		return nil, fmt.Errorf("fix lifecycle: %w: this store has no bucket administration", store.ErrNotSupported)
	}
	rules, err := a.Lifecycle(ctx)
	if err != nil {
		return nil, fmt.Errorf("fix lifecycle: read rules: %w", err)
	}
	missing := uncovered(rules, prefixes)
	if len(missing) == 0 {
		return nil, nil
	}
	add := RecommendedLifecycle(missing)
	var foreign []string
	for _, r := range rules {
		if !strings.HasPrefix(r.ID, "qo-") {
			foreign = append(foreign, r.ID)
		}
	}
	if len(foreign) > 0 {
		var b strings.Builder
		for _, r := range add {
			fmt.Fprintf(&b, "; prefix %q: expire noncurrent versions after %d day(s), remove expired delete markers", r.Prefix, r.NoncurrentDays)
		}
		return nil, fmt.Errorf("fix lifecycle: %w (%s); add these rules to them by hand%s",
			ErrForeignLifecycle, strings.Join(foreign, ", "), b.String())
	}
	merged := append(append([]store.LifecycleRule{}, rules...), add...)
	sort.SliceStable(merged, func(i, j int) bool { return merged[i].Prefix < merged[j].Prefix })
	if err := a.SetLifecycle(ctx, merged); err != nil {
		return nil, fmt.Errorf("fix lifecycle: %w", err)
	}
	return add, nil
}

// cleanup removes every version of every probe key.
func (d *doctor) cleanup(ctx context.Context) {
	// Probes are removed even when the caller's context is done.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
	defer cancel()
	vd, permanent := versionDeleterOf(d.s)
	var failed []string
	var lastErr error
	for _, key := range d.written {
		if !permanent {
			if err := d.s.Delete(ctx, key, store.Condition{}); err != nil {
				failed, lastErr = append(failed, key), err
			}
			continue
		}
		vs, err := d.s.ListVersions(ctx, key)
		if err != nil || len(vs) == 0 {
			// Unversioned, or versions unreadable: a plain delete.
			if err := d.s.Delete(ctx, key, store.Condition{}); err != nil {
				failed, lastErr = append(failed, key), err
			}
			continue
		}
		for _, v := range vs {
			if err := vd.DeleteVersion(ctx, key, v.VersionID); err != nil {
				failed, lastErr = append(failed, key), err
				break
			}
		}
	}
	switch {
	case len(failed) > 0:
		d.add(CheckCleanup, StatusWarn,
			fmt.Sprintf("could not remove %d probe object(s) under %s: %v", len(failed), d.prefix, lastErr),
			fmt.Sprintf("delete everything under s3://%s/%s by hand", d.bucket, d.prefix))
	case permanent || !d.versioning:
		d.add(CheckCleanup, StatusOK, fmt.Sprintf("removed %d probe object(s) under %s", len(d.written), d.prefix), "")
	default:
		d.add(CheckCleanup, StatusOK,
			fmt.Sprintf("deleted %d probe object(s) under %s (their old versions remain until removed by hand or a lifecycle rule)", len(d.written), d.prefix), "")
	}
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// versionDeleterOf returns how to delete single versions of s, if it can.
func versionDeleterOf(s store.Store) (VersionDeleter, bool) {
	vd, ok := s.(VersionDeleter)
	return vd, ok
}
