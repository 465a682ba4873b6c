package queue

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/qo-queue/qo/store"
)

// Stats is a snapshot of the queue: counts of the live statuses by shard
// and type, the oldest pending task, and recent finishes by minute. A
// StatsCounter computes it from the indexes and the worker heartbeats,
// never from the task objects, so its cost does not grow with history.
type Stats struct {
	At time.Time `json:"at"` // authoritative time of the snapshot
	// ByStatus holds the statuses in Counted, and only those: finished
	// tasks are not counted (see Recent), so their statuses are absent
	// rather than a 0 that would read as "none".
	ByStatus map[Status]int            `json:"by_status"`
	ByShard  map[string]map[Status]int `json:"by_shard"` // shards with at least one counted task
	ByType   map[string]map[Status]int `json:"by_type"`
	// Total is the sum of the counted statuses.
	Total int `json:"total"`
	// Counted lists the statuses whose counts are real: waiting (waiting
	// index; by shard only, its keys carry no type), pending (ready
	// index), running (lease index) and failed (dead-letter index).
	Counted []Status `json:"counted"`

	// Delayed counts pending tasks whose available_at is still ahead,
	// by more than MaxClockSkew (submitted with a delay, or in backoff
	// between attempts).
	Delayed int `json:"delayed"`
	// OldestPending is when the longest-waiting available pending task
	// became available (zero when none waits); OldestPendingAge is At minus it.
	OldestPending    time.Time     `json:"oldest_pending_at,omitzero"`
	OldestPendingAge time.Duration `json:"oldest_pending_age_ns"`
	// OldestPendingByType is OldestPending for each type that has an
	// available pending task: the ready keys are read anyway, so the
	// backlog's age per type costs nothing more.
	OldestPendingByType map[string]time.Time `json:"oldest_pending_by_type,omitempty"`

	// Recent holds one bucket per minute, oldest first, ending with the
	// minute of At: tasks that workers completed or failed (permanently
	// or for a retry) in that minute, summed from their heartbeats.
	Recent []MinuteCount `json:"recent"`

	// Partial is true when an index held more entries than one refresh
	// reads (StatsOptions.MaxIndexPages): its counts are lower bounds.
	Partial bool `json:"partial"`
	// Malformed lists worker entries that could not be decoded (skipped).
	Malformed []MalformedError `json:"-"`
}

// CountedStatuses are the statuses Stats counts (see Stats.Counted).
var CountedStatuses = []Status{StatusWaiting, StatusPending, StatusRunning, StatusFailed}

// MinuteCount is one minute of Stats.Recent and of WorkerInfo.Recent.
type MinuteCount struct {
	Start     time.Time `json:"start"`
	Completed int       `json:"completed"`
	Failed    int       `json:"failed"`
}

// DefaultRecentMinutes is the length of Stats.Recent and of the per-minute
// counts a worker publishes in its heartbeat.
const DefaultRecentMinutes = 15

// StatsOptions tunes a StatsCounter.
type StatsOptions struct {
	// MaxIndexPages bounds the LIST pages (1,000 keys each) one Refresh
	// reads of each index (<= 0: 10). Past it the counts are lower bounds
	// and Stats.Partial is true.
	MaxIndexPages int
	// RecentMinutes is the length of Stats.Recent (<= 0: 15).
	RecentMinutes int
}

// StatsCounter counts the queue cheaply enough to refresh every few
// seconds. Each Refresh lists the ready and lease indexes (one LIST per
// 1,000 entries, at most MaxIndexPages each), the new dead letters (one
// LIST, usually; a full count every DeadRecount) and the worker registry
// (one LIST, plus one GET per worker whose heartbeat changed), and reads no
// task object: a refresh costs about 4 requests plus one per live worker,
// with 0 or with millions of finished tasks in the bucket. Memory holds one
// entry per worker and the dead-letter counts by shard and type. It is safe
// for concurrent use.
type StatsCounter struct {
	q    *Queue
	opts StatsOptions

	mu      sync.Mutex
	workers map[string]workerEntry // worker key -> last read at its ETag
	dead    *deadCount             // the dead letters counted (nil: none yet)
}

