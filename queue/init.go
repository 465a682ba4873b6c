package queue

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/qo-queue/qo/store"
	"github.com/qo-queue/qo/store/doctor"
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
	// MaxPayloadBytes, when > 0, bounds a task's input and its output,
	// each, for every reader and writer of the bucket (0: the default,
	// DefaultMaxPayloadBytes). Running Init again with another value
	// changes it.
	MaxPayloadBytes int64
	// Clock stamps created_at (default: the store's clock).
	Clock store.Clock
	// Logger receives warnings (lifecycle or versioning not configurable).
	Logger *slog.Logger
	// SettleTime bounds how long Init re-reads the bucket's versioning and
	// lifecycle after setting them, for a server that applies bucket
	// settings with a delay, before it concludes the server ignored them
	// (default 10s).
	SettleTime time.Duration
}

// defaultSettleTime is InitOptions.SettleTime's default.
const defaultSettleTime = 10 * time.Second

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
	if opts.MaxPayloadBytes < 0 {
		return res, fmt.Errorf("init: %w", invalidInput("max payload %d bytes is negative (0: the default of %d bytes)", opts.MaxPayloadBytes, DefaultMaxPayloadBytes))
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	clock := opts.Clock
	if clock == nil {
		clock = store.ServerClock(s)
	}
	// A server that ignores conditional writes would run tasks twice:
	// refuse it before the queue exists (see doc.go, "Server probes").
	if err := doctor.Probe(ctx, s, ProbeKey); err != nil {
		return res, fmt.Errorf("init: %w", err)
	}
	cfg, created, err := writeConfig(ctx, s, Config{ShardChars: opts.ShardChars, TasksRetentionDays: opts.TasksRetentionDays, MaxPayloadBytes: opts.MaxPayloadBytes}, clock)
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
	settle := opts.SettleTime
	if settle <= 0 {
		settle = defaultSettleTime
	}
	if res.Versioning, err = enableVersioning(ctx, admin, settle, log); err != nil {
		return res, err
	}
	if res.Lifecycle, err = installLifecycle(ctx, admin, opts.TasksRetentionDays, settle, log); err != nil {
		return res, err
	}
	return res, nil
}

// ignoredSettingFix is the advice when a server reported success for a
// bucket setting it did not apply.
const ignoredSettingFix = "a server that silently ignores requests is likely to ignore others qo relies on: run qo doctor, and see " + doctor.ProvidersDoc

// settled re-reads a bucket setting until applied reports it in place,
// for up to settle (AWS S3 propagates bucket settings with a short
// delay). It returns applied's last error, or false when the time ran out.
func settled(ctx context.Context, settle time.Duration, applied func() (bool, error)) (bool, error) {
	deadline := time.Now().Add(settle)
	wait := settle / 40
	for {
		ok, err := applied()
		if ok || time.Now().Add(wait).After(deadline) {
			return ok, err
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return false, ctx.Err()
		case <-t.C:
		}
		wait *= 2
	}
}

func writeConfig(ctx context.Context, s store.Store, settings Config, clock store.Clock) (Config, bool, error) {
	shardChars, retention := settings.ShardChars, settings.TasksRetentionDays
	want := Config{Format: LayoutVersion, ShardChars: shardChars, CreatedAt: clock.Now().UTC(), TasksRetentionDays: retention, MaxPayloadBytes: settings.MaxPayloadBytes}
	body, err := json.Marshal(want)
	if err != nil {
		return Config{}, false, err
	}
	_, perr := s.Put(ctx, ConfigKey, body, store.CreateOnly)
	obj, gerr := getLimited(ctx, s, ConfigKey, maxSmallObject)
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
	if (have.TasksRetentionDays != retention || have.MaxPayloadBytes != settings.MaxPayloadBytes) && have.Format == LayoutVersion {
		// Init again with another retention or payload limit: record it
		// (If-Match).
		have.TasksRetentionDays, have.MaxPayloadBytes = retention, settings.MaxPayloadBytes
		body, err := json.Marshal(have)
		if err != nil {
			return have, false, err
		}
		if _, err := s.Put(ctx, ConfigKey, body, store.IfMatch(obj.ETag)); err != nil {
			return have, false, fmt.Errorf("init: record the settings in %s: %w (run init again)", ConfigKey, err)
		}
	}
	if perr != nil && !errors.Is(perr, store.ErrPreconditionFailed) {
		// The write failed in an unknown way but the object is there.
		return have, have.CreatedAt.Equal(want.CreatedAt), nil
	}
	return have, perr == nil, nil
}

// enableVersioning turns versioning on and reads it back: a server that
// answers success but leaves it off (fauxqs does) is an error.
func enableVersioning(ctx context.Context, admin store.Admin, settle time.Duration, log *slog.Logger) (string, error) {
	on, err := admin.Versioning(ctx)
	if err == nil && on {
		return "already enabled", nil
	}
	if err == nil {
		err = admin.EnableVersioning(ctx)
	}
	if err != nil {
		log.Warn("bucket versioning is not enabled: task history will not be kept", "err", err)
		return "not enabled: " + err.Error(), nil
	}
	on, err = settled(ctx, settle, func() (bool, error) { return admin.Versioning(ctx) })
	switch {
	case err != nil:
		return "", fmt.Errorf("init: read back bucket versioning: %w", err)
	case !on:
		return "", fmt.Errorf("init: %w: the server answered the request to enable bucket versioning with success, but versioning is still off %v later (%s)",
			store.ErrNotSupported, settle, ignoredSettingFix)
	}
	return "enabled", nil
}

// installLifecycle installs qo's lifecycle rules and reads them back: a
// server that answers success but does not keep them (fauxqs does) is an
// error.
func installLifecycle(ctx context.Context, admin store.Admin, retention int, settle time.Duration, log *slog.Logger) (string, error) {
	want := LifecycleRules(retention)
	existing, err := admin.Lifecycle(ctx)
	if err == nil {
		var keep []store.LifecycleRule
		for _, r := range existing {
			if !strings.HasPrefix(r.ID, LifecycleRulePrefix) {
				keep = append(keep, r)
			}
		}
		err = admin.SetLifecycle(ctx, append(keep, want...))
	}
	if err != nil {
		if errors.Is(err, store.ErrNotSupported) {
			log.Warn("the provider has no lifecycle rules: old index versions and delete markers will accumulate; clean ready/ and leases/ versions periodically", "err", err)
			return "not supported: " + err.Error(), nil
		}
		log.Warn("could not install lifecycle rules", "err", err)
		return "not installed: " + err.Error(), nil
	}
	var missing []string
	ok, err := settled(ctx, settle, func() (bool, error) {
		have, err := admin.Lifecycle(ctx)
		if err != nil {
			return false, err
		}
		missing = missingRules(have, want)
		return len(missing) == 0, nil
	})
	switch {
	case ok:
		return "installed", nil
	case err != nil:
		return "", fmt.Errorf("init: read back the lifecycle rules: %w (the server accepted them: %s)", err, ignoredSettingFix)
	}
	return "", fmt.Errorf("init: %w: the server answered the request to install lifecycle rules with success, but %v later it does not list the rules %s (%s)",
		store.ErrNotSupported, settle, strings.Join(missing, ", "), ignoredSettingFix)
}

// missingRules returns the ids of the rules of want that have is without
// (matched by id and prefix).
func missingRules(have, want []store.LifecycleRule) []string {
	var missing []string
	for _, w := range want {
		found := false
		for _, h := range have {
			found = found || (h.ID == w.ID && h.Prefix == w.Prefix)
		}
		if !found {
			missing = append(missing, w.ID)
		}
	}
	return missing
}
