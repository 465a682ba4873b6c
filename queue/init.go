package queue

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"

	"github.com/qo-queue/qo/store"
)

// InitOptions configure Init beyond the shard width.
type InitOptions struct {
	// ShardChars is the shard prefix length: 1 (16 shards) or 2 (256).
	ShardChars int
	// TasksRetentionDays, when > 0, expires finished task objects (and
	// their history, and idempotency markers) that many days after they
	// finished (see doc.go, "Retention"). 0 keeps them forever. Running
	// Init again with another value changes it.
	TasksRetentionDays int
	// Clock stamps created_at (default: the store's clock).
	Clock store.Clock
	// Logger receives warnings (lifecycle or versioning not configurable).
	Logger *slog.Logger
}

// InitResult reports what InitWithOptions did besides queue.json.
type InitResult struct {
	Config  Config
	Created bool // queue.json was written now (false: it already existed)
	// Lifecycle is "installed", or why not ("not supported: ...").
	Lifecycle string
	// Versioning is "enabled", "already enabled", or why not.
	Versioning string
}

// LifecycleRulePrefix starts the id of every lifecycle rule qo installs;
// rules with other ids are left alone.
const LifecycleRulePrefix = "qo-"

// indexPrefixes hold objects that churn (index entries, heartbeats, named
// leases): their old versions and delete markers are worthless after a day.
var indexPrefixes = []string{ReadyPrefix, LeasesPrefix, DeadPrefix, WorkersPrefix, ShardLeasePrefix, MonitorPrefix}

// LifecycleRules returns the rules qo init installs: noncurrent versions
// and expired delete markers under the index prefixes, workers/,
// shard-leases/ and monitor/ expire after 1 day. With tasksRetentionDays
// > 0 also: task objects tagged finished (RetentionTag) and offloaded
// outputs expire that many days after they were written, idempotency
// markers tagged finished (rewritten so when their task finishes, see
// doc.go "Idempotency keys") that many days after that write, and the old
// versions under tasks/ and data/ that many days after they were replaced
// (under idempotency/ after 1 day).
func LifecycleRules(tasksRetentionDays int) []store.LifecycleRule {
	var rules []store.LifecycleRule
	for _, p := range indexPrefixes {
		rules = append(rules, store.LifecycleRule{
			ID:                   LifecycleRulePrefix + "expire-old-" + strings.TrimSuffix(p, "/"),
			Prefix:               p,
			NoncurrentDays:       1,
			ExpiredDeleteMarkers: true,
		})
	}
	if tasksRetentionDays > 0 {
		rules = append(rules, store.LifecycleRule{
			ID:                   LifecycleRulePrefix + "expire-old-tasks",
			Prefix:               TasksPrefix,
			NoncurrentDays:       tasksRetentionDays,
			ExpiredDeleteMarkers: true,
		}, store.LifecycleRule{
			// Offloaded payloads are part of a task's history.
			ID:                   LifecycleRulePrefix + "expire-old-data",
			Prefix:               DataPrefix,
			NoncurrentDays:       tasksRetentionDays,
			ExpiredDeleteMarkers: true,
		}, store.LifecycleRule{
			ID:             LifecycleRulePrefix + "expire-finished-tasks",
			Prefix:         TasksPrefix,
			Tag:            RetentionTag,
			ExpirationDays: tasksRetentionDays,
		}, store.LifecycleRule{
			ID:             LifecycleRulePrefix + "expire-finished-outputs",
			Prefix:         DataPrefix,
			Tag:            RetentionTag,
			ExpirationDays: tasksRetentionDays,
		}, store.LifecycleRule{
			// A marker lives as long as its task: tagged live while the
			// task is, rewritten tagged finished when it finishes.
			// Workflow markers are never tagged finished: they stay with
			// their workflow record, which retention does not expire.
			ID:             LifecycleRulePrefix + "expire-idempotency-keys",
			Prefix:         IdempotencyPrefix,
			Tag:            RetentionTag,
			ExpirationDays: tasksRetentionDays,
		}, store.LifecycleRule{
			ID:                   LifecycleRulePrefix + "expire-old-idempotency-keys",
			Prefix:               IdempotencyPrefix,
			NoncurrentDays:       1,
			ExpiredDeleteMarkers: true,
		})
	}
	return rules
}

// RetentionTag marks a task version that is finished (completed,
// cancelled, expired or archived: not failed, dead letters stay) for the
// lifecycle rule of qo init --tasks-retention-days. Other versions of a
// queue with a retention carry the tag with the value "live".
var RetentionTag = store.Tag{Key: "qo-retention", Value: "finished"}

// retentionTags are the tags of a task version, and of the idempotency
// marker of a keyed task in that version (nil: none, the queue has no
// retention).
func (q *Queue) retentionTags(t *Task) []store.Tag {
	if q.cfg.TasksRetentionDays <= 0 {
		return nil
	}
	if retainedAsFinished(t) {
		return []store.Tag{RetentionTag}
	}
	return []store.Tag{{Key: RetentionTag.Key, Value: "live"}}
}

// retainedAsFinished reports whether a task version is tagged finished
// under a retention: completed, cancelled, expired or archived (a failed
// task, a dead letter, stays until replayed or archived).
func retainedAsFinished(t *Task) bool {
	switch t.Status {
	case StatusCompleted, StatusCancelled, StatusExpired, StatusArchived:
		return true
	}
	return false
}

