package queue

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/qo-queue/qo/store"
)

// MigrateOptions says how Migrate runs.
type MigrateOptions struct {
	// Force converts even while a process of an older layout looks alive
	// (see MigrateResult.OlderRunning): the entries it writes afterwards
	// are converted later (see doc.go, "Key layout"), but a task it holds
	// when it stops waits for the lease check like any other.
	Force bool
	// Progress, when set, is told what happens.
	Progress func(msg string)
}

// MigrateResult reports what Migrate did.
type MigrateResult struct {
	From, To int // layout before and after
	// AlreadyCurrent: the bucket was already at LayoutVersion; only stray
	// entries of an older layout were looked for (and converted).
	AlreadyCurrent bool
	ReadyMoved     int `json:"ready_moved"`  // older-layout ready entries rewritten
	LeasesMoved    int `json:"leases_moved"` // older-layout lease entries rewritten
	OldRemoved     int `json:"old_removed"`  // older-layout entries deleted (moved or stale)
	// OldLeft counts older-layout entries left in place: those of a
	// malformed task object, and stale ones younger than IndexGrace (a
	// write may be in flight); the sweeper, the lease check or another
	// run takes them.
	OldLeft int `json:"old_left"`
	// Malformed lists the task objects that do not decode, met through an
	// index entry or (from layout 1) the pass over every task: reported and
	// left as they are; the rest is converted.
	Malformed []MalformedError `json:"-"`
	// Unreadable lists the keys under ready/ and leases/ that no layout
	// reads (a field out of its rules, junk written by hand): reported
	// and left as they are; workers and listings skip them.
	Unreadable []string `json:"unreadable"`
	// OlderRunning names the live processes of an older layout that Force
	// converted past (empty otherwise: without Force they stop Migrate).
	OlderRunning []string    `json:"older_running"`
	Repair       SweepResult `json:"repair"` // the pass over every task object (from layout 1)
	Duration     time.Duration
}

