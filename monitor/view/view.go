// Package view holds the JSON shapes qo prints and serves: the CLI's
// --json output and the HTTP API's bodies are the same types, so a script
// can move from one to the other without changes. Shapes are stable:
// fields may be added, never removed or renamed.
package view

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/qo-queue/qo/monitor"
	"github.com/qo-queue/qo/queue"
	"github.com/qo-queue/qo/queue/schedule"
	"github.com/qo-queue/qo/store"
)

// Malformed is an object in the bucket that could not be decoded.
type Malformed struct {
	Key   string `json:"key"`
	Error string `json:"error"`
}

// MalformedOf converts the queue's reports.
func MalformedOf(ms []queue.MalformedError) []Malformed {
	out := []Malformed{}
	for _, m := range ms {
		out = append(out, Malformed{Key: m.Key, Error: m.Err.Error()})
	}
	return out
}

// Page is one page of tasks (qo list --json, GET /api/tasks).
type Page struct {
	Tasks      []*queue.Task `json:"tasks"`
	NextCursor string        `json:"next_cursor"`
	Malformed  []Malformed   `json:"malformed"`
	Stale      []string      `json:"stale_index_entries"`
	// Since is the start of the creation window of a window listing.
	Since *time.Time `json:"since,omitempty"`
}

// PageOf converts a queue page; lists are never null.
func PageOf(p queue.TaskPage) Page {
	out := Page{Tasks: p.Tasks, NextCursor: p.Cursor, Malformed: MalformedOf(p.Malformed), Stale: p.Stale}
	if !p.Since.IsZero() {
		since := p.Since
		out.Since = &since
	}
	if out.Tasks == nil {
		out.Tasks = []*queue.Task{}
	}
	if out.Stale == nil {
		out.Stale = []string{}
	}
	return out
}

// Event is one version in a task's history.
type Event struct {
	Event     string       `json:"event"`
	At        time.Time    `json:"at"`
	Status    queue.Status `json:"status"`
	WorkerID  string       `json:"worker_id"`
	Attempt   int          `json:"attempt"`
	Rev       int64        `json:"rev"`
	VersionID string       `json:"version_id"`
	Error     string       `json:"error,omitempty"`
	Task      *queue.Task  `json:"task"`
}

// History is a task's history (qo history --json, GET /api/tasks/{id}/history).
type History struct {
	ID     uuid.UUID `json:"id"`
	Events []Event   `json:"events"`
}

// HistoryOf converts a queue history.
func HistoryOf(id uuid.UUID, events []queue.Event) History {
	h := History{ID: id, Events: []Event{}}
	for _, e := range events {
		j := Event{Event: e.Name, At: e.At, Status: e.Status, WorkerID: e.WorkerID,
			Attempt: e.Attempt, Rev: e.Rev, VersionID: e.VersionID, Task: e.Task}
		if e.Err != nil {
			j.Error = e.Err.Error()
		}
		h.Events = append(h.Events, j)
	}
	return h
}

// Worker is one registry record with its judged health.
type Worker struct {
	*queue.WorkerInfo
	State               monitor.State `json:"state"`
	HeartbeatAgeSeconds float64       `json:"heartbeat_age_seconds"`
}

// Workers is the worker registry (qo workers --json, GET /api/workers).
// ThresholdSeconds and DeadAfterSeconds are the heartbeat ages after which
// a worker of the default liveness bound is stale and dead (the monitor's
// rule, monitor.Judge); a worker stating its own bound has its own.
type Workers struct {
	Now              time.Time `json:"now"`
	ThresholdSeconds float64   `json:"threshold_seconds"`
	DeadAfterSeconds float64   `json:"dead_after_seconds"`
	Workers          []Worker  `json:"workers"`
}

