package control

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/qo-queue/qo/queue"
	"github.com/qo-queue/qo/store"
)

// Queue is what the control switches need of a queue: *queue.Queue is
// one.
type Queue interface {
	Store() store.Store
	// Now is the queue's clock (the store's time).
	Now() time.Time
}

// maxObject bounds control.json: it holds a few entries per task type.
const maxObject = 1 << 20

// maxRebases bounds re-applying a change over concurrent writes.
const maxRebases = 8

func invalidInput(format string, args ...any) error {
	return fmt.Errorf("%w: %s", queue.ErrInvalidInput, fmt.Sprintf(format, args...))
}

// SetKeyLimit sets the per-key concurrency cap of typ to n: at most n
// handlers of the type run at once for each task key, across every
// worker (see queue's doc.go, "Task keys"). Setting the cap it has changes
// nothing.
func SetKeyLimit(ctx context.Context, q Queue, typ string, n int) (queue.Control, error) {
	return setConcurrency(ctx, q, "set per-key limit", keyLimits, typ, n)
}

// SetKeyRate sets the per-key rate limit of typ: at most starts per per
// (time.Second or time.Minute) for each task key across every worker,
// burst more in any window (burst 0: queue.DefaultBurst). It keeps the type's
// per-key cap (see queue's doc.go, "Task keys").
func SetKeyRate(ctx context.Context, q Queue, typ string, starts int, per time.Duration, burst int) (queue.Control, error) {
	return setRate(ctx, q, "set per-key rate", keyLimits, typ, starts, per, burst)
}

// SetLimit sets the fleet-wide concurrency cap of typ to n: at most n
// handlers of the type run at once across every worker (see queue's doc.go,
// "Fleet-wide concurrency caps"). Setting the cap it has changes nothing.
func SetLimit(ctx context.Context, q Queue, typ string, n int) (queue.Control, error) {
	return setConcurrency(ctx, q, "set limit", fleetLimits, typ, n)
}

// SetRate sets the fleet-wide rate limit of typ: at most starts per per
// (time.Second or time.Minute) across every worker, burst more in any
// window (burst 0: queue.DefaultBurst). It keeps the type's concurrency cap
// (see queue's doc.go, "Fleet-wide rate limits").
func SetRate(ctx context.Context, q Queue, typ string, starts int, per time.Duration, burst int) (queue.Control, error) {
	return setRate(ctx, q, "set rate", fleetLimits, typ, starts, per, burst)
}

// limitsIn picks the limits a setting writes: the fleet-wide ones or the
// per-key ones.
type limitsIn func(c *queue.Control) *map[string]queue.Limit

func fleetLimits(c *queue.Control) *map[string]queue.Limit { return &c.Limits }
func keyLimits(c *queue.Control) *map[string]queue.Limit   { return &c.KeyLimits }

// setLimit changes the limit of typ in the map in picks (had: it has
// one), when change says it differs (see updateControl).
func setLimit(ctx context.Context, q Queue, op string, in limitsIn, typ string, change func(l *queue.Limit, had bool) bool) (queue.Control, error) {
	if p := queue.HoldPrefixed(typ); p != "" {
		return queue.Control{}, invalidInput("%s: task type %q begins with %q, which names another kind of limit in the workers' shares of the limits: a limit on it would be mistaken for one on type %q. Give the type a name that does not begin with %q", op, typ, p, strings.TrimPrefix(typ, p), p)
	}
	return update(ctx, q, op, func(c *queue.Control, now time.Time) bool {
		m := in(c)
		l, had := (*m)[typ]
		if !change(&l, had) {
			return false
		}
		if *m == nil {
			*m = map[string]queue.Limit{}
		}
		l.SetAt = now
		(*m)[typ] = l
		return true
	})
}

func setConcurrency(ctx context.Context, q Queue, op string, in limitsIn, typ string, n int) (queue.Control, error) {
	if err := queue.ValidateType(typ); err != nil {
		return queue.Control{}, fmt.Errorf("%s: %w", op, err)
	}
	if n < 1 || n > queue.MaxConcurrencyCap {
		return queue.Control{}, invalidInput("%s: concurrency %d is not between 1 and %d (to remove the cap, clear it)", op, n, queue.MaxConcurrencyCap)
	}
	return setLimit(ctx, q, op, in, typ, func(l *queue.Limit, had bool) bool {
		if had && l.Concurrency == n {
			return false
		}
		l.Concurrency = n
		return true
	})
}

func setRate(ctx context.Context, q Queue, op string, in limitsIn, typ string, starts int, per time.Duration, burst int) (queue.Control, error) {
	if err := queue.ValidateType(typ); err != nil {
		return queue.Control{}, fmt.Errorf("%s: %w", op, err)
	}
	if per != time.Second && per != time.Minute {
		return queue.Control{}, invalidInput("%s: per %s is neither a second nor a minute", op, per)
	}
	if starts < 1 || starts*int(time.Second)/int(per) > queue.MaxRate || starts > queue.MaxRate*60 {
		return queue.Control{}, invalidInput("%s: %d per %s is not between 1 and %d per second (to remove the rate, clear the limit)", op, starts, per, queue.MaxRate)
	}
	if burst < 0 || burst > queue.MaxRate {
		return queue.Control{}, invalidInput("%s: burst %d is not between 1 and %d (0: the default)", op, burst, queue.MaxRate)
	}
	unit := "m"
	if per == time.Second {
		unit = "s"
	}
	return setLimit(ctx, q, op, in, typ, func(l *queue.Limit, had bool) bool {
		if had && l.Rate == starts && l.Per == unit && l.Burst == burst {
			return false
		}
		l.Rate, l.Per, l.Burst = starts, unit, burst
		return true
	})
}

