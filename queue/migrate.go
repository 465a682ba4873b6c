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

// MigrateResult reports what Migrate did.
type MigrateResult struct {
	From, To int // layout before and after
	// AlreadyCurrent: the bucket was already at LayoutVersion; nothing done.
	AlreadyCurrent bool
	ReadyMoved     int         `json:"ready_moved"`  // layout-1 ready entries rewritten
	LeasesMoved    int         `json:"leases_moved"` // layout-1 lease entries rewritten
	OldRemoved     int         `json:"old_removed"`  // layout-1 entries deleted (moved or stale)
	Repair         SweepResult `json:"repair"`       // the pass over every task object
	Duration       time.Duration
}

// Migrate converts a bucket of an older key layout to LayoutVersion in
// place (see doc.go, "Key layout"): every layout-1 ready and lease entry is
// rewritten under its layout-2 key (reading its task, so only entries of
// tasks still in that state are kept), then a Repair pass over every task
// object writes whatever entry is missing, which builds the dead-letter
// index, and only then queue.json is rewritten (If-Match) with the new
// format. Task objects, their versions and payloads are not touched. It is
// idempotent: a crash part-way leaves a layout-1 queue with some layout-2
// entries, and running it again finishes the job. Workers of the old
// layout must be stopped first (they would keep writing layout-1 entries);
// once queue.json says format 2 they refuse to start. The cost is one pass
// over the bucket's history (1 LIST per 1,000 tasks, 1 GET per task),
// paid once. progress, when set, is told what happens.
func Migrate(ctx context.Context, s store.Store, opts Options, progress func(msg string)) (MigrateResult, error) {
	start := time.Now()
	res := MigrateResult{To: LayoutVersion}
	say := func(format string, a ...any) {
		if progress != nil {
			progress(fmt.Sprintf(format, a...))
		}
	}
	obj, err := s.Get(ctx, ConfigKey)
	if errors.Is(err, store.ErrNotFound) {
		return res, fmt.Errorf("migrate: %w", ErrNotInitialized)
	}
	if err != nil {
		return res, fmt.Errorf("migrate: read %s: %w", ConfigKey, err)
	}
	cfg, err := decodeConfig(obj.Body)
	if err != nil {
		return res, fmt.Errorf("migrate: %w", err)
	}
	res.From = cfg.Format
	if cfg.Format >= LayoutVersion {
		res.AlreadyCurrent = true
		return res, nil
	}
	q := newQueue(s, cfg, opts)

	say("moving ready entries to layout %d", LayoutVersion)
	if err := q.migrateIndex(ctx, ReadyPrefix, &res); err != nil {
		return res, err
	}
	say("moving lease entries to layout %d", LayoutVersion)
	if err := q.migrateIndex(ctx, LeasesPrefix, &res); err != nil {
		return res, err
	}
	for _, shard := range q.shards {
		say("checking the tasks of shard %s (builds the dead-letter index)", shard)
		cursor := ""
		for {
			r, next, err := q.Repair(ctx, shard, 1000, cursor)
			if err != nil {
				return res, fmt.Errorf("migrate: %w", err)
			}
			res.Repair.Add(r)
			if next == "" {
				break
			}
			cursor = next
		}
	}
	if res.Repair.Errors > 0 {
		return res, fmt.Errorf("migrate: %d reads or writes failed while checking the tasks; nothing was switched: run qo migrate again", res.Repair.Errors)
	}
	cfg.Format = LayoutVersion
	body, err := json.Marshal(cfg)
	if err != nil {
		return res, err
	}
	if _, err := s.Put(ctx, ConfigKey, body, store.IfMatch(obj.ETag)); err != nil {
		return res, fmt.Errorf("migrate: switch %s to format %d: %w (run qo migrate again)", ConfigKey, LayoutVersion, err)
	}
	res.Duration = time.Since(start)
	say("queue.json now says format %d", LayoutVersion)
	return res, nil
}

// migrateIndex rewrites every layout-1 entry under prefix: the key of a
// task still in the entry's state is written in layout 2, and the old key
// is deleted.
func (q *Queue) migrateIndex(ctx context.Context, prefix string, res *MigrateResult) error {
	token := ""
	for {
		page, err := q.s.List(ctx, store.ListParams{Prefix: prefix, Token: token})
		if err != nil {
			return fmt.Errorf("migrate: list %s: %w", prefix, err)
		}
		for _, o := range page.Objects {
			id, ok := layout1Entry(prefix, o.Key)
			if !ok {
				continue // a layout-2 key (an earlier run), or junk left alone
			}
			t, _, err := q.getTask(ctx, id)
			switch {
			case errors.Is(err, ErrNotFound):
			case err != nil:
				return fmt.Errorf("migrate: read task of %s: %w", o.Key, err)
			default:
				if keys := IndexKeys(t); len(keys) > 0 && strings.HasPrefix(keys[0], prefix) {
					if err := q.putEntries(ctx, keys); err != nil {
						return fmt.Errorf("migrate: %w", err)
					}
					if prefix == ReadyPrefix {
						res.ReadyMoved++
					} else {
						res.LeasesMoved++
					}
				}
			}
			if err := q.s.Delete(ctx, o.Key, store.Condition{}); err != nil {
				return fmt.Errorf("migrate: delete %s: %w", o.Key, err)
			}
			res.OldRemoved++
		}
		if page.NextToken == "" {
			return nil
		}
		token = page.NextToken
	}
}

// layout1Entry recognises a layout-1 index key ("ready/{13-digit ms}/{shard}/
// {type}[/{priority}]/{id}" or "leases/{13-digit ms}/{shard}/{id}") and
// returns its task id.
func layout1Entry(prefix, key string) (uuid.UUID, bool) {
	parts := strings.Split(strings.TrimPrefix(key, prefix), "/")
	if len(parts) < 3 || len(parts[0]) != msDigits {
		return uuid.Nil, false
	}
	if _, ok := parseMS(parts[0]); !ok {
		return uuid.Nil, false
	}
	id, err := uuid.Parse(parts[len(parts)-1])
	if err != nil {
		return uuid.Nil, false
	}
	return id, true
}