// deadCount is the dead-letter count a StatsCounter carries between
// refreshes. Dead-letter keys sort newest failure first, so a refresh reads
// only the first keys, down to a little before the newest failure it has
// counted (one LIST, usually). Failures in the same millisecond, or written
// by workers whose clocks differ a little, may sort either side of each
// other, so the keys of the last DeadSkew are remembered and counted once.
// Removals (a replay, an archive) are only seen by a full count, made
// every DeadRecount.
type deadCount struct {
	horizon time.Time           // keys failed before it were counted
	recent  map[string]struct{} // counted keys failed at or after horizon
	byShard map[string]int
	byType  map[string]int
	total   int
	at      time.Time // when the last full count was made (queue clock)
	partial bool
}

// DeadSkew is how far apart in time two failures may be written out of
// order (clock differences between workers, the same millisecond).
const DeadSkew = 5 * time.Second

// add counts e unless it was counted already.
func (d *deadCount) add(e DeadEntry) {
	if _, ok := d.recent[e.Key]; ok {
		return
	}
	if !e.FailedAt.Before(d.horizon) {
		d.recent[e.Key] = struct{}{}
	}
	d.byShard[e.Shard]++
	d.byType[e.Type]++
	d.total++
}

// advance moves the horizon to DeadSkew before newest and forgets the keys
// that fell behind it.
func (d *deadCount) advance(newest time.Time) {
	if h := newest.Add(-DeadSkew); h.After(d.horizon) {
		d.horizon = h
	}
	for k := range d.recent {
		if e, err := ParseDeadKey(k); err != nil || e.FailedAt.Before(d.horizon) {
			delete(d.recent, k)
		}
	}
}

// DeadRecount is how often a StatsCounter counts the dead letters in full;
// in between it reads only the new ones, so a replay or an archive shows
// in the counts up to this late.
const DeadRecount = time.Minute

type workerEntry struct {
	etag      string
	info      *WorkerInfo
	malformed *MalformedError
}

// NewStatsCounter returns a counter over q.
func (q *Queue) NewStatsCounter(opts StatsOptions) *StatsCounter {
	if opts.MaxIndexPages <= 0 {
		opts.MaxIndexPages = 10
	}
	if opts.RecentMinutes <= 0 {
		opts.RecentMinutes = DefaultRecentMinutes
	}
	return &StatsCounter{q: q, opts: opts, workers: map[string]workerEntry{}}
}

// Refresh reads the indexes and the heartbeats and returns the counts as
// of now.
func (c *StatsCounter) Refresh(ctx context.Context) (Stats, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.q.Now()
	st := Stats{
		At:       now,
		ByStatus: map[Status]int{},
		ByShard:  map[string]map[Status]int{},
		ByType:   map[string]map[Status]int{},
		Counted:  slices.Clone(CountedStatuses),

		OldestPendingByType: map[string]time.Time{},
	}
	for _, s := range CountedStatuses {
		st.ByStatus[s] = 0
	}
	if err := c.countIndexes(ctx, &st, now); err != nil {
		return Stats{}, fmt.Errorf("stats: %w", err)
	}
	if !st.OldestPending.IsZero() {
		st.OldestPendingAge = now.Sub(st.OldestPending)
	}
	if err := c.readWorkers(ctx); err != nil {
		return Stats{}, fmt.Errorf("stats: %w", err)
	}
	c.addRecent(&st, now)
	return st, nil
}

