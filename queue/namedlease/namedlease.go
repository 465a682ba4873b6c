package namedlease

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/qo-queue/qo/queue"
	"github.com/qo-queue/qo/store"
)

// Queue is what named leases need of a queue: *queue.Queue is one.
type Queue interface {
	Store() store.Store
	// Now is the queue's clock (the store's time).
	Now() time.Time
	Logger() *slog.Logger
	// ValidShard reports whether name is one of the queue's shards.
	ValidShard(name string) bool
}

// maxObject bounds a lease object: a lease is a few hundred bytes.
const maxObject = 1 << 20

// Read returns the current state of a named lease (possibly expired, or
// released with an empty Holder). queue.ErrNotFound when never written.
func Read(ctx context.Context, q Queue, key string) (*queue.NamedLease, error) {
	if err := queue.ValidateLeaseKey(key); err != nil {
		return nil, fmt.Errorf("read lease: %w", err)
	}
	l, _, err := read(ctx, q, key)
	return l, err
}

func read(ctx context.Context, q Queue, key string) (*queue.NamedLease, string, error) {
	obj, err := queue.GetLimited(ctx, q.Store(), key, maxObject)
	if errors.Is(err, store.ErrNotFound) {
		return nil, "", fmt.Errorf("read lease %s: %w (%w)", key, queue.ErrNotFound, err)
	}
	if err != nil {
		return nil, "", fmt.Errorf("read lease %s: %w", key, err)
	}
	l, reqID, err := queue.DecodeNamedLease(key, obj)
	if err != nil {
		return nil, "", fmt.Errorf("read lease %s: %w", key, err)
	}
	return l, reqID, nil
}

// write PUTs a lease record under cond. A failure whose outcome is
// unknown is settled by re-reading: if the object carries this write's
// request_id it landed. Returns the ETag, or an error wrapping
// store.ErrPreconditionFailed when the condition did not hold.
func write(ctx context.Context, q Queue, l *queue.NamedLease, cond store.Condition, now time.Time) (string, error) {
	reqID := uuid.NewString()
	body, err := queue.EncodeNamedLease(l, now, reqID)
	if err != nil {
		return "", err
	}
	res, perr := q.Store().Put(ctx, l.Name, body, cond)
	if perr == nil {
		return res.ETag, nil
	}
	if queue.IsDefinite(perr) {
		return "", perr
	}
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	obj, gerr := queue.GetLimited(rctx, q.Store(), l.Name, maxObject)
	if gerr == nil {
		if _, got, derr := queue.DecodeNamedLease(l.Name, obj); derr == nil && got == reqID {
			return obj.ETag, nil
		}
	}
	return "", perr
}

