// Package memstore is an in-memory store.Store for fast unit tests.
//
// It behaves like a strongly consistent S3 bucket with versioning enabled:
//
//   - every Put creates a new version with its own version id;
//   - Delete writes a delete marker (also for a key that does not exist,
//     as S3 does), Get then answers store.ErrNotFound;
//   - conditional writes follow S3: If-Match on a missing key (or on a key
//     whose latest version is a delete marker) fails with
//     store.ErrPreconditionFailed, create-only fails when an object exists;
//   - the ETag is the quoted hex MD5 of the body;
//   - List pages through keys in lexicographic order with prefix,
//     start-after, delimiter, page size and continuation token.
//
// One deliberate choice among the behaviours of real servers: a create-only
// Put over a key whose latest version is a delete marker succeeds here (as
// on AWS S3 and MinIO), while versitygw answers 412 to it. Code above the
// store must not rely on either (see store.Condition).
//
// Time comes from an injected store.Clock (WithClock), so Now and
// LastModified are deterministic in tests.
package memstore

import (
	"context"
	"crypto/md5"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/qo-queue/qo/store"
)

// Compile-time conformance.
var (
	_ store.Store   = (*Store)(nil)
	_ store.Counted = (*Store)(nil)
	_ store.Admin   = (*Store)(nil)
)

// defaultPageSize mirrors S3's maximum (and default) page size.
const defaultPageSize = 1000

// Option configures a Store.
type Option func(*Store)

// WithClock sets the clock used for Now and LastModified (default: the
// local clock).
func WithClock(c store.Clock) Option {
	return func(s *Store) { s.clock = c }
}

// WithoutVersioning makes the store behave like an unversioned bucket: a Put
// replaces the object, a Delete removes it, version ids are empty and
// ListVersions returns at most the current object.
func WithoutVersioning() Option {
	return func(s *Store) { s.versioning = false }
}

// Store is an in-memory store. The zero value is not usable; call New.
type Store struct {
	clock    store.Clock
	counters store.Counters

	mu         sync.Mutex
	versioning bool
	keys       map[string][]*version // oldest first; never empty
	sorted     []string              // the keys of keys, in order (List seeks in it)
	seq        uint64                // last version id issued
	lifecycle  []store.LifecycleRule
	cors       []string
}

// version is one version of a key (or a delete marker).
type version struct {
	id           string
	body         []byte
	etag         string
	lastModified time.Time
	deleteMarker bool
	tags         []store.Tag
}

// New returns an empty, versioned store.
func New(opts ...Option) *Store {
	s := &Store{
		clock:      store.ClockFunc(time.Now),
		versioning: true,
		keys:       map[string][]*version{},
	}
	for _, o := range opts {
		o(s)
	}
	return s
}

// Requests implements store.Counted.
func (s *Store) Requests() *store.Counters { return &s.counters }

// count records one request and passes err through.
func (s *Store) count(op store.Op, err error) error {
	s.counters.Add(op, err != nil)
	return err
}

// ETag returns the ETag the store assigns to body: the quoted hex MD5.
func ETag(body []byte) string {
	sum := md5.Sum(body)
	return `"` + hex.EncodeToString(sum[:]) + `"`
}

// sameETag compares ETags ignoring the surrounding quotes, which S3 servers
// accept either way in If-Match.
func sameETag(a, b string) bool {
	return strings.Trim(a, `"`) == strings.Trim(b, `"`)
}

// latest returns the newest version of key, or nil. Caller holds mu.
func (s *Store) latest(key string) *version {
	vs := s.keys[key]
	if len(vs) == 0 {
		return nil
	}
	return vs[len(vs)-1]
}

// current returns the live object at key (nil when missing or deleted).
// Caller holds mu.
func (s *Store) current(key string) *version {
	if v := s.latest(key); v != nil && !v.deleteMarker {
		return v
	}
	return nil
}

func (s *Store) newVersionID() string {
	if !s.versioning {
		return ""
	}
	s.seq++
	// Fixed width keeps ids sortable, which helps when reading test output.
	return "v" + fmt.Sprintf("%012d", s.seq)
}

func (s *Store) now() time.Time { return s.clock.Now().UTC() }

func validKey(op, key string) error {
	if key == "" {
		return fmt.Errorf("%s: empty key: every object needs a non-empty key", op)
	}
	return nil
}