// countIndexes counts the tasks into st by their index entries: pending
// (delayed or not, and the oldest) by the ready index, running by the
// lease index, waiting by the waiting index, and failed by the dead count.
func (c *StatsCounter) countIndexes(ctx context.Context, st *Stats, now time.Time) error {
	count := func(status Status, shard, typ string) {
		st.Total++
		st.ByStatus[status]++
		bump(st.ByShard, shard, status)
		bump(st.ByType, typ, status)
	}
	err := c.walk(ctx, ReadyPrefix, st, func(key string) {
		e, err := ParseReadyKey(key)
		if err != nil {
			return
		}
		count(StatusPending, e.Shard, e.Type)
		// Another process's view of the queue clock may be ahead of this
		// one's by up to MaxClockSkew: a task it submitted just now is
		// ready, not delayed.
		if e.AvailableAt.After(now.Add(MaxClockSkew)) {
			st.Delayed++
			return
		}
		if st.OldestPending.IsZero() || e.AvailableAt.Before(st.OldestPending) {
			st.OldestPending = e.AvailableAt
		}
		if at, ok := st.OldestPendingByType[e.Type]; !ok || e.AvailableAt.Before(at) {
			st.OldestPendingByType[e.Type] = e.AvailableAt
		}
	})
	if err != nil {
		return err
	}
	err = c.walk(ctx, LeasesPrefix, st, func(key string) {
		if e, err := ParseLeaseKey(key); err == nil {
			count(StatusRunning, e.Shard, e.Type)
		}
	})
	if err != nil {
		return err
	}
	// Waiting entries carry no type: waiting tasks count by shard only.
	err = c.walk(ctx, WaitingPrefix, st, func(key string) {
		if shard, _, err := ParseWaitingKey(key); err == nil {
			st.Total++
			st.ByStatus[StatusWaiting]++
			bump(st.ByShard, shard, StatusWaiting)
		}
	})
	if err != nil {
		return err
	}
	if err := c.countDead(ctx, now); err != nil {
		return err
	}
	d := c.dead
	st.Total += d.total
	st.ByStatus[StatusFailed] = d.total
	for shard, n := range d.byShard {
		bumpN(st.ByShard, shard, StatusFailed, n)
	}
	for typ, n := range d.byType {
		bumpN(st.ByType, typ, StatusFailed, n)
	}
	st.Partial = st.Partial || d.partial
	return nil
}

// addRecent sums the workers' completions and failures of the last
// RecentMinutes minutes into st.Recent, and lists the malformed worker
// records.
func (c *StatsCounter) addRecent(st *Stats, now time.Time) {
	first := now.Truncate(time.Minute).Add(-time.Duration(c.opts.RecentMinutes-1) * time.Minute)
	st.Recent = make([]MinuteCount, c.opts.RecentMinutes)
	for i := range st.Recent {
		st.Recent[i].Start = first.Add(time.Duration(i) * time.Minute)
	}
	for _, w := range c.workers {
		if w.malformed != nil {
			st.Malformed = append(st.Malformed, *w.malformed)
			continue
		}
		for _, m := range w.info.Recent {
			i := int(m.Start.Sub(first) / time.Minute)
			if !m.Start.Before(first) && i < len(st.Recent) {
				st.Recent[i].Completed += m.Completed
				st.Recent[i].Failed += m.Failed
			}
		}
	}
	sort.Slice(st.Malformed, func(i, j int) bool { return st.Malformed[i].Key < st.Malformed[j].Key })
}

// countDead brings c.dead up to date: a full count when there is none or
// it is older than DeadRecount, else only the keys of new failures.
func (c *StatsCounter) countDead(ctx context.Context, now time.Time) error {
	if c.dead == nil || now.Sub(c.dead.at) >= DeadRecount {
		d := &deadCount{recent: map[string]struct{}{}, byShard: map[string]int{}, byType: map[string]int{}, at: now}
		var st Stats
		var newest time.Time
		err := c.walk(ctx, DeadPrefix, &st, func(key string) {
			if e, err := ParseDeadKey(key); err == nil {
				if newest.IsZero() {
					newest = e.FailedAt
					d.horizon = newest.Add(-DeadSkew)
				}
				d.add(e)
			}
		})
		if err != nil {
			return err
		}
		d.partial = st.Partial
		c.dead = d
		return nil
	}
	d := c.dead
	var newest time.Time
	token := ""
	for range c.opts.MaxIndexPages {
		page, err := c.q.s.List(ctx, store.ListParams{Prefix: DeadPrefix, Token: token})
		if err != nil {
			return fmt.Errorf("list %s: %w", DeadPrefix, err)
		}
		for _, o := range page.Objects {
			e, err := ParseDeadKey(o.Key)
			if err != nil {
				continue
			}
			if newest.IsZero() {
				newest = e.FailedAt
			}
			if e.FailedAt.Before(d.horizon) {
				d.advance(newest)
				return nil // counted before: everything after it too
			}
			d.add(e)
		}
		if page.NextToken == "" {
			break
		}
		token = page.NextToken
	}
	if !newest.IsZero() {
		d.advance(newest)
	}
	return nil
}

