package queue

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/qo-queue/qo/store"
)

// Stats is a snapshot of the queue's tasks: counts by status, shard and type,
// the oldest waiting task, and recent finishes by minute. A StatsCounter
// computes it.
type Stats struct {
	At       time.Time                 `json:"at"`        // authoritative time of the snapshot
	ByStatus map[Status]int            `json:"by_status"` // every status, zero included
	ByShard  map[string]map[Status]int `json:"by_shard"`  // shards with at least one task
	ByType   map[string]map[Status]int `json:"by_type"`
	Total    int                       `json:"total"`

	// Delayed counts pending tasks whose available_at is still ahead
	// (submitted with a delay, or in backoff between attempts).
	Delayed int `json:"delayed"`
	// OldestPending is when the longest-waiting available pending task
	// became available (zero when none waits); OldestPendingAge is At minus it.
	OldestPending    time.Time     `json:"oldest_pending_at,omitzero"`
	OldestPendingAge time.Duration `json:"oldest_pending_age_ns"`

	// Recent holds one bucket per minute, oldest first, ending with the
	// minute of At: tasks that reached completed or failed in that minute.
	Recent []MinuteCount `json:"recent"`

	// Partial is true when some tasks were not read yet because of the
	// per-refresh read budget: counts are low and the next refresh goes on.
	Partial bool `json:"partial"`
	// Malformed lists task objects that could not be decoded (skipped).
	Malformed []MalformedError `json:"-"`
}

// MinuteCount is one minute of Stats.Recent.
type MinuteCount struct {
	Start     time.Time `json:"start"`
	Completed int       `json:"completed"`
	Failed    int       `json:"failed"`
}

// StatsOptions tunes a StatsCounter.
type StatsOptions struct {
	// MaxReads bounds the task GETs of one Refresh (<= 0: 2000). Tasks not
	// read yet are counted on later refreshes and make Stats.Partial true.
	MaxReads int
	// RecentMinutes is the length of Stats.Recent (<= 0: 15).
	RecentMinutes int
}

// StatsCounter counts tasks cheaply enough to refresh every few seconds:
// each Refresh lists tasks/ (one LIST per 1,000 tasks) and reads only the
// tasks whose ETag changed since the previous refresh. Finished tasks never
// change, so after the first pass a refresh costs the listing plus one GET
// per task that moved. It is safe for concurrent use (refreshes serialize).
type StatsCounter struct {
	q    *Queue
	opts StatsOptions

	mu   sync.Mutex
	seen map[string]statsEntry // task key -> what it was at its ETag
}

type statsEntry struct {
	etag      string
	malformed *MalformedError
	status    Status
	shard     string
	typ       string
	available time.Time
	finished  time.Time // completed_at, or updated_at for failed tasks
}

// NewStatsCounter returns a counter over q's tasks.
func (q *Queue) NewStatsCounter(opts StatsOptions) *StatsCounter {
	if opts.MaxReads <= 0 {
		opts.MaxReads = 2000
	}
	if opts.RecentMinutes <= 0 {
		opts.RecentMinutes = 15
	}
	return &StatsCounter{q: q, opts: opts, seen: map[string]statsEntry{}}
}