func toObject(key string, v *version) *store.Object {
	return &store.Object{
		Key:          key,
		Body:         append([]byte(nil), v.body...),
		ETag:         v.etag,
		VersionID:    v.id,
		LastModified: v.lastModified,
	}
}

// tooLarge refuses a version over the bound of ctx (store.WithMaxBytes)
// before its body is copied.
func tooLarge(ctx context.Context, key string, v *version) error {
	if max := store.MaxBytes(ctx); max > 0 && int64(len(v.body)) > max {
		return &store.TooLargeError{Key: key, Size: int64(len(v.body)), Max: max}
	}
	return nil
}

// Get implements store.Store, within the bound of store.WithMaxBytes.
func (s *Store) Get(ctx context.Context, key string) (*store.Object, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("get %s: %w", key, err)
	}
	if err := validKey("get", key); err != nil {
		return nil, s.count(store.OpGet, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	v := s.current(key)
	if v == nil {
		return nil, s.count(store.OpGet, fmt.Errorf("get %s: %w", key, store.ErrNotFound))
	}
	if err := tooLarge(ctx, key, v); err != nil {
		return nil, s.count(store.OpGet, fmt.Errorf("get %s: %w", key, err))
	}
	return toObject(key, v), s.count(store.OpGet, nil)
}

// GetVersion implements store.Store. A delete marker's version id answers
// store.ErrNotFound (S3 answers 405 to it).
func (s *Store) GetVersion(ctx context.Context, key, versionID string) (*store.Object, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("get %s version %s: %w", key, versionID, err)
	}
	if err := validKey("get version", key); err != nil {
		return nil, s.count(store.OpGet, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, v := range s.keys[key] {
		// Objects written while versioning was off carry the "null" version.
		if v.id != versionID && !(v.id == "" && versionID == "null") {
			continue
		}
		if v.deleteMarker {
			return nil, s.count(store.OpGet, fmt.Errorf("get %s version %s: the version is a delete marker: %w", key, versionID, store.ErrNotFound))
		}
		if err := tooLarge(ctx, key, v); err != nil {
			return nil, s.count(store.OpGet, fmt.Errorf("get %s version %s: %w", key, versionID, err))
		}
		return toObject(key, v), s.count(store.OpGet, nil)
	}
	return nil, s.count(store.OpGet, fmt.Errorf("get %s version %s: %w", key, versionID, store.ErrNotFound))
}

// checkCondition reports whether cond holds against key. Caller holds mu.
func (s *Store) checkCondition(op, key string, cond store.Condition) error {
	cur := s.current(key)
	if cond.IfNoneMatch && cur != nil {
		return fmt.Errorf("%s %s: create-only write, but the key exists: %w", op, key, store.ErrPreconditionFailed)
	}
	if cond.IfMatch != "" {
		switch {
		case cur == nil:
			return fmt.Errorf("%s %s: If-Match %s, but the key does not exist: %w", op, key, cond.IfMatch, store.ErrPreconditionFailed)
		case cond.IfMatch == "*":
			// Any existing object matches.
		case !sameETag(cur.etag, cond.IfMatch):
			return fmt.Errorf("%s %s: If-Match %s, but the current ETag is %s: %w", op, key, cond.IfMatch, cur.etag, store.ErrPreconditionFailed)
		}
	}
	return nil
}

// Put implements store.Store.
func (s *Store) Put(ctx context.Context, key string, body []byte, cond store.Condition) (store.PutResult, error) {
	return s.PutTagged(ctx, key, body, cond, nil)
}

// PutTagged implements store.Tagger.
func (s *Store) PutTagged(ctx context.Context, key string, body []byte, cond store.Condition, tags []store.Tag) (store.PutResult, error) {
	if err := ctx.Err(); err != nil {
		return store.PutResult{}, fmt.Errorf("put %s: %w", key, err)
	}
	if err := validKey("put", key); err != nil {
		return store.PutResult{}, s.count(store.OpPut, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.checkCondition("put", key, cond); err != nil {
		return store.PutResult{}, s.count(store.OpPut, err)
	}
	v := &version{
		id:           s.newVersionID(),
		body:         append([]byte(nil), body...),
		etag:         ETag(body),
		lastModified: s.now(),
		tags:         slices.Clone(tags),
	}
	s.append(key, v)
	return store.PutResult{ETag: v.etag, VersionID: v.id}, s.count(store.OpPut, nil)
}

// Tags implements store.Tagger.
func (s *Store) Tags(ctx context.Context, key string) ([]store.Tag, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("get tags %s: %w", key, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	v := s.current(key)
	if v == nil {
		return nil, s.count(store.OpGet, fmt.Errorf("get tags %s: %w", key, store.ErrNotFound))
	}
	return append([]store.Tag{}, v.tags...), s.count(store.OpGet, nil)
}

// append adds v as the newest version of key (replacing everything when
// versioning is off). Caller holds mu.
func (s *Store) append(key string, v *version) {
	if _, ok := s.keys[key]; !ok && !(v.deleteMarker && !s.versioning) {
		i, _ := slices.BinarySearch(s.sorted, key)
		s.sorted = slices.Insert(s.sorted, i, key)
	}
	if !s.versioning {
		if v.deleteMarker {
			if _, ok := s.keys[key]; ok {
				i, _ := slices.BinarySearch(s.sorted, key)
				s.sorted = slices.Delete(s.sorted, i, i+1)
			}
			delete(s.keys, key)
			return
		}
		s.keys[key] = []*version{v}
		return
	}
	s.keys[key] = append(s.keys[key], v)
}

// Delete implements store.Store. An If-Match condition is honoured (some S3
// servers ignore it; callers treat conditional deletes as best-effort).
// Create-only makes no sense for a delete and is refused.
func (s *Store) Delete(ctx context.Context, key string, cond store.Condition) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("delete %s: %w", key, err)
	}
	if cond.IfNoneMatch {
		return fmt.Errorf("delete %s: a create-only condition cannot guard a delete; use If-Match or no condition: %w", key, store.ErrNotSupported)
	}
	if err := validKey("delete", key); err != nil {
		return s.count(store.OpDelete, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.checkCondition("delete", key, cond); err != nil {
		return s.count(store.OpDelete, err)
	}
	// Like S3, a versioned delete always writes a delete marker, even when
	// the key is missing or already deleted.
	s.append(key, &version{id: s.newVersionID(), deleteMarker: true, lastModified: s.now()})
	return s.count(store.OpDelete, nil)
}

// listToken is the decoded continuation token: the last key or common
// prefix a page returned.
type listToken struct {
	last     string
	isPrefix bool
}

func encodeToken(t listToken) string {
	kind := "k"
	if t.isPrefix {
		kind = "p"
	}
	return base64.RawURLEncoding.EncodeToString([]byte(kind + t.last))
}

func decodeToken(tok string) (listToken, error) {
	raw, err := base64.RawURLEncoding.DecodeString(tok)
	if err != nil || len(raw) == 0 || (raw[0] != 'k' && raw[0] != 'p') {
		return listToken{}, fmt.Errorf("list: malformed continuation token %q: pass back the NextToken of the previous page unchanged", tok)
	}
	return listToken{last: string(raw[1:]), isPrefix: raw[0] == 'p'}, nil
}

// List implements store.Store. As in S3, StartAfter is ignored when a
// continuation token is given, and each common prefix counts towards the
// page size.
func (s *Store) List(ctx context.Context, p store.ListParams) (store.ListPage, error) {
	if err := ctx.Err(); err != nil {
		return store.ListPage{}, fmt.Errorf("list %s: %w", p.Prefix, err)
	}
	limit := p.Limit
	if limit <= 0 || limit > defaultPageSize {
		limit = defaultPageSize
	}
	after := listToken{last: p.StartAfter}
	if p.Token != "" {
		t, err := decodeToken(p.Token)
		if err != nil {
			return store.ListPage{}, s.count(store.OpList, err)
		}
		after = t
	}

	s.mu.Lock()
	defer s.mu.Unlock()
	// Seek to the first key after both the prefix and the position, and
	// stop at the end of the prefix: a page costs what it returns.
	from := max(p.Prefix, after.last)
	i, _ := slices.BinarySearch(s.sorted, from)
	var keys []string
	for ; i < len(s.sorted) && strings.HasPrefix(s.sorted[i], p.Prefix); i++ {
		if k := s.sorted[i]; k > after.last && s.current(k) != nil {
			keys = append(keys, k)
		}
		if p.Delimiter == "" && len(keys) > limit {
			break // enough for a page and to know another follows
		}
	}

	var page store.ListPage
	n := 0
	var last listToken
	for _, k := range keys {
		if after.isPrefix && strings.HasPrefix(k, after.last) {
			continue // rest of a common prefix the previous page returned
		}
		cp := ""
		if p.Delimiter != "" {
			if i := strings.Index(k[len(p.Prefix):], p.Delimiter); i >= 0 {
				cp = k[:len(p.Prefix)+i+len(p.Delimiter)]
			}
		}
		if cp != "" && last.isPrefix && last.last == cp {
			continue // same common prefix as the previous entry
		}
		if n == limit {
			page.NextToken = encodeToken(last)
			break
		}
		n++
		if cp != "" {
			page.CommonPrefixes = append(page.CommonPrefixes, cp)
			last = listToken{last: cp, isPrefix: true}
			continue
		}
		v := s.current(k)
		page.Objects = append(page.Objects, store.ObjectInfo{
			Key:          k,
			ETag:         v.etag,
			Size:         int64(len(v.body)),
			LastModified: v.lastModified,
		})
		last = listToken{last: k}
	}
	return page, s.count(store.OpList, nil)
}

// ListVersions implements store.Store: every version and delete marker of
// exactly key, newest first. A key never written has no versions (no error).
func (s *Store) ListVersions(ctx context.Context, key string) ([]store.Version, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("list versions %s: %w", key, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	vs := s.keys[key]
	out := make([]store.Version, 0, len(vs))
	for i := len(vs) - 1; i >= 0; i-- {
		v := vs[i]
		id := v.id
		if id == "" {
			id = "null" // written while versioning was off, as S3 reports it
		}
		out = append(out, store.Version{
			Key:          key,
			VersionID:    id,
			ETag:         v.etag,
			LastModified: v.lastModified,
			IsLatest:     i == len(vs)-1,
			DeleteMarker: v.deleteMarker,
			Size:         int64(len(v.body)),
		})
	}
	return out, s.count(store.OpListVersions, nil)
}

// Now implements store.Store: the injected clock. It sends no request and
// is not counted.
func (s *Store) Now(ctx context.Context) (time.Time, error) {
	if err := ctx.Err(); err != nil {
		return time.Time{}, fmt.Errorf("now: %w", err)
	}
	return s.now(), nil
}

// CreateBucket implements store.Admin (the bucket always exists).
func (s *Store) CreateBucket(ctx context.Context) error {
	return s.count(store.OpOther, ctx.Err())
}

// Versioning implements store.Admin.
func (s *Store) Versioning(ctx context.Context) (bool, error) {
	if err := ctx.Err(); err != nil {
		return false, s.count(store.OpOther, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.versioning, s.count(store.OpOther, nil)
}

// EnableVersioning implements store.Admin. Objects written before keep
// their empty version id, as in S3 (where they become the "null" version).
func (s *Store) EnableVersioning(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return s.count(store.OpOther, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.versioning = true
	return s.count(store.OpOther, nil)
}

// SetLifecycle implements store.Admin. Rules are stored, not enforced.
func (s *Store) SetLifecycle(ctx context.Context, rules []store.LifecycleRule) error {
	if err := ctx.Err(); err != nil {
		return s.count(store.OpOther, err)
	}
	for i, r := range rules {
		if err := store.CheckLifecycleRule(r); err != nil {
			return s.count(store.OpOther, fmt.Errorf("set lifecycle: rule %d: %w", i, err))
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(rules) == 0 {
		s.lifecycle = nil
	} else {
		s.lifecycle = append([]store.LifecycleRule(nil), rules...)
	}
	return s.count(store.OpOther, nil)
}

// Lifecycle implements store.Admin.
func (s *Store) Lifecycle(ctx context.Context) ([]store.LifecycleRule, error) {
	if err := ctx.Err(); err != nil {
		return nil, s.count(store.OpOther, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.lifecycle) == 0 {
		return nil, s.count(store.OpOther, nil)
	}
	return append([]store.LifecycleRule(nil), s.lifecycle...), s.count(store.OpOther, nil)
}

// SetCORS implements store.Admin (recorded only; there is no HTTP here).
func (s *Store) SetCORS(ctx context.Context, origins []string) error {
	if err := ctx.Err(); err != nil {
		return s.count(store.OpOther, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.cors = append([]string(nil), origins...)
	return s.count(store.OpOther, nil)
}

// String describes the store for logs and test names.
func (s *Store) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return "memstore(" + strconv.Itoa(len(s.keys)) + " keys)"
}