// walk lists an index, at most MaxIndexPages pages, calling fn per key.
func (c *StatsCounter) walk(ctx context.Context, prefix string, st *Stats, fn func(key string)) error {
	token := ""
	for range c.opts.MaxIndexPages {
		page, err := c.q.s.List(ctx, store.ListParams{Prefix: prefix, Token: token})
		if err != nil {
			return fmt.Errorf("list %s: %w", prefix, err)
		}
		for _, o := range page.Objects {
			fn(o.Key)
		}
		if page.NextToken == "" {
			return nil
		}
		token = page.NextToken
	}
	st.Partial = true
	return nil
}

// readWorkers refreshes the worker cache: one LIST, a GET per changed entry.
func (c *StatsCounter) readWorkers(ctx context.Context) error {
	type listed struct{ key, etag string }
	var objs []listed
	token := ""
	for {
		page, err := c.q.s.List(ctx, store.ListParams{Prefix: WorkersPrefix, Token: token})
		if err != nil {
			return fmt.Errorf("list workers: %w", err)
		}
		for _, o := range page.Objects {
			objs = append(objs, listed{o.Key, o.ETag})
		}
		if page.NextToken == "" {
			break
		}
		token = page.NextToken
	}
	present := make(map[string]bool, len(objs))
	var changed []listed
	for _, o := range objs {
		present[o.key] = true
		if e, ok := c.workers[o.key]; !ok || e.etag != o.etag {
			changed = append(changed, o)
		}
	}
	for k := range c.workers {
		if !present[k] {
			delete(c.workers, k)
		}
	}
	read := make([]workerEntry, len(changed))
	errs := make([]error, len(changed))
	forEach(len(changed), sweepParallelism, func(j int) {
		obj, err := c.q.getLimited(ctx, changed[j].key, maxSmallObject)
		if m := (*MalformedError)(nil); errors.As(err, &m) {
			// Over its bound: reported, and kept by the listed ETag so it
			// is not read again until it changes.
			read[j] = workerEntry{etag: changed[j].etag, malformed: m}
			return
		}
		if err != nil {
			errs[j] = err
			return
		}
		e := workerEntry{etag: obj.ETag}
		w, err := DecodeWorker(changed[j].key, obj.Body)
		var m *MalformedError
		switch {
		case errors.As(err, &m):
			e.malformed = m
		case err != nil:
			errs[j] = err
			return
		default:
			e.info = w
		}
		read[j] = e
	})
	for j, err := range errs {
		switch {
		case err == nil:
			c.workers[changed[j].key] = read[j]
		case errors.Is(err, store.ErrNotFound):
			delete(c.workers, changed[j].key) // deregistered since the listing
		default:
			return fmt.Errorf("read %s: %w", changed[j].key, err)
		}
	}
	return nil
}

func bump(m map[string]map[Status]int, k string, s Status) { bumpN(m, k, s, 1) }

func bumpN(m map[string]map[Status]int, k string, s Status, n int) {
	if m[k] == nil {
		m[k] = map[Status]int{}
	}
	m[k][s] += n
}

// MinuteCounter counts finishes by minute over the last
// DefaultRecentMinutes minutes (what a worker publishes as
// WorkerInfo.Recent). Safe for concurrent use; the zero value is ready.
type MinuteCounter struct {
	mu      sync.Mutex
	minutes []MinuteCount // oldest first
}

// Add counts completed and failed finishes at time at.
func (c *MinuteCounter) Add(at time.Time, completed, failed int) {
	start := at.UTC().Truncate(time.Minute)
	c.mu.Lock()
	defer c.mu.Unlock()
	if n := len(c.minutes); n > 0 && c.minutes[n-1].Start.Equal(start) {
		c.minutes[n-1].Completed += completed
		c.minutes[n-1].Failed += failed
		return
	}
	c.minutes = append(c.trim(start), MinuteCount{Start: start, Completed: completed, Failed: failed})
}

// Snapshot returns the minutes within DefaultRecentMinutes of now that
// counted anything, oldest first.
func (c *MinuteCounter) Snapshot(now time.Time) []MinuteCount {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.minutes = c.trim(now.UTC().Truncate(time.Minute))
	return slices.Clone(c.minutes)
}

// trim drops minutes that fell out of the window ending at minute end.
func (c *MinuteCounter) trim(end time.Time) []MinuteCount {
	first := end.Add(-time.Duration(DefaultRecentMinutes-1) * time.Minute)
	i := 0
	for i < len(c.minutes) && c.minutes[i].Start.Before(first) {
		i++
	}
	return c.minutes[i:]
}