// ClearLimit removes the fleet-wide limits of typ, per-key ones too. Clearing none changes
// nothing.
func ClearLimit(ctx context.Context, q Queue, typ string) (queue.Control, error) {
	if err := queue.ValidateType(typ); err != nil {
		return queue.Control{}, fmt.Errorf("clear limit: %w", err)
	}
	return update(ctx, q, "clear limit", func(c *queue.Control, now time.Time) bool {
		_, ok := c.Limits[typ]
		_, keyed := c.KeyLimits[typ]
		if !ok && !keyed {
			return false
		}
		delete(c.Limits, typ)
		delete(c.KeyLimits, typ)
		return true
	})
}

// Read reads control.json. A queue that was never paused has none: the
// zero queue.Control (nothing paused) is returned.
func Read(ctx context.Context, q Queue) (queue.Control, error) {
	c, _, err := read(ctx, q)
	return c, err
}

func read(ctx context.Context, q Queue) (queue.Control, string, error) {
	obj, err := queue.GetLimited(ctx, q.Store(), queue.ControlKey, maxObject)
	if errors.Is(err, store.ErrNotFound) {
		return queue.Control{Format: queue.FormatVersion}, "", nil
	}
	if err != nil {
		return queue.Control{}, "", fmt.Errorf("read %s: %w", queue.ControlKey, err)
	}
	c, err := queue.DecodeControl(obj.Body)
	if err != nil {
		return queue.Control{}, "", err
	}
	return c, obj.ETag, nil
}

// Pause stops workers from claiming tasks of type typ, or of every type when
// typ is "". Running tasks finish; submits are still accepted and wait.
// Pausing what is paused already changes nothing.
func Pause(ctx context.Context, q Queue, typ, reason string) (queue.Control, error) {
	if typ != "" {
		if err := queue.ValidateType(typ); err != nil {
			return queue.Control{}, fmt.Errorf("pause: %w", err)
		}
	}
	return update(ctx, q, "pause", func(c *queue.Control, now time.Time) bool {
		if typ == "" {
			if c.Paused {
				return false
			}
			c.Paused, c.PausedAt, c.Reason = true, &now, reason
			return true
		}
		if _, ok := c.Types[typ]; ok {
			return false
		}
		if c.Types == nil {
			c.Types = map[string]queue.Pause{}
		}
		c.Types[typ] = queue.Pause{At: now, Reason: reason}
		return true
	})
}

// Resume lets workers claim tasks of type typ again, or lifts the
// whole-queue pause when typ is "" (types paused one by one stay paused).
func Resume(ctx context.Context, q Queue, typ string) (queue.Control, error) {
	if typ != "" {
		if err := queue.ValidateType(typ); err != nil {
			return queue.Control{}, fmt.Errorf("resume: %w", err)
		}
	}
	return update(ctx, q, "resume", func(c *queue.Control, now time.Time) bool {
		if typ == "" {
			if !c.Paused {
				return false
			}
			c.Paused, c.PausedAt, c.Reason = false, nil, ""
			return true
		}
		if _, ok := c.Types[typ]; !ok {
			return false
		}
		delete(c.Types, typ)
		return true
	})
}

// updateControl applies change to control.json with compare-and-swap,
// re-reading and re-applying when another writer got there first.
func update(ctx context.Context, q Queue, op string, change func(c *queue.Control, now time.Time) bool) (queue.Control, error) {
	var lastErr error
	for range maxRebases {
		c, etag, err := read(ctx, q)
		if err != nil {
			return queue.Control{}, fmt.Errorf("%s: %w", op, err)
		}
		now := q.Now()
		if !change(&c, now) {
			return c, nil
		}
		c.Format, c.Rev, c.UpdatedAt, c.Actor = queue.FormatVersion, c.Rev+1, now, queue.ActorFrom(ctx)
		body, err := json.Marshal(c)
		if err != nil {
			return queue.Control{}, fmt.Errorf("%s: %w", op, err)
		}
		cond := store.CreateOnly
		if etag != "" {
			cond = store.IfMatch(etag)
		}
		_, err = q.Store().Put(ctx, queue.ControlKey, body, cond)
		if err == nil {
			return c, nil
		}
		// A 412 means another writer got there first; any other error may
		// hide a write that landed. Either way the next round re-reads, and
		// a change already applied is then a no-op.
		if ctx.Err() != nil || queue.IsDefinite(err) {
			return queue.Control{}, fmt.Errorf("%s: write %s: %w", op, queue.ControlKey, err)
		}
		lastErr = err
	}
	if !errors.Is(lastErr, store.ErrPreconditionFailed) {
		return queue.Control{}, fmt.Errorf("%s: write %s: %w", op, queue.ControlKey, lastErr)
	}
	return queue.Control{}, fmt.Errorf("%s: %w (%s kept changing; try again)", op, queue.ErrConflict, queue.ControlKey)
}
