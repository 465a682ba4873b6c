package queue

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/qo-queue/qo/store"
)

// NamedLease is a coordination lease held in one small object: shard
// ownership ("shard-leases/{shard}.json") or the monitor leadership
// ("monitor/leader.json"). ETag is the If-Match of the holder's next write.
type NamedLease struct {
	Name       string    // the object key
	Holder     string    // "" when released
	ExpiresAt  time.Time // authoritative (queue clock) expiry
	AcquiredAt time.Time // when the current holder took it
	ETag       string
}

// leaseRecord is the on-bucket form of a named lease.
type leaseRecord struct {
	Format     int       `json:"format"`
	Name       string    `json:"name"`
	Holder     string    `json:"holder"`
	ExpiresAt  time.Time `json:"expires_at"`
	AcquiredAt time.Time `json:"acquired_at"`
	UpdatedAt  time.Time `json:"updated_at"`
	RequestID  string    `json:"request_id"`
}

func validateLeaseKey(key string) error {
	if !(strings.HasPrefix(key, ShardLeasePrefix) || strings.HasPrefix(key, MonitorPrefix)) ||
		!strings.HasSuffix(key, ".json") || strings.Contains(key, "..") || strings.Contains(key, "//") {
		return invalidInput("lease key %q must be %s{name}.json or %s{name}.json", key, ShardLeasePrefix, MonitorPrefix)
	}
	return nil
}

func decodeLease(key string, obj *store.Object) (*NamedLease, string, error) {
	var r leaseRecord
	if err := json.Unmarshal(obj.Body, &r); err != nil {
		return nil, "", &MalformedError{Key: key, Err: err}
	}
	if r.Format != FormatVersion {
		return nil, "", &MalformedError{Key: key, Err: fmt.Errorf("unknown format version %d (this qo reads format %d)", r.Format, FormatVersion)}
	}
	if r.Name != key {
		return nil, "", &MalformedError{Key: key, Err: fmt.Errorf("object says name %q", r.Name)}
	}
	return &NamedLease{Name: key, Holder: r.Holder, ExpiresAt: r.ExpiresAt, AcquiredAt: r.AcquiredAt, ETag: obj.ETag}, r.RequestID, nil
}

// ReadLease returns the current state of a named lease (possibly expired,
// or released with an empty Holder). ErrNotFound when never written.
func (q *Queue) ReadLease(ctx context.Context, key string) (*NamedLease, error) {
	if err := validateLeaseKey(key); err != nil {
		return nil, fmt.Errorf("read lease: %w", err)
	}
	l, _, err := q.readLease(ctx, key)
	return l, err
}

func (q *Queue) readLease(ctx context.Context, key string) (*NamedLease, string, error) {
	obj, err := q.getLimited(ctx, key, maxSmallObject)
	if errors.Is(err, store.ErrNotFound) {
		return nil, "", fmt.Errorf("read lease %s: %w (%w)", key, ErrNotFound, err)
	}
	if err != nil {
		return nil, "", fmt.Errorf("read lease %s: %w", key, err)
	}
	l, reqID, err := decodeLease(key, obj)
	if err != nil {
		return nil, "", fmt.Errorf("read lease %s: %w", key, err)
	}
	return l, reqID, nil
}

// writeLease PUTs a lease record under cond. A failure whose outcome is
// unknown is settled by re-reading: if the object carries this write's
// request_id it landed. Returns the ETag, or an error wrapping
// store.ErrPreconditionFailed when the condition did not hold.
func (q *Queue) writeLease(ctx context.Context, l *NamedLease, cond store.Condition, now time.Time) (string, error) {
	rec := leaseRecord{Format: FormatVersion, Name: l.Name, Holder: l.Holder, ExpiresAt: l.ExpiresAt,
		AcquiredAt: l.AcquiredAt, UpdatedAt: now, RequestID: uuid.NewString()}
	body, err := json.Marshal(rec)
	if err != nil {
		return "", err
	}
	res, perr := q.s.Put(ctx, l.Name, body, cond)
	if perr == nil {
		return res.ETag, nil
	}
	if isDefinite(perr) {
		return "", perr
	}
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	obj, gerr := q.getLimited(rctx, l.Name, maxSmallObject)
	if gerr == nil {
		if _, reqID, derr := decodeLease(l.Name, obj); derr == nil && reqID == rec.RequestID {
			return obj.ETag, nil
		}
	}
	return "", perr
}