// put writes an object with tags when there are any and the store can tag
// in the same request, else untagged.
func (q *Queue) put(ctx context.Context, key string, body []byte, cond store.Condition, tags []store.Tag) (store.PutResult, error) {
	if tg, ok := q.s.(store.Tagger); ok && len(tags) > 0 {
		return tg.PutTagged(ctx, key, body, cond, tags)
	}
	return q.s.Put(ctx, key, body, cond)
}

// Init creates the queue in an empty bucket with default options; see
// InitWithOptions.
func Init(ctx context.Context, s store.Store, shardChars int) (Config, error) {
	res, err := InitWithOptions(ctx, s, InitOptions{ShardChars: shardChars})
	return res.Config, err
}

// InitWithOptions writes queue.json (create-only) and, when the store
// offers store.Admin, turns bucket versioning on and installs the lifecycle
// rules. It is idempotent: an existing queue.json with the same shard width
// is kept; a different one is ErrConflict (the shard width cannot change
// once tasks exist). Versioning or lifecycle the provider refuses are
// reported in the result and logged, not failures.
func InitWithOptions(ctx context.Context, s store.Store, opts InitOptions) (InitResult, error) {
	var res InitResult
	if opts.ShardChars != 1 && opts.ShardChars != 2 {
		return res, fmt.Errorf("init: %w", invalidInput("shard chars %d: want 1 (16 shards) or 2 (256 shards)", opts.ShardChars))
	}
	if opts.TasksRetentionDays < 0 {
		return res, fmt.Errorf("init: %w", invalidInput("tasks retention %d days is negative (0 keeps history forever)", opts.TasksRetentionDays))
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	clock := opts.Clock
	if clock == nil {
		clock = store.ServerClock(s)
	}
	cfg, created, err := writeConfig(ctx, s, opts.ShardChars, opts.TasksRetentionDays, clock)
	if err != nil {
		return res, err
	}
	res.Config, res.Created = cfg, created

	admin, ok := s.(store.Admin)
	if !ok {
		res.Versioning = "not configurable through this store"
		res.Lifecycle = "not configurable through this store"
		return res, nil
	}
	res.Versioning = enableVersioning(ctx, admin, log)
	res.Lifecycle = installLifecycle(ctx, admin, opts.TasksRetentionDays, log)
	return res, nil
}

func writeConfig(ctx context.Context, s store.Store, shardChars, retention int, clock store.Clock) (Config, bool, error) {
	want := Config{Format: LayoutVersion, ShardChars: shardChars, CreatedAt: clock.Now().UTC(), TasksRetentionDays: retention}
	body, err := json.Marshal(want)
	if err != nil {
		return Config{}, false, err
	}
	_, perr := s.Put(ctx, ConfigKey, body, store.CreateOnly)
	obj, gerr := s.Get(ctx, ConfigKey)
	if gerr != nil {
		if perr != nil {
			return Config{}, false, fmt.Errorf("init: write %s: %w", ConfigKey, perr)
		}
		return Config{}, false, fmt.Errorf("init: read back %s: %w", ConfigKey, gerr)
	}
	have, err := decodeConfig(obj.Body)
	if err != nil {
		return Config{}, false, fmt.Errorf("init: %w (fix or remove the object by hand)", err)
	}
	if have.ShardChars != shardChars {
		return have, false, fmt.Errorf("init: %w: this bucket's queue already uses %d shard character(s); the shard width cannot change once tasks exist (run init with --shard-chars %d, or use a new bucket)",
			ErrConflict, have.ShardChars, have.ShardChars)
	}
	if have.TasksRetentionDays != retention && have.Format == LayoutVersion {
		// Init again with another retention: record it (If-Match).
		have.TasksRetentionDays = retention
		body, err := json.Marshal(have)
		if err != nil {
			return have, false, err
		}
		if _, err := s.Put(ctx, ConfigKey, body, store.IfMatch(obj.ETag)); err != nil {
			return have, false, fmt.Errorf("init: record the tasks retention in %s: %w (run init again)", ConfigKey, err)
		}
	}
	if perr != nil && !errors.Is(perr, store.ErrPreconditionFailed) {
		// The write failed in an unknown way but the object is there.
		return have, have.CreatedAt.Equal(want.CreatedAt), nil
	}
	return have, perr == nil, nil
}

func enableVersioning(ctx context.Context, admin store.Admin, log *slog.Logger) string {
	on, err := admin.Versioning(ctx)
	if err == nil && on {
		return "already enabled"
	}
	if err == nil {
		err = admin.EnableVersioning(ctx)
	}
	if err != nil {
		log.Warn("bucket versioning is not enabled: task history will not be kept", "err", err)
		return "not enabled: " + err.Error()
	}
	return "enabled"
}

func installLifecycle(ctx context.Context, admin store.Admin, retention int, log *slog.Logger) string {
	existing, err := admin.Lifecycle(ctx)
	if err == nil {
		var keep []store.LifecycleRule
		for _, r := range existing {
			if !strings.HasPrefix(r.ID, LifecycleRulePrefix) {
				keep = append(keep, r)
			}
		}
		err = admin.SetLifecycle(ctx, append(keep, LifecycleRules(retention)...))
	}
	if err != nil {
		if errors.Is(err, store.ErrNotSupported) {
			log.Warn("the provider has no lifecycle rules: old index versions and delete markers will accumulate; clean ready/ and leases/ versions periodically", "err", err)
			return "not supported: " + err.Error()
		}
		log.Warn("could not install lifecycle rules", "err", err)
		return "not installed: " + err.Error()
	}
	return "installed"
}
