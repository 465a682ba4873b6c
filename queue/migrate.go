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
	ReadyMoved     int         `json:"ready_moved"`  // older-layout ready entries rewritten
	LeasesMoved    int         `json:"leases_moved"` // older-layout lease entries rewritten
	OldRemoved     int         `json:"old_removed"`  // older-layout entries deleted (moved or stale)
	Repair         SweepResult `json:"repair"`       // the pass over every task object (from layout 1)
	Duration       time.Duration
}

// Migrate converts a bucket of an older key layout to LayoutVersion in
// place (see doc.go, "Key layout"): every ready and lease entry of layout 1
// or 2 is rewritten under its current key (reading its task, so only
// entries of tasks still in that state are kept); from layout 1, a Repair
// pass over every task object then writes whatever entry is missing, which
// builds the dead-letter index; only then queue.json is rewritten
// (If-Match) with the new format. Task objects, their versions and
// payloads are not touched. It is idempotent: a crash part-way leaves an
// old-layout queue with some current entries, and running it again
// finishes the job. Workers of the old layout must be stopped first (they
// would keep writing old entries); once queue.json says the new format
// they refuse to start. From layout 2 the cost is 1 LIST per 1,000 index
// entries and 1 GET per pending or running task, whatever the history;
// from layout 1 add one pass over the bucket's history (1 LIST per 1,000
// tasks, 1 GET per task). Paid once. progress, when set, is told what
// happens.
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
	// Layout 1 had no dead-letter index: a pass over every task builds it.
	// Layout 2 has it, and its migration costs nothing per finished task.
	shards := q.shards
	if res.From >= 2 {
		shards = nil
	}
	for _, shard := range shards {
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

// migrateIndex rewrites every older-layout entry under prefix: the key of
// a task still in the entry's state is written in the current layout, and
// the old key is deleted.
func (q *Queue) migrateIndex(ctx context.Context, prefix string, res *MigrateResult) error {
	token := ""
	for {
		page, err := q.s.List(ctx, store.ListParams{Prefix: prefix, Token: token})
		if err != nil {
			return fmt.Errorf("migrate: list %s: %w", prefix, err)
		}
		for _, o := range page.Objects {
			id, ok := oldEntry(prefix, o.Key)
			if !ok {
				continue // a current key (an earlier run), or junk left alone
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

// oldEntry recognises a ready or lease key of an older layout and returns
// its task id. Layout 1: "ready/{ms}/{shard}/{type}[/{priority}]/{id}",
// "leases/{ms}/{shard}/{id}"; layout 2: "ready/{shard}/{ms}/{type}/
// {priority}/{id}", "leases/{shard}/{ms}/{type}/{id}/{lease id}/{worker}".
// Current keys have no "/" after the shard.
func oldEntry(prefix, key string) (uuid.UUID, bool) {
	parts := strings.Split(strings.TrimPrefix(key, prefix), "/")
	if len(parts) < 3 {
		return uuid.Nil, false
	}
	idPart := parts[len(parts)-1]
	switch {
	case len(parts[0]) == msDigits: // layout 1
		if _, ok := parseMS(parts[0]); !ok {
			return uuid.Nil, false
		}
	case isHex(parts[0]) && len(parts[0]) <= 2: // layout 2
		if _, ok := parseMS(parts[1]); !ok {
			return uuid.Nil, false
		}
		if prefix == LeasesPrefix {
			if len(parts) != 6 {
				return uuid.Nil, false
			}
			idPart = parts[3]
		}
	default:
		return uuid.Nil, false
	}
	id, err := uuid.Parse(idPart)
	if err != nil {
		return uuid.Nil, false
	}
	return id, true
}
