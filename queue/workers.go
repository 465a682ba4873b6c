package queue

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/qo-queue/qo/store"
)

// WorkerInfo is a worker's registry entry at workers/{id}.json, rewritten
// at every heartbeat. Its age is the worker's liveness: the monitor takes
// back the tasks of a worker whose entry is older than its DeadAfter (task
// leases stay the fence; see doc.go, "Leases and liveness").
type WorkerInfo struct {
	Format         int       `json:"format"`
	ID             string    `json:"worker_id"`
	StartedAt      time.Time `json:"started_at"`
	LastHeartbeat  time.Time `json:"last_heartbeat"`
	Shards         []string  `json:"shards"`
	CurrentTasks   []string  `json:"current_tasks"`
	Types          []string  `json:"types"`
	Concurrency    int       `json:"concurrency"`
	TasksCompleted int64     `json:"tasks_completed"`
	TasksFailed    int64     `json:"tasks_failed"`
	// Recent counts the worker's finishes by minute, oldest first, for
	// the last DefaultRecentMinutes minutes (see Stats.Recent).
	Recent  []MinuteCount `json:"recent,omitempty"`
	Host    string        `json:"host"`
	PID     int           `json:"pid"`
	Version string        `json:"version"`
	// Requests counts the S3 requests the worker's process has sent since
	// it started, by kind (nil when its store does not count them). The
	// sum over workers, differenced between heartbeats, is the fleet's
	// request rate and cost.
	Requests *store.Counts `json:"s3_requests,omitempty"`
	// DeadAfterSeconds is the worker's own liveness bound: once its entry
	// is older than this (by the store's clock) the monitor takes back the
	// tasks it holds, and the worker itself stops their handlers (0: the
	// default, DefaultDeadAfter).
	DeadAfterSeconds int `json:"dead_after_seconds,omitempty"`
	// Layout is the key layout the worker reads and writes (LayoutVersion,
	// set by registry.Put). An entry without it was written by a qo of layout
	// 2 or older: Migrate refuses to run while such a worker is alive.
	Layout int `json:"layout,omitempty"`
	// Progress is the latest progress report of each running task that
	// made one, by task id (see doc.go, "Progress"): reports land here at
	// the next heartbeat, never in a write of their own.
	Progress map[string]Progress `json:"progress,omitempty"`
	// Holds is the share of each fleet-wide limit the worker holds, by
	// limit (see HoldKey): of a type's cap, it runs at most that many of
	// the type (see doc.go, "Fleet-wide concurrency caps"); of a rate, it
	// starts at most that many a minute. A worker holds nothing of a limit
	// not listed.
	Holds map[string]int `json:"holds,omitempty"`
	// Limits are the worker's own limits by type (worker.Options.Limits,
	// qo worker --limit): with Concurrency, the most it runs of a type,
	// which bounds its share of a fleet-wide cap.
	Limits map[string]int `json:"limits,omitempty"`
}

// DefaultDeadAfter is the liveness bound of a worker that states none: a
// worker whose registry entry was last written longer ago than this is
// presumed dead (see doc.go, "Leases and liveness").
const DefaultDeadAfter = 20 * time.Second

// DeadAfter returns the worker's liveness bound.
func (w *WorkerInfo) DeadAfter() time.Duration {
	if w == nil || w.DeadAfterSeconds <= 0 {
		return DefaultDeadAfter
	}
	return time.Duration(w.DeadAfterSeconds) * time.Second
}

// DecodeWorker parses a registry entry found at key ("" skips the key check).
func DecodeWorker(key string, body []byte) (*WorkerInfo, error) {
	var w WorkerInfo
	if err := json.Unmarshal(body, &w); err != nil {
		return nil, &MalformedError{Key: key, Err: err}
	}
	if w.Format != FormatVersion {
		return nil, &MalformedError{Key: key, Err: fmt.Errorf("unknown format version %d (this qo reads format %d)", w.Format, FormatVersion)}
	}
	if err := ValidateWorkerID(w.ID); err != nil {
		return nil, &MalformedError{Key: key, Err: errors.New(err.Error())}
	}
	if key != "" && WorkerKey(w.ID) != key {
		return nil, &MalformedError{Key: key, Err: fmt.Errorf("object says worker %q", w.ID)}
	}
	return &w, nil
}

// HoldKind is the kind of fleet-wide limit a key of WorkerInfo.Holds is a
// share of.
type HoldKind string

// The kinds of limit, each named in Holds by its prefix and the type
// ("{prefix}{type}"; a cap by the type alone).
const (
	HoldCap     HoldKind = ""         // a cap: tasks of the type running at once
	HoldRate    HoldKind = "rate:"    // a rate: starts of the type a minute
	HoldKeyCap  HoldKind = "key:"     // a per-key cap: running at once, for each key
	HoldKeyRate HoldKind = "keyrate:" // a per-key rate: starts a minute, for each key
)

// HoldPrefixed returns the prefix of a kind of limit typ's name begins
// with ("" when none): a fleet-wide limit on such a type would share its
// key of Holds with another type's limit of that kind (a cap on "rate:x"
// and the rate of "x"), so none may be set on it, and a worker does not
// claim a type that has one (see doc.go, "Fleet-wide concurrency caps").
func HoldPrefixed(typ string) string {
	for _, k := range []HoldKind{HoldRate, HoldKeyCap, HoldKeyRate} {
		if strings.HasPrefix(typ, string(k)) {
			return string(k)
		}
	}
	return ""
}

// HoldKey is the key of the share of typ's limit of kind in Holds.
func HoldKey(kind HoldKind, typ string) string { return string(kind) + typ }

// ParseHoldKey returns the kind and the type of a key of Holds.
func ParseHoldKey(key string) (HoldKind, string) {
	for _, k := range []HoldKind{HoldRate, HoldKeyCap, HoldKeyRate} {
		if typ, ok := strings.CutPrefix(key, string(k)); ok {
			return k, typ
		}
	}
	return HoldCap, key
}