// AcquireLease takes the named lease for holder for ttl: it reads the lease
// (so a standby that finds it held pays one GET), then writes it with a
// create-only PUT when it never existed, else an If-Match takeover when it
// is free (released, expired, unreadable) or already held by this holder.
// ErrConflict when another holder's lease is still running or a racer won.
func (q *Queue) AcquireLease(ctx context.Context, key, holder string, ttl time.Duration) (*NamedLease, error) {
	if err := validateLeaseKey(key); err != nil {
		return nil, fmt.Errorf("acquire lease: %w", err)
	}
	if err := ValidateWorkerID(holder); err != nil {
		return nil, fmt.Errorf("acquire lease %s: %w", key, err)
	}
	if ttl <= 0 {
		return nil, fmt.Errorf("acquire lease %s: %w", key, invalidInput("ttl %s must be positive", ttl))
	}
	now := q.Now()
	l := &NamedLease{Name: key, Holder: holder, ExpiresAt: now.Add(ttl), AcquiredAt: now}
	// Read first: a standby that finds the lease held pays one GET.
	cur, _, err := q.readLease(ctx, key)
	var curETag string
	var m *MalformedError
	switch {
	case err == nil:
		curETag = cur.ETag
		if cur.Holder != "" && cur.Holder != holder && cur.ExpiresAt.After(now) {
			return nil, fmt.Errorf("acquire lease %s: %w (held by %s until %s)", key, ErrConflict, cur.Holder, cur.ExpiresAt.Format(time.RFC3339))
		}
		if cur.Holder == holder && cur.ExpiresAt.After(now) {
			l.AcquiredAt = cur.AcquiredAt
		}
	case errors.As(err, &m):
		obj, gerr := q.getLimited(ctx, key, maxSmallObject)
		if gerr != nil {
			return nil, fmt.Errorf("acquire lease %s: %w", key, gerr)
		}
		q.log.Warn("taking over a malformed lease object", "key", key, "err", m.Err)
		curETag = obj.ETag
	case errors.Is(err, ErrNotFound):
		etag, err := q.writeLease(ctx, l, store.CreateOnly, now)
		switch {
		case err == nil:
			l.ETag = etag
			return l, nil
		case errors.Is(err, store.ErrPreconditionFailed):
			return nil, fmt.Errorf("acquire lease %s: %w (another holder created it first, or a delete marker this server treats as an object: an operator may remove it)", key, ErrConflict)
		default:
			return nil, fmt.Errorf("acquire lease %s: %w", key, err)
		}
	default:
		return nil, fmt.Errorf("acquire lease %s: %w", key, err)
	}
	etag, err := q.writeLease(ctx, l, store.IfMatch(curETag), now)
	if errors.Is(err, store.ErrPreconditionFailed) {
		return nil, fmt.Errorf("acquire lease %s: %w (another holder took it first)", key, ErrConflict)
	}
	if err != nil {
		return nil, fmt.Errorf("acquire lease %s: %w", key, err)
	}
	l.ETag = etag
	return l, nil
}

// RenewLease extends a held lease to now + ttl and updates l. ErrLeaseLost
// when someone else took it over (the If-Match failed).
func (q *Queue) RenewLease(ctx context.Context, l *NamedLease, ttl time.Duration) error {
	if ttl <= 0 {
		return fmt.Errorf("renew lease %s: %w", l.Name, invalidInput("ttl %s must be positive", ttl))
	}
	now := q.Now()
	next := *l
	next.ExpiresAt = now.Add(ttl)
	etag, err := q.writeLease(ctx, &next, store.IfMatch(l.ETag), now)
	if errors.Is(err, store.ErrPreconditionFailed) {
		return fmt.Errorf("renew lease %s: %w", l.Name, ErrLeaseLost)
	}
	if err != nil {
		return fmt.Errorf("renew lease %s: %w", l.Name, err)
	}
	next.ETag = etag
	*l = next
	return nil
}

// ReleaseLease gives a held lease up so another holder can take it at once.
// It writes a released record (If-Match) instead of deleting, because a
// create-only PUT over a delete marker is refused by some servers. A lease
// already lost is not an error.
func (q *Queue) ReleaseLease(ctx context.Context, l *NamedLease) error {
	now := q.Now()
	next := NamedLease{Name: l.Name, ExpiresAt: now, AcquiredAt: l.AcquiredAt}
	etag, err := q.writeLease(ctx, &next, store.IfMatch(l.ETag), now)
	if errors.Is(err, store.ErrPreconditionFailed) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("release lease %s: %w", l.Name, err)
	}
	l.Holder, l.ExpiresAt, l.ETag = "", now, etag
	return nil
}

// ShardLeaseWrites lists shard-leases/ and returns, per shard, when its
// lease object was last written by the store's clock (an acquisition, a
// renewal or a release). One LIST per 1,000 shards and no GET, whatever
// the number of workers; keys that are not shard leases of this queue are
// skipped. A holder renews its lease every renew interval, so a lease
// written longer ago than that (with a margin) is released, expired, or
// about to expire: worth one AcquireLease, which reads it and decides.
func (q *Queue) ShardLeaseWrites(ctx context.Context) (map[string]time.Time, error) {
	out := map[string]time.Time{}
	token := ""
	for {
		page, err := q.s.List(ctx, store.ListParams{Prefix: ShardLeasePrefix, Token: token})
		if err != nil {
			return nil, fmt.Errorf("list shard leases: %w", err)
		}
		for _, o := range page.Objects {
			rest, _ := strings.CutPrefix(o.Key, ShardLeasePrefix)
			if shard, ok := strings.CutSuffix(rest, ".json"); ok && q.ValidShard(shard) {
				out[shard] = o.LastModified
			}
		}
		if page.NextToken == "" {
			return out, nil
		}
		token = page.NextToken
	}
}