// Migrate converts a bucket of an older key layout to LayoutVersion in
// place (see doc.go, "Key layout"): every ready entry of layout 1, 2 or 3
// and every lease entry of layout 1 or 2 is rewritten under its current
// key (reading its task, so only entries of tasks still in that state are
// kept: the current entry is written, then the old one deleted); a key no
// layout reads is reported (MigrateResult.Unreadable) and left. From
// layout 1, a Repair pass over every task object then writes whatever
// entry is missing, which builds the dead-letter index. Only then
// queue.json is rewritten
// (If-Match) with the new format. Task objects, their versions and
// payloads are not touched; a task object that does not decode is
// reported (MigrateResult.Malformed) and left, and everything else is
// converted. It is idempotent: a crash part-way leaves an old-layout queue
// with some current entries, and running it again finishes the job.
//
// Processes of the old layout would keep writing old entries, so Migrate
// first reads the worker registry and refuses (ErrOlderVersionRunning,
// naming them) while a worker of an older layout is alive; on a bucket
// not yet converted a held monitor leadership is refused too (no monitor
// of this version can open it). opts.Force converts anyway. Once
// queue.json says the new format old processes refuse to start. On a
// bucket already current it converts the stray entries of an older
// layout that such a process wrote after the switch: one pass of the
// ready and lease indexes.
//
// From layout 2 or 3, and on a current bucket, the cost is 1 LIST per
// 1,000 index entries and 1 GET per pending or running task (on a current
// bucket per stray entry), whatever the history, plus 1 LIST and 1 GET
// per registered worker; from layout 1 add one pass over the bucket's
// history (1 LIST per 1,000 tasks, 1 GET per task).
func Migrate(ctx context.Context, s store.Store, opts Options, mo MigrateOptions) (MigrateResult, error) {
	start := time.Now()
	res := MigrateResult{To: LayoutVersion}
	say := func(format string, a ...any) {
		if mo.Progress != nil {
			mo.Progress(fmt.Sprintf(format, a...))
		}
	}
	obj, err := getLimited(ctx, s, ConfigKey, maxSmallObject)
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
	q := newQueue(s, cfg, opts)

	older, err := q.olderRunning(ctx, cfg.Format < LayoutVersion)
	if err != nil {
		return res, fmt.Errorf("migrate: %w", err)
	}
	if len(older) > 0 {
		if !mo.Force {
			return res, fmt.Errorf("migrate: %w: %s. Stop them first (a worker killed without deregistering counts as alive until its heartbeat is older than its dead-after bound, a monitor until its leadership expires), then run qo migrate again; --force converts anyway, and whatever they write afterwards waits for the sweeper or another qo migrate",
				ErrOlderVersionRunning, strings.Join(older, "; "))
		}
		res.OlderRunning = older
		say("warning: converting while a qo of an older layout still runs (--force): %s", strings.Join(older, "; "))
	}

	if cfg.Format >= LayoutVersion {
		res.AlreadyCurrent = true
		say("the queue already uses key layout %d: looking for stray entries of an older layout", LayoutVersion)
		if err := q.migrateIndex(ctx, ReadyPrefix, &res); err != nil {
			return res, err
		}
		if err := q.migrateIndex(ctx, LeasesPrefix, &res); err != nil {
			return res, err
		}
		res.Duration = time.Since(start)
		return res, nil
	}

	say("moving ready entries to layout %d", LayoutVersion)
	if err := q.migrateIndex(ctx, ReadyPrefix, &res); err != nil {
		return res, err
	}
	say("moving lease entries to layout %d", LayoutVersion)
	if err := q.migrateIndex(ctx, LeasesPrefix, &res); err != nil {
		return res, err
	}
	// Layout 1 had no dead-letter index: a pass over every task builds it.
	// Layouts 2 and 3 have it, and their migration costs nothing per
	// finished task.
	shards := q.shards
	if res.From >= 2 {
		shards = nil
	}
	for _, shard := range shards {
		say("checking the tasks of shard %s (builds the dead-letter index)", shard)
		cursor := ""
		for {
			r, next, err := q.Recovery().Repair(ctx, shard, 1000, cursor)
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
	for _, m := range res.Repair.Malformed {
		if !slices.ContainsFunc(res.Malformed, func(o MalformedError) bool { return o.Key == m.Key }) {
			res.Malformed = append(res.Malformed, m)
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

// olderRunning names the live processes of an older key layout: workers
// whose registry entry states no layout or an older one and whose last
// heartbeat (the entry's write time, by the store's clock) is within
// their liveness bound plus MaxClockSkew; and, when the bucket is not
// converted yet (unconverted), the holder of a monitor leadership that has
// not expired, since no monitor of this layout can open such a bucket.
// Monitors and `qo serve` do not register, so on a converted bucket they
// cannot be told apart. Costs 1 LIST per 1,000 workers, 1 GET per
// registered worker and, unconverted, 1 GET.
func (q *Queue) olderRunning(ctx context.Context, unconverted bool) ([]string, error) {
	beats, err := q.workerBeats(ctx)
	if err != nil {
		return nil, err
	}
	ids := make([]string, 0, len(beats))
	for id := range beats {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	now := q.Now()
	var out []string
	for _, id := range ids {
		w, err := q.readWorker(ctx, id)
		var bad *MalformedError
		switch {
		case errors.Is(err, ErrNotFound):
			continue // deregistered since the listing
		case errors.As(err, &bad):
			q.log.Warn("migrate: skipping malformed worker entry", "key", bad.Key, "err", bad.Err)
			continue
		case err != nil:
			return nil, fmt.Errorf("read the worker registry: %w", err)
		}
		age := now.Sub(beats[id])
		if w.Layout >= LayoutVersion || age > w.DeadAfter()+MaxClockSkew {
			continue
		}
		layout := "layout 2 or older"
		if w.Layout > 0 {
			layout = fmt.Sprintf("layout %d", w.Layout)
		}
		out = append(out, fmt.Sprintf("worker %s on host %s (pid %d, qo %s, %s, last heartbeat %s ago)",
			id, orUnknown(w.Host), w.PID, orUnknown(w.Version), layout, max(age, 0).Round(time.Second)))
	}
	if !unconverted {
		return out, nil
	}
	l, err := q.readLeadership(ctx)
	var bad *MalformedError
	switch {
	case errors.Is(err, ErrNotFound), errors.As(err, &bad):
	case err != nil:
		return nil, fmt.Errorf("read the monitor leadership: %w", err)
	case l.Holder != "" && l.ExpiresAt.After(now):
		out = append(out, fmt.Sprintf("monitor %s (the leader until %s; a worker's embedded monitor stops with it)", l.Holder, l.ExpiresAt.Format(time.RFC3339)))
	}
	return out, nil
}

// workerBeats returns, per registered worker id, when its entry was last
// written (the registry's own operations are package queue/registry's;
// migrate reads the entries itself, below it).
func (q *Queue) workerBeats(ctx context.Context) (map[string]time.Time, error) {
	out := map[string]time.Time{}
	token := ""
	for {
		page, err := q.s.List(ctx, store.ListParams{Prefix: WorkersPrefix, Token: token})
		if err != nil {
			return nil, fmt.Errorf("list workers: %w", err)
		}
		for _, o := range page.Objects {
			if id, err := ParseWorkerKey(o.Key); err == nil {
				out[id] = o.LastModified
			}
		}
		if page.NextToken == "" {
			return out, nil
		}
		token = page.NextToken
	}
}

// readWorker reads the registry entry of worker id (ErrNotFound when
// there is none).
func (q *Queue) readWorker(ctx context.Context, id string) (*WorkerInfo, error) {
	obj, err := q.getLimited(ctx, WorkerKey(id), maxSmallObject)
	if errors.Is(err, store.ErrNotFound) {
		return nil, fmt.Errorf("get worker %s: %w", id, ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("get worker %s: %w", id, err)
	}
	return DecodeWorker(WorkerKey(id), obj.Body)
}

// readLeadership reads the monitor leadership (ErrNotFound when never
// written; its operations are package queue/namedlease's).
func (q *Queue) readLeadership(ctx context.Context) (*NamedLease, error) {
	obj, err := q.getLimited(ctx, MonitorLeaderKey, maxSmallObject)
	if errors.Is(err, store.ErrNotFound) {
		return nil, fmt.Errorf("read lease %s: %w (%w)", MonitorLeaderKey, ErrNotFound, err)
	}
	if err != nil {
		return nil, fmt.Errorf("read lease %s: %w", MonitorLeaderKey, err)
	}
	l, _, err := DecodeNamedLease(MonitorLeaderKey, obj)
	return l, err
}

func orUnknown(s string) string {
	if s == "" {
		return "unknown"
	}
	return s
}

// migrateIndex converts every older-layout entry under prefix (see
// convertEntry).
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
				if !currentEntry(prefix, o.Key) {
					res.Unreadable = append(res.Unreadable, o.Key) // left alone
				}
				continue // a current key (one an earlier run wrote)
			}
			moved, removed, err := q.convertEntry(ctx, prefix, o.Key, id, o.LastModified)
			var bad *MalformedError
			switch {
			case errors.As(err, &bad):
				res.Malformed = append(res.Malformed, *bad)
				res.OldLeft++
			case err != nil:
				return fmt.Errorf("migrate: %w", err)
			case moved && prefix == ReadyPrefix:
				res.ReadyMoved++
			case moved:
				res.LeasesMoved++
			case !removed:
				res.OldLeft++
			}
			if removed {
				res.OldRemoved++
			}
		}
		if page.NextToken == "" {
			return nil
		}
		token = page.NextToken
	}
}

// convertEntry converts one index entry of an older layout, key under
// prefix (ready or lease), written at modified, of task id: when the task
// is in the entry's state (pending, running) its current entries are
// written and key is deleted (moved and removed); otherwise key is deleted
// once older than IndexGrace (removed), since a younger one may belong to
// a write in flight. A task object that does not decode is returned as a
// *MalformedError and its entry left.
func (q *Queue) convertEntry(ctx context.Context, prefix, key string, id uuid.UUID, modified time.Time) (moved, removed bool, err error) {
	t, _, err := q.getTask(ctx, id)
	switch {
	case errors.Is(err, ErrNotFound):
	case err != nil:
		return false, false, fmt.Errorf("read task of %s: %w", key, err)
	default:
		if keys := IndexKeys(t); len(keys) > 0 && strings.HasPrefix(keys[0], prefix) {
			if err := q.putEntries(ctx, keys); err != nil {
				return false, false, err
			}
			moved = true
		}
	}
	if !moved && !q.staleEntry(modified) {
		return false, false, nil
	}
	if err := q.s.Delete(ctx, key, store.Condition{}); err != nil {
		return moved, false, fmt.Errorf("delete %s: %w", key, err)
	}
	return moved, true, nil
}

// currentEntry reports whether key is a ready or lease key of this layout.
func currentEntry(prefix, key string) bool {
	if prefix == ReadyPrefix {
		_, err := ParseReadyKey(key)
		return err == nil
	}
	_, err := ParseLeaseKey(key)
	return err == nil
}

// oldEntry recognises a ready or lease key of an older layout and returns
// its task id. Ready keys are told apart by their segments below ready/:
// layout 5 (current) has three, "{type}/{shard}/{ms}~{priority}~{id}",
// or four with a key, "{type}/{shard}/-{key}/{ms}~{priority}~{id}";
// layout 4 three, with "~{key}" last for a task with a key; layout 3 two,
// "{shard}/{ms}~{type}~{priority}~{id}" (with "~{key}" last for a task
// with a key); layout 2 five, "{shard}/{ms}/{type}/{priority}/{id}";
// layout 1 four or five, "{ms}/{shard}/{type}[/{priority}]/{id}". Lease
// keys: layouts 3 and 4 (current) "leases/{shard}/{name}"; layout 2
// "leases/{shard}/{ms}/{type}/{id}/{lease id}/{worker}"; layout 1
// "leases/{ms}/{shard}/{id}".
func oldEntry(prefix, key string) (uuid.UUID, bool) {
	parts := strings.Split(strings.TrimPrefix(key, prefix), "/")
	if prefix == ReadyPrefix && len(parts) == 2 {
		e, err := parseLayout3ReadyKey(key)
		return e.ID, err == nil
	}
	if prefix == ReadyPrefix && len(parts) == 3 {
		e, err := parseLayout4ReadyKey(key)
		return e.ID, err == nil
	}
	if currentEntry(prefix, key) {
		return uuid.Nil, false
	}
	if len(parts) < 3 || prefix == ReadyPrefix && len(parts) == 3 {
		return uuid.Nil, false
	}
	idPart := parts[len(parts)-1]
	switch {
	case len(parts[0]) == msDigits: // layout 1
		if _, ok := parseMS(parts[0]); !ok {
			return uuid.Nil, false
		}
	case prefix == LeasesPrefix:
		e, ok := parseLayout2LeaseKey(key)
		return e.ID, ok
	case isHex(parts[0]) && len(parts[0]) <= 2: // layout 2
		if _, ok := parseMS(parts[1]); !ok {
			return uuid.Nil, false
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

// parseLayout2LeaseKey decodes a lease entry of layout 2,
// "leases/{shard}/{expires ms}/{type}/{id}/{lease id}/{worker}": the
// fields of a current one, a key segment each. The lease check reads them
// as its own (see listLeases), so a task a worker of layout 2 claimed is
// taken back like any other.
func parseLayout2LeaseKey(key string) (LeaseEntry, bool) {
	rest, ok := strings.CutPrefix(key, LeasesPrefix)
	parts := strings.Split(rest, "/")
	if !ok || len(parts) != 6 || !isHex(parts[0]) || len(parts[0]) > 2 {
		return LeaseEntry{}, false
	}
	at, ok := parseMS(parts[1])
	if !ok || ValidateType(parts[2]) != nil || ValidateWorkerID(parts[5]) != nil {
		return LeaseEntry{}, false
	}
	id, err := uuid.Parse(parts[3])
	if err != nil || id.String() != parts[3] || !shardMatches(id, parts[0]) {
		return LeaseEntry{}, false
	}
	if _, err := uuid.Parse(parts[4]); err != nil || len(parts[4]) != 36 {
		return LeaseEntry{}, false
	}
	return LeaseEntry{Key: key, ID: id, Shard: parts[0], Type: parts[2], LeaseID: parts[4], WorkerID: parts[5], ExpiresAt: at}, true
}