// Refresh lists the tasks, reads the ones that changed (in parallel, up to
// the read budget) and returns the counts as of now. Malformed task objects
// are reported in Stats.Malformed and skipped.
func (c *StatsCounter) Refresh(ctx context.Context) (Stats, error) {
	c.mu.Lock()
	defer c.mu.Unlock()

	type listed struct{ key, etag string }
	var objs []listed
	token := ""
	for {
		page, err := c.q.s.List(ctx, store.ListParams{Prefix: TasksPrefix, Token: token})
		if err != nil {
			return Stats{}, fmt.Errorf("stats: list tasks: %w", err)
		}
		for _, o := range page.Objects {
			objs = append(objs, listed{o.Key, o.ETag}) // stray keys show up as malformed
		}
		if page.NextToken == "" {
			break
		}
		token = page.NextToken
	}
	now := c.q.Now()

	var stale []int
	partial := false
	for i, o := range objs {
		if e, ok := c.seen[o.key]; !ok || e.etag != o.etag {
			if len(stale) == c.opts.MaxReads {
				partial = true
				break
			}
			stale = append(stale, i)
		}
	}
	read := make([]statsEntry, len(stale))
	errs := make([]error, len(stale))
	forEach(len(stale), sweepParallelism, func(j int) {
		o := objs[stale[j]]
		obj, err := c.q.s.Get(ctx, o.key)
		if err != nil {
			errs[j] = err
			return
		}
		e := statsEntry{etag: obj.ETag}
		t, err := DecodeTask(o.key, obj.Body)
		var m *MalformedError
		switch {
		case errors.As(err, &m):
			e.malformed = m
		case err != nil:
			errs[j] = err
			return
		default:
			e.status, e.shard, e.typ, e.available = t.Status, t.Shard, t.Type, t.AvailableAt
			switch {
			case t.Status == StatusCompleted && t.CompletedAt != nil:
				e.finished = *t.CompletedAt
			case t.Status == StatusFailed:
				e.finished = t.UpdatedAt
			}
		}
		read[j] = e
	})
	for j, err := range errs {
		switch {
		case err == nil:
			c.seen[objs[stale[j]].key] = read[j]
		case errors.Is(err, store.ErrNotFound):
			delete(c.seen, objs[stale[j]].key) // deleted since the listing
		default:
			return Stats{}, fmt.Errorf("stats: read %s: %w", objs[stale[j]].key, err)
		}
	}

	present := make(map[string]bool, len(objs))
	for _, o := range objs {
		present[o.key] = true
	}
	for k := range c.seen {
		if !present[k] {
			delete(c.seen, k)
		}
	}
	st := c.summarize(now)
	st.Partial = partial || len(c.seen) < len(objs)
	return st, nil
}

// summarize builds Stats from the cache.
func (c *StatsCounter) summarize(now time.Time) Stats {
	st := Stats{
		At:       now,
		ByStatus: map[Status]int{},
		ByShard:  map[string]map[Status]int{},
		ByType:   map[string]map[Status]int{},
	}
	for _, s := range Statuses {
		st.ByStatus[s] = 0
	}
	first := now.Truncate(time.Minute).Add(-time.Duration(c.opts.RecentMinutes-1) * time.Minute)
	st.Recent = make([]MinuteCount, c.opts.RecentMinutes)
	for i := range st.Recent {
		st.Recent[i].Start = first.Add(time.Duration(i) * time.Minute)
	}
	for _, e := range c.seen {
		if e.malformed != nil {
			st.Malformed = append(st.Malformed, *e.malformed)
			continue
		}
		st.Total++
		st.ByStatus[e.status]++
		bump(st.ByShard, e.shard, e.status)
		bump(st.ByType, e.typ, e.status)
		if e.status == StatusPending {
			if e.available.After(now) {
				st.Delayed++
			} else if st.OldestPending.IsZero() || e.available.Before(st.OldestPending) {
				st.OldestPending = e.available
			}
		}
		if !e.finished.IsZero() && !e.finished.Before(first) {
			i := int(e.finished.Sub(first) / time.Minute)
			if i >= 0 && i < len(st.Recent) {
				if e.status == StatusCompleted {
					st.Recent[i].Completed++
				} else {
					st.Recent[i].Failed++
				}
			}
		}
	}
	if !st.OldestPending.IsZero() {
		st.OldestPendingAge = now.Sub(st.OldestPending)
	}
	sort.Slice(st.Malformed, func(i, j int) bool { return st.Malformed[i].Key < st.Malformed[j].Key })
	return st
}

func bump(m map[string]map[Status]int, k string, s Status) {
	if m[k] == nil {
		m[k] = map[Status]int{}
	}
	m[k][s]++
}