// WorkersOf converts judged workers.
func WorkersOf(health []monitor.WorkerHealth, now time.Time) Workers {
	out := Workers{Now: now, ThresholdSeconds: monitor.StaleAfter(0).Seconds(), DeadAfterSeconds: monitor.DeadAt(0).Seconds(), Workers: []Worker{}}
	for _, h := range health {
		out.Workers = append(out.Workers, Worker{WorkerInfo: h.Worker, State: h.State, HeartbeatAgeSeconds: h.Age.Seconds()})
	}
	return out
}

// Stats is the queue at a glance (GET /api/stats).
type Stats struct {
	At                   time.Time                       `json:"at"`
	Total                int                             `json:"total"`
	ByStatus             map[queue.Status]int            `json:"by_status"`
	Counted              []queue.Status                  `json:"counted"` // statuses whose counts are real (see queue.Stats)
	ByShard              map[string]map[queue.Status]int `json:"by_shard"`
	ByType               map[string]map[queue.Status]int `json:"by_type"`
	Delayed              int                             `json:"delayed"`
	OldestPendingSeconds float64                         `json:"oldest_pending_age_seconds"`
	Recent               []queue.MinuteCount             `json:"recent"`
	Partial              bool                            `json:"partial"`
	Malformed            []Malformed                     `json:"malformed"`
	Workers              map[monitor.State]int           `json:"workers"`
	// OldestPendingByType is OldestPendingSeconds per type, for the types
	// with an available pending task.
	OldestPendingByType map[string]float64 `json:"oldest_pending_age_seconds_by_type"`
	// WorkerRequests holds, for each registered worker that publishes
	// them, the S3 requests its process has sent since it started, as its
	// last heartbeat says: the fleet's request rate is the sum of each
	// worker's increase between two answers (what qo tui shows).
	WorkerRequests map[string]store.Counts `json:"worker_requests"`
	// Unserved names the types with pending tasks that no live worker
	// serves or that are paused (never null).
	Unserved []Unserved `json:"unserved"`
	// Limits holds the fleet-wide concurrency caps by task type (never
	// null; see qo limit).
	Limits map[string]int `json:"limits"`
	// Rates holds the fleet-wide rate limits by type ("20/s burst 20").
	Rates map[string]string `json:"rates,omitempty"`
	// KeyLimits holds the per-key concurrency caps by type (qo limit
	// --per-key: at most N running for each task key) and KeyRates the
	// per-key rates ("2/s burst 2"); absent when none.
	KeyLimits map[string]int    `json:"key_limits,omitempty"`
	KeyRates  map[string]string `json:"key_rates,omitempty"`
	// RequestRate is the fleet's S3 request rate (null until some
	// worker's counters were seen at two heartbeats).
	RequestRate *Rate `json:"request_rate"`
	// LastHour holds the finishes of each of the last 60 minutes and
	// LastDay those of each of the last 24 hours, oldest first, from the
	// throughput rollup and the live heartbeats: they survive restarts.
	LastHour []queue.MinuteCount `json:"last_hour"`
	LastDay  []queue.MinuteCount `json:"last_day"`
}

// StatsOf converts task counts and judged workers.
func StatsOf(st queue.Stats, health []monitor.WorkerHealth) Stats {
	out := Stats{
		At: st.At, Total: st.Total, ByStatus: st.ByStatus, Counted: st.Counted, ByShard: st.ByShard, ByType: st.ByType,
		Delayed: st.Delayed, OldestPendingSeconds: st.OldestPendingAge.Seconds(), Recent: st.Recent,
		Partial: st.Partial, Malformed: MalformedOf(st.Malformed),
		Workers:             map[monitor.State]int{monitor.Active: 0, monitor.Stale: 0, monitor.Dead: 0},
		OldestPendingByType: map[string]float64{},
		WorkerRequests:      map[string]store.Counts{},
		Unserved:            []Unserved{},
		Limits:              map[string]int{},
		LastHour:            []queue.MinuteCount{},
		LastDay:             []queue.MinuteCount{},
	}
	for typ, at := range st.OldestPendingByType {
		out.OldestPendingByType[typ] = st.At.Sub(at).Seconds()
	}
	for _, h := range health {
		out.Workers[h.State]++
		if h.Worker.Requests != nil {
			out.WorkerRequests[h.Worker.ID] = *h.Worker.Requests
		}
	}
	return out
}