// Acquire takes the named lease for holder for ttl: it reads the lease
// (so a standby that finds it held pays one GET), then writes it with a
// create-only PUT when it never existed, else an If-Match takeover when it
// is free (released, expired, unreadable) or already held by this holder.
// queue.ErrConflict when another holder's lease is still running or a
// racer won.
func Acquire(ctx context.Context, q Queue, key, holder string, ttl time.Duration) (*queue.NamedLease, error) {
	if err := queue.ValidateLeaseKey(key); err != nil {
		return nil, fmt.Errorf("acquire lease: %w", err)
	}
	if err := queue.ValidateWorkerID(holder); err != nil {
		return nil, fmt.Errorf("acquire lease %s: %w", key, err)
	}
	if ttl <= 0 {
		return nil, fmt.Errorf("acquire lease %s: %w: ttl %s must be positive", key, queue.ErrInvalidInput, ttl)
	}
	now := q.Now()
	l := &queue.NamedLease{Name: key, Holder: holder, ExpiresAt: now.Add(ttl), AcquiredAt: now}
	// Read first: a standby that finds the lease held pays one GET.
	cur, _, err := read(ctx, q, key)
	var curETag string
	var m *queue.MalformedError
	switch {
	case err == nil:
		curETag = cur.ETag
		if cur.Holder != "" && cur.Holder != holder && cur.ExpiresAt.After(now) {
			return nil, fmt.Errorf("acquire lease %s: %w (held by %s until %s)", key, queue.ErrConflict, cur.Holder, cur.ExpiresAt.Format(time.RFC3339))
		}
		if cur.Holder == holder && cur.ExpiresAt.After(now) {
			l.AcquiredAt = cur.AcquiredAt
		}
	case errors.As(err, &m):
		obj, gerr := queue.GetLimited(ctx, q.Store(), key, maxObject)
		if gerr != nil {
			return nil, fmt.Errorf("acquire lease %s: %w", key, gerr)
		}
		q.Logger().Warn("taking over a malformed lease object", "key", key, "err", m.Err)
		curETag = obj.ETag
	case errors.Is(err, queue.ErrNotFound):
		etag, err := write(ctx, q, l, store.CreateOnly, now)
		switch {
		case err == nil:
			l.ETag = etag
			return l, nil
		case errors.Is(err, store.ErrPreconditionFailed):
			return nil, fmt.Errorf("acquire lease %s: %w (another holder created it first, or a delete marker this server treats as an object: an operator may remove it)", key, queue.ErrConflict)
		default:
			return nil, fmt.Errorf("acquire lease %s: %w", key, err)
		}
	default:
		return nil, fmt.Errorf("acquire lease %s: %w", key, err)
	}
	etag, err := write(ctx, q, l, store.IfMatch(curETag), now)
	if errors.Is(err, store.ErrPreconditionFailed) {
		return nil, fmt.Errorf("acquire lease %s: %w (another holder took it first)", key, queue.ErrConflict)
	}
	if err != nil {
		return nil, fmt.Errorf("acquire lease %s: %w", key, err)
	}
	l.ETag = etag
	return l, nil
}

// Renew extends a held lease to now + ttl and updates l.
// queue.ErrLeaseLost when someone else took it over (the If-Match failed).
func Renew(ctx context.Context, q Queue, l *queue.NamedLease, ttl time.Duration) error {
	if ttl <= 0 {
		return fmt.Errorf("renew lease %s: %w: ttl %s must be positive", l.Name, queue.ErrInvalidInput, ttl)
	}
	now := q.Now()
	next := *l
	next.ExpiresAt = now.Add(ttl)
	etag, err := write(ctx, q, &next, store.IfMatch(l.ETag), now)
	if errors.Is(err, store.ErrPreconditionFailed) {
		return fmt.Errorf("renew lease %s: %w", l.Name, queue.ErrLeaseLost)
	}
	if err != nil {
		return fmt.Errorf("renew lease %s: %w", l.Name, err)
	}
	next.ETag = etag
	*l = next
	return nil
}

// Release gives a held lease up so another holder can take it at once.
// It writes a released record (If-Match) instead of deleting, because a
// create-only PUT over a delete marker is refused by some servers. A lease
// already lost is not an error.
func Release(ctx context.Context, q Queue, l *queue.NamedLease) error {
	now := q.Now()
	next := queue.NamedLease{Name: l.Name, ExpiresAt: now, AcquiredAt: l.AcquiredAt}
	etag, err := write(ctx, q, &next, store.IfMatch(l.ETag), now)
	if errors.Is(err, store.ErrPreconditionFailed) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("release lease %s: %w", l.Name, err)
	}
	l.Holder, l.ExpiresAt, l.ETag = "", now, etag
	return nil
}

// ShardWrites lists shard-leases/ and returns, per shard, when its lease
// object was last written by the store's clock (an acquisition, a renewal
// or a release). One LIST per 1,000 shards and no GET, whatever the number
// of workers; keys that are not shard leases of this queue are skipped. A
// holder renews its lease every renew interval, so a lease written longer
// ago than that (with a margin) is released, expired, or about to expire:
// worth one Acquire, which reads it and decides.
func ShardWrites(ctx context.Context, q Queue) (map[string]time.Time, error) {
	out := map[string]time.Time{}
	token := ""
	for {
		page, err := q.Store().List(ctx, store.ListParams{Prefix: queue.ShardLeasePrefix, Token: token})
		if err != nil {
			return nil, fmt.Errorf("list shard leases: %w", err)
		}
		for _, o := range page.Objects {
			rest, _ := strings.CutPrefix(o.Key, queue.ShardLeasePrefix)
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