// Schedule is a cron schedule as stored plus its next due time (qo
// schedule show --json, GET /api/schedules/{name}).
type Schedule struct {
	*schedule.Schedule
	NextDue *time.Time `json:"next_due"`
}

// ScheduleOf adds the next due time (null when disabled).
func ScheduleOf(s *schedule.Schedule) Schedule {
	v := Schedule{Schedule: s}
	if d := s.NextDue(); !d.IsZero() {
		v.NextDue = &d
	}
	return v
}

// Schedules is the list of schedules (qo schedule list --json, GET
// /api/schedules).
type Schedules struct {
	Schedules []Schedule  `json:"schedules"`
	Malformed []Malformed `json:"malformed"`
}

// SchedulesOf converts a listing; lists are never null.
func SchedulesOf(list []*schedule.Schedule, malformed []queue.MalformedError) Schedules {
	out := Schedules{Schedules: []Schedule{}, Malformed: MalformedOf(malformed)}
	for _, s := range list {
		out.Schedules = append(out.Schedules, ScheduleOf(s))
	}
	return out
}

// Unserved is a task type with pending tasks that nothing will run as
// things stand: no live worker serves it, or it is paused.
type Unserved struct {
	Type    string `json:"type"`
	Pending int    `json:"pending"`
	// Reason is "no live worker serves it", "type paused" or "queue
	// paused".
	Reason string `json:"reason"`
}

// Rate is the fleet's S3 request rate: each live worker's requests
// between its last two heartbeats, over the time between their own
// timestamps, summed over the workers.
type Rate struct {
	PerSecond      float64 `json:"per_second"`
	DollarsPerHour float64 `json:"dollars_per_hour"`
	// ByOp is the rate of each kind of request, per second.
	ByOp map[store.Op]float64 `json:"by_op"`
	// Workers is how many workers the rate sums (those with two
	// heartbeats seen); Waiting how many live ones publish counters but
	// were seen once so far.
	Workers int `json:"workers"`
	Waiting int `json:"waiting"`
}

// HoldsText renders a worker's shares of the fleet-wide limits (see
// queue.WorkerInfo.Holds), by type, each type's cap, then rate, then
// per-key cap and rate: "call_api 2 of its cap, call_api 10/m of its
// rate". The web UI renders them the same way (src/fleet.js, holdsText).
func HoldsText(holds map[string]int) string {
	keys := make([]string, 0, len(holds))
	for k := range holds {
		keys = append(keys, k)
	}
	rank := map[queue.HoldKind]int{queue.HoldCap: 0, queue.HoldRate: 1, queue.HoldKeyCap: 2, queue.HoldKeyRate: 3}
	slices.SortFunc(keys, func(a, b string) int {
		ka, ta := queue.ParseHoldKey(a)
		kb, tb := queue.ParseHoldKey(b)
		return cmp.Or(strings.Compare(ta, tb), cmp.Compare(rank[ka], rank[kb]))
	})
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		kind, typ := queue.ParseHoldKey(k)
		n := holds[k]
		switch kind {
		case queue.HoldRate:
			parts = append(parts, fmt.Sprintf("%s %d/m of its rate", typ, n))
		case queue.HoldKeyCap:
			parts = append(parts, fmt.Sprintf("%s %d of its per-key cap", typ, n))
		case queue.HoldKeyRate:
			parts = append(parts, fmt.Sprintf("%s %d/m of its per-key rate", typ, n))
		default:
			parts = append(parts, fmt.Sprintf("%s %d of its cap", typ, n))
		}
	}
	return strings.Join(parts, ", ")
}
